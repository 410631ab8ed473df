"""Gumbel AlphaZero's root in batched self-play (agents.puct.gumbel.GumbelRoots): the walk
schedule and the move worked out by hand from the drawn noise, the improved policy, and the
selfplay technique with it on Connect 4 and on pig (chance nodes, multi-action turns)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.puct.agent import Search
from agents.puct.gumbel import C_SCALE, C_VISIT, GumbelRoots
from agents.puct.pv_net import PolicyValueNet, write_uniform_network
from engine import parse_game_spec
from features.errors import DataError
from features.generate import selfplay


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uniform")
    return {
        name: str(write_uniform_network(parse_game_spec(name), folder / f"{name}.onnx"))
        for name in ("connect4", "pig")
    }


def sigma(q: np.ndarray, most: float) -> np.ndarray:
    return (C_VISIT + most) * C_SCALE * (q + 1.0) / 2.0


class StoneCountNet:
    """A stand-in network: uniform policy, value 0.05 a stone on the board minus 0.5, so that
    every position's value is known by hand and differs from its neighbours'."""

    def __call__(self, planes, mask):
        stones = np.asarray(planes).reshape(len(planes), -1).sum(axis=1)
        policy = np.asarray(mask, dtype=np.float64)
        return policy / policy.sum(axis=1, keepdims=True), 0.05 * stones - 0.5


def searched(uniform, moves: str, considered: int, sims: int, seed: int, net=None, mix=False):
    """One tree searched from the position after `moves` (1-based columns) the way self-play
    does it: one walk a round, the halving's child forced at the root."""
    game = parse_game_spec("connect4")
    state = game.state_from_history(game.parse_moves(moves))
    net = net or PolicyValueNet(game, uniform["connect4"])
    search = Search(game, net, 1, 4096, 1, 1.5, 0.25)
    search.forest.reset(0, state.array)
    roots = GumbelRoots(search.forest, 1, considered, 1.0, mix)
    rng = np.random.default_rng(seed)
    roots.begin(0, sims, rng)
    trees, walks = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64)
    while search.forest.visits[0, 0] < sims:
        search.round(walks, roots.next_walks(trees))
        roots.plan_expanded(trees, lambda t: rng)
    return game, search.forest, roots, rng


def test_walks_follow_the_halving_of_the_gumbel_drawn_candidates(uniform):
    """Uniform priors: the candidates are the four columns with the largest Gumbel draws (the
    generator's first draws after the search began); 41 walks: one evaluates the root, 5 go to
    each candidate, then 10 more to each of the two with the best gumbel + sigma(q)."""
    game, f, roots, rng = searched(uniform, "44", considered=4, sims=41, seed=7)
    gumbel = np.random.default_rng(7).gumbel(size=7)  # the same generator's first draws
    candidates = np.argsort(-gumbel, kind="stable")[:4]
    kids = f.children(0)
    visits = f.visits[0, kids]
    assert set(np.flatnonzero(visits)) == set(candidates.tolist())
    assert sorted(visits[candidates].tolist()) == [5, 5, 15, 15]
    q = np.divide(f.value[0, kids], np.maximum(visits, 1))
    # the move: the survivor (15 walks) with the best gumbel + logit + sigma(q)
    survivors = np.flatnonzero(visits == 15)
    move, policy = roots.finish(0, game.num_actions, rng)
    best = survivors[np.argmax(gumbel[survivors] + sigma(q[survivors], 15.0))]
    assert move == kids.start + best
    # the improved policy: softmax(logit + sigma(completed q)), unvisited columns at the mean q
    completed = q.copy()
    completed[visits == 0] = q[visits > 0].mean()
    z = np.log(f.prior[0, kids]) + sigma(completed, 15.0)
    expected = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    assert np.allclose(policy[f.action[0, kids]], expected) and policy.sum() == pytest.approx(1)


def test_v_mix_completes_unvisited_moves_by_hand():
    """Three root children, visits 4 / 2 / 0, value sums 2 / -1 (q 0.5 / -0.5), priors 0.5 /
    0.3 / 0.2, the network's root value 0.1: v_mix = (0.1 + 6 * (0.5 * 0.5 + 0.3 * -0.5) / 0.8)
    / 7 = 0.85 / 7; the siblings' mean would give 0. With no child visited, v_mix is the root's
    own value."""
    from agents.puct.gumbel import child_values
    from agents.puct.tree import Forest

    f = Forest(1, 8, 4)
    f.first_child[0, 0], f.num_children[0, 0] = 1, 3
    kids = f.children(0)
    f.visits[0, kids], f.value[0, kids] = [4, 2, 0], [2.0, -1.0, 0.0]
    f.prior[0, kids], f.net_value[0, 0] = [0.5, 0.3, 0.2], 0.1
    assert np.allclose(child_values(f, 0, kids, 1.0, mix=True), [0.5, -0.5, 0.85 / 7])
    assert np.allclose(child_values(f, 0, kids, 1.0), [0.5, -0.5, 0.0])
    f.visits[0, kids], f.value[0, kids] = 0, 0.0
    assert np.allclose(child_values(f, 0, kids, 1.0, mix=True), [0.1, 0.1, 0.1])
    assert np.allclose(child_values(f, 0, kids, 1.0), 0.0)


def test_the_roots_network_value_is_kept_through_a_reroot():
    """The search stores each expanded node's network value (StoneCountNet: -0.5 at the empty
    board, -0.45 one stone later); re-rooting at a child carries the child's value to node 0."""
    game = parse_game_spec("connect4")
    search = Search(game, StoneCountNet(), 1, 4096, 1, 1.5, 0.25)
    empty = game.new_initial_state(seed=0)
    search.forest.reset(0, empty.array)
    for _ in range(12):
        search.round(np.ones(1, dtype=np.int64))
    f = search.forest
    assert f.net_value[0, 0] == pytest.approx(-0.5)
    kids = f.children(0)
    visited = [c for c in range(kids.start, kids.stop) if f.num_children[0, c] > 0]
    assert visited and all(f.net_value[0, c] == pytest.approx(-0.45) for c in visited)
    column = int(f.action[0, visited[0]])
    after = empty.clone()
    after.apply_action(column)
    assert search.descend(0, empty.array, [column], after.array)
    assert f.net_value[0, 0] == pytest.approx(-0.45) and f.num_children[0, 0] > 0


def test_the_improved_policy_completes_unvisited_moves_by_v_mix():
    """With `mix` the halving's policy target fills the columns it never visited with v_mix of
    the root (worked out here from the tree's own visits, values and priors and the network's
    root value), not with the visited columns' mean; the two targets differ."""
    game, f, roots, rng = searched(None, "44", 4, 41, seed=7, net=StoneCountNet(), mix=True)
    kids = f.children(0)
    visits = f.visits[0, kids].astype(float)
    q = np.divide(f.value[0, kids], np.maximum(visits, 1))
    seen, prior = visits > 0, f.prior[0, kids]
    assert (~seen).any() and f.net_value[0, 0] == pytest.approx(-0.4)  # two stones on the board
    mixed = (-0.4 + visits.sum() * (prior[seen] @ q[seen]) / prior[seen].sum()) / (1 + visits.sum())
    completed = np.where(seen, q, mixed)
    _, policy = roots.finish(0, game.num_actions, rng)
    most = float(visits.max())
    z = np.log(prior) + sigma(completed, most)
    expected = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    assert np.allclose(policy[f.action[0, kids]], expected)
    by_mean = np.log(prior) + sigma(np.where(seen, q, q[seen].mean()), most)
    by_mean = np.exp(by_mean - by_mean.max()) / np.exp(by_mean - by_mean.max()).sum()
    assert not np.allclose(expected, by_mean)


def test_v_mix_changes_nothing_when_every_legal_move_is_a_visited_candidate():
    """Connect 4 has 7 columns: with 8 candidates and 48 simulations the halving visits every
    legal move, so no value needs completing and `mix` leaves the target as it was (why the
    full profile does not set it for Connect 4: its training data came out identical)."""
    targets = []
    for mix in (False, True):
        game, f, roots, rng = searched(None, "44", 8, 48, seed=7, net=StoneCountNet(), mix=mix)
        assert (f.visits[0, f.children(0)] > 0).all()
        targets.append(roots.finish(0, game.num_actions, rng)[1])
    assert np.array_equal(targets[0], targets[1])


def test_the_immediate_win_is_played_and_learned(uniform):
    """X to move with three in column 1: every candidate considered, the win is the move and
    takes nearly all of the improved policy, whatever the noise drew."""
    for seed in range(3):
        game, f, roots, rng = searched(uniform, "121212", considered=7, sims=30, seed=seed)
        move, policy = roots.finish(0, game.num_actions, rng)
        assert int(f.action[0, move]) == 0
        assert policy[0] > 0.99 and policy.sum() == pytest.approx(1.0)


def shard(uniform, game_name: str, **params):
    game = parse_game_spec(game_name)
    spec = f"puct:model={uniform[game_name]},sims=24"
    p = {"x": 4, "shard_size": 4, "agent": spec, "parallel": 4, "gumbel": 4, **params}
    return game, selfplay.generate_shard(game, p, seed=5, shard=0, first_game_id=0)


@pytest.mark.parametrize("game_name", ["connect4", "pig"])
def test_selfplay_records_improved_policies_over_the_legal_moves(uniform, game_name):
    game, tables = shard(uniform, game_name, fast_sims=8, full_share=0.5)
    positions = tables["positions"].to_pylist()
    assert tables["games"].num_rows == 4 and positions
    for row in positions:
        policy = np.asarray(row["policy"], dtype=np.float64)
        legal = np.asarray(row["legal_mask"], dtype=bool)
        assert policy.sum() == pytest.approx(1.0, abs=1e-5)
        assert not policy[~legal].any() and row["action"] in np.flatnonzero(legal)
    again = shard(uniform, game_name, fast_sims=8, full_share=0.5)[1]
    assert again["games"].equals(tables["games"])  # seeded: the same games and targets
    assert again["positions"]["policy"].equals(tables["positions"]["policy"])
    other = selfplay.generate_shard(
        game, {"x": 4, "shard_size": 4, "agent": f"puct:model={uniform[game_name]},sims=24",
               "parallel": 4, "gumbel": 4, "fast_sims": 8, "full_share": 0.5},
        seed=6, shard=0, first_game_id=0,
    )  # fmt: skip
    assert not other["games"].equals(tables["games"])


def test_batched_selfplay_draws_each_games_opening(uniform):
    """The batched path (PUCT games stepping together) gives each game its own opening plies
    from an `opening_max` range, recorded in its scenario, as the one-game path does."""
    from tests.test_selfplay import openings_replay

    game, tables = shard(uniform, "connect4", opening=1, opening_max=5)
    openings = openings_replay(game, tables)
    assert all(1 <= k <= 5 for k in openings) and len(set(openings)) >= 2, openings


@pytest.mark.parametrize(
    "params",
    [
        {"gumbel": -1},
        {"gumbel": 4, "agent": "mcts:sims=10"},
        {"gumbel": "many"},
        {"gumbel_mix": True},
        {"gumbel": 4, "gumbel_mix": "yes"},
    ],
)
def test_bad_gumbel_settings_are_data_errors(uniform, params):
    game = parse_game_spec("connect4")
    p = {"x": 2, "agent": f"puct:model={uniform['connect4']},sims=8", **params}
    with pytest.raises(DataError, match="gumbel"):
        selfplay.validate_params(game, p)


def test_the_loop_hands_its_gumbel_setting_to_selfplay(uniform, tmp_path):
    """params playerzero.GAME.selfplay.gumbel reaches the technique of the loop's generations."""
    import yaml

    from models.playerzero_loop import selfplay_options

    repo = Path(__file__).resolve().parent.parent
    params = yaml.safe_load((repo / "params.yaml").read_text())["playerzero"]["connect4"]
    params["selfplay"].update(gumbel=3, gumbel_mix=True)
    state = {"player": {"path": uniform["connect4"], "scale": 1}}
    options = selfplay_options(params, state, tmp_path)
    checked = selfplay.validate_params(parse_game_spec("connect4"), options)
    assert checked["gumbel"] == 3 and checked["agent"].startswith("puct:model=")
    assert checked["gumbel_mix"] is True
