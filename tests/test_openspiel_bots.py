"""gridbots agents as pyspiel.Bots (agents/openspiel/bot.py) in OpenSpiel's own evaluation
function, on OpenSpiel's connect_four and othello and on the gridbots_ games; hand-worked
positions check the mapping, a trained registry bot checks a whole game against gridbots."""

from __future__ import annotations

import numpy as np
import pytest
from optional import require_module

from agents import make
from agents.openspiel.agent import BotAgent, gridbots_state
from engine import load_game
from engine.match import play_game

pyspiel = require_module(
    "pyspiel", "the peers extra: pip install -c constraints.txt -e '.[peers]'", module_level=True
)
from open_spiel.python.algorithms import mcts  # noqa: E402
from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402

from agents.openspiel.bot import make_bot  # noqa: E402


def _play(game, history):
    state = game.new_initial_state()
    for action in history:
        state.apply_action(action)
    return state


def _board(text: str) -> list[str]:
    return [row.replace(" ", "") for row in text.strip().splitlines()]


def test_connect_four_positions_map_with_their_orientation():
    """X holds the bottom row's columns 0-2, O the two above them (OpenSpiel's own drawing)."""
    peer = _play(pyspiel.load_game("connect_four"), [0, 0, 1, 1, 2])
    state = gridbots_state(peer)
    drawn = _board(str(peer))[:6]  # OpenSpiel: top row first, x and o
    assert drawn[-2:] == ["oo.....", "xxx...."]
    assert [row.lower() for row in state.game.grid(state.array)] == drawn
    assert state.current_player() == peer.current_player() == 1


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    """PUCT networks that know nothing: what PUCT finds comes from its search."""
    from agents.puct.pv_net import write_uniform_network

    folder = tmp_path_factory.mktemp("uniform")
    return {name: write_uniform_network(load_game(name), folder / f"{name}.onnx")
            for name in ("connect4", "pig")}  # fmt: skip


@pytest.mark.parametrize(
    "spec", ["alphabeta:depth=2", "mcts:sims=300", "puct:model={connect4},sims=400"]
)
def test_a_gridbots_bot_blocks_and_wins_on_openspiels_connect_four(spec, uniform):
    spec = spec.format(**uniform)
    game = pyspiel.load_game("connect_four")
    # O to move must block column 3 (X threatens 0-1-2-3 on the bottom row)
    assert make_bot(spec, game, 1, seed=0).step(_play(game, [0, 0, 1, 1, 2])) == 3
    # X to move wins in column 3
    assert make_bot(spec, game, 0, seed=0).step(_play(game, [0, 0, 1, 1, 2, 2])) == 3


def test_othello_positions_map_square_for_square():
    """Black (x, player 0) opens d3 (row 2, column 3 = action 19), flipping d4."""
    game = pyspiel.load_game("othello")
    start = game.new_initial_state()
    assert gridbots_state(start).legal_actions() == start.legal_actions() == [19, 26, 37, 44]
    peer = _play(game, [19])
    state = gridbots_state(peer)
    expected = ["........", "........", "...X....", "...XX...", "...XO...", "........"]
    assert state.game.grid(state.array)[:6] == expected
    drawn = [row[1:-1].replace("-", ".").upper() for row in _board(str(peer))[2:8]]
    assert drawn == expected
    assert sorted(state.legal_actions()) == peer.legal_actions()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, specs",
    [
        ("othello", ["alphabeta:depth=2", None]),
        ("connect_four", [None, "mcts:sims=50"]),
        ("gridbots_pig(target=20)", ["heuristic:hold=10", None]),
        ("gridbots_pig(target=15)", ["puct:model={pig},sims=16", "random"]),
        ("gridbots_lazerbike", ["simab:depth=2", "random:guards=safe"]),
        ("gridbots_sokoban(level=duo)", ["planner", "planner"]),
        ("gridbots_territory(size=4,rounds=20)", [None, "alphabeta:depth=1"]),
        ("gridbots_tactics(preset=duel,max_turns=4)", ["random", None]),
    ],
)
def test_gridbots_bots_play_inside_openspiels_evaluate_bots(name, specs, uniform):
    """None seats OpenSpiel's Python MCTSBot (turn-based games) or its uniform random bot."""
    specs = [spec and spec.format(**uniform) for spec in specs]
    from open_spiel.python.bots.uniform_random import UniformRandomBot

    if name.startswith("gridbots_"):
        import engine.openspiel_games  # noqa: F401
    game = pyspiel.load_game(name)
    rng = np.random.RandomState(4)
    evaluator = mcts.RandomRolloutEvaluator(1, rng)
    bots = [
        make_bot(spec, game, p, seed=p)
        if spec
        else mcts.MCTSBot(game, 1.4, 20, evaluator, random_state=rng)
        if game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
        else UniformRandomBot(p, rng)
        for p, spec in enumerate(specs)
    ]
    state = game.new_initial_state()
    returns = evaluate_bots(state, bots, rng)
    assert state.is_terminal() and returns == state.returns()
    assert gridbots_state(state).returns() == returns


def test_a_bot_seat_in_a_simultaneous_lap_knows_its_player():
    import engine.openspiel_games  # noqa: F401

    game = pyspiel.load_game("gridbots_lazerbike")
    state = game.new_initial_state()
    bots = [make_bot("random:guards=safe", game, p, seed=p) for p in range(2)]
    assert [bot.player_id() for bot in bots] == [0, 1]
    for bot in bots:
        assert bot.step(state) in state.legal_actions(bot.player_id())


@pytest.mark.slow
def test_a_registry_bot_against_openspiels_mcts_matches_a_gridbots_match(tmp_path_factory):
    """A really trained HMM (`registry:…@web`) against OpenSpiel's Python MCTSBot on
    OpenSpiel's connect_four through evaluate_bots, then the same seats and seeds in a gridbots
    game: the same moves and the same result, in both seatings."""
    from test_tracking import mlflow_sandbox
    from test_web_registry import registered_hmm

    root = tmp_path_factory.mktemp("openspiel-registry")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        registered_hmm()
        spec = "registry:connect4-hmm@web"
        peer, ours = pyspiel.load_game("connect_four"), load_game("connect4")

        def mcts_bot(seed):
            rng = np.random.RandomState(seed)
            return mcts.MCTSBot(
                peer, 1.4, 40, mcts.RandomRolloutEvaluator(1, rng), random_state=rng
            )

        for seat in (0, 1):
            bots = [None, None]
            bots[seat] = make_bot(spec, peer, seat, seed=11)
            bots[1 - seat] = mcts_bot(7)
            state = peer.new_initial_state()
            returns = evaluate_bots(state, bots, np.random.RandomState(0))
            seats = [None, None]
            seats[seat] = make(spec, ours, seed=11)
            seats[1 - seat] = BotAgent(ours, mcts_bot(7), peer)
            final = play_game(ours, seats, seed=0)
            assert final.history() == list(state.history())
            assert final.returns() == returns
            assert sorted(returns) == [-1.0, 1.0]  # Connect 4 by random HMM play ends decided


@pytest.mark.slow
def test_the_qlearning_example_trains_and_plays_a_gridbots_tournament(tmp_path):
    """examples/openspiel_qlearning_pig.py, tiny: OpenSpiel's Q-learners really update their
    tables, and the greedy policy plays every game of its pairings with legal moves only."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).parents[1] / "examples" / "openspiel_qlearning_pig.py"
    spec = importlib.util.spec_from_file_location("openspiel_qlearning_pig", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "q"
    argv = ["--target", "8", "--episodes", "300", "--eval-every", "150", "--eval-games", "10",
            "--games", "6", "--out", str(out)]  # fmt: skip
    assert example.main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [c["episodes"] for c in summary["training"]["learning_curve"]] == [150, 300]
    assert min(summary["training"]["states_seen"]) > 10
    learned = [p for p in summary["pairings"] if example.LEARNED in (p["spec_a"], p["spec_b"])]
    assert len(learned) == 2 and all(p["games"] == 6 for p in learned)
    for pairing in learned:
        bot = next(b for b in pairing["bots"] if b["spec"] == example.LEARNED)
        assert bot["decisions"] > 0 and bot["illegal"] == 0 and bot["crashes"] == 0
    assert (out / "learning.png").stat().st_size > 0 and (out / "scores.png").is_file()
    assert example.main(["--target", "1", "--out", str(out)]) == 2


def test_the_readme_example_runs():
    """The README's OpenSpiel block, with a built-in agent for the registry bot a fresh
    checkout lacks and a smaller search."""
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme.split("## OpenSpiel, both ways", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "registry:connect4-playerzero@production" in code and ", 200," in code
    code = code.replace("registry:connect4-playerzero@production", "alphabeta:depth=2")
    exec(compile(code.replace(", 200,", ", 20,"), "README.md", "exec"), {})


@pytest.mark.parametrize("name", ["connect_four", "gridbots_pig(target=15)"])
def test_gridbots_bots_play_in_openspiels_cpp_evaluate_bots(name):
    import engine.openspiel_games  # noqa: F401

    game = pyspiel.load_game(name)
    bots = [make_bot("mcts:sims=50", game, 0, seed=0), pyspiel.make_uniform_random_bot(1, 3)]
    returns = pyspiel.evaluate_bots(game.new_initial_state(), bots, 5)
    assert sorted(returns) == [-1.0, 1.0]


def test_openspiel_mcts_plays_gridbots_games_without_an_openspiel_counterpart():
    """`openspiel:mcts` through gridbots_territory (OpenSpiel's Python MCTSBot: its C++ one
    crashes on Python games); simultaneous games are refused with one clear error."""
    from agents.base import AgentError
    from engine.match import play_match

    game = load_game("territory", size=4, rounds=12)
    result = play_match(
        game,
        lambda s: make("openspiel:mcts:sims=40", game, seed=s),
        lambda s: make("random", game, seed=s),
        games=2,
    )
    assert result.games == 2 and all(len(h) > 0 for h in result.histories)
    with pytest.raises(AgentError, match="turn-based"):
        make("openspiel:mcts", load_game("lazerbike"))
