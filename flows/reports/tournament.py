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

from engine.files import write_json

#: what the games measured of the machine rather than of the play: each side's clock per move and
#: peak memory (games.parquet's `a_…`/`b_…` columns, the summary's per-bot figures)
MEASURED_COLUMNS = ("time_mean_ms", "times_ms", "peak_kb")
MEASURED_FIGURES = ("time_mean_ms", "time_p95_ms", "peak_kb")


def write_outputs(
    out: Path,
    rows: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    measured: Path | None = None,
) -> dict:
    """games.parquet (one row per game), summary.json and scores.png under `out`.

    With `measured` (a pipeline stage's metrics file), the clock and memory figures leave the
    files under `out` (a DVC output), so that the same games write the same bytes there: each
    pairing's per-bot figures (mean and p95 ms per move, peak memory) go to `measured`, the
    per-move times of each game are dropped."""
    import pandas as pd

    if measured is not None:
        rows, summary, figures = split_measured(rows, summary)
        write_json(measured, figures)
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


def split_measured(
    rows: Sequence[dict[str, Any]], summary: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(rows, summary) without the clock and memory figures, and those figures per pairing and
    bot (`{"pairings": [{"pairing", "bots": [{"spec", "time_mean_ms", …}]}]}`)."""
    columns = {f"{side}_{key}" for side in ("a", "b") for key in MEASURED_COLUMNS}
    kept_rows = [{k: v for k, v in row.items() if k not in columns} for row in rows]
    pairings, figures = [], []
    for pairing in summary.get("pairings", []):
        bots = pairing.get("bots", [])
        figures.append({
            "pairing": pairing["pairing"],
            "bots": [{"spec": b["spec"], **{k: b[k] for k in MEASURED_FIGURES if k in b}}
                     for b in bots],
        })  # fmt: skip
        kept = [{k: v for k, v in b.items() if k not in MEASURED_FIGURES} for b in bots]
        pairings.append({**pairing, "bots": kept})
    return kept_rows, {**summary, "pairings": pairings}, {"pairings": figures}


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
