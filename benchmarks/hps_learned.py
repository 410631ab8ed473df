"""Study 004 on tactics: hierarchical portfolio search with a learned evaluation against the same
search with scripted playouts, at equal time per turn.

From a tactics self-play dataset (`gridbots generate tactics selfplay …`), trains value-planes
MLPs of each `--widths` (held-out accuracy), times their evaluation (batched on onnxruntime,
and inside the search loop as HPS runs them, agents.value.leaf) against a scripted playout per
position (the speed side of the study's size / speed / accuracy trade-off), then plays
`hps:ms=T,eval=onnx:MODEL` (the first width) against `hps:ms=T,eval=playout` over seeded
line-ups with sides swapped (benchmarks/tactics_pairings.py). `--partial` reads the committed,
hash-checked shards of a dataset whose generation was stopped, and says so in the output.

    .venv/bin/python benchmarks/hps_learned.py --data DIR [--partial] [--widths 64,256]
        [--ms 50] [--scenarios 100] [--workers 2] [--every N] [--cell-encoder E]
        [--pool mean] [--relate H] [--playout-weight W] [--plies all] [--model M]
        --out reports/study-004

The study's "Master Bot" data is HPS_P playing itself on seeded line-ups:
`gridbots generate tactics imitation --agents "hps:ms=10,eval=playout,hps:ms=10,eval=playout"
--w 0 --y 1 ...` (every game one line, X games).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COLUMNS = ["game_id", "ply", "player", "state", "outcome"]  # what value-planes reads


def shard_tables(root: Path, partial: bool, table: str, columns: list[str] | None = None):
    """(shard tables of `table`, counts): every shard, or with `partial` the committed ones,
    each hash-checked against the manifest and its row count checked, read one at a time."""
    from features.errors import DataError
    from features.store import read_manifest, read_verified, shard_path

    manifest = read_manifest(root)
    if not manifest.get("complete") and not partial:
        raise DataError(f"{root}: the dataset is not complete (--partial reads what is)")
    shards = manifest["shards"]

    def tables():
        for k in sorted(shards, key=int):
            data = read_verified(shard_path(root, table, int(k)), shards[k]["sha256"][table])
            part = pq.read_table(pa.BufferReader(data), columns=columns)
            if part.num_rows != shards[k]["rows"][table]:
                raise DataError(f"shard {k} has {part.num_rows} {table} rows, the manifest says "
                                "otherwise")  # fmt: skip
            yield part

    return tables(), {"shards": len(shards), "planned": manifest["planned_shards"]}


def positions_table(root: Path, partial: bool, every: int = 1) -> tuple[pa.Table, dict]:
    """The dataset's positions, only the columns value-planes reads and every `every`-th ply
    of each game: 6,000 tactics games hold 220k positions of 80 KB (planes and masks), more
    than memory."""
    parts, counts = shard_tables(root, partial, "positions", COLUMNS)
    if every > 1:
        parts = (p.filter(pa.array(p.column("ply").to_numpy() % every == 0)) for p in parts)
    return pa.concat_tables(list(parts)), counts


def replayed_table(root: Path, partial: bool, game, every: int) -> tuple[pa.Table, dict]:
    """Every `every`-th state of each game replayed from its games table, chance nodes
    included (`features.encode.replayed_positions`): the search's leaves are mostly chance
    nodes (a unit's draw pending), which no decision-point row is."""
    from features.encode import replayed_positions

    parts, counts = shard_tables(root, partial, "games")
    return pa.concat_tables([replayed_positions(g, game, every) for g in parts]), counts


def whole_games(positions: pa.Table, limit: int) -> pa.Table:
    """At most `limit` positions, as whole games of a seeded shuffle (held-out splits stay by
    game): tactics' planes are 45 KB a row, and every position gives two rows."""
    ids = positions.column("game_id").to_numpy()
    if len(ids) <= limit:
        return positions
    games, counts = np.unique(ids, return_counts=True)
    order = np.random.default_rng(0).permutation(len(games))
    keep = games[order[np.cumsum(counts[order]) <= limit]]
    return positions.filter(pa.array(np.isin(ids, keep)))


def evaluation_speed(game, model: Path | None, states: np.ndarray, repeats: int = 3,
                     in_loop: bool = False) -> float:  # fmt: skip
    """Microseconds per position: one scripted playout each, the network on onnxruntime over
    one batch, or (`in_loop`) the network as the search loop computes it (agents.value.leaf;
    NaN where the file is not a chain the loop runs)."""
    best = float("inf")
    if model is None:
        playout = game.portfolio.playout
        playout(states[0].copy(), 0)  # compile outside the clock
        for _ in range(repeats):
            began = time.perf_counter()
            for s in states:
                playout(s.copy(), 0)
            best = min(best, time.perf_counter() - began)
    elif in_loop:
        from agents.value.leaf import leaf, loop_values

        found = leaf(game, model)
        if found is None:
            return float("nan")
        weights = found[1]
        loop_values(game, states[:8], 0, weights)
        for _ in range(repeats):
            began = time.perf_counter()
            loop_values(game, states, 0, weights)
            best = min(best, time.perf_counter() - began)
    else:
        from agents.search.hps import PlanesValue

        value = PlanesValue(game, model)
        movers = np.zeros(len(states), dtype=np.int64)
        value(states[:8], movers[:8], 0)
        for _ in range(repeats):
            began = time.perf_counter()
            value(states, movers, 0)
            best = min(best, time.perf_counter() - began)
    return 1e6 * best / len(states)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--partial", action="store_true")
    parser.add_argument("--max-positions", type=int, default=24_000)  # 2 rows of 45 KB each
    parser.add_argument("--game", default="tactics")
    parser.add_argument("--widths", default="64,256")
    parser.add_argument("--every", type=int, default=1, help="keep every N-th ply of a game")
    parser.add_argument(
        "--plies",
        choices=("decisions", "all"),
        default="decisions",
        help="decisions: the dataset's positions; all: every ply replayed, chance nodes too",
    )
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--cell-encoder", type=int, default=8)
    parser.add_argument("--pool", choices=("none", "mean"), default="none")
    parser.add_argument(
        "--relate",
        type=int,
        default=0,
        help="with --pool mean: width of the relational block (value-mlp relate)",
    )
    parser.add_argument(
        "--playout-weight",
        type=float,
        default=0.0,
        help="targets: (1 - w) result + w scripted playout (value-planes)",
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--ms", type=float, default=50.0)
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--model",
        type=Path,
        help="a trained value-planes MLP: time and play it "
        "instead of training (the data still gives the timed positions)",
    )
    args = parser.parse_args()

    from tactics_pairings import play  # the script beside this one

    from engine import parse_game_spec
    from features import encode as enc
    from models import value_mlp

    game = parse_game_spec(args.game)
    began = time.perf_counter()
    if args.plies == "all":
        positions, read = replayed_table(args.data, args.partial, game, args.every)
    else:
        positions, read = positions_table(args.data, args.partial, args.every)
    positions = whole_games(positions, args.max_positions)
    arrays = enc.value_planes(positions, game, playout_weight=args.playout_weight)
    states = enc.list_matrix(positions.column("state"), len(positions["state"][0]), np.int64)
    sample = states[np.random.default_rng(0).choice(len(states), 256, replace=False)]
    report = {"data": str(args.data), **read, "positions": positions.num_rows,
              "rows": len(arrays["outcome"]), "plies": args.plies, "networks": []}  # fmt: skip
    report["playout_us_per_position"] = evaluation_speed(game, None, sample)
    models = []
    for width in () if args.model else (int(w) for w in args.widths.split(",")):
        params = {"layers": args.layers, "width": width, "epochs": args.epochs,
                  "batch_size": 256, "cell_encoder": args.cell_encoder, "pool": args.pool,
                  "relate": args.relate,
                  "holdout": 0.2, "seed": 0}  # fmt: skip
        result = value_mlp.train(arrays, {"encoding": "value-planes", "game": game.spec()},
                                 params, args.out / f"value-w{width}")  # fmt: skip
        models.append(result.artifact)
        report["networks"].append({
            "width": width, "cell_encoder": args.cell_encoder, "pool": args.pool,
            "relate": args.relate,
            "playout_weight": args.playout_weight, "model": str(result.artifact),
            **{k: result.metrics[k] for k in ("held_out_accuracy", "majority_accuracy",
                                              "held_out_brier", "held_out_draw_share")},
            "us_per_position": evaluation_speed(game, result.artifact, sample),
            "in_loop_us_per_position": evaluation_speed(game, result.artifact, sample,
                                                        in_loop=True),
        })  # fmt: skip
    if args.model:
        models.append(args.model)
        report["networks"].append({"model": str(args.model), **{
            f"{name}us_per_position": evaluation_speed(game, args.model, sample, in_loop=loop)
            for name, loop in (("", False), ("in_loop_", True))}})  # fmt: skip
    learned = f"hps:ms={args.ms:g},eval=onnx:{models[0]}"
    playout = f"hps:ms={args.ms:g},eval=playout"
    report["match"] = play(args.game, learned, playout, args.scenarios, args.seed, args.workers,
                           args.out / "match")  # fmt: skip
    report["match"].pop("bots", None)
    report["wall_seconds"] = time.perf_counter() - began
    (args.out / "summary.json").write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    import sys

    from features.errors import DataError

    try:
        main()
    except DataError as error:  # an incomplete or damaged dataset: one line, exit code 2
        print(f"hps_learned: {error}", file=sys.stderr)
        sys.exit(2)
