"""onnxruntime sessions on the best provider that really works here, chosen once, quietly.

onnxruntime-gpu lists the CUDA provider even where the CUDA libraries are missing, and then
logs errors and falls back to the CPU when a session starts. So the choice is made by starting
one session on a one-node model with CUDA requested and logging muted, and keeping CUDA only if
that session really runs on it. Agents import only this module, never TensorFlow.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Any

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
QUIET = 3  # onnxruntime severities: 0 verbose … 3 error, 4 fatal
#: one probe at a time: the logger's severity is process-wide, so a second thread restoring it
#: while the first one's CUDA probe still loads the provider library lets its error through
_PROBE_LOCK = threading.Lock()
#: whether a session's idle intra-op threads spin, waiting for its next call (onnxruntime's
#: default). A server turns it off (`gridbots web`): between one request's calls, and after
#: them, the spinning threads take the CPU its event loop needs to hand over the next request
#: (Connect 4 PUCT at ms=10 over HTTP: ~21 ms median with spinning, ~14.5 without, 2 cores)
SPINNING = {"on": True}
#: cuDNN picks convolution algorithms from its heuristics instead of timing every candidate at
#: each new input shape (onnxruntime's default, EXHAUSTIVE): batched search feeds a new batch
#: size at nearly every call as self-play games end. The GPU figures of benchmarks/README.md were
#: measured with this setting; the default was not timed against it
CUDA_OPTIONS = {"cudnn_conv_algo_search": "HEURISTIC"}


def _threads_from_environment() -> int:
    """`OMP_NUM_THREADS`, the convention a process told to keep to n cores is given (cluster
    workers, sealed bots, the test suite's two workers): onnxruntime's own pool ignores it, and
    left alone every session takes every core beside the other processes that were told."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else 0


#: CPU threads of one call in sessions that do not say (0: onnxruntime's default, every core)
DEFAULT_THREADS = {"n": _threads_from_environment()}


def stop_spinning() -> None:
    """Sessions started from now on leave idle threads asleep (a serving process)."""
    SPINNING["on"] = False


def share_cores(processes: int) -> None:
    """This process is one of `processes` running side by side (a stage's process pool):
    sessions started from now on take their share of the cores, and idle threads sleep.
    Every session taking all cores, with spinning threads, made two processes playing LSTM
    bots slower than one (10,000 Connect 4 games: 66 s alone, ~190 s each as a pair)."""
    DEFAULT_THREADS["n"] = max(1, (os.cpu_count() or 1) // max(1, processes))
    stop_spinning()


def process_pool(workers: int):
    """`workers` spawned processes (safe beside a flow's threads), each one of `workers` side
    by side (share_cores): a stage's local pool, whatever its jobs (tournament pairings, sweep
    configurations, study 002's networks: flows.pipeline.stage_io.local_processes)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    return ProcessPoolExecutor(workers, get_context("spawn"), share_cores, (workers,))


def providers() -> tuple[str, ...]:
    """("CUDAExecutionProvider", "CPUExecutionProvider") when a GPU is usable, else CPU only."""
    with _PROBE_LOCK:
        return _probe_providers()


@functools.cache
def _probe_providers() -> tuple[str, ...]:
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    try:
        if CUDA not in ort.get_available_providers():
            return (CPU,)
        options = ort.SessionOptions()
        options.log_severity_level = 4
        session = ort.InferenceSession(_probe_model(), sess_options=options, providers=[CUDA, CPU])
        return (CUDA, CPU) if session.get_providers()[0] == CUDA else (CPU,)
    except Exception:  # any failure to start CUDA means: use the CPU
        return (CPU,)
    finally:
        ort.set_default_logger_severity(QUIET)


def _probe_model() -> bytes:
    """A one-node Identity model, built in memory (IR version 10: readable by onnxruntime 1.31)."""
    from onnx import TensorProto, helper

    tensor = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [tensor("x", TensorProto.FLOAT, [1])],
        [tensor("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    return model.SerializeToString()


def session(model: str | Path | bytes, threads: int = 0):
    """An inference session for an ONNX file (or a serialized model built in memory) on the
    chosen providers; `threads` > 0 caps the CPU threads of one call (self-play workers run one
    each, side by side)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = QUIET
    threads = threads or DEFAULT_THREADS["n"]
    if not SPINNING["on"]:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads > 0:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    chosen = [(CUDA, CUDA_OPTIONS) if name == CUDA else name for name in providers()]
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, sess_options=options, providers=chosen)


def open_session(path: str | Path, threads: int = 0) -> tuple[Any, dict[str, str]]:
    """(onnxruntime session, metadata_props) of an ONNX file, read once per thread while the file
    stays (agents.base.loaded_once); AgentError when unreadable."""
    # numpy and the engine come late
    from agents.base import AgentError, file_identity, loaded_once, model_file

    path = model_file(path, "onnx")

    def read() -> tuple[Any, dict[str, str]]:
        try:
            runner = session(path, threads)
            return runner, dict(runner.get_modelmeta().custom_metadata_map)
        except Exception as problem:  # onnxruntime's own exception types
            text = str(problem).strip()
            reason = text.splitlines()[0] if text else type(problem)
            raise AgentError(f"onnx: {path} is not a readable ONNX model: {reason}") from None

    settings = (threads or DEFAULT_THREADS["n"], SPINNING["on"])  # as `session` reads them
    runner, meta = loaded_once("onnx-session", (*file_identity(path), *settings), read)
    return runner, dict(meta)
