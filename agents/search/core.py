"""The one alpha-beta core, Python side: compile the loop (agents.search.loop) for a game, run
searches with their buffers, table and ordering memory, batch leaf evaluations out to Python,
and deepen iteratively under a clock. The loop's semantics (node kinds, scores, ordering, the
guarantee that one fixed-depth search is plain minimax) are described in agents.search.loop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.search.loop import (  # noqa: F401 (the names callers import from agents.search.core)
    ABORTED,
    BATCH,
    DONE,
    HEURISTIC,
    IDLE,
    LEAVES,
    MOVE,
    NEED_VALUES,
    NETWORK,
    NODES,
    PENDING,
    PHASE,
    PLAYOUT,
    VALUE,
    WIN_SCALE,
    result_value,
    run,
    search,
    workspace,
    zero_evaluate,
    zero_network,
)
from agents.search.table import RESULT_BOUND, hash_state, memory, table  # noqa: F401
from engine.bits import new_rng
from engine.loops import play_random_games
from engine.protocol import Game
from engine.specialise import bind


def compiled(
    game: Game,
    loop=run,
    *,
    heuristic: Callable | None = None,
    network: Callable | None = None,
    child_moves_fn: Callable | None = None,
    play_move_fn: Callable | None = None,
) -> Callable:
    """`loop` (`run` or `search`) compiled for `game`'s kernels and an evaluation kernel
    (default: the game's heuristic, or zero); `network(s, player, weights)` is the NETWORK
    leaf; portfolio searches pass njit `child_moves_fn(s, player, out) -> count` and
    `play_move_fn(s, move)` to search over their own moves."""
    extra: dict[str, Callable] = {
        "evaluate": heuristic or game.evaluate or zero_evaluate,
        "network_value": network or zero_network,
    }
    if child_moves_fn is not None:
        extra["child_moves"] = child_moves_fn
    if play_move_fn is not None:
        extra["play_move"] = play_move_fn
    return bind(loop, game.kernels.search(), **extra)


def config(
    game: Game,
    mode: int,
    playouts: int = 1,
    prune: bool = True,
    weights: np.ndarray | None = None,
    scale: float | None = None,
) -> tuple:
    """The `cfg` tuple of `run`. Results are on WIN_SCALE (sooner wins first) except in games
    with chance nodes; `scale=1` scores them flat (a win is 1 at any distance), as the plain
    minimax of the studies does."""
    if scale is None:
        scale = 1.0 if game.has_chance else WIN_SCALE
    teams = np.asarray(game.teams, dtype=np.int64)
    meta = (game.num_players, game.neutral_action)
    w = np.zeros(1) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    return (teams, *meta, mode, max(int(playouts), 1), float(scale), bool(prune), w)


#: evaluates a batch for q: (states [n, size], movers [n], q) -> values [n] in [-1, 1] for q
BatchEvaluator = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


@dataclass
class Outcome:
    """One finished search: value for the searching player, move (-1: nothing to play)."""

    value: float
    move: int
    depth: int
    nodes: int
    leaves: int
    aborted: bool

    @property
    def exact(self) -> bool:
        """Whether the value is a proven result: no evaluation was involved, or a win/loss."""
        return not self.aborted and (self.leaves == 0 or abs(self.value) > RESULT_BOUND)


class AlphaBeta:
    """One game's compiled core with its buffers, table and move-ordering memory.

    `leaf` is "heuristic", "playout", "network" (njit `network(s, player, weights)` with
    `weights`) or a BatchEvaluator; `heuristic` replaces the game's evaluation kernel;
    `child_moves_fn`/`play_move_fn` replace the moves of turn nodes; `pruning=False` visits
    every node (a reference for tests and node counts); `result_scale=1.0` scores results flat.
    """

    def __init__(
        self,
        game: Game,
        leaf: str | BatchEvaluator = "heuristic",
        *,
        playouts: int = 16,
        table_bits: int = 20,
        max_depth: int | None = None,
        seed: int = 0,
        heuristic: Callable | None = None,
        child_moves_fn: Callable | None = None,
        play_move_fn: Callable | None = None,
        pruning: bool = True,
        network: Callable | None = None,
        weights: np.ndarray | None = None,
        result_scale: float | None = None,
    ):
        self.game = game
        self.batch: BatchEvaluator | None = None
        if callable(leaf):
            if game.simultaneous:
                raise ValueError("batched leaf evaluation needs a turn-based game")
            mode, self.batch = BATCH, leaf
        elif leaf == "heuristic":
            mode = HEURISTIC
        elif leaf == "playout":
            mode = PLAYOUT
        elif leaf == "network" and network is not None:
            mode = NETWORK
        else:
            raise ValueError(
                f"leaf evaluation {leaf!r}: heuristic, playout, network (with `network=`) or a "
                "function"
            )
        self.mode = mode
        self.max_depth = int(max_depth or game.max_game_length)
        self.cfg = config(game, mode, playouts, pruning, weights, result_scale)
        self._run = compiled(game, run, heuristic=heuristic, network=network,
                             child_moves_fn=child_moves_fn, play_move_fn=play_move_fn)  # fmt: skip
        size = game.new_initial_state(seed=0).array.shape[0]
        self.ws = workspace(self.max_depth, size, game.num_players, game.num_actions)
        self.tt = table(int(table_bits))
        self.mem = memory(self.max_depth, game.num_players, game.num_actions)
        self.rng = new_rng(seed)

    def forget(self) -> None:
        """Clears the table and the ordering memory (a search then depends on nothing before)."""
        for array in self.tt:
            array[:] = -1 if array.dtype == np.int16 else 0
        self.mem[0][:] = -1
        self.mem[1][:] = 0

    def new_move(self) -> None:
        """Between two moves: forget the killers, halve the history."""
        self.mem[0][:] = -1
        self.mem[1][:] //= 2

    def search(
        self, s: np.ndarray, q: int, depth: int, budget: int = 1 << 62, root_hint: int = -1
    ) -> Outcome:
        """One search of state array `s` for player q to `depth` plies (1..max_depth)."""
        if not 1 <= depth <= self.max_depth:
            raise ValueError(f"search depth {depth}: expected 1..{self.max_depth}")
        s = np.ascontiguousarray(s, dtype=np.int64)
        regs = self.ws[7]
        regs[PHASE] = IDLE
        args = (s, int(q), int(depth), int(budget), int(root_hint), self.cfg, self.rng,
                self.ws, self.tt, self.mem)  # fmt: skip
        while self._run(*args) == NEED_VALUES:
            n = int(regs[PENDING])
            values = np.asarray(self.batch(self.ws[13][:n], self.ws[14][:n], int(q)))
            self.ws[15][:n] = values.reshape(n)
        return Outcome(float(self.ws[8][VALUE]), int(regs[MOVE]), int(depth), int(regs[NODES]),
                       int(regs[LEAVES]), bool(regs[ABORTED]))  # fmt: skip


def deepen(
    core: AlphaBeta,
    s: np.ndarray,
    q: int,
    depth: int = 0,
    ms: float = 0.0,
    min_growth: float = 2.0,
) -> Outcome:
    """`depth` alone: plain minimax's value and move at `depth` (searched 1, 2, … `depth` plies
    deep, which only primes move ordering). `ms`: iterative deepening (to `depth` at most)
    until the next depth would not fit (the last depth's time times its growth over the one
    before, at least `min_growth`), each depth with a node budget estimated from the previous
    one's speed and the previous best move searched first; stops early at a proven result.
    The first depth always completes, so there is always a move."""
    if not ms:  # shallower searches first only fill the table and the killers: the result
        # is still plain minimax's at `depth` (legal order at the root, first best kept)
        target = depth or core.max_depth
        nodes = 0
        for d in range(1, target + 1):
            out = core.search(s, q, d)
            nodes += out.nodes
        out.nodes = nodes
        return out
    start = time.perf_counter()
    deadline = start + ms / 1000
    result: Outcome | None = None
    total, last_nodes, last_seconds = 0, 0, 0.0
    for d in range(1, (depth or core.max_depth) + 1):
        budget = 1 << 62
        if result is not None:
            rate = last_nodes / max(last_seconds, 1e-6)  # nodes/s of the deepest search
            budget = max(int(0.9 * (deadline - time.perf_counter()) * rate), 1)
        began = time.perf_counter()
        out = core.search(s, q, d, budget, root_hint=-1 if result is None else result.move)
        total += out.nodes
        if out.aborted:
            break
        result = out
        seconds, previous = time.perf_counter() - began, last_seconds
        last_nodes, last_seconds = out.nodes, seconds
        if out.exact:
            break
        growth = max(seconds / previous, min_growth) if previous > 1e-4 else 4.0
        if time.perf_counter() + seconds * growth > deadline:
            break
    assert result is not None
    result.nodes = total
    return result


def prove(core: AlphaBeta, s: np.ndarray, q: int, ms: float) -> tuple[Outcome | None, int]:
    """The game's exact result from `s` and a move that keeps it, when iterative deepening
    within `ms` reaches every end of the game (or a forced win or loss) below it, else None;
    and the deepest depth it completed. Far from the end a depth costs several times the last
    and it gives up early; near the end the lines run out and a depth costs little more than
    the one before, so it assumes no growth beyond what it measures (`deepen`'s default of at
    least 2 would stop short of the proof)."""
    core.new_move()
    out = deepen(core, s, q, 0, ms, min_growth=1.0)
    return (out if out.exact and out.move >= 0 else None), out.depth


class Prover:
    """`prove` for a player that asks at every move of a game, spending its time only near the
    end. A proof needs a search as deep as the game has plies left; the longest of a few
    random playouts from the position estimates that (Othello: its empty squares), and an
    attempt is made only when the estimate lies within `slack` plies of the depth the last
    attempt that failed completed (until one fails, every move tries: a proof found early, a
    forced win, says nothing of how deep the time allows). A sampling search (PUCT, MCTS)
    misplays endgames that a complete search of a few thousand nodes settles.

    A game with its own exact solver (`Game.exact_solver`, Connect 4's) is asked instead, at
    every move: it stops at `ms` itself, and where it finishes it gives an optimal move (the
    quickest win, the slowest loss), which the complete alpha-beta gives only for won or lost
    positions it proves. `own_solver=False` keeps the alpha-beta for such a game too."""

    PLAYOUTS = 8

    def __init__(self, game: Game, ms: float, slack: int = 4, seed: int = 0,
                 own_solver: bool = True):  # fmt: skip
        if game.has_chance or game.simultaneous:
            raise ValueError("a complete search needs a turn-based game without chance nodes")
        self.game, self.ms, self.slack = game, float(ms), int(slack)
        self.rng = new_rng(seed)
        self.reached = -1  # depth the last failed attempt completed (-1: none failed yet)
        self.solver = game.exact_solver() if own_solver and game.exact_solver else None
        self.core = None
        if self.solver is None:
            self.core = AlphaBeta(game, "heuristic", table_bits=20, seed=seed)
            start = game.new_initial_state(seed=0)
            self.core.search(start.array, start.current_player(), 1)  # compile now, not in play

    def horizon(self, s: np.ndarray) -> int:
        """The longest of `PLAYOUTS` random games from `s`."""
        return max(play_random_games(self.game, s, 1, self.rng)[0] for _ in range(self.PLAYOUTS))

    def attempt(self, s: np.ndarray, q: int) -> Outcome | None:
        if self.solver is not None:
            found = self.solver.best(s, self.ms)
            if found is None:
                return None
            move, result, plies = found
            value = math.copysign(WIN_SCALE - plies, result) if result else 0.0
            return Outcome(value, int(move), int(plies), 0, 0, False)
        if self.reached >= 0 and self.horizon(s) > self.reached + self.slack:
            return None
        proven, reached = prove(self.core, s, q, self.ms)
        if proven is None:
            self.reached = reached
        return proven


def unit_value(score: float, plies_before: int) -> tuple[float, int]:
    """A core score as (value in [-1, 1], signed plies to a proven end or 0): results are
    +-WIN_SCALE minus their distance, counted from `plies_before` plies below the position."""
    if abs(score) <= RESULT_BOUND:
        return score, 0
    plies = round(WIN_SCALE - abs(score)) + plies_before
    return (1.0, plies) if score > 0 else (-1.0, -plies)
