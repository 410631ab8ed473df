"""`heuristic[:key=value…]`: the game's own hand-written policy (pig: `heuristic:hold=20`)."""

from __future__ import annotations

from agents.base import Agent, AgentError, builder
from engine.protocol import CHANCE, Game, GameError, State


@builder("heuristic")
class HeuristicAgent(Agent):
    """Plays `game.heuristic_action(state, player, options)`; games without one are refused."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        if game.heuristic_action is None:
            raise AgentError(f"heuristic: {game.name} ships no heuristic policy")
        self.options = options
        try:  # validate the options once, on the initial position
            state = game.new_initial_state(seed=seed)
            if state.current_player() >= 0:
                game.heuristic_action(state, state.current_player(), options)
        except GameError as problem:
            raise AgentError(f"heuristic: {problem}") from None

    def step(self, state: State, player: int | None = None) -> int:
        if player is None:
            player = state.current_player()
        if player == CHANCE:
            return state.random_action(self.rng)
        return self.game.heuristic_action(state, player, self.options)
