"""studies/territory/README.md: gridbots' NEAT runs beside study 003's published figures.

Per training case: the fitness curves of every seed (best dark, mean light, the study's best as
a dashed line), the champion's topology and game (first / middle / last position), and the
targets: reach the study's best fitness in fewer generations than it needed, or a higher
fitness in as many (median over seeds). Then the decodings compared, and the tournament on the
symmetric duel (the comparison with search the study never made).
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

#: study 003 §6 (and the digest notes-001-003.md): generations, best fitness %, rounds of the
#: champion's game, hidden nodes / connections, production / attack / transport moves
STUDY: dict[str, dict[str, Any]] = {
    "expand-alone": {
        "generations": 80,
        "best": 79.7,
        "rounds": 1140,
        "topology": "7 / 150",
        "moves": "568 / 43 / 529 (636 guided)",
    },
    "beat-red-easy": {
        "generations": 261,
        "best": 93.8,
        "rounds": 102,
        "topology": "6 / 114",
        "moves": "66 / 28 / 8",
    },
    "beat-red-hard": {
        "generations": 128,
        "best": 93.8,
        "rounds": 1020,
        "topology": "2 / 116",
        "moves": "313 / 109 / 598",
    },
    "against-red": {
        "generations": 162,
        "best": 65.1,
        "rounds": 99,
        "topology": "2 / 137",
        "moves": "62 / 31 / 6 (73 guided)",
    },
    "coevolution": {
        "generations": 25,
        "best": None,
        "rounds": 5000,
        "topology": "3 / 146 (blue), 3 / 136 (red)",
        "moves": "blue 1106 / 1053 / 2841, red 1294 / 260 / 3445 (gen 25)",
    },
}
MCTS_TARGET = ("mcts:sims=200", 0.7)


def first_reaching(history: list[dict[str, float]], level: float) -> int | None:
    """The first generation (counted from 1) whose best fitness reaches `level`."""
    for row in history:
        if row["best_fitness"] >= level - 1e-9:
            return int(row["generation"]) + 1
    return None


def case_verdict(case: str, seeds: dict[str, Any]) -> dict[str, Any]:
    """Median over seeds of the generations to the study's best and of the fitness at the
    study's generation count; whether either target is met."""
    study = STUDY[case]
    histories = [s["history"] for s in seeds.values()]
    finals = [h[-1]["best_fitness"] for h in histories]
    out: dict[str, Any] = {"median_final": statistics.median(finals), "seeds": len(histories)}
    if study["best"] is None:
        return out
    reach = [first_reaching(h, study["best"]) for h in histories]
    ranked = sorted(r if r is not None else float("inf") for r in reach)
    median_reach = statistics.median(ranked)
    out["reach"] = reach
    out["median_reach"] = median_reach
    at_study = [
        h[study["generations"] - 1]["best_fitness"]
        for h in histories
        if len(h) >= study["generations"]
    ]
    out["median_at_study"] = (
        statistics.median(at_study) if len(at_study) == len(histories) else None
    )
    fewer = median_reach < study["generations"]
    higher = out["median_at_study"] is not None and out["median_at_study"] > study["best"]
    out["met"] = bool(fewer or higher)
    return out


def neat_seeds(run: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """A NEAT training's run.json (the train stage's: one sweep configuration per seed) as its
    case, {seed: its generations' rows and its champion's game statistics} and the kept seed."""
    seeds = {}
    for config in run["sweep"]:
        history = config["history"]
        columns = zip(*history.values(), strict=True)
        rows = [dict(zip(history, values, strict=True)) for values in columns]
        stats = {k[len("champion_") :]: v for k, v in config["metrics"].items()
                 if k.startswith("champion_")}  # fmt: skip
        seeds[str(config["params"]["seed"])] = {"history": rows, "champion_stats": stats}
    return run["params"]["case"], seeds, str(run["params"]["seed"])


def topology(genome: dict[str, Any]) -> str:
    hidden = sum(1 for n in genome["nodes"] if n["id"] >= genome["num_outputs"])
    enabled = sum(1 for c in genome["connections"] if c["enabled"])
    return f"{hidden} / {enabled}"


def curves_png(case: str, seeds: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for index, (seed, data) in enumerate(sorted(seeds.items())):
        history = data["history"]
        generations = [row["generation"] + 1 for row in history]
        colour = plt.cm.Blues(0.9 - 0.2 * index)
        axes.plot(
            generations,
            [r["best_fitness"] for r in history],
            color=colour,
            label=f"seed {seed} best",
        )
        axes.plot(
            generations,
            [r["mean_fitness"] for r in history],
            color=colour,
            alpha=0.35,
            label=f"seed {seed} mean",
        )
    study = STUDY[case]
    if study["best"] is not None:
        axes.axhline(
            study["best"],
            color="#a1261f",
            linestyle="--",
            linewidth=1,
            label=f"study: {study['best']}% after {study['generations']} generations",
        )
    axes.set_xlabel("generation")
    axes.set_ylabel("fitness" + (" (%)" if study["best"] is not None else " (mean payoff)"))
    axes.set_title(f"{case}: best and mean fitness per generation", fontsize=9)
    axes.legend(fontsize=6, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def _tournament_lines(summary: dict[str, Any], bots: list[str]) -> list[str]:
    lines = ["| bot | opponent | W / D / L | score | 95% interval |", "|---|---|---|---:|---|"]
    for s in summary["pairings"]:
        if s["spec_a"] in bots:
            lines.append(
                f"| {s['spec_a']} | `{s['spec_b']}` | {s['wins']} / {s['draws']} / "
                f"{s['losses']} | {s['score']:.3f} | [{s['score_low']:.3f}, "
                f"{s['score_high']:.3f}] |"
            )
    return lines


def write_study_report(root: Path, params: dict[str, Any], out: Path) -> Path:
    root, out = Path(root), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    models = params["territory"]["models"]
    lines = [
        "# Territory and NEAT: gridbots beside study 003",
        "",
        "Built by `dvc repro` (stage `study-territory`) from `trained/territory/*/run.json` and "
        "`evaluation/territory/summary.json`. Fitness functions are the study's (reconstructed "
        "so that they reproduce every figure it reports); generations count from 1; medians over "
        "the seeds listed. The study reports single runs.",
        "",
        "| model | case | study: generations, best % (rounds) | ours: generations, median best "
        "(seeds) | generations to the study's best (per seed) | target met | champion rounds | "
        "hidden / connections: study, ours |",
        "|---|---|---|---|---|---|---:|---|",
    ]
    sections: list[str] = []
    for name in models:
        run_path = root / "trained" / "territory" / name / "run.json"
        if not run_path.is_file():
            lines.append(f"| {name} | | | not trained yet | | | | |")
            continue
        run = json.loads(run_path.read_text())
        case, seeds, kept = neat_seeds(run)
        study, verdict = STUDY[case], case_verdict(case, seeds)
        generations = max(len(s["history"]) for s in seeds.values())
        best_seed = seeds[kept]
        champion = json.loads((run_path.parent / "champion.json").read_text())
        reach = ", ".join("-" if r is None else str(r) for r in verdict.get("reach", [])) or "-"
        met = {True: "yes", False: "no"}.get(verdict.get("met"), "n/a")
        decoding = run["params"].get("decoding", "guided")
        study_text = (
            f"{study['generations']}, {study['best']} ({study['rounds']})"
            if study["best"] is not None
            else f"{study['generations']}, blue 231 / red 191 payoff ({study['rounds']})"
        )
        lines.append(
            f"| {name} ({decoding}) | {case} | {study_text} | {generations}, "
            f"{verdict['median_final']:.2f} ({verdict['seeds']}) | {reach} | {met} | "
            f"{best_seed['champion_stats']['moves']:.0f} | {study['topology']}; "
            f"{topology(champion)} |"
        )
        curve = f"{name}-fitness.png"
        curves_png(case, seeds, out / curve)
        game_png = run_path.parent / "game.png"
        if game_png.is_file():
            shutil.copyfile(game_png, out / f"{name}-game.png")
        stats = best_seed["champion_stats"]
        sections += [
            "",
            f"## {name}",
            "",
            f"Champion (seed {kept}, fitness {champion['fitness']:.2f}): "
            f"{stats['productions']:.0f} productions / {stats['attacks']:.0f} attacks / "
            f"{stats['transports']:.0f} transports, {stats['guided']:.0f} guided, "
            f"{stats['moves']:.0f} rounds, {stats['tiles']:.0f} tiles at the end "
            f"(study: {study['moves']}). ONNX parity with neat-python: {run['parity']}.",
            "",
            f"![fitness]({curve})",
            "",
            f"![game]({name}-game.png)",
        ]
    summary_path = root / "evaluation" / "territory" / "summary.json"
    lines += ["", "## Tournament on the symmetric duel", ""]
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text())
        lines.append(
            f"`{summary['game']}`, {summary['games_per_pairing']} games per pairing (sides "
            f"swapped), seed {summary['seed']}. Target: the coevolved champion scores >= "
            f"{MCTS_TARGET[1]} against `{MCTS_TARGET[0]}`."
        )
        lines += ["", *_tournament_lines(summary, list(summary["bots"]))]
    else:
        lines.append("No tournament results yet.")
    path = out / "README.md"
    path.write_text("\n".join(lines + sections) + "\n")
    return path
