"""The loop's report.md and report.png: how its networks grew, against what others reached.

They live in the loop's run record (models.playerzero_loop.run_home: metrics/playerzero/GAME-run),
beside curve.csv, since they show wall-clock hours and the machine's speed.

The curve: optimal-move rate (raw policy and puct at the loop's evaluation budget) against
generation and against wall-clock hours, with the classical baselines measured on the same
solved positions (`evaluate.baselines`, measured once per loop and kept in baselines.json) as
horizontal lines; arena scores and self-play throughput beside it. Published figures of
AlphaZero implementations on Connect 4 (references/notes-anchors.md) are listed for context:
their position sets and move criteria differ from ours, so they are not drawn as lines.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from models import playerzero_loop as loop

PUBLISHED = [
    ("AlphaZero.jl (5x128 ResNet, 15 iterations x 5,000 games, GPU)",
     "errs on 2-3% of Pons' middle-medium positions (outcome criterion)"),
    ("c4a0 (9 generations x 1,700 games, RTX 3090)", "84% optimal moves on its own positions"),
    ("PARL AlphaZero (a day on 25 CPUs)", "74% perfect, 94% outcome-preserving moves"),
    ("seed 001 (tactics game, no solver)",
     "PZ1 vs MCTS1000 51.1%, PZ4 vs MCTS4000 53.9% (Table 2)"),
]  # fmt: skip


def measure_baselines(home: Path, settings: dict[str, Any]) -> dict[str, dict]:
    """Optimal-move rates of the classical baselines on the loop's solved set (cached)."""
    path = loop.run_home(home) / "baselines.json"  # each holds its ms per move
    cached = loop.read_json(path, {}) or {}
    solved = settings.get("solved") or ""
    evaluate = settings.get("evaluate", {})
    if not solved:
        return cached
    from agents.connect4_bench import agent_rate, read_positions

    rows = read_positions(Path(solved))[: int(evaluate.get("positions", 1000))]
    for spec in evaluate.get("baselines", []):
        if spec not in cached or cached[spec]["positions"] != len(rows):
            cached[spec] = agent_rate(spec, rows)
    loop.write_json(path, cached)
    return cached


def read_curve(home: Path) -> list[dict[str, float]]:
    path = loop.run_home(home) / "curve.csv"
    if not path.is_file():
        return []
    with path.open() as handle:
        return [{k: float(v) if v else float("nan") for k, v in row.items()}
                for row in csv.DictReader(handle)]  # fmt: skip


def plot(rows: list[dict[str, float]], baselines: dict[str, dict], path: Path, title: str):
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = ("optimal_rate_policy", "optimal_rate_puct")
    measured = [r.get(k, float("nan")) for r in rows for k in rates]
    solved = bool(baselines) or any(v == v for v in measured)  # NaN != NaN
    # a game without an exact solver (tactics, Othello) has no optimal-move panels to draw
    figure, axes = plt.subplots(1, 3 if solved else 1, figsize=(15 if solved else 5, 4),
                                squeeze=False)  # fmt: skip
    axes = list(axes[0])
    for ax, x_key, label in ((axes[0], "generation", "network generation"),
                             (axes[1], "hours", "wall-clock hours")) if solved else ():  # fmt: skip
        x = [r[x_key] + (1 if x_key == "generation" else 0) for r in rows]
        for key, name in (("optimal_rate_policy", "raw policy"), ("optimal_rate_puct", "puct")):
            ax.plot(x, [r[key] for r in rows], marker="o", markersize=3, label=name)
        for k, (spec, result) in enumerate(sorted(baselines.items())):
            ax.axhline(result["optimal_rate"], linestyle="--", color=f"C{k + 2}", label=spec)
        ax.set_xlabel(label)
        ax.set_ylabel("optimal-move rate (solved set)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    x = [r["generation"] + 1 for r in rows]
    axes[-1].plot(x, [r["arena_score"] for r in rows], marker="o", markersize=3,
                 label="arena score vs best")  # fmt: skip
    yardstick = [r.get("match_score", float("nan")) for r in rows]
    if any(v == v for v in yardstick):  # NaN != NaN: generations without the match
        axes[-1].plot(x, yardstick, marker="^", markersize=3, label="score vs yardstick")
    axes[-1].axhline(0.5, color="grey", linewidth=0.8)
    axes[-1].set_ylim(0, 1)
    axes[-1].set_xlabel("network generation")
    axes[-1].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[-1].legend(fontsize=7, loc="upper left")
    twin = axes[-1].twinx()
    twin.plot(x, [r["selfplay_positions_per_s"] for r in rows], color="C3", marker="s",
              markersize=3, label="self-play positions/s")  # fmt: skip
    twin.legend(fontsize=7, loc="upper right")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def cell(row: dict[str, float], key: str, spec: str = ".3f") -> str:
    """A table cell; "-" where the generation did not measure it (no solved positions, no
    yardstick match in this profile), rather than "nan"."""
    value = row.get(key, float("nan"))
    return "-" if value != value else format(value, spec)


def write_loop_report(home: Path, game: str, settings: dict[str, Any]) -> Path:
    """report.md + report.png in the loop's run record; returns the markdown path."""
    home = Path(home)
    rows = read_curve(home)
    baselines = measure_baselines(home, settings)
    state = loop.load(home, home / "state.json", {}) or {}
    picture = loop.run_home(home) / "report.png"
    picture.parent.mkdir(parents=True, exist_ok=True)
    plot(rows, baselines, picture, f"PlayerZero on {game}")
    best = (state.get("best") or {}).get("path", "none")
    opponent = loop.yardstick(settings)
    versus = f"`{opponent}`" if opponent else "yardstick (none set)"
    lines = [
        f"# PlayerZero on {game}",
        "",
        f"{state.get('generation', 0)} generations, {state.get('seconds', 0) / 3600:.2f} h; "
        f"best network: {best}.",
        "",
        "| gen | hours | positions/s | policy acc. | arena | accepted | optimal (policy) "
        f"| optimal (puct) | puct ms/move | vs {versus} |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['generation'] + 1:.0f} | {r['hours']:.2f} "
            f"| {cell(r, 'selfplay_positions_per_s', '.0f')} | {cell(r, 'policy_accuracy')} "
            f"| {cell(r, 'arena_score')} | {'yes' if r['accepted'] == 1 else 'no'} "
            f"| {cell(r, 'optimal_rate_policy')} | {cell(r, 'optimal_rate_puct')} "
            f"| {cell(r, 'puct_ms_per_move', '.1f')} | {cell(r, 'match_score')} |"
        )
    if baselines:
        lines += ["", "Classical baselines on the same positions:", ""]
        lines += ["| agent | optimal | outcome kept | ms/move |", "|---|---:|---:|---:|"]
        for spec, b in sorted(baselines.items()):
            lines.append(f"| `{spec}` | {b['optimal_rate']:.3f} | {b['outcome_rate']:.3f} "
                         f"| {b['ms_per_move_mean']:.1f} |")  # fmt: skip
    lines += ["", "Published figures (other position sets and criteria, for context):", ""]
    lines += [f"- {who}: {what}" for who, what in PUBLISHED]
    lines += ["", f"![]({picture.name})"]
    path = picture.with_name("report.md")
    path.write_text("\n".join(lines) + "\n")
    return path
