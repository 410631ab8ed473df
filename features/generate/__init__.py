"""Technique registry and the parameters every technique shares.

A technique is a module of this package exposing

    PARAMS: dict                                    defaults (keys among COMMON plus its own)
    validate_params(game, params) -> dict           raises DataError for params that cannot work
    generate_shard(game, params, seed, shard, first_game_id) -> {"games", "sequences",
        "positions": pa.Table}                      pure and deterministic in its arguments

and optionally `num_shards(game, params) -> int` (default: ceil(x / shard_size), shard_size
counted in the technique's X units, see `shard_units`) and `game_id_stride(game, params) -> int`
(how many game ids a shard may use; default 2**32, so ids never collide across shards). Modules
are imported by name only when asked for, so a technique that is missing or broken does not
stop the others.
"""

from __future__ import annotations

import importlib
import math
from types import ModuleType
from typing import Any

from features.errors import DataError

TECHNIQUES = ("thorough", "randomized", "battle", "imitation", "selfplay")
#: keys every command may pass (None = not given on the command line)
COMMON = ("x", "y", "z", "w", "games", "agents", "shard_size")
DEFAULT_SHARD_SIZE = 1000
DEFAULT_STRIDE = 1 << 32


def technique(name: str) -> ModuleType:
    """The module of technique `name` (DataError when unknown or unavailable)."""
    if name not in TECHNIQUES:
        raise DataError(f"unknown technique {name!r}; known: {', '.join(TECHNIQUES)}")
    try:
        return importlib.import_module(f"features.generate.{name}")
    except ModuleNotFoundError as missing:
        if missing.name != f"features.generate.{name}":
            raise
        raise DataError(f"technique {name!r} is not available in this installation") from None


def checked_scenario(game, scenario: Any, technique: str) -> dict[str, Any]:
    """A technique's `scenario` option: a dict of start options the game accepts (a DataError
    naming the technique otherwise), checked once here rather than at the first game."""
    from engine.protocol import GameError

    if not isinstance(scenario, dict):
        raise DataError(f"{technique}: scenario must be a dict of scenario options")
    try:
        game.new_initial_state(seed=0, **scenario)
    except GameError as error:
        raise DataError(f"{technique}: scenario {scenario}: {error}") from None
    return dict(scenario)


def parse_params(game, name: str, given: dict[str, Any]) -> tuple[ModuleType, dict[str, Any]]:
    """Merges the command's options into the technique's defaults and validates them.

    Options left as None keep the default; an option the technique does not use is refused
    (no silent no-op flags). Shared range checks (Y >= 1, W in [0, 1], ...) come first.
    """
    module = technique(name)
    defaults = dict(getattr(module, "PARAMS", {}))
    params: dict[str, Any] = {"shard_size": DEFAULT_SHARD_SIZE, **defaults}
    given = {k: v for k, v in given.items() if v is not None and not (k == "agents" and not v)}
    _check_common(given)
    for key, value in given.items():
        if key not in params:
            flag = "--opening/--scenario" if key == "scenario" else "--" + key.replace("_", "-")
            raise DataError(f"technique {name!r} does not use {flag}")
        params[key] = value
    _check_common(params)
    params = module.validate_params(game, params)
    return module, params


def _check_common(params: dict[str, Any]) -> None:
    for key, low in (("x", 0), ("y", 1), ("z", 0), ("games", 1), ("shard_size", 1)):
        value = params.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise DataError(f"{key.upper() if len(key) == 1 else key} must be an integer")
        if value < low:
            label = key.upper() if len(key) == 1 else key
            raise DataError(f"{label} = {value} cannot work: it must be at least {low}")
    w = params.get("w")
    if w is not None and not (isinstance(w, int | float) and 0.0 <= float(w) <= 1.0):
        raise DataError(f"W = {w} cannot work: it is a probability in [0, 1]")
    agents = params.get("agents")
    if isinstance(agents, str):
        params["agents"] = split_agents(agents)


def split_agents(text: str) -> list[str]:
    """Agent specs from `a,b` or `a;b` (a comma before `key=value` continues a spec's options)."""
    from agents.base import _split_specs

    return [spec for spec in _split_specs(text) if spec]


def num_shards(module: ModuleType, game, params: dict[str, Any]) -> int:
    if hasattr(module, "num_shards"):
        return int(module.num_shards(game, params))
    return max(1, math.ceil(int(params.get("x") or 0) / int(params["shard_size"])))


def game_id_stride(module: ModuleType, game, params: dict[str, Any]) -> int:
    if hasattr(module, "game_id_stride"):
        return int(module.game_id_stride(game, params))
    return DEFAULT_STRIDE


def shard_units(params: dict[str, Any], shard: int, total: int | None = None) -> tuple[int, int]:
    """(first unit, count) of the X units (random states, games, ...) shard `shard` handles."""
    total = int(params["x"]) if total is None else total
    size = int(params["shard_size"])
    first = shard * size
    return first, max(0, min(size, total - first))
