"""MCTS speed: one 1000-simulation move from the start, gridbots against OpenSpiel's C++ bot.

Both run in this process, one after the other, with random-rollout evaluation and the same
simulation count; the ratio is OpenSpiel's time per move over ours. OpenSpiel comes from the
`peers` extra (open_spiel); without it only gridbots' figures are printed.

    .venv/bin/python benchmarks/mcts.py [--sims 1000] [--repeats 30]
"""

from __future__ import annotations

import argparse
import json

from agents.search.mcts_bench import measure_mcts, measure_openspiel_mcts
from engine import load_game

PEERS = {"connect4": "connect_four", "othello": "othello"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    report = {}
    for ours, theirs in PEERS.items():
        mine = measure_mcts(load_game(ours), args.sims, args.repeats)
        entry = {"gridbots": mine}
        try:
            peer = measure_openspiel_mcts(theirs, args.sims, args.repeats)
        except ImportError:
            entry["openspiel"] = None  # install the `peers` extra to compare
        else:
            entry["openspiel"] = peer
            entry["speedup"] = peer["seconds_per_move"] / mine["seconds_per_move"]
        report[ours] = entry
    report["target"] = "connect4 speedup >= 4"
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
