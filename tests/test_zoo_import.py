"""The zoo-import stage (`gridbots stage zoo-import`, dvc.yaml's first stage): each zoo entry
registers once as its name's first production version, plays its card's spec from the registry,
and a second run registers nothing; a changed card registers a new version that only the gate
may promote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_tracking import mlflow_sandbox

from agents import make
from engine import load_game, parse_game_spec
from flows.entry import main

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*noload.*")]
ROOT = Path(__file__).resolve().parents[1]
ENTRY = Path("zoo/connect4/playerzero")  # tracked; copied, so the test reads no working state


@pytest.fixture
def harness(prefect_api):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_api}):
        yield


def registered(name: str) -> dict:
    from models.registry import describe

    return describe(name)


def test_each_entry_imports_once_as_first_production_then_only_as_a_candidate(
    tmp_path, tmp_path_factory, harness, capsys
):
    root = tmp_path / "work"
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        shutil.copytree(ROOT / ENTRY, root / ENTRY)
        (root / "params.yaml").write_text("mlflow: {tracking_uri: 'sqlite:///mlflow.db'}\n")
        assert main(["stage", "zoo-import"]) == 0
        card = json.loads((root / ENTRY / "card.json").read_text())
        model = registered("connect4-playerzero")  # the name the PlayerZero stage trains under
        assert model["aliases"] == {"production": "1"}
        assert [v["version"] for v in model["versions"]] == ["1"]
        record = (root / "imports/zoo.json").read_bytes()
        (row,) = json.loads(record)["entries"]
        assert (row["entry"], row["name"], row["version"]) == (
            "connect4/playerzero", "connect4-playerzero", "1"
        )  # fmt: skip
        # the registry plays the card's spec on the version's files
        inner = make("registry:connect4-playerzero@production", parse_game_spec("connect4")).inner
        assert (inner.ms, inner.prior_temp, inner.exact) == (19.0, 3.0, 17.0)
        printed = capsys.readouterr().out
        assert "zoo:connect4/playerzero: connect4-playerzero/1 (imported)" in printed

        assert main(["stage", "zoo-import"]) == 0  # again: nothing new
        assert "(already registered)" in capsys.readouterr().out
        assert [v["version"] for v in registered("connect4-playerzero")["versions"]] == ["1"]
        assert (root / "imports/zoo.json").read_bytes() == record

        card["title"] += " (retitled)"  # a changed card is a new version, not a new production
        (root / ENTRY / "card.json").write_text(json.dumps(card, indent=2) + "\n")
        assert main(["stage", "zoo-import"]) == 0
        model = registered("connect4-playerzero")
        assert [v["version"] for v in model["versions"]] == ["1", "2"]
        assert model["aliases"] == {"production": "1"}
        assert model["versions"][1]["tags"].get("promotion.decision") is None


def test_the_zoo_bot_is_each_surfaces_default_and_heads_the_leaderboard(tmp_path, tmp_path_factory):
    """A trained HMM in production (a gate record against random, floor 0.95) and the imported
    zoo bot (card floor 0.935): the zoo bot comes first, by the rule, not by name (it sorts
    after); a rejected challenger is listed as rejected (the page folds it)."""
    from fastapi.testclient import TestClient
    from test_web_registry import registered_hmm

    from flows.cli.play import opponent_for
    from flows.web.app import create_app
    from flows.web.bots import Limits, build
    from models.bundle import import_zoo_entry
    from models.registry import promote_if_better

    root = tmp_path / "work"
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        registered_hmm()
        # hand-set gate record: a higher floor than the card's, earned against random only
        from models.tracking import client as tracking_client

        mlflow_client = tracking_client()
        mlflow_client.set_registered_model_alias("connect4-hmm", "production", "1")
        for key, value in {"promotion.decision": "promoted", "promotion.score": "0.98",
                           "promotion.interval": "[0.9500, 0.9950]",
                           "promotion.opponent": "random"}.items():  # fmt: skip
            mlflow_client.set_model_version_tag("connect4-hmm", "1", key, value)
        shutil.copytree(ROOT / ENTRY, root / ENTRY)
        assert import_zoo_entry(root / ENTRY)["version"] == "1"
        card = json.loads((root / ENTRY / "card.json").read_text())
        card["title"] += " (a challenger: the same bot again)"
        (root / ENTRY / "card.json").write_text(json.dumps(card, indent=2) + "\n")
        assert import_zoo_entry(root / ENTRY)["version"] == "2"
        # 2 games can never clear the gate (the Wilson lower bound of 2/2 is below 0.5)
        assert not promote_if_better("connect4-playerzero", "2", games=2).promoted

        spec, what = opponent_for(parse_game_spec("connect4"), None)
        assert spec == "registry:connect4-playerzero@production"
        floor = max(e["interval"][0] for e in card["evidence"] if "interval" in e)  # 0.935
        assert "connect4-playerzero/1" in what and f"floor {floor:.3f}" in what

        app = create_app(Limits(ms=100), mlflow_url=None, root=root)
        with TestClient(app) as client:
            assert client.get("/api/bots?game=connect4").json()["default"] == spec
            pig = client.get("/api/bots?game=pig").json()["default"]  # nothing in production
            assert pig == load_game("pig").default_opponent
            board = client.get("/api/leaderboard").json()
            (connect4,) = [g for g in board["games"] if g["game"] == "connect4"]
            assert [b["name"] for b in connect4["bots"]] == ["connect4-playerzero", "connect4-hmm"]
            best = connect4["bots"][0]
            assert best["card"] == "connect4/playerzero" and best["floor"] == floor
            assert [m["name"] for m in board["models"]] == ["connect4-playerzero", "connect4-hmm"]
            decisions = [v["decision"] for v in board["models"][0]["versions"]]
            assert decisions == ["rejected", "imported"]  # newest first; the page folds v2
            page = client.get("/zoo/connect4/playerzero")
            assert page.status_code == 200 and page.text == (root / ENTRY / "card.md").read_text()
            assert client.get("/zoo/connect4/nothing").status_code == 404
            assert client.get("/zoo/connect4/..%2F..").status_code in (400, 404)
            moved = client.post("/api/connect4/move", json={"spec": spec, "history": ""})
            assert moved.status_code == 200, moved.text
        # the web keeps the zoo bot's own 19 ms within its cap, and caps it below (its exact
        # solver's time too)
        connect4 = parse_game_spec("connect4")
        assert build(spec, connect4, Limits(ms=100)).inner.ms == 19.0
        capped = build(spec, connect4, Limits(ms=5)).inner
        assert capped.ms == 5.0 and capped.prover.ms == 5.0
        a_candidate_of_another_name_faces_the_zoo_bot_and_is_refused(root, tmp_path / "bundle")


def a_candidate_of_another_name_faces_the_zoo_bot_and_is_refused(root: Path, out: Path) -> None:
    """The zoo's Connect 4 bot is `connect4-playerzero` (v1); a candidate registered as another
    name of the game (here the zoo network's raw policy, no search) clears its first match
    against the baseline, then meets the zoo bot at the same gate and is refused, the match
    recorded (as it is for a candidate its first match refused). With 4 games the bound needs a
    clean sweep (4 of 4, lower bound 0.51), so the zoo match stops at the first point it loses:
    the games left could not change the refusal."""
    from flows.web.leaderboard import leaderboard
    from models.bundle import export, import_bundle
    from models.registry import describe, needed_points, promote_if_better, strength
    from models.tracking import client as tracking_client

    student = import_bundle(export(str(root / ENTRY), out), "connect4-policy")
    version = str(student["version"])
    tracking_client().set_model_version_tag("connect4-policy", version, "play.spec",
                                            "policy:model={path}")  # fmt: skip
    decision = promote_if_better("connect4-policy", version, games=4, baseline="random")
    assert (decision.opponent, decision.wins, decision.games) == ("random", 4, 4)
    assert decision.low > 0.5  # the first match alone would have promoted it
    zoo = decision.zoo
    assert zoo is not None and zoo["opponent"] == "registry:connect4-playerzero/1"
    assert needed_points(4) == 4.0
    assert zoo["draws"] + zoo["losses"] == 1 and zoo["wins"] == zoo["games"] - 1
    assert zoo["result"] == "refused" and not decision.promoted
    model = describe("connect4-policy")
    assert "production" not in model["aliases"]
    tags = model["versions"][-1]["tags"]
    assert tags["promotion.decision"] == "rejected"
    assert tags["promotion.zoo.opponent"] == zoo["opponent"]
    assert tags["promotion.zoo.wdl"] == f"{zoo['wins']}/{zoo['draws']}/{zoo['losses']}"
    assert tags["promotion.zoo.games"] == f"{zoo['games']} of 4"
    board = leaderboard(root, None)  # the page shows the refusal's second match beside the first
    (row,) = [m for m in board["models"] if m["name"] == "connect4-policy"]
    shown = row["versions"][0]["zoo"]
    assert (shown["opponent"], shown["result"], shown["wdl"]) == (
        zoo["opponent"], "refused", tags["promotion.zoo.wdl"]
    )  # fmt: skip
    # refused by its first match (or not), a candidate still meets the zoo bot, recorded
    again = promote_if_better("connect4-policy", version, games=4, baseline="alphabeta:depth=2")
    assert again.opponent == "alphabeta:depth=2" and again.zoo["opponent"] == zoo["opponent"]
    assert again.promoted == (again.low > 0.5 and again.zoo["result"] == "cleared")
    # a version that cleared a zoo bot at the gate rests on that card (its rank's first key)
    cleared = {"promotion.decision": "promoted", "promotion.zoo.result": "cleared",
               "promotion.opponent": "random", "promotion.interval": "[0.51, 1.0]"}  # fmt: skip
    beaten = {**cleared, "promotion.zoo.result": "refused", "promotion.decision": "rejected"}
    for tags, rests in ((cleared, True), (beaten, False)):
        held = {"name": "connect4-x", "versions": [{"version": "1", "tags": tags}]}
        assert strength(held, "1")["rests_on_card"] is rests
