"""Randomized generation speed on Connect 4: positions/s and games/s, with both workers.

    .venv/bin/python benchmarks/generation.py [--games 2000000] [--workers 2] [--y 10] [--full]

Two measurements, each from warm worker processes (numba code loaded, spawn context):
`arrow` generates shards and builds their three Arrow tables (nothing written); `parquet` is
the real `gridbots generate connect4 randomized` path (features.store.generate_dataset: Parquet
shards, fsync, manifest; pool start-up included) into a temporary directory. Each prints
games/s, positions/s and the projected time for the original study's 11,663,347 random games
(target: under 300 s on this 2-core machine). `--full` runs the whole 11,663,347-game dataset
through the store instead of projecting it.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

TARGET_GAMES = 11_663_347
TARGET_SECONDS = 300.0


def _arrow_shard(task: tuple) -> tuple[int, int, float]:
    """Worker: one shard's tables, built but not written; (games, positions, seconds)."""
    from features.store import _setup

    spec, params, seed, shard, first = task
    game, module = _setup(spec, "randomized")
    started = time.perf_counter()
    tables = module.generate_shard(game, params, seed, shard, first)
    return tables["games"].num_rows, tables["positions"].num_rows, time.perf_counter() - started


def measure_arrow(games: int, y: int, workers: int, shard_size: int) -> dict:
    from engine import parse_game_spec
    from features.generate import game_id_stride, num_shards, parse_params

    game = parse_game_spec("connect4")
    module, params = parse_params(
        game, "randomized", {"games": games, "y": y, "shard_size": shard_size}
    )
    shards = num_shards(module, game, params)
    stride = game_id_stride(module, game, params)
    tasks = [("connect4", params, 0, k, k * stride) for k in range(shards)]
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        list(pool.map(_arrow_shard, tasks[:workers]))  # warm-up: imports + numba cache load
        started = time.perf_counter()
        results = list(pool.map(_arrow_shard, tasks))
        seconds = time.perf_counter() - started
    made = sum(r[0] for r in results)
    positions = sum(r[1] for r in results)
    return _figures(made, positions, seconds)


def measure_parquet(games: int, y: int, workers: int, shard_size: int) -> dict:
    from features.store import generate_dataset

    options = {"games": games, "y": y, "shard_size": shard_size}
    first_done: list[float] = []

    def progress(done: int, total: int) -> None:
        if done >= 1 and not first_done:
            first_done.append(time.perf_counter())

    with tempfile.TemporaryDirectory(prefix="gridbots-bench-") as root:
        started = time.perf_counter()
        manifest = generate_dataset(
            root, "connect4", "randomized", options, workers=workers, progress=progress
        )
        seconds = time.perf_counter() - started
        size = sum(p.stat().st_size for p in Path(root).rglob("*.parquet"))
    counts = manifest["counts"]
    figures = _figures(counts["games"], counts["positions"], seconds)
    # steady state (after the first shard: pool start-up and numba cache loading excluded)
    steady = seconds - (first_done[0] - started)
    rate = (counts["games"] - shard_size) / steady if steady > 0 else float("nan")
    figures["startup_seconds"] = round(first_done[0] - started, 2)
    figures["steady_games_per_s"] = round(rate)
    figures["steady_positions_per_s"] = round(rate / y)
    figures["projected_seconds_for_target"] = round(
        first_done[0] - started + (TARGET_GAMES - shard_size) / rate, 1
    )
    figures["sequences"] = counts["sequences"]
    figures["bytes_on_disk"] = size
    return figures


def _figures(games: int, positions: int, seconds: float) -> dict:
    games_per_s = games / seconds
    return {
        "games": games,
        "positions": positions,
        "seconds": round(seconds, 3),
        "games_per_s": round(games_per_s),
        "positions_per_s": round(positions / seconds),
        "projected_seconds_for_target": round(TARGET_GAMES / games_per_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--y", type=int, default=10, help="playouts (games) per random state")
    parser.add_argument("--shard-size", type=int, default=100_000, help="games per shard")
    parser.add_argument("--full", action="store_true", help="write all 11,663,347 games")
    args = parser.parse_args()
    arrow = measure_arrow(args.games, args.y, args.workers, args.shard_size)
    parquet_games = TARGET_GAMES if args.full else args.games
    parquet = measure_parquet(parquet_games, args.y, args.workers, args.shard_size)
    result = {
        "game": "connect4",
        "technique": "randomized",
        "y": args.y,
        "workers": args.workers,
        "shard_size": args.shard_size,
        "target_games": TARGET_GAMES,
        "target_seconds": TARGET_SECONDS,
        "arrow": arrow,
        "parquet": parquet,
        "meets_target": parquet["projected_seconds_for_target"] < TARGET_SECONDS,
        "shards_for_target": math.ceil(TARGET_GAMES / args.shard_size),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
