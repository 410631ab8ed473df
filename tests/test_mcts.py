"""UCT search: finds wins and blocks in hand-worked positions, beats random, handles chance."""

import numpy as np
import pytest

from agents import AgentError, make, make_seats
from engine import load_game
from engine.match import play_match


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


def test_takes_the_immediate_win(connect4):
    state = connect4.state_from_history(connect4.parse_moves("121212"))
    assert make("mcts:sims=400", connect4, seed=1).step(state) == 0  # column 1 completes four


def test_blocks_the_only_threat(connect4):
    state = connect4.state_from_history(connect4.parse_moves("15253"))  # X holds 1,2,3
    assert make("mcts:sims=3000", connect4, seed=2).step(state) == 3  # O must play column 4


def test_tree_counts_every_simulation(connect4):
    agent = make("mcts:sims=500", connect4, seed=3)
    agent.step(connect4.new_initial_state())
    actions, visits, _ = agent.last_tree.root_children()
    assert sorted(actions.tolist()) == list(range(7))
    assert visits.sum() == 500 and agent.last_tree.visits[0] == 500


def test_same_seed_same_move(connect4):
    state = connect4.state_from_history(connect4.parse_moves("44"))
    moves = {make("mcts:sims=200", connect4, seed=9).step(state) for _ in range(3)}
    assert len(moves) == 1


def test_beats_random_with_sides_swapped(connect4):
    result = play_match(
        connect4,
        lambda seed: make("mcts:sims=200", connect4, seed=seed),
        lambda seed: make("random", connect4, seed=seed),
        games=10,
    )
    assert result.wins >= 9


def test_pig_chance_nodes_and_multi_action_turns():
    pig = load_game("pig", target=20)
    agent = make("mcts:sims=300", pig, seed=4)
    state = pig.new_initial_state()
    assert agent.step(state) in state.legal_actions()
    tree = agent.last_tree
    # the child for `roll` leads to a chance node whose six outcomes are sampled evenly
    roll = tree.first_child[0] + list(
        tree.action[tree.first_child[0] : tree.first_child[0] + 2]
    ).index(0)
    outcomes = slice(tree.first_child[roll], tree.first_child[roll] + tree.num_children[roll])
    assert tree.num_children[roll] == 6
    assert np.ptp(tree.visits[outcomes]) <= 1


def test_bad_specs_are_rejected(connect4):
    for spec in ("mcts:sims=0", "mcts:sims=abc", "mcts:depth=3", "mcts:c"):
        with pytest.raises(AgentError):
            make(spec, connect4)
    with pytest.raises(AgentError):
        make("mcts", load_game("lazerbike"))
    with pytest.raises(AgentError):
        make_seats("random;random;random", connect4)


def test_solver_proves_an_immediate_win_and_stops_early(connect4):
    state = connect4.state_from_history(connect4.parse_moves("121212"))
    agent = make("mcts:sims=5000,solve=true", connect4, seed=5)
    assert agent.step(state) == 0
    tree = agent.last_tree
    assert tree.proven[tree.best_child()] == 1
    assert tree.visits[0] < 5000  # the root was proven before the budget ran out


def test_solver_proves_a_lost_position(connect4):
    # O to move; X threatens columns 1 and 5 on the bottom row at once: every move loses
    state = connect4.state_from_history(connect4.parse_moves("2636"))
    state.apply_action(3)  # X plays column 4: X holds 2,3,4 on the bottom row
    agent = make("mcts:sims=20000,solve=true", connect4, seed=6)
    agent.step(state)
    kids = agent.last_tree.proven[
        agent.last_tree.first_child[0] : agent.last_tree.first_child[0] + 7
    ]
    assert (kids == -1).all()


def test_plan_is_the_rest_of_the_turn():
    pig = load_game("pig", target=20)
    agent = make("mcts:sims=400", pig, seed=7)
    plan = agent.plan(pig.new_initial_state())
    assert plan in ([0], [1])  # a roll hands over to chance; a hold ends the turn


def test_per_turn_searches_once_and_follows_the_real_chance_outcome():
    pig = load_game("pig", target=30)
    agent = make("mcts:sims=2000,per=turn", pig, seed=5)
    state = pig.new_initial_state()
    assert agent.step(state) == 0  # rolling from 0 is best
    tree = agent.last_tree
    state.apply_action(0)
    state.apply_action(3)  # the die shows 4
    roll = tree.first_child[0] + list(
        tree.action[tree.first_child[0] : tree.first_child[0] + 2]
    ).index(0)
    four = tree.first_child[roll] + 3
    expected = int(tree.action[tree.best_child(four)])
    assert agent.step(state) == expected and agent.last_tree is tree  # no new search
    state.apply_action(1)  # hold: the other player's turn needs a search of its own
    agent.step(state)
    assert agent.last_tree is not tree


def test_per_turn_is_checked():
    with pytest.raises(AgentError):
        make("mcts:per=game", load_game("pig"))
