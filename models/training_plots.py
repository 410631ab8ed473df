"""The training-curve PNG every tracked run logs beside its metrics (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path


def curve_png(history: dict[str, list[float]], final: dict[str, float], path: Path, title: str):
    """Per-epoch curves, losses and the other metrics (accuracies) on their own panels; a bar
    chart of the final metrics for single-pass estimators that have no curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    series = {k: v for k, v in history.items() if v}
    if all(len(v) < 2 for v in series.values()):  # one pass, no curve: final values as bars
        final = {**{k: v[-1] for k, v in series.items()}, **final}
        series = {}
        scored = {k: v for k, v in final.items() if "accuracy" in k or "loss" in k}
        final = scored or final
    groups = [
        {k: v for k, v in series.items() if "loss" in k},
        {k: v for k, v in series.items() if "loss" not in k},
    ]
    groups = [g for g in groups if g]
    figure, axes = plt.subplots(1, max(1, len(groups)), figsize=(5 * max(1, len(groups)), 3.6))
    panels = list(axes) if len(groups) > 1 else [axes]
    for panel, group in zip(panels, groups, strict=False):
        for name, values in sorted(group.items()):
            epochs = range(1, len(values) + 1)
            panel.plot(epochs, values, marker="o", markersize=3, label=name)
        panel.set_xlabel("epoch")
        panel.xaxis.set_major_locator(MaxNLocator(integer=True))
        panel.legend(fontsize=7)
        panel.grid(alpha=0.3)
    if not groups:
        names = sorted(final)
        panels[0].bar(range(len(names)), [final[n] for n in names])
        panels[0].set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=7)
        panels[0].set_ylabel("final value")
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
