"""Tournament results for people: Parquet + JSON + a bar chart on disk, rich tables on screen.

The engine plays and summarises (engine.tournament); how results look lives up here, so the
engine layer needs neither pandas, matplotlib nor rich.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def write_outputs(out: Path, rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> dict:
    """games.parquet (one row per game), summary.json and scores.png under `out`."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "games": out / "games.parquet",
        "summary": out / "summary.json",
        "plot": out / "scores.png",
    }
    pd.DataFrame(list(rows)).to_parquet(paths["games"], index=False)
    paths["summary"].write_text(json.dumps(summary, indent=2) + "\n")
    plot_scores(summary["pairings"], paths["plot"], summary.get("game", ""))
    return {key: str(path) for key, path in paths.items()}


def plot_scores(pairing_summaries: Sequence[dict[str, Any]], path: Path, title: str = "") -> None:
    """A bar per pairing: A's score with its 95% interval; 0.5 marks an even match."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [s["pairing"] for s in pairing_summaries]
    scores = np.array([s["score"] for s in pairing_summaries])
    errors = np.array(
        [
            [s["score"] - s["score_low"] for s in pairing_summaries],
            [s["score_high"] - s["score"] for s in pairing_summaries],
        ]
    )
    figure, axes = plt.subplots(figsize=(max(4.0, 1.2 * len(labels) + 2), 4))
    axes.bar(range(len(labels)), scores, yerr=errors, capsize=4, color="tab:blue")
    axes.axhline(0.5, color="grey", linewidth=1, linestyle="--")
    axes.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
    axes.set_ylim(0, 1)
    axes.set_ylabel("score of the first agent (95% interval)")
    axes.set_title(f"{title} scores".strip())
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def pairing_table(summaries: Sequence[dict[str, Any]], title: str = ""):
    """Rich tables: one line per pairing, then one per bot and pairing (time, memory, faults)."""
    from rich.console import Group
    from rich.table import Table

    results = Table(title=title or None)
    for column in ("#", "A", "B", "W/D/L", "score A [95%]", "Elo A-B [95%]"):
        results.add_column(column, justify="right" if column == "#" else "left")
    bots = Table()
    for column in ("#", "bot", "ms mean", "ms p95", "peak MiB", "illegal", "late", "crash"):
        bots.add_column(column, justify="left" if column == "bot" else "right")
    for number, s in enumerate(summaries, start=1):
        results.add_row(
            str(number),
            s["spec_a"],
            s["spec_b"],
            f"{s['wins']}/{s['draws']}/{s['losses']}",
            f"{s['score']:.3f} [{s['score_low']:.3f}, {s['score_high']:.3f}]",
            f"{_elo_text(s['elo'], s['score'] - 0.5)} "
            f"[{_elo_text(s['elo_low'], -1)}, {_elo_text(s['elo_high'], 1)}]",
        )
        for bot in s["bots"]:
            bots.add_row(
                str(number),
                bot["spec"],
                f"{bot['time_mean_ms']:.1f}",
                f"{bot['time_p95_ms']:.1f}",
                f"{bot['peak_kb'] / 1024:.0f}",
                str(bot["illegal"]),
                str(bot["late"]),
                str(bot["crashes"]),
            )
    return Group(results, bots)


def _elo_text(value: float | None, sign: float) -> str:
    return f"{value:+.0f}" if value is not None else ("+inf" if sign > 0 else "-inf")
