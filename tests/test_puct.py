"""PUCT search mechanics, checked with a network that knows nothing (uniform policy, value 0):
whatever it finds comes from the search itself (terminal results backed up the tree)."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make
from agents.base import AgentError
from agents.puct.agent import SelfPlaySettings
from agents.puct.gumbel import child_values, halving_phases, scores
from agents.puct.pv_net import write_uniform_network
from engine import parse_game_spec
from engine.match import play_game
from engine.protocol import CHANCE


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uniform")
    return {
        name: str(write_uniform_network(parse_game_spec(name), folder / f"{name}.onnx"))
        for name in ("connect4", "othello", "pig")
    }


def c4(moves: str):
    g = parse_game_spec("connect4")
    return g, g.state_from_history(g.parse_moves(moves))


def test_the_search_finds_the_win_and_the_block(uniform):
    g, state = c4("121212")  # X to move wins with a fourth stone in column 1
    agent = make(f"puct:model={uniform['connect4']},sims=400", g, seed=0)
    assert agent.step(state) == 0
    g, state = c4("12131")  # O to move must block column 1
    assert agent.step(state) == 0


def test_visits_add_up_and_virtual_loss_is_taken_back(uniform):
    g, state = c4("44")
    agent = make(f"puct:model={uniform['connect4']},sims=300,batch=8,reuse=0", g, seed=0)
    f = agent.run(state)
    kids = f.children(0)
    assert int(f.visits[0, 0]) == 300
    assert int(f.visits[0, kids].sum()) == 300 - 1  # the first walk evaluated the root itself
    assert not f.virtual[0, : f.size[0]].any() and not f.pending[0, : f.size[0]].any()
    assert np.isclose(f.prior[0, kids].sum(), 1.0)
    # every expanded node's children sum to its visits minus the visit that expanded it
    for node in np.flatnonzero(f.num_children[0, : f.size[0]] > 0):
        kids = f.children(0, int(node))
        assert f.visits[0, kids].sum() == f.visits[0, node] - 1


def test_the_tree_is_kept_between_moves(uniform):
    g, state = c4("")
    agent = make(f"puct:model={uniform['connect4']},sims=200", g, seed=0)
    first = agent.step(state)
    kept = agent.search.forest.child_with_action(0, 0, first)
    reply_node = agent.search.forest.child_with_action(0, kept, 3)
    expected = int(agent.search.forest.visits[0, reply_node])
    state.apply_action(first)
    state.apply_action(3)
    agent._prepare(state)
    assert expected > 0 and int(agent.search.forest.visits[0, 0]) == expected
    assert np.array_equal(agent.search.forest.roots[0], state.array)


def test_chance_nodes_and_multi_action_turns(uniform):
    g = parse_game_spec("pig:target=20")
    agent = make(f"puct:model={uniform['pig']},sims=300", g, seed=1)
    state = g.new_initial_state()
    state.apply_action(0)  # roll: a chance node follows
    assert state.current_player() == CHANCE
    state.apply_action(4)  # a five: the player moves again (same mover)
    f = agent.run(state)
    roll = f.child_with_action(0, 0, 0)
    assert f.mover[0, roll] == state.current_player()
    faces = f.children(0, roll)  # the die: six outcomes, priors their probabilities
    assert f.num_children[0, roll] == 6 and np.allclose(f.prior[0, faces], 1 / 6)
    assert (f.mover[0, faces] == CHANCE).all()
    assert agent.plan(state)[-1] in (0, 1)
    final = play_game(g, [agent, make("random", g, seed=2)], seed=3)
    assert final.is_terminal()


@pytest.mark.slow
def test_batched_self_play_is_legal_and_deterministic(uniform):
    g = parse_game_spec("othello")
    settings = SelfPlaySettings(sims=16, parallel=3, temperature_plies=4, alpha=0.5)

    def run():
        agent = make(f"puct:model={uniform['othello']},sims=16", g, seed=0)
        starts = [g.new_initial_state(seed=i) for i in range(5)]
        rngs = [np.random.default_rng(i) for i in range(5)]
        return sorted(agent.self_play(starts, rngs, settings), key=lambda r: r[0])

    first = run()
    assert [i for i, _, _ in first] == list(range(5))
    for _, final, decisions in first:
        assert final.is_terminal() and decisions
        replay = g.new_initial_state()
        by_step = {d.step: d for d in decisions}
        for step, action in enumerate(final.history()):
            if step in by_step:
                d = by_step[step]
                assert np.array_equal(d.state, replay.array) and d.action == action
                assert np.isclose(d.policy.sum(), 1.0)
                assert set(np.flatnonzero(d.policy)) <= set(replay.legal_actions())
            replay.apply_action(action)
    second = run()
    assert [f.history() for _, f, _ in first] == [f.history() for _, f, _ in second]


def test_playout_cap_randomisation_records_only_full_searches(uniform):
    g = parse_game_spec("connect4")
    agent = make(f"puct:model={uniform['connect4']},sims=32", g, seed=0)
    settings = SelfPlaySettings(sims=32, fast_sims=4, full_share=0.25, parallel=4, eps=0.0)
    starts = [g.new_initial_state(seed=i) for i in range(8)]
    rngs = [np.random.default_rng(i) for i in range(8)]
    played = recorded = 0
    for _, final, decisions in agent.self_play(starts, rngs, settings):
        played += len(final.history())
        recorded += len(decisions)
    assert 0 < recorded < 0.6 * played  # about a quarter of the moves, never all


@pytest.mark.parametrize(
    "spec, words",
    [
        ("puct:model=/nowhere/net.onnx", "not found"),
        ("puct:model={othello}", "trained for othello"),
        ("puct:model={connect4},sims=0", "sims"),
        ("puct:model={connect4},wat=1", "unknown option"),
        ("puct:model={connect4},gumbel=4,ms=50", "gumbel .* fixed sims=, not ms="),
        ("puct:model={connect4},gumbel=-1", "gumbel .* is >= 0$"),
        ("puct:model={connect4},gumbel_mix=1", "gumbel_mix .* needs gumbel=M"),
        ("puct:model={connect4},gumbel=4,gumbel_mix=2", "gumbel_mix is 0 or 1"),
        ("puct:model={connect4},prior_temp=0", "prior_temp"),
        ("policy:model={connect4}", "two-player turn-based"),
    ],
)
def test_bad_models_and_options_are_one_clear_error(uniform, spec, words):
    game = "lazerbike" if "turn-based" in words else "connect4"
    with pytest.raises(AgentError, match=words):
        make(spec.format(**uniform), parse_game_spec(game))


def test_a_network_for_other_planes_or_actions_is_refused(uniform, tmp_path):
    from engine.games.connect4 import Connect4

    class Wider(Connect4):  # same name, more columns: planes and actions no longer fit
        def _configure(self):
            super()._configure()
            self.num_actions, self.observation_shape = 9, (2, 6, 9)

    with pytest.raises(AgentError, match="reads planes"):
        make(f"puct:model={uniform['connect4']}", Wider())


def test_exact_leaf_search_solves_short_forced_wins(uniform):
    """After 4455, X wins by a double threat (3 or 6 makes two open threes): a depth-3 exact
    search at the leaves proves it within a few walks, which the uniform net cannot see."""
    g, state = c4("4455")
    agent = make(f"puct:model={uniform['connect4']},sims=60,solve=3", g, seed=0)
    assert agent.step(state) in (2, 5)
    f = agent.search.forest
    assert f.solved(0) and int(f.visits[0, 0]) < 60  # decided: the search stopped early
    won = f.best_child(0)
    assert f.proof[0, won] >> 16 == 1 and f.proof[0, won] & 0xFFFF == 2  # a win 2 plies on


def test_puct_analysis_is_its_root_statistics(uniform):
    g, state = c4("121212")  # X wins at once in column 1
    agent = make(f"puct:model={uniform['connect4']},sims=300,reuse=0", g, seed=0)
    found = agent.analyse(state)
    counts, means = agent.search.forest.root_stats(0, g.num_actions)
    assert found.move == 0 and found.ranked()[0] == 0
    assert found.extra["simulations"] == counts.sum()
    assert sum(found.policy.values()) == pytest.approx(1.0)
    for a in np.flatnonzero(counts > 0):
        assert found.policy[int(a)] == pytest.approx(counts[a] / counts.sum())
        assert found.values[int(a)] == pytest.approx(means[a])
    assert found.values[0] == pytest.approx(1.0)  # the win, backed up from the terminal
    with pytest.raises(AgentError, match="player to move"):
        agent.analyse(g.state_from_history(g.parse_moves("1212121")))


def test_policy_analysis_is_the_networks_own_output(uniform):
    g, state = c4("1111112")  # column 1 is full: six legal columns
    found = make(f"policy:model={uniform['connect4']}", g, seed=0).analyse(state)
    assert sorted(found.policy) == [1, 2, 3, 4, 5, 6]
    assert all(p == pytest.approx(1 / 6) for p in found.policy.values())  # a uniform network
    assert found.value == pytest.approx(0.0) and found.move == 1  # first of equal priors


def test_sequential_halving_phases_split_the_budget():
    assert halving_phases(4, 40) == [(4, 5), (2, 10)]  # two halvings, 20 walks each
    # 16 candidates, 4 halvings of 10 walks: at least one visit each, the last pair the rest
    assert halving_phases(16, 40) == [(16, 1), (8, 1), (4, 2), (2, 5)]
    assert halving_phases(3, 12) == [(3, 2), (2, 3)]
    assert halving_phases(1, 10) == [(1, 10)] and halving_phases(5, 0) == []


def test_gumbel_root_finds_the_win_and_the_block(uniform):
    g, state = c4("121212")
    agent = make(f"puct:model={uniform['connect4']},sims=64,gumbel=4", g, seed=0)
    assert agent.step(state) == 0
    g, state = c4("12131")
    assert agent.step(state) == 0
    # the candidates that let X complete column 1 are proven lost and ranked by that value
    f = agent.search.forest
    kids = f.children(0)
    lost = (f.proof[0, kids] >> 16) == 3
    assert lost.any() and np.allclose(child_values(f, 0, kids, 1.0)[lost], -1.0)


def test_gumbel_root_visits_follow_sequential_halving(uniform):
    """Uniform priors: the candidates are the first four columns. 41 simulations: one evaluates
    the root, then 5 walks to each of the four, 10 more to each of the better two."""
    g, state = c4("44")
    agent = make(f"puct:model={uniform['connect4']},sims=41,gumbel=4,reuse=0", g, seed=0)
    move = agent.step(state)
    f = agent.search.forest
    kids = f.children(0)
    visits = f.visits[0, kids]
    assert int(f.visits[0, 0]) == 41 and not f.virtual[0, : f.size[0]].any()
    assert sorted(visits[:4].tolist()) == [5, 5, 15, 15] and not visits[4:].any()
    # the move is the survivor with the best logit + sigma(q), not merely the most visited
    q = child_values(f, 0, kids, 1.0)
    survivors = np.flatnonzero(visits == 15)
    best = survivors[np.argmax(scores(np.log(f.prior[0, kids][survivors]), q[survivors], 15))]
    assert move == int(f.action[0, kids.start + best])


def test_gumbel_root_plays_chance_nodes_and_multi_action_turns(uniform):
    g = parse_game_spec("pig:target=20")
    agent = make(f"puct:model={uniform['pig']},sims=24,gumbel=2", g, seed=1)
    final = play_game(g, [agent, make("random", g, seed=2)], seed=3)
    assert final.is_terminal()


class SharpNet:
    """A stand-in network with one fixed policy over Connect 4's seven columns, value 0."""

    policy = np.array([0.64, 0.16, 0.08, 0.04, 0.04, 0.02, 0.02])

    def __call__(self, planes, mask):
        return np.tile(self.policy, (len(planes), 1)), np.zeros(len(planes))


@pytest.mark.parametrize("temp, ratio", [(1.0, 4.0), (2.0, 2.0), (0.5, 16.0)])
def test_prior_temperature_reshapes_the_networks_priors(temp, ratio):
    """prior_temp=T stores p ** (1/T), renormalised: 0.64 : 0.16 (4 : 1) becomes 2 : 1 at
    T = 2 and 16 : 1 at T = 1/2, 0.08 : 0.04 (2 : 1) becomes 2 ** (1/T) : 1, and the priors
    still sum to 1."""
    from agents.puct.agent import Search

    game = parse_game_spec("connect4")
    search = Search(game, SharpNet(), 1, 4096, 1, 1.5, 0.25, prior_temp=temp)
    search.forest.reset(0, game.new_initial_state(seed=0).array)
    search.round(np.ones(1, dtype=np.int64))  # the first walk expands the root
    prior = search.forest.prior[0, search.forest.children(0)]
    assert np.isclose(prior[0] / prior[1], ratio)
    assert np.isclose(prior[2] / prior[3], 2 ** (1 / temp))
    assert np.isclose(prior.sum(), 1.0) and (prior[1:] <= prior[0]).all()


def test_a_flatter_prior_lets_the_search_look_past_the_networks_favourite(uniform):
    """With a prior of 0.64 on column 1 and the rest spread thin, 40 simulations of a value-0
    network stay mostly on column 1; prior_temp=4 spreads them over the other columns."""
    game = parse_game_spec("connect4")
    state = game.new_initial_state(seed=0)
    counts = {}
    for temp in (1.0, 4.0):
        agent = make(f"puct:model={uniform['connect4']},sims=40,prior_temp={temp}", game, seed=0)
        agent.search.net = SharpNet()
        visits, _ = agent.run(state).root_stats(0, game.num_actions)
        counts[temp] = visits
    assert counts[1.0][0] > counts[4.0][0] and counts[4.0][1:].min() > counts[1.0][1:].min()


def test_gumbel_mix_in_play_still_finds_the_immediate_win(uniform):
    """`gumbel_mix=1` is accepted in play and the halving still plays the immediate win (X has
    three in column 1); the completion itself is checked in tests/test_gumbel_selfplay.py."""
    game, state = c4("121212")
    agent = make(f"puct:model={uniform['connect4']},sims=30,gumbel=7,gumbel_mix=1", game, seed=0)
    assert agent.step(state) == 0
