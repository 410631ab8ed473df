"""The evaluate stage: the tournament of the exported bots (and `evaluate.bots`, labelled specs
such as an exported network inside a search) and the baselines (plus each `evaluate.optional`
one that can play, a registry bot not registered yet being skipped with why); for a puzzle
(no opponent) each bot's success rate per level beside the game's reference solver
(engine.puzzles).

A killed tournament resumes: each finished pairing's rows are kept under
`checkpoints/<game>/evaluate/`, named by a digest of the pairing's job and of the bots' exported
files, so a rerun plays only the pairings still missing (a study's 10,000-game pairings take
minutes each) and never reuses games of a model that has changed since."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

from prefect import flow

from flows.pipeline.stage_io import (
    SPEC_OF_KIND,
    atomic_dir,
    fan_out,
    local_processes,
    task_runner,
    write_json,
)
from flows.pipeline.stage_runs import log_stage_run
from models.pairings import chosen_pairings, pairing_list


def bot_specs(root: Path, game: str) -> dict[str, str]:
    """label → agent spec of every exported model of `game` (absolute paths)."""
    folder = Path(root) / "exports" / game
    exported = json.loads((folder / "exports.json").read_text())
    return {
        e["name"]: SPEC_OF_KIND[e["kind"]].format(path=(folder / e["name"] / e["file"]).resolve())
        for e in exported
    }


def evaluate_flow(root: Path, params: dict, game: str, dask: str | None = None):
    from engine import parse_game_spec

    runner = task_runner(params, dask)
    puzzle = parse_game_spec(params[game]["spec"]).kind == "puzzle"
    chosen = _evaluate_puzzle if puzzle else _evaluate
    settings = params[game]["evaluate"]
    # a lower bound on the pairings (all-vs-all adds bot pairs): enough to choose the pool
    pairings = len(settings.get("pairings") or settings["baselines"]) or 1
    from agents.onnx.runtime import process_pool

    with local_processes(params, dask, int(settings["games"]) * pairings, process_pool):
        return chosen.with_options(task_runner=runner)(root, params, game)


def relabel(rows: list[dict], labels: dict[str, str]) -> list[dict]:
    for row in rows:
        row["spec_a"] = labels.get(row["spec_a"], row["spec_a"])
        row["spec_b"] = labels.get(row["spec_b"], row["spec_b"])
        row["pairing"] = f"{row['spec_a']} vs {row['spec_b']}"
    return rows


@flow(name="evaluate")
def _evaluate(root: Path, params: dict, game: str) -> dict[str, Any]:
    """The tournament: each trained bot vs the baselines and vs each other; Parquet + JSON."""
    from engine.tournament import standings, summarize_pairing
    from flows.reports.tournament import write_outputs
    from models.arena import play_job  # one pairing's rows: a pure function of the job

    root = Path(root)
    settings = params[game]["evaluate"]
    spec = params[game]["spec"]
    bots = bot_specs(root, game)
    extra = {str(k): str(v) for k, v in (settings.get("bots") or {}).items()}
    bots.update(extra)  # labelled specs beside the exports (an exported network in a search)
    labels = {spec: name for name, spec in bots.items()}
    baselines = [str(b) for b in settings["baselines"]]
    skipped = []  # `optional` baselines (a bot not registered yet) that cannot play here
    for candidate in map(str, settings.get("optional") or []):
        why = unavailable(spec, candidate)
        baselines += [] if why else [candidate]
        skipped += [{"spec": candidate, "why": why}] if why else []
    config = {
        "games": int(settings["games"]),
        "seed": int(settings["seed"]),
        "opening": int(settings["opening"]),
    }
    chosen = settings.get("pairings")  # optional: a study's own layout instead of all-vs-all
    pairs = (
        chosen_pairings(chosen, bots, baselines)
        if chosen
        else pairing_list(list(bots.values()), baselines)
    )
    jobs = [{"game": spec, "a": a, "b": b, **config} for a, b in pairs]
    work = root / "checkpoints" / game / "evaluate"
    exported = {  # an extra bot may play any exported file (the whole folder's digest) and
        # the files its spec names (study 002's base network under studies/)
        spec: files_digest(root / "exports" / game / ("" if name in extra else name))
        + (named_files_digest(root, spec) if name in extra else "")
        for name, spec in bots.items()
    }
    kept = [work / f"{pairing_digest(job, exported)}.json" for job in jobs]
    missing = [i for i, path in enumerate(kept) if not path.is_file()]
    for i, result in zip(missing, fan_out(play_job, [jobs[i] for i in missing]), strict=True):
        write_json(kept[i], result, compact=True)  # as it arrives: a kill loses the rest only
    rows: list[dict] = []
    summaries = []
    for path in kept:  # job order, every pairing read back alike, resumed or not
        pairing_rows = relabel(json.loads(path.read_text()), labels)
        rows.extend(pairing_rows)
        summaries.append(summarize_pairing(pairing_rows))
    summary = {
        "game": spec,
        "format": "the pairings of evaluate.pairings"
        if chosen
        else "each bot vs the baselines, then bot vs bot",
        "games_per_pairing": config["games"],
        "seed": config["seed"],
        "bots": list(bots),
        "baselines": baselines,
        "pairings": summaries,
        "standings": standings([*bots, *baselines], summaries),
        **({"skipped": skipped} if "optional" in settings else {}),
    }
    with atomic_dir(root / "evaluation" / game) as scratch:
        write_outputs(scratch, rows, summary, root / "metrics" / game / "evaluate-measured.json")
    metrics = {
        f"{s['spec_a']}.vs.{s['spec_b']}.score": s["score"]
        for s in summaries
        if s["spec_a"] in bots
    }
    write_json(root / "metrics" / game / "evaluate.json", metrics)
    log_stage_run(root, params, game, "evaluate", metrics)
    shutil.rmtree(work, ignore_errors=True)
    return summary


def unavailable(game_spec: str, spec: str) -> str | None:
    """Why an agent spec cannot play here (None when it can): an `optional` baseline."""
    from agents import make
    from agents.base import AgentError
    from engine import parse_game_spec

    try:
        make(spec, parse_game_spec(game_spec), seed=0)
    except AgentError as error:
        return str(error)
    return None


def files_digest(folder: Path) -> str:
    """The names and bytes of every file under `folder` (an exported bot), read once a stage."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


#: a file an agent spec names: `model=PATH` or `eval=onnx:PATH` (up to the next comma)
NAMED_FILE = re.compile(r"(?:model=|onnx:)([^,]+)")


def named_files_digest(root: Path, spec: str) -> str:
    """The bytes of each file `spec` names (a path relative to `root`, or absolute): an extra
    bot's pairings are played again when its network changes."""
    digest = hashlib.sha256()
    for name in NAMED_FILE.findall(spec):
        path = Path(root) / name  # an absolute name stays itself
        if path.is_file():
            digest.update(name.encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def pairing_digest(job: dict[str, Any], exported: dict[str, str]) -> str:
    """The job (specs, games, seed, opening) and the `files_digest` of each side that is a bot."""
    sides = [exported.get(job["a"], ""), exported.get(job["b"], "")]
    return hashlib.sha256(json.dumps([job, sides], sort_keys=True).encode()).hexdigest()[:24]


@flow(name="evaluate-puzzle")
def _evaluate_puzzle(root: Path, params: dict, game: str) -> dict[str, Any]:
    """Every bot, baseline and the reference attempt the same scenarios of the chain's level:
    success rates with intervals and laps beside the reference; Parquet + JSON + PNG."""
    import pandas as pd

    from engine import parse_game_spec
    from engine.puzzles import level_summary
    from engine.tournament import score_summary
    from flows.reports.tournament import plot_scores
    from models.arena import attempts_job  # one bot's attempts: a pure function of the job

    root = Path(root)
    settings = params[game]["evaluate"]
    spec = params[game]["spec"]
    reference = str(settings.get("reference") or parse_game_spec(spec).default_opponent)
    bots = bot_specs(root, game)
    labels = {path: name for name, path in bots.items()}
    players = list(dict.fromkeys([*bots.values(), *map(str, settings["baselines"]), reference]))
    config = {
        "attempts": int(settings["games"]),
        "seed": int(settings["seed"]),
        "opening": int(settings["opening"]),
    }
    jobs = [{"game": spec, "spec": player, **config} for player in players]
    rows = [row for result in fan_out(attempts_job, jobs) for row in result]
    for row in rows:
        row["spec"] = labels.get(row["spec"], row["spec"])
    levels = level_summary(rows, reference)
    standings = [
        {"spec": r["spec"], **score_summary(r["solved"], 0, r["attempts"] - r["solved"])}
        for r in levels
    ]
    summary = {
        "game": spec,
        "format": "puzzle: each bot attempts the level alone (every seat), success rate per "
        "level and laps beside the reference on the scenarios both solve",
        "games_per_pairing": config["attempts"],
        "seed": config["seed"],
        "opening_laps": config["opening"],
        "bots": list(bots),
        "baselines": [labels.get(p, p) for p in players if p not in labels],
        "reference": reference,
        "levels": levels,
        "pairings": [],
        "standings": sorted(standings, key=lambda s: -s["score"]),
    }
    with atomic_dir(root / "evaluation" / game) as scratch:
        pd.DataFrame(rows).to_parquet(scratch / "games.parquet", index=False)
        write_json(scratch / "summary.json", summary)
        bars = [{"pairing": f"{r['spec']} @ {r['level']}", "score": r["success_rate"],
                 "score_low": r["success_low"], "score_high": r["success_high"]}
                for r in levels]  # fmt: skip
        plot_scores(bars, scratch / "scores.png", f"{spec} success rate")
    metrics = {f"{r['spec']}.success_rate": r["success_rate"] for r in levels if r["spec"] in bots}
    metrics.update(
        {f"{r['spec']}.laps_ratio": r["laps_ratio"] for r in levels
         if r["spec"] in bots and r["laps_ratio"] is not None}
    )  # fmt: skip
    write_json(root / "metrics" / game / "evaluate.json", metrics)
    log_stage_run(root, params, game, "evaluate", metrics)
    return summary
