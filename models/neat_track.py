"""NEAT as a family of models.base (FAMILIES["neat"]): one seed of one training case trained by
`learn`, which models.tracking.train runs, logs and registers as it does every family's
(`gridbots stage train territory KEY`): the per-generation metrics, the champion's genome (JSON),
its ONNX export with a parity check against neat-python's own network, the fitness curve and
renders of the champion's game.

Seeds are a sweep (`sweep: {seed: [0, 1, 2]}`); the case keeps the seed whose champion ranks
first by OBJECTIVE (`seed_rank`: its playoff scores when a playoff chose it, then the best
fitness), registered as a version of `territory-neat`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.neat.network import network, to_onnx
from models.base import TrainingResult, artifact_metadata
from models.neat import DEFAULTS as TRAINING_DEFAULTS
from models.neat import (  # noqa: F401 (models.base's contract, re-exported)
    ENCODING,
    ENCODINGS,
    GAMES,
    inputs,
    make_config,
    network_game_spec,
    source,
    write_json,
)
from models.neat import curves as row_curves
from models.neat_train import CaseResult, Trainer
from models.territory_render import render_strip

FAMILY = "neat"
PARITY_INPUTS = 512
#: every parameter: the training case (models.neat.CASES) and models.neat.DEFAULTS
DEFAULTS: dict[str, Any] = {"case": "coevolution", **TRAINING_DEFAULTS}
#: how a sweep over seeds picks the case's champion (seed_rank's order)
OBJECTIVE = ("final_score>playoff_score>best_fitness", "max")


def parity(champion: dict[str, Any], sections: dict, onnx_bytes: bytes, seed: int = 0) -> float:
    """Max |ONNX - neat-python FeedForwardNetwork| over random boards (troops/20 in [-1, 1])."""
    import neat
    import onnxruntime as ort

    from models.neat import genome_from_json

    config = make_config(sections)
    reference = neat.nn.FeedForwardNetwork.create(genome_from_json(champion, config), config)
    rows = np.random.default_rng(seed).uniform(-1, 1, (PARITY_INPUTS, champion["num_inputs"]))
    expected = np.array([reference.activate(list(row)) for row in rows])
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    (got,) = session.run(["outputs"], {"inputs": rows.astype(np.float32)})
    return float(np.max(np.abs(got - expected)))


def export_champion(trainer: Trainer, result: CaseResult, out_dir: Path) -> tuple[Path, float]:
    """champion.json and champion.onnx (with its metadata) in out_dir; the parity figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "champion.json", result.champion)
    if result.rival:
        write_json(out_dir / "rival.json", result.rival)
    meta = artifact_metadata(
        network_game_spec(trainer.game),
        FAMILY,
        "tiles",
        "neat",
        decoding=trainer.params["decoding"],
        case=trainer.case,
        fitness=f"{result.champion['fitness']:.6g}",
    )
    model = to_onnx(network(result.champion), meta)
    path = out_dir / "champion.onnx"
    temp = path.with_name(".champion.onnx.tmp")
    temp.write_bytes(model)
    temp.replace(path)
    return path, parity(result.champion, trainer.sections, model)


#: what a generation's row measures of the machine (its MLflow curve keeps it), not of the run
MEASURED = ("eval_seconds",)


def timeless(history: list[dict[str, float]]) -> list[dict[str, float]]:
    """The history without its clock, as files a rerun must write alike (DVC outputs) keep it."""
    return [{k: v for k, v in row.items() if k not in MEASURED} for row in history]


def seed_files(trainer: Trainer, result: CaseResult, seed_dir: Path) -> tuple[Path, float, list]:
    """A trained seed's files in seed_dir: champion (JSON, ONNX), history, the champion's game,
    the fitness curve and renders; (ONNX path, parity, pictures)."""
    onnx_path, gap = export_champion(trainer, result, seed_dir)
    write_json(seed_dir / "history.json", timeless(result.history))
    write_json(
        seed_dir / "champion_game.json",
        {"stats": result.champion_stats, "trace": result.trace},
    )
    title = f"{trainer.case}, seed {trainer.params['seed']}"
    pictures = [
        curve_png(result.history, seed_dir / "fitness.png", title),
        renders(trainer, result, seed_dir / "game.png"),
    ]
    return onnx_path, gap, pictures


def seed_rank(result: CaseResult) -> tuple[float, ...]:
    """Which seed's champion the case keeps: with a playoff, its scores against the fixed
    opponents (final round, then first), since a coevolved fitness is earned against the seed's
    own rival population and does not compare across seeds; else the best fitness."""
    stats = result.champion_stats
    return (
        stats.get("final_score", -1.0),
        stats.get("playoff_score", -1.0),
        result.best_fitness,
    )


def renders(trainer: Trainer, result: CaseResult, path: Path) -> Path:
    """First, middle and last position of the champion's game (replayed on the State API)."""
    state = trainer.game.new_initial_state(seed=int(trainer.params["red_seed"]))
    states = [state.array.copy()]
    for action in result.trace:
        state.apply_action(int(action))
        states.append(state.array.copy())
    picks = [states[0], states[len(states) // 2], states[-1]]
    titles = ["first", f"middle (move {len(states) // 2})", f"last (move {len(states) - 1})"]
    stats = result.champion_stats
    heading = (
        f"{trainer.case}: champion (fitness {result.champion['fitness']:.1f}), "
        f"{stats['productions']:.0f} productions / {stats['attacks']:.0f} attacks / "
        f"{stats['transports']:.0f} transports, {stats['guided']:.0f} guided"
    )
    return render_strip(picks, titles, path, heading)


def curve_png(history: list[dict[str, float]], path: Path, title: str) -> Path:
    """Best (dark) and mean (light) fitness per generation, as the study's figures 6.2 ff."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.4))
    generations = [row["generation"] for row in history]
    for prefix, colour in (("", "#1f4e9c"), ("red_", "#a1261f")):
        if f"{prefix}best_fitness" not in history[0]:
            continue
        who = "red" if prefix else "blue"
        axes.plot(
            generations,
            [r[f"{prefix}best_fitness"] for r in history],
            color=colour,
            label=f"{who} best",
        )
        axes.plot(
            generations,
            [r[f"{prefix}mean_fitness"] for r in history],
            color=colour,
            alpha=0.4,
            label=f"{who} mean",
        )
    axes.set_xlabel("generation")
    axes.set_ylabel("fitness")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def curves(history: dict[str, list[float]] | list[dict[str, float]]) -> dict[str, list]:
    """models.base's contract: a run's history (per-generation columns, as `learn` returns it,
    or rows) as (generation, value) points."""
    if isinstance(history, dict):
        columns = zip(*history.values(), strict=True)
        history = [dict(zip(history, values, strict=True)) for values in columns]
    return row_curves(history)


def learn(
    game: str,
    params: dict[str, Any],
    out_dir: Path,
    work: Path | None = None,
    progress: Callable[[int, dict[str, float]], None] | None = None,
) -> TrainingResult:
    """One seed of training case `params["case"]` (models.base's contract): evolved from its
    checkpoint in `work` (each generation's population, so a killed run resumes exactly), its
    champion's files in `out_dir`; each generation reported through `progress`."""
    from models.base import check_game

    check_game(FAMILY, game)
    settings = {k: v for k, v in params.items() if k != "case"}
    out_dir = Path(out_dir)
    trainer = Trainer(str(params.get("case", DEFAULTS["case"])), settings, Path(work or out_dir))

    def report(row: dict[str, float]) -> None:
        if progress:
            progress(int(row["generation"]), {k: v for k, v in row.items() if k != "generation"})

    for row in trainer.history:  # a resumed run's generations, logged again
        report(row)
    result = trainer.run(report)
    onnx_path, gap, pictures = seed_files(trainer, result, out_dir)
    stats = result.champion_stats
    metrics = {
        "best_fitness": result.best_fitness,
        "last_best_fitness": result.history[-1]["best_fitness"],
        "generations": float(len(result.history)),
        "final_score": float(stats.get("final_score", -1.0)),
        "playoff_score": float(stats.get("playoff_score", -1.0)),
        **{f"champion_{k}": float(v) for k, v in stats.items()},
        "parity_max_abs_diff": gap,
        "train_seconds": result.seconds,
    }
    rows = timeless(result.history)
    history = {key: [float(row[key]) for row in rows] for key in rows[0]} if rows else {}
    extras = [out_dir / name for name in ("champion.json", "rival.json", "history.json",
                                          "champion_game.json")]  # fmt: skip
    return TrainingResult(
        FAMILY, network_game_spec(trainer.game), ENCODING,
        {"case": trainer.case, **trainer.params}, onnx_path, "onnx", metrics=metrics,
        history=history, extra_artifacts=[p for p in extras if p.is_file()] + pictures,
    )  # fmt: skip
