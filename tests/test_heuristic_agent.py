"""The game's own policy as an agent: pig's hold-at-N on hand-worked turns, and MCTS against it."""

import pytest

from agents import AgentError, make
from engine import load_game
from engine.match import play_match
from engine.tournament import wilson_interval

ROLL, HOLD = 0, 1


def after(game, rolls):
    """State after player 0 rolls the given faces (1-6) in one turn."""
    history = []
    for face in rolls:
        history += [ROLL, face - 1]
    return game.state_from_history(history)


def test_hold_at_twenty_on_hand_worked_turns():
    pig = load_game("pig")
    agent = make("heuristic:hold=20", pig)
    assert agent.step(after(pig, [6, 6, 6])) == ROLL  # 18 < 20
    assert agent.step(after(pig, [6, 6, 6, 2])) == HOLD  # 20
    assert make("heuristic:hold=10", pig).step(after(pig, [6, 5])) == HOLD
    near_goal = load_game("pig", target=10)
    assert agent.step(after(near_goal, [5, 5])) == HOLD  # 10 banks the win even under 20


def test_mcts_beats_random_and_holds_its_own_against_hold_at_20():
    pig = load_game("pig", target=30)
    versus_random = play_match(
        pig, lambda s: make("mcts:sims=300", pig, seed=s), lambda s: make("random", pig, seed=s), 20
    )
    assert versus_random.score >= 0.8
    versus_hold = play_match(
        pig,
        lambda s: make("mcts:sims=300", pig, seed=s),
        lambda s: make("heuristic:hold=20", pig, seed=s),
        40,
    )
    # holding its own: not clearly weaker, the 95% interval of its score reaches 0.5
    assert wilson_interval(versus_hold.score, versus_hold.games)[1] >= 0.5, versus_hold


def test_bad_heuristic_specs():
    with pytest.raises(AgentError):
        make("heuristic:hold=x", load_game("pig"))
    with pytest.raises(AgentError):
        make("heuristic:fold=3", load_game("pig"))
    with pytest.raises(AgentError):
        make("heuristic", load_game("connect4"))
