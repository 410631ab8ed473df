"""The pipeline's Prefect flows: one per stage, each a thin chain of tasks over the lower layers.

dvc.yaml runs one `gridbots stage NAME …` command per stage and that command runs one flow
here. Fan-out (generation shards, tournament pairings) runs on the flow's task runner: threads
by default, a Dask cluster when given its address (`--dask-address` or params `dask.address`).
Tasks that touch files or the registry retry. Every output is written under a temporary name
and renamed into place at the end, so a failed stage leaves no half-written output behind.

Paths (relative to the repository root, all DVC outputs):
    data/G/TECH  validation/G/TECH.json  encoded/G/NAME.npz  trained/G/NAME/  exports/G/
    evaluation/G/  promotion/G.json  metrics/G/*.json  plots/G/NAME.csv  reports/
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from engine.protocol import GameError
from flows.params import stage_label

RETRIES = {"retries": 2, "retry_delay_seconds": 1, "cache_policy": NO_CACHE}


class StageError(GameError):
    """A stage cannot go on (its input failed validation, a parity check failed): exit 2."""


# ---- small helpers -----------------------------------------------------------------------------
@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """A scratch folder beside `final` that replaces it only when the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield scratch
        if final.exists():
            shutil.rmtree(final) if final.is_dir() else final.unlink()
        os.replace(scratch, final)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def write_json(path: Path, data: Any) -> Path:
    """JSON through a temporary file and a rename (never half-written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(temp, path)
    return path


def lineage(root: Path) -> dict[str, str]:
    """The git commit and dvc.lock hash every MLflow run is tagged with."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    lock = Path(root) / "dvc.lock"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else "none"
    return {"git.commit": commit, "dvc.lock_sha256": digest}


def task_runner(params: dict[str, Any], dask_address: str | None = None):
    """Dask when an address is given (argument, else params dask.address), threads otherwise."""
    address = dask_address or params.get("dask", {}).get("address") or ""
    if address:
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise StageError(
                "a Dask address needs the dask extra: pip install 'gridbots[dask]'"
            ) from None
        return DaskTaskRunner(address=address)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=max(1, int(params.get("workers", 1))))


def use_tracking(params: dict[str, Any], root: Path) -> None:
    """MLflow at params mlflow.tracking_uri (a relative SQLite path is relative to `root`)."""
    uri = params["mlflow"]["tracking_uri"]
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = f"sqlite:///{(Path(root) / uri[len('sqlite:///') :]).resolve()}"
    os.environ.setdefault("MLFLOW_TRACKING_URI", uri)


# ---- generate ----------------------------------------------------------------------------------
@task(**RETRIES)
def run_shard(shard_task: dict[str, Any]) -> dict[str, Any]:
    """One shard into fsynced temporary files (any process, any machine sharing the disk)."""
    from features.store import run_shard as store_run_shard

    return store_run_shard(shard_task)


def generate_flow(root: Path, params: dict, game: str, technique: str, dask: str | None = None):
    """A dataset as shards fanned out on the task runner, committed into the manifest."""
    runner = task_runner(params, dask)
    return _generate.with_options(task_runner=runner)(root, params, game, technique)


@flow(name="generate")
def _generate(root: Path, params: dict, game: str, technique: str) -> dict[str, Any]:
    from engine import parse_game_spec
    from features import generate as techniques
    from features import store

    settings = params[game]["datasets"][technique]
    spec, seed = params[game]["spec"], int(settings["seed"])
    options = dict(settings["options"])
    with atomic_dir(Path(root) / "data" / game / technique) as scratch:
        g = parse_game_spec(spec)
        module, tparams = techniques.parse_params(g, technique, options)
        identity = store._identity(g, technique, tparams, seed)
        planned = techniques.num_shards(module, g, tparams)
        stride = techniques.game_id_stride(module, g, tparams)
        manifest = store._open(scratch, g, identity, planned)
        jobs = [
            {
                "game": g.spec(),
                "technique": technique,
                "params": tparams,
                "seed": seed,
                "shard": k,
                "first_game_id": k * stride,
                "root": str(scratch.resolve()),
            }
            for k in range(planned)
        ]
        futures = [run_shard.submit(job) for job in jobs]
        for future in futures:  # commit in shard order, as generate_dataset would
            result = future.result()
            for table, temp in result.pop("temp").items():
                os.replace(temp, store.shard_path(scratch, table, result["shard"]))
            manifest["shards"][str(result["shard"])] = result
        store._save(scratch, manifest)
        # resuming a dataset whose shards are all done only finalises its manifest
        manifest = store.generate_dataset(scratch, spec, technique, options, seed=seed)
    return {"counts": manifest["counts"], "content_hash": manifest["content_hash"]}


# ---- validate ----------------------------------------------------------------------------------
@task(**RETRIES)
def validate_dataset(directory: Path, sample: int, seed: int) -> dict[str, Any]:
    from features.validate import validate_dataset as run

    report = run(directory, sample=sample, seed=seed, docs=False, write=False)
    return {"success": report.success, "summary": report.summary(), "failures": report.failures()}


@flow(name="validate")
def validate_flow(root: Path, params: dict, game: str, technique: str) -> dict[str, Any]:
    """The gate: a failing dataset stops the run with the summary and writes no verdict file."""
    settings = params[game]["validation"]
    directory = Path(root) / "data" / game / technique
    verdict = validate_dataset(directory, int(settings["sample"]), int(settings["seed"]))
    if not verdict["success"]:
        raise StageError(f"{stage_label('validate', game, technique)}: {verdict['summary']}")
    from features.store import read_manifest

    manifest = read_manifest(directory)
    verdict.update(content_hash=manifest["content_hash"], counts=manifest["counts"])
    write_json(Path(root) / "validation" / game / f"{technique}.json", verdict)
    return verdict


# ---- encode ------------------------------------------------------------------------------------
def require_validated(root: Path, game: str, technique: str) -> dict[str, Any]:
    """The validation verdict of a dataset; StageError with its summary unless it passed."""
    path = Path(root) / "validation" / game / f"{technique}.json"
    if not path.is_file():
        raise StageError(f"{game}/{technique} has not passed validation ({path} is missing)")
    verdict = json.loads(path.read_text())
    if not verdict.get("success"):
        raise StageError(f"{game}/{technique} failed validation: {verdict.get('summary')}")
    return verdict


@task(**RETRIES)
def encode_dataset(directory: Path, encoding: str, options: dict, out: Path) -> dict[str, Any]:
    from features.encode import encode_dataset as run
    from features.encode import save
    from features.store import read_manifest

    arrays, meta = run(directory, encoding, **options)
    meta["manifest_hash"] = read_manifest(directory)["content_hash"]
    temp = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")
    try:
        save(arrays, meta, temp)
        os.replace(temp, out)
    finally:
        temp.unlink(missing_ok=True)
    return {"rows": meta["rows"], "shapes": meta["shapes"]}


@flow(name="encode")
def encode_flow(root: Path, params: dict, game: str, name: str) -> dict[str, Any]:
    settings = params[game]["encodings"][name]
    require_validated(root, game, settings["dataset"])
    out = Path(root) / "encoded" / game / f"{name}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    directory = Path(root) / "data" / game / settings["dataset"]
    return encode_dataset(directory, settings["encoding"], dict(settings["options"]), out)


# ---- train -------------------------------------------------------------------------------------
def sweep_items(sweep: dict[str, Any]) -> list[str]:
    """params.yaml `sweep: {key: [v1, v2]}` → tracking's `key=v1,v2` strings."""
    items = []
    for key, values in sweep.items():
        values = values if isinstance(values, list) else [values]
        items.append(f"{key}={','.join(str(v) for v in values)}")
    return items


@task(**RETRIES)
def tag_runs(run_ids: list[str], tags: dict[str, str]) -> None:
    from models.tracking import client

    mlflow_client = client()
    for run_id in run_ids:
        for key, value in tags.items():
            mlflow_client.set_tag(run_id, key, value)


@flow(name="train")
def train_flow(root: Path, params: dict, game: str, name: str) -> dict[str, Any]:
    """A sweep from params.yaml on MLflow; the best run registered; its files kept."""
    from models.tracking import train

    use_tracking(params, root)
    settings = params[game]["models"][name]
    data = Path(root) / "encoded" / game / f"{settings['encoding']}.npz"
    root = Path(root)
    with (
        atomic_dir(root / "trained" / game / name) as scratch,
        tempfile.TemporaryDirectory(prefix="gridbots-train-") as work,
    ):
        outcome = train(
            data,
            settings["family"],
            dict(settings["params"]),
            sweep_items(settings["sweep"]),
            experiment=game,
            register=True,
            out_dir=Path(work),
            expect_game=game,
        )
        best = outcome.best
        artifact = Path(best.result.artifact)
        for path in artifact.parent.iterdir():
            if path.is_file() and path.suffix != ".png":
                shutil.copy2(path, scratch / path.name)
        run_ids = [r.run_id for r in outcome.runs]
        if outcome.parent_run_id:
            run_ids.append(outcome.parent_run_id)
        tag_runs(run_ids, {**lineage(root), "gridbots.stage": stage_label("train", game, name)})
        summary = {
            "name": name,
            "family": best.result.family,
            "encoding": best.result.encoding,
            "run_id": best.run_id,
            "parent_run_id": outcome.parent_run_id,
            "version": outcome.version,
            "artifact": artifact.name,
            "artifact_kind": best.result.artifact_kind,
            "objective": {"metric": outcome.metric, "direction": outcome.direction},
            "metrics": best.result.metrics,
            "params": best.params,
            "parity": best.parity,
            "configurations": len(outcome.runs),
        }
        write_json(scratch / "run.json", summary)
    metrics = {k: float(v) for k, v in best.result.metrics.items()}
    write_json(root / "metrics" / game / f"train-{name}.json", metrics)
    write_curve(root / "plots" / game / f"{name}.csv", best.result.history)
    return summary


def write_curve(path: Path, history: dict[str, list[float]]) -> None:
    """Per-epoch curves as CSV (dvc plots reads it); one `step` row when there is no curve."""
    keys = sorted(k for k, v in history.items() if v)
    steps = max((len(history[k]) for k in keys), default=0)
    lines = [",".join(["step", *keys])] if keys else ["step,none"]
    for step in range(steps):
        row = [str(step + 1)]
        for key in keys:
            values = history[key]
            row.append(f"{values[step]:.6g}" if step < len(values) else "")
        lines.append(",".join(row))
    if not keys:
        lines.append("1,0")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text("\n".join(lines) + "\n")
    os.replace(temp, path)


# ---- export ------------------------------------------------------------------------------------
SPEC_OF_KIND = {
    "onnx": "onnx:{path}",
    "hmm-json": "seq:model={path}",
    "crfsuite": "seq:model={path}",
}


@task(**RETRIES)
def export_model(root: Path, game_spec: str, trained: Path, out: Path) -> dict[str, Any]:
    """Fetches the best run's artifact from MLflow, checks it, and plays one move with it."""
    from agents import make
    from engine import parse_game_spec
    from models.export import TOLERANCE
    from models.tracking import fetch_run_artifact

    run = json.loads((trained / "run.json").read_text())
    with tempfile.TemporaryDirectory(prefix="gridbots-export-") as scratch:
        path, info = fetch_run_artifact(run["run_id"], Path(scratch))
        out.mkdir(parents=True, exist_ok=True)
        target = out / path.name
        shutil.copyfile(path, target)
    sidecar = trained / f"{path.name}.json"  # CRFsuite metadata travels beside the model
    if sidecar.is_file():
        shutil.copyfile(sidecar, out / sidecar.name)
    parity = info.get("export.parity_max_abs_diff", "n/a")
    if run["artifact_kind"] == "onnx" and not (
        parity not in ("n/a", "") and float(parity) <= TOLERANCE
    ):
        raise StageError(f"{run['name']}: ONNX parity {parity} is not within {TOLERANCE}")
    spec = SPEC_OF_KIND[run["artifact_kind"]].format(path=target.resolve())
    game = parse_game_spec(game_spec)
    state = game.new_initial_state(seed=0)
    player = max(state.current_player(), 0)  # seat 0 at a simultaneous node
    action = make(spec, game, seed=0).step(state, player)
    if action not in state.legal_actions(player):
        raise StageError(f"{run['name']}: the exported model plays an illegal first move")
    return {
        "name": run["name"],
        "family": run["family"],
        "file": target.name,
        "kind": run["artifact_kind"],
        "parity": parity,
        "run_id": run["run_id"],
        "version": run["version"],
    }


@flow(name="export")
def export_flow(root: Path, params: dict, game: str) -> list[dict[str, Any]]:
    use_tracking(params, root)
    root = Path(root)
    with atomic_dir(root / "exports" / game) as scratch:
        futures = [
            export_model.submit(
                root, params[game]["spec"], root / "trained" / game / name, scratch / name
            )
            for name in params[game]["models"]
        ]
        exported = [f.result() for f in futures]
        write_json(scratch / "exports.json", exported)
    return exported


# ---- evaluate ----------------------------------------------------------------------------------
def bot_specs(root: Path, game: str) -> dict[str, str]:
    """label → agent spec of every exported model of `game` (absolute paths)."""
    folder = Path(root) / "exports" / game
    exported = json.loads((folder / "exports.json").read_text())
    return {
        e["name"]: SPEC_OF_KIND[e["kind"]].format(path=(folder / e["name"] / e["file"]).resolve())
        for e in exported
    }


def pairing_list(bots: list[str], baselines: list[str]) -> list[tuple[str, str]]:
    """Every bot against every baseline, then every pair of bots."""
    against = [(b, x) for b in bots for x in baselines]
    return against + [(a, b) for i, a in enumerate(bots) for b in bots[i + 1 :]]


@task(**RETRIES)
def play_pairing(game_spec: str, spec_a: str, spec_b: str, config: dict) -> list[dict]:
    """One pairing's games (a pure function of its arguments: same rows on any worker)."""
    from agents.file_agent import make_agent
    from engine import parse_game_spec
    from engine.tournament import MatchConfig
    from engine.tournament import play_pairing as play

    game = parse_game_spec(game_spec)
    return play(game, spec_a, spec_b, MatchConfig(**config), make_seat=make_agent)


def evaluate_flow(root: Path, params: dict, game: str, dask: str | None = None):
    runner = task_runner(params, dask)
    return _evaluate.with_options(task_runner=runner)(root, params, game)


def relabel(rows: list[dict], labels: dict[str, str]) -> list[dict]:
    for row in rows:
        row["spec_a"] = labels.get(row["spec_a"], row["spec_a"])
        row["spec_b"] = labels.get(row["spec_b"], row["spec_b"])
        row["pairing"] = f"{row['spec_a']} vs {row['spec_b']}"
    return rows


def standings(specs: list[str], summaries: list[dict]) -> list[dict]:
    from engine.tournament import score_summary

    table = []
    for spec in specs:
        w = d = lost = 0
        for s in summaries:
            if s["spec_a"] == spec:
                w, d, lost = w + s["wins"], d + s["draws"], lost + s["losses"]
            elif s["spec_b"] == spec:
                w, d, lost = w + s["losses"], d + s["draws"], lost + s["wins"]
        table.append({"spec": spec, **score_summary(w, d, lost)})
    return sorted(table, key=lambda row: -row["score"])


@flow(name="evaluate")
def _evaluate(root: Path, params: dict, game: str) -> dict[str, Any]:
    """The tournament: each trained bot vs the baselines and vs each other; Parquet + JSON."""
    from engine.tournament import summarize_pairing, write_outputs

    root = Path(root)
    settings = params[game]["evaluate"]
    bots = bot_specs(root, game)
    labels = {spec: name for name, spec in bots.items()}
    baselines = [str(b) for b in settings["baselines"]]
    config = {
        "games": int(settings["games"]),
        "seed": int(settings["seed"]),
        "opening": int(settings["opening"]),
    }
    spec = params[game]["spec"]
    pairs = pairing_list(list(bots.values()), baselines)
    futures = [play_pairing.submit(spec, a, b, config) for a, b in pairs]
    rows: list[dict] = []
    summaries = []
    for future in futures:
        pairing_rows = relabel(future.result(), labels)
        rows.extend(pairing_rows)
        summaries.append(summarize_pairing(pairing_rows))
    summary = {
        "game": spec,
        "format": "each bot vs the baselines, then bot vs bot",
        "games_per_pairing": config["games"],
        "seed": config["seed"],
        "bots": list(bots),
        "baselines": baselines,
        "pairings": summaries,
        "standings": standings([*bots, *baselines], summaries),
    }
    with atomic_dir(root / "evaluation" / game) as scratch:
        write_outputs(scratch, rows, summary)
    metrics = {
        f"{s['spec_a']}.vs.{s['spec_b']}.score": s["score"]
        for s in summaries
        if s["spec_a"] in bots
    }
    write_json(root / "metrics" / game / "evaluate.json", metrics)
    log_stage_run(root, params, game, "evaluate", metrics)
    return summary


def log_stage_run(root: Path, params: dict, game: str, stage: str, metrics: dict) -> None:
    """An MLflow run for a non-training stage, in the game's experiment, with its lineage."""
    use_tracking(params, root)
    from models.tracking import client, experiment_id

    mlflow_client = client()
    run = mlflow_client.create_run(
        experiment_id(mlflow_client, game),
        run_name=stage_label(stage, game),
        tags={**lineage(root), "gridbots.stage": stage_label(stage, game)},
    )
    for key, value in metrics.items():
        clean = re.sub(r"[^A-Za-z0-9_.\- /:]", "_", key)
        mlflow_client.log_metric(run.info.run_id, clean, value)
    mlflow_client.set_terminated(run.info.run_id)


# ---- promote -----------------------------------------------------------------------------------
@task(**RETRIES)
def promotion_gate(name: str, version: str, games: int, baseline: str, seed: int) -> dict:
    """The registry's gate for one candidate (a version already in production is kept)."""
    from models.base import ModelError
    from models.registry import promote_if_better

    try:
        return promote_if_better(name, version, games=games, baseline=baseline, seed=seed).as_dict()
    except ModelError as error:
        if "already" not in str(error):
            raise
        return {"name": name, "version": version, "promoted": True, "already": True}


@task(**RETRIES)
def production_version(name: str) -> str | None:
    from models.registry import PRODUCTION, describe

    return describe(name)["aliases"].get(PRODUCTION)


@flow(name="promote")
def promote_flow(root: Path, params: dict, game: str) -> dict[str, Any]:
    """Per family, each new candidate faces the gate; records who is in production."""
    from models.registry import model_name

    use_tracking(params, root)
    root = Path(root)
    gate = params["promote"]
    families: dict[str, list[dict]] = {}
    for name in params[game]["models"]:
        run = json.loads((root / "trained" / game / name / "run.json").read_text())
        families.setdefault(run["family"], []).append(run)
    result: dict[str, Any] = {"game": game, "families": {}}
    for family_name, runs in families.items():
        registered = model_name(game, family_name)
        decisions = [
            promotion_gate(
                registered, str(run["version"]), int(gate["games"]), gate["baseline"], gate["seed"]
            )
            for run in runs
        ]
        production = production_version(registered)
        by_version = {str(run["version"]): run["name"] for run in runs}
        result["families"][family_name] = {
            "model": registered,
            "production": production,
            "production_label": by_version.get(str(production)),
            "decisions": decisions,
        }
    write_json(root / "promotion" / f"{game}.json", result)
    metrics = {
        f"{f}.promoted": float(v["production"] is not None) for f, v in result["families"].items()
    }
    log_stage_run(root, params, game, "promote", metrics)
    return result


# ---- report ------------------------------------------------------------------------------------
@flow(name="report")
def report_flow(root: Path, params: dict) -> Path:
    from flows.report import write_report

    root = Path(root)
    with atomic_dir(root / "reports") as scratch:
        write_report(root, params["games"], scratch)
    return root / "reports" / "README.md"


# ---- the improvement cycle (served on a schedule) ----------------------------------------------
@flow(name="improvement-cycle")
def improvement_cycle(root: str = ".") -> dict[str, Any]:
    """`dvc repro`, then the promotion gate of every game (a new candidate may now win)."""
    from flows.params import load_for

    done = subprocess.run(["dvc", "repro"], cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise StageError(f"dvc repro failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    params = load_for("report", path=Path(root) / "params.yaml")
    return {game: promote_flow(Path(root), params, game) for game in params["games"]}
