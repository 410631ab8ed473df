"""A value MLP over tactics' planes run inside the alpha-beta loop (agents.value.leaf): the loop
computes what onnxruntime computes from the same file, for each shape the value-mlp family
exports, and a search with it returns what the batched onnxruntime search returns."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make
from agents.search.core import BATCH, NETWORK, AlphaBeta
from agents.search.hps import MAX_DEPTH, PlanesValue
from agents.value.leaf import leaf, loop_values, parity, read_chain, sample_states
from engine import parse_game_spec

SPEC = "tactics:units=1"
SHAPES = {
    "encoder-mean": {"cell_encoder": 4, "pool": "mean"},
    "encoder-cells": {"cell_encoder": 2, "pool": "none"},
    "planes": {"cell_encoder": 0, "pool": "none"},
    "relational": {"cell_encoder": 4, "pool": "mean", "relate": 4},
}


@pytest.fixture(scope="module")
def networks(tmp_path_factory):
    """Really trained (tiny) value-mlp files, one per shape, on seeded tactics games."""
    from features import encode as enc
    from features.store import generate_dataset, load_dataset
    from models import value_mlp

    root = tmp_path_factory.mktemp("value-leaf")
    game = parse_game_spec(SPEC)
    generate_dataset(root / "data", SPEC, "randomized", {"x": 40, "y": 2}, seed=1)
    arrays = enc.value_planes(load_dataset(root / "data", "positions"), game, playout_weight=0.5)
    files = {}
    for name, shape in SHAPES.items():
        params = {"layers": 2, "width": 8, "epochs": 4, "holdout": 0.3, "learning_rate": 0.003,
                  **shape}  # fmt: skip
        result = value_mlp.train(arrays, {"encoding": "value-planes", "game": SPEC}, params,
                                 root / name)  # fmt: skip
        files[name] = result.artifact
    return game, files, root / "data"


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_loop_computes_what_onnxruntime_computes(networks, shape):
    game, files, _ = networks
    weights = read_chain(files[shape], game)
    assert weights is not None
    states = sample_states(game, 48, seed=7)
    assert parity(game, files[shape], weights, states) < 1e-5
    values = [loop_values(game, states, p, weights) for p in (0, 1)]
    assert np.ptp(values) > 2e-4  # positions told apart (the mean of 144 cells' codes where
    # one unit a side stands moves least), by far more than the parity bound


@pytest.mark.slow
def test_a_search_with_the_loop_leaf_equals_the_batched_search(networks):
    game, files, _ = networks
    path = files["encoder-mean"]
    portfolio = game.portfolio
    moves = {"child_moves_fn": portfolio.moves, "play_move_fn": portfolio.play}
    fn, weights = leaf(game, path)
    in_loop = AlphaBeta(game, "network", network=fn, weights=weights, max_depth=MAX_DEPTH,
                        **moves)  # fmt: skip
    batched = AlphaBeta(game, PlanesValue(game, path), max_depth=MAX_DEPTH, **moves)
    assert (in_loop.mode, batched.mode) == (NETWORK, BATCH)
    compared = 0
    for s in sample_states(game, 40, seed=3)[::4]:
        state = game.new_initial_state(seed=0)
        state.array[:] = s
        q = state.current_player()
        if q < 0:
            continue
        for depth in (1, 2, 3):
            a, b = in_loop.search(s, q, depth), batched.search(s, q, depth)
            assert a.value == pytest.approx(b.value, abs=1e-5)
            assert a.leaves <= b.leaves  # cut-offs spare leaves a batch would evaluate
            compared += 1
    assert compared >= 15
    agent = make(f"hps:depth=2,eval=onnx:{path}", game, seed=0)
    assert agent.core.mode == NETWORK


def test_a_graph_the_loop_cannot_read_runs_on_onnxruntime_in_batches(networks, tmp_path):
    """A Tanh where the family has ReLU: the loop would compute another function, so the file
    is refused by the reader and HPS evaluates its frontier nodes on onnxruntime, a batch at a
    time."""
    import onnx

    game, files, _ = networks
    model = onnx.load(str(files["encoder-mean"]))
    relu = next(node for node in model.graph.node if node.op_type == "Relu")
    relu.op_type = "Tanh"
    path = tmp_path / "tanh.onnx"
    onnx.save(model, str(path))
    assert read_chain(path, game) is None and leaf(game, path) is None
    agent = make(f"hps:depth=2,eval=onnx:{path}", game, seed=0)
    assert agent.core.mode == BATCH
    state = game.new_initial_state(seed=2)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    assert agent.step(state) in state.legal_actions()
    value = agent.core.batch
    assert value.evaluations > value.calls >= 1


def test_hps_reads_a_trained_network_encoded_as_its_dataset(networks):
    """The search's inputs are the dataset's rows (value-planes, both sides of each position),
    and the file plays as the registry plays it (`onnx:PATH`, its kind read from metadata)."""
    from agents.search.hps import HPSAgent
    from agents.value.features import ValueEncoder
    from features import encode as enc
    from features.store import load_dataset

    game, files, data = networks
    positions = load_dataset(data, "positions")
    arrays = enc.encoding("value-planes")[1](positions, game)
    states = enc.list_matrix(positions.column("state"), len(positions["state"][0]), np.int64)
    both = np.repeat(states, 2, axis=0)
    sides = np.tile([0, 1], len(states))
    flat = arrays["planes"].reshape(len(both), -1)
    assert np.array_equal(ValueEncoder(game, "value-planes").batch(both, sides), flat)
    assert np.array_equal(arrays["outcome"][0::2], -arrays["outcome"][1::2])
    path = files["encoder-cells"]
    agent = make(f"hps:depth=2,eval=onnx:{path}", game, seed=0)
    assert agent.core.mode == NETWORK  # a dense chain: evaluated inside the loop
    state = game.new_initial_state(seed=2)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    assert agent.step(state) in state.legal_actions()
    played = make(f"onnx:{path}:depth=1", game, seed=0)
    assert isinstance(played, HPSAgent) and played.step(state) in state.legal_actions()
