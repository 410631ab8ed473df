"""Study 001 Table 2 on tactics: one pairing over seeded line-ups, sides swapped, in parallel.

Each of `--workers` processes plays a disjoint block of scenarios (line-up seeds) through
engine.tournament.play_pairing, in-process; the rows are merged into one summary with W/D/L, the
score's 95% interval, and times per decision (one `step`) and per turn (the steps of one unit
turn, what the study times). Writes games.parquet + summary.json + scores.png under --out and
prints the summary as JSON.

    .venv/bin/python benchmarks/tactics_pairings.py "mcts:sims=1000,per=turn" \\
        "mcts:sims=4000,per=turn" --scenarios 160 --workers 2 --out reports/tactics/mcts
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np


def _block(args: tuple) -> list[dict]:
    game_spec, spec_a, spec_b, first, count, queue, workers = args
    from agents import make
    from agents.onnx.runtime import share_cores
    from engine import parse_game_spec
    from engine.tournament import MatchConfig, play_pairing

    share_cores(workers)  # a network bot's onnxruntime threads must not spin on the other's core
    game = parse_game_spec(game_spec)
    config = MatchConfig(games=2 * count, seed=first)
    rows = play_pairing(
        game, spec_a, spec_b, config, lambda spec, g, seed: make(spec, g, seed=seed),
        on_game=lambda row: queue.put(row["score_a"]),
    )  # fmt: skip
    for row in rows:  # agent seeds follow the game index: keep blocks apart
        row["game"] += 2 * first
    return rows


def turn_times(game, row: dict, side: str) -> list[float]:
    """ms per unit turn of one side: its decisions grouped by the turns they belong to."""
    times = row[f"{side}_times_ms"]
    seats = row["seats"]
    mine = {p for p, who in enumerate(seats) if (who == "A") == (side == "a")}
    state = game.new_initial_state(seed=int(row["scenario_seed"]))
    turns, current, k = [], 0.0, 0
    for action in game.parse_moves(row["history"]):
        player = state.current_player()
        if player in mine:
            current += times[k]
            k += 1
            if game.ends_turn(action):
                turns.append(current)
                current = 0.0
        state.apply_action(action)
    if current:
        turns.append(current)
    return turns


def play(game_spec: str, spec_a: str, spec_b: str, scenarios: int, seed: int, workers: int,
         out: Path) -> dict:  # fmt: skip
    """The pairing over `scenarios` line-ups x 2 sides on `workers` processes: its summary (W/D/L,
    interval, ms per decision and per turn) with the games and a plot written under `out`."""
    from rich.progress import Progress

    from engine import parse_game_spec
    from engine.tournament import summarize_pairing
    from flows.reports.tournament import write_outputs

    game = parse_game_spec(game_spec)
    per = -(-scenarios // workers)
    blocks = [(seed + w * per, min(per, scenarios - w * per)) for w in range(workers)]
    began = time.perf_counter()
    with mp.Manager() as manager:
        queue = manager.Queue()
        jobs = [(game_spec, spec_a, spec_b, f, n, queue, workers) for f, n in blocks if n > 0]
        with mp.get_context("spawn").Pool(len(jobs)) as pool, Progress() as progress:
            task = progress.add_task(f"{spec_a} vs {spec_b}", total=2 * scenarios)
            pending = pool.map_async(_block, jobs)
            done = 0
            while done < 2 * scenarios:
                queue.get()
                done += 1
                progress.update(task, completed=done)
            rows = [row for block in pending.get() for row in block]
    summary = {"game": game.spec(), "scenarios": scenarios, **summarize_pairing(rows)}
    for side in ("a", "b"):
        turns = [t for row in rows for t in turn_times(game, row, side)]
        steps = [t for row in rows for t in row[f"{side}_times_ms"]]
        summary[f"{side}_ms_per_decision"] = float(np.mean(steps))
        summary[f"{side}_ms_per_turn"] = float(np.mean(turns))
        summary[f"{side}_turns"] = len(turns)
    summary["wall_seconds"] = time.perf_counter() - began
    summary["command"] = (
        f"benchmarks/tactics_pairings.py '{spec_a}' '{spec_b}' --game {game_spec} "
        f"--scenarios {scenarios} --seed {seed} --workers {workers}"
    )
    summary["files"] = write_outputs(out, rows, {**summary, "pairings": [summary]})
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec_a")
    parser.add_argument("spec_b")
    parser.add_argument("--game", default="tactics")
    parser.add_argument("--scenarios", type=int, default=160)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    summary = play(args.game, args.spec_a, args.spec_b, args.scenarios, args.seed, args.workers,
                   args.out)  # fmt: skip
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
