"""The bridge to OpenSpiel's bots: `openspiel:BOT[:options]` agents, and positions both ways.

Needs the `peers` extra (open_spiel); pyspiel is imported only inside these functions, so
`agents.make` never loads it for other specs. Two kinds of OpenSpiel game stand for a gridbots
game:
- OpenSpiel's own game where a gridbots game declares `openspiel_name` (Connect 4 as
  `connect_four`, Othello): the same rules and action ids (Connect 4's columns 0-6, Othello's
  squares row * 8 + column from the top left and 64 for the pass, checked move by move in
  tests/test_openspiel_peer.py), so a position travels as its move history: OpenSpiel draws
  Connect 4's bottom row last and gridbots too, but neither side ever reads the other's board;
- `gridbots_<name>` (engine.openspiel_games): the gridbots position itself, kernel array and
  all, so seeded starts and chance draws come along.

Specs: `openspiel:mcts:sims=1000,c=1.41` (UCT with random rollouts: OpenSpiel's C++ MCTSBot on
its own games, its Python MCTSBot on `gridbots_<name>`), `openspiel:random`; on every gridbots
game (through `gridbots_<name>` where OpenSpiel has no counterpart; mcts on turn-based ones).
The other direction, gridbots agents as `pyspiel.Bot`s, is agents/openspiel/bot.py.
"""

from __future__ import annotations

from typing import Any

from agents.base import Agent, AgentError, builder, option
from engine.protocol import Game, State
from engine.registry import game_names, load_game

INSTALL = "install the `peers` extra: pip install -c constraints.txt -e '.[peers]'"


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError:
        raise AgentError(f"openspiel: {INSTALL}") from None
    return pyspiel


def peer_game(game: Game) -> Any:
    """The OpenSpiel game that plays `game`: its declared counterpart, else `gridbots_<name>`
    with the same parameters."""
    pyspiel = _pyspiel()
    if game.openspiel_name is not None:
        return pyspiel.load_game(game.openspiel_name)
    from engine.openspiel_games import load

    return load(game)


def peer_state(game: Game, peer: Any, state: State) -> Any:
    """`state` as a state of `peer` (from `peer_game(game)`)."""
    if game.openspiel_name is not None:
        twin = peer.new_initial_state()
        for action in state.history():
            twin.apply_action(action)
        return twin
    from engine.openspiel_games import from_gridbots

    return from_gridbots(peer, state)


def gridbots_game(peer: Any) -> Game:
    """The gridbots game an OpenSpiel game stands for (`connect_four` is connect4, a
    `gridbots_<name>` game its own); AgentError for any other game."""
    native = getattr(peer, "gridbots", None)
    if isinstance(native, Game):
        return native
    name = peer.get_type().short_name
    for candidate in game_names():
        game = load_game(candidate)
        if game.openspiel_name == name:
            if peer.get_parameters() not in ({}, _defaults(peer)):
                raise AgentError(f"openspiel: only {name} with its default parameters")
            return game
    raise AgentError(f"openspiel: {name} is not a gridbots game nor one's counterpart")


def _defaults(peer: Any) -> dict[str, Any]:
    return dict(peer.get_type().parameter_specification)


def gridbots_state(peer_state: Any) -> State:
    """The gridbots position of an OpenSpiel state (a copy): a `gridbots_<name>` state's own,
    or a counterpart's replayed from its history."""
    twin = getattr(peer_state, "twin", None)
    if twin is not None:
        return twin.clone()
    game = gridbots_game(peer_state.get_game())
    return game.state_from_history(list(peer_state.history()))


def _python_mcts(peer: Any, c: float, sims: int, seed: int) -> Any:
    """OpenSpiel's Python MCTSBot (UCT, random rollouts): its C++ MCTSBot crashes the process on
    Python games (open_spiel 2.0.2, OpenSpiel's own python_tic_tac_toe included)."""
    import numpy as np
    from open_spiel.python.algorithms import mcts

    rng = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(1, rng)
    return mcts.MCTSBot(peer, c, sims, evaluator, random_state=rng)


@builder("openspiel")
class OpenSpielAgent(Agent):
    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        pyspiel = _pyspiel()
        kind = options.pop("variant", "")
        self.peer_game = peer_game(game)
        seed = 0 if seed is None else seed
        if kind == "mcts" and game.simultaneous:
            raise AgentError(f"openspiel: mcts plays turn-based games, not {game.name}")
        if kind == "mcts":
            sims = option(options, "sims", int, 1000)
            c = option(options, "c", float, 1.41)
            if game.openspiel_name is None:
                self.bot = _python_mcts(self.peer_game, c, sims, seed)
            else:
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
        return int(self.bot.step(peer_state(self.game, self.peer_game, state)))


class BotAgent(Agent):
    """`pyspiel.Bot`s seated in a gridbots match or tournament (a policy OpenSpiel trained,
    OpenSpiel's Python MCTSBot): one bot, or one per player (`bots[player]`: a tournament seats
    an agent on either side). Each sees the position as a state of `peer` (default
    `peer_game(game)`), so a bot made for `gridbots_<name>` or a counterpart plays as it would
    in OpenSpiel. Make one per game, as gridbots makes agents."""

    def __init__(
        self, game: Game, bots: Any, peer: Any = None, spec: str = "openspiel-bot"
    ) -> None:
        super().__init__(game, spec)
        self.bots = bots if isinstance(bots, list | tuple) else None
        self.bot = None if self.bots is not None else bots
        self.peer_game = peer_game(game) if peer is None else peer

    def step(self, state: State, player: int | None = None) -> int:
        player = state.current_player() if player is None else player
        bot = self.bot if self.bots is None else self.bots[player]
        return int(bot.step(peer_state(self.game, self.peer_game, state)))
