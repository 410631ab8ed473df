"""`gridbots stage playerzero GAME`: the PlayerZero loop as one Prefect flow (a DVC stage per game).

Each generation's steps (models/playerzero_loop.py) run as tasks, so the Prefect UI shows
where a loop is; MLflow gets one parent run per loop and one nested run per generation with
its losses, policy accuracy, arena score, self-play positions/s, optimal-move rates and
wall-clock, plus the network as a logged ONNX model. An accepted network is registered as
`<game>-playerzero` with its evidence and faces the registry's promotion gate. Everything
lives under playerzero/GAME (a DVC `persist` output): raising `generations` continues the loop,
and a killed run resumes at the step it was in. The MLflow ids, registrations, clocks, curve and
report live in its run record metrics/playerzero/GAME-run (models.playerzero_loop.run_home, also
kept by DVC), so the same inputs make the same loop folder. With a Dask address
(stage_io.dask_address) the self-play shards, arena pairs and the evaluation match are cluster
tasks (stage_io.fan_out) whose files land in that folder, in a shared data root; training,
validation and MLflow stay in the stage's process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from models import playerzero_loop as loop

STEP = {"cache_policy": NO_CACHE}


def echo(text: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold]playerzero[/bold] {text}", highlight=False)


def _mapper(on_cluster: bool):
    from flows.pipeline.stage_io import fan_out

    return fan_out if on_cluster else None


@task(**STEP)
def self_play_task(root: Path, spec: str, settings: dict, state: dict, g: int,
                   on_cluster: bool = False) -> dict:  # fmt: skip
    from features.store import progress_bar

    with progress_bar(f"generation {g} self-play shards") as progress:
        return loop.self_play(root, spec, settings, state, g, progress, _mapper(on_cluster))


@task(**STEP)
def validate_task(root: Path, g: int, validation: dict) -> dict:
    return loop.validate(root, g, validation)


@task(**STEP)
def encode_task(root: Path, g: int, game: Any) -> str:
    return str(loop.encode(root, g, game))


@task(**STEP)
def curriculum_task(root: Path, g: int, game: Any, settings: dict, state: dict, run_id: str,
                    on_cluster: bool = False):  # fmt: skip
    from models.tracking import client

    mlflow = client()

    def progress(step: int, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            mlflow.log_metric(run_id, f"train.{key}", float(value), step=step)

    return loop.curriculum_step(root, g, game, settings, state, echo, progress,
                                _mapper(on_cluster))  # fmt: skip


@task(**STEP)
def evaluate_task(root: Path, g: int, game: Any, model: str, settings: dict,
                  on_cluster: bool = False) -> dict:  # fmt: skip
    return loop.evaluate(root, g, game, model, settings, _mapper(on_cluster))


@task(**STEP)
def register_task(root: Path, g: int, run: dict, summary: dict, run_id: str, gate: dict) -> dict:
    """Logs the accepted network into the generation's run, registers it, runs the gate."""
    from models.base import TrainingResult
    from models.registry import promote_if_better
    from models.tracking import client, file_hash, log_model, register_trained

    record = loop.gen_dir(loop.run_home(root), g) / "registered.json"  # registry state
    done = loop.read_json(record)
    if done is not None:
        return done
    metrics = {**run["metrics"], **_flat_metrics(summary)}
    result = TrainingResult("playerzero", summary["game"], "planes", run["params"],
                            Path(root) / run["model"], "onnx", metrics)  # fmt: skip
    encoded = loop.gen_dir(root, g) / "encoded.npz"
    dataset = {
        "game": summary["game"],
        "dataset.path": str(encoded.resolve()),
        "dataset.sha256": file_hash(encoded),
        "dataset.manifest_hash": summary["selfplay"]["content_hash"],
    }
    parity = f"{float(run['metrics'].get('parity_max_abs_diff', float('nan'))):.3g}"
    trained = log_model(result, dataset, parity, run_id=run_id)  # into the generation's run
    mlflow_client = client()
    version = register_trained(trained, mlflow_client=mlflow_client)
    name = f"{summary['game'].split(':', 1)[0]}-playerzero"
    evidence = {
        "playerzero.generation": g + 1,
        "playerzero.scale": run["scale"],
        "arena.evidence": json.dumps(summary["arena"], default=str),
    }
    for key, value in evidence.items():
        mlflow_client.set_model_version_tag(name, version, key, str(value))
    decision = promote_if_better(name, version, games=int(gate["games"]),
                                 baseline=gate["baseline"], seed=int(gate["seed"]))  # fmt: skip
    registered = {"name": name, "version": version, "promotion": decision.as_dict()}
    loop.write_json(record, registered)
    return registered


def _flat_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """The generation's headline numbers as flat metric names."""
    out = {}
    for name, key in loop.CURVE_KEYS:
        value = loop.flat_value(summary, key)
        if isinstance(value, float):
            out[name] = value
    out["selfplay_games"] = float(summary["selfplay"]["games"])
    out["selfplay_positions"] = float(summary["selfplay"]["positions"])
    out["generation_seconds"] = float(summary["seconds"])
    return out


def _generation(root: Path, spec: str, game: Any, settings: dict, gate: dict, state: dict,
                g: int, parent_id: str, experiment: str, on_cluster: bool) -> dict:  # fmt: skip
    from models.run_inputs import log_encoded_file
    from models.tracking import client, open_run

    mlflow = client()
    id_file = loop.gen_dir(loop.run_home(root), g) / "run_id"
    resumed = id_file.is_file()
    if resumed:
        run_id = id_file.read_text().strip()
    else:
        player = loop.self_play_network(state)
        by = player["path"] if player else settings["first"]["agent"]
        described = {"generation": g, "self_play_by": by, "coach_scale": state["coach"],
                     "students": state["students"]}  # fmt: skip
        run_id = open_run(experiment, f"generation {g}", "playerzero", spec,
                          parent_run_id=parent_id,
                          tags={"gridbots.stage": f"playerzero@{game.name}"},
                          params={k: str(v) for k, v in described.items()})  # fmt: skip
        id_file.parent.mkdir(parents=True, exist_ok=True)
        id_file.write_text(run_id)
    # every attempt at this generation counts, a killed one's too (the loop's `hours` budget)
    with loop.GenerationClock(loop.gen_dir(loop.run_home(root), g) / "clock.json") as clock:
        selfplay = self_play_task(root, spec, settings, state, g, on_cluster)
        echo(f"generation {g}: {selfplay['games']} games, {selfplay['positions']} positions, "
             f"{selfplay['positions_per_s']:.0f} positions/s ({selfplay['agent']})")  # fmt: skip
        validate_task(root, g, settings["validation"])
        encoded = encode_task(root, g, game)
        # the self-play it generated; validation passed (validate_task raises otherwise)
        source = {"dataset": str(loop.gen_dir(root, g) / "data"), "table": "positions",
                  "validation": "passed"}  # fmt: skip
        log_encoded_file(mlflow, run_id, Path(encoded), source)
        runs, fought, changes = curriculum_task(root, g, game, settings, state, run_id,
                                                on_cluster)  # fmt: skip
        role = "student" if "student" in fought else "coach"
        candidate = runs[role]
        evaluation = evaluate_task(root, g, game, candidate["model"], settings, on_cluster)
    if "policy" in evaluation:
        echo(f"generation {g}: optimal moves: policy {evaluation['policy']['optimal_rate']:.3f}"
             f", puct {evaluation['puct']['optimal_rate']:.3f}")  # fmt: skip
    previous = float(state["seconds"])
    seconds = clock.seconds()
    summary = {
        "generation": g,
        "game": spec,
        "network": candidate["model"],
        "role": role,
        "selfplay": selfplay,
        "train": candidate["metrics"],
        "arena": fought[role],
        "evaluation": evaluation,
        "seconds": seconds,
        "hours": (previous + seconds) / 3600.0,
        "run_id": run_id,
        "resumed": resumed,
    }
    if fought[role]["accepted"]:
        summary["registry"] = register_task(root, g, candidate, summary, run_id, gate)
    metrics = _flat_metrics(summary)
    for key, value in metrics.items():
        mlflow.log_metric(run_id, key, value, step=g)
    mlflow.set_tag(run_id, "playerzero.network", candidate["model"])
    mlflow.set_terminated(run_id)
    return loop.commit(root, g, state, changes, summary)


def playerzero_stage(root: Path, params: dict, game_name: str, generations: int | None = None,
                     dask: str | None = None) -> dict:  # fmt: skip
    """The stage: the flow, its fan-out on the cluster when it has a Dask address."""
    from flows.pipeline.stage_io import run_flow

    return run_flow(playerzero_flow, params, dask, root, params, game_name, generations)


@flow(name="playerzero")
def playerzero_flow(root: Path, params: dict, game_name: str, generations: int | None = None,
                    on_cluster: bool = False):  # fmt: skip
    """The loop of one game up to `generations` (default params), resuming where it stopped."""
    from engine import parse_game_spec
    from flows.pipeline.stage_io import lineage, use_tracking
    from models.tracking import client, open_run

    settings = params["playerzero"][game_name]
    use_tracking(params, root)
    root = Path(root).resolve() if on_cluster else Path(root)  # workers may run elsewhere
    home = root / "playerzero" / game_name
    state = loop.load_state(home, settings)
    spec = str(settings.get("spec", game_name))
    game = parse_game_spec(spec)
    target = int(generations if generations is not None else settings["generations"])
    mlflow = client()
    experiment = game.name
    if not state.get("parent_run_id"):
        tags = {**lineage(root), "gridbots.stage": f"playerzero@{game.name}"}
        described = {k: json.dumps(v, default=str)[:500] for k, v in settings.items()}
        state["parent_run_id"] = open_run(experiment, f"playerzero-{game.name}", "playerzero",
                                          spec, tags=tags, params=described)  # fmt: skip
        state = loop.save_state(home, state)
    else:  # the loop continues: its run is RUNNING while a process works on it, no longer
        mlflow.update_run(state["parent_run_id"], status="RUNNING")
    started = time.time()
    budget = float(settings.get("hours", 0) or 0) * 3600.0  # 0: generations alone decide
    while state["generation"] < target:
        g = state["generation"]
        history = state["history"]
        last = float(history[-1]["seconds"]) if history else 0.0
        if budget and history and float(state["seconds"]) + last > budget:
            echo(f"generation {g} would end past the {budget / 3600:.2f} h budget: stopping")
            break
        gate = {**params["promote"], **settings.get("promote", {})}  # the loop may play fewer
        state = _generation(home, spec, game, settings, gate, state, g,
                            state["parent_run_id"], experiment, on_cluster)  # fmt: skip
    from flows.reports.playerzero import write_loop_report

    report = write_loop_report(home, game.name, settings)
    # what dvc metrics / dvc plots read (outside the persisted loop folder)
    record = loop.run_home(home)
    loop.write_json(root / "metrics" / "playerzero" / f"{game_name}.json",
                    loop.read_json(record / "metrics.json", {}))  # fmt: skip
    curve = root / "plots" / "playerzero" / f"{game_name}.csv"
    curve.parent.mkdir(parents=True, exist_ok=True)
    source = record / "curve.csv"
    curve.write_text(source.read_text() if source.is_file() else "generation\n")
    mlflow.log_artifact(state["parent_run_id"], str(report.with_suffix(".png")), "plots")
    mlflow.log_metric(state["parent_run_id"], "generations", float(state["generation"]))
    mlflow.set_terminated(state["parent_run_id"], "FINISHED")  # until more generations resume it
    echo(f"{game.name}: {state['generation']} generations, {state['seconds'] / 3600:.2f} h of "
         f"generations ({time.time() - started:.0f} s this run); report {report}")  # fmt: skip
    return {"generation": state["generation"], "best": state["best"], "report": str(report)}
