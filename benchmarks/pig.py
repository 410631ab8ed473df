"""Chance nodes and multi-action turns, on pig: MCTS against random and against hold-at-20.

Seeded matches, sides swapped. Targets: mcts beats random clearly and scores at least 0.45
against the classic "hold at 20" strategy.

    .venv/bin/python benchmarks/pig.py [--games 200] [--sims 1000]
"""

from __future__ import annotations

import argparse
import json

from agents import make
from engine import load_game
from engine.match import play_match


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--sims", type=int, default=1000)
    args = parser.parse_args()
    pig = load_game("pig")
    mcts = f"mcts:sims={args.sims}"
    report = {}
    for opponent in ("random", "heuristic:hold=20"):
        result = play_match(
            pig,
            lambda seed: make(mcts, pig, seed=seed),
            lambda seed, spec=opponent: make(spec, pig, seed=seed),
            games=args.games,
        )
        report[f"{mcts} vs {opponent}"] = {
            "wins": result.wins,
            "draws": result.draws,
            "losses": result.losses,
            "score": result.score,
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
