"""TD value networks (study 002): the maths against independent numpy, training, export, play."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make
from agents.base import AgentError
from agents.td.agent import TDPlayer, read_network
from agents.td.mlp import MLP, backpropagate
from agents.td.net import (
    EPSILON_GREEDY,
    GREEDY,
    SOFTMAX,
    Workspace,
    bound,
    choose,
    encode,
    td_learn,
)
from engine import load_game
from engine.bits import new_rng
from engine.protocol import State
from models import td
from models.base import ModelError
from models.td_export import sample_positions

ACTS = {
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda y: y * (1 - y)),
    "relu": (lambda z: np.maximum(z, 0), lambda y: (y > 0).astype(float)),
    "tanh": (np.tanh, lambda y: 1 - y * y),
}


def numpy_forward(net: MLP, x: np.ndarray) -> float:
    """Algorithm 1 written directly in numpy (W_int is the transpose of w_in)."""
    f = ACTS[net.activation][0]
    return float(f(f(net.w_in.T @ x) @ net.w_out))


def midgame(game, plies: int, seed: int):
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    for _ in range(plies):
        state.apply_action(state.random_action(rng))
    return state


@pytest.fixture(scope="module")
def othello():
    return load_game("othello")


@pytest.fixture(scope="module")
def trained(othello, tmp_path_factory):
    """A really trained network: 2,000 self-play games of the study's best configuration."""
    out = tmp_path_factory.mktemp("td")
    result = td.train("othello", {"games": 2000, "seed": 3}, out)
    return result, MLP(*_weights(result.artifact), "sigmoid", 2)


def _weights(path):
    import onnx
    from onnx import numpy_helper

    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    return init["w_in"], init["w_out"]


@pytest.mark.parametrize("activation", ["sigmoid", "relu", "tanh"])
def test_forward_matches_numpy(othello, activation):
    net = MLP.initial(othello, 7, activation, 2, 0.3, seed=1)
    for seed in range(3):
        x = encode(othello, midgame(othello, 10 + seed, seed).array, 2)
        assert x.shape == (128,) and set(np.unique(x)) <= {0.0, 1.0}
        assert net.value(x) == pytest.approx(numpy_forward(net, x), abs=1e-12)


@pytest.mark.parametrize("activation", ["sigmoid", "tanh"])
def test_backpropagation_is_a_gradient_step_on_the_squared_td_error(othello, activation):
    """W ← W − α δ ∂v/∂W (Algorithm 2): the change equals α·δ times a finite-difference
    gradient of v, for every weight."""
    net = MLP.initial(othello, 5, activation, 2, 0.5, seed=2)
    x = encode(othello, midgame(othello, 12, 4).array, 2).astype(np.float64)
    f = ACTS[activation][0]
    h = f(net.w_in.T @ x)
    v = float(f(h @ net.w_out))
    rate, delta = 0.2, 0.3
    w_in, w_out = net.w_in.copy(), net.w_out.copy()
    backpropagate(
        w_in, w_out, x.astype(np.float32), x.size, h, v, net.kind, rate, delta, np.empty(5)
    )
    eps = 1e-6
    for i in range(5):
        bumped = net.copy()
        bumped.w_out[i] += eps
        grad = (numpy_forward(bumped, x) - v) / eps
        assert w_out[i] == pytest.approx(net.w_out[i] - rate * delta * grad, abs=1e-6)
    for j in np.flatnonzero(x)[:6]:
        for i in range(5):
            bumped = net.copy()
            bumped.w_in[j, i] += eps
            grad = (numpy_forward(bumped, x) - v) / eps
            assert w_in[j, i] == pytest.approx(net.w_in[j, i] - rate * delta * grad, abs=1e-6)
    assert np.array_equal(w_in[x == 0], net.w_in[x == 0])  # absent pieces carry no gradient


def test_selection_rules():
    values = np.array([0.2, 0.9, 0.5, 0.1])
    rng = new_rng(0)
    assert choose(values, 4, 1, GREEDY, 0.0, 1.0, rng) == (1, 1)  # seat 1 maximises v
    assert choose(values, 4, 0, GREEDY, 0.0, 1.0, rng) == (3, 3)  # seat 0 maximises 1 - v
    assert choose(values, 4, 1, EPSILON_GREEDY, 0.0, 1.0, rng) == (1, 1)
    picks = np.array([choose(values, 4, 1, EPSILON_GREEDY, 0.4, 1.0, rng)[1] for _ in range(20000)])
    share = np.bincount(picks, minlength=4) / len(picks)
    expected = np.full(4, 0.1) + np.array([0, 0.6, 0, 0])  # 0.6 greedy + 0.4 uniform
    assert np.abs(share - expected).max() < 0.015
    picks = np.array([choose(values, 4, 0, SOFTMAX, 0.0, 0.5, rng)[1] for _ in range(20000)])
    share = np.bincount(picks, minlength=4) / len(picks)
    weights = np.exp((1 - values) / 0.5)
    assert np.abs(share - weights / weights.sum()).max() < 0.015


def _turn_values(game, net, s):
    """Independent successor values: replay each move on a State and run numpy_forward."""
    state = State(game, s.copy(), None)
    values = {}
    for move in state.legal_actions():
        child = state.clone()
        child.apply_action(move)
        if child.is_terminal():
            values[move] = 0.5 * (child.returns()[1] + 1)
        else:
            values[move] = numpy_forward(net, encode(game, child.array, 2).astype(np.float64))
    return values


@pytest.mark.parametrize("sarsa", [False, True])
def test_a_learning_turn_steps_toward_the_rule_s_target(othello, sarsa):
    """Q-learning moves v(s) toward the mover's best successor, SARSA toward the chosen one
    (here a forced, deliberately poor move for SARSA's sake is replaced by ε = 1 play)."""
    net = MLP.initial(othello, 6, "sigmoid", 2, 0.5, seed=5)
    s = midgame(othello, 9, 6).array
    mover = othello.kernels.current_player(s)
    values = _turn_values(othello, net, s)
    best = (max if mover == 1 else min)(values, key=values.get)
    learned = net.copy()
    rng = new_rng(11)
    action = bound(othello, td_learn, learned)(
        s,
        learned.arrays(),
        EPSILON_GREEDY,
        1.0,
        1.0,
        sarsa,
        0.5,
        -1,
        rng,
        *Workspace(othello).arrays,
    )
    target = values[int(action)] if sarsa else values[best]
    x = encode(othello, s, 2).astype(np.float64)
    before, after = numpy_forward(net, x), numpy_forward(learned, x)
    assert abs(after - target) < abs(before - target)
    # and exactly the study's step: compare with backpropagate on the same input and target
    f = ACTS["sigmoid"][0]
    expect = net.copy()
    h = f(net.w_in.T @ x)
    backpropagate(
        expect.w_in,
        expect.w_out,
        x.astype(np.float32),
        x.size,
        h,
        before,
        0,
        0.5,
        before - target,
        np.empty(6),
    )
    assert np.allclose(learned.w_in, expect.w_in) and np.allclose(learned.w_out, expect.w_out)


def test_greedy_player_takes_the_best_successor(othello, trained):
    _, net = trained
    player = TDPlayer(othello, net)
    for seed in range(5):
        s = midgame(othello, 6 + 7 * seed, seed).array
        values = _turn_values(othello, net, s)
        mover = othello.kernels.current_player(s)
        best = (max if mover == 1 else min)(values, key=values.get)
        assert player.action(s) == best


def test_training_learns_to_beat_random(othello, trained):
    from models.td_matches import score_vs_random

    _, net = trained
    untrained = MLP.initial(othello, 40, "sigmoid", 2, 1e-4, seed=3)
    assert score_vs_random(othello, net, 200, seed=1)["score"] >= 0.7
    assert score_vs_random(othello, untrained, 200, seed=1)["score"] < 0.65


def test_export_parity_and_both_agents_agree(othello, trained, tmp_path):
    """The ONNX file answers as the numba network on fresh positions; `td:model` (numba over
    the file's weights) and `alphabeta:depth=1,eval=onnx` (onnxruntime) pick the same moves."""
    import json

    from agents.onnx.runtime import session
    from agents.value.features import ValueEncoder

    result, net = trained
    assert json.loads((result.artifact.parent / "parity.json").read_text())["passed"]
    states, movers = sample_positions(othello, 64, seed=99)
    runner = session(result.artifact)
    mover_p, value = runner.run(
        None, {"position": ValueEncoder(othello, "seat-observation").batch(states, movers)}
    )
    expected = np.array([net.value(encode(othello, s, 2)) for s in states])
    assert np.abs(value[:, 0] - expected).max() < 1e-5
    assert np.abs(mover_p[:, 0] - np.where(movers == 1, expected, 1 - expected)).max() < 1e-5
    agent = make(f"td:model={result.artifact}", othello)
    search = make(f"alphabeta:depth=1,eval=onnx:{result.artifact}", othello)
    agree = 0
    for seed in range(12):
        state = midgame(othello, 4 + 3 * seed, seed)
        if state.is_terminal():
            continue
        agree += agent.step(state) == search.step(state)
    assert agree >= 11  # float32 near-ties may differ once


def test_checkpoint_resumes_to_the_same_weights(tmp_path):
    game = load_game("othello")
    straight = td.Trainer(game, {"games": 600, "hidden": 8, "seed": 4})
    straight.run(600)
    first = td.Trainer(game, {"games": 600, "hidden": 8, "seed": 4})
    first.run(300)
    first.save(tmp_path / "ck.npz")
    second = td.Trainer(game, {"games": 600, "hidden": 8, "seed": 4})
    assert second.resume(tmp_path / "ck.npz")
    second.run(300)
    assert np.array_equal(second.network.w_in, straight.network.w_in)
    assert second.results == straight.results
    other = td.Trainer(game, {"games": 600, "hidden": 8, "seed": 5})
    assert not other.resume(tmp_path / "ck.npz")  # another configuration never resumes it


def test_any_two_player_game_connect4(tmp_path):
    result = td.train("connect4", {"games": 300, "hidden": 10, "opponent": "random"}, tmp_path)
    game = load_game("connect4")
    agent = make(f"td:model={result.artifact}", game)
    state = game.new_initial_state()
    assert agent.step(state) in state.legal_actions()


def test_training_against_an_agent_spec(tmp_path):
    game = load_game("othello")
    trainer = td.Trainer(game, {"games": 4, "hidden": 4, "opponent": "alphabeta:depth=1"})
    before = trainer.network.w_out.copy()
    out = trainer.run(4)
    assert len(out) == 4 and not np.array_equal(before, trainer.network.w_out)


def test_bad_input(othello, tmp_path):
    with pytest.raises(ModelError, match="rule"):
        td.check({"rule": "tdlambda"})
    with pytest.raises(ModelError, match="unknown"):
        td.check({"hiden": 3})
    with pytest.raises(AgentError, match="not found"):
        make(f"td:model={tmp_path / 'none.onnx'}", othello)
    with pytest.raises(AgentError, match=r"moved: trained/othello/KEY/model\.onnx"):  # issue 68
        make("td:model=td/othello/long/ntuple/model.onnx", othello)
    with pytest.raises(AgentError, match=r"moved: trained/othello/KEY/model\.onnx"):  # any agent
        make("policy:model=td/othello/grid/best.onnx", othello)
    (tmp_path / "junk.onnx").write_bytes(b"not onnx")
    with pytest.raises(AgentError, match="td"):
        make(f"td:model={tmp_path / 'junk.onnx'}", othello)
    with pytest.raises(ModelError, match="two-player"):
        td.Trainer(load_game("pig"), {})


# ---- the n-tuple network ----------------------------------------------------------------------
def numpy_ntuple(net, game, s) -> float:
    """sigmoid(sum of the tables' weights), each lookup's pattern read directly from the board."""
    x = encode(game, s, 2)
    states = (x[:64] + 2 * x[64:]).astype(int)
    total = 0.0
    for cells, start in zip(net.lookup_cells, net.offset, strict=True):
        cells = cells[cells >= 0]
        total += net.lut[start + sum(states[k] * 3**j for j, k in enumerate(cells))]
    return 1 / (1 + np.exp(-total))


@pytest.fixture(scope="module")
def ntuple_trained(othello, tmp_path_factory):
    out = tmp_path_factory.mktemp("ntuple")
    result = td.train(
        "othello",
        {
            "network": "ntuple",
            "games": 1500,
            "learning_rate": 0.02,
            "random_factor": 0.1,
            "seed": 2,
        },
        out,
    )
    return result, read_network(result.artifact, othello)[0]


def test_ntuple_geometry_covers_the_board_once_per_orbit(othello):
    from agents.td.ntuple import lookups

    cells_of, table_of = lookups(othello)
    assert len(set(table_of)) == 11  # rows 1-4, diagonals of 4-8 cells, 3x3 and 2x5 corners
    assert {k for cells in cells_of for k in cells} == set(range(64))
    rows = [c for c, t in zip(cells_of, table_of, strict=True) if t == 0]
    assert tuple(range(8)) in rows and tuple(range(56, 64)) in rows  # row 1 and row 8 share


@pytest.mark.slow
def test_ntuple_values_match_numpy_and_the_board_s_symmetries(othello, ntuple_trained):
    _, net = ntuple_trained
    assert np.abs(net.lut).max() > 0  # really trained
    player = TDPlayer(othello, net)
    sym = othello.symmetries()
    for seed in range(4):
        s = midgame(othello, 10 + 5 * seed, seed).array
        assert net.value(encode(othello, s, 2)) == pytest.approx(numpy_ntuple(net, othello, s))
        # the child values the loop computes incrementally pick the numpy-best move
        mover = othello.kernels.current_player(s)
        values = {}
        for move in (st := State(othello, s.copy(), None)).legal_actions():
            child = st.clone()
            child.apply_action(move)
            values[move] = (
                0.5 * (child.returns()[1] + 1)
                if child.is_terminal()
                else numpy_ntuple(net, othello, child.array)
            )
        assert player.action(s) == (max if mover == 1 else min)(values, key=values.get)
        # a rotated or mirrored position is worth the same: every image reads the same tables
        x = encode(othello, s, 2)
        for obs, _ in sym[1:]:
            assert net.value(x[obs[:128]]) == pytest.approx(net.value(x), abs=1e-12)


def test_ntuple_export_parity_and_play(othello, ntuple_trained):
    import json

    from models.td_matches import score_vs_random

    result, net = ntuple_trained
    assert json.loads((result.artifact.parent / "parity.json").read_text())["passed"]
    agent = make(f"td:model={result.artifact}", othello)
    search = make(f"alphabeta:depth=1,eval=onnx:{result.artifact}", othello)
    agree = sum(
        agent.step(state) == search.step(state)
        for state in (midgame(othello, 5 + 4 * k, k) for k in range(10))
        if not state.is_terminal()
    )
    assert agree >= 9
    assert score_vs_random(othello, net, 100, seed=3)["score"] >= 0.7


# ---- networks inside the shared alpha-beta core --------------------------------------------------
def _search_minimax(game, net, state, depth, me):
    """Plain minimax with the network at the leaves, on the core's scale for `me`: a result is
    its return x 1000 minus/plus its distance, a leaf 2v - 1 (seat 1) or 1 - 2v (seat 0)."""
    if state.is_terminal():
        r = state.returns()[me]
        ply = len(state.history())
        return 0.0 if r == 0 else r * 1000 - ply if r > 0 else r * 1000 + ply
    if depth == 0:
        v = numpy_forward(net, encode(game, state.array, 2).astype(np.float64))
        return 2 * v - 1 if me == 1 else 1 - 2 * v
    values = []
    for move in state.legal_actions():
        child = state.clone()
        child.apply_action(move)
        values.append(_search_minimax(game, net, child, depth - 1, me))
    return max(values) if state.current_player() == me else min(values)


def test_network_leaf_inside_the_core_is_plain_minimax_over_the_network(othello, trained):
    result, net = trained
    one_ply = make(f"td:model={result.artifact}", othello)
    searched = {d: make(f"td:model={result.artifact},depth={d}", othello) for d in (1, 2)}
    for seed in range(6):
        state = midgame(othello, 8 + 6 * seed, seed)
        if state.is_terminal():
            continue
        assert searched[1].step(state) == one_ply.step(state)
        me, best, best_value = state.current_player(), None, -np.inf
        for move in state.legal_actions():
            child = state.clone()
            child.apply_action(move)
            value = _search_minimax(othello, net, child, 1, me)
            if best is None or value > best_value + 1e-9:  # float32 weights: near-ties
                best, best_value = move, value
        assert searched[2].step(state) == best


@pytest.mark.slow
def test_ntuple_leaf_inside_the_core_matches_its_one_ply_play(othello, ntuple_trained):
    result, _ = ntuple_trained
    one_ply = make(f"td:model={result.artifact}", othello)
    searched = make(f"td:model={result.artifact},depth=1", othello)
    for seed in range(8):
        state = midgame(othello, 6 + 6 * seed, seed)
        if not state.is_terminal():
            assert searched.step(state) == one_ply.step(state)


def test_learn_ranks_by_its_last_curve_score_and_resumes_from_its_work_folder(
    tmp_path, monkeypatch
):
    """TD's learn (models.base's contract, what `stage train GAME KEY` runs): the objective
    `score` is the last curve point against the first curve opponent, and a rerun on the same
    work folder finds the finished checkpoint and trains no game again."""
    import models.td
    from models.td import OBJECTIVE, learn

    params = {"games": 20, "hidden": 4, "curve_games": 2, "curve_opponents": ["random"]}
    first = learn("othello", params, tmp_path / "out", tmp_path / "work")
    assert OBJECTIVE == ("score", "max")
    assert first.metrics["score"] == first.metrics["last_score_vs_random"]
    assert first.history["curve_games"] == [20.0]

    def must_not_train(self, games):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(models.td.Trainer, "run", must_not_train)
    again = learn("othello", params, tmp_path / "again", tmp_path / "work")
    assert again.history == first.history and again.metrics["score"] == first.metrics["score"]
    assert (tmp_path / "again" / "model.onnx").read_bytes() == first.artifact.read_bytes()
    monkeypatch.undo()  # trained afresh elsewhere: the same bytes (a forced rerun's output)
    fresh = learn("othello", params, tmp_path / "fresh", tmp_path / "work-2")
    assert fresh.artifact.read_bytes() == first.artifact.read_bytes()
    assert fresh.history == first.history


def test_temporal_coherence_scales_each_weight_s_step_by_its_past_agreement(othello, tmp_path):
    """Hand-worked TCL (linear output, so a step is rate * delta): steps of -s, +s/2 at full
    rate, then |E| / A = (s/2) / (3s/2) = 1/3 of the third; a weight never asked moves never."""
    from agents.td.ntuple import NTuple, nt_learn, nt_prepare

    net = NTuple.initial(othello, activation="linear", shapes="rect-2x2", tcl=True)
    arrays = net.arrays()
    nt_prepare(arrays, encode(othello, midgame(othello, 9, 1).array, 2))
    hits = np.bincount(arrays[7], minlength=len(net.lut))  # lookups reading each weight
    once = int(np.flatnonzero(hits == 1)[0])
    rate, s = 0.5, 0.5 * 0.2
    nt_learn(arrays, None, 0.0, rate, 0.2)
    assert net.lut[once] == pytest.approx(-s)
    nt_learn(arrays, None, 0.0, rate, -0.1)
    assert net.lut[once] == pytest.approx(-s / 2)
    nt_learn(arrays, None, 0.0, rate, 0.2)
    assert net.lut[once] == pytest.approx(-s / 2 - s / 3)
    assert np.all(net.lut[hits == 0] == 0)
    with pytest.raises(ModelError, match="tcl"):
        td.check({"tcl": True})  # the study's MLP has no per-weight rates
    # a killed TCL run resumes to the same weights: the checkpoint keeps the coherence sums
    params = {"network": "ntuple", "tuples": "rect-2x2", "tcl": True, "games": 200, "seed": 4}
    straight = td.Trainer(othello, {**params, "learning_rate": 0.05})
    straight.run(200)
    first = td.Trainer(othello, {**params, "learning_rate": 0.05})
    first.run(100)
    first.save(tmp_path / "ck.npz")
    second = td.Trainer(othello, {**params, "learning_rate": 0.05})
    assert second.resume(tmp_path / "ck.npz") and second.network.coherence.any()
    second.run(100)
    assert np.array_equal(second.network.lut, straight.network.lut)
