"""PNG pictures of territory positions (the study's figures 3.1 and 6.x): hexes coloured by owner,
troop counts, tile coordinates, a title and a subtitle.

It sits above the engine (matplotlib is a presentation concern) and below flows/, so training
runs can log renders as MLflow artifacts and reports can show them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.games.territory import HEADER, LIMIT, ROUND, SIZE, tile_counts

OWNER_COLOURS = {1: "#3566c9", -1: "#c93b35", 0: "#c8c8c8"}  # blue, red, nature


def _centre(row: int, col: int) -> tuple[float, float]:
    """Pointy-top hexes one unit apart; each row shifted half a tile right of the one above."""
    return col + row / 2, -row * math.sqrt(3) / 2


def draw(ax, s: np.ndarray, title: str = "", subtitle: str = "") -> None:
    """Draws position `s` (a territory state array) onto a matplotlib axis."""
    from matplotlib.patches import RegularPolygon

    size = int(s[SIZE])
    for row in range(size):
        for col in range(size):
            value = int(s[HEADER + row * size + col])
            x, y = _centre(row, col)
            owner = int(np.sign(value))
            ax.add_patch(
                RegularPolygon(
                    (x, y),
                    numVertices=6,
                    radius=1 / math.sqrt(3),
                    orientation=0.0,
                    facecolor=OWNER_COLOURS[owner],
                    edgecolor="white",
                    linewidth=1.5,
                )
            )
            colour = "white" if owner else "#555555"
            if value:
                ax.text(
                    x,
                    y + 0.06,
                    str(abs(value)),
                    ha="center",
                    va="center",
                    fontsize=11,
                    fontweight="bold",
                    color=colour,
                )
            ax.text(
                x, y - 0.24, f"({row},{col})", ha="center", va="center", fontsize=6, color=colour
            )
    low_x, _ = _centre(0, 0)
    high_x, low_y = _centre(size - 1, size - 1)
    ax.set_xlim(low_x - 0.8, high_x + 0.8)
    ax.set_ylim(low_y - 0.8, 0.8)
    ax.set_aspect("equal")
    ax.axis("off")
    counts = np.zeros(4, dtype=np.int64)
    tile_counts(s, counts)
    default = (
        f"round {int(s[ROUND])}/{int(s[LIMIT])} · blue {counts[0]} tiles, {counts[2]} troops · "
        f"red {counts[1]} tiles, {counts[3]} troops"
    )
    ax.set_title(f"{title}\n{subtitle or default}" if title else subtitle or default, fontsize=9)


def render_png(s: np.ndarray, path: Path, title: str = "", subtitle: str = "") -> Path:
    """One position as a PNG (written to a temporary name, then renamed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    size = int(s[SIZE])
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * size * 1.5, 1.2 + 0.8 * size))
    draw(ax, s, title, subtitle)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(temp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    temp.replace(path)
    return path


def render_strip(
    states: Sequence[np.ndarray], titles: Sequence[str], path: Path, heading: str = ""
) -> Path:
    """Several positions side by side (first, middle and last state of a game)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    size = int(states[0][SIZE])
    width = 0.9 * size * 1.5 + 0.6
    fig, axes = plt.subplots(1, len(states), figsize=(width * len(states), 1.4 + 0.8 * size))
    for ax, s, title in zip(np.atleast_1d(axes), states, titles, strict=True):
        draw(ax, s, title)
    if heading:
        fig.suptitle(heading, fontsize=11)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(temp, dpi=100, bbox_inches="tight")
    plt.close(fig)
    temp.replace(path)
    return path
