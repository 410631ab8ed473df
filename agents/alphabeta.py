"""Negamax alpha-beta over the kernels: `alphabeta:depth=N`, `alphabeta:ms=T`, `eval=...`.

One search per depth runs in a per-game compiled loop (an explicit stack, no recursion): a
transposition table in flat arrays keyed by a hash of the state array, move ordering by the
table's move, two killer moves per ply and a history table, then the game's own order. Python
runs iterative deepening over it and keeps the wall-clock budget, which numba code cannot read:
each depth gets a node budget estimated from the speed so far and is abandoned if it runs out.

Values are from the point of view of the player to move; a finished game scores its return
times WIN_SCALE minus the distance in plies, so any result outranks every heuristic value in
[-1, 1] and faster wins come first. The table only answers a probe at exactly the depth it was
stored with, so every search returns the plain minimax value of its depth. The leaf evaluation
is one pluggable function (`leaf_value`): the game's `evaluate` kernel or random playouts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from agents.base import Agent, AgentError, builder, option
from engine.bits import new_rng
from engine.loops import random_playout
from engine.protocol import TERMINAL, Game, State
from engine.specialise import (
    apply_action,
    bind,
    current_player,
    generic,
    legal_actions,
    returns,
)

WIN_SCALE = 1000.0
RESULT_BOUND = 2.0  # |value| above this is a finished game, not an evaluation
INF = 1e18
EXACT, LOWER, UPPER = 0, 1, 2
HEURISTIC, PLAYOUT = 0, 1
ENTER, NEXT, BACK = 0, 1, 2
NODES, LEAVES, ABORTED = 0, 1, 2
TT_FIRST, KILLER_1, KILLER_2 = 1 << 60, 1 << 59, 1 << 58


def evaluate(s, player):
    """Placeholder: `bind` replaces it with the game's heuristic kernel (or `no_evaluate`)."""
    raise TypeError("evaluate is only available inside a bound search")


@njit(cache=True)
def no_evaluate(s, player):
    """Stands in for a game without a heuristic when the search evaluates by playouts."""
    return 0.0


@njit(cache=True, inline="always")
def hash_state(s):
    """64-bit multiply-xorshift hash of the whole state array (no Zobrist tables to keep)."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for i in range(s.shape[0]):
        h ^= np.uint64(s[i])
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(29)
    return np.int64(h)


@njit(cache=True, inline="always")
def to_table(value, ply):
    """A result's distance counted from the node, so it holds wherever the node recurs."""
    if value > RESULT_BOUND:
        return value + ply
    if value < -RESULT_BOUND:
        return value - ply
    return value


@njit(cache=True, inline="always")
def from_table(value, ply):
    if value > RESULT_BOUND:
        return value - ply
    if value < -RESULT_BOUND:
        return value + ply
    return value


@generic(inline=True)
def result_value(s, me, ply, out):
    """A finished game for `me`: its return scaled past any evaluation, sooner is stronger."""
    returns(s, out)
    r = out[me]
    if r > 0:
        return r * WIN_SCALE - ply
    if r < 0:
        return r * WIN_SCALE + ply
    return 0.0


@generic(inline=True)
def leaf_value(s, me, mode, playouts, num_players, neutral, rng, scratch, buffer, joint, out):
    """The evaluation of a cut-off position for `me`, in [-1, 1] (the one pluggable piece)."""
    if mode == HEURISTIC:
        return evaluate(s, me)
    total = 0.0
    for _ in range(playouts):
        scratch[:] = s
        random_playout(scratch, num_players, neutral, rng, buffer, joint)
        returns(scratch, out)
        total += out[me]
    return total / playouts


@generic
def negamax(root, depth, budget, num_players, num_actions, neutral, mode, playouts, rng,
            tt_key, tt_depth, tt_flag, tt_move, tt_value, killers, history, stats):  # fmt: skip
    """One alpha-beta search of `root` to `depth` plies: (value, best move) for the player to
    move. Stops early (stats[ABORTED] = 1, result unusable) after `budget` nodes."""
    width = max(num_actions, 64)
    size = root.shape[0]
    states = np.empty((depth + 1, size), dtype=np.int64)
    moves = np.empty((depth + 1, width), dtype=np.int64)
    order = np.empty((depth + 1, width), dtype=np.int64)
    count = np.zeros(depth + 1, dtype=np.int64)
    index = np.zeros(depth + 1, dtype=np.int64)
    mover = np.zeros(depth + 1, dtype=np.int64)
    view = np.zeros(depth + 1, dtype=np.int64)
    sign = np.ones(depth + 1, dtype=np.float64)
    alpha = np.zeros(depth + 1, dtype=np.float64)
    beta = np.zeros(depth + 1, dtype=np.float64)
    alpha0 = np.zeros(depth + 1, dtype=np.float64)
    best = np.zeros(depth + 1, dtype=np.float64)
    best_move = np.zeros(depth + 1, dtype=np.int64)
    keys = np.zeros(depth + 1, dtype=np.int64)
    scratch = np.empty(size, dtype=np.int64)
    buffer = np.empty(width, dtype=np.int64)
    joint = np.empty(num_players, dtype=np.int64)
    out = np.zeros(num_players, dtype=np.float64)
    mask = tt_key.shape[0] - 1
    states[0] = root
    view[0] = current_player(root)
    alpha[0], beta[0] = -INF, INF
    ply, phase, value = 0, ENTER, 0.0
    nodes, leaves = 0, 0
    stats[ABORTED] = 0
    while True:
        if phase == ENTER:
            nodes += 1
            if nodes > budget:
                stats[NODES], stats[LEAVES], stats[ABORTED] = nodes, leaves, 1
                return 0.0, -1
            s = states[ply]
            player = current_player(s)
            phase = BACK
            if player == TERMINAL:
                value = result_value(s, view[ply], ply, out)
                continue
            if ply == depth:
                value = leaf_value(s, view[ply], mode, playouts, num_players, neutral, rng,
                                   scratch, buffer, joint, out)  # fmt: skip
                leaves += 1
                continue
            key = hash_state(s)
            slot = key & mask
            hint = -1
            if tt_key[slot] == key and tt_depth[slot] >= 0:
                hint = tt_move[slot]
                if ply > 0 and tt_depth[slot] == depth - ply:
                    stored = from_table(tt_value[slot], ply)
                    flag = tt_flag[slot]
                    if (
                        flag == EXACT
                        or (flag == LOWER and stored >= beta[ply])
                        or (flag == UPPER and stored <= alpha[ply])
                    ):
                        value = stored
                        leaves += 1  # may hide cut-offs: never call the search exact
                        continue
            n = legal_actions(s, player, moves[ply])
            for i in range(n):
                a = moves[ply, i]
                if a == hint:
                    order[ply, i] = TT_FIRST
                elif a == killers[ply, 0]:
                    order[ply, i] = KILLER_1
                elif a == killers[ply, 1]:
                    order[ply, i] = KILLER_2
                else:
                    order[ply, i] = history[player, a]
            keys[ply] = key
            mover[ply] = player
            count[ply] = n
            index[ply] = 0
            best[ply] = -INF
            best_move[ply] = moves[ply, 0]
            alpha0[ply] = alpha[ply]
            phase = NEXT
        elif phase == NEXT:
            i = index[ply]
            if i == count[ply]:
                value = best[ply]
                flag = UPPER if value <= alpha0[ply] else EXACT
                slot = keys[ply] & mask
                tt_key[slot], tt_depth[slot], tt_flag[slot] = keys[ply], depth - ply, flag
                tt_move[slot], tt_value[slot] = best_move[ply], to_table(value, ply)
                phase = BACK
                continue
            pick = i  # selection sort: the best-ordered remaining move, first one on ties
            for j in range(i + 1, count[ply]):
                if order[ply, j] > order[ply, pick]:
                    pick = j
            if pick != i:
                moves[ply, i], moves[ply, pick] = moves[ply, pick], moves[ply, i]
                order[ply, i], order[ply, pick] = order[ply, pick], order[ply, i]
            child = states[ply + 1]
            child[:] = states[ply]
            apply_action(child, moves[ply, i])
            nxt = current_player(child)
            me = view[ply]
            view[ply + 1] = nxt if nxt >= 0 else me
            if view[ply + 1] == me:
                sign[ply + 1] = 1.0
                alpha[ply + 1], beta[ply + 1] = alpha[ply], beta[ply]
            else:
                sign[ply + 1] = -1.0
                alpha[ply + 1], beta[ply + 1] = -beta[ply], -alpha[ply]
            ply += 1
            phase = ENTER
        else:  # BACK: `value` is the finished node's value at `ply`
            if ply == 0:
                stats[NODES], stats[LEAVES] = nodes, leaves
                return value, best_move[0]
            value *= sign[ply]
            ply -= 1
            a = moves[ply, index[ply]]
            if value > best[ply]:
                best[ply] = value
                best_move[ply] = a
            if value > alpha[ply]:
                alpha[ply] = value
            if alpha[ply] >= beta[ply]:
                if a != killers[ply, 0]:
                    killers[ply, 1] = killers[ply, 0]
                    killers[ply, 0] = a
                history[mover[ply], a] += (depth - ply) * (depth - ply)
                slot = keys[ply] & mask
                tt_key[slot], tt_depth[slot], tt_flag[slot] = keys[ply], depth - ply, LOWER
                tt_move[slot], tt_value[slot] = a, to_table(best[ply], ply)
                value = best[ply]
                continue  # phase stays BACK: this node is done too
            index[ply] += 1
            phase = NEXT


@dataclass
class SearchResult:
    """The outcome of one `analyse`: move, value for the player to move, depth, nodes."""

    move: int
    value: float
    depth: int
    nodes: int
    exact: bool


@builder("alphabeta")
class AlphaBetaAgent(Agent):
    """Iterative-deepening negamax alpha-beta for two-player turn-based games."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        self.playouts = option(options, "playouts", int, 16)
        table_bits = option(options, "tt", int, 20)
        evaluation = options.pop("eval", "heuristic")
        self._onnx = None  # agents.onnx_eval.OnnxSearch for eval=onnx:PATH
        if options:
            raise AgentError(
                f"alphabeta: unknown option(s) {sorted(options)}; "
                "known: depth, ms, eval, playouts, tt"
            )
        if self.depth < 0 or self.ms < 0 or self.playouts < 1 or not 4 <= table_bits <= 28:
            raise AgentError("alphabeta: depth, ms >= 0, playouts >= 1, tt (log2 size) in 4..28")
        if not self.depth and not self.ms:
            self.depth = 4
        if game.simultaneous:
            raise AgentError(f"alphabeta: {game.name} is simultaneous; use simab")
        if game.has_chance:
            raise AgentError(f"alphabeta: {game.name} has chance nodes, not supported yet")
        if game.num_players != 2:
            raise AgentError(f"alphabeta: two-player games only, {game.name} has more")
        if evaluation == "heuristic":
            if game.evaluate is None:
                raise AgentError(f"alphabeta: {game.name} has no heuristic; use eval=playout")
            self.mode, kernel = HEURISTIC, game.evaluate
        elif evaluation == "playout":
            self.mode, kernel = PLAYOUT, game.evaluate or no_evaluate
        elif evaluation.startswith("onnx:"):  # a Python search: numba cannot call onnxruntime
            from agents.onnx_eval import OnnxSearch

            self.mode, kernel = HEURISTIC, no_evaluate
            self._onnx = OnnxSearch(game, evaluation[len("onnx:") :])
        else:
            raise AgentError(
                f"alphabeta: eval={evaluation!r}; expected heuristic, playout or onnx:PATH"
            )
        self._search = bind(negamax, game.kernels.search(), evaluate=kernel)
        self._rng = new_rng(0 if seed is None else seed)
        self._table_size = 1 << table_bits
        self._table: tuple | None = None
        self.max_depth = self.depth or game.max_game_length
        self._killers = np.full((self.max_depth + 1, 2), -1, dtype=np.int64)
        self._history = np.zeros((game.num_players, game.num_actions + 1), dtype=np.int64)
        self.last: SearchResult | None = None
        # compile (or load from the cache) and allocate now, not on the first move's clock
        if self._onnx is None:
            self._run(game.new_initial_state(seed=0).array, 1, 1 << 62)

    def _tables(self) -> tuple:
        if self._table is None:
            n = self._table_size
            self._table = (
                np.zeros(n, dtype=np.int64),
                np.full(n, -1, dtype=np.int16),
                np.zeros(n, dtype=np.int8),
                np.zeros(n, dtype=np.int64),
                np.zeros(n, dtype=np.float64),
            )
        return self._table

    def _run(self, s: np.ndarray, depth: int, budget: int) -> tuple[float, int, np.ndarray]:
        g = self.game
        stats = np.zeros(3, dtype=np.int64)
        value, move = self._search(
            s, depth, budget, g.num_players, g.num_actions, g.neutral_action, self.mode,
            self.playouts, self._rng, *self._tables(), self._killers, self._history, stats,
        )  # fmt: skip
        return float(value), int(move), stats

    def analyse(self, state: State) -> SearchResult:
        """Iterative deepening within the depth and/or time limit."""
        if self._onnx is not None:
            self.last = self._onnx.analyse(state, self.max_depth, self.ms)
            return self.last
        start = time.perf_counter()
        deadline = start + self.ms / 1000 if self.ms else None
        self._killers[:] = -1
        self._history //= 2
        result: SearchResult | None = None
        total_nodes, last_nodes, last_seconds = 0, 0, 0.0
        for depth in range(1, self.max_depth + 1):
            budget = 1 << 62
            if deadline is not None and result is not None:
                rate = last_nodes / max(last_seconds, 1e-6)  # nodes/s of the deepest search
                budget = max(int(0.9 * (deadline - time.perf_counter()) * rate), 1)
            began = time.perf_counter()
            value, move, stats = self._run(state.array, depth, budget)
            total_nodes += int(stats[NODES])
            last_nodes = int(stats[NODES])
            if stats[ABORTED]:
                break
            exact = stats[LEAVES] == 0 or abs(value) > RESULT_BOUND
            result = SearchResult(move, value, depth, total_nodes, exact)
            seconds, previous = time.perf_counter() - began, last_seconds
            last_seconds = seconds
            if exact:
                break
            if deadline is not None:
                growth = max(seconds / previous, 2.0) if previous > 1e-4 else 4.0
                if time.perf_counter() + seconds * growth > deadline:
                    break
        assert result is not None
        result.nodes = total_nodes
        self.last = result
        return result

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() < 0:
            return state.random_action(self.rng, player)
        return self.analyse(state).move
