"""params.yaml: loaded once, checked per stage, so a typo stops the stage that reads it.

Every stage names the keys it needs (`REQUIRED`, `{game}` and `{name}` filled in from the
stage's arguments); a key that is missing or of the wrong type raises ParamsError naming the
key and the stage, which the CLI prints as one line with exit code 2. The file's layout:

    games: [connect4, lazerbike]        the chains dvc.yaml runs
    mlflow / dask / workers / serve / promote / report    pipeline-wide settings
    <game>: spec, datasets, validation, encodings, models, evaluate    one chain per game
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from engine.protocol import GameError

PARAMS_FILE = Path("params.yaml")
STAGES = ("generate", "validate", "encode", "train", "export", "evaluate", "promote", "report")

#: (dotted key, accepted types) each stage reads; `{game}` / `{name}` come from the stage
REQUIRED: dict[str, list[tuple[str, tuple[type, ...]]]] = {
    "generate": [
        ("workers", (int,)),
        ("dask.address", (str,)),
        ("{game}.spec", (str,)),
        ("{game}.datasets.{name}.seed", (int,)),
        ("{game}.datasets.{name}.options", (dict,)),
    ],
    "validate": [
        ("{game}.datasets.{name}", (dict,)),
        ("{game}.validation.sample", (int,)),
        ("{game}.validation.seed", (int,)),
    ],
    "encode": [
        ("{game}.encodings.{name}.encoding", (str,)),
        ("{game}.encodings.{name}.dataset", (str,)),
        ("{game}.encodings.{name}.options", (dict,)),
    ],
    "train": [  # `encoding` (dataset families) and `sweep`: models.training_inputs.model_entry
        ("mlflow.tracking_uri", (str,)),
        ("{game}.spec", (str,)),
        ("{game}.models.{name}.family", (str,)),
        ("{game}.models.{name}.params", (dict,)),
    ],
    "export": [("mlflow.tracking_uri", (str,)), ("{game}.models", (dict,))],
    "evaluate": [
        ("workers", (int,)),
        ("dask.address", (str,)),
        ("mlflow.tracking_uri", (str,)),
        ("{game}.spec", (str,)),
        ("{game}.evaluate.games", (int,)),
        ("{game}.evaluate.seed", (int,)),
        ("{game}.evaluate.opening", (int,)),
        ("{game}.evaluate.baselines", (list,)),
    ],
    "promote": [
        ("mlflow.tracking_uri", (str,)),
        ("{game}.models", (dict,)),
        ("promote.baseline", (str,)),
        ("promote.games", (int,)),
        ("promote.seed", (int,)),
    ],
    "report": [("games", (list,)), ("mlflow.tracking_uri", (str,))],
    "zoo-import": [("mlflow.tracking_uri", (str,))],  # flows/pipeline/stages/zoo.py
    "study": [("{game}.models", (dict,))],  # a study's comparison (territory: study 003)
    # a zoo entry from its chain (pipeline/stages/rebuild.py; params-zoo.yaml)
    "rebuild": [("zoo.{name}", (dict,)), ("zoo.{name}.evidence", (list,))],
    "serve": [("serve.cron", (str,)), ("serve.timezone", (str,)), ("serve.name", (str,))],
    # the PlayerZero loop of one game (pipeline/stages/playerzero.py): params playerzero.<game>
    "playerzero": [
        ("mlflow.tracking_uri", (str,)),
        ("promote.baseline", (str,)),
        ("promote.games", (int,)),
        ("promote.seed", (int,)),
        *[
            (f"playerzero.{{name}}.{key}", types)
            for key, types in (
                ("generations", (int,)),
                ("seed", (int,)),
                ("workers", (int,)),
                ("window", (int,)),
                ("networks", (list,)),
                ("first", (dict,)),
                ("selfplay", (dict,)),
                ("train", (dict,)),
                ("arena", (dict,)),
                ("evaluate", (dict,)),
                ("solved", (str,)),
                ("validation", (dict,)),
            )
        ],
    ],
}


class ParamsError(GameError):
    """params.yaml cannot drive a stage: one line naming the key and the stage, exit 2."""


def load(path: Path | str = PARAMS_FILE) -> dict[str, Any]:
    """The parsed params file (ParamsError when missing or not a YAML mapping)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ParamsError(f"{path} not found (the pipeline's parameters live there)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ParamsError(f"{path} is not valid YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path} must hold a mapping of keys, not {type(data).__name__}")
    return data


def lookup(params: dict[str, Any], key: str) -> Any:
    """The value at a dotted key; KeyError naming the first missing part."""
    value: Any = params
    done = []
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(".".join([*done, part]))
        value = value[part]
        done.append(part)
    return value


def _type_names(types: tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", dict: "a mapping", list: "a list"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def stage_label(stage: str, game: str | None = None, name: str | None = None) -> str:
    """The stage's name in dvc.yaml: `train-connect4@lstm_mse`."""
    label = f"{stage}-{game}" if game else stage
    return f"{label}@{name}" if name else label


def check(
    params: dict[str, Any], stage: str, game: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """Checks every key `stage` reads; returns `params` (ParamsError on the first bad key)."""
    if stage not in REQUIRED:
        raise ParamsError(f"unknown stage {stage!r}; known: {', '.join(REQUIRED)}")
    label = stage_label(stage, game, name)
    moved(params)
    if game is not None:
        games = params.get("games")
        if not isinstance(games, list) or game not in games:
            raise ParamsError(f"stage {label}: key games does not list {game!r}")
    for pattern, types in REQUIRED[stage]:
        key = pattern.format(game=game, name=name)
        try:
            value = lookup(params, key)
        except KeyError as missing:
            raise ParamsError(f"stage {label}: key {missing.args[0]} is missing") from None
        if isinstance(value, bool) or not isinstance(value, types):
            raise ParamsError(
                f"stage {label}: key {key} must be {_type_names(types)}, "
                f"not {type(value).__name__} ({value!r})"
            )
    return params


def moved(params: dict[str, Any]) -> None:
    """ParamsError naming the new keys when a profile still holds a game's old TD chain."""
    games = params.get("games")
    for game in games if isinstance(games, list) else []:  # a bad `games`: check names it
        if isinstance(game, str) and isinstance(params.get(game), dict) and "td" in params[game]:
            raise ParamsError(
                f"{game}.td moved: td.base and td.study are {game}.study; td.grid and each "
                f"td.long.runs.NAME a {game}.models entry (family: td; a grid is its sweep); "
                f"td.tournament is {game}.evaluate, td.promote {game}.promote"
            )


def load_for(
    stage: str, game: str | None = None, name: str | None = None, path: Path | str = PARAMS_FILE
) -> dict[str, Any]:
    """load + check: what a stage command calls first."""
    return check(load(path), stage, game, name)


def scaled_profile(full: dict[str, Any], scale: float, thorough_depth: int,
                   floor: int = 1) -> dict[str, Any]:  # fmt: skip
    """A profile with every count that sets how much work a stage does times `scale`, everything
    else as it is (benchmarks/full_profile.py fits its projection to two such runs; `gridbots
    repro` rehearses the pipeline at scale 0, flows/pipeline/rehearsal.py).

    `thorough_depth` is the depth of the game trees. A count never goes below `floor`
    times its smallest legal value: the larger run raises the floor so that counts the small
    scale rounds to their minimum (match games, NEAT generations) differ between the two runs.
    """

    def _times(count: float, low: int = 1) -> int:
        return max(low * floor, round(count * scale))

    def _even(count: float) -> int:  # sides swapped: one game of each side
        return max(2 * floor, 2 * round(count * scale / 2))

    p = copy.deepcopy(full)
    p["workers"] = 1
    p["promote"]["games"] = _even(p["promote"]["games"])
    for game in p["games"]:
        chain = p[game]
        for name, dataset in (chain.get("datasets") or {}).items():
            options = dataset["options"]
            if dataset.get("technique", name) == "thorough":
                options["x"] = thorough_depth
                continue
            options["x"] = _times(options["x"])
            if "shard_size" in options:
                options["shard_size"] = _times(options["shard_size"])
        if "validation" in chain:
            chain["validation"]["sample"] = _times(chain["validation"]["sample"], 10)
        for model in (chain.get("models") or {}).values():
            settings = model.get("params") or {}
            if model["family"] == "neat":
                settings["generations"] = _times(settings["generations"])
            if model["family"] == "td":  # games, curve points and their games
                for key in ("games", "curve_every"):
                    if settings.get(key):
                        settings[key] = _times(settings[key])
                if settings.get("curve_games"):
                    settings["curve_games"] = _even(settings["curve_games"])
        if chain.get("promote", {}).get("games"):
            chain["promote"]["games"] = _even(chain["promote"]["games"])
        if "evaluate" in chain:
            chain["evaluate"]["games"] = _even(chain["evaluate"]["games"])
    study = p["othello"].get("study")
    if study:  # study 002 on Othello (flows/pipeline/stages/td.py)
        study.update(games=_times(study["games"]), matrix_games=_even(study["matrix_games"]))
        study["minimax"]["games"] = _even(study["minimax"]["games"])
    for loop in p["playerzero"].values():
        loop.update(generations=2, hours=0, workers=1)
        for step in ("first", "selfplay"):
            loop[step]["games"] = _times(loop[step]["games"], 2)
            loop[step]["shard_size"] = _times(loop[step]["shard_size"])
        loop["selfplay"]["parallel"] = min(loop["selfplay"]["parallel"], loop["selfplay"]["games"])
        arena = loop["arena"]
        arena["games"] = _even(arena["games"])
        arena["min_games"] = min(arena["min_games"], arena["games"])
        evaluate = loop["evaluate"]
        if evaluate.get("positions"):
            evaluate["positions"] = _times(evaluate["positions"], 10)
        if "games" in evaluate:
            evaluate["games"] = _even(evaluate["games"])
        if "promote" in loop:
            loop["promote"]["games"] = _even(loop["promote"]["games"])
    return p
