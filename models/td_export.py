"""TD networks to ONNX, checked against the numba network before the file is kept.

The graph reads the `seat-observation` encoding (agents.value.features: seat 0's whole
observation, then a one-hot of the side to move) and has two outputs: `win_probability`, the
side to move's estimate (seat 1's estimate v, or 1 - v for seat 0, the study's rule), which
`alphabeta:eval=onnx:PATH` uses as its evaluation, and `value`, v itself. The weights travel as
named initializers that agents.td.agent reads back to play with the numba loops.

  mlp     Slice → MatMul(w_in) → f → MatMul(w_out) → f                    (f: the activation)
  ntuple  cells = plane0 + 2 plane1 → Gather(lookup_cells) · powers → sum + offset
          (+ stride · floor(occupied · phases / (cells + 1)) with game stages) → Cast →
          Gather(lut) → sum → Sigmoid (or Identity: a linear output)
"""

from __future__ import annotations

import json
import os
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from engine.match import random_states
from models.base import ModelError, artifact_metadata
from models.export import MAX_IR_VERSION, OPSET, TOLERANCE, write_metadata

INPUT_NAME, OUTPUT_NAME, VALUE_NAME = "position", "win_probability", "value"
ENCODING = "seat-observation"
PARITY_POSITIONS = 256
ONNX_ACTIVATIONS = {"sigmoid": "Sigmoid", "relu": "Relu", "tanh": "Tanh"}


def _const(name: str, values: Any, dtype=np.int64):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _mlp_nodes(network) -> tuple[list, list]:
    from onnx import helper

    act = ONNX_ACTIVATIONS[network.activation]
    initializers = [
        _const("w_in", network.w_in, np.float32),
        _const("w_out", network.w_out.reshape(-1, 1), np.float32),
        _const("zero", [0]),
        _const("size", [network.size]),
        _const("axis", [1]),
    ]
    nodes = [
        helper.make_node("Slice", [INPUT_NAME, "zero", "size", "axis"], ["board"]),
        helper.make_node("MatMul", ["board", "w_in"], ["z"]),
        helper.make_node(act, ["z"], ["h"]),
        helper.make_node("MatMul", ["h", "w_out"], ["o"]),
        helper.make_node(act, ["o"], [VALUE_NAME]),
    ]
    return nodes, initializers


def _ntuple_nodes(network) -> tuple[list, list]:
    from onnx import helper

    cells = network.cells
    used = network.lookup_cells >= 0
    powers = np.where(used, 3.0 ** np.cumsum(used, axis=1) / 3.0, 0.0)
    initializers = [
        _const("zero", [0]),
        _const("cells", [cells]),
        _const("both", [2 * cells]),
        _const("axis", [1]),
        _const("two", [2.0], np.float32),
        _const("sum_axes", [2]),
        _const("lookup_axes", [1]),
        _const("lookup_cells", np.where(used, network.lookup_cells, 0)),
        _const("powers", powers, np.float32),
        _const("offset", network.offset, np.float32),
        _const("lut", network.lut, np.float32),
    ]
    nodes = [
        helper.make_node("Slice", [INPUT_NAME, "zero", "cells", "axis"], ["plane0"]),
        helper.make_node("Slice", [INPUT_NAME, "cells", "both", "axis"], ["plane1"]),
        helper.make_node("Mul", ["plane1", "two"], ["twice1"]),
        helper.make_node("Add", ["plane0", "twice1"], ["states"]),  # [batch, cells]
        helper.make_node("Gather", ["states", "lookup_cells"], ["patterns"], axis=1),
        helper.make_node("Mul", ["patterns", "powers"], ["weighted"]),  # [batch, L, n]
        helper.make_node("ReduceSum", ["weighted", "sum_axes"], ["local"], keepdims=0),
        helper.make_node("Add", ["local", "offset"], ["staged" if network.phases > 1 else "at"]),
        *_phase_nodes(network, initializers),
        helper.make_node("Cast", ["at"], ["index"], to=7),  # int64
        helper.make_node("Gather", ["lut", "index"], ["looked"], axis=0),  # [batch, L]
        helper.make_node("ReduceSum", ["looked", "lookup_axes"], ["total"], keepdims=1),
        helper.make_node(
            "Sigmoid" if network.activation == "sigmoid" else "Identity", ["total"], [VALUE_NAME]
        ),
    ]
    return nodes, initializers


def _phase_nodes(network, initializers: list) -> list:
    """Game stages (agents.td.ntuple.phase_of): floor(occupied * phases / (cells + 1)) tables
    of `stride` weights further on; nothing when the network has one stage."""
    from onnx import helper

    if network.phases == 1:
        return []
    initializers += [
        _const("phases", [network.phases], np.int64),
        _const("stage_scale", [network.phases / (network.cells + 1)], np.float32),
        _const("stride", [float(network.stride)], np.float32),
        _const("cell_axes", [1]),
    ]
    return [
        helper.make_node("Add", ["plane0", "plane1"], ["occupied_cells"]),
        helper.make_node("ReduceSum", ["occupied_cells", "cell_axes"], ["occupied"], keepdims=1),
        helper.make_node("Mul", ["occupied", "stage_scale"], ["stage_real"]),
        helper.make_node("Floor", ["stage_real"], ["stage"]),
        helper.make_node("Mul", ["stage", "stride"], ["shift"]),  # [batch, 1]
        helper.make_node("Add", ["staged", "shift"], ["at"]),
    ]


def to_onnx(game, network, metadata: dict[str, str]):
    """The ModelProto of a network (either architecture) with the mover's rule on top."""
    import onnx
    from onnx import TensorProto, helper

    cells = int(np.prod(game.observation_shape))
    build = _ntuple_nodes if network.architecture == "ntuple" else _mlp_nodes
    nodes, initializers = build(network)
    initializers += [
        _const("seat0", [cells]),
        _const("seat1", [cells + 1]),
        _const("end", [cells + 2]),
        _const("one", [1.0], np.float32),
        _const("mover_axis", [1]),
    ]
    nodes += [
        helper.make_node("Slice", [INPUT_NAME, "seat0", "seat1", "mover_axis"], ["mover0"]),
        helper.make_node("Slice", [INPUT_NAME, "seat1", "end", "mover_axis"], ["mover1"]),
        helper.make_node("Sub", ["one", VALUE_NAME], ["complement"]),
        helper.make_node("Mul", ["mover1", VALUE_NAME], ["as1"]),
        helper.make_node("Mul", ["mover0", "complement"], ["as0"]),
        helper.make_node("Add", ["as1", "as0"], [OUTPUT_NAME]),
    ]
    tensor = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "td_value",
        [tensor(INPUT_NAME, TensorProto.FLOAT, ["batch", cells + game.num_players])],
        [
            tensor(OUTPUT_NAME, TensorProto.FLOAT, ["batch", 1]),
            tensor(VALUE_NAME, TensorProto.FLOAT, ["batch", 1]),
        ],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=MAX_IR_VERSION
    )
    write_metadata(model, metadata)
    onnx.checker.check_model(model)
    return model


def sample_positions(game, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(state arrays, movers) of non-terminal positions from seeded random games."""
    walk = [(s.array.copy(), s.current_player()) for s in islice(random_states(game, seed), count)]
    return np.array([a for a, _ in walk]), np.array([m for _, m in walk])


def export(game, network, params: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """Writes PATH only when onnxruntime agrees with the numba network (max abs diff ≤ 1e-4)
    on positions from random games; the parity report goes beside it either way."""
    from agents.onnx.runtime import session
    from agents.td.net import encode
    from agents.value.features import ValueEncoder

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = artifact_metadata(
        game.spec(),
        "td",
        ENCODING,
        "value",
        network=network.architecture,
        planes=network.planes,
        activation=network.activation,
        hidden=network.hidden,
        input_size=network.size,
        params=json.dumps(params, sort_keys=True),
        output="win_probability: the side to move's estimate; value: seat 1's",
    )
    proto = to_onnx(game, network, metadata)
    states, movers = sample_positions(game, PARITY_POSITIONS, seed=int(params.get("seed", 0)))
    inputs = ValueEncoder(game, ENCODING).batch(states, movers)
    expected = np.array([network.value(encode(game, s, network.planes)) for s in states])
    expected_mover = np.where(movers == 1, expected, 1.0 - expected)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    report_path = path.with_name("parity.json")
    try:
        temp.write_bytes(proto.SerializeToString())
        mover_out, value_out = session(temp).run([OUTPUT_NAME, VALUE_NAME], {INPUT_NAME: inputs})
        diff = max(
            float(np.abs(value_out[:, 0] - expected).max()),
            float(np.abs(mover_out[:, 0] - expected_mover).max()),
        )
        report = {
            "passed": diff <= TOLERANCE,
            "max_abs_diff": diff,
            "tolerance": TOLERANCE,
            "samples": len(states),
            "reference": "numba network (float64)",
            "opset": OPSET,
            "ir_version": MAX_IR_VERSION,
            "artifact": str(path),
        }
        # beside the model (a DVC output): its name, not this machine's path to it
        report_path.write_text(json.dumps({**report, "artifact": path.name}, indent=2) + "\n")
        if not report["passed"]:
            raise ModelError(f"td: ONNX export disagrees with the network by {diff:.3g}")
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    report["report"] = str(report_path)
    return report
