"""Self-play throughput: batched leaf evaluation against one leaf per network call, same run.

Both play PUCT self-play in this process with the same network, search settings and kind of
starts: the baseline has one game in flight (every onnxruntime call evaluates one leaf), the
batched run `--parallel` games in flight (every call evaluates one leaf of each game). Reported:
moves and recorded positions per second, the ratio, and the onnxruntime batch sizes used (a
histogram and the mean). The network is `--model`, or a fresh network of `--scale` (speed does
not depend on what it learned). `--gumbel M` gives both runs Gumbel AlphaZero's root over M
moves (the selfplay technique's `gumbel`) instead of PUCT's root with Dirichlet noise.

    .venv/bin/python benchmarks/selfplay.py [--game connect4] [--model M.onnx | --scale 2]
        [--sims 100] [--fast-sims 0] [--parallel 128] [--games 256] [--baseline-games 16]
        [--gumbel 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agents import make
from agents.puct.agent import SelfPlaySettings
from engine import parse_game_spec


def fresh_network(game, scale: int, folder: Path) -> Path:
    """An untrained network of `scale`, exported with the family's own code (parity checked)."""
    from models import playerzero
    from models.export import export_keras, keras_seeded

    keras = keras_seeded(0)
    params = {**playerzero.DEFAULTS, "scale": scale}
    shape = playerzero.describe_game(game)
    model = playerzero.export_network(playerzero.build(shape, *playerzero.tower_shape(params),
                                                       params, keras), keras)  # fmt: skip
    state = game.new_initial_state()
    held = [state.observation_tensor()[None], state.legal_actions_mask()[None].astype("f4")]
    meta = {"gridbots.kind": "policy-value", "gridbots.game": game.spec()}
    export_keras(model, folder / "net.onnx", held, meta, ["planes", "mask"], ["policy", "value"])
    return folder / "net.onnx"


def run(game, model: Path, games: int, settings: SelfPlaySettings, threads: int) -> dict:
    agent = make(f"puct:model={model},sims={settings.sims},threads={threads}", game, seed=0)
    starts = [game.new_initial_state(seed=i, opening=2) for i in range(games)]
    rngs = [np.random.default_rng(i) for i in range(games)]
    started = time.perf_counter()
    moves = recorded = 0
    for _, final, decisions in agent.self_play(starts, rngs, settings):
        moves += len(final.history())
        recorded += len(decisions)
    seconds = time.perf_counter() - started
    net = agent.net
    print(
        f"{games} games, {settings.parallel} in flight: {seconds:.1f} s, "
        f"{recorded / seconds:.1f} positions/s, {net.calls} calls",
        file=sys.stderr,
    )
    sizes = np.repeat(list(net.batch_histogram), list(net.batch_histogram.values()))
    return {
        "games": games,
        "parallel": settings.parallel,
        "seconds": round(seconds, 3),
        "moves_per_s": moves / seconds,
        "positions_per_s": recorded / seconds,
        "evaluations_per_s": net.evaluations / seconds,
        "network_calls": net.calls,
        "batch_mean": float(sizes.mean()) if len(sizes) else 0.0,
        "batch_p50": float(np.median(sizes)) if len(sizes) else 0.0,
        "batch_max": int(sizes.max()) if len(sizes) else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="connect4")
    parser.add_argument("--model", type=Path)
    parser.add_argument("--scale", type=int, default=2)
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--fast-sims", type=int, default=0)
    parser.add_argument("--parallel", type=int, default=128)
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--baseline-games", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gumbel", type=int, default=0)
    args = parser.parse_args()
    game = parse_game_spec(args.game)
    with tempfile.TemporaryDirectory() as folder:
        model = args.model or fresh_network(game, args.scale, Path(folder))
        base = SelfPlaySettings(sims=args.sims, fast_sims=args.fast_sims, parallel=1,
                                gumbel=args.gumbel)  # fmt: skip
        batched = SelfPlaySettings(sims=args.sims, fast_sims=args.fast_sims,
                                   parallel=args.parallel, gumbel=args.gumbel)  # fmt: skip
        run(game, model, 2, base, args.threads)  # warm-up: compiled loops, session
        one = run(game, model, args.baseline_games, base, args.threads)
        many = run(game, model, args.games, batched, args.threads)
        again = run(game, model, args.baseline_games, base, args.threads)  # drift check
    baseline = (one["positions_per_s"] + again["positions_per_s"]) / 2
    report = {
        "game": game.spec(),
        "model": str(args.model or f"fresh scale {args.scale}"),
        "sims": args.sims,
        "fast_sims": args.fast_sims,
        "gumbel": args.gumbel,
        "threads": args.threads,
        "one_leaf_per_call": [one, again],
        "batched": many,
        "speedup_positions_per_s": many["positions_per_s"] / baseline,
        "target": "speedup >= 5",
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
