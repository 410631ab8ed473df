"""The evaluate stage: the tournament of the exported bots and the baselines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect import flow

from flows.stage_io import (
    SPEC_OF_KIND,
    StageError,
    atomic_dir,
    fan_out,
    task_runner,
    write_json,
)
from flows.stage_runs import log_stage_run


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


def chosen_pairings(
    chosen: list, bots: dict[str, str], baselines: list[str]
) -> list[tuple[str, str]]:
    """`evaluate.pairings` ([[a, b], …], bot names or baselines): only the pairings a study
    plays (study 000 plays the two best models against alpha-beta, not every model)."""
    known = {**bots, **{b: b for b in baselines}}
    pairs = []
    for pair in chosen:
        if not (isinstance(pair, list) and len(pair) == 2 and all(p in known for p in pair)):
            raise StageError(
                f"evaluate.pairings: {pair!r} must be [a, b] of trained bots or baselines "
                f"({', '.join(known)})"
            )
        pairs.append((known[pair[0]], known[pair[1]]))
    return pairs


def evaluate_flow(root: Path, params: dict, game: str, dask: str | None = None):
    runner = task_runner(params, dask)
    return _evaluate.with_options(task_runner=runner)(root, params, game)


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
    from flows.tournament_output import write_outputs
    from models.arena import play_job  # one pairing's rows: a pure function of the job

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
    chosen = settings.get("pairings")  # optional: a study's own layout instead of all-vs-all
    pairs = (
        chosen_pairings(chosen, bots, baselines)
        if chosen
        else pairing_list(list(bots.values()), baselines)
    )
    jobs = [{"game": spec, "a": a, "b": b, **config} for a, b in pairs]
    rows: list[dict] = []
    summaries = []
    for result in fan_out(play_job, jobs):
        pairing_rows = relabel(result, labels)
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
