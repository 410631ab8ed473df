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
import random
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from engine.noise import import_tensorflow
from models.base import ModelError

OPSET = 17
TOLERANCE = 1e-4
MAX_IR_VERSION = 10  # the newest IR onnxruntime 1.31 reads
PARITY_SAMPLES = 256


def _as_list(value: Any) -> list:
    """One tensor, name or array → a one-item list; sequences stay lists (multi-input models)."""
    return list(value) if isinstance(value, list | tuple) else [value]


def keras_outputs(model: Any, inputs: Any, batch: int = 256) -> Any:
    """Inference-mode outputs of a Keras model by direct calls (no `predict` machinery).

    `inputs` is one array or a list of arrays (one per model input); the result is one array
    or, for a model with several outputs, a list of arrays in the model's output order."""
    arrays = _as_list(inputs)
    parts: list[list[np.ndarray]] = []
    for i in range(0, len(arrays[0]), batch):
        chunk = [_floats(a[i : i + batch]) for a in arrays]
        out = model(chunk if isinstance(inputs, list | tuple) else chunk[0], training=False)
        parts.append([np.asarray(o) for o in _as_list(out)])
    joined = [np.concatenate([p[k] for p in parts], axis=0) for k in range(len(parts[0]))]
    return joined if len(joined) > 1 else joined[0]


def _floats(array: Any) -> Any:
    """Integer arrays (compact bit encodings, a quarter of float32's memory) as float32, the
    dtype every model input has; anything else as it is."""
    if isinstance(array, np.ndarray) and array.dtype.kind in "iub":
        return array.astype(np.float32)
    return array


def _convert(model: Any, input_name: Any, sample: Any, opset: int, free_steps: bool) -> Any:
    """The raw ONNX ModelProto of `model` (inputs named as given, batch axis free; with
    `free_steps` the second, time axis too)."""
    import onnx

    tf = import_tensorflow()
    logging.getLogger("tf2onnx").setLevel(logging.ERROR)  # "freezing failed, fixing" chatter
    free = len(free_axes(free_steps))
    specs = [
        tf.TensorSpec((None,) * free + tuple(array.shape[free:]), tf.float32, name=name)
        for name, array in zip(_as_list(input_name), _as_list(sample), strict=True)
    ]
    signature = [specs] if isinstance(input_name, list | tuple) else specs
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Keras' tf2onnx patch probes np.object
        raw = Path(folder) / "raw.onnx"
        model.export(str(raw), format="onnx", input_signature=signature, opset_version=opset,
                     verbose=False)  # fmt: skip
        return onnx.load(str(raw))


def _tidy(
    proto: Any,
    input_name: Any,
    output_name: Any,
    metadata: dict[str, str],
    out_shape: Any,
    free_steps: bool = False,
) -> Any:
    """Names the graph's inputs and outputs (in order) and the batch axis (and with
    `free_steps` the time axis), writes the outputs' other dimensions (tf2onnx may leave them
    unknown) and sets metadata_props."""
    import onnx

    graph = proto.graph
    free = free_axes(free_steps)
    inputs, outputs = _as_list(input_name), _as_list(output_name)
    shapes = out_shape if isinstance(output_name, list | tuple) else [out_shape]
    if len(graph.input) != len(inputs) or len(graph.output) != len(outputs):
        raise ModelError(
            f"export expects {len(inputs)} input(s) and {len(outputs)} output(s), got "
            f"{len(graph.input)} and {len(graph.output)}"
        )
    renames = {old.name: new for old, new in zip(graph.input, inputs, strict=True)}
    renames.update({old.name: new for old, new in zip(graph.output, outputs, strict=True)})
    for node in graph.node:
        node.input[:] = [renames.get(name, name) for name in node.input]
        node.output[:] = [renames.get(name, name) for name in node.output]
    for value in (*graph.input, *graph.output):
        value.name = renames.get(value.name, value.name)
        for dim, name in zip(value.type.tensor_type.shape.dim, free, strict=False):
            dim.Clear()
            dim.dim_param = name
    for value, shape in zip(graph.output, shapes, strict=True):
        dims = value.type.tensor_type.shape.dim
        if len(dims) == len(shape):
            for dim, size in zip(dims[len(free) :], shape[len(free) :], strict=True):
                dim.Clear()
                dim.dim_value = int(size)
    write_metadata(proto, metadata)
    onnx.checker.check_model(proto)
    return proto


def write_metadata(proto: Any, metadata: dict[str, Any]) -> None:
    """Replaces an ONNX model's metadata_props with `metadata` (sorted, values as text) and
    caps its IR version at what the pinned onnxruntime reads."""
    del proto.metadata_props[:]
    for key, value in sorted(metadata.items()):
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, str(value)
    proto.ir_version = min(proto.ir_version, MAX_IR_VERSION)


def onnx_metadata(path: str | Path) -> dict[str, str]:
    """metadata_props of an ONNX file (ModelError when it cannot be read)."""
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # onnx raises DecodeError, OSError, ...
        raise ModelError(f"cannot read ONNX model {path}: {error}") from None
    return {entry.key: entry.value for entry in proto.metadata_props}


def parity(model: Any, onnx_path: str | Path, inputs: Any) -> dict[str, Any]:
    """Keras direct-call outputs vs onnxruntime outputs on the same inputs (every output)."""
    from agents.onnx.runtime import session

    runner = session(onnx_path)
    names = [i.name for i in runner.get_inputs()]
    arrays = _as_list(inputs)
    expected = _as_list(keras_outputs(model, inputs))
    runs = [
        runner.run(None, {n: a[i : i + 256] for n, a in zip(names, arrays, strict=True)})
        for i in range(0, len(arrays[0]), 256)
    ]
    got = [np.concatenate([r[k] for r in runs]) for k in range(len(runs[0]))]
    shapes_keras, shapes_onnx = [list(e.shape) for e in expected], [list(g.shape) for g in got]
    if shapes_keras != shapes_onnx:
        return {"max_abs_diff": float("inf"), "shape_keras": shapes_keras,
                "shape_onnx": shapes_onnx}  # fmt: skip
    pairs = zip(got, expected, strict=True)
    diffs = [np.abs(g.astype(np.float64) - e.astype(np.float64)) for g, e in pairs]
    return {
        "max_abs_diff": max((float(d.max()) for d in diffs if d.size), default=0.0),
        "mean_abs_diff": float(np.mean([d.mean() for d in diffs if d.size] or [0.0])),
        "providers": list(runner.get_providers()),
    }


def free_axes(free_steps: bool) -> tuple[str, ...]:
    """The names of an export's leading free axes: the batch, and with `free_steps` time."""
    return ("batch", "steps") if free_steps else ("batch",)


def _shape_named(array: np.ndarray, free_steps: bool) -> list:
    """An input's shape as exported: its free axes by name, the rest as numbers."""
    free = free_axes(free_steps)
    return [*free, *array.shape[len(free) :]]


def export_keras(
    model: Any,
    path: str | Path,
    held_out: Any,
    metadata: dict[str, str],
    input_name: Any,
    output_name: Any,
    tolerance: float = TOLERANCE,
    opset: int = OPSET,
    report_path: str | Path | None = None,
    free_steps: bool = False,
) -> dict[str, Any]:
    """Writes `path` (ONNX) only if it matches Keras on `held_out`; returns the parity report.

    `free_steps` leaves the time axis (the second) of every input and output free, for a
    sequence model built on `Input((None, F))`: a player then feeds only the steps it has
    instead of padding to the trained length; parity is then also checked on a prefix.

    A model with several inputs or outputs passes lists: `held_out` one array per input, and
    the names in the model's input and output order. The report (JSON, `report_path` or
    PATH.parity.json) records the difference over every output, tolerance, sample count, opset
    and names; a mismatch raises ModelError and leaves no ONNX file.
    """
    if opset < 17:
        raise ModelError(f"opset {opset} is too old; gridbots exports opset 17 or newer")
    path = Path(path)
    report_path = Path(report_path) if report_path else path.with_suffix(".parity.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    several = isinstance(input_name, list | tuple)
    arrays = [np.asarray(a[:PARITY_SAMPLES], dtype=np.float32) for a in _as_list(held_out)]
    if not len(arrays[0]):
        raise ModelError("export needs held-out inputs for its parity check; none were given")
    samples = arrays if several else arrays[0]
    started = time.perf_counter()
    first = [a[:1] for a in arrays] if several else arrays[0][:1]
    out_shape = [tuple(np.shape(o)) for o in _as_list(keras_outputs(model, first))]
    if not isinstance(output_name, list | tuple):
        out_shape = out_shape[0]
    proto = _convert(model, input_name, samples, opset, free_steps)
    proto = _tidy(proto, input_name, output_name, metadata, out_shape, free_steps)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_bytes(proto.SerializeToString())
        check = parity(model, temp, samples)
        if free_steps:  # the free axis must hold at a length other than the samples' own
            prefix = [a[:, : max(1, a.shape[1] // 3)] for a in _as_list(samples)]
            short = parity(model, temp, prefix if several else prefix[0])
            check["max_abs_diff"] = max(check["max_abs_diff"], short["max_abs_diff"])
            check["prefix_steps"] = int(prefix[0].shape[1])
        report = {
            "passed": bool(check["max_abs_diff"] <= tolerance),
            "tolerance": tolerance,
            "samples": len(arrays[0]),
            **check,
            "opset": max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
            "ir_version": int(proto.ir_version),
            "input": input_name,
            "output": output_name,
            "input_shape": (
                [_shape_named(a, free_steps) for a in arrays]
                if several
                else _shape_named(arrays[0], free_steps)
            ),
            "artifact": str(path),
            "seconds": round(time.perf_counter() - started, 3),
        }
        # the file travels with the model (a DVC output): no timing and no machine's path, so a
        # rerun anywhere writes the same bytes
        kept = {**{k: v for k, v in report.items() if k != "seconds"}, "artifact": path.name}
        report_path.write_text(json.dumps(kept, indent=2) + "\n")
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
    same run gives the same model however busy the cores are (thread timing changes nothing).

    Keras draws the seed of every unseeded initializer, dropout and seed generator from Python's
    global `random`, which any other thread of the process may draw from at the same moment (a
    Prefect or MLflow client in a stage, an earlier test's server in a test worker): a model
    was reproducible only alone. Keras gets a generator of its own, seeded here."""

    tf = import_tensorflow()
    import keras
    from keras.src.random import seed_generator  # pinned Keras: where it draws default seeds

    keras.utils.set_random_seed(int(seed))
    own = getattr(seed_generator, "python_random", None)
    if isinstance(own, random.Random):  # already its own: a later training in this process
        own.seed(int(seed))
    else:
        seed_generator.python_random = random.Random(int(seed))
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


STEP_ROUNDING = 8  # time-axis cuts of row_batches: few distinct shapes, few retraces


def row_batches(keras: Any, arrays: list[np.ndarray], rows: np.ndarray, batch_size: int,
                seed: int | None = None, transform: Any = None,
                steps: np.ndarray | None = None) -> Any:  # fmt: skip
    """A Keras dataset of `rows` of `arrays`, sliced batch by batch (reshuffled each epoch from
    `seed`; in order when None): the training and held-out splits stay views of one array, where
    fitting on `x[train]` and `x[test]` copies them (tactics' value planes are 45 KB a row).
    Fit it with `shuffle=False`: this order is the shuffle, and Keras' own would reorder the
    batches by Python's global `random`, which other threads of the process draw from. Integer
    arrays (bits kept as int8) become float32 one batch at a time. `transform(parts, rng)`
    rewrites each batch (augmentation drawn per batch from its own stream of `seed`).

    `steps` (per row of `arrays`: how many time steps carry weight) batches sequences of like
    length together and cuts each batch's time axis (axis 1 of every array) after its longest
    row, rounded up to a multiple of STEP_ROUNDING: a Lazerbike game is 25 laps on average and
    its rows are padded to 88, so most of a full-length batch is padding a recurrent net still
    steps through. The last array is the sample weights: it is scaled by cut / full steps, so a
    cut batch's mean loss (Keras divides by every element, padding included) equals the full
    batch's, and so does its gradient."""
    rows = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows, dtype=np.int64)
    full = arrays[0].shape[1] if steps is not None else 0

    def cut_length(longest: int) -> int:
        return min(full, -(-longest // STEP_ROUNDING) * STEP_ROUNDING)

    def batches(order: np.ndarray) -> list[np.ndarray]:
        if steps is None:
            return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        # like lengths together within windows of 64 batches, so each epoch still mixes games
        window = 64 * batch_size
        cut = []
        for start in range(0, len(order), window):
            chunk = order[start : start + window]
            chunk = chunk[np.argsort(steps[chunk], kind="stable")]
            cut += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
        return cut

    class Rows(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__()
            self.rng = None if seed is None else np.random.default_rng(seed)
            self.draws = np.random.default_rng([0 if seed is None else seed, 1])
            self.on_epoch_end()

        def __len__(self) -> int:
            return len(self.plan)

        def __getitem__(self, index: int) -> tuple:
            pick = np.sort(self.plan[index])
            parts = tuple(_floats(a[pick]) for a in arrays)
            if steps is not None:
                cut = cut_length(int(steps[pick].max(initial=1)))
                parts = tuple(p[:, :cut] for p in parts)
                parts = (*parts[:-1], parts[-1] * np.float32(cut / full))
            if transform is not None:
                parts = transform(parts, self.draws)
            return parts if len(parts) > 1 else parts[0]

        def on_epoch_end(self) -> None:
            if self.rng is None:
                self.plan = batches(rows)
            else:
                plan = batches(self.rng.permutation(rows))
                if steps is not None:  # windows of like lengths, then the batches shuffled
                    plan = [plan[i] for i in self.rng.permutation(len(plan))]
                self.plan = plan
            if steps is not None:  # Keras fixes each axis its first two batches agree on
                cuts = [cut_length(int(steps[b].max(initial=1))) for b in self.plan]
                other = next((i for i, c in enumerate(cuts) if c != cuts[0]), None)
                if other is not None and cuts[1] == cuts[0]:
                    self.plan[1], self.plan[other] = self.plan[other], self.plan[1]

    return Rows()
