"""reports/pipeline/README.md and bar charts from the tournament results and the promotion
decisions (the report stage's own folder; the rest of reports/ is kept in git by hand).

The tables follow the original studies: for each trained model, its games against random
players (guarded and not), against the classical models (MCTS, SimAB, …), against alpha-beta
and against the other trained models, as wins / draws / defeats and the success rate (wins over
games played; the score counting a draw as half a win beside it). The report ends with the
version of each family that holds the registry alias `production`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

GROUPS = ("random", "classical", "alpha-beta", "models")


def opponent_group(spec: str, bots: set[str]) -> str:
    if spec in bots:
        return "models"
    if spec.startswith("random"):
        return "random"
    if spec.startswith("alphabeta"):
        return "alpha-beta"
    return "classical"


def model_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (model, opponent) from the model's side, whichever side it played."""
    bots = set(summary["bots"])
    rows = []
    for s in summary["pairings"]:
        for me, other, w, lost in (
            (s["spec_a"], s["spec_b"], s["wins"], s["losses"]),
            (s["spec_b"], s["spec_a"], s["losses"], s["wins"]),
        ):
            if me not in bots:
                continue
            games = w + s["draws"] + lost
            rows.append(
                {
                    "model": me,
                    "opponent": other,
                    "group": opponent_group(other, bots),
                    "wins": w,
                    "draws": s["draws"],
                    "defeats": lost,
                    "games": games,
                    "success": w / games if games else 0.0,
                    "score": (w + s["draws"] / 2) / games if games else 0.0,
                }
            )
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| model | opponent | wins | draws | defeats | success rate | score |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | `{r['opponent']}` | {r['wins']} | {r['draws']} | {r['defeats']} "
            f"| {100 * r['success']:.0f}% | {r['score']:.2f} |"
        )
    return lines


def bar_chart(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Success rate of each model, one bar per opponent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    models = sorted({r["model"] for r in rows})
    opponents = list(dict.fromkeys(r["opponent"] for r in rows))
    width = 0.8 / max(1, len(opponents))
    figure, axes = plt.subplots(figsize=(max(5.0, 1.4 * len(models) + 2), 4))
    for k, opponent in enumerate(opponents):
        rates = [
            next((r["success"] for r in rows if r["model"] == m and r["opponent"] == opponent), 0)
            for m in models
        ]
        axes.bar(np.arange(len(models)) + k * width, rates, width, label=opponent)
    axes.set_xticks(np.arange(len(models)) + 0.4 - width / 2, models, rotation=15, fontsize=8)
    axes.set_ylim(0, 1)
    axes.set_ylabel("success rate (wins / games)")
    axes.set_title(title)
    axes.legend(fontsize=6, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def production_lines(promotion: dict[str, Any]) -> list[str]:
    lines = ["| family | registered model | production version | trained as | decisions |"]
    lines.append("|---|---|---:|---|---|")
    for family, info in sorted(promotion.get("families", {}).items()):
        decisions = ", ".join(
            f"v{d.get('version')}: "
            + (
                "kept"
                if d.get("already")
                else f"{'promoted' if d.get('promoted') else 'rejected'} "
                f"({d.get('wins')}/{d.get('draws')}/{d.get('losses')} vs `{d.get('opponent')}`)"
            )
            for d in info.get("decisions", [])
        )
        version = info.get("production")
        shown = f"**{version}** (`{info['model']}@production`)" if version else "none yet"
        lines.append(
            f"| {family} | {info['model']} | {shown} | {info.get('production_label') or '-'} "
            f"| {decisions} |"
        )
    return lines


def zoo_lines(root: Path, game: str) -> list[str]:
    """The game's zoo bots the pipeline registered (imports/zoo.json, the zoo-import stage) and
    every candidate that faced one at the promotion gate: the promote stages' records
    (promotion/GAME.json) and PlayerZero's generations (their run records,
    metrics/playerzero/*-run/gen-*/registered.json): under the zoo bot's own name as the
    production it faced, under any other name as the gate's second match (`zoo`)."""
    record = _read(root / "imports" / "zoo.json") or {}
    rows = [r for r in record.get("entries", []) if r["entry"].split("/")[0].split(":")[0] == game]
    if not rows:
        return []
    families = (_read(root / "promotion" / f"{game}.json") or {}).get("families", {})
    decisions = [d for info in families.values() for d in info.get("decisions", [])]
    for path in sorted(root.glob("metrics/playerzero/*-run/gen-*/registered.json")):
        registered = _read(path) or {}
        if registered.get("promotion"):
            decisions.append({**registered["promotion"], "trained_as": path.parent.as_posix()})
    lines = ["### Zoo bots: the gate's opponent", ""]
    lines += ["| zoo entry | registered as | card | candidates that faced it at the gate |",
              "|---|---|---|---|"]  # fmt: skip
    for row in rows:
        zoo_ref = f"registry:{row['name']}/{row['version']}"
        faced = []
        for d in decisions:
            if d.get("name") == row["name"] and d.get("opponent") == zoo_ref:
                faced.append((d["name"], d, d["low"], d["high"]))
            elif (d.get("zoo") or {}).get("opponent") == zoo_ref:
                z = d["zoo"]
                faced.append((d["name"], {**z, "promoted": d.get("promoted"),
                                          "version": d["version"]},
                               z["score_low"], z["score_high"]))  # fmt: skip
        shown = ", ".join(
            f"{name} v{d['version']}: {'promoted' if d.get('promoted') else 'rejected'} "
            f"({d['wins']}/{d['draws']}/{d['losses']}, score {d['score']:.3f} "
            f"[{low:.3f}, {high:.3f}])"
            for name, d, low, high in faced
        )  # fmt: skip
        card = f"[card](../../zoo/{row['entry']}/card.md)"
        lines.append(
            f"| `zoo:{row['entry']}` | {row['name']} v{row['version']} (`{zoo_ref}`) | {card} "
            f"| {shown or 'none yet'} |"
        )
    return [*lines, ""]


def _read(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def puzzle_lines(summary: dict[str, Any]) -> list[str]:
    """A puzzle's table (pipeline/stages/evaluate.py): per level and bot, the success rate with
    its 95% interval and the laps beside the reference on the scenarios both solved."""
    if "levels" not in summary:
        return []
    reference = summary.get("reference", "")
    lines = [
        f"Each bot plays every seat; {summary['games_per_pairing']} attempts per level, each "
        f"after {summary.get('opening_laps', 0)} seeded random laps; laps compared with "
        f"`{reference}` on the attempts both solved.",
        "",
        "| level | bot | solved | success rate [95%] | mean laps | laps vs reference |",
        "|---|---|---:|---|---:|---|",
    ]
    for r in summary["levels"]:
        laps = "-" if r["mean_laps"] is None else f"{r['mean_laps']:.1f}"
        versus = (
            "-" if r["laps_ratio"] is None
            else f"{r['mean_laps_both']:.1f} vs {r['reference_laps_both']:.1f} "
            f"(x{r['laps_ratio']:.2f}, {r['both_solved']} attempts)"
        )  # fmt: skip
        lines.append(
            f"| `{r['level']}` | `{r['spec']}` | {r['solved']}/{r['attempts']} | "
            f"{100 * r['success_rate']:.0f}% [{100 * r['success_low']:.0f}, "
            f"{100 * r['success_high']:.0f}] | {laps} | {versus} |"
        )
    return [*lines, ""]


def write_report(root: Path, games: list[str], out: Path) -> Path:
    """README.md plus one PNG per game and opponent group, in `out` (reports/pipeline/)."""
    root, out = Path(root), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# gridbots: what was trained, how strong it is, what is in production",
        "",
        "Built by `dvc repro` (stage `report`) from `evaluation/*/summary.json` and "
        "`promotion/*.json` (the zoo bots registered first: `imports/zoo.json`). "
        "Success rate = wins / games; score counts a draw as half a win. "
        "Each pairing plays every scenario twice with sides swapped.",
    ]
    for game in games:
        summary_path = root / "evaluation" / game / "summary.json"
        promotion_path = root / "promotion" / f"{game}.json"
        lines += ["", f"## {game}", ""]
        lines += zoo_lines(root, game)  # the zoo bot every candidate under its name faced
        if not summary_path.is_file():
            lines.append("No tournament results yet.")
            continue
        summary = json.loads(summary_path.read_text())
        lines += puzzle_lines(summary)  # a puzzle's success rates (no pairings)
        rows = model_rows(summary)
        lines.append(
            f"Trained bots: {', '.join(summary['bots'])}; {summary['games_per_pairing']} games "
            f"per pairing, seed {summary['seed']}."
        )
        for group in GROUPS:
            chosen = [r for r in rows if r["group"] == group]
            if not chosen:
                continue
            picture = f"{game}-{group}.png"
            bar_chart(chosen, out / picture, f"{game}: models vs {group}")
            lines += ["", f"### vs {group}", "", *markdown_table(chosen), "", f"![]({picture})"]
        lines += ["", "### Standings (every game each bot played)", ""]
        lines += ["| rank | bot | score | 95% interval | games |", "|---:|---|---:|---|---:|"]
        for rank, s in enumerate(summary["standings"], start=1):
            lines.append(
                f"| {rank} | `{s['spec']}` | {s['score']:.3f} | "
                f"[{s['score_low']:.3f}, {s['score_high']:.3f}] | {s['games']} |"
            )
        lines += ["", "### Production", ""]
        if promotion_path.is_file():
            lines += production_lines(json.loads(promotion_path.read_text()))
        else:
            lines.append("No promotion decisions yet.")
        study = root / "studies" / game  # a chain's comparison with its study, when it has one
        if (study / "README.md").is_file():
            shutil.copytree(study, out / game, dirs_exist_ok=True)
            lines += ["", f"Beside the study's figures: [{game}/README.md]({game}/README.md)"]

        from flows.reports.td import td_section

        lines += td_section(root, game, out)  # study 002's matrices beside ours (TD chains)
    lines += [
        "",
        "## Where to look next",
        "",
        "- `gridbots bots list`: every registered version with its evidence tags",
        "- `make ui`: the Prefect UI (flow runs) and the MLflow UI (runs, sweeps, registry)",
        "- `dvc plots show`: training curves; `dvc metrics show`: tournament and training numbers",
    ]
    path = out / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path
