"""The uniform random agent (guards arrive with the agents issue)."""

from __future__ import annotations

from agents.base import Agent, AgentError, builder
from engine.protocol import Game, State


@builder("random")
class RandomAgent(Agent):
    """Uniform over legal actions."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        if options:
            raise AgentError(f"random: unknown option(s) {sorted(options)}")

    def step(self, state: State, player: int | None = None) -> int:
        return state.random_action(self.rng, player)
