"""`agent.analyse(state)`: each agent's account of a position, checked against independent
truth: plain minimax per root move (alphabeta), the tree's own counts (mcts), the rule a
trained model learned (seq), a uniform choice (random), and the JSON the web page reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_alphabeta import root_values
from test_hmm import copycat_arrays, copycat_moves

from agents import AgentError, make
from agents.search.alphabeta import WIN_SCALE
from agents.sequence.agent import SeqAgent
from engine import load_game
from models import hmm


def as_unit(value: float) -> tuple[float, int]:
    """A minimax value (results: +-WIN_SCALE minus the plies from the root) as the analysis
    reports it: (value in [-1, 1], signed plies to the proven end or 0)."""
    if abs(value) <= 2:
        return value, 0
    plies = round(WIN_SCALE - abs(value))
    return (1.0, plies) if value > 0 else (-1.0, -plies)


@pytest.mark.parametrize(
    "name,depth,plies",
    [("connect4", 4, (4, 16)), ("connect4", 2, (6, 30)), ("othello", 3, (4, 20))],
)
def test_alphabeta_scores_every_root_move_as_plain_minimax(name, depth, plies):
    game = load_game(name)
    agent = make(f"alphabeta:depth={depth}", game, seed=0)
    rng = np.random.default_rng(3)
    for i in range(6):
        state = game.new_initial_state(seed=i, opening=int(rng.integers(*plies)))
        if state.is_terminal():
            continue
        found = agent.analyse(state)
        expected = dict(root_values(game, state, depth))
        assert set(found.values) == set(expected) == set(state.legal_actions())
        for action, minimax in expected.items():
            value, end = as_unit(minimax)
            assert found.values[action] == pytest.approx(value), (state.history(), action)
            assert found.ends.get(action, 0) == end, (state.history(), action)
        assert found.move == agent.step(state.clone())
        assert found.value == pytest.approx(max(as_unit(v)[0] for v in expected.values()))
        assert found.extra["depth"] == depth and found.extra["nodes"] > 0


def test_alphabeta_names_the_forced_win_and_its_distance():
    game = load_game("connect4")
    state = game.state_from_history(game.parse_moves("4455"))  # c1 or f1: two threats
    found = make("alphabeta:depth=6", game).analyse(state)
    assert found.ends == {2: 3, 5: 3} and found.move in (2, 5) and found.value == 1.0
    lines = found.describe(state)
    assert lines[0].startswith(f"plays {found.move + 1} (wins in 3)")
    assert lines[1].split()[:6] == ["3", "wins", "in", "3", "6", "wins"]


def test_mcts_analysis_is_its_root_counts():
    game = load_game("othello")
    state = game.state_from_history(game.parse_moves("d3 c5 f6"))
    agent = make("mcts:sims=300", game, seed=4)
    found = agent.analyse(state)
    actions, visits, means = agent.last_tree.root_children()
    assert sum(found.policy.values()) == pytest.approx(1.0)
    assert found.extra["simulations"] == visits.sum() == 300
    assert found.move == int(agent.last_tree.action[agent.last_tree.best_child()])
    for a, v, m in zip(actions, visits, means, strict=True):
        assert found.policy[int(a)] == pytest.approx(v / 300)
        assert found.values[int(a)] == pytest.approx(m)
    assert found.value == pytest.approx(float((visits * means).sum() / 300))
    assert -1 <= found.value <= 1


def test_random_is_uniform_and_guarded_random_says_only_its_move():
    game = load_game("connect4")
    state = game.state_from_history(game.parse_moves("444444"))
    found = make("random", game, seed=1).analyse(state)
    assert found.policy == {a: pytest.approx(1 / 6) for a in (0, 1, 2, 4, 5, 6)}
    assert found.value is None and not found.values
    guarded = make("random:guards=win+block", game, seed=1).analyse(
        game.state_from_history(game.parse_moves("121212"))
    )
    assert guarded.move == 0 and not guarded.policy  # the win, and nothing claimed beyond it


def test_a_trained_sequence_model_ranks_the_move_it_learned_first(tmp_path):
    """An HMM trained on a copying bot's games (test_hmm) puts the most weight on the copy."""
    arrays, meta = copycat_arrays("qualitative")
    hmm.train(arrays, meta, {"player": 0, "outcomes": "all"}, tmp_path)
    game = load_game("connect4")
    agent = SeqAgent(game, "seq", seed=0, model=str(tmp_path / "model.json"), guards="none")
    same = total = 0
    for seed in range(600, 604):  # the copying bot against random, as in training
        state = game.new_initial_state(seed=seed)
        opponent = make("random", game, seed=seed)
        while not state.is_terminal():
            if state.current_player() == 0:
                found = agent.analyse(state)
                assert sum(found.policy.values()) == pytest.approx(1.0)
                assert set(found.policy) == set(state.legal_actions())
                assert found.policy[found.move] == max(found.policy.values())
                same += found.move == copycat_moves(state)
                total += 1
                state.apply_action(copycat_moves(state))
            else:
                state.apply_action(opponent.step(state))
    assert same / total > 0.8  # chance: about 1/7


def test_json_speaks_the_games_notation():
    game = load_game("othello")
    state = game.state_from_history(game.parse_moves("d3"))
    found = make("alphabeta:depth=2", game).analyse(state)
    data = json.loads(json.dumps(found.to_json(state)))
    assert data["move"] in {"c3", "e3", "c5"} and data["action"] == found.move
    assert set(data["values"]) == {"c3", "e3", "c5"} and data["extra"]["depth"] == 2
    assert data["seconds"] >= 0 and data["policy"] == {} and data["ends"] == {}


def test_analysis_needs_a_player_to_move():
    game = load_game("lazerbike")
    with pytest.raises(AgentError, match="simultaneous lap"):
        make("simab:depth=1", game).analyse(game.new_initial_state())
