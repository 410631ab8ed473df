"""The web's registry side with a really trained model: an HMM trained on 40 generated Connect 4
games, registered, gated against `random`, then served by the bot API under an alias, listed by
/api/bots and shown with its evidence on /api/leaderboard."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_tracking import mlflow_sandbox

from engine import load_game
from flows.cli import main
from flows.web.app import create_app
from flows.web.bots import Limits

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("web-registry")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        steps = [
            ["generate", "connect4", "battle", "--out", "c4-battle", "--games", "40",
             "--agents", "random:guards=win+block,random", "--seed", "3"],
            ["encode", "c4-battle", "--encoding", "qualitative", "--out", "c4-q.npz"],
            ["train", "connect4", "hmm", "--data", "c4-q.npz", "--register"],
            ["promote", "connect4", "hmm", "--games", "4", "--baseline", "random"],
        ]  # fmt: skip
        for argv in steps:
            assert main(argv) == 0, argv
        from models.tracking import client as tracking_client

        tracking_client().set_registered_model_alias("connect4-hmm", "web", "1")
        with TestClient(create_app(Limits(ms=100), mlflow_url="http://127.0.0.1:5000")) as c:
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
    board = {m["name"]: m for m in client.get("/api/leaderboard").json()}
    version = board["connect4-hmm"]["versions"][0]
    assert version["version"] == "1" and "web" in version["aliases"]
    assert version["games"] == "4" and version["opponent"] == "random"
    low, high = version["interval"]
    assert low <= version["score"] <= high and version["decision"] in ("promoted", "rejected")
    assert "held_out_accuracy" in version["evaluation"]
    assert version["run_url"].startswith("http://127.0.0.1:5000/#/experiments/")
    assert version["run_url"].endswith(f"/runs/{version['run_id']}")
