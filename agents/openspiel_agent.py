"""`openspiel:BOT[:options]`: OpenSpiel's own bots playing gridbots games, to compare with a peer.

Needs the `peers` extra (open_spiel). Only games that declare `openspiel_name` (the same rules
and action ids in OpenSpiel, checked by tests/test_openspiel_peer.py) are supported. The bot's
state is rebuilt from the gridbots history before every move, so it never sees engine objects.
Specs: `openspiel:mcts:sims=1000,c=1.41` (C++ MCTS with random rollouts), `openspiel:random`.
"""

from __future__ import annotations

from agents.base import Agent, AgentError, builder, option
from engine.protocol import Game, State


@builder("openspiel")
class OpenSpielAgent(Agent):
    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        try:
            import pyspiel
        except ImportError:
            raise AgentError("openspiel: install the `peers` extra (open_spiel)") from None
        if game.openspiel_name is None:
            raise AgentError(f"openspiel: {game.name} has no OpenSpiel counterpart")
        kind = options.pop("variant", "")
        self.peer_game = pyspiel.load_game(game.openspiel_name)
        seed = 0 if seed is None else seed
        if kind == "mcts":
            sims = option(options, "sims", int, 1000)
            c = option(options, "c", float, 1.41)
            evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
            self.bot = pyspiel.MCTSBot(
                self.peer_game, evaluator, c, sims, 10**7, False, seed, False
            )
        elif kind == "random":
            self.bot = None
        else:
            raise AgentError(f"openspiel: unknown bot {kind!r}; known: mcts, random")
        if options:
            raise AgentError(f"openspiel: unknown option(s) {sorted(options)}")

    def step(self, state: State, player: int | None = None) -> int:
        if self.bot is None:
            return state.random_action(self.rng, player)
        peer = self.peer_game.new_initial_state()
        for action in state.history():
            peer.apply_action(action)
        return int(self.bot.step(peer))
