"""Keras → ONNX with named tensors, gridbots metadata and a parity check that can stop it.

Agents run models on onnxruntime only, so the exported file is the model: if it disagrees with
Keras the export must fail rather than ship a different bot. The conversion goes through
Keras' own ONNX export (tf2onnx underneath, patched by Keras for numpy 2), then the graph is
tidied with `onnx`: the input and output get the names the family chose, the batch axis is
called `batch`, and `artifact_metadata` goes into metadata_props. The file is written to a
temporary name, compared with Keras on held-out inputs (max abs diff <= tolerance) and only
renamed into place when it agrees; a JSON parity report is written either way.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from models.base import ModelError

OPSET = 17
TOLERANCE = 1e-4
MAX_IR_VERSION = 10  # the newest IR onnxruntime 1.31 reads
PARITY_SAMPLES = 256


def quiet_tensorflow() -> None:
    """Mute TensorFlow's C++ logging (set before the first import to take effect)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def keras_outputs(model: Any, inputs: np.ndarray, batch: int = 256) -> np.ndarray:
    """Inference-mode outputs of a Keras model by direct calls (no `predict` machinery)."""
    parts = [
        np.asarray(model(inputs[i : i + batch], training=False))
        for i in range(0, len(inputs), batch)
    ]
    return np.concatenate(parts, axis=0)


def _convert(model: Any, input_name: str, sample: np.ndarray, opset: int) -> Any:
    """The raw ONNX ModelProto of `model` (input named `input_name`, batch axis free)."""
    import onnx
    import tensorflow as tf

    logging.getLogger("tf2onnx").setLevel(logging.ERROR)  # "freezing failed, fixing" chatter
    spec = tf.TensorSpec((None, *sample.shape[1:]), tf.float32, name=input_name)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Keras' tf2onnx patch probes np.object
        raw = Path(folder) / "raw.onnx"
        model.export(str(raw), format="onnx", input_signature=[spec], opset_version=opset,
                     verbose=False)  # fmt: skip
        return onnx.load(str(raw))


def _tidy(
    proto: Any, input_name: str, output_name: str, metadata: dict[str, str], out_shape: tuple
) -> Any:
    """Names the graph's single input and output and the batch axis, writes the output's other
    dimensions (tf2onnx may leave them unknown) and sets metadata_props."""
    import onnx

    graph = proto.graph
    if len(graph.input) != 1 or len(graph.output) != 1:
        raise ModelError(
            f"export expects one input and one output, got {len(graph.input)} and "
            f"{len(graph.output)}"
        )
    old_in, old_out = graph.input[0].name, graph.output[0].name
    for node in graph.node:
        node.input[:] = [
            {old_in: input_name, old_out: output_name}.get(name, name) for name in node.input
        ]
        node.output[:] = [output_name if name == old_out else name for name in node.output]
    graph.input[0].name = input_name
    graph.output[0].name = output_name
    for value in (graph.input[0], graph.output[0]):
        first = value.type.tensor_type.shape.dim[0]
        first.Clear()
        first.dim_param = "batch"
    dims = graph.output[0].type.tensor_type.shape.dim
    if len(dims) == len(out_shape):
        for dim, size in zip(dims[1:], out_shape[1:], strict=True):
            dim.Clear()
            dim.dim_value = int(size)
    del proto.metadata_props[:]
    for key, value in sorted(metadata.items()):
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, str(value)
    proto.ir_version = min(proto.ir_version, MAX_IR_VERSION)
    onnx.checker.check_model(proto)
    return proto


def onnx_metadata(path: str | Path) -> dict[str, str]:
    """metadata_props of an ONNX file (ModelError when it cannot be read)."""
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # onnx raises DecodeError, OSError, ...
        raise ModelError(f"cannot read ONNX model {path}: {error}") from None
    return {entry.key: entry.value for entry in proto.metadata_props}


def parity(model: Any, onnx_path: str | Path, inputs: np.ndarray) -> dict[str, Any]:
    """Keras direct-call outputs vs onnxruntime outputs on the same inputs."""
    from agents.onnx_runtime import session

    runner = session(onnx_path)
    name = runner.get_inputs()[0].name
    expected = keras_outputs(model, inputs)
    got = np.concatenate(
        [runner.run(None, {name: inputs[i : i + 256]})[0] for i in range(0, len(inputs), 256)]
    )
    if got.shape != expected.shape:
        return {"max_abs_diff": float("inf"), "shape_keras": list(expected.shape),
                "shape_onnx": list(got.shape)}  # fmt: skip
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    return {
        "max_abs_diff": float(diff.max()) if diff.size else 0.0,
        "mean_abs_diff": float(diff.mean()) if diff.size else 0.0,
        "providers": list(runner.get_providers()),
    }


def export_keras(
    model: Any,
    path: str | Path,
    held_out: np.ndarray,
    metadata: dict[str, str],
    input_name: str,
    output_name: str,
    tolerance: float = TOLERANCE,
    opset: int = OPSET,
    report_path: str | Path | None = None,
) -> dict[str, Any]:
    """Writes `path` (ONNX) only if it matches Keras on `held_out`; returns the parity report.

    The report (JSON, `report_path` or PATH.parity.json) records the difference, tolerance,
    sample count, opset and names; a mismatch raises ModelError and leaves no ONNX file.
    """
    if opset < 17:
        raise ModelError(f"opset {opset} is too old; gridbots exports opset 17 or newer")
    path = Path(path)
    report_path = Path(report_path) if report_path else path.with_suffix(".parity.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = np.asarray(held_out, dtype=np.float32)[:PARITY_SAMPLES]
    if not len(samples):
        raise ModelError("export needs held-out inputs for its parity check; none were given")
    started = time.perf_counter()
    out_shape = tuple(np.shape(keras_outputs(model, samples[:1])))
    proto = _convert(model, input_name, samples, opset)
    proto = _tidy(proto, input_name, output_name, metadata, out_shape)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_bytes(proto.SerializeToString())
        check = parity(model, temp, samples)
        report = {
            "passed": bool(check["max_abs_diff"] <= tolerance),
            "tolerance": tolerance,
            "samples": len(samples),
            **check,
            "opset": max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
            "ir_version": int(proto.ir_version),
            "input": input_name,
            "output": output_name,
            "input_shape": ["batch", *samples.shape[1:]],
            "artifact": str(path),
            "seconds": round(time.perf_counter() - started, 3),
        }
        report_path.write_text(json.dumps(report, indent=2) + "\n")
        if not report["passed"]:
            raise ModelError(
                f"ONNX export of {path.name} disagrees with Keras: max abs diff "
                f"{report['max_abs_diff']:.3g} > {tolerance:g} (report: {report_path})"
            )
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    report["report"] = str(report_path)
    return report


# ---- plumbing shared by the Keras families ---------------------------------------------------
def keras_seeded(seed: int) -> Any:
    """Keras, imported late (TensorFlow takes seconds), seeded and with deterministic ops: the
    same run gives the same model however busy the cores are (thread timing changes nothing)."""
    quiet_tensorflow()
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(int(seed))
    tf.config.experimental.enable_op_determinism()
    return keras


def checked_params(name: str, defaults: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """DEFAULTS updated by `params`, each value coerced to its default's type; unknown keys and
    unreadable values are ModelErrors (a typo must not train the default silently)."""
    unknown = set(params) - set(defaults)
    if unknown:
        raise ModelError(
            f"{name}: unknown parameter(s) {sorted(unknown)}; known: {', '.join(sorted(defaults))}"
        )
    merged = dict(defaults)
    for key, value in params.items():
        kind = type(defaults[key])
        try:
            if kind is bool and isinstance(value, str):
                value = {"true": True, "1": True, "false": False, "0": False}[value.lower()]
            merged[key] = kind(value) if defaults[key] is not None else value
        except (KeyError, TypeError, ValueError):
            raise ModelError(f"{name}: {key}={value!r} must be {kind.__name__}") from None
    return merged


def split_by_game(game_id: np.ndarray, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) boolean masks with every game on one side only: positions of one game are
    near-copies of each other, so sharing a game between the sides would flatter the score."""
    if not 0.0 < holdout < 1.0:
        raise ModelError(f"holdout={holdout} must lie strictly between 0 and 1")
    games = np.unique(game_id)
    if len(games) < 2:
        raise ModelError(f"a held-out split needs at least 2 games, the data holds {len(games)}")
    rng = np.random.default_rng(seed)
    count = min(max(1, round(len(games) * holdout)), len(games) - 1)
    test_games = rng.choice(games, size=count, replace=False)
    test = np.isin(game_id, test_games)
    return ~test, test


def epoch_reporter(keras: Any, evaluate: Any, history: dict[str, list[float]], progress: Any):
    """A Keras callback adding `evaluate()`'s held-out metrics to each epoch's log, keeping the
    curves in `history` and passing them to `progress(epoch, metrics)`."""

    class Reporter(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
            metrics = {k: float(v) for k, v in (logs or {}).items()}
            metrics.update(evaluate())
            for key, value in metrics.items():
                history.setdefault(key, []).append(value)
            if progress is not None:
                progress(epoch, metrics)

    return Reporter()
