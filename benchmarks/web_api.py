"""Bot API latency over loopback: `POST /api/connect4/move` against one `gridbots web` server.

The server runs in its own process (as users run it), the bot's model loaded once (the first
request, not timed). Part 1: one client, the move latency's p50/p95 over seeded positions.
Part 2: N concurrent clients for S seconds: errors, p50/p95, moves/s, and the play page's own
latency (GET /) measured meanwhile by one more client. The same-run reference is the bot's
own analysis time for the same positions in this process (no HTTP), so `http_overhead_ms` is
what the server adds. Prints one JSON object.

    python benchmarks/web_api.py [--spec registry:connect4-playerzero@production]
        [--clients 50] [--seconds 30] [--requests 200] [--ms 1000] [--workers 2]
        [--spinning-reference]
        (MLFLOW_TRACKING_URI names the registry when the spec is a registry bot)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import load_game  # noqa: E402


def positions(count: int, seed: int = 0) -> list[str]:
    """Seeded Connect 4 histories of 0-12 random plies, none finished."""
    game = load_game("connect4")
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        state = game.new_initial_state()
        for _ in range(int(rng.integers(0, 13))):
            state.apply_action(int(rng.choice(state.legal_actions())))
            if state.is_terminal():
                break
        if not state.is_terminal():
            out.append(game.format_moves(state.history()))
    return out


def percentiles(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"p50_ms": None, "p95_ms": None}
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
    }


#: the same app served with onnxruntime's idle threads left spinning (its default), which
#: `gridbots web` turns off: the same-run reference for that choice (--spinning-reference)
SPINNING_SERVER = (
    "import sys, uvicorn; from flows.web.app import create_app; from flows.web.bots import Limits;"
    " ms, workers, port = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]);"
    " uvicorn.run(create_app(Limits(ms=ms, default_ms=min(300.0, ms), workers=workers)),"
    " host='127.0.0.1', port=port, log_level='warning')"
)


def start_server(port: int, ms: float, workers: int, spinning: bool = False) -> subprocess.Popen:
    command = [sys.executable, "-m", "flows.cli", "web", "--port", str(port), "--ms", str(ms),
               "--workers", str(workers)]  # fmt: skip
    if spinning:
        command = [sys.executable, "-c", SPINNING_SERVER, str(ms), str(workers), str(port)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/games", timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"server exited: {process.stderr.read().decode()}") from None
            time.sleep(0.1)
    raise SystemExit("server did not start in 60 s")


def one_client(url: str, spec: str, histories: list[str]) -> list[float]:
    times = []
    with httpx.Client(timeout=30) as client:
        for history in histories:
            began = time.perf_counter()
            reply = client.post(f"{url}/api/connect4/move", json={"history": history, "spec": spec})
            times.append(1000 * (time.perf_counter() - began))
            reply.raise_for_status()
    return times


def load(url: str, spec: str, histories: list[str], clients: int, seconds: float) -> dict:
    stop = time.perf_counter() + seconds
    times: list[float] = []
    page: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client_loop(k: int) -> None:
        with httpx.Client(timeout=60) as client:
            i = k
            while time.perf_counter() < stop:
                history = histories[i % len(histories)]
                i += clients
                began = time.perf_counter()
                try:
                    reply = client.post(
                        f"{url}/api/connect4/move", json={"history": history, "spec": spec}
                    )
                    ok = reply.status_code == 200
                    problem = f"{reply.status_code} {reply.text[:120]}"
                except httpx.HTTPError as error:
                    ok, problem = False, repr(error)
                with lock:
                    if ok:
                        times.append(1000 * (time.perf_counter() - began))
                    else:
                        errors.append(problem)

    def page_loop() -> None:
        with httpx.Client(timeout=60) as client:
            while time.perf_counter() < stop:
                began = time.perf_counter()
                client.get(f"{url}/").raise_for_status()
                page.append(1000 * (time.perf_counter() - began))
                time.sleep(0.2)

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    threads.append(threading.Thread(target=page_loop))
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "moves": len(times),
        "moves_per_s": round(len(times) / wall, 1),
        "errors": len(errors),
        "first_errors": errors[:3],
        **percentiles(times),
        "page": percentiles(page),
    }


def in_process_ms(spec: str, histories: list[str], ms_cap: float) -> dict:
    """The same bot's analysis time without HTTP (the server's spec, built once)."""
    from flows.web.bots import Limits, build, checked_spec

    game = load_game("connect4")
    limits = Limits(ms=ms_cap, default_ms=min(300.0, ms_cap))
    agent = build(checked_spec(spec, limits)[0], game, limits, seed=0)
    agent.analyse(game.new_initial_state())  # loads and compiles, as the server's first request
    times = []
    for history in histories:
        state = game.state_from_history(game.parse_moves(history))
        began = time.perf_counter()
        agent.analyse(state)
        times.append(1000 * (time.perf_counter() - began))
    return percentiles(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="registry:connect4-playerzero@production")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--ms", type=float, default=1000.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--spinning-reference", action="store_true",
        help="also time one client against the app with onnxruntime's idle threads spinning",
    )  # fmt: skip
    args = parser.parse_args()

    histories = positions(args.requests)
    reference = in_process_ms(args.spec, histories, args.ms)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = start_server(port, args.ms, args.workers)
    url = f"http://127.0.0.1:{port}"
    try:
        one_client(url, args.spec, histories[:1])  # the model loads once, untimed
        single = percentiles(one_client(url, args.spec, histories))
        loaded = load(url, args.spec, histories, args.clients, args.seconds)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    spinning = None
    if args.spinning_reference:  # one client, same positions, idle model threads spinning
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = start_server(port, args.ms, args.workers, spinning=True)
        try:
            one_client(f"http://127.0.0.1:{port}", args.spec, histories[:1])
            spinning = percentiles(one_client(f"http://127.0.0.1:{port}", args.spec, histories))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    result = {
        "spec": args.spec,
        "ms_cap": args.ms,
        "workers": args.workers,
        "single_client": {"requests": len(histories), **single},
        "in_process_analysis": reference,
        "single_client_threads_spinning": spinning,
        "http_overhead_ms": round(single["p50_ms"] - reference["p50_ms"], 2),
        "concurrent": loaded,
        "cpus": os.cpu_count(),
        "load_avg": round(os.getloadavg()[0], 2),
        "median_target_ms": 20,
        "median_target_met": single["p50_ms"] <= 20,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
