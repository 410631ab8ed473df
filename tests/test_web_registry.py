"""The web's registry side with a really trained model: an HMM trained on 40 generated Connect 4
games, registered, gated against `random`, played in a real `gridbots tournament` by its registry
name, then served by the bot API under an alias, listed by /api/bots and shown with its evidence
and its tournament standing on /api/leaderboard. (The pipeline's own tournament table, labelled
by export name, is read in tests/test_pipeline.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_tracking import mlflow_sandbox

from engine import load_game
from flows.entry import main
from flows.web.app import create_app
from flows.web.bots import Limits

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")


#: a tiny Connect 4 HMM really trained, registered and gated, then played in a real tournament
#: by its registry name (evaluation/connect4/summary.json); the browser tests serve it too
TRAIN_AND_PLAY = [
    ["generate", "connect4", "battle", "--out", "c4-battle", "--games", "40",
     "--agents", "random:guards=win+block,random", "--seed", "3"],
    ["encode", "c4-battle", "--encoding", "qualitative", "--out", "c4-q.npz"],
    ["train", "connect4", "hmm", "--data", "c4-q.npz", "--register"],
    ["promote", "connect4", "hmm", "--games", "4", "--baseline", "random"],
    ["tournament", "connect4", "registry:connect4-hmm/1", "random",
     "random:guards=win+block", "--games", "2", "--out", "evaluation/connect4"],
]  # fmt: skip


def registered_hmm(alias: str = "web") -> None:
    """Runs TRAIN_AND_PLAY in the current folder (an mlflow_sandbox) and sets `alias` on v1."""
    from models.tracking import client as tracking_client

    for argv in TRAIN_AND_PLAY:
        assert main(argv) == 0, argv
    tracking_client().set_registered_model_alias("connect4-hmm", alias, "1")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("web-registry")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        registered_hmm()
        app = create_app(Limits(ms=100), mlflow_url="http://127.0.0.1:5000", root=root)
        with TestClient(app) as c:
            yield c


def test_a_registry_bot_answers_over_http(client):
    history = "4453"
    reply = client.post(
        "/api/connect4/move", json={"history": history, "spec": "registry:connect4-hmm@web"}
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    game = load_game("connect4")
    state = game.state_from_history(game.parse_moves(history))
    assert body["action"] in state.legal_actions()
    analysis = body["analysis"]
    assert analysis["extra"]["model"].startswith("connect4-hmm@web")
    assert analysis["policy"] and sum(analysis["policy"].values()) == pytest.approx(1.0)


def test_bots_and_leaderboard_show_the_registered_model(client):
    specs = [b["spec"] for b in client.get("/api/bots?game=connect4").json()["registry"]]
    assert "registry:connect4-hmm@web" in specs
    board = {m["name"]: m for m in client.get("/api/leaderboard").json()["models"]}
    version = board["connect4-hmm"]["versions"][0]
    assert version["version"] == "1" and "web" in version["aliases"]
    assert version["games"] == "4" and version["opponent"] == "random"
    low, high = version["interval"]
    assert low <= version["score"] <= high and version["decision"] in ("promoted", "rejected")
    assert "held_out_accuracy" in version["evaluation"]
    assert version["run_url"].startswith("http://127.0.0.1:5000/#/experiments/")
    assert version["run_url"].endswith(f"/runs/{version['run_id']}")


def test_the_leaderboard_shows_the_tournament_that_played_the_version(client):
    summary = json.loads(Path("evaluation/connect4/summary.json").read_text())
    board = client.get("/api/leaderboard").json()
    (table,) = board["tournaments"]
    assert table["file"] == "evaluation/connect4/summary.json" and table["game"] == "connect4"
    assert [r["label"] for r in table["standings"]] == [r["spec"] for r in summary["standings"]]
    mine = next(r for r in summary["standings"] if r["spec"] == "registry:connect4-hmm/1")
    (version,) = next(m for m in board["models"] if m["name"] == "connect4-hmm")["versions"]
    standing = version["tournament"]
    assert (standing["model"], standing["version"], standing["of"]) == ("connect4-hmm", "1", 3)
    for key in ("games", "wins", "draws", "losses", "score", "score_low", "score_high", "elo"):
        assert standing[key] == mine[key], key
    assert standing["games"] == 4  # two pairings of 2 games
    against = {p["opponent"]: p for p in standing["pairings"]}
    assert set(against) == {"random", "random:guards=win+block"}
    for pairing in summary["pairings"]:  # each pairing seen from the HMM's side
        if pairing["spec_a"] == "registry:connect4-hmm/1":
            seen = against[pairing["spec_b"]]
            assert (seen["wins"], seen["losses"]) == (pairing["wins"], pairing["losses"])
        elif pairing["spec_b"] == "registry:connect4-hmm/1":
            seen = against[pairing["spec_a"]]
            assert (seen["wins"], seen["losses"]) == (pairing["losses"], pairing["wins"])
            assert seen["score"] == pytest.approx(1 - pairing["score"])
    baselines = [r for r in table["standings"] if r["label"].startswith("random")]
    assert len(baselines) == 2 and all(r["model"] is None for r in baselines)
