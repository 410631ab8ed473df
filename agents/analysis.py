"""One analysis protocol for every agent: what it would play in a position, and why.

`agent.analyse(state) -> Analysis` serves people, not play: the `hint` of `gridbots play`, the
web page's analysis panel and the bot API all read the same object. Every agent answers it (the
base class times `step`); agents with more to say fill more fields:

  move     the action the agent would play (what `step` returns in that position)
  value    expected result for the player to move, in [-1, 1]; None when the agent has none
  values   per legal action: expected result for the player to move after it, in [-1, 1]
           (alphabeta: each root move searched to the same depth; mcts/puct: mean values)
  policy   per legal action: a probability (visit shares, a network's policy, the share of a
           sequence model's scores, a uniform choice)
  ends     per action with a proven result: plies to the end, positive when the player to
           move wins, negative when it loses (alphabeta; a value of +-1 goes with it)
  seconds  wall-clock time of the analysis
  extra    what else the agent knows: depth, nodes, simulations, the model it runs

`to_json(state)` writes actions in the game's notation; `describe(state)` is the text a
terminal shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.protocol import State

SHOWN = 12  # moves listed in a terminal hint


@dataclass
class Analysis:
    move: int
    value: float | None = None
    values: dict[int, float] = field(default_factory=dict)
    policy: dict[int, float] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def ranked(self) -> list[int]:
        """The analysed actions, best first: proven wins, then by value, then by policy."""
        actions = set(self.values) | set(self.policy) | set(self.ends)

        def key(a: int) -> tuple:
            end = self.ends.get(a)
            proven = 0 if end is None else (1 if end > 0 else -1)
            distance = 0 if end is None else (-abs(end) if end > 0 else abs(end))
            return (proven, distance, self.values.get(a, -math.inf), self.policy.get(a, 0.0), -a)

        return sorted(actions, key=key, reverse=True)

    def to_json(self, state: State) -> dict[str, Any]:
        """JSON for the web page and the bot API: actions keyed by their notation."""
        game, player = state.game, state.current_player()

        def name(action: int) -> str:
            return game.action_to_string(player, int(action))

        return {
            "move": name(self.move),
            "action": int(self.move),
            "value": _finite(self.value),
            "values": {name(a): _finite(v) for a, v in self.values.items()},
            "policy": {name(a): float(p) for a, p in self.policy.items()},
            "ends": {name(a): int(e) for a, e in self.ends.items()},
            "seconds": float(self.seconds),
            "extra": {k: _plain(v) for k, v in self.extra.items()},
        }

    def describe(self, state: State, shown: int = SHOWN) -> list[str]:
        """Lines for a terminal: the choice and its value, then the moves best first."""
        game, player = state.game, state.current_player()
        head = f"plays {game.action_to_string(player, self.move)}"
        if self.move in self.ends:
            head += f" ({_end_text(self.ends[self.move])})"
        elif self.value is not None:
            head += f", value {self.value:+.2f} for {game.player_name(player)}"
        facts = [f"{self.seconds:.2f} s"]
        for key, value in self.extra.items():
            if isinstance(value, bool | np.bool_):
                facts += [key] if value else []  # `exact`, when it is
            elif isinstance(value, int | float | str | np.number):
                facts.append(f"{key} {_plain(value)}")
        lines = [f"{head}  [{', '.join(facts)}]"]
        cells = []
        for action in self.ranked()[:shown]:
            parts = [game.action_to_string(player, action)]
            if action in self.policy:
                parts.append(f"{100 * self.policy[action]:.0f}%")
            if action in self.ends:
                parts.append(_end_text(self.ends[action]))
            elif action in self.values:
                parts.append(f"{self.values[action]:+.2f}")
            cells.append(" ".join(parts))
        if cells:
            lines.append("  " + "   ".join(cells))
        return lines


def _end_text(plies: int) -> str:
    return f"wins in {plies}" if plies > 0 else f"loses in {-plies}"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, for JSON."""
    return value.item() if isinstance(value, np.generic) else value


def from_search(
    move: int,
    actions: np.ndarray,
    visits: np.ndarray,
    means: np.ndarray,
    seconds: float,
    **extra: Any,
) -> Analysis:
    """An Analysis from a search tree's root (MCTS, PUCT): visit shares as the policy, mean
    values of visited actions as values, their visit-weighted mean as the position's value."""
    actions, visits, means = (np.asarray(x) for x in (actions, visits, means))
    total = float(visits.sum())
    seen = visits > 0
    value = float((visits[seen] * means[seen]).sum() / total) if total else None
    return Analysis(
        move=int(move),
        value=value,
        values={int(a): float(m) for a, m, s in zip(actions, means, seen, strict=True) if s},
        policy={int(a): float(v) / total for a, v in zip(actions, visits, strict=True)}
        if total
        else {},
        seconds=seconds,
        extra={"simulations": int(total), **extra},
    )
