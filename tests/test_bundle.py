"""Registry bundles (`gridbots bots export | import`): round trips that keep the bot's moves, and
bad bundles refused with one line and exit 2 before the registry is touched.

Round trips: a really trained HMM (tests/test_web_registry.py's chain) exported from one
sandbox registry and imported into a fresh one; the Connect 4 zoo entry exported and imported.
Either way the bot plays the same moves on 200 positions of seeded random games as its source.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

import pytest
from test_tracking import mlflow_sandbox
from test_web_registry import registered_hmm

from agents import make
from agents.puct.agent import DEFAULT_SIMS
from engine import parse_game_spec
from engine.match import random_states
from flows.entry import main

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")
ROOT = Path(__file__).resolve().parents[1]
ZOO_C4 = ROOT / "zoo/connect4/playerzero"


def positions(count: int = 200, seed: int = 5) -> list[list[int]]:
    """Histories of `count` positions along seeded random Connect 4 games."""
    found = []
    for state in random_states(parse_game_spec("connect4"), seed):
        found.append(state.history())
        if len(found) == count:
            return found
    raise AssertionError("unreachable: random_states never ends")


def moves(spec: str, histories: list[list[int]]) -> list[int]:
    """The move `spec` plays at each position, a fresh agent (seed 0) per position."""
    game = parse_game_spec("connect4")
    return [make(spec, game, seed=0).step(game.state_from_history(h)) for h in histories]


def registry_state(root: Path) -> tuple[str, list[str]]:
    """The sandbox registry's database bytes and its artifact files: unchanged means untouched."""
    digest = hashlib.sha256((root / "mlflow.db").read_bytes()).hexdigest()
    files = (
        sorted(str(p.relative_to(root)) for p in (root / "mlruns").rglob("*"))
        if (root / "mlruns").is_dir()
        else []
    )
    return digest, files


def versions(name: str) -> list[dict]:
    from models.registry import describe

    return describe(name)["versions"]


@pytest.fixture(scope="module")
def hmm_bundle(tmp_path_factory):
    """A bundle of a really trained, registered and gated HMM, and its moves in its registry."""
    root = tmp_path_factory.mktemp("bundle-source")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        registered_hmm()
        histories = positions()
        source_moves = moves("registry:connect4-hmm/1", histories)
        out = root / "hmm-bundle"
        assert main(["bots", "export", "connect4-hmm/1", "--out", str(out)]) == 0
    return out, histories, source_moves


@pytest.mark.slow
def test_a_registry_bot_moves_to_a_fresh_registry_and_plays_the_same(
    hmm_bundle, tmp_path, tmp_path_factory, capsys
):
    bundle, histories, source_moves = hmm_bundle
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["source"]["from"] == "registry" and manifest["source"]["version"] == "1"
    assert manifest["artifact_kind"] == "hmm-json"
    for row in manifest["files"]:  # the manifest's hashes are the files' own
        data = (bundle / row["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["sha256"]
    card = json.loads((bundle / "card.json").read_text())
    assert card["made"]["mlflow_run_id"] == manifest["source"]["run_id"]
    assert float(card["made"]["training_hours"]) > 0  # from the run's start and end
    gate = next(e for e in card["evidence"] if e["figure"].startswith("promotion gate"))
    assert gate["games"] == 4 and gate["opponent"] == "random"
    with mlflow_sandbox(tmp_path / "fresh", tmp_path_factory.getbasetemp()):
        capsys.readouterr()
        assert main(["bots", "import", str(bundle)]) == 0
        assert "registered connect4-hmm/1, not in production" in capsys.readouterr().out
        (version,) = versions("connect4-hmm")
        tags = version["tags"]
        assert version["aliases"] == []  # import never moves production
        assert json.loads(tags["bundle.source"])["version"] == "1"
        assert (
            tags["bundle.sha256"]
            == hashlib.sha256((bundle / "bundle.json").read_bytes()).hexdigest()
        )
        assert tags["source.promotion.games"] == "4"
        assert json.loads(tags["evidence.0"])["opponent"] == "random"
        assert "promotion.decision" not in tags  # the source's gate is evidence, not a decision
        imported = moves("registry:connect4-hmm/1", histories)
    assert imported == source_moves
    assert len(set(source_moves)) > 1  # the positions ask for different moves


@pytest.mark.slow
def test_the_zoo_entry_moves_into_a_registry_and_plays_the_same(tmp_path, tmp_path_factory, capsys):
    bundle = tmp_path / "c4-zoo"
    histories = positions()
    with mlflow_sandbox(tmp_path / "registry", tmp_path_factory.getbasetemp()):
        assert main(["bots", "export", str(ZOO_C4), "--out", str(bundle)]) == 0
        card = json.loads((bundle / "card.json").read_text())
        assert card == json.loads((ZOO_C4 / "card.json").read_text())
        # the card's own spec on the bundle's files, at a fixed budget (ms=0: sims decide; the
        # root solver's exact= is a clock budget, so it is off here: the moves must not race it)
        card_spec = card["spec"].replace("{dir}", str(bundle)) + ",ms=0,sims=24,exact=0"
        direct = moves(card_spec, histories)
        assert main(["bots", "import", str(bundle), "--production"]) == 0
        assert main(["bots", "import", str(bundle), "--name", "connect4-zoo"]) == 0
        capsys.readouterr()
        (first,) = versions("connect4-playerzero")
        assert first["aliases"] == ["production"]  # --production: the name had none
        assert first["tags"]["bundle.spec"] == card["spec"]
        assert first["tags"]["play.spec"] == card["spec"].replace(
            "{dir}/network-int8.onnx", "{path}"
        )
        assert versions("connect4-zoo")[0]["aliases"] == []
        registered = moves("registry:connect4-playerzero@production:ms=0,sims=24,exact=0",
                           histories)  # fmt: skip
        inner = make("registry:connect4-playerzero@production", parse_game_spec("connect4")).inner
        assert (inner.ms, inner.sims, inner.prior_temp) == (19.0, DEFAULT_SIMS, 3.0)  # the card's
        again = tmp_path / "again"  # and out of the registry again, card and evidence kept
        assert main(["bots", "export", "connect4-playerzero@production", "--out", str(again)]) == 0
        assert json.loads((again / "card.json").read_text()) == card
        assert (again / "network-int8.onnx").read_bytes() == (
            ZOO_C4 / "network-int8.onnx"
        ).read_bytes()
        before = registry_state(tmp_path / "registry")
        assert main(["bots", "import", str(again), "--production"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "already has @production" in err
        assert registry_state(tmp_path / "registry") == before
    assert registered == direct
    assert len(set(direct)) > 1


# ---- bad bundles -------------------------------------------------------------------------------
def _rehash(bundle: Path) -> None:
    """Rewrites the manifest's rows to match the files as they are now (a careful forger)."""
    manifest = json.loads((bundle / "bundle.json").read_text())
    for row in manifest["files"]:
        data = (bundle / row["path"]).read_bytes()
        row["sha256"], row["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    (bundle / "bundle.json").write_text(json.dumps(manifest))


def _missing_file(b: Path) -> None:
    (b / "evidence/solved-2026-12-07.json").unlink()


def _changed_byte(b: Path) -> None:
    data = bytearray((b / "network-int8.onnx").read_bytes())
    data[1000] ^= 0x01
    (b / "network-int8.onnx").write_bytes(bytes(data))


def _pickle_as_onnx(b: Path) -> None:
    (b / "network-int8.onnx").write_bytes(pickle.dumps({"weights": [0.5] * 10}))
    _rehash(b)


def _unknown_format(b: Path) -> None:
    (b / "model.pkl").write_bytes(pickle.dumps([1, 2]))
    manifest = json.loads((b / "bundle.json").read_text())
    manifest["files"].append({"path": "model.pkl", "sha256": "0" * 64, "bytes": 0})
    (b / "bundle.json").write_text(json.dumps(manifest))
    _rehash(b)


def _unlisted_file(b: Path) -> None:
    (b / "extra.json").write_text("{}")


def _bad_manifest(b: Path) -> None:
    (b / "bundle.json").write_text("{ not json")


def _manifest_without_files(b: Path) -> None:
    manifest = json.loads((b / "bundle.json").read_text())
    del manifest["files"]
    (b / "bundle.json").write_text(json.dumps(manifest))


def _escaping_path(b: Path) -> None:
    manifest = json.loads((b / "bundle.json").read_text())
    manifest["files"][0]["path"] = "../outside.json"
    (b / "bundle.json").write_text(json.dumps(manifest))


def _model_card_disagree(b: Path) -> None:
    card = json.loads((b / "card.json").read_text())
    card["files"][0]["sha256"] = "f" * 64  # the card's record no longer matches its model
    (b / "card.json").write_text(json.dumps(card))
    _rehash(b)


def _wrong_game(b: Path) -> None:
    card = json.loads((b / "card.json").read_text())
    card["game"] = "othello"  # the network says connect4
    (b / "card.json").write_text(json.dumps(card))
    manifest = json.loads((b / "bundle.json").read_text())
    manifest["game"] = "othello"
    (b / "bundle.json").write_text(json.dumps(manifest))
    _rehash(b)


def _genome_as_model(b: Path) -> None:
    """A NEAT-style JSON genome offered as the model: the registry would play it as an HMM."""
    (b / "network-int8.onnx").unlink()
    genome = b / "genome.json"
    genome.write_text(json.dumps({"nodes": [0, 1], "connections": [[0, 1, 0.5]]}))
    row = {
        "sha256": hashlib.sha256(genome.read_bytes()).hexdigest(),
        "bytes": genome.stat().st_size,
    }
    card = json.loads((b / "card.json").read_text())
    card["model"], card["spec"] = "genome.json", "neat:genome={dir}/genome.json"
    card["files"][0].update(path="genome.json", format="json", **row)
    (b / "card.json").write_text(json.dumps(card))
    manifest = json.loads((b / "bundle.json").read_text())
    manifest.update(model="genome.json", artifact_kind="hmm-json")
    next(r for r in manifest["files"] if r["path"] == "network-int8.onnx")["path"] = "genome.json"
    (b / "bundle.json").write_text(json.dumps(manifest))
    _rehash(b)


BAD = {
    "missing file": (_missing_file, "missing"),
    "hash mismatch": (_changed_byte, "sha256 differs"),
    "pickle named .onnx": (_pickle_as_onnx, "pickle"),
    "unknown format": (_unknown_format, "not a portable format"),
    "unlisted file": (_unlisted_file, "not listed"),
    "manifest not JSON": (_bad_manifest, "not valid JSON"),
    "manifest without files": (_manifest_without_files, "lacks files"),
    "path outside the bundle": (_escaping_path, "relative path inside"),
    "card disagrees with its file": (_model_card_disagree, "sha256 differs from the card"),
    "card names another game": (_wrong_game, "a connect4 model, but the card says othello"),
    "a JSON genome as the model": (_genome_as_model, "must be a gridbots HMM"),
}


@pytest.fixture(scope="module")
def zoo_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("zoo-bundle") / "bundle"
    assert main(["bots", "export", "zoo:connect4/playerzero", "--out", str(out)]) == 0
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_a_bad_bundle_gets_one_line_and_exit_2_and_the_registry_is_untouched(
    case, zoo_bundle, tmp_path, tmp_path_factory, capsys
):
    spoil, words = BAD[case]
    bundle = tmp_path / "bundle"
    shutil.copytree(zoo_bundle, bundle)
    spoil(bundle)
    root = tmp_path / "registry"
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        before = registry_state(root)
        capsys.readouterr()
        assert main(["bots", "import", str(bundle), "--production"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("gridbots: error:") and "\n" not in err, err
        assert words in err, err
        assert registry_state(root) == before


def test_export_refuses_a_folder_that_is_not_empty(zoo_bundle, capsys):
    assert main(["bots", "export", "zoo:connect4/playerzero", "--out", str(zoo_bundle)]) == 2
    assert "not an empty folder" in capsys.readouterr().err


def test_import_names_a_registry_name_of_the_bundles_game(
    zoo_bundle, tmp_path, tmp_path_factory, capsys
):
    root = tmp_path / "registry"
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        before = registry_state(root)
        assert main(["bots", "import", str(zoo_bundle), "--name", "othello-zoo"]) == 2
        assert "connect4-FAMILY" in capsys.readouterr().err
        assert registry_state(root) == before


def test_a_long_card_figure_becomes_a_tag_that_still_reads_and_ranks():
    """A figure with a long note (every run of a night) would be cut at TAG_LIMIT into JSON
    that no longer parses, and drop out of the version's floor: its notes go, its interval stays."""
    from models.bundle import TAG_LIMIT, _evidence_tag
    from models.registry import card_floor

    figure = {"figure": "optimal-move rate", "value": 0.972, "interval": [0.96, 0.981],
              "opponent": "exact solver labels", "every run": ["0.95 at load 3"] * 600,
              "measured": "night"}  # fmt: skip
    tag = _evidence_tag(figure)
    assert len(json.dumps(figure)) > TAG_LIMIT >= len(tag)
    kept = json.loads(tag)
    assert "every run" not in kept and kept["measured"] == "night" and kept["abridged"]
    other = json.dumps({"interval": [0.935, 0.96]})
    assert card_floor({"evidence.0": tag, "evidence.1": other})[0] == 0.96  # it still counts
    short = {"figure": "f", "interval": [0.5, 0.6]}
    assert json.loads(_evidence_tag(short)) == short  # whole where it fits
