"""Simultaneous alpha-beta for n-player simultaneous games: `simab:depth=N` or `simab:ms=T`.

After the original engine's controller: the seated player's node is MAX over its own actions;
its child MIN node enumerates the joint actions of every other player (team-mates included,
assumed to play their worst for us, so our choice never depends on them) and simulates the whole
lap there, own action plus joint, since nothing can be applied before everybody has chosen.
One lap is one MAX/MIN pair; `depth` counts laps. Both are node kinds of the shared core
(agents.search: LAP_MAX, LAP_MIN), which also scores results (return x WIN_SCALE, sooner wins
first, later losses first) and the seated player being out (lost for sure when no team-mate
can act). Leaves use the game's `evaluate(s, player)` heuristic (zero for a game without one).
`ms=T` deepens one lap at a time within the budget, as alphabeta does.
"""

from __future__ import annotations

import numpy as np

from agents.alphabeta import table_size
from agents.base import Agent, AgentError, builder, option
from agents.search import WIN_SCALE, AlphaBeta, Outcome, deepen  # noqa: F401 (re-exported)
from engine.protocol import SIMULTANEOUS, Game, State

MAX_DEPTH = 64


def search(game: Game, s: np.ndarray, player: int, depth: int, prune: bool = True,
           first: int = -1, budget: int = 1 << 62) -> tuple[float, int, Outcome]:  # fmt: skip
    """(value, best action, outcome) of one fixed-depth search from a fresh table; with
    `prune` off the windows never close, so every joint move is visited (plain max-min)."""
    core = AlphaBeta(game, "heuristic", table_bits=4, max_depth=depth, pruning=prune)
    out = core.search(s, player, depth, budget, root_hint=first)
    return out.value, (game.neutral_action if out.move < 0 else out.move), out


@builder("simab")
class SimABAgent(Agent):
    """Simultaneous alpha-beta with iterative deepening under a lap or time budget."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        if options:
            raise AgentError(f"simab: unknown option(s) {sorted(options)}; known: depth, ms")
        if self.depth < 0 or self.ms < 0 or self.depth > MAX_DEPTH:
            raise AgentError(f"simab: depth in 0..{MAX_DEPTH}, ms >= 0")
        if not game.simultaneous:
            raise AgentError(f"simab: {game.name} is turn-based; use alphabeta")
        if not self.depth and not self.ms:
            self.depth = 3
        bits = min(18, table_size(game.num_actions**game.num_players, 0 if self.ms else self.depth))
        self.core = AlphaBeta(game, "heuristic", table_bits=bits,
                              max_depth=self.depth or MAX_DEPTH)  # fmt: skip
        self.last: tuple[float, int, int] | None = None  # value, action, depth reached

    def step(self, state: State, player: int | None = None) -> int:
        if player is None:
            if self.game.num_players != 1:
                raise AgentError("simab: a simultaneous game needs the seated player")
            player = 0
        if state.current_player() != SIMULTANEOUS or not state.legal_actions(player):
            return self.game.neutral_action
        self.core.new_move()
        out = deepen(self.core, state.array, player, self.depth, self.ms)
        action = self.game.neutral_action if out.move < 0 else out.move
        self.last = (out.value, action, out.depth)
        return action
