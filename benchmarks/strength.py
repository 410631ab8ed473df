"""Strength sanity from seeded matches (sides swapped), printed as JSON; plus guarded-random speed.

Each match names its target; `--games N` plays N games per match instead of the defaults (a quick
run: `--games 10`), `--only NAME` runs the matches whose name contains NAME.

    .venv/bin/python benchmarks/strength.py [--games N] [--only NAME] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from agents import make
from agents.guards import parse_guards, play_guarded_games
from engine import load_game
from engine.bits import new_rng
from engine.match import play_match

#: name, game, agent A, agent B, default games, scenario, target (score of A)
MATCHES: list[tuple[str, str, str, str, int, dict[str, Any], str]] = [
    ("othello_alphabeta_d3_vs_random", "othello", "alphabeta:depth=3", "random", 200,
     {"opening": 2}, "score >= 0.9"),
    ("connect4_alphabeta_ms100_vs_mcts1000", "connect4", "alphabeta:ms=100", "mcts:sims=1000",
     200, {"opening": 2}, "score > 0.5"),
    ("connect4_mcts1000_vs_mcts100", "connect4", "mcts:sims=1000", "mcts:sims=100", 200,
     {"opening": 2}, "score >= 0.85"),
    ("connect4_mcts1000_vs_guarded", "connect4", "mcts:sims=1000", "random:guards=win+block",
     200, {"opening": 2}, "score > 0.5"),
    ("connect4_guarded_vs_random", "connect4", "random:guards=win+block", "random", 200,
     {}, "score clearly above 0.5"),
    ("othello_guarded_vs_random", "othello", "random:guards=win+block", "random", 200,
     {}, "score >= 0.5"),
    ("lazerbike_safe_vs_random", "lazerbike", "random:guards=safe", "random", 200,
     {"start": "random"}, "score clearly above 0.5"),
]  # fmt: skip


def run_match(game_name: str, spec_a: str, spec_b: str, games: int, seed: int, scenario: dict):
    """One seeded two-sided match: W/D/L, score with a normal 95% interval, seconds."""
    game = load_game(game_name)
    started = time.perf_counter()
    result = play_match(
        game,
        lambda s: make(spec_a, game, seed=s),
        lambda s: make(spec_b, game, seed=s + 7919),
        games,
        seed=seed,
        **scenario,
    )
    seconds = time.perf_counter() - started
    per_game = [1.0] * result.wins + [0.5] * result.draws + [0.0] * result.losses
    half = 1.96 * float(np.std(per_game)) / max(len(per_game), 1) ** 0.5
    return {
        "games": result.games,
        "wins": result.wins,
        "draws": result.draws,
        "losses": result.losses,
        "score": round(result.score, 4),
        "interval95": [round(result.score - half, 4), round(result.score + half, 4)],
        "seconds": round(seconds, 1),
    }


def guarded_speed(seconds: float = 1.0) -> dict[str, float]:
    """Games per second of guarded random self-play (every seat win+block+safe), one thread."""
    flags = parse_guards("win+block+safe")
    speeds = {}
    for name in ("connect4", "othello", "lazerbike"):
        game = load_game(name)
        start = game.new_initial_state(seed=0).array
        seats = [flags] * game.num_players
        play_guarded_games(game, start, seats, 1, new_rng(0))  # compile / load from cache
        n, played, began = 64, 0, time.perf_counter()
        while time.perf_counter() - began < seconds:
            play_guarded_games(game, start, seats, n, new_rng(played))
            played += n
        speeds[name] = round(played / (time.perf_counter() - began), 1)
    return speeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=0, help="games per match (default: each)")
    parser.add_argument("--only", default="", help="run matches whose name contains this")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    for name, game, spec_a, spec_b, games, scenario, target in MATCHES:
        if args.only and args.only not in name:
            continue
        entry = run_match(game, spec_a, spec_b, args.games or games, args.seed, scenario)
        report[name] = {"game": game, "a": spec_a, "b": spec_b, **entry, "target": target}
    if not args.only or "speed" in args.only:
        report["guarded_random_games_per_s"] = guarded_speed()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
