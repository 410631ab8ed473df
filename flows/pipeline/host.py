"""A warm interpreter for `gridbots stage`: imports paid once per `dvc repro`, not once per stage.

Every stage dvc runs is a fresh `gridbots stage …` process, and each spent ~4 s importing
Prefect, MLflow's SQL store, pandas, great_expectations and the stages before doing any work:
about a third of a tiny-profile `dvc repro`. `gridbots repro` therefore starts one host
(`serve`) that has imported those modules once and listens on a Unix socket; a `gridbots stage`
that finds `$GRIDBOTS_STAGE_HOST` sends it its arguments, working directory, environment and its
three standard streams (the file descriptors themselves), and the host forks a child that runs
the command exactly as the process would have, in a session of its own. The caller waits for the
child's exit code and exits with it.

Nothing changes for dvc or the user: the stage's output goes to the caller's streams, its exit
code is the caller's, and a caller that dies (a killed `dvc repro`) takes its child and the
child's own processes with it (the child watches the connection and kills its session when it
closes). A caller whose environment differs from the host's where modules read it at import
(PREFECT_, MLFLOW_, NUMBA_, TF_ …) or whose host is gone runs the stage itself, as before.
The host forks only while it has one thread, so no lock is ever copied held.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ENV = "GRIDBOTS_STAGE_HOST"
#: what every stage imports; TensorFlow is left out (its thread pools must not cross a fork)
PRELOAD = (
    "flows.pipeline.commands",
    "flows.pipeline.stages.generate",
    "flows.pipeline.stages.validate",
    "flows.pipeline.stages.encode",
    "flows.pipeline.stages.train",
    "flows.pipeline.stages.export",
    "flows.pipeline.stages.evaluate",
    "flows.pipeline.stages.promote",
    "flows.pipeline.stages.report",
    "flows.pipeline.stages.study",
    "flows.pipeline.stages.td",
    "flows.pipeline.stages.playerzero",
    "mlflow",
    "mlflow.store.tracking.sqlalchemy_store",
    "great_expectations",
    "hmmlearn.hmm",
    "matplotlib.pyplot",
)
#: environment read at import time (GRIDBOTS_VERBOSE decides what the imports may print): a
#: caller that differs here runs its stage itself
IMPORT_TIME_PREFIXES = ("PREFECT_", "MLFLOW_", "NUMBA_", "TF_", "DO_NOT_TRACK", "GX_", "PYTHON",
                        "GRIDBOTS_VERBOSE")  # fmt: skip
_HEADER = struct.Struct("!I")


def _import_time_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}


# ---- the caller: `gridbots stage …` ------------------------------------------------------------
def run_through_host(argv: list[str]) -> int | None:
    """The stage's exit code from the host's child, or None when it must run here (no host, a
    different import-time environment)."""
    path = os.environ.get(ENV)
    if not path:
        return None
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        return None
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    sys.stdout.flush()
    sys.stderr.flush()
    with conn:
        try:
            try:
                socket.send_fds(conn, [_HEADER.pack(len(request)) + request], [0, 1, 2])
                if _receive(conn, 1) != b"A":  # "F": declined; nothing: the host went away
                    return None
            except OSError:
                return None
            try:  # from here on the stage is the child's: never run it twice
                answer = _receive(conn, 5)
            except OSError:
                answer = None
        except KeyboardInterrupt:  # a child dies with this connection
            print("gridbots: stopped", file=sys.stderr)
            return 130
    if answer is None or answer[:1] != b"=":
        print("gridbots: error: the stage's process ended without an exit code", file=sys.stderr)
        return 1
    return int(answer[1:].decode())


def _receive(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return data or None
        data += chunk
    return data


# ---- the host ----------------------------------------------------------------------------------
def start_host(env: dict[str, str]) -> tuple[subprocess.Popen, dict[str, str]]:
    """Starts a host (its own process group, the stages' environment) and returns it with that
    environment naming its socket; stages find it once its imports are done."""
    folder = Path(tempfile.mkdtemp(prefix="gridbots-host-"))  # a short path: sockets need one
    path = folder / "stages.sock"
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.pipeline.host", str(path)],
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return process, {**env, ENV: str(path)}


def wait_ready(process: subprocess.Popen, env: dict[str, str], timeout: float) -> bool:
    """Waits until the host started by `start_host` listens (its imports done); False if it
    ended or `timeout` seconds passed. A caller need not wait: stages run by themselves until
    then, but each pays the imports the host is paying on the same cores."""
    deadline = time.monotonic() + timeout
    while not Path(env[ENV]).exists():
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def serve(path: Path) -> None:
    """Imports the stages' modules, then forks one child per caller until SIGTERM."""
    import importlib

    # a stop while importing ends the host at once, not after seconds of imports nobody will
    # use: its folder is all it has made so far. `os._exit`, not SystemExit, which would unwind
    # through whatever library code is running (and could be caught or reported there)
    def stop(_signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            path.parent.rmdir()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    from engine.numba_patches import start_compiler
    from flows.pipeline.settings import quiet

    quiet()  # as every stage does first
    for module in PRELOAD:
        importlib.import_module(module)
    start_compiler()  # once here, not in every stage that runs a kernel
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # until the listener is set up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if threading.active_count() != 1:  # a thread would leave its locks held in every child
        names = ", ".join(t.name for t in threading.enumerate())
        raise SystemExit(f"gridbots: stage host: threads after the imports ({names})")
    own_env = _import_time_env(dict(os.environ))
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        while True:
            try:
                conn, _ = listener.accept()
            except InterruptedError:
                continue
            with conn:
                try:
                    _serve_one(conn, listener, own_env)
                except (OSError, ValueError, KeyError, struct.error):  # that caller runs itself
                    continue
    finally:
        listener.close()
        path.unlink(missing_ok=True)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _serve_one(conn: socket.socket, listener: socket.socket, own_env: dict[str, str]) -> None:
    message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    try:
        (size,) = _HEADER.unpack(message[: _HEADER.size])
        body = message[_HEADER.size :]
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                return
            body += chunk
        request = json.loads(body)
        from flows.pipeline.settings import quiet_defaults

        env = request["env"]  # with the defaults the stage's own `quiet` will add
        if len(fds) != 3 or _import_time_env({**env, **quiet_defaults(env)}) != own_env:
            conn.sendall(b"F")
            return
        conn.sendall(b"A")  # accepted: the caller waits for the child's exit code
        if os.fork() == 0:  # the child never returns
            listener.close()
            _child(conn, request, fds)
    finally:
        for fd in fds:
            os.close(fd)


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    code = 1
    try:
        os.setsid()  # its own session: killed as a group with whatever it starts
        for signum in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["gridbots", *request["argv"]]
        random.seed()
        _watch_caller(conn, fds)
        from flows.pipeline.commands import run

        code = run(request["argv"][1:])  # after the word `stage`
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    except BaseException:  # reported as an uncaught error in a process would be
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()  # what a process's exit runs (Prefect flushes its logs)
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(f"={code:4d}".encode())
        finally:
            os._exit(code)


def _watch_caller(conn: socket.socket, fds: list[int]) -> None:
    """Forks a watcher into the stage's process group: the caller holds the connection open
    until it has the exit code, so its end closing first means it was killed, and the watcher
    kills the stage with its own processes. A process, not a thread: a stage inside one long
    compiled call (Othello's depth-7 tree, minutes) holds the GIL, and a thread would wait."""
    stage = os.getpid()
    if os.fork() != 0:
        return
    try:
        for fd in (0, 1, 2, *fds):  # the caller's pipes stay with the stage alone
            with contextlib.suppress(OSError):
                os.close(fd)
        # a stage killed on its own (the OOM killer) must not leave this end open: the caller
        # would wait for ever, so the watcher also goes when its stage does
        while os.getppid() == stage and not select.select([conn], [], [], 0.25)[0]:
            pass
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


if __name__ == "__main__":  # what `start_host` runs
    socket_path = Path(sys.argv[1])
    try:
        serve(socket_path)
    finally:
        with contextlib.suppress(OSError):
            socket_path.parent.rmdir()
