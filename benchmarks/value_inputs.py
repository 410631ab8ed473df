"""Value-network inputs: microseconds per state of `agents.value.features.ValueEncoder` on a batch
of leaves (what `alphabeta:eval=onnx`, HPS's learned leaves and the TD agents encode) against the
same encoder called once per state, in the same run.

Every encoding that has a compiled batch loop is measured on the games that offer it, over
`--states` reachable positions (seeded random play). The batched path must beat the per-state
calls by a wide margin: a Python call per leaf is what the batch loops exist to remove.

    .venv/bin/python benchmarks/value_inputs.py [--states 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from agents.value.features import ValueEncoder
from engine import load_game

CASES = (
    ("connect4", "value-planes"),
    ("connect4", "count-onehot"),
    ("connect4", "board-onehot"),
    ("othello", "seat-observation"),
    ("othello", "value-planes"),
    ("othello", "count-onehot"),
)


def positions(game, count: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` non-terminal states after seeded random openings of 0-29 moves (the protocol's
    `opening` scenario), with their sides to move."""
    states, players = [], []
    k = 0
    while len(states) < count:
        state = game.new_initial_state(seed=k, opening=k % 30)
        k += 1
        if not state.is_terminal() and state.current_player() >= 0:
            states.append(state.array.copy())
            players.append(state.current_player())
    return np.stack(states), np.array(players, dtype=np.int64)


def best_seconds(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def measure(name: str, encoding: str, count: int, repeats: int) -> dict:
    game = load_game(name)
    states, players = positions(game, count)
    encoder = ValueEncoder(game, encoding)

    def batched() -> np.ndarray:
        return encoder.batch(states, players)

    def one_by_one() -> np.ndarray:
        return np.stack([encoder(s, int(p)) for s, p in zip(states, players, strict=True)])

    assert np.array_equal(batched(), one_by_one()), f"{name} {encoding}: the paths disagree"
    batch_us = best_seconds(batched, repeats) / count * 1e6
    call_us = best_seconds(one_by_one, repeats) / count * 1e6
    return {"game": name, "encoding": encoding, "states": count,
            "batched_us_per_state": round(batch_us, 3), "per_call_us_per_state": round(call_us, 3),
            "speedup": round(call_us / batch_us, 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name, encoding in CASES:
        print(json.dumps(measure(name, encoding, args.states, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
