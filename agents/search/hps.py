"""`hps:…`: hierarchical portfolio search (study 004) on the shared alpha-beta core.

A move of this search is a whole partial turn: one of the game's scripted policies (its
`Portfolio`) playing the mover's turn. The shared core (agents.search.core) searches those moves
with alpha-beta, chance outcomes between turns as expectation nodes, and evaluates its leaves
by a scripted playout (study 004's HPS_P: one script plays both sides to the end), by the
game's material heuristic (HPS_R), or by a value network (HPS_L): inside the loop where the
file is a value MLP over the game's planes (agents.value.leaf), otherwise on onnxruntime, all
of a frontier node's children in one call. In the real game the chosen script then plays the turn
action by action, so it reacts to the draws that really happen; the next turn searches again.

Spec: `hps:ms=T` (iterative deepening within T ms per turn) or `hps:depth=N` (plies: a turn
or a chance outcome each), `eval=playout|heuristic|onnx:PATH`, `tt=BITS`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent, AgentError, builder, option
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game, State

MAX_DEPTH = 24  # plies the workspace holds (turns and draws); deepening stops there


class PlanesValue:
    """A value network over the game's planes-first observation, as the core's batched leaf
    evaluation: each leaf is seen from the searching player q, the value is q's."""

    def __init__(self, game: Game, path: str | Path):
        from agents.onnx.runtime import open_session

        self.session, meta = open_session(path)
        if meta.get("gridbots.kind") != "value" or meta.get("gridbots.encoding") != "value-planes":
            raise AgentError(f"hps: {path} is not a value network over observation planes")
        trained = meta.get("gridbots.game", "").partition(":")[0]
        if trained and trained != game.name:
            raise AgentError(f"hps: {path} was trained for {trained}, not {game.name}")
        self.game = game
        self.input = self.session.get_inputs()[0].name
        self.output = self.session.get_outputs()[0].name
        self._plane = np.zeros(int(np.prod(game.observation_shape)), dtype=np.float32)
        self.calls = 0
        self.evaluations = 0

    def __call__(self, states: np.ndarray, movers: np.ndarray, q: int) -> np.ndarray:
        n = len(states)
        batch = np.empty((n, self._plane.size), dtype=np.float32)
        for i in range(n):
            self.game.kernels.observation(states[i], q, batch[i])
        p = self.session.run([self.output], {self.input: batch})[0]
        self.calls += 1
        self.evaluations += n
        return np.clip(2.0 * np.asarray(p, dtype=np.float64).reshape(n) - 1.0, -1.0, 1.0)


@builder("hps")
class HPSAgent(Agent):
    """Alpha-beta over the game's portfolio of scripted partial turns."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        from agents.search.core import AlphaBeta

        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        bits = option(options, "tt", int, 18)
        evaluation = options.pop("eval", "playout")
        if options:
            known = "depth, ms, eval, tt"
            raise AgentError(f"hps: unknown option(s) {sorted(options)}; known: {known}")
        if game.portfolio is None:
            raise AgentError(f"hps: {game.name} has no portfolio of scripted turns")
        if game.simultaneous or game.num_players != 2:
            raise AgentError("hps: two-player turn-based games only")
        if self.depth < 0 or self.ms < 0 or not 4 <= bits <= 26 or self.depth > MAX_DEPTH:
            raise AgentError(f"hps: depth 0..{MAX_DEPTH}, ms >= 0, tt (log2 size) in 4..26")
        if not self.depth and not self.ms:
            self.depth = 3
        portfolio = game.portfolio
        network, weights = None, None
        if evaluation == "playout":
            leaf, heuristic = "heuristic", portfolio.playout
        elif evaluation == "heuristic":
            if game.evaluate is None:
                raise AgentError(f"hps: {game.name} has no heuristic; use eval=playout")
            leaf, heuristic = "heuristic", game.evaluate
        elif evaluation.startswith("onnx:"):
            from agents.value.leaf import leaf as loop_leaf

            path = evaluation[len("onnx:") :]
            leaf, heuristic = PlanesValue(game, path), None  # checks the file's kind and game
            in_loop = loop_leaf(game, path)
            if in_loop is not None:
                leaf, (network, weights) = "network", in_loop
        else:
            raise AgentError(f"hps: eval={evaluation!r}; expected playout, heuristic or onnx:PATH")
        self.core = AlphaBeta(
            game,
            leaf,
            heuristic=heuristic,
            child_moves_fn=portfolio.moves,
            play_move_fn=portfolio.play,
            network=network,
            weights=weights,
            table_bits=bits,
            max_depth=MAX_DEPTH,
            seed=0 if seed is None else seed,
        )
        self._buffers = (
            np.empty(max(game.num_actions, 64), dtype=np.int64),
            np.empty(game.new_initial_state(seed=0).array.shape[0], dtype=np.int64),
            np.empty(max(game.num_actions, 64), dtype=np.int64),
        )
        self._script = -1
        self._root_history: list[int] | None = None
        self.last = None

    def choose_script(self, state: State) -> int:
        """The search: the portfolio script for the mover's turn."""
        from agents.search.core import deepen

        self.core.new_move()
        self.last = deepen(
            self.core, state.array, state.current_player(), depth=self.depth, ms=self.ms
        )
        return int(self.last.move)

    def _same_turn(self, state: State) -> bool:
        root = self._root_history
        if root is None or self._script < 0:
            return False
        history = state.history()
        if history[: len(root)] != root:
            return False
        return not any(self.game.ends_turn(a) for a in history[len(root) :])

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() in (CHANCE, SIMULTANEOUS, TERMINAL):
            return state.random_action(self.rng, player)
        if not self._same_turn(state):
            self._script = self.choose_script(state)
            self._root_history = state.history()
        action = self.game.portfolio.action(state.array, self._script, *self._buffers)
        return int(action)
