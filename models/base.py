"""What every model family provides, so tracking, export, the registry and agents treat them alike.

A family is a module under models/ (see FAMILIES) exposing:

  DEFAULTS: dict                 every hyperparameter with its default (sweeps vary these)
  ENCODINGS: tuple[str, ...]     the features.encode encodings it trains on
  train(arrays, meta, params, out_dir, progress=None) -> TrainingResult
      arrays/meta as returned by features.encode.load; params = DEFAULTS updated by the user;
      writes the model artifact into out_dir; reports per-epoch metrics through `progress`
      (a callable(epoch: int, metrics: dict[str, float]) or None)

A family that learns by playing rather than from a dataset (TD, NEAT: ENCODINGS is empty) is
trained, swept, logged and registered by the same models.tracking.train as every other family
(`gridbots stage train GAME KEY`), with no encoded data; instead of `train` it exposes

  learn(game, params, out_dir, work, progress=None) -> TrainingResult
      game: the game spec it plays; `work` a folder kept across a kill (its checkpoints: a rerun
      with the same params resumes there) or None; `progress(step, metrics)` as above
  source(game, params) -> dict[str, str]   what stands for its dataset in a run and a version's
      evidence (`game`, `dataset.path`, `dataset.sha256`, `dataset.manifest_hash`,
      `dataset.encoding`: the encoding its network reads)
  inputs(game, params) -> list             its MLflow dataset inputs (the setting it played in)
  curves(history) -> {metric: [(step, value), ...]}   its training history as logged metrics

A sweep is ranked by the family's `OBJECTIVE = (metric, "min" | "max")`; the metric may name
several, `a>b`, compared in that order (NEAT: the playoff's scores, then the best fitness; TD:
the last learning-curve score).
Metrics that measure the machine rather than the run (`measured`: seconds, rates) go to MLflow
and the run record, never to a DVC output.

Every family's runs are opened, its model logged and registered by models.tracking alone.
A family that trains on some games only names them as `GAMES` (NEAT: territory, whose tile
moves its networks decode); `check_game` refuses any other with one line (exit 2).

Artifacts are ONNX (Keras families, exported with a parity check), JSON (HMM) or CRFsuite
files (CRF): never pickles. Each artifact carries the metadata `artifact_metadata` lists, so
an agent can tell what it is holding from the file alone.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.protocol import GameError

FAMILIES = {
    "lstm": "models.lstm",
    "hmm": "models.hmm",
    "crf": "models.crf",
    "value-mlp": "models.value_mlp",
    "playerzero": "models.playerzero",
    "td": "models.td",
    "neat": "models.neat_track",
    "cost-to-go": "models.cost_to_go",
}

#: artifact kinds and the file suffix each travels as
ARTIFACT_KINDS = {"onnx": ".onnx", "hmm-json": ".json", "crfsuite": ".crfsuite"}


class ModelError(GameError):
    """A user-facing model problem (wrong encoding, unknown family, corrupt file): exit 2."""


@dataclass
class TrainingResult:
    family: str  # a FAMILIES key
    game: str  # game spec
    encoding: str
    params: dict[str, Any]
    artifact: Path  # the exported model file
    artifact_kind: str  # an ARTIFACT_KINDS key
    metrics: dict[str, float] = field(default_factory=dict)  # final held-out metrics
    history: dict[str, list[float]] = field(default_factory=dict)  # per-epoch curves
    extra_artifacts: list[Path] = field(default_factory=list)  # e.g. parity report


def family(name: str) -> ModuleType:
    """The module of family `name`; ModelError naming the known ones otherwise."""
    if name not in FAMILIES:
        raise ModelError(f"unknown model family {name!r}; known: {', '.join(FAMILIES)}")
    return importlib.import_module(FAMILIES[name])


def check_game(family_name: str, game: str) -> None:
    """ModelError when family `family_name` cannot train on `game` (a game name or spec)."""
    games = getattr(family(family_name), "GAMES", None)
    name = game.split(":", 1)[0]
    if games is not None and name not in games:
        raise ModelError(f"{family_name} trains on {', '.join(games)} only, not {name}")


#: metric names that measure the machine (clock, speed), not what was learned
MEASURED_SUFFIXES = ("seconds", "_per_s")


def measured(key: str) -> bool:
    """Whether metric `key` is a clock or speed figure (kept out of DVC outputs: issue 68)."""
    return key.endswith(MEASURED_SUFFIXES)


def learns_by_playing(module: ModuleType) -> bool:
    """A family with no encodings trains by playing (`learn`), not on a dataset (`train`)."""
    return not tuple(getattr(module, "ENCODINGS", ()))


#: rows a sequence family learns from: outcome > threshold (wins: the study's choice; all: every
#: game, for data whose every move is worth imitating, such as an imitated searcher's)
OUTCOMES = {"wins": 0.0, "draws+wins": -0.5, "all": float("-inf")}


def sequence_framing(meta: dict[str, Any]) -> dict[str, int]:
    """The framing a sequence model was trained on, for its metadata: agents must fold a
    history the same way (`plies`: one round per move, `gridbots encode --plies`; `boards`: the
    board after each round read beside it, `--boards`)."""
    options = meta.get("options") or {}
    return {"plies": int(bool(options.get("plies"))), "boards": int(bool(options.get("boards")))}


def artifact_metadata(
    game: str, family_name: str, encoding: str, kind: str, **extra: Any
) -> dict[str, str]:
    """The metadata every artifact records (ONNX metadata_props, JSON header, CRF sidecar)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        gridbots_version = version("gridbots")
    except PackageNotFoundError:
        gridbots_version = "0+unknown"
    return {
        "gridbots.game": game,
        "gridbots.family": family_name,
        "gridbots.encoding": encoding,
        "gridbots.kind": kind,  # what an agent does with it: "sequence" | "value" | "policy-value"
        "gridbots.version": gridbots_version,
        **{f"gridbots.{k}": str(v) for k, v in extra.items()},
    }
