"""`gridbots train | export | promote | bots …` and `registry:` specs over the command line.

Uses test_tracking's stand-in family and test_registry's stub agent (the version's downloaded
ONNX file names the built-in agent it stands for), one temporary MLflow store for the module.
Bad input must give exactly one stderr line and exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_registry import StubOnnxAgent
from test_tracking import make_dataset, mlflow_sandbox

from agents.base import _BUILDERS
from flows.entry import main

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    from models import registry_agent

    root = tmp_path_factory.mktemp("cli")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()) as patch:
        patch.setitem(_BUILDERS, "stubonnx", StubOnnxAgent)
        patch.setitem(registry_agent.INNER_SPECS, "onnx", "stubonnx:{path}")
        make_dataset(root / "counts.npz")
        make_dataset(root / "seq.npz", encoding="quantitative")
        yield root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_train_sweep_register_list_show_export_promote_and_play(sandbox, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(
        capsys,
        *("train", "connect4", "stub", "--data", "counts.npz", "--param", "agent=mcts:sims=100"),
        *("--sweep", "width=1,3", "--register"),
    )
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("sweep run ") and lines[0].endswith(": 2 configurations")
    assert sum(line.startswith("* run ") for line in lines) == 1
    assert "by val_loss (min)" in out and lines[-1] == "registered connect4-stub/1"

    code, out, _ = run(capsys, "bots", "list", "--json")
    listed = json.loads(out)
    assert code == 0 and [m["name"] for m in listed] == ["connect4-stub"]
    version = listed[0]["versions"][0]
    assert version["tags"]["params"].startswith('{"agent": "mcts:sims=100"')
    assert json.loads(version["tags"]["params"])["width"] == 3  # the sweep's best child

    code, out, _ = run(capsys, "promote", "connect4", "stub", "--games", "8")
    assert code == 0 and "PROMOTED to @production" in out, out
    assert "vs random:guards=win+block" in out

    code, out, _ = run(capsys, "bots", "show", "connect4-stub")
    assert code == 0 and "aliases: @production -> 1" in out
    assert "promotion.decision: promoted" in out and "dataset.sha256: " in out

    code, out, _ = run(capsys, "bots", "list")  # one line per model at 80 columns
    row = next(line for line in out.splitlines() if "connect4-stub" in line)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert row.split()[1:4] == ["1", "of", "1"] and "[" in row and "]" in row
    assert row.split()[-2] == "8"  # the gate's games

    from engine import load_game
    from flows.cli.play import opponent_for  # `gridbots play connect4` meets this bot

    spec, about = opponent_for(load_game("connect4"), None)
    assert spec == "registry:connect4-stub@production" and "connect4-stub/1" in about

    run_id = version["run_id"]
    code, out, _ = run(capsys, "export", run_id, "--out", "shipped")
    shipped = sandbox / "shipped" / run_id / "model.onnx"
    assert code == 0 and Path(out.splitlines()[0]).resolve() == shipped and shipped.is_file()
    assert "artifact.gridbots.family: stub" in out

    # a weaker version is refused and production stays where it was
    code, out, _ = run(capsys, "train", "connect4", "stub", "--data", "counts.npz", "--register")
    assert code == 0 and out.splitlines()[-1] == "registered connect4-stub/2"
    code, out, _ = run(capsys, "bots", "promote", "connect4-stub", "2", "--games", "6")
    assert code == 0 and "rejected" in out and "@production stays on connect4-stub/1" in out

    # registry specs work wherever agent specs do
    code, out, _ = run(
        capsys, "match", "connect4", "registry:connect4-stub@production", "random", "--games", "2"
    )
    assert code == 0, out
    assert "2/0/0" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "connect4", "nope", "--data", "counts.npz"], "unknown model family 'nope'"),
        (["train", "connect4", "stub", "--data", "seq.npz"], "holds 'quantitative'"),
        (["train", "connect4", "stub", "--data", "missing.npz"], "no encoded dataset"),
        (["train", "othello", "stub", "--data", "counts.npz"], "holds connect4 data"),
        (["train", "connect4", "stub", "--data", "counts.npz", "--param", "corrupt=1"], "corrupt"),
        (["train", "connect4", "stub", "--data", "counts.npz", "--param", "x=1"], "unknown param"),
        (["bots", "show", "connect4-nope"], "no registered model 'connect4-nope'"),
        (["promote", "connect4", "nope"], "unknown model family"),
        (["bots", "promote", "connect4-nope", "1"], "no registered model"),
        (["export", "f" * 32], "no MLflow run"),
        (["match", "connect4", "registry:connect4-nope@production", "random"], "connect4-nope"),
    ],
)
def test_bad_input_is_one_stderr_line_and_exit_2(sandbox, capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("gridbots: error: ") and message in err


def test_a_missing_alias_is_one_stderr_line(sandbox, capsys):
    # needs a registered model: train and register one (no promotion, so no @production)
    code, _, _ = run(
        capsys,
        *("train", "connect4", "stub", "--data", "counts.npz", "--experiment", "aliases"),
        *("--register",),
    )
    assert code == 0
    code, _, err = run(capsys, "match", "connect4", "registry:connect4-stub@staging", "random")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "no alias @staging" in err


def test_end_to_end_with_a_real_family(sandbox, capsys):
    """generate → encode → train hmm --register → a registry spec plays through seq:model=."""
    code, out, _ = run(
        capsys,
        *("generate", "connect4", "battle", "--out", "c4-battle", "--games", "40"),
        *("--agents", "random:guards=win+block,random", "--seed", "3"),
    )
    assert code == 0, out
    code, out, _ = run(
        capsys, "encode", "c4-battle", "--encoding", "qualitative", "--out", "c4-q.npz"
    )
    assert code == 0, out
    code, out, _ = run(capsys, "train", "connect4", "hmm", "--data", "c4-q.npz", "--register")
    assert code == 0 and out.splitlines()[-1] == "registered connect4-hmm/1", out
    assert "held_out_accuracy=" in out
    code, out, _ = run(
        capsys, "match", "connect4", "registry:connect4-hmm/1", "random", "--games", "2", "--json"
    )
    assert code == 0, out
    summary = json.loads(out)
    assert summary["spec_a"] == "registry:connect4-hmm/1" and summary["games"] == 2
    code, out, _ = run(capsys, "promote", "connect4", "hmm", "--games", "4", "--baseline", "random")
    assert code == 0 and "connect4-hmm/1 vs random: " in out and "over 4 games" in out, out
    code, out, _ = run(capsys, "bots", "show", "connect4-hmm", "--json")
    tags = json.loads(out)["versions"][0]["tags"]
    assert tags["artifact.kind"] == "hmm-json" and tags["encoding"] == "qualitative"
    assert tags["promotion.games"] == "4" and tags["promotion.opponent"] == "random"
    assert (sandbox / "cache" / "connect4-hmm").is_dir()  # fetched into the cache, as raw files
    assert not list((sandbox / "cache").rglob("*.pkl"))
