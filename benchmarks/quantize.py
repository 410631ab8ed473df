"""Int8 policy-value networks (models.quantize) against their float source: milliseconds per
onnxruntime call at the batch sizes a PUCT search uses, one thread each, same run, same
positions, plus the copy's check (policy argmax agreement and largest probability difference,
value differences) and the C yardstick before and after.

    .venv/bin/python benchmarks/quantize.py --game tactics --model M [--positions 400]
        [--repeats 20] [--out copy.onnx]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from neat_generation import yardstick  # a sibling script

from agents.puct.pv_net import PolicyValueNet
from engine import parse_game_spec
from models.quantize import quantize, sample_positions

BATCHES = (1, 4, 8, 16, 32)


def ms_per_call(net: PolicyValueNet, planes: np.ndarray, masks: np.ndarray, repeats: int) -> float:
    net(planes, masks)  # onnxruntime's first call allocates
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        net(planes, masks)
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="tactics")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--positions", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, help="keep the int8 copy here")
    args = parser.parse_args()
    game = parse_game_spec(args.game)
    before = yardstick()
    with tempfile.TemporaryDirectory() as work:
        out = args.out or Path(work) / "int8.onnx"
        started = time.perf_counter()
        check = quantize(args.model, out, game, args.positions, seed=0)
        seconds = time.perf_counter() - started
        planes, masks = sample_positions(game, max(BATCHES), seed=99)  # not the check's
        source, copy = PolicyValueNet(game, args.model, 1), PolicyValueNet(game, out, 1)
        rows = []
        for n in BATCHES:
            a = ms_per_call(source, planes[:n], masks[:n], args.repeats)
            b = ms_per_call(copy, planes[:n], masks[:n], args.repeats)
            rows.append({"batch": n, "float_ms": round(a, 3), "int8_ms": round(b, 3),
                         "speedup": round(a / b, 2)})  # fmt: skip
        sizes = {"float_bytes": args.model.stat().st_size, "int8_bytes": out.stat().st_size}
    after = yardstick()
    print(json.dumps({"game": args.game, "model": str(args.model), "quantize_seconds":
                      round(seconds, 1), "check": check, **sizes, "calls": rows,
                      "yardstick_before": before, "yardstick_after": after}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
