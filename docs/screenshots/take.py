"""The README's screenshots of `gridbots web`: the play page at phone width against the
production Connect 4 bot, and the leaderboard, taken with Playwright and Debian's Chromium.

    MLFLOW_TRACKING_URI=sqlite:///PATH/mlflow.db python docs/screenshots/take.py

(a registry holding connect4-playerzero@production; the README's come from the full profile's).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BOT = "registry:connect4-playerzero@production"


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "flows.cli", "web", "--port", str(port)]
    server = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/api/games", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            chromium = shutil.which("chromium") or "/usr/bin/chromium"
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.goto(f"{url}/?game=connect4&opponent={BOT}&history=4453")
            page.wait_for_selector("#grid .cell.legal", timeout=60_000)
            page.locator("#grid .cell.legal").nth(2).click()
            page.wait_for_function("document.querySelectorAll('#history li').length >= 6")
            page.wait_for_selector("#grid .cell.legal", timeout=60_000)
            page.screenshot(path=str(HERE / "web-play.png"), full_page=True)
            page = browser.new_page(viewport={"width": 1100, "height": 500})
            page.goto(f"{url}/leaderboard")
            page.wait_for_selector("table.board-list", timeout=60_000)
            page.screenshot(path=str(HERE / "web-leaderboard.png"), full_page=True)
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait()
    for name in ("web-play.png", "web-leaderboard.png"):  # 64 colours: small files in git
        image = Image.open(HERE / name).convert("RGB")
        image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(HERE / name, optimize=True)


if __name__ == "__main__":
    main()
