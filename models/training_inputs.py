"""A training command's inputs checked before anything trains: parameter assignments and
sweep grids coerced to the family's types, the objective a sweep ranks by, and the encoded
dataset with its hash (models.tracking runs and logs the trainings)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.base import ModelError

#: objective preferences when a family declares none (`OBJECTIVE = (metric, "min" | "max")`)
OBJECTIVES = (
    ("held_out_loss", "min"),
    ("held_out_accuracy", "max"),
    ("val_loss", "min"),
    ("val_accuracy", "max"),
    ("accuracy", "max"),
    ("log_likelihood", "max"),
    ("loss", "min"),
)


# ---- parameters and sweeps ---------------------------------------------------------------------
def parse_assignments(items: Sequence[str], flag: str) -> dict[str, str]:
    """`key=value` strings → dict (a repeated key is an error: it would hide a typo)."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ModelError(f"{flag} {item!r}: expected key=value")
        if key in out:
            raise ModelError(f"{flag}: {key!r} given twice")
        out[key] = value.strip()
    return out


def sweep_grid(items: Sequence[str]) -> list[dict[str, str]]:
    """`key=v1,v2 …` → the cartesian product, one dict per configuration (in the given order)."""
    axes = parse_assignments(items, "--sweep")
    values = {}
    for key, text in axes.items():
        values[key] = [v.strip() for v in text.split(",") if v.strip()]
        if not values[key]:
            raise ModelError(f"--sweep {key}=: no values")
    keys = list(values)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values.values())]


def coerce(family_name: str, defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """DEFAULTS updated by `given`, strings read as the default's type; unknown keys refused."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ModelError(
            f"{family_name}: unknown parameter(s) {unknown}; known: {', '.join(sorted(defaults))}"
        )
    params = dict(defaults)
    for key, value in given.items():
        default = defaults[key]
        if not isinstance(value, str) or default is None or isinstance(default, str):
            params[key] = value
            continue
        try:
            if isinstance(default, bool):
                params[key] = {"true": True, "1": True, "false": False, "0": False}[value.lower()]
            elif isinstance(default, list | tuple):
                params[key] = type(default)(json.loads(value if "[" in value else f"[{value}]"))
            else:
                params[key] = type(default)(value)
        except (KeyError, TypeError, ValueError):
            raise ModelError(
                f"{family_name}: {key}={value!r} must be {type(default).__name__}"
            ) from None
    return params


def objective(module: Any, metrics: dict[str, float], given: str | None = None) -> tuple[str, str]:
    """(metric, "min" | "max") that ranks a sweep: `given` (`NAME[:min|max]`), else the family's
    OBJECTIVE, else the first of OBJECTIVES it reports (held-out figures before training ones)."""
    if given:
        name, _, direction = given.partition(":")
        direction = direction or ("min" if "loss" in name or "error" in name else "max")
        if direction not in ("min", "max"):
            raise ModelError(f"--metric {given!r}: the direction is min or max")
        if name not in metrics:
            raise ModelError(f"--metric {name!r}: the family reports {', '.join(sorted(metrics))}")
        return name, direction
    declared = getattr(module, "OBJECTIVE", None)
    if declared:
        return declared[0], declared[1]
    for name, direction in OBJECTIVES:
        if name in metrics:
            return name, direction
    if not metrics:
        raise ModelError("the family reported no metrics; cannot rank a sweep")
    name = sorted(metrics)[0]
    return name, "min" if "loss" in name or "error" in name else "max"


# ---- datasets ----------------------------------------------------------------------------------
def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_dataset(path: Path, module: Any, family_name: str) -> tuple[dict, dict, dict[str, str]]:
    """(arrays, meta, dataset description) of an encoded file the family can train on."""
    from features.encode import load

    if not getattr(module, "ENCODINGS", ()):
        raise ModelError(
            f"{family_name} learns by playing, not from an encoded dataset: "
            f"it trains by playing its game (gridbots stage train GAME KEY)"
        )
    if not path.is_file():
        raise ModelError(f"no encoded dataset at {path} (make one with gridbots encode)")
    try:
        arrays, meta = load(path)
    except Exception as error:  # zip, JSON, Arrow errors: all mean "not a gridbots encoding"
        raise ModelError(f"cannot read encoded dataset {path}: {error}") from None
    encoding = str(meta.get("encoding", "?"))
    accepted = tuple(getattr(module, "ENCODINGS", ()))
    if encoding not in accepted:
        raise ModelError(
            f"{family_name} trains on {', '.join(accepted)} encodings; {path} holds {encoding!r}"
        )
    manifest_hash = meta.get("manifest_hash") or meta.get("content_hash")
    info = {
        "dataset.path": str(path.resolve()),
        "dataset.sha256": file_hash(path),
        "dataset.manifest_hash": str(manifest_hash or "unrecorded"),
        "dataset.encoding": encoding,
        "dataset.rows": str(meta.get("rows", "?")),
        "game": str(meta.get("game", "?")),
    }
    return arrays, meta, info


# ---- a pipeline model entry ---------------------------------------------------------------------
def model_entry(game: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """params.yaml `GAME.models.NAME` as the training it asks for: `family`, `params`, `sweep`
    and, for a family that trains on a dataset, `encoding` (a key of GAME.encodings; None for a
    family that learns by playing). A NEAT case's older keys still read: `case` is the
    parameter `case`, `seeds` a sweep over `seed`. ModelError (exit 2) when the family is
    unknown, cannot train on `game` (models.base.check_game) or lacks what it needs."""
    from models.base import check_game, family, learns_by_playing

    where = f"{game}.models.{name}"
    if not isinstance(entry, dict) or not isinstance(entry.get("family"), str):
        raise ModelError(f"{where}: give its family (one of models.base.FAMILIES)")
    module = family(entry["family"])
    check_game(entry["family"], game)
    params = dict(entry.get("params") or {})
    sweep = dict(entry.get("sweep") or {})
    if "case" in entry:
        params.setdefault("case", entry["case"])
    if "seeds" in entry:
        seeds = [int(s) for s in entry["seeds"]]
        if len(seeds) == 1:
            params.setdefault("seed", seeds[0])
        else:
            sweep.setdefault("seed", seeds)
    encoding = entry.get("encoding")
    if learns_by_playing(module):
        if encoding:
            raise ModelError(f"{where}: {entry['family']} learns by playing; it takes no encoding")
    elif not isinstance(encoding, str) or not encoding:
        raise ModelError(f"{where}: {entry['family']} trains on a dataset: name its encoding")
    return {"family": entry["family"], "params": params, "sweep": sweep, "encoding": encoding}
