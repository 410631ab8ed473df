"""gridbots games as OpenSpiel Python games (engine/openspiel_games.py): types, OpenSpiel's own
consistency check, move-for-move agreement with gridbots and OpenSpiel's algorithms on them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from optional import require_module

from engine import CHANCE, SIMULTANEOUS, game_names, load_game

pyspiel = require_module(
    "pyspiel", "the peers extra: pip install -c constraints.txt -e '.[peers]'", module_level=True
)
from open_spiel.python.algorithms import mcts  # noqa: E402
from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402
from open_spiel.python.bots.uniform_random import UniformRandomBot  # noqa: E402

import engine.openspiel_games as og  # noqa: E402

T = pyspiel.GameType
SEQ, SIM = T.Dynamics.SEQUENTIAL, T.Dynamics.SIMULTANEOUS
DET, STOCH = T.ChanceMode.DETERMINISTIC, T.ChanceMode.EXPLICIT_STOCHASTIC
ZERO, GENERAL, IDENTICAL = T.Utility.ZERO_SUM, T.Utility.GENERAL_SUM, T.Utility.IDENTICAL

# what each game's rules say (DESIGN.md, the game modules' docstrings), written out by hand:
# (game string, dynamics, chance, utility, players, actions, max length, observation, outcomes)
TRUTH = [
    ("gridbots_connect4", SEQ, DET, ZERO, 2, 7, 42, [2, 6, 7], 0),
    ("gridbots_othello", SEQ, DET, ZERO, 2, 65, 120, [3, 8, 8], 0),
    ("gridbots_pig(target=20,max_steps=300)", SEQ, STOCH, ZERO, 2, 6, 300, [4], 6),
    ("gridbots_lazerbike", SIM, DET, ZERO, 2, 3, 225, [12, 15, 15], 0),
    ("gridbots_lazerbike(players=3,start=random,seeds=50)", SIM, STOCH, GENERAL, 3, 3, 225,
     [12, 15, 15], 50),
    ("gridbots_lazerbike(players=4,teams=0101)", SIM, DET, ZERO, 4, 3, 225, [12, 15, 15], 0),
    ("gridbots_sokoban", SIM, DET, IDENTICAL, 1, 5, 20, [6, 3, 7], 0),
    ("gridbots_sokoban(level=duo)", SIM, DET, IDENTICAL, 2, 5, 30, [6, 5, 9], 0),
    # a duel round is a move of each side; against-red's red moves inside blue's move
    ("gridbots_territory(size=4,rounds=30)", SEQ, DET, ZERO, 2, 16 * 121, 60, [3, 4, 4], 0),
    ("gridbots_territory(preset=against-red,size=4,rounds=30,seeds=20)", SEQ, STOCH, ZERO, 2,
     16 * 121, 30, [3, 4, 4], 20),
    ("gridbots_tactics(max_turns=6,seeds=10)", SEQ, STOCH, ZERO, 2, 4320, 6 * 32, [78, 12, 12],
     30),
    ("gridbots_tactics(preset=duel,max_turns=6)", SEQ, STOCH, ZERO, 2, 4320, 6 * 32,
     [78, 12, 12], 30),
]  # fmt: skip
NAMES = [row[0] for row in TRUTH]


def test_every_registered_game_loads():
    assert og.registered_names() == [f"gridbots_{name}" for name in game_names()]
    assert {name.partition("(")[0] for name in NAMES} == set(og.registered_names())
    for name in og.registered_names():
        game = pyspiel.load_game(name)
        assert game.get_type().short_name == name
        assert name in pyspiel.registered_names()


@pytest.mark.parametrize("row", TRUTH, ids=NAMES)
def test_type_and_info_follow_the_rules(row):
    name, dynamics, chance, utility, players, actions, length, shape, outcomes = row
    game = pyspiel.load_game(name)
    kind = game.get_type()
    assert (kind.dynamics, kind.chance_mode, kind.utility) == (dynamics, chance, utility)
    assert kind.reward_model == T.RewardModel.TERMINAL
    assert game.num_players() == players and game.num_distinct_actions() == actions
    assert game.max_game_length() == length and game.observation_tensor_shape() == shape
    assert game.max_chance_outcomes() == outcomes
    assert (game.min_utility(), game.max_utility()) == (-1.0, 1.0)
    assert game.utility_sum() == (0.0 if utility == ZERO else None)


@pytest.mark.parametrize("name", NAMES)
def test_openspiel_random_sim_test_with_serialization(name):
    pyspiel.random_sim_test(pyspiel.load_game(name), num_sims=2, serialize=True, verbose=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", og.registered_names())
def test_openspiel_random_sim_test_on_every_game_with_its_default_parameters(name):
    pyspiel.random_sim_test(pyspiel.load_game(name), num_sims=2, serialize=True, verbose=False)


def _twin_start(game, rng):
    """A fresh pyspiel state and its gridbots twin (the start seed drawn where there is one)."""
    peer = game.new_initial_state()
    seed = 0
    if game.seeded:
        outcomes = peer.chance_outcomes()
        assert [p for _, p in outcomes] == pytest.approx([1 / game.seeds] * game.seeds)
        seed = int(rng.integers(game.seeds))
        peer.apply_action(seed)
    return peer, game.gridbots.new_initial_state(seed=seed, **game.scenario)


@pytest.mark.parametrize("name", NAMES)
def test_pyspiel_twin_agrees_with_gridbots_move_for_move(name):
    game = pyspiel.load_game(name)
    offset = game.gridbots.num_actions if game.gridbots.chance_ids else 0
    rng = np.random.default_rng(3)
    for _ in range(3):
        peer, state = _twin_start(game, rng)
        while not state.is_terminal():
            player = state.current_player()
            assert peer.current_player() == player and not peer.is_terminal()
            assert peer.returns() == state.returns() == [0.0] * game.num_players()
            if player == CHANCE:
                expect = [(a - offset, p) for a, p in state.chance_outcomes()]
                assert peer.chance_outcomes() == expect
                assert peer.legal_actions() == [a for a, _ in expect]
                action = state.random_action(rng)
                state.apply_action(action)
                peer.apply_action(action - offset)
            elif player == SIMULTANEOUS:
                joint = []
                for p in range(game.num_players()):
                    assert peer.legal_actions(p) == sorted(state.legal_actions(p))
                    joint.append(state.random_action(rng, p))
                state.apply_actions(joint)
                peer.apply_actions([a if a >= 0 else 0 for a in joint])  # 0 for a crashed bike
            else:
                assert peer.legal_actions() == sorted(state.legal_actions())
                assert np.array_equal(
                    peer.observation_tensor(player), state.observation_tensor(player).ravel()
                )
                action = state.random_action(rng)
                state.apply_action(action)
                peer.apply_action(action)
        assert peer.is_terminal() and peer.returns() == state.returns()


@pytest.mark.parametrize("name", ["connect4", "othello"])
def test_gridbots_twins_agree_with_openspiels_own_games(name):
    """An independent referee: OpenSpiel's C++ connect_four and othello."""
    ours = pyspiel.load_game(f"gridbots_{name}")
    theirs = pyspiel.load_game(load_game(name).openspiel_name)
    rng = np.random.default_rng(5)
    for _ in range(20):
        a, b = ours.new_initial_state(), theirs.new_initial_state()
        while not b.is_terminal():
            assert a.current_player() == b.current_player()
            assert a.legal_actions() == b.legal_actions()
            action = int(rng.choice(b.legal_actions()))
            a.apply_action(action)
            b.apply_action(action)
        assert a.is_terminal() and a.returns() == b.returns()


def test_a_multi_action_turn_is_a_run_of_moves_by_one_player():
    game = pyspiel.load_game("gridbots_tactics(preset=duel)")
    state = game.new_initial_state()
    rng = np.random.default_rng(0)
    runs, mover, length = [], None, 0
    while not state.is_terminal() and len(runs) < 6:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        player = state.current_player()
        if player != mover and mover is not None:
            runs.append((mover, length))
            length = 0
        mover, length = player, length + 1
        action = int(rng.choice(state.legal_actions()))
        ends = game.gridbots.ends_turn(action)
        state.apply_action(action)
        if ends and not state.is_terminal():
            assert state.current_player() != player or state.is_chance_node()
    assert [p for p, _ in runs] == [0, 1, 0, 1, 0, 1]
    assert any(length > 1 for _, length in runs)  # several actions, then End Turn


@pytest.mark.parametrize(
    "name, words",
    [
        ("gridbots_nope", "Unknown game"),
        ("gridbots_pig(foo=1)", "Unknown parameter 'foo'"),
        ("gridbots_pig(target=abc)", "Wrong type for parameter target"),
        ("gridbots_pig(target=-3)", "pig: target must be a positive integer"),
        ("gridbots_tactics(preset=nope)", "tactics: unknown preset 'nope'"),
        ("gridbots_lazerbike(start=sideways)", "lazerbike: start must be"),
        ("gridbots_lazerbike(players=2,teams=11)", "lazerbike: teams"),
        ("gridbots_sokoban(level=nope)", "sokoban: unknown level 'nope'"),
        ("gridbots_pig(seeds=0)", "seeds must be >= 1"),
    ],
)
def test_bad_names_and_parameters_raise_openspiels_error(name, words):
    with pytest.raises(pyspiel.SpielError, match=words.replace("(", r"\(")):
        pyspiel.load_game(name)


@pytest.mark.slow
def test_nothing_loads_pyspiel_unless_asked():
    code = (
        "import sys, engine, agents, engine.match, engine.tournament;"
        "from engine import load_game; from engine.registry import game_names;"
        "[load_game(n) for n in game_names()];"
        "agents.make('random', load_game('connect4'));"
        "assert 'pyspiel' not in sys.modules and 'open_spiel' not in sys.modules, 'loaded';"
        "import engine.openspiel_games; assert 'pyspiel' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _mcts_game(game):
    """MCTS needs turns: a simultaneous game goes through OpenSpiel's turn-based conversion."""
    if game.get_type().dynamics == SIM:
        return pyspiel.convert_to_turn_based(game)
    return game


FAST_DUELS = ["gridbots_connect4", "gridbots_othello", "gridbots_pig(target=20)",
              "gridbots_lazerbike", "gridbots_territory(size=4,rounds=30)",
              "gridbots_tactics(preset=duel,max_turns=6)"]  # fmt: skip
SLOW_DUELS = ["gridbots_territory", "gridbots_tactics"]  # their default sizes


def _mcts_plays_a_full_game(name):
    game = _mcts_game(pyspiel.load_game(name))
    rng = np.random.RandomState(7)
    evaluator = mcts.RandomRolloutEvaluator(1, rng)
    bots = [mcts.MCTSBot(game, 1.4, 6, evaluator, random_state=rng) for _ in range(2)]
    state = game.new_initial_state()
    returns = evaluate_bots(state, bots, rng)
    assert state.is_terminal() and returns == state.returns()
    assert sorted(returns) in ([-1.0, 1.0], [0.0, 0.0])


@pytest.mark.parametrize("name", FAST_DUELS)
def test_openspiel_python_mcts_plays_a_full_game(name):
    _mcts_plays_a_full_game(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW_DUELS)
def test_openspiel_python_mcts_plays_a_full_game_slow(name):
    _mcts_plays_a_full_game(name)


def test_evaluate_bots_runs_a_simultaneous_game_with_a_mix_of_bots():
    from agents.openspiel.bot import make_bot

    game = pyspiel.load_game("gridbots_lazerbike(players=3,start=random,seeds=20)")
    rng = np.random.RandomState(2)
    bots = [
        make_bot("simab:depth=1", game, 0, seed=0),
        UniformRandomBot(1, rng),
        make_bot("random:guards=safe", game, 2, seed=2),
    ]
    state = game.new_initial_state()
    returns = evaluate_bots(state, bots, rng)
    assert state.is_terminal() and returns == state.returns()
    twin = state.twin
    assert twin.returns() == returns and sorted(returns) in ([-1.0, -1.0, 1.0], [0.0] * 3)
