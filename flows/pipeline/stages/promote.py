"""The promote stage: every new candidate faces the registry's gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task

from flows.pipeline.stage_io import RETRIES, trained_run, use_tracking, write_json
from flows.pipeline.stage_runs import log_stage_run


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


def gate_families(root: Path, game: str, models: dict, gate: dict) -> dict[str, dict]:
    """Per family of the dataset chain's trained `models`, each new candidate faces the gate;
    family → who is in production."""
    from models.registry import model_name

    families: dict[str, list[dict]] = {}
    for name in models:
        run = trained_run(root, game, name)
        families.setdefault(run["family"], []).append(run)
    result: dict[str, dict] = {}
    for family_name, runs in families.items():
        registered = model_name(game, family_name)
        games, baseline, seed = int(gate["games"]), gate["baseline"], int(gate["seed"])
        decisions = [
            promotion_gate(registered, str(run["version"]), games, baseline, seed) for run in runs
        ]
        production = production_version(registered)
        by_version = {str(run["version"]): run["name"] for run in runs}
        result[family_name] = {
            "model": registered,
            "production": production,
            "production_label": by_version.get(str(production)),
            "decisions": decisions,
        }
    return result


@flow(name="promote")
def promote_flow(root: Path, params: dict, game: str) -> dict[str, Any]:
    """Per family, each new candidate faces the gate; records who is in production."""
    use_tracking(params, root)
    root = Path(root)
    gate = {**params["promote"], **(params[game].get("promote") or {})}  # GAME.promote: its own
    families = gate_families(root, game, params[game]["models"], gate)
    result: dict[str, Any] = {"game": game, "families": families}
    write_json(root / "promotion" / f"{game}.json", result)
    metrics = {
        f"{f}.promoted": float(v["production"] is not None) for f, v in result["families"].items()
    }
    log_stage_run(root, params, game, "promote", metrics)
    return result
