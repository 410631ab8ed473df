"""gridbots agents as `pyspiel.Bot`s: any agent spec takes a seat in OpenSpiel's scripts.

`make_bot("puct:model=registry:connect4-pz@production,sims=200", game, player_id=0)` plays
OpenSpiel's `connect_four` or `othello` (positions replayed from their histories, the action
ids being the same) and every `gridbots_<name>` game (engine.openspiel_games). Imports pyspiel,
so only code that asks for a bot imports this module (needs the `peers` extra).

Like a gridbots match, which makes a fresh agent per game, `restart_at` rebuilds the agent with
its seed: a game played through `evaluate_bots` and the gridbots match of the same seeds see the
same decisions.
"""

from __future__ import annotations

from typing import Any

import pyspiel

from agents.base import make
from agents.openspiel.agent import gridbots_game, gridbots_state


class GridbotsBot(pyspiel.Bot):
    """One gridbots agent seated as `player_id` in an OpenSpiel game."""

    def __init__(self, spec: str, game: Any, player_id: int, seed: int | None = None):
        pyspiel.Bot.__init__(self)
        self.spec, self.seed, self._player_id = spec, seed, player_id
        self.game = gridbots_game(game)
        self.agent = make(spec, self.game, seed=seed)

    def player_id(self) -> int:
        return self._player_id

    def restart_at(self, state: Any) -> None:
        self.agent = make(self.spec, self.game, seed=self.seed)

    def inform_action(self, state: Any, player_id: int, action: int) -> None:
        pass  # the agent reads the whole position at its next step

    def step(self, state: Any) -> int:
        """The agent's move for this bot's player (INVALID_ACTION when it cannot act: a crashed
        bike in a simultaneous lap)."""
        position = gridbots_state(state)
        if not position.legal_actions(self._player_id):
            return pyspiel.INVALID_ACTION
        return int(self.agent.step(position, self._player_id))


def make_bot(spec: str, game: Any, player_id: int, seed: int | None = None) -> GridbotsBot:
    """The agent `spec` as a bot for `player_id` of `game` (a pyspiel game or a game string)."""
    if isinstance(game, str):
        if game.startswith("gridbots_"):
            import engine.openspiel_games  # noqa: F401  (registers the gridbots_ games)
        game = pyspiel.load_game(game)
    return GridbotsBot(spec, game, player_id, seed)
