"""The bot API of `gridbots web`: legal answers from real agents, every bad request a 4xx JSON
error naming the problem, the server's time cap, and play-page games (dice, undo, the result)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from engine import load_game
from flows.web.app import create_app
from flows.web.bots import Limits, checked_spec


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # no registry here: none is created either
        store = tmp_path_factory.mktemp("web") / "mlflow.db"
        patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
        with TestClient(create_app(Limits(ms=200, default_ms=50, sessions=3))) as c:
            yield c
        assert not store.exists()


def test_a_search_bot_answers_a_legal_move_with_its_analysis(client):
    reply = client.post("/api/connect4/move", json={"history": "4433", "spec": "alphabeta:ms=50"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    # X has 3 and 4 with 2 and 5 open: both win at once (proven in 3 plies of the search)
    assert body["move"] in ("2", "5") and body["action"] in (1, 4)
    analysis = body["analysis"]
    assert analysis["ends"]["2"] > 0 and analysis["ends"]["5"] > 0
    assert set(analysis["values"]) == {str(c) for c in range(1, 8)}
    assert analysis["value"] == 1.0


def test_othello_move_in_its_notation(client):
    reply = client.post("/api/othello/move", json={"history": "d3", "spec": "mcts:sims=50"})
    assert reply.status_code == 200, reply.text
    game = load_game("othello")
    state = game.state_from_history(game.parse_moves("d3"))
    legal = {game.action_to_string(1, a) for a in state.legal_actions()}
    assert reply.json()["move"] in legal
    assert sum(reply.json()["analysis"]["policy"].values()) == pytest.approx(1.0)


def test_a_simultaneous_game_gets_every_living_players_action(client):
    both = client.post("/api/lazerbike/move", json={"spec": "random:guards=safe"}).json()
    assert set(both["moves"]) == {"0", "1"} and both["analysis"] is None
    assert all(m in ("left", "forward", "right") for m in both["moves"].values())
    one = client.post("/api/lazerbike/move", json={"spec": "random", "player": 1}).json()
    assert set(one["moves"]) == {"1"}


@pytest.mark.parametrize(
    ("spec", "asked", "served"),
    [
        ("alphabeta:ms=60000", None, "alphabeta:ms=200"),
        ("alphabeta:depth=30", None, "alphabeta:depth=30,ms=50"),
        ("mcts:sims=100000000", None, "mcts:sims=100000000,ms=50"),
        ("mcts:ms=20", None, "mcts:ms=20"),
        ("hps:depth=3", None, "hps:depth=3,ms=50"),
        ("heuristic:hold=20", None, "heuristic:hold=20"),
        ("registry:connect4-x@production:ms=9999", None, "registry:connect4-x@production:ms=200"),
    ],
)
def test_thinking_time_is_capped_by_the_server(spec, asked, served, monkeypatch):
    monkeypatch.setattr("flows.web.bots.registry_exists", lambda: True)
    assert checked_spec(spec, Limits(ms=200, default_ms=50))[0] == served


def test_capped_search_returns_in_time(client):
    reply = client.post("/api/connect4/move", json={"history": "", "spec": "mcts:sims=100000000"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["spec"] == "mcts:sims=100000000,ms=50"
    # the search stopped on its 50 ms clock: far fewer than the asked 100M simulations
    assert 1 <= reply.json()["analysis"]["extra"]["simulations"] < 100_000_000


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/api/chess/move", {"spec": "random"}, 404, "unknown game 'chess'"),
        ("/api/sokoban:level=x.txt/move", {"spec": "random"}, 400, "naming files are refused"),
        ("/api/connect4/move", {"history": "4444444", "spec": "random"}, 422, "column 4 is full"),
        ("/api/connect4/move", {"history": "48", "spec": "random"}, 422, "8"),
        ("/api/connect4/move", {"history": "", "spec": "nobot"}, 400, "'nobot' is not served"),
        ("/api/connect4/move", {"history": "", "spec": "file:bot.py"}, 400, "not served over"),
        ("/api/connect4/move", {"history": "", "spec": "human"}, 400, "not served over HTTP"),
        ("/api/connect4/move", {"history": "", "spec": "onnx:/etc/passwd"}, 400, "'onnx'"),
        ("/api/connect4/move", {"spec": "alphabeta:eval=onnx:/x.onnx"}, 400, "eval must be"),
        ("/api/connect4/move", {"spec": "puct:model=/tmp/x.onnx"}, 400, "registry model"),
        ("/api/connect4/move", {"spec": "mcts:tt=24"}, 400, "not allowed over HTTP"),
        ("/api/pig/move", {"spec": "heuristic:hold=../x"}, 400, "name files; refused"),
        ("/api/connect4/move", {"spec": "mcts:ms=-5"}, 400, "positive number"),
        ("/api/connect4/move", {"spec": "registry:nomodel@production"}, 400, "no model registry"),
        ("/api/connect4/move", {"history": "4"}, 422, "spec: Field required"),
        ("/api/connect4/move", {"history": "1212121", "spec": "random"}, 409, "game is over"),
        ("/api/pig/move", {"history": "0", "spec": "random"}, 409, "chance outcome"),
        ("/api/games/nosuchgame/move", {"move": "4"}, 404, "no game 'nosuchgame'"),
    ],
)
def test_bad_requests_get_a_4xx_naming_the_problem(client, path, body, status, words):
    reply = client.post(path, json=body)
    assert reply.status_code == status, reply.text
    assert words in reply.json()["error"]


def test_bad_json_and_oversized_bodies(client):
    headers = {"content-type": "application/json"}
    reply = client.post("/api/connect4/move", content=b'{"spec": ', headers=headers)
    assert reply.status_code == 422 and "not valid JSON" in reply.json()["error"]
    huge = b'{"spec": "random", "history": "' + b"1" * 100_000 + b'"}'
    reply = client.post("/api/connect4/move", content=huge, headers=headers)
    assert reply.status_code == 413 and "over 65536 bytes" in reply.json()["error"]

    def streamed():  # no content-length: counted as it arrives
        yield huge[:50_000]
        yield huge[50_000:]

    reply = client.post("/api/connect4/move", content=streamed(), headers=headers)
    assert reply.status_code == 413


def test_games_and_bots_listings(client):
    games = {g["name"]: g for g in client.get("/api/games").json()}
    assert {"connect4", "othello", "pig"} <= set(games)
    assert games["lazerbike"]["real_time"] and not games["connect4"]["real_time"]
    bots = client.get("/api/bots").json()
    assert "alphabeta" in bots["builtin"] and "file" not in bots["builtin"]
    assert "human" not in bots["builtin"] and bots["ms_cap"] == 200
    assert client.get("/openapi.json").json()["paths"]["/api/{game}/move"]


def test_a_page_game_with_dice_undo_and_a_result(client):
    game = client.post("/api/pig/games", json={"spec": "random", "side": 0, "seed": 5}).json()
    assert [m["move"] for m in game["legal"]] == ["roll", "hold"]
    after = client.post(f"/api/games/{game['id']}/move", json={"move": "hold"}).json()
    # the bot and the dice moved until the person is to move again
    assert after["plies"][0] == {"move": "hold", "by": "you"}
    assert {p["by"] for p in after["plies"][1:]} <= {"bot", "chance"} and after["your_move"]
    undone = client.post(f"/api/games/{game['id']}/undo").json()
    assert undone["plies"] == [] and not undone["can_undo"]
    refused = client.post(f"/api/games/{game['id']}/move", json={"move": "jump"})
    assert refused.status_code == 400 and "jump" in refused.json()["error"]


def test_a_full_connect4_game_on_the_page_ends_with_its_result(client):
    game = client.post("/api/connect4/games", json={"spec": "random", "side": 1, "seed": 2}).json()
    assert game["history"] and game["analysis"]["move"] == game["history"]  # the bot opened
    while game["result"] is None:
        first = game["legal"][0]
        assert first["cells"] and all(c[1] == first["action"] for c in first["cells"])
        game = client.post(f"/api/games/{game['id']}/move", json={"move": first["move"]}).json()
    assert game["result"] in ("you win", "you lose", "draw") and not game["legal"]
    over = client.post(f"/api/games/{game['id']}/move", json={"move": "1"})
    assert over.status_code == 409


def test_sessions_are_capped(client):
    ids = [
        client.post("/api/connect4/games", json={"spec": "random", "seed": s}).json()["id"]
        for s in range(4)
    ]
    assert client.get(f"/api/games/{ids[0]}").status_code == 404  # the cap is 3
    assert client.get(f"/api/games/{ids[-1]}").status_code == 200


def test_sokoban_team_play_a_person_and_a_bot_team_mate(client):
    game = client.post("/api/sokoban:level=duo/games", json={"spec": "planner", "seed": 1}).json()
    assert game["grid"][1].startswith("w1") and game["grid"][3].startswith("w2")
    after = client.post(f"/api/games/{game['id']}/move", json={"move": "right"}).json()
    # one lap: the person's move and the planner team-mate's, one history entry each
    assert after["plies"] == [{"move": "right", "by": "you"}, {"move": "right", "by": "bot"}]
    assert after["grid"][1].startswith("w.1")
    undone = client.post(f"/api/games/{game['id']}/undo").json()
    assert undone["plies"] == [] and undone["grid"] == game["grid"]
    alone = client.post("/api/sokoban/games", json={"spec": "planner", "seed": 1}).json()
    for _ in range(4):  # the first level: walk right to the exit
        alone = client.post(f"/api/games/{alone['id']}/move", json={"move": "r"}).json()
    assert alone["result"] == "solved" and alone["history"] == "3 3 3 3"


def test_lazerbike_laps_at_the_pages_pace(client):
    game = client.post("/api/lazerbike/games", json={"spec": "random:guards=safe", "seed": 1})
    game = game.json()
    assert game["real_time"] and [m["move"] for m in game["legal"]] == ["left", "forward", "right"]
    laps = 0
    game = client.post(f"/api/games/{game['id']}/lap", json={"arrow": "up"}).json()
    while game["result"] is None:  # north from row 7: the top wall
        game = client.post(f"/api/games/{game['id']}/lap", json={}).json()
        laps += 1
        assert laps < 20
    assert game["result"] == "you lose" and game["grid"][0][2] == "a"
    refused = client.post(f"/api/games/{game['id']}/lap", json={"arrow": "up"})
    assert refused.status_code == 409
    turn_based = client.post("/api/connect4/games", json={"spec": "random"}).json()
    wrong = client.post(f"/api/games/{turn_based['id']}/lap", json={"arrow": "up"})
    assert wrong.status_code == 400 and "not played in real time" in wrong.json()["error"]


def test_territory_and_tactics_boards_come_from_their_game_hooks(client):
    """The page's picture of a hex map and a 12 x 12 tactics board: pieces, labels, style and
    each legal move's cells (and territory's target tile), played by action id."""
    start = client.post("/api/territory/games", json={"spec": "heuristic", "seed": 1}).json()
    assert start["grid"] == ["B.....", *["......"] * 4, ".....R"]
    assert start["grid_labels"][0] == ["1", "", "", "", "", ""]
    assert start["grid_style"]["cell"] == "hex" and set(start["grid_style"]["pieces"]) == {"B", "R"}
    legal = {m["move"]: m for m in start["legal"]}
    assert set(legal) == {"produce (0,0)", "(0,0)->(0,1) x1", "(0,0)->(1,0) x1"}
    assert all(m["cells"] == [[0, 0]] for m in legal.values())
    assert legal["produce (0,0)"]["target"] is None
    assert legal["(0,0)->(0,1) x1"]["target"] == [0, 1]
    assert legal["(0,0)->(1,0) x1"]["target"] == [1, 0]
    hop = legal["(0,0)->(0,1) x1"]["action"]
    both = client.post(f"/api/games/{start['id']}/move", json={"move": "x", "action": hop})
    assert both.status_code == 400 and "not both" in both.json()["error"]
    wrong = client.post(f"/api/games/{start['id']}/move", json={"action": hop + 1})
    assert wrong.status_code == 400  # (0,0)->(0,1) x2: the tile holds one troop
    after = client.post(f"/api/games/{start['id']}/move", json={"action": hop}).json()
    assert after["grid"][0][:2] == ".B" and after["grid_labels"][0][1] == "1"  # it hopped
    assert after["plies"][0] == {"move": "(0,0)->(0,1) x1", "by": "you"}

    duel = client.post("/api/tactics:preset=duel/games", json={"spec": "random", "seed": 1}).json()
    rows = duel["grid"]
    assert len(rows) == 12 and all(len(r) == 12 for r in rows)
    assert rows[1][5] == "K" and rows[10][6] == "k"  # the duel preset: f2 and g11
    assert duel["grid_labels"][1][5] == "14*" and duel["grid_labels"][10][6] == "14"
    legal = {m["move"]: m for m in duel["legal"]}
    assert legal["end@f2"]["ends_turn"] and legal["end@f2"]["cells"] == [[1, 5]]
    assert not legal["move@f7"]["ends_turn"] and legal["move@f7"]["cells"] == [[6, 5]]
    combined = [m for m in duel["legal"] if m["move"].startswith("combine:")]
    assert combined and all(m["cells"] == [] for m in combined)  # off the board: a button
