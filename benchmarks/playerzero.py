"""PlayerZero strength: solved-position rates, matches against classical search, seed 001 Table 2.

Every match plays seeded openings, each twice with sides swapped (engine.tournament), and reports
W/D/L, the score with its 95% Wilson interval and each side's mean / p95 time per move.

    .venv/bin/python benchmarks/playerzero.py optimal --model M.onnx [--sims 150] [--ms 0]
        optimal-move rate on the 1,000 solved Connect 4 positions: puct, the raw policy,
        alphabeta:ms=10 and alphabeta:ms=100 (all measured in this run)
    .venv/bin/python benchmarks/playerzero.py match GAME SPEC_A SPEC_B [--games 200] [--opening 4]
    .venv/bin/python benchmarks/playerzero.py table2 GAME --first M1.onnx --last MN.onnx
        [--games 100]: seed 001 Table 2 at equal simulations: MCTS 1000 vs MCTS 4000, PZ-1 vs
        MCTS 1000 and 4000 (PZ at the same count), PZ-N vs PZ-1, PZ-N vs MCTS 1000 and 4000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agents import make
from engine import parse_game_spec
from engine.tournament import MatchConfig, play_pairing, summarize_pairing

#: seed 001 Table 2 (160 scenarios x 2 sides): A1, A2, A1 wins, A2 wins, draws, ms A1, ms A2
TABLE2 = [
    ("MCTS 1000", "MCTS 4000", 139, 159, 22, 15828, 56806),
    ("PlayerZero 1", "MCTS 1000", 157, 150, 13, 24130, 19701),
    ("PlayerZero 1", "MCTS 4000", 150, 157, 14, 24165, 67277),
    ("PlayerZero 4", "PlayerZero 1", 164, 140, 16, 28426, 31147),
    ("PlayerZero 4", "MCTS 1000", 169, 131, 20, 22968, 20045),
    ("PlayerZero 4", "MCTS 4000", 163, 138, 19, 22352, 69141),
]


def match(game_spec: str, spec_a: str, spec_b: str, games: int, opening: int, seed: int = 0):
    game = parse_game_spec(game_spec)
    started = time.perf_counter()
    config = MatchConfig(games=games, seed=seed, opening=opening)
    rows = play_pairing(game, spec_a, spec_b, config, make_seat=make)
    summary = summarize_pairing(rows)
    keep = ("wins", "draws", "losses", "games", "score", "score_low", "score_high", "elo")
    return {
        "game": game_spec,
        "a": spec_a,
        "b": spec_b,
        **{k: summary[k] for k in keep},
        "ms_per_move": {b["spec"]: round(b["time_mean_ms"], 2) for b in summary["bots"]},
        "ms_p95": {b["spec"]: round(b["time_p95_ms"], 2) for b in summary["bots"]},
        "seconds": round(time.perf_counter() - started, 1),
    }


def optimal(model: str, sims: int, ms: float, limit: int) -> dict:
    from agents.connect4_bench import agent_rate, policy_rate, read_positions
    from agents.puct.pv_net import PolicyValueNet

    rows = read_positions(limit=limit)
    budget = f"ms={ms:g}" if ms else f"sims={sims}"
    specs = [f"puct:model={model},{budget}", "alphabeta:ms=10", "alphabeta:ms=100"]
    game = parse_game_spec("connect4")
    results = [policy_rate(PolicyValueNet(game, model), rows)]
    results += [agent_rate(spec, rows) for spec in specs]
    return {"positions": len(rows), "results": results,
            "target": "puct <= 20 ms/move: optimal >= 0.95; raw policy >= 0.85"}  # fmt: skip


def table2(game_spec: str, first: str, last: str, games: int, opening: int) -> dict:
    def pz(model: str, sims: int) -> str:
        return f"puct:model={model},sims={sims}"

    pairings = [
        ("mcts:sims=1000", "mcts:sims=4000"),
        (pz(first, 1000), "mcts:sims=1000"),
        (pz(first, 4000), "mcts:sims=4000"),
        (pz(last, 1000), pz(first, 1000)),
        (pz(last, 1000), "mcts:sims=1000"),
        (pz(last, 4000), "mcts:sims=4000"),
    ]
    ours = [match(game_spec, a, b, games, opening) for a, b in pairings]
    study = [{"a1": a1, "a2": a2, "a1_wins": w1, "a2_wins": w2, "draws": d,
              "a1_score": (w1 + d / 2) / (w1 + w2 + d), "ms_a1": t1, "ms_a2": t2}
             for a1, a2, w1, w2, d, t1, t2 in TABLE2]  # fmt: skip
    return {"gridbots": ours, "seed001_table2": study}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    o = sub.add_parser("optimal")
    o.add_argument("--model", required=True)
    o.add_argument("--sims", type=int, default=150)
    o.add_argument("--ms", type=float, default=0.0)
    o.add_argument("--limit", type=int, default=0)
    m = sub.add_parser("match")
    m.add_argument("game")
    m.add_argument("a")
    m.add_argument("b")
    m.add_argument("--games", type=int, default=200)
    m.add_argument("--opening", type=int, default=4)
    m.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("table2")
    t.add_argument("game")
    t.add_argument("--first", type=Path, required=True)
    t.add_argument("--last", type=Path, required=True)
    t.add_argument("--games", type=int, default=100)
    t.add_argument("--opening", type=int, default=4)
    args = parser.parse_args()
    if args.what == "optimal":
        report = optimal(args.model, args.sims, args.ms, args.limit)
    elif args.what == "match":
        report = match(args.game, args.a, args.b, args.games, args.opening, args.seed)
    else:
        report = table2(args.game, str(args.first), str(args.last), args.games, args.opening)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
