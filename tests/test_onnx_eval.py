"""`alphabeta:eval=onnx:PATH` and `onnx:PATH` with small ONNX models built here by onnx.helper
(no TensorFlow): a value net that is a fixed linear function of the board one-hot input, whose
search values are checked by hand and against the numba alpha-beta running the same function
as a heuristic kernel; the features against the dataset encoders; bad files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numba import njit

from agents import AgentError, make
from agents.search.alphabeta import AlphaBetaAgent
from agents.sequence.agent import SeqAgent
from agents.value.onnx_eval import OnnxValue, value_encoder
from engine import load_game
from engine.games.connect4 import Connect4
from features.encode import board_one_hot, count_one_hot
from models.base import artifact_metadata

CENTER = 0.02  # value of one stone in the centre column, for its owner


def linear_model(path: Path, weight: np.ndarray, bias: np.ndarray, steps: int | None,
                 metadata: dict[str, str]) -> Path:  # fmt: skip
    """y = x @ weight + bias over x [batch, F] (or [batch, steps, F]): IR 10, opset 17."""
    from onnx import TensorProto, helper, numpy_helper, save

    features, outputs = weight.shape
    shape_in = ["batch", features] if steps is None else ["batch", steps, features]
    shape_out = ["batch", outputs] if steps is None else ["batch", steps, outputs]
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["y"]),
        ],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_in)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape_out)],
        initializer=[
            numpy_helper.from_array(weight.astype(np.float32), "w"),
            numpy_helper.from_array(bias.astype(np.float32), "b"),
        ],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    helper.set_model_props(model, metadata)
    save(model, str(path))
    return path


def center_value_model(path: Path, game: str = "connect4") -> Path:
    """p = 0.5 + CENTER x (own centre stones - opponent's), on the board one-hot input."""
    cells = np.zeros((6, 7))
    cells[:, 3] = CENTER
    weight = np.concatenate([cells.ravel(), -cells.ravel()])[:, None]
    meta = artifact_metadata(game, "value-mlp", "board-onehot", "value")
    return linear_model(path, weight, np.array([0.5]), None, meta)


@njit(cache=True)
def center_evaluate(s, player):
    """The same function as a numba heuristic: 2p - 1 for `player` (Connect 4 state layout)."""
    mover = s[2] & 1
    own = s[0] if player == mover else s[0] ^ s[1]
    other = own ^ s[1]
    mine, theirs = 0, 0
    for bit in range(21, 27):
        mine += (own >> np.int64(bit)) & 1
        theirs += (other >> np.int64(bit)) & 1
    return 2.0 * CENTER * (mine - theirs)


class CenterConnect4(Connect4):
    evaluate = staticmethod(center_evaluate)


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def value_path(tmp_path_factory):
    return center_value_model(tmp_path_factory.mktemp("value") / "center.onnx")


def test_value_is_two_p_minus_one_of_the_side_to_move(connect4, value_path):
    value = OnnxValue(connect4, value_path)
    state = connect4.state_from_history([3, 3, 3, 0])  # seat 0: two centre stones, seat 1: one
    v = value(state.array[None], np.array([0]))
    assert v == pytest.approx([2 * CENTER * (2 - 1)], abs=1e-6)
    v = value(np.stack([state.array] * 2), np.array([1, 0]))
    assert v == pytest.approx([-2 * CENTER, 2 * CENTER], abs=1e-6)
    assert value.calls == 2 and value.evaluations == 3


def test_depth_one_takes_the_centre_by_hand(connect4, value_path):
    agent = make(f"alphabeta:depth=1,eval=onnx:{value_path}", connect4)
    state = connect4.new_initial_state()
    result = agent.search(state)
    # every move leaves the opponent to move: the centre stone scores 2 x 0.02 for the mover
    assert (result.move, result.depth) == (3, 1)
    assert result.value == pytest.approx(2 * CENTER, abs=1e-6)
    assert not result.exact


@pytest.mark.slow
@pytest.mark.parametrize("history", [[], [3, 3], [0, 3, 1, 3, 2], [3, 2, 3, 2, 4, 2]])
def test_values_match_the_numba_search_with_the_same_function(connect4, value_path, history):
    game = CenterConnect4()
    numba = make("alphabeta:depth=3", game)
    onnx = make(f"alphabeta:depth=3,eval=onnx:{value_path}", connect4)
    state = connect4.state_from_history(history)
    expected, got = numba.search(state), onnx.search(state)
    assert got.value == pytest.approx(expected.value, abs=1e-5)
    assert got.exact == expected.exact
    child = state.clone()  # the chosen move is worth the value found
    child.apply_action(got.move)
    if not child.is_terminal():
        assert -onnx.search(child).value <= got.value + 1e-5


def test_finds_a_forced_win_and_respects_a_time_limit(connect4, value_path):
    agent = make(f"alphabeta:depth=3,eval=onnx:{value_path}", connect4)
    state = connect4.state_from_history([0, 6, 0, 6, 0])  # seat 1 must block column 0
    assert agent.step(state) == 0
    state = connect4.state_from_history([0, 6, 0, 6, 0, 6])  # seat 0 wins in column 0 now
    result = agent.search(state)
    assert (result.move, result.exact) == (0, True) and result.value > 2
    timed = make(f"alphabeta:ms=50,eval=onnx:{value_path}", connect4, seed=1)
    move = timed.step(connect4.new_initial_state())
    assert move in range(7) and timed.last.depth >= 1


def test_features_match_the_dataset_encoders(connect4):
    rng = np.random.default_rng(5)
    states, players = [], []
    for _ in range(12):
        state = connect4.new_initial_state()
        for _ in range(int(rng.integers(0, 12))):
            state.apply_action(state.random_action(rng))
            if state.is_terminal():
                break
        if not state.is_terminal():
            states.append(state)
            players.append(state.current_player())
    arrays = np.stack([s.array for s in states])
    who = np.array(players)
    board = value_encoder(connect4, "board-onehot")(arrays, who)
    assert (board == board_one_hot(connect4.board_codes(arrays), who, 2, False)).all()
    counts = value_encoder(connect4, "count-onehot")(arrays, who)
    raw = []
    for s, p in zip(states, players, strict=True):
        planes = s.observation_tensor(p).reshape(2, -1).sum(axis=1)
        legal = s.legal_actions()
        wins = 0
        for a in legal:
            child = s.clone()
            child.apply_action(a)
            wins += child.is_terminal() and child.returns()[p] > 0
        raw.append([*planes, len(legal), wins])
    assert (counts == count_one_hot(np.array(raw, dtype=np.int64))).all()


def test_onnx_spec_builds_the_agent_its_kind_names(connect4, value_path, tmp_path):
    agent = make(f"onnx:{value_path}:depth=2", connect4)
    assert isinstance(agent, AlphaBetaAgent) and agent.max_depth == 2
    assert agent.step(connect4.new_initial_state()) == 3
    steps = 20
    logits = np.zeros(8)
    logits[1 + 5] = 3.0  # always column 5
    meta = artifact_metadata("connect4", "lstm", "qualitative", "sequence", player=0)
    sequence = linear_model(tmp_path / "seq.onnx", np.zeros((16, 8)), logits, steps, meta)
    agent = make(f"onnx:{sequence}", connect4, seed=0)
    assert isinstance(agent, SeqAgent)
    assert agent.step(connect4.state_from_history([0, 1])) == 5


def test_bad_files_and_kinds(connect4, value_path, tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07garbage that is no protobuf model")
    for spec in (f"onnx:{junk}", f"alphabeta:eval=onnx:{junk}", f"seq:model={junk}"):
        with pytest.raises(AgentError, match="not a readable ONNX model"):
            make(spec, connect4)
    with pytest.raises(AgentError, match="not found"):
        make(f"onnx:{tmp_path / 'missing.onnx'}", connect4)
    with pytest.raises(AgentError, match="trained for connect4"):
        make(f"onnx:{value_path}", load_game("othello"))
    policy = linear_model(
        tmp_path / "policy.onnx",
        np.zeros((84, 1)),
        np.zeros(1),
        None,
        artifact_metadata("connect4", "x", "board-onehot", "policy-value"),
    )
    with pytest.raises(AgentError, match=r"a policy-value network has inputs \['planes'"):
        make(f"onnx:{policy}", connect4)  # labelled policy-value, but without planes and mask
    with pytest.raises(AgentError, match="not a value one"):
        make(f"alphabeta:eval=onnx:{policy}", connect4)
    with pytest.raises(AgentError, match="simultaneous"):
        make(f"alphabeta:eval=onnx:{value_path}", load_game("lazerbike"))


def test_a_model_is_read_once_per_thread_and_again_once_rewritten(connect4, tmp_path):
    """A match makes a fresh agent per game: each game's agent gets the session (and sequence
    predictor) the thread already read; another thread reads its own (a CRF tagger keeps
    per-call state); a rewritten file is read again and plays its new weights."""
    import os
    import threading

    meta = artifact_metadata("connect4", "lstm", "qualitative", "sequence", player=0)

    def always(column: int) -> Path:
        logits = np.zeros(8)
        logits[1 + column] = 3.0
        return linear_model(tmp_path / "seq.onnx", np.zeros((16, 8)), logits, 20, meta)

    path = always(5)
    spec = f"seq:model={path},guards=none"
    first, second = make(spec, connect4, seed=0), make(spec, connect4, seed=1)
    assert first.predictor is second.predictor
    assert make(f"onnx:{path}", connect4).predictor.session is first.predictor.session
    elsewhere: list = []
    worker = threading.Thread(target=lambda: elsewhere.append(make(spec, connect4).predictor))
    worker.start()
    worker.join()
    assert elsewhere[0] is not first.predictor
    state = connect4.state_from_history([0, 1])
    assert first.step(state) == 5
    written = path.stat().st_mtime_ns
    always(2)  # the same file rewritten in place, new weights (its mtime moved past a clock tick)
    os.utime(path, ns=(written + 10**9, written + 10**9))
    again = make(spec, connect4, seed=0)
    assert again.predictor is not first.predictor and again.step(state) == 2
