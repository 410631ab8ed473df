"""`file:PATH.py[:NAME]`: a user's own bot class, loaded from a file, run only in isolated mode.

The class needs a `step(state, player)` method returning an action id; its constructor may take
`game` and/or `seed` (keyword arguments it does not accept are not passed). NAME defaults to
`Bot`, or to the only class in the file with a `step` method. The referee checks a file without
running it (`check_file`: readable, compiles, the class exists); only the bot's own process
executes it (`load_class`).

`agents.make` hands the whole spec to this module (`file` is one of agents.base.RAW_SPECS), so
`file:PATH.py:NAME` and `file:path=P,name=N` both work wherever specs are accepted.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
from pathlib import Path

from agents.base import Agent, AgentError, builder, is_interactive, make
from engine.protocol import Game, State

#: set by the bot host (agents/isolated/host.py): file bots may only be built inside their own
#: process
ISOLATED = False


def parse_file_spec(spec: str) -> tuple[Path, str | None]:
    """`file:PATH.py[:NAME]` or `file:path=PATH,name=NAME` -> (path, class name or None)."""
    rest = spec.strip()[len("file:") :]
    if rest.startswith("path="):
        options = dict(item.partition("=")[::2] for item in rest.split(","))
        path, name = options.pop("path", ""), options.pop("name", None)
        if options:
            raise AgentError(f"file: unknown option(s) {sorted(options)}")
        return Path(path), name or None
    path, sep, name = rest.rpartition(":")
    if not sep or not name.isidentifier():  # no NAME, or a colon inside the path
        path, name = rest, ""
    if not path:
        raise AgentError(f"file: spec {spec!r} names no file (file:PATH.py[:NAME])")
    return Path(path), name or None


def _located(path: Path) -> Path:
    """A relative bot file is relative to the referee's folder (a sealed bot runs elsewhere)."""
    base = os.environ.get("GRIDBOTS_REFEREE_CWD")
    return Path(base) / path if base and not path.is_absolute() else path


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise AgentError(f"file: cannot read bot file {str(path)!r}: {error}") from None


def check_file(spec: str) -> tuple[Path, str]:
    """Validates a file bot without executing it; returns (path, class name)."""
    path, name = parse_file_spec(spec)
    path = _located(path)
    text = _read(path)
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as error:
        raise AgentError(
            f"file: syntax error in {str(path)!r} line {error.lineno}: {error.msg}"
        ) from None
    classes = {
        node.name: any(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "step"
            for item in node.body
        )
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    return path, _choose(path, name, classes)


def _choose(path: Path, name: str | None, classes: dict[str, bool]) -> str:
    """NAME, else the only class with `step`, else `Bot`."""
    if name is not None:
        if name not in classes:
            raise AgentError(f"file: no class {name!r} in {str(path)!r}")
        return name
    stepping = [n for n, has_step in classes.items() if has_step]
    if len(stepping) == 1:
        return stepping[0]
    if "Bot" in classes:
        return "Bot"
    raise AgentError(
        f"file: cannot tell which class in {str(path)!r} is the bot "
        f"({len(stepping)} classes with a step method); name it: file:{path}:NAME"
    )


def load_class(spec: str) -> type:
    """Executes the bot's file (only ever inside the bot's own process) and returns its class."""
    path, name = check_file(spec)
    module_name = f"gridbots_user_bot_{abs(hash(str(path.resolve())))}"
    loader = importlib.util.spec_from_file_location(module_name, path)
    if loader is None or loader.loader is None:
        raise AgentError(f"file: cannot load {str(path)!r} as Python")
    module = importlib.util.module_from_spec(loader)
    sys.modules[module_name] = module
    loader.loader.exec_module(module)
    cls = getattr(module, name, None)
    if not inspect.isclass(cls) or not callable(getattr(cls, "step", None)):
        raise AgentError(f"file: {name!r} in {str(path)!r} is not a class with a step method")
    return cls


class FileAgent(Agent):
    """Wraps the user's object so it looks like any other agent."""

    def __init__(self, game: Game, spec: str, seed: int | None = None):
        super().__init__(game, spec, seed)
        cls = load_class(spec)
        accepted = inspect.signature(cls).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
        kwargs = {
            k: v for k, v in {"game": game, "seed": seed}.items() if takes_any or k in accepted
        }
        self.bot = cls(**kwargs)

    def step(self, state: State, player: int | None = None) -> int:
        return self.bot.step(state, state.current_player() if player is None else player)


def _refuse_in_process(spec: str) -> None:
    if not ISOLATED:
        raise AgentError(
            f"{spec}: file bots run only in isolated mode (each in its own process); use --isolated"
        )


@builder("file")
def _build(game: Game, spec: str, seed: int | None = None, **options: str) -> Agent:
    """Every `file:` spec through agents.make (the spec is parsed by FileAgent itself)."""
    _refuse_in_process(spec)
    return FileAgent(game, spec, seed)


def is_file_spec(spec: str) -> bool:
    return spec.strip().startswith("file:")


def make_agent(spec: str, game: Game, seed: int | None = None) -> Agent:
    """agents.make, named for the bot host and the commands."""
    return make(spec, game, seed)


def check_spec(spec: str, game: Game, isolated: bool) -> None:
    """Fails early, in the referee, with the error a seat would raise: unknown agents, bad
    options, unreadable or broken bot files (checked without running them)."""
    if is_file_spec(spec):
        if not isolated:
            _refuse_in_process(spec)
        check_file(spec)
        return
    if isolated and is_interactive(spec):
        raise AgentError(
            f"{spec}: an isolated seat is a bot process with no terminal, so a person cannot "
            "play it; drop --isolated to play at this terminal"
        )
    make(spec, game, seed=0)
