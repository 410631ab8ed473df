"""`seq:` decision cost on a free time axis (the rounds played) against padding to the trained
length, which every fixed-axis export forced (issue 14: Lazerbike matches at the study's 10,000
games cost about an hour at 11.4 ms a decision).

Plays GAMES games of `seq:model=M` against OPPONENT, seats alternating, seeded. At every `seq`
decision with more than one guarded move the agent scores the position twice, the predictor
fed the rounds played (what `seq:` does with a free axis) and padded to the model's trained
length; both include the history replay and the boards, so the ratio is that of a whole
decision's scoring. The two must agree (the network is causal). Prints one JSON object.

    .venv/bin/python benchmarks/seq_decisions.py --model M [--game lazerbike] \
        [--opponent random:guards=safe] [--games 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from agents import make
from engine import load_game
from engine.match import play_game


class TimedSeq:
    """A `seq:` seat that scores each decision both ways before choosing as `seq:` does."""

    def __init__(self, agent, record: dict[str, list[float]]):
        self.agent, self.record = agent, record
        self.predictor = agent.predictor

    def step(self, state, player: int) -> int:
        moves = self.agent.candidates(state, player)
        if len(moves) > 1:
            got = {}
            for name, padded in (("padded", True), ("played", False)):
                self.predictor.padded = padded
                started = time.perf_counter()
                got[name] = self.agent.scores(state, player, moves)
                self.record[name].append(time.perf_counter() - started)
            self.record["diff"].append(float(np.max(np.abs(got["padded"] - got["played"]))))
            self.record["same_choice"].append(
                float(np.argmax(got["padded"]) == np.argmax(got["played"]))
            )
        return self.agent.step(state, player)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--game", default="lazerbike")
    parser.add_argument("--opponent", default="random:guards=safe")
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    game = load_game(args.game)
    seq = make(f"seq:model={args.model}", game, seed=args.seed)
    if seq.predictor.padded or not seq.predictor.window:
        raise SystemExit("seq_decisions: the model's time axis is fixed; export it free first")
    record: dict[str, list[float]] = {"padded": [], "played": [], "diff": [], "same_choice": []}
    timed = TimedSeq(seq, record)
    opponent = make(args.opponent, game, seed=args.seed + 1)
    started = time.perf_counter()
    for g in range(args.games):
        seats = [timed, opponent] if g % 2 == 0 else [opponent, timed]
        play_game(game, seats, seed=args.seed + g)
    padded_ms = 1000 * statistics.mean(record["padded"])
    played_ms = 1000 * statistics.mean(record["played"])
    print(json.dumps({
        "game": args.game, "model": args.model, "opponent": args.opponent,
        "games": args.games, "decisions": len(record["played"]),
        "trained_length": seq.predictor.window,
        "padded_ms_mean": round(padded_ms, 3), "played_ms_mean": round(played_ms, 3),
        "speedup": round(padded_ms / played_ms, 2),
        "max_abs_score_diff": max(record["diff"], default=0.0),
        "same_choice_share": statistics.mean(record["same_choice"] or [1.0]),
        "seconds": round(time.perf_counter() - started, 1),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
