"""A NEAT training case on MLflow: one parent run per case, one nested run per seed with the
per-generation metrics, the champion's genome (JSON), its ONNX export with a parity check against
neat-python's own network, the fitness curve and renders of the champion's game as artifacts.

The case's champion is the best seed's (`seed_rank`: its playoff scores when a playoff chose
it, else the highest best fitness); it is logged as the model of that seed's run and
registered as a version of `territory-neat` (models.registry), so the export, tournament and
promotion stages treat it like any other family's model.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.neat.network import network, to_onnx
from models.arena import Mapper
from models.base import TrainingResult, artifact_metadata
from models.neat import make_config, network_game_spec, write_json
from models.neat_train import CaseResult, Trainer
from models.territory_render import render_strip

FAMILY = "neat"
PARITY_INPUTS = 512


def parity(champion: dict[str, Any], sections: dict, onnx_bytes: bytes, seed: int = 0) -> float:
    """Max |ONNX - neat-python FeedForwardNetwork| over random boards (troops/20 in [-1, 1])."""
    import neat
    import onnxruntime as ort

    from models.neat import genome_from_json

    config = make_config(sections)
    reference = neat.nn.FeedForwardNetwork.create(genome_from_json(champion, config), config)
    inputs = np.random.default_rng(seed).uniform(-1, 1, (PARITY_INPUTS, champion["num_inputs"]))
    expected = np.array([reference.activate(list(row)) for row in inputs])
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    (got,) = session.run(["outputs"], {"inputs": inputs.astype(np.float32)})
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


def train_seed(job: dict[str, Any]) -> dict[str, Any]:
    """One seed trained where it is sent (a cluster worker): resumed from job["work"]'s
    checkpoint (a retry after a lost worker continues exactly where the last generation
    ended), its files written into job["out"], its result returned as plain values. It opens
    no MLflow run (train_case logs the seed's run in the flow's process), so a killed worker
    leaves none RUNNING."""
    trainer = Trainer(job["case"], job["params"], Path(job["work"]))
    result = trainer.run()
    onnx_path, gap, _ = seed_files(trainer, result, Path(job["out"]))
    record = {k: v for k, v in vars(result).items() if k != "files"}
    return {"result": record, "onnx": str(onnx_path), "parity": gap}


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


def train_case(
    case: str,
    params: dict[str, Any],
    seeds: list[int],
    work: Path,
    out_dir: Path,
    experiment: str = "territory",
    register: bool = True,
    progress: Callable[[int, dict[str, float]], None] | None = None,
    tags: dict[str, str] | None = None,
    mapper: Mapper | None = None,
) -> dict[str, Any]:
    """Trains every seed (resuming from work/seed-N checkpoints), logs, exports, registers.
    `mapper` (a cluster: flows.stage_io.fan_out) trains the seeds elsewhere (`train_seed`);
    their runs are then logged here from what they return and the files they wrote. The runs
    and the version are written by models.tracking, as every family's."""
    import mlflow

    from models import neat
    from models.tracking import family_run, log_curves, log_model, register_trained

    case_tags = {"gridbots.case": case, **(tags or {})}
    seeds_out: list[dict[str, Any]] = []
    parent_params = {"case": case, "seeds": json.dumps(seeds)}
    with family_run(
        experiment, f"territory-neat-{case}", FAMILY, tags=case_tags, params=parent_params
    ) as parent:
        jobs = [
            {"case": case, "params": {**params, "seed": seed}, "seed": seed,
             "work": str(Path(work, f"seed-{seed}").resolve()),
             "out": str(Path(out_dir, f"seed-{seed}").resolve())}
            for seed in seeds
        ] if mapper else []  # fmt: skip
        remote = dict(zip(seeds, mapper(train_seed, jobs), strict=True)) if mapper else {}
        for seed in seeds:
            # a seed trained elsewhere left its finished checkpoint: this reads it back
            trainer = Trainer(case, {**params, "seed": seed}, work / f"seed-{seed}")
            game = network_game_spec(trainer.game)
            evolved = neat.inputs(game, {**trainer.params, "case": case})
            with family_run(
                experiment, f"{case}-seed{seed}", FAMILY, tags=case_tags, inputs=evolved,
                params={k: json.dumps(v) for k, v in trainer.params.items()}, nested=True,
            ) as run:  # fmt: skip

                def report(row: dict[str, float], seed: int = seed) -> None:
                    log_curves(neat.curves([row]))
                    if progress:
                        progress(seed, row)

                seed_dir = out_dir / f"seed-{seed}"
                if seed in remote:  # trained on a cluster worker: its rows, its files here
                    result = CaseResult(**remote[seed]["result"])
                    for row in result.history:
                        report(row)
                    onnx_path, gap = Path(remote[seed]["onnx"]), float(remote[seed]["parity"])
                    pictures = [seed_dir / "fitness.png", seed_dir / "game.png"]
                else:
                    log_curves(neat.curves(trainer.history))  # a resumed run's generations
                    result = trainer.run(report)
                    onnx_path, gap, pictures = seed_files(trainer, result, seed_dir)
                for picture in pictures:
                    mlflow.log_artifact(str(picture), artifact_path="plots")
                mlflow.log_artifact(str(seed_dir / "champion.json"), artifact_path="genome")
                mlflow.log_metrics(
                    {"export.parity_max_abs_diff": gap, "train_seconds": result.seconds}
                )
                seeds_out.append(
                    {
                        "seed": seed,
                        "run_id": run.info.run_id,
                        "result": result,
                        "trainer": trainer,
                        "onnx": onnx_path,
                        "parity": gap,
                    }
                )
        best = max(seeds_out, key=lambda s: seed_rank(s["result"]))
        finals = [s["result"].history[-1]["best_fitness"] for s in seeds_out]
        mlflow.log_metrics(
            {
                "median_best_fitness": statistics.median(
                    s["result"].best_fitness for s in seeds_out
                ),
                "median_last_best_fitness": statistics.median(finals),
                "best_seed": float(best["seed"]),
            }
        )
        parent_id = parent.info.run_id
    game = network_game_spec(best["trainer"].game)
    trained = TrainingResult(
        FAMILY, game, neat.ENCODING, best["trainer"].params, best["onnx"], "onnx",
        metrics={"best_fitness": best["result"].best_fitness},
    )  # fmt: skip
    dataset = neat.source(game, {"case": case})
    # the champion becomes the model of its seed's run
    chosen = log_model(trained, dataset, f"{best['parity']:.3g}", run_id=best["run_id"])
    version = register_trained(chosen) if register else None
    return {
        "case": case,
        "parent_run_id": parent_id,
        "best": best,
        "seeds": seeds_out,
        "version": version,
    }
