"""`alphabeta:eval=onnx:PATH`: a value network as the evaluation of alpha-beta, on onnxruntime.

numba code cannot call onnxruntime, so this search runs in Python over the game's kernels:
negamax alpha-beta with iterative deepening, the previous iteration's best moves tried first,
and evaluation batched per node: a node one ply above the horizon expands all its children
and evaluates every non-terminal one in a single session call, then takes their maximum (no
cut-off among leaves could save a batched evaluation). The network outputs p, the win
probability of the side to move; the evaluation is 2p - 1 from that side's point of view,
negated when the parent's mover is the other side. Finished games score as in
agents.alphabeta (return x WIN_SCALE minus the distance), so results outrank any evaluation.

The network's inputs are the features the training encoding gives a position (the model's
`gridbots.encoding`), built by agents.value_features as features.encode builds a dataset's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import AgentError
from engine.protocol import SIMULTANEOUS, TERMINAL, Game

WIN_SCALE = 1000.0
RESULT_BOUND = 2.0
INF = float("inf")
Encoder = Callable[[np.ndarray, np.ndarray], np.ndarray]


def open_session(path: str | Path) -> tuple[Any, dict[str, str]]:
    """(onnxruntime session, metadata_props) of an ONNX file; AgentError when unreadable."""
    from agents.onnx_runtime import session

    path = Path(path)
    if not path.is_file():
        raise AgentError(f"onnx: model file {path} not found")
    try:
        runner = session(path)
        meta = dict(runner.get_modelmeta().custom_metadata_map)
    except Exception as problem:  # onnxruntime's own exception types
        reason = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem)
        raise AgentError(f"onnx: {path} is not a readable ONNX model: {reason}") from None
    return runner, meta


def value_encoder(game: Game, encoding: str) -> Encoder:
    """The per-state feature function of a value model's training encoding."""
    from agents.value_features import ValueEncoder

    try:
        return ValueEncoder(game, encoding).batch
    except ValueError as problem:
        raise AgentError(f"onnx: {problem}") from None


class OnnxValue:
    """A value network: a batch of states (and their movers) → values in [-1, 1] for the mover."""

    def __init__(self, game: Game, path: str | Path):
        self.session, self.meta = open_session(path)
        kind = self.meta.get("gridbots.kind")
        if kind != "value":
            raise AgentError(f"onnx: {path} holds a {kind or 'unlabelled'} model, not a value one")
        trained = self.meta.get("gridbots.game")
        if trained and trained != game.spec():
            raise AgentError(f"onnx: {path} was trained for {trained}, not {game.spec()}")
        self.encode = value_encoder(game, self.meta.get("gridbots.encoding", "board-onehot"))
        self.input = self.session.get_inputs()[0].name
        self.output = self.session.get_outputs()[0].name
        self.calls = 0
        self.evaluations = 0

    def __call__(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        features = np.asarray(self.encode(states, players), dtype=np.float32)
        try:
            p = self.session.run([self.output], {self.input: features})[0]
        except Exception as problem:
            raise AgentError(f"onnx: the value model does not run: {problem}") from None
        self.calls += 1
        self.evaluations += len(states)
        p = np.asarray(p, dtype=np.float64).reshape(len(states), -1)[:, 0]
        return np.clip(2.0 * p - 1.0, -1.0, 1.0)


class _OutOfTime(Exception):
    pass


class OnnxSearch:
    """Iterative-deepening negamax alpha-beta over the kernels with batched network leaves."""

    def __init__(self, game: Game, path: str | Path):
        if game.simultaneous or game.has_chance or game.num_players != 2:
            raise AgentError("alphabeta: eval=onnx needs a two-player turn-based game")
        self.game = game
        self.value = OnnxValue(game, path)
        self.k = game.kernels
        self._moves = np.empty(max(game.num_actions, 64), dtype=np.int64)
        self._out = np.zeros(game.num_players, dtype=np.float64)
        self.best: dict[bytes, int] = {}
        self.nodes = 0
        self._leaves = 0
        self._deadline: float | None = None

    def _result(self, s: np.ndarray, me: int, ply: int) -> float:
        self.k.returns(s, self._out)
        r = float(self._out[me])
        if r > 0:
            return r * WIN_SCALE - ply
        if r < 0:
            return r * WIN_SCALE + ply
        return 0.0

    def _expand(self, s: np.ndarray, me: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(moves, child states, child movers) with the remembered best move first."""
        n = self.k.legal_actions(s, me, self._moves)
        moves = self._moves[:n].copy()
        hint = self.best.get(s.tobytes())
        if hint is not None:
            at = np.flatnonzero(moves == hint)
            if len(at):
                moves[[0, at[0]]] = moves[[at[0], 0]]
        children = np.repeat(s[None], n, axis=0)
        movers = np.empty(n, dtype=np.int64)
        for i in range(n):
            self.k.apply_action(children[i], moves[i])
            movers[i] = self.k.current_player(children[i])
        return moves, children, movers

    def _frontier(self, s, me, ply) -> tuple[float, int]:
        """A node one ply above the horizon: all children, one batched evaluation."""
        moves, children, movers = self._expand(s, me)
        values = np.empty(len(moves))
        live = movers >= 0
        for i in np.flatnonzero(~live):
            values[i] = self._result(children[i], me, ply + 1)
        if live.any():
            v = self.value(children[live], movers[live])
            values[live] = np.where(movers[live] == me, v, -v)
            self._leaves += int(live.sum())
        i = int(np.argmax(values))
        self.best[s.tobytes()] = int(moves[i])
        return float(values[i]), int(moves[i])

    def _negamax(self, s, depth, alpha, beta, ply) -> tuple[float, int]:
        self.nodes += 1
        if self._deadline is not None and time.perf_counter() > self._deadline:
            raise _OutOfTime
        me = int(self.k.current_player(s))
        if depth == 1:
            return self._frontier(s, me, ply)
        moves, children, movers = self._expand(s, me)
        best, best_move = -INF, int(moves[0])
        for i in range(len(moves)):
            if movers[i] == TERMINAL:
                value = self._result(children[i], me, ply + 1)
            elif movers[i] == me:
                value = self._negamax(children[i], depth - 1, alpha, beta, ply + 1)[0]
            else:
                value = -self._negamax(children[i], depth - 1, -beta, -alpha, ply + 1)[0]
            if value > best:
                best, best_move = value, int(moves[i])
            alpha = max(alpha, value)
            if alpha >= beta:
                break
        self.best[s.tobytes()] = best_move
        return best, best_move

    def search(self, s: np.ndarray, depth: int) -> tuple[float, int, bool]:
        """(value for the mover, best move, exact) of one search to `depth` plies."""
        self._leaves = 0
        value, move = self._negamax(s, depth, -INF, INF, 0)
        return value, move, self._leaves == 0 or abs(value) > RESULT_BOUND

    def analyse(self, state, max_depth: int, ms: float):
        """Iterative deepening up to `max_depth` plies and/or `ms` milliseconds."""
        from agents.alphabeta import SearchResult

        if state.current_player() in (TERMINAL, SIMULTANEOUS) or state.current_player() < 0:
            raise AgentError("alphabeta: nothing to search at this position")
        start = time.perf_counter()
        self.best.clear()
        self.nodes = 0
        result = None
        for depth in range(1, max_depth + 1):
            # the first iteration always completes, so there is always a move to play
            self._deadline = start + ms / 1000 if ms and result is not None else None
            try:
                value, move, exact = self.search(state.array, depth)
            except _OutOfTime:
                break
            result = SearchResult(move, value, depth, self.nodes, exact)
            if exact:
                break
            if ms and (time.perf_counter() - start) * 1000 > ms / 2:
                break  # the next depth would not finish in time
        assert result is not None
        result.nodes = self.nodes
        return result
