"""Which bots the web serves, at what cost, and the move they answer.

A spec from the network is untrusted: only allow-listed agents with allow-listed options are
built (no `file:`, no `human`, no option that names a local file: models come from the
registry), and every search runs under the server's time cap whatever the spec asks: `ms` is
set to min(asked, cap) on every agent that searches, a registry bot's inner agent included.
Built agents are kept (a model loads once) in a capped pool per (game, spec); one request at a
time uses an instance, so agents with a tree or a table never see two positions at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agents.base import Agent, AgentError, is_interactive, make, parse_spec
from engine.protocol import Game, GameError

#: agent name → options a web client may set (search agents also get the time cap); the
#: heuristic's options are its game's (pig's `hold`, tactics' `script`), none naming a file
ALLOWED: dict[str, frozenset[str] | None] = {
    "random": frozenset({"guards"}),
    "heuristic": None,
    "alphabeta": frozenset({"depth", "ms", "eval", "results"}),
    "mcts": frozenset({"sims", "ms", "c", "solve"}),
    "simab": frozenset({"depth", "ms"}),
    "hps": frozenset({"depth", "ms"}),
    "puct": frozenset({"model", "ms", "c", "fpu", "solve"}),
    "policy": frozenset({"model"}),
    "planner": frozenset(),
    "registry": frozenset({"guards", "ms", "c", "solve", "select", "depth"}),
}
#: agents whose `ms` bounds their search
TIMED = frozenset({"alphabeta", "mcts", "simab", "hps", "puct"})
#: option values that would read a local file are refused; these keys may name registry models
MODEL_KEYS = frozenset({"model"})
EVALS = frozenset({"heuristic", "playout"})


class WebError(Exception):
    """A request the server refuses: an HTTP status and one line naming the problem."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Limits:
    """What one server allows: thinking time per move, pools, sessions, body size."""

    ms: float = 1000.0  # the most thinking time any request gets
    default_ms: float = 300.0  # what a search agent gets when its spec names no `ms`
    workers: int = 2  # searches running at once (threads)
    pending: int = 256  # requests waiting for a worker before the server answers 429
    bots: int = 32  # (game, spec) pools kept; the least recently used goes first
    sessions: int = 256  # play-page games kept in memory
    body_bytes: int = 64 * 1024


def checked_spec(spec: str, limits: Limits) -> tuple[str, dict[str, str]]:
    """The spec a web client asked for, refused or rewritten with the time cap."""
    spec = spec.strip()
    if not spec:
        raise WebError(400, "name a bot: a spec such as alphabeta:ms=300 or registry:NAME@ALIAS")
    try:
        name, options = parse_spec(spec)
        interactive = is_interactive(spec)
    except AgentError as error:
        raise WebError(400, str(error)) from None
    if name == "file" or interactive:
        raise WebError(400, f"{name!r} bots are not served over HTTP (local or interactive)")
    if name not in ALLOWED:
        raise WebError(
            400, f"bot {name!r} is not served over HTTP; served: {', '.join(sorted(ALLOWED))}"
        )
    variant = options.pop("variant", None)
    if name == "registry" and not variant:
        raise WebError(400, "registry: name a model, e.g. registry:connect4-playerzero@production")
    if variant is not None and name != "registry":
        raise WebError(400, f"{name}: no variant {variant!r} over HTTP")
    if ALLOWED[name] is None:  # the game's own options: any, but never a path
        paths = sorted(k for k, v in options.items() if "/" in v or "\\" in v)
        if paths:
            raise WebError(400, f"{name}: option(s) {paths} name files; refused over HTTP")
    refused = sorted(set(options) - (ALLOWED[name] or set(options)))
    if refused:
        allowed = ", ".join(sorted(ALLOWED[name])) or "none"
        message = f"{name}: option(s) {refused} not allowed over HTTP; allowed: {allowed}"
        raise WebError(400, message)
    for key in MODEL_KEYS & set(options):
        if not options[key].startswith("registry:"):
            raise WebError(400, f"{name}: {key} must be a registry model (registry:NAME@ALIAS)")
    registry = name == "registry" or any(v.startswith("registry:") for v in options.values())
    if registry and not registry_exists():
        raise WebError(400, "registry: no model registry here yet (train and register one first)")
    if "eval" in options and options["eval"] not in EVALS:
        raise WebError(400, f"{name}: eval must be one of {sorted(EVALS)} over HTTP")
    if name in TIMED or (name == "registry" and "ms" in options):
        options["ms"] = _capped_ms(options.get("ms"), limits)
    if variant is not None:
        options = {"variant": variant, **options}
    return compose(name, options), options


def registry_exists() -> bool:
    """Whether the tracking store exists: a SQLite file that is not there is never created."""
    from pathlib import Path

    from models.tracking import tracking_uri

    uri = tracking_uri()
    return not uri.startswith("sqlite:///") or Path(uri[len("sqlite:///") :]).is_file()


def _capped_ms(asked: str | None, limits: Limits) -> str:
    if asked is None:
        return f"{min(limits.default_ms, limits.ms):g}"
    try:
        value = float(asked)
    except ValueError:
        raise WebError(400, f"ms={asked!r}: expected milliseconds") from None
    if not value > 0:
        raise WebError(400, f"ms={asked!r}: expected a positive number of milliseconds")
    return f"{min(value, limits.ms):g}"


def compose(name: str, options: dict[str, str]) -> str:
    """The spec string of a name and options (the inverse of parse_spec)."""
    options = dict(options)
    head = name + (f":{options.pop('variant')}" if "variant" in options else "")
    rest = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{head}:{rest}" if rest else head


def build(spec: str, game: Game, limits: Limits, seed: int | None = None) -> Agent:
    """The agent of an already checked spec; a registry bot's searching inner agent is rebuilt
    under the time cap (its kind is known only once its file is fetched): the server's default
    where its version names no time, the cap where its own time (a zoo card's `ms=20`) is
    more; a time within the cap is the version's to keep."""
    try:
        agent = make(spec, game, seed=seed)
        inner = getattr(agent, "inner", None)
        if inner is not None and hasattr(inner, "ms") and "ms=" not in spec:
            own = float(inner.ms or 0)
            if not 0 < own <= limits.ms:
                name, options = parse_spec(spec)
                options["ms"] = _capped_ms(f"{own:g}" if own > 0 else None, limits)
                agent = make(compose(name, options), game, seed=seed)
    except (AgentError, GameError) as error:
        raise WebError(400, str(error)) from None
    except FileNotFoundError as error:
        raise WebError(400, f"{spec}: {error}") from None
    return agent


class BotPools:
    """Built agents per (game, spec), at most `limits.bots` specs kept, least recent dropped."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._idle: OrderedDict[tuple[str, str], list[Agent]] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def agent(self, game: Game, spec: str) -> Iterator[Agent]:
        key = (game.spec(), spec)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            self._idle.move_to_end(key)
            agent = idle.pop() if idle else None
            while len(self._idle) > self.limits.bots:
                self._idle.popitem(last=False)
        if agent is None:
            agent = build(spec, game, self.limits, seed=0)
        try:
            yield agent
        finally:
            with self._lock:
                self._idle.setdefault(key, []).append(agent)


def answer(game: Game, state, agent: Agent, player: int | None = None) -> dict[str, Any]:
    """The bot's move in `state` and its analysis (JSON), or a 4xx naming why there is none."""
    current = state.current_player()
    history = game.format_moves(state.history())
    if state.is_terminal():
        raise WebError(409, f"the game is over after {history!r}; nothing to answer")
    if current == -2:  # simultaneous: each living player's action, no analysis
        living = [p for p in range(game.num_players) if state.legal_actions(p)]
        if player is not None:
            if player not in living:
                raise WebError(400, f"player {player} cannot act after {history!r}")
            living = [player]
        actions = {p: int(agent.step(state.clone(), p)) for p in living}
        return {
            "actions": {str(p): a for p, a in actions.items()},
            "moves": {str(p): game.action_to_string(p, a) for p, a in actions.items()},
            "analysis": None,
        }
    if current < 0:
        raise WebError(409, f"a chance outcome comes next after {history!r}, not a player's move")
    if player is not None and player != current:
        raise WebError(400, f"player {current} is to move after {history!r}, not {player}")
    try:
        found = agent.analyse(state.clone())
    except AgentError as error:
        raise WebError(400, str(error)) from None
    analysis = found.to_json(state)
    analysed = set(found.values) | set(found.policy) | set(found.ends) | {found.move}
    analysis["cells"] = {  # where each analysed move is on the board (heat-maps)
        game.action_to_string(current, a): [list(c) for c in game.move_cells(a)]
        for a in sorted(analysed)
        if game.move_cells(a)
    }
    return {
        "player": current,
        "action": analysis["action"],
        "move": analysis["move"],
        "analysis": analysis,
    }
