"""Game registration and lookup by short name (`connect4`, `lazerbike:players=4`, ...)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from engine.protocol import Game, GameError

_GAMES: dict[str, type[Game]] = {}
_discovered = False
#: packages whose every module `_discover` imports (flows.pipeline.dependencies reads this)
DYNAMIC_IMPORTS = ("engine.games",)


def register(cls: type[Game]) -> type[Game]:
    """Class decorator each game module applies to its Game subclass."""
    _GAMES[cls.name] = cls
    return cls


def _discover() -> None:
    """Imports every module of engine.games once, so new game modules register themselves."""
    global _discovered
    if _discovered:
        return
    for name in DYNAMIC_IMPORTS:
        _import_all(importlib.import_module(name))
    _discovered = True


def _import_all(package) -> None:
    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{module.name}")


def game_names() -> list[str]:
    _discover()
    return sorted(_GAMES)


def load_game(name: str, **params: Any) -> Game:
    """The game registered under `name`, built with its parameters."""
    _discover()
    if name not in _GAMES:
        raise GameError(f"unknown game {name!r}; known: {', '.join(sorted(_GAMES))}")
    return _GAMES[name](**params)


def parse_game_spec(spec: str) -> Game:
    """`name` or `name:key=value,key=value`; the game converts values to its parameters' types."""
    name, _, options = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, options.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise GameError(f"bad game option {item!r} in {spec!r}: expected key=value")
        params[key.strip()] = value.strip()
    return load_game(name.strip(), **params)
