"""The n-tuple report's figures and the zoo card of its best network (issue 67).

Reads the training runs (benchmarks/othello_ntuple.py's run.json and checkpoint histories), the
shape sweep lines and the evidence JSONs measured on the zoo file (commands on the card), then
writes reports/othello-ntuple/{curve.json, curve.png} and, with --card DIR, DIR/card.{json,md}
(the second session wrote zoo/othello/td-ntuple's card this way; that network now lives in
reports/othello-ntuple/zoo-5m and the zoo carries another, so no card is written unless named).

    .venv/bin/python benchmarks/othello_ntuple_report.py --run data/othello-ntuple/league/run.json \
        --curve "LABEL=data/othello-ntuple/selfplay-rect-2x3.history.json" --made made.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPORT = Path("reports/othello-ntuple")
SPEC = "td:model={dir}/model.onnx"
PUBLISHED = 0.96  # Jaśkowski 2014's best network in the online League: "nearly 96%" (abstract)


def curve_of(history: dict, every: int, after: dict | None = None) -> list[dict]:
    """(games, League score, interval, CPU hours, and the depth-3 minimax score where the run
    measured it) at each curve point of a training history (models.td.train records a point
    every `every` games, and one at the end); `after`: the last point of the run whose network
    this one started from (--init), whose games and hours it continues."""
    scores, last = history.get("score_league", []), int(history["games"][-1])
    games0, hours0 = (after["games"], after["cpu_hours"]) if after else (0, 0.0)
    minimax = history.get("score_minimax3", [])
    return [
        {
            "games": games0 + min((i + 1) * every, last),
            "score": scores[i],
            "ci95": [history["league_low"][i], history["league_high"][i]],
            "cpu_hours": hours0 + history["cpu_hours"][i],
            **({"minimax3": minimax[i]} if i < len(minimax) else {}),
        }
        for i in range(len(scores))
    ]


def read_curve(text: str, after: dict | None = None) -> list[dict]:
    """PATH[@EVERY] of a history (.history.json) or a run.json (its `history`)."""
    path, _, every = text.partition("@")
    data = json.loads(Path(path).read_text())
    return curve_of(data.get("history", data), int(every or 250_000), after)


def plot(curves: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(2, 2, figsize=(12, 11))
    axes = grid[0]
    axes[1].sharey(axes[0])
    palette = plt.get_cmap("tab20")  # 20 colours: the sessions' runs stay apart
    colour = {name: palette(i % 20) for i, name in enumerate(curves)}
    for name, rows in curves.items():
        points = [r for r in rows if "minimax3" in r]
        if points:
            grid[1][0].plot([r["games"] / 1e6 for r in points], [r["minimax3"] for r in points],
                            marker="o", ms=3, label=name, color=colour[name])  # fmt: skip
            grid[1][1].plot([r["cpu_hours"] for r in points], [r["minimax3"] for r in points],
                            marker="o", ms=3, label=name, color=colour[name])  # fmt: skip
    for ax in grid[1]:
        ax.axhline(0.9, color="red", ls=":", lw=1, label="issue 67 floor: 0.9")
        ax.set_ylim(0.0, 1.0)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    grid[1][0].set_xlabel("training games (millions)")
    grid[1][1].set_xlabel("training CPU hours (one core)")
    grid[1][0].set_ylabel("vs study 002 minimax depth 3 (100-200 games, seed 7000)")
    for name, rows in curves.items():
        games = [r["games"] / 1e6 for r in rows]
        hours = [r["cpu_hours"] for r in rows]
        score = [r["score"] for r in rows]
        low = [r["score"] - r["ci95"][0] for r in rows]
        high = [r["ci95"][1] - r["score"] for r in rows]
        axes[0].errorbar(games, score, yerr=[low, high], marker="o", ms=3, capsize=2, label=name,
                         color=colour[name])  # fmt: skip
        axes[1].plot(hours, score, marker="o", ms=3, label=name, color=colour[name])
    for ax in axes:
        ax.axhline(PUBLISHED, color="grey", ls="--", lw=1, label="Jaśkowski 2014, evolved: ~0.96")
        ax.axhline(0.97, color="red", ls=":", lw=1, label="issue 67 floor: 0.97")
        ax.set_ylim(0.3, 1.0)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    axes[0].set_xlabel("training games (millions)")
    axes[1].set_xlabel("training CPU hours (one core)")
    axes[0].set_ylabel("Othello League score at one ply (400-500 games, 95% CI)")
    handles, labels = axes[0].get_legend_handles_labels()
    floor = grid[1][0].get_legend_handles_labels()
    handles.append(floor[0][-1])
    labels.append("issue 67 floor against the minimax: 0.9")
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7.5)  # one legend for all
    fig.suptitle("Othello n-tuple networks: League score while training")
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    temp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(temp, dpi=110)
    temp.replace(path)


def evidence_item(name: str, data: dict, **fields) -> dict:
    score = data["score"]
    low, high = data.get("ci95") or [data["score_low"], data["score_high"]]
    games = data["games"]
    wdl = f"{data['wins']}-{data['draws']}-{data['losses']}"
    return {
        "figure": name,
        "value": round(score, 4),
        "interval": [round(low, 4), round(high, 4)],
        "games": games,
        "wins-draws-losses": wdl,
        **fields,
    }


def pooled(paths: list[Path]) -> dict:
    """Several runs of the same timed match pooled into one figure (a search at 20 ms a move
    on a shared machine plays differently from run to run; no run is picked)."""
    from engine.tournament import wilson_interval

    runs = [json.loads(path.read_text()) for path in paths]
    wins, draws, losses = (sum(r[k] for r in runs) for k in ("wins", "draws", "losses"))
    games = wins + draws + losses
    score = (wins + draws / 2) / games
    return {
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "games": games,
        "score": score,
        "ci95": list(wilson_interval(score, games)),
        "files": [path.name for path in paths],
        "runs": "; ".join(
            f"{path.name}: {r['wins']}-{r['draws']}-{r['losses']}, {r['score']:.4f}"
            for path, r in zip(paths, runs, strict=True)
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument(
        "--curve",
        action="append",
        default=[],
        help="LABEL=HISTORY.json of another training run; >LABEL[@GAMES]: it started from "
        "that curve's network (its last point, or the point at GAMES)",
    )
    parser.add_argument("--made", type=Path, required=True, help="JSON: the card's `made`")
    parser.add_argument("--run-every", type=int, default=250_000, help="--run's curve spacing")
    parser.add_argument(
        "--start", default="", help="HISTORY[@EVERY] of the run --run's network started from"
    )
    parser.add_argument("--title", default="TD/SARSA, lines and corner blocks, 8 game stages")
    parser.add_argument("--start-label", default="the run it started from")
    parser.add_argument("--run-label", default="the zoo network")
    parser.add_argument(
        "--card",
        type=Path,
        help="the entry folder whose card.{json,md} to write (its model.onnx"
        " and evidence/): without it only curve.json and curve.png are written",
    )
    parser.add_argument("--curves-only", action="store_true", help="(the default; kept)")
    args = parser.parse_args(argv)
    from models.zoo import file_entry, write_card

    run = json.loads(args.run.read_text())
    curves = {}
    after = None
    if args.start:
        curves[args.start_label] = read_curve(args.start)
        after = curves[args.start_label][-1]
    curves[args.run_label] = curve_of(run["history"], args.run_every, after)
    for item in args.curve:  # LABEL=PATH[>EARLIER[@GAMES]]: continues EARLIER's curve there
        label, path = item.split("=", 1)
        path, _, earlier = path.partition(">")
        name, _, at = earlier.partition("@")
        rows = curves[name] if name else []
        start = next(r for r in rows if r["games"] == int(at)) if at else rows[-1] if rows else None
        curves[label] = read_curve(path, start)
    REPORT.mkdir(parents=True, exist_ok=True)
    (REPORT / "curve.json").write_text(json.dumps(curves, indent=2) + "\n")
    plot(curves, REPORT / "curve.png")
    if args.curves_only or args.card is None:
        return 0

    entry = args.card
    evidence = entry / "evidence"
    league = json.loads((evidence / "league-4000.json").read_text())
    minimax = json.loads((evidence / "vs-minimax-d3.json").read_text())
    search = pooled(sorted(evidence.glob("alphabeta-ms20*.json")))
    items = [
        evidence_item(
            "Othello League score at one ply (zoo file, this card's spec)",
            league,
            opponent="the League's weighted piece counter (Yoshioka et al. 1999) at one ply; both "
            "sides play a uniformly random move with probability 0.1 on every move",
            seeded_openings="none: the ε-random moves vary the games (League seed 0)",
            sides_swapped="colours alternate game by game",
            spec=SPEC,
            file="evidence/league-4000.json",
            floor=">= 0.97 over >= 1,000 games (issue 67 item 2)",
            status="measured",
            command="nice -n 10 .venv/bin/python benchmarks/othello_league.py "
            '--candidate "td:model={dir}/model.onnx" --games 4000 --seed 0',
        ),
        evidence_item(
            "against study 002's minimax at depth 3, one ply, no search (zoo file)",
            minimax,
            opponent="alphabeta:depth=3,results=flat: study 002's minimax "
            "(tests/test_study_minimax.py)",
            seeded_openings="4 random plies, scenario seeds from 1000",
            sides_swapped="yes, every opening twice",
            spec=SPEC,
            file="evidence/vs-minimax-d3.json",
            floor=">= 0.9 (issue 67 item 2)",
            status="measured",
            command='nice -n 10 .venv/bin/gridbots match othello "td:model={dir}/model.onnx" '
            '"alphabeta:depth=3,results=flat" --games 400 --seed 1000 --opening 4 --json',
        ),
        evidence_item(
            "inside alpha-beta at equal time: the network as leaf evaluation, 20 ms a move",
            search,
            runs=search["runs"],
            opponent="alphabeta:ms=20 (the game's hand-written heuristic, same search core)",
            seeded_openings="4 random plies, scenario seeds from 1000",
            sides_swapped="yes, every opening twice",
            spec="td:model={dir}/model.onnx,ms=20",
            file=", ".join(f"evidence/{name}" for name in search["files"]),
            floor=">= 0.7 over >= 200 games (issue 67 item 4)",
            status="measured",
            command='nice -n 10 .venv/bin/gridbots match othello "td:model={dir}/model.onnx,ms=20" '
            '"alphabeta:ms=20" --games 200 --seed 1000 --opening 4 --json',
        ),
    ]
    for item, floor in zip(items, (0.97, 0.9, 0.7), strict=True):
        item["floor"] += ": met" if item["value"] >= floor else ": not met"
    from agents.td.agent import read_network
    from engine import load_game

    params = run["params"]
    network = read_network(entry / "model.onnx", load_game("othello"))[0]
    lut = f"{network.lut.size:,}"
    card = {
        "schema": 1,
        "game": "othello",
        "name": "td-ntuple",
        "title": f"Othello n-tuple network ({args.title})",
        "spec": SPEC,
        "model": "model.onnx",
        "what": {
            "family": "td (n-tuple network, agents/td/ntuple.py)",
            "network": f"tuples {params['tuples']}: 11 tables shared over the 8 board symmetries, "
            f"84 lookups, x {params['phases']} game stages (occupied cells * 8 // 65)"
            + f", {lut} weights",
            "output": "sigmoid: white's (seat 1's) win estimate; black plays 1 - v",
            "search at play time": "none: one ply, greedy (the spec above); `,ms=20` or "
            "`,depth=N` makes it the leaf evaluation of the shared alpha-beta core",
        },
        "made": json.loads(args.made.read_text()),
        "files": [],
        "evidence": items,
    }
    files = [("model.onnx", "n-tuple network (ONNX, float32 tables): what the spec plays")]
    files += [(f"evidence/{p.name}", "evidence") for p in sorted(evidence.glob("*.json"))]
    card["files"] = [file_entry(entry, path, role) for path, role in files]
    write_card(entry, card, str(entry))
    print(json.dumps({"curves": {k: v[-1] if v else None for k, v in curves.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
