"""Trains an Othello n-tuple network through the td family (models.td) with an Othello League
learning curve, then tracks and registers it as the td chain does; prints the run as JSON.

Self-play, or (--opponent counter) TD learning against the League's own opponent: the
weighted piece counter of benchmarks/othello_league.py with its ε, so the network learns the
values of that very environment. The training is models.td.train itself (resumable from
--checkpoint, exported to ONNX with its parity check); every --curve-every games the network
plays --curve-games League games at one ply and the point records games, the League score
and interval, and the CPU hours of training so far (CPU time, not wall time: the machine is
shared). With --register the finished run is logged to MLflow and registered as a version of
`othello-td` (models.tracking.log_played, the td-long stage's own step).

    NUMBA_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/othello_ntuple.py \
        --tuples lines-corners --phases 8 --opponent counter --games 3000000 \
        --checkpoint data/othello-ntuple/league.npz --out data/othello-ntuple/league
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from othello_league import EPSILON, WPC, league


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", default="rect-2x4")
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--lr-final", type=float, default=0.1)
    parser.add_argument("--epsilon", type=float, default=0.1, help="ε of the ε-greedy self-play")
    parser.add_argument("--rule", default="q", choices=("q", "sarsa"))
    parser.add_argument("--phases", type=int, default=1, help="tables per game stage")
    parser.add_argument(
        "--opponent",
        default="self",
        choices=("self", "counter"),
        help="self-play, or the League's weighted piece counter with the League's ε",
    )
    parser.add_argument(
        "--counter-share", type=float, default=1.0, help="games against the counter, rest self-play"
    )
    parser.add_argument(
        "--heuristic-share",
        type=float,
        default=0.0,
        help="games against the game's heuristic at --heuristic-depth (after the counter's)",
    )
    parser.add_argument("--heuristic-depth", type=int, default=2, choices=(1, 2))
    parser.add_argument("--heuristic-epsilon", type=float, default=0.1)
    parser.add_argument("--init", default="", help="an exported td model whose weights start it")
    parser.add_argument(
        "--tcl", action="store_true", help="temporal coherence learning: each weight's own rate"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--curve-every", type=int, default=250_000)
    parser.add_argument("--curve-games", type=int, default=500)
    parser.add_argument("--curve-seed", type=int, default=0, help="League seed of the curve")
    parser.add_argument(
        "--curve-minimax",
        type=int,
        default=0,
        help="games against study 002's depth-3 minimax per curve point (openings seed 7000)",
    )
    parser.add_argument("--checkpoint", type=Path, required=True, help="an .npz under data/")
    parser.add_argument("--out", type=Path, required=True, help="folder of model.onnx")
    parser.add_argument("--register", action="store_true", help="log to MLflow and register")
    args = parser.parse_args(argv)
    if args.games < 1 or args.curve_every < 1 or args.curve_games < 2:
        print("othello_ntuple: --games, --curve-every >= 1 and --curve-games >= 2", file=sys.stderr)
        return 2

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from agents.td.agent import TDPlayer
    from engine import load_game
    from models import td
    from models.base import ModelError

    game = load_game("othello")
    params = {
        "network": "ntuple",
        "tuples": args.tuples,
        "phases": args.phases,
        "opponent": args.opponent,
        "rule": args.rule,
        "activation": "sigmoid",
        "selection": "egreedy",
        "learning_rate": args.learning_rate,
        "lr_final": args.lr_final,
        "random_factor": args.epsilon,
        "games": args.games,
        "seed": args.seed,
        "heuristic_share": args.heuristic_share,
        "heuristic_depth": args.heuristic_depth,
        "heuristic_epsilon": args.heuristic_epsilon,
        "init": args.init,
        "tcl": args.tcl,
    }
    if args.opponent == "counter":
        params.update(
            counter_weights=list(WPC), counter_epsilon=EPSILON, counter_share=args.counter_share
        )
    history_path = args.checkpoint.with_suffix(".cpu.json")
    spent = json.loads(history_path.read_text()) if history_path.is_file() else {"cpu_s": 0.0}
    clock = {"since": time.process_time()}

    def curve(network, games: int) -> dict[str, float]:
        spent["cpu_s"] += time.process_time() - clock["since"]
        player = TDPlayer(game, network)
        result = league(
            game, lambda s: player.action(s.array), args.curve_games, seed=args.curve_seed
        )
        point = {}
        if args.curve_minimax:
            point["score_minimax3"] = minimax_score(network, args.curve_minimax)
        temp = history_path.with_name(f".{history_path.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(spent))
        os.replace(temp, history_path)
        clock["since"] = time.process_time()
        return {
            "score_league": result["score"],
            "league_low": result["ci95"][0],
            "league_high": result["ci95"][1],
            "cpu_hours": spent["cpu_s"] / 3600,
            **point,
        }

    def minimax_score(network, games: int) -> float:
        """One ply against alphabeta:depth=3,results=flat, openings of seed 7000 (not the
        evaluation's 1000), through the exported file as the zoo plays it."""
        from agents import make
        from engine.match import play_match
        from models.td_export import export

        path = args.checkpoint.with_suffix(".curve.onnx")
        export(game, network, td.check(params), path)
        spec, rival = f"td:model={path}", "alphabeta:depth=3,results=flat"
        match = play_match(
            game,
            lambda s: make(spec, game, seed=s),
            lambda s: make(rival, game, seed=s),
            games,
            seed=7000,
            opening=4,
        )
        return (match.wins + match.draws / 2) / match.games

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:,}"))
    progress_bar = Progress(*columns, TimeElapsedColumn(), console=Console(stderr=True))
    with progress_bar as bar:
        task = bar.add_task(f"training {td.label(params)}", total=args.games)

        def progress(games: int, metrics: dict[str, float]) -> None:
            bar.update(task, completed=games)
            if "score_league" in metrics:
                against = metrics.get("score_minimax3")
                rest = f", minimax d3 {against:.3f}" if against is not None else ""
                bar.console.print(f"{games:,} games: League {metrics['score_league']:.3f}{rest}")

        try:
            result = td.train(
                "othello",
                params,
                args.out,
                progress=progress,
                curve=curve,
                curve_every=args.curve_every,
                checkpoint=args.checkpoint,
            )
        except ModelError as problem:
            print(f"othello_ntuple: {problem}", file=sys.stderr)
            return 2
    entry = {
        "label": td.label(result.params),
        "params": result.params,
        "metrics": {**result.metrics, "training_cpu_hours": spent["cpu_s"] / 3600},
        "history": result.history,
        "artifact": str(result.artifact),
    }
    if args.register:
        from models.tracking import log_played

        os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{Path('mlflow.db').resolve()}")
        name = "othello-td-long-ntuple_systematic"
        entry["registered"] = log_played("othello", name, "td", "othello", entry)
    text = json.dumps(entry, indent=2, default=str)
    (args.out / "run.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
