"""Library noise on stderr: quiet by default, everything with `gridbots --verbose`.

TensorFlow probes for CUDA from C++ while it loads, and on a machine without a GPU says so on
stderr ("Could not find cuda drivers", "failed call to cuInit: ... (303)", absl's "All log
messages before absl::InitializeLog()"), before any Python setting can reach it: absl's early
messages ignore TF_CPP_MIN_LOG_LEVEL. So TensorFlow is loaded in one place,
`import_tensorflow`, with file descriptor 2 pointed at a temporary file while it imports and
lists its devices (the probe). Afterwards the lines that are start-up chatter are dropped and
anything else written meanwhile (another thread's warning) is passed on; if the import fails,
everything is shown. Other libraries' warnings are handled in the module that calls them.

The switch is the environment variable GRIDBOTS_VERBOSE, so the stages `dvc repro` starts
inherit `gridbots --verbose repro`.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping

VERBOSE = "GRIDBOTS_VERBOSE"
#: the tools' own switches for their telemetry (usage pings, server heartbeats), all off: every
#: gridbots process, the cluster's servers and the test suite start from these
TELEMETRY_OFF = {
    "DO_NOT_TRACK": "1",
    "MLFLOW_DISABLE_TELEMETRY": "1",
    "DVC_NO_ANALYTICS": "1",
    "GX_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}
#: what TensorFlow and its CUDA probe print while loading on a machine without a GPU
STARTUP_CHATTER = re.compile(
    r"absl::InitializeLog|^[IWE]\d{4} |cuda|cuInit|oneDNN|cpu_feature_guard|TF-TRT|"
    r"To enable the following instructions|rebuild TensorFlow with the appropriate",
    re.IGNORECASE,
)


def set_verbose(on: bool) -> None:
    """Turn library output on for this process and its children (never off: a parent that
    asked for it keeps it)."""
    if on:
        os.environ[VERBOSE] = "1"


def verbose(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process (or one that will run with `env`) shows library output."""
    return (os.environ if env is None else env).get(VERBOSE, "") not in ("", "0")


@contextlib.contextmanager
def startup_chatter_muted() -> Iterator[None]:
    """fd 2 into a temporary file for the duration; afterwards the lines that are not start-up
    chatter go to stderr (all of them when the body raised). Does nothing when verbose."""
    if verbose():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            lines = text.splitlines()
            kept = [line for line in lines if failed or not STARTUP_CHATTER.search(line)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
                sys.stderr.flush()


def import_tensorflow():
    """TensorFlow, loaded once with its device probe, its start-up chatter muted."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    if not verbose():
        # TensorFlow's C++ log after start-up: on CPU-only machines Keras' fit logs an ERROR
        # line per run ("NodeDef mentions attribute use_unbounded_threadpool": a graph
        # attribute this build does not know, ignored). A real failure raises a Python
        # exception with its message, so level 3 (fatal only) loses nothing a user needs.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with startup_chatter_muted():
        import tensorflow as tf

        tf.config.list_physical_devices()  # CUDA is probed here, while fd 2 is muted
    return tf
