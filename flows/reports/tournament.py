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


def pairing_table(summaries: Sequence[dict[str, Any]], title: str = "", width: int = 80):
    """Rich tables that fit `width` columns: the bots by number, one line per pairing (W/D/L,
    score and Elo with their intervals), one line per bot and pairing (time, memory, faults)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    numbers: dict[str, int] = {}
    for s in summaries:
        for spec in (s["spec_a"], s["spec_b"]):
            numbers.setdefault(spec, len(numbers) + 1)
    legend = Table(box=box.SIMPLE_HEAD)
    legend.add_column("bot", justify="right")
    legend.add_column("spec", no_wrap=True)
    for spec, number in numbers.items():
        legend.add_row(str(number), Text(shorten(spec, width - 9)))
    results = Table(box=box.SIMPLE_HEAD)
    for column in ("pairing", "W/D/L", "score A [95%]", "Elo A-B [95%]"):
        results.add_column(column, no_wrap=True)
    bots = Table(box=box.SIMPLE_HEAD)
    for column in ("pairing", "bot", "ms mean", "ms p95", "peak MiB", "illegal", "late", "crash"):
        bots.add_column(column, justify="left" if column == "pairing" else "right", no_wrap=True)
    for s in summaries:
        pairing = f"{numbers[s['spec_a']]} vs {numbers[s['spec_b']]}"
        results.add_row(
            pairing,
            f"{s['wins']}/{s['draws']}/{s['losses']}",
            f"{s['score']:.3f} [{s['score_low']:.3f}, {s['score_high']:.3f}]",
            f"{_elo_text(s['elo'], s['score'] - 0.5)} "
            f"[{_elo_text(s['elo_low'], -1)}, {_elo_text(s['elo_high'], 1)}]",
        )
        for bot in s["bots"]:
            bots.add_row(
                pairing,
                str(numbers[bot["spec"]]),
                f"{bot['time_mean_ms']:.1f}",
                f"{bot['time_p95_ms']:.1f}",
                f"{bot['peak_kb'] / 1024:.0f}",
                str(bot["illegal"]),
                str(bot["late"]),
                str(bot["crashes"]),
            )
    return Group(*([Text(title)] if title else []), legend, results, bots)


def shorten(text: str, width: int) -> str:
    """`text` cut in the middle to `width` characters (`alphabeta:eval=onnx:…/model.onnx`)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _elo_text(value: float | None, sign: float) -> str:
    return f"{round(value) + 0:+d}" if value is not None else ("+inf" if sign > 0 else "-inf")
