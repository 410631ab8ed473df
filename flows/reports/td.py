"""The TD section of reports/pipeline/README.md: study 002's published figures beside gridbots' own.

For each of the study's six comparison matrices (§4.1: the row agent plays black for 200 games
against the column agent, the cell is its win percentage), the study's table and ours in the
same layout, and one heat-map per matrix with both side by side; then the grid's best
configurations, the learning curve of the long run, and the final comparison with minimax.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: study 002, §4.1: {parameter: (names shown, {row: [cells in column order, then random]})}
STUDY_MATRICES: dict[str, dict[str, Any]] = {
    "rule": {
        "names": {"q": "Q-learning", "sarsa": "SARSA"},
        "rows": {"q": [None, 53, 87], "sarsa": [44.5, None, 87]},
    },
    "activation": {
        "names": {"sigmoid": "sigmoid", "relu": "ReLU", "tanh": "tanh"},
        "rows": {
            "sigmoid": [None, 83, 82, 88.5],
            "relu": [11.5, None, 43.5, 45.5],
            "tanh": [29.5, 67.5, None, 73],
        },
    },
    "selection": {
        "names": {"egreedy": "ε-greedy", "softmax": "softmax-exponential"},
        "rows": {"egreedy": [None, 53, 90.5], "softmax": [37.5, None, 89]},
    },
    "hidden": {
        "names": {"20": "20", "40": "40", "60": "60", "80": "80"},
        "rows": {
            "20": [None, 42, 49, 41, 90.5],
            "40": [47.5, None, 55, 53, 90.5],
            "60": [47, 37, None, 43, 90],
            "80": [54.5, 42.5, 54, None, 88.5],
        },
    },
    "learning_rate": {
        "names": {"0.1": "0.1", "0.2": "0.2", "0.3": "0.3"},
        "rows": {
            "0.1": [None, 47.5, 42, 91.5],
            "0.2": [56.5, None, 58.5, 92],
            "0.3": [56, 42, None, 91.5],
        },
    },
    "random_factor": {
        "names": {"0.2": "0.2", "0.3": "0.3", "0.4": "0.4"},
        "rows": {
            "0.2": [None, 43.5, 54, 85.5],
            "0.3": [52.5, None, 56.5, 85.5],
            "0.4": [46, 34.5, None, 87],
        },
    },
}
TITLES = {
    "rule": "Learning strategy",
    "activation": "Activation function",
    "selection": "Move selection",
    "hidden": "Hidden units (NN size)",
    "learning_rate": "Learning rate",
    "random_factor": "Random factor (ε)",
}
STUDY_MINIMAX = {"wins": 42, "losses": 58, "games": 100, "depth": 3}


def ours_rows(matrix: dict[str, Any]) -> dict[str, list[float | None]]:
    labels = matrix["labels"]
    return {
        row: [None if row == col else matrix["cells"][row][col]["win_percent"] for col in labels]
        + [matrix["cells"][row]["random"]["win_percent"]]
        for row in labels
    }


def _fmt(value: float | None) -> str:
    return "/" if value is None else f"{value:g}"


def matrix_lines(key: str, matrix: dict[str, Any], games: int) -> list[str]:
    """Our table with the study's figure in brackets, in the study's layout."""
    study = STUDY_MATRICES.get(key)
    labels = matrix["labels"]
    names = study["names"] if study else {v: v for v in labels}
    header = [f"{TITLES.get(key, key)} (black)", *(names.get(v, v) for v in labels), "random"]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    ours = ours_rows(matrix)
    for row in labels:
        theirs = study["rows"].get(row) if study else None
        cells = []
        for i, value in enumerate(ours[row]):
            published = f" ({_fmt(theirs[i])})" if theirs and theirs[i] is not None else ""
            cells.append(_fmt(value if value is None else round(value, 1)) + published)
        lines.append(f"| {names.get(row, row)} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"gridbots: {games} games per cell; the study's figure in brackets (200 games).")
    return lines


def heatmap(key: str, matrix: dict[str, Any], path: Path) -> None:
    """The study's matrix and ours side by side (win % of the row agent as black)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = matrix["labels"]
    study = STUDY_MATRICES.get(key)
    panels = [("gridbots", ours_rows(matrix))]
    if study:
        panels.insert(0, ("study 002", {r: study["rows"][r] for r in labels}))
    columns = [*labels, "random"]
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 0.6 * len(labels) + 2))
    axes = np.atleast_1d(axes)
    for axis, (title, rows) in zip(axes, panels, strict=True):
        grid = np.array([[np.nan if v is None else v for v in rows[r]] for r in labels], float)
        axis.imshow(grid, vmin=0, vmax=100, cmap="RdYlGn")
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                axis.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=8)
        axis.set_xticks(range(len(columns)), columns, fontsize=8)
        axis.set_yticks(range(len(labels)), labels, fontsize=8)
        axis.set_title(f"{title}: {TITLES.get(key, key)}", fontsize=9)
        axis.set_ylabel("row agent plays black")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def _interval(s: dict[str, Any]) -> str:
    return (
        f"{s['wins']}-{s['draws']}-{s['losses']}, score {s['score']:.3f} "
        f"[{s['score_low']:.3f}, {s['score_high']:.3f}]"
    )


def curve_plot(runs: dict[str, dict[str, Any]], path: Path) -> list[str]:
    """One line per run and opponent (with its 95% band); the same points as a table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {}
    for name, run in runs.items():
        history = run["history"]
        for key in (k for k in history if k.startswith("score_vs_")):
            opponent = key[len("score_vs_") :]
            series[f"{name} vs {opponent}"] = (
                history.get("curve_games", []),
                history[key],
                history.get(f"score_low_vs_{opponent}"),
                history.get(f"score_high_vs_{opponent}"),
            )
    figure, axis = plt.subplots(figsize=(6.5, 3.8))
    rows: dict[float, dict[str, float]] = {}
    for label, (marks, scores, low, high) in series.items():
        axis.plot(marks, scores, marker="o", markersize=3, label=label)
        if low and high:
            axis.fill_between(marks, low, high, alpha=0.15)
        for games, score in zip(marks, scores, strict=False):
            rows.setdefault(games, {})[label] = score
    axis.axhline(0.5, color="grey", linewidth=1, linestyle="--")
    axis.set_xlabel("training games")
    axis.set_ylabel("greedy score (95% interval)")
    axis.set_ylim(0, 1)
    axis.legend(fontsize=7)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    lines = ["| training games | " + " | ".join(series) + " |", "|---:|" + "---:|" * len(series)]
    for games in sorted(rows):
        cells = [f"{rows[games][s]:.3f}" if s in rows[games] else "" for s in series]
        lines.append(f"| {games:,.0f} | " + " | ".join(cells) + " |")
    return lines


def td_section(root: Path, game: str, out: Path) -> list[str]:
    """Markdown lines (and PNGs written into `out`) for study 002 on `game` (studies/GAME) and
    its td models (trained/GAME/*/run.json of family td: a grid as a sweep, long runs)."""
    study_path = Path(root) / "studies" / game / "study.json"
    if not study_path.is_file():
        return []
    study = json.loads(study_path.read_text())
    mm = study["minimax"]
    lines = [
        "",
        f"## {game}: TD learners (study 002)",
        "",
        f"Each configuration trained for {study['games_per_config']:,} games "
        f"(the study: 7,000). Base configuration `{study['base']}`.",
        "",
        "### The study's setup: base configuration against its minimax",
        "",
        f"- study 002: {STUDY_MINIMAX['wins']} wins in {STUDY_MINIMAX['games']} games "
        f"against depth-{STUDY_MINIMAX['depth']} minimax (0.42)",
        f"- gridbots, greedy, seeded openings, sides swapped, vs `{mm['opponent']}`: "
        f"{_interval(mm['greedy_openings'])}",
        f"- gridbots, moving by its training rule from the initial position: "
        f"{_interval(mm['as_trained_initial'])}",
    ]
    matrices = study["matrices"]
    for key in [
        *(k for k in STUDY_MATRICES if k in matrices),
        *sorted(set(matrices) - set(TITLES)),
    ]:
        matrix = matrices[key]
        picture = f"{game}-td-{key}.png"
        heatmap(key, matrix, out / picture)
        lines += [
            "",
            f"### {TITLES.get(key, key)}",
            "",
            *matrix_lines(key, matrix, matrix["games"]),
            "",
            f"![]({picture})",
        ]
    runs = {}
    for path in sorted((Path(root) / "trained" / game).glob("*/run.json")):
        run = json.loads(path.read_text())
        if run.get("family") == "td":
            runs[path.parent.name] = run
    for name, run in runs.items():
        if len(run.get("sweep") or []) < 2:
            continue
        ranked = sorted(run["sweep"], key=lambda c: -c["metrics"].get("score", -1.0))
        opponent = run["params"]["curve_opponents"][0]
        lines += [
            "",
            f"### The grid: `{name}`",
            "",
            f"{len(ranked)} configurations × {run['params']['games']:,} games, ranked by the "
            f"greedy score against `{opponent}` (its last learning-curve point).",
            "",
            f"| rank | configuration | vs `{opponent}` |",
            "|---:|---|---:|",
        ]
        for rank, row in enumerate(ranked[:10], start=1):
            lines.append(f"| {rank} | `{row['label']}` | {row['metrics'].get('score', 0):.3f} |")
    curves = {}
    for name, run in runs.items():  # each td model's kept configuration and its curve
        best = next((c for c in run.get("sweep") or [] if c["label"] == run.get("best")), None)
        if best and any(k.startswith("score_vs_") for k in best["history"]):
            curves[name] = best
    if curves:
        picture = f"{game}-td-curve.png"
        lines += ["", "### Learning curves of the td models", ""]
        for name, run in curves.items():
            games = run["metrics"].get("training_games", 0)
            lines.append(f"- `{name}`: `{run['label']}`, {games:,.0f} training games")
        lines += ["", *curve_plot(curves, out / picture), "", f"![]({picture})"]
    return lines + final_lines(Path(root) / "evaluation" / game / "summary.json")


def final_lines(path: Path) -> list[str]:
    """The game's bots against every opponent, the study's one figure beside depth 3."""
    if not path.is_file():
        return []
    summary = json.loads(path.read_text())
    lines = [
        "",
        "### Final comparison",
        "",
        f"{summary['games_per_pairing']} games per pairing, seeded openings, sides swapped.",
        "",
        "| bot | opponent | W-D-L | score [95%] | study 002 |",
        "|---|---|---|---|---|",
    ]
    for s in summary["pairings"]:
        minimax3 = s["spec_b"].split(",")[0] == "alphabeta:depth=3"  # any results= scoring
        study = "0.42 (7,000 games)" if minimax3 else ""
        lines.append(
            f"| {s['spec_a']} | `{s['spec_b']}` | {s['wins']}-{s['draws']}-"
            f"{s['losses']} | {s['score']:.3f} [{s['score_low']:.3f}, "
            f"{s['score_high']:.3f}] | {study} |"
        )
    return lines
