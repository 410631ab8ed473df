"""What the browser test modules share: Chromium and Playwright (a skip at a desk, a failure
under CI, tests/optional.py), a free loopback port, a server in its own process group stopped by
its PID, a launched browser, and the README's screenshots (GRIDBOTS_SCREENSHOTS=DIR, 64 colours).
Importing it is the requirement: a module that imports it is skipped or failed as a whole."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from optional import require_module, require_program

CHROMIUM = os.environ.get("GRIDBOTS_CHROMIUM") or require_program(
    ("chromium", "chromium-browser"), "apt-get install -y chromium", module_level=True
)
playwright_api = require_module(
    "playwright.sync_api", "pip install -c constraints.txt playwright", module_level=True
)
SHOTS = os.environ.get("GRIDBOTS_SCREENSHOTS")  # resolved now: the fixtures change folder
SHOTS = Path(SHOTS).resolve() if SHOTS else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(process: subprocess.Popen, patience_s: float) -> None:
    """SIGTERM to the server's process group, SIGKILL after `patience_s`; reaped either way."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=patience_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def chromium() -> Iterator:
    """Debian's Chromium under Playwright (which cannot download a browser of its own here)."""
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def shot(page, name: str, full_page: bool = False) -> None:
    """The page as GRIDBOTS_SCREENSHOTS/name, in 64 colours (the README's are kept in git)."""
    if SHOTS is None:
        return
    from PIL import Image

    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    page.screenshot(path=str(path), full_page=full_page)
    image = Image.open(path).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
