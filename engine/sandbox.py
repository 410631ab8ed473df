"""How a bot process is sealed and reaped: resource limits set before exec, and a kill that
reaches every process the bot started (its process group, then any process still carrying its
marker in the environment, for children that left the group).

engine.isolation runs the bots; this module is only the operating-system side of it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

DEFAULT_MEMORY_MB = 2048
DEFAULT_CPU_S = 600  # CPU seconds a bot process may use in its whole life (RLIMIT_CPU)
MAX_FILE_BYTES = 64 << 20  # the largest file a bot may write (RLIMIT_FSIZE), in its folder
MARKER = "GRIDBOTS_BOT_ID"  # the environment variable that marks a bot's processes


def seal(megabytes: int, cpu_seconds: int) -> None:
    """Runs in the child before exec: address space, CPU time, file size, no core dumps."""
    limit = int(megabytes) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds) + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def kill_group(proc: subprocess.Popen, marker: str) -> None:
    """SIGKILL to a bot's process group (its children too), then to any process still carrying
    its marker; reaps the bot."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: group id = its pid
    kill_marked(marker)
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()


def discard_process(proc: subprocess.Popen, folder: Path | None, marker: str) -> None:
    """A bot process gone for good: killed with its group, pipes closed, folder removed."""
    kill_group(proc, marker)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def kill_marked(marker: str, patience_s: float = 10.0) -> None:
    """Kills every process whose environment carries `marker` (children that left the group),
    and returns once they are gone (dead or a zombie) or after `patience_s`: SIGKILL is only
    delivered, not awaited, so a caller that returned at once could still see them run."""
    needle = f"{MARKER}={marker}".encode()
    killed = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(entry)
        except (OSError, ValueError):
            continue
    deadline = time.monotonic() + patience_s
    while killed and time.monotonic() < deadline:
        killed = [entry for entry in killed if _running(entry)]
        if killed:
            time.sleep(0.002)


def _running(entry: Path) -> bool:
    """A /proc entry that is still a live process (a zombie has already let go of everything)."""
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"
