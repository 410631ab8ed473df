"""The leaderboard's data: every registered model's versions with their promotion evidence and,
where a pipeline tournament played them, their standing in it.

Tournament tables are the ones the pipeline writes (`evaluation/<game>/summary.json`, the
engine.tournament format: pairings and standings with Wilson intervals and Elo). A table names
its bots by label; which registry version a label is comes from what the pipeline wrote beside
it: `exports/<game>/exports.json` (the evaluate stage's bots: name, family) with the version each
one's training recorded (`metrics/<game>/train-runs/NAME.json`, or its run.json; every family,
TD and NEAT too), `promotion/<game>.json` (each family's
production label) or a label that is a registry spec itself (`registry:NAME/VERSION`,
`registry:NAME@ALIAS` as the alias stands now).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from engine.tournament import elo, score_summary


def registry_models() -> list[dict[str, Any]]:
    """The registry's models, or none where no registry exists yet (it is not created)."""
    from flows.web.bots import registry_exists
    from models.registry import list_models

    return list_models() if registry_exists() else []


def leaderboard(root: Path, mlflow_url: str | None) -> dict[str, Any]:
    """{"games": per game its production bots, strongest evidence first (the page's first
    table: one row per game), "models": every registered model with its versions, in that
    order, "tournaments": each game's table}."""
    from models.registry import production_summary, rank_key, tag_interval, tag_number

    models = registry_models()
    tournaments = read_tournaments(Path(root), models)
    standing_of = {
        (row["model"], row["version"]): {**row, "game": t["game"], "of": len(t["standings"])}
        for t in tournaments
        for row in t["standings"]
        if row.get("model")
    }
    rows = []
    for model in models:
        versions = []
        for version in reversed(model["versions"]):
            tags = version["tags"]
            score = tag_number(tags.get("promotion.score"))
            low, high = tag_interval(tags.get("promotion.interval", ""))
            versions.append(
                {
                    "version": version["version"],
                    "aliases": version["aliases"],
                    "created": version["created"],
                    "run_id": version["run_id"],
                    "run_url": run_url(mlflow_url, version["run_id"]),
                    "decision": tags.get("promotion.decision"),
                    "score": score,
                    "interval": [low, high] if low is not None else None,
                    "elo": _elo(score),
                    "elo_interval": [_elo(low), _elo(high)] if low is not None else None,
                    "wdl": tags.get("promotion.wdl"),
                    "games": tags.get("promotion.games"),
                    "opponent": tags.get("promotion.opponent"),
                    "zoo": zoo_match(tags),
                    "evaluation": {k[5:]: v for k, v in tags.items() if k.startswith("eval.")},
                    "tournament": standing_of.get((model["name"], version["version"])),
                }
            )
        rows.append(
            {"name": model["name"], "aliases": model["aliases"], "versions": versions,
             "production": production_summary(model), "tags": model.get("tags", {})}
        )  # fmt: skip
    games: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["production"]:
            games.setdefault(game_of(row), []).append(row["production"])
    ranked = {game: sorted(bots, key=rank_key) for game, bots in sorted(games.items())}
    # per game: its production bots by rank, then the models with none (a list is empty while
    # it sorts, so the rank of "none" is counted before)
    place = {bot["name"]: i for bots in ranked.values() for i, bot in enumerate(bots)}
    unranked = len(rows)
    rows.sort(key=lambda r: (game_of(r), place.get(r["name"], unranked), r["name"]))
    return {
        "games": [{"game": game, "bots": bots} for game, bots in ranked.items()],
        "models": rows,
        "tournaments": tournaments,
    }


def zoo_match(tags: dict[str, str]) -> dict[str, Any] | None:
    """The gate's second match, against the game's zoo bot (models.registry.zoo_match), as its
    version tags recorded it; None where none was played."""
    from models.registry import tag_interval, tag_number

    if not tags.get("promotion.zoo.opponent"):
        return None
    low, high = tag_interval(tags.get("promotion.zoo.interval", ""))
    return {
        "opponent": tags["promotion.zoo.opponent"],
        "result": tags.get("promotion.zoo.result"),
        "score": tag_number(tags.get("promotion.zoo.score")),
        "interval": [low, high] if low is not None else None,
        "wdl": tags.get("promotion.zoo.wdl"),
        "games": tags.get("promotion.zoo.games"),
    }


def game_of(model: dict[str, Any]) -> str:
    """A registered model's game: its `gridbots.game` tag, else its name's `<game>-` prefix."""
    return str((model.get("tags") or {}).get("gridbots.game") or model["name"].split("-", 1)[0])


def read_tournaments(root: Path, models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each `evaluation/<game>/summary.json` under `root` as a table: the standings (best first)
    with each bot's registry version where known, and its pairings from its own side."""
    tables = []
    for path in sorted(root.glob("evaluation/*/summary.json")):
        try:
            summary = json.loads(path.read_text())
            standings, pairings = summary["standings"], summary["pairings"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a table being written or from another tool: not a tournament table
        folder = path.parent.name
        labels = registry_labels(root, folder, models)
        table = []
        for rank, row in enumerate(standings, start=1):
            model, version = labels.get(row["spec"], (None, None))
            table.append(
                {
                    "rank": rank,
                    "label": row["spec"],
                    "model": model,
                    "version": version,
                    **{k: row[k] for k in _SCORE_KEYS},
                    "pairings": own_side(row["spec"], pairings),
                }
            )
        tables.append(
            {
                "game": summary.get("game", folder),
                "folder": folder,
                "file": str(path.relative_to(root)),
                "written": time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime)),
                "format": summary.get("format", ""),
                "games_per_pairing": summary.get("games_per_pairing"),
                "seed": summary.get("seed"),
                "standings": table,
            }
        )
    return tables


_SCORE_KEYS = (
    "games", "wins", "draws", "losses", "score", "score_low", "score_high",
    "elo", "elo_low", "elo_high",
)  # fmt: skip


def own_side(label: str, pairings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pairings `label` played, each seen from its side (W/D/L, score and Elo intervals)."""
    out = []
    for s in pairings:
        if s["spec_a"] == label:
            other, w, lost = s["spec_b"], s["wins"], s["losses"]
        elif s["spec_b"] == label:
            other, w, lost = s["spec_a"], s["losses"], s["wins"]
        else:
            continue
        out.append({"opponent": other, **score_summary(w, s["draws"], lost)})
    return out


def registry_labels(
    root: Path, folder: str, models: list[dict[str, Any]]
) -> dict[str, tuple[str, str]]:
    """Tournament label → (registered model, version), from the files the pipeline wrote."""
    from models.registry import model_name

    labels: dict[str, tuple[str, str]] = {}
    exports = root / "exports" / folder / "exports.json"
    if exports.is_file():
        exported = _exported_versions(root, folder)
        for entry in _json(exports) or []:
            version = (
                entry.get("version")  # an exports.json written before the run records
                or exported.get(entry["name"])
                or _trained_version(root, folder, entry["name"])
            )
            if version is not None:
                labels[entry["name"]] = (model_name(folder, entry["family"]), str(version))
    promotion = _json(root / "promotion" / f"{folder}.json") or {}
    for info in promotion.get("families", {}).values():
        if info.get("production_label") and info.get("production") is not None:
            labels.setdefault(info["production_label"], (info["model"], str(info["production"])))
    known = {(m["name"], v["version"]) for m in models for v in m["versions"]}
    for model in models:  # labels that are registry specs
        for alias, version in model["aliases"].items():
            labels.setdefault(f"registry:{model['name']}@{alias}", (model["name"], version))
        for version in model["versions"]:
            ref = f"registry:{model['name']}/{version['version']}"
            labels.setdefault(ref, (model["name"], version["version"]))
    return {label: ref for label, ref in labels.items() if ref in known}


def _exported_versions(root: Path, game: str) -> dict[str, str]:
    """Name → the version the export stage took (its record, flows.pipeline.stage_io): what the
    tournament played, even after a later training registered a newer version."""
    from flows.pipeline.stage_io import export_record_path

    record = _json(export_record_path(root, game)) or []
    return {e["name"]: str(e["version"]) for e in record if e.get("version") is not None}


def _trained_version(root: Path, game: str, name: str) -> str | None:
    """The registry version a training recorded (its run record, flows.pipeline.stage_io)."""
    from flows.pipeline.stage_io import trained_run

    try:
        return trained_run(root, game, name).get("version")
    except (OSError, ValueError):
        return None  # trained/ not here (an exports folder copied on its own)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _elo(score: float | None) -> float | None:
    """Elo difference a score means; None where it is infinite (0 or 1) or unknown."""
    if score is None or not 0 < score < 1:
        return None
    return round(elo(score), 1)


def run_url(base: str | None, run_id: str | None) -> str | None:
    if not base or not run_id:
        return None
    try:
        from models.tracking import client

        experiment = client().get_run(run_id).info.experiment_id
    except Exception:  # a run deleted from tracking: the version still stands, unlinked
        return None
    return f"{base.rstrip('/')}/#/experiments/{experiment}/runs/{run_id}"
