"""The uniform random agent, optionally guarded: `random`, `random:guards=win+block+safe`."""

from __future__ import annotations

from agents.analysis import Analysis
from agents.base import Agent, AgentError, builder
from agents.guards import GuardedChooser, parse_guards
from engine.protocol import CHANCE, TERMINAL, Game, State


@builder("random")
class RandomAgent(Agent):
    """Uniform over legal actions, or over those the guards keep (see agents.guards)."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        flags = parse_guards(options.pop("guards", ""))
        if options:
            raise AgentError(f"random: unknown option(s) {sorted(options)}; known: guards")
        self.guards = GuardedChooser(game, flags, seed) if flags else None

    def step(self, state: State, player: int | None = None) -> int:
        if self.guards is None or state.current_player() in (CHANCE, TERMINAL):
            return state.random_action(self.rng, player)
        return self.guards.choose(state.array, player)

    def analyse(self, state: State) -> Analysis:
        """Unguarded: the uniform policy over the legal moves; guarded: only the choice."""
        found = super().analyse(state)
        if self.guards is None:
            legal = state.legal_actions()
            found.policy = dict.fromkeys(legal, 1.0 / len(legal))
        return found
