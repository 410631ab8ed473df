"""Agent specs (`name:key=value,key=value`) and the registry of agent builders."""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from engine.protocol import Game, GameError, State

if TYPE_CHECKING:
    from agents.analysis import Analysis


class AgentError(GameError):
    """An unknown agent spec or a bad option value."""


class Agent:
    """Answers `step(state, player)` with an action for `player` (default: the one to move)."""

    #: needs a person at this terminal (`human`): never seated in isolated mode or over HTTP
    interactive: ClassVar[bool] = False

    def __init__(self, game: Game, spec: str, seed: int | None = None):
        self.game = game
        self.spec = spec
        self.rng = np.random.default_rng(seed)

    def step(self, state: State, player: int | None = None) -> int:
        raise NotImplementedError

    def analyse(self, state: State) -> Analysis:
        """What the agent would play for the player to move, and why (agents.analysis); this
        default only times `step`, agents that score moves override it."""
        from agents.analysis import Analysis

        player = state.current_player()
        if player < 0:
            raise AgentError(f"{self.spec}: analysis needs a player to move, not a {_NODE[player]}")
        start = time.perf_counter()
        move = self.step(state.clone(), player)
        return Analysis(move=int(move), seconds=time.perf_counter() - start)


_NODE = {-1: "chance node", -2: "simultaneous lap", -4: "finished game"}
_BUILDERS: dict[str, Callable[..., Agent]] = {}
#: each built-in spec name → the module that registers its builder, imported when a spec names
#: it: a process loads only the agents it makes (a pipeline stage never loads the terminal's
#: `human`, so editing it leaves the stages' DVC deps alone)
_BUILTIN_MODULES = {
    "random": "agents.scripted.random_play",
    "mcts": "agents.search.mcts",
    "heuristic": "agents.scripted.heuristic",
    "openspiel": "agents.openspiel.agent",
    "file": "agents.isolated.file_agent",
    "alphabeta": "agents.search.alphabeta",
    "simab": "agents.search.simab",
    "planner": "agents.search.planner",
    "sokoban": "agents.search.planner",
    "space": "agents.scripted.space",
    "seq": "agents.sequence.agent",
    "onnx": "agents.onnx.agent",
    "neat": "agents.neat.agent",
    "td": "agents.td.agent",
    "policy": "agents.puct.agent",
    "puct": "agents.puct.agent",
    "human": "agents.play.human",
    "hps": "agents.search.hps",
}


def builder(name: str):
    """Registers an agent class under its spec name."""

    def wrap(cls):
        _BUILDERS[name] = cls
        return cls

    return wrap


#: spec names whose text after the colon is not key=value options (`file:PATH.py[:NAME]`)
RAW_SPECS = frozenset({"file"})


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`name[:variant][:key=value,…]` → (name, options); a variant is stored as `variant`.

    The variant form serves specs that name another bot, e.g. `openspiel:mcts:sims=1000`.
    """
    name, _, rest = spec.strip().partition(":")
    options: dict[str, str] = {}
    if name in RAW_SPECS:  # the rest is a path, parsed by the agent itself
        return name, {"variant": rest} if rest else {}
    head, colon, tail = rest.partition(":")
    if colon and head and "=" not in head and "," not in head:
        options["variant"], rest = head, tail  # values may hold colons: eval=onnx:PATH
    elif head and "=" not in head and "," not in head:
        options["variant"], rest = head, ""
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise AgentError(f"bad option {item!r} in agent spec {spec!r}: expected key=value")
        options[key.strip()] = value.strip()
    return name, options


def make(spec: str, game: Game, seed: int | None = None) -> Agent:
    """Builds the agent a spec string names (`random`, `mcts:sims=200`, ...)."""
    name, options = parse_spec(spec)
    _load_builder(name)
    if name not in _BUILDERS:
        known = ", ".join(sorted(set(_BUILTIN_MODULES) | set(_BUILDERS)))
        raise AgentError(f"unknown agent {name!r}; known: {known}")
    return _BUILDERS[name](game, spec, seed=seed, **options)


def is_interactive(spec: str) -> bool:
    """Whether the spec names an agent that needs a person at a terminal (`human`)."""
    name = parse_spec(spec)[0]
    _load_builder(name)
    return bool(getattr(_BUILDERS.get(name), "interactive", False))


def _load_builder(name: str) -> None:
    """Registers the builder of a spec name: its built-in module, else a plugin's."""
    if name in _BUILDERS:
        return
    if name in _BUILTIN_MODULES:  # the module registers its builders on import
        importlib.import_module(_BUILTIN_MODULES[name])
    else:
        _load_plugin(name)


def _load_plugin(name: str) -> None:
    """Agents that live in higher layers (`registry:` needs MLflow, in models/) register through
    the `gridbots.agents` entry points of pyproject.toml, so agents/ never imports them."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="gridbots.agents", name=name):
        importlib.import_module(entry.value)


def make_seats(specs: str, game: Game, seed: int = 0) -> list[Agent]:
    """One agent per seat from a comma-free list `a;b` or `a,b` of specs (default random)."""
    parts = [p for p in _split_specs(specs) if p] or ["random"]
    if len(parts) == 1:
        parts = parts * game.num_players
    if len(parts) != game.num_players:
        raise AgentError(f"{game.name} has {game.num_players} seats, got {len(parts)} agent specs")
    return [make(spec, game, seed=seed + seat) for seat, spec in enumerate(parts)]


def _split_specs(specs: str) -> list[str]:
    """Splits on ';' or on commas that start a new spec (a comma followed by `name` or `name:`)."""
    if ";" in specs:
        return [s.strip() for s in specs.split(";")]
    out: list[str] = []
    for piece in specs.split(","):
        piece = piece.strip()
        if out and "=" in piece and ":" not in piece:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def option(options: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    """Reads one typed option, with a clear error naming the key."""
    if key not in options:
        return default
    value = options.pop(key)
    try:
        return kind(value)
    except ValueError:
        raise AgentError(f"option {key}={value!r}: expected {kind.__name__}") from None


#: models this thread has already read, per kind, newest last (see `loaded_once`)
_LOADED = threading.local()
LOADED_MAX = 8


def model_file(path: str | Path, kind: str = "") -> Path:
    """The model file a spec names, or AgentError with one line (`kind: ` before it when given).
    A path under the old TD chain's folders (td/GAME/long|grid|study/…, before issue 68) gets the
    place its networks are trained to now."""
    path = Path(path)
    if path.is_file():
        return path
    hint, parts = "", path.parts
    if len(parts) >= 3 and parts[0] == "td" and parts[2] in ("long", "grid", "study"):
        game = parts[1]
        hint = (
            f" (the TD chain's networks moved: trained/{game}/KEY/model.onnx, KEY an entry"
            f" of {game}.models of family td such as td-ntuple; study 002's: studies/{game}/)"
        )
    raise AgentError(f"{kind + ': ' if kind else ''}model file {path} not found{hint}")


def file_identity(*paths: str | Path) -> tuple:
    """(resolved path, then inode, mtime and size of each file or None): a key that changes when
    any of the files is replaced (a new inode: gridbots writes by rename) or rewritten (a new
    mtime, to the kernel's clock tick)."""
    stamps = []
    for path in map(Path, paths):
        stat = path.stat() if path.is_file() else None
        stamps.append(None if stat is None else (stat.st_ino, stat.st_mtime_ns, stat.st_size))
    return (str(Path(paths[0]).resolve()), *stamps)


def loaded_once(kind: str, key: Hashable, read: Callable[[], Any]) -> Any:
    """`read()`'s result, kept per thread under `key`: a match makes a fresh agent per game, and
    reading a model again each time cost milliseconds a game (a 10,000-game pairing: minutes).
    Per thread because some readers keep per-call state (a CRF tagger holds the sequence it
    was last given); at most LOADED_MAX per kind, the oldest dropped."""
    loaded: dict[Hashable, Any] = _LOADED.__dict__.setdefault(kind, {})
    if key not in loaded:
        loaded[key] = read()
        while len(loaded) > LOADED_MAX:
            loaded.pop(next(iter(loaded)))
    return loaded[key]
