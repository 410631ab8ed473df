"""Exact Connect 4 solver: null-window negamax over the game's bitboards, all in numba.

Score convention (DESIGN.md, the same as Pascal Pons' benchmarks): 0 for a draw; a win for the
side to move scores 22 - k where k counts the winner's stones once its winning stone is down; a
loss is minus the opponent's score. With n stones played, a win on the next move scores
(43 - n) // 2.

How it stays fast: the search only ever visits positions where the side to move cannot win at
once (immediate wins are scored by the caller), so each node first prunes to non-losing moves
(block a single threat, lose to two, never play under an opponent's winning cell). The score is
found by a binary search of null-window searches that starts near 0, where most positions sit.
A transposition table keyed on `stones + mask` (unique per position thanks to the sentinel row)
stores one upper or lower bound per slot, packed with the full key into one int64 so that a
probe costs one cache miss. The table persists across solves of one `Connect4Solver`: every
stored bound is a true bound of the game value, whatever search window it came from.

Python API works with 0-based columns (the engine's actions); `solve_lines` speaks the common
notation of the CLI (one digit 1-7 per move).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TextIO

import numpy as np
from numba import njit

from engine.bits import popcount
from engine.games.connect4.board import CELLS, HEIGHT, STRIDE, WIDTH, is_four
from engine.protocol import GameError

TABLE_SIZE = 8388617  # a prime just above 2**23: slot = key % the table's size
#: the table of a solver asked within a few milliseconds (ExactSolver): a prime just above 2**20,
#: 8 MB, which the caches hold better (CPU time of 120 optimal moves at 12-15 stones: 2.95 s
#: against 3.60 s with the 67 MB table)
SMALL_TABLE = 1048583
FULL = -128  # analyze entry of a full column (None in Python)
ORDER = np.array([3, 2, 4, 1, 5, 0, 6], dtype=np.int64)  # center first
BOTTOM_MASK = sum(1 << (STRIDE * c) for c in range(WIDTH))
BOARD_MASK = BOTTOM_MASK * ((1 << HEIGHT) - 1)
LOWER_CODE, UPPER_CODE = 96, 32  # entry = key << 8 | (bound + code); 0 means empty
SCRATCH_STRIDE = 16  # work[0] counts nodes; then per depth 8 move slots and 8 score slots
NO_LIMIT = np.int64(2**62)  # a node limit no search reaches


@njit(cache=True, inline="always")
def _column_mask(c):
    return np.int64((1 << HEIGHT) - 1) << (c * STRIDE)


@njit(cache=True, inline="always")
def _line_cells(p, d):
    """Empty-or-not cells that complete a line of four with three of p along direction d."""
    a = (p << d) & (p << (2 * d))
    r = a & (p << (3 * d))
    r |= a & (p >> d)
    b = (p >> d) & (p >> (2 * d))
    r |= b & (p >> (3 * d))
    r |= b & (p << d)
    return r


@njit(cache=True, inline="always")
def winning_cells(p, mask):
    """Free cells where stones p would make four (playable now or later)."""
    r = (p << 1) & (p << 2) & (p << 3)
    r |= _line_cells(p, np.int64(STRIDE))
    r |= _line_cells(p, np.int64(STRIDE - 1))
    r |= _line_cells(p, np.int64(STRIDE + 1))
    return r & (np.int64(BOARD_MASK) ^ mask)


@njit(cache=True, inline="always")
def _possible(mask):
    return (mask + np.int64(BOTTOM_MASK)) & np.int64(BOARD_MASK)


@njit(cache=True)
def negamax(cur, mask, moves, alpha, beta, table, work, limit):
    """Score within [alpha, beta] (fail-hard) of a position whose mover cannot win at once.
    Once `work[0]` (the nodes counted) passes `limit` every frame returns at once, storing
    nothing: the caller sees the abort in `work[0] > limit`, and the table holds true bounds."""
    work[0] += 1
    if work[0] > limit:
        return 0
    possible = _possible(mask)
    opp_win = winning_cells(cur ^ mask, mask)
    forced = possible & opp_win
    if forced != 0:
        if (forced & (forced - 1)) != 0:  # two open threats: lost on the opponent's next move
            return -((CELLS - moves) // 2)
        possible = forced
    nxt = possible & ~(opp_win >> 1)  # never play directly under an opponent's winning cell
    if nxt == 0:
        return -((CELLS - moves) // 2)
    if moves >= CELLS - 2:
        return 0
    lo = -((CELLS - 2 - moves) // 2)  # the opponent cannot win before its second move from here
    if alpha < lo:
        alpha = lo
        if alpha >= beta:
            return alpha
    hi = (CELLS - 1 - moves) // 2  # nor can we win before our second move
    key = cur + mask
    idx = key % table.shape[0]
    entry = table[idx]
    if (entry >> 8) == key and entry != 0:
        code = entry & 255
        if code > 64:
            bound = code - LOWER_CODE
            if alpha < bound:
                alpha = bound
                if alpha >= beta:
                    return alpha
        elif hi > code - UPPER_CODE:
            hi = code - UPPER_CODE
    if beta > hi:
        beta = hi
        if alpha >= beta:
            return beta
    # order: more threats created first, center first among equals (stable insertion sort)
    base = 1 + moves * SCRATCH_STRIDE
    n = 0
    for i in range(WIDTH):
        mv = nxt & _column_mask(ORDER[i])
        if mv != 0:
            score = popcount(winning_cells(cur | mv, mask | mv))
            j = n
            while j > 0 and work[base + 8 + j - 1] < score:
                work[base + j] = work[base + j - 1]
                work[base + 8 + j] = work[base + 8 + j - 1]
                j -= 1
            work[base + j] = mv
            work[base + 8 + j] = score
            n += 1
    for i in range(n):
        mv = work[base + i]
        score = -negamax(cur ^ mask, mask | mv, moves + 1, -beta, -alpha, table, work, limit)
        if work[0] > limit:
            return 0
        if score >= beta:
            table[idx] = (key << 8) | (score + LOWER_CODE)
            return score
        if score > alpha:
            alpha = score
    table[idx] = (key << 8) | (alpha + UPPER_CODE)
    return alpha


@njit(cache=True)
def solve_position(cur, mask, moves, table, work, limit):
    """Exact score by binary search on null windows, probing the half nearer 0 first (0 and
    `work[0] > limit` when the node limit cut it short)."""
    if moves >= CELLS:
        return 0
    if (winning_cells(cur, mask) & _possible(mask)) != 0:
        return (CELLS + 1 - moves) // 2
    lo = -((CELLS - moves) // 2)
    hi = (CELLS + 1 - moves) // 2
    while lo < hi:
        med = lo + (hi - lo) // 2
        if med <= 0 and -((-lo) // 2) < med:
            med = -((-lo) // 2)
        elif med >= 0 and hi // 2 > med:
            med = hi // 2
        r = negamax(cur, mask, moves, med, med + 1, table, work, limit)
        if work[0] > limit:
            return 0
        if r <= med:
            hi = r
        else:
            lo = r
    return lo


@njit(cache=True)
def analyze_position(cur, mask, moves, table, work, out):
    """out[c]: exact score of playing column c for the side to move (FULL if it cannot)."""
    for c in range(WIDTH):
        if (mask & (np.int64(1) << (c * STRIDE + HEIGHT - 1))) != 0:
            out[c] = FULL
            continue
        mv = (mask + (np.int64(1) << (c * STRIDE))) & _column_mask(c)
        if (winning_cells(cur, mask) & mv) != 0:
            out[c] = (CELLS + 1 - moves) // 2
        else:
            out[c] = -solve_position(cur ^ mask, mask | mv, moves + 1, table, work, NO_LIMIT)


@njit(cache=True)
def best_move(cur, mask, moves, table, work, limit):
    """(column, exact score) of an optimal move for the side to move, the most central among
    equals; column -1 when the node limit cut the search short. The position's score first,
    then each column in centre-first order until one is proven to reach it with one null
    window (the table makes the second pass cheap)."""
    possible = _possible(mask)
    win = winning_cells(cur, mask) & possible
    for i in range(WIDTH):  # an immediate win is the best score there is
        if (win & _column_mask(ORDER[i])) != 0:
            return ORDER[i], (CELLS + 1 - moves) // 2
    best = solve_position(cur, mask, moves, table, work, limit)
    if work[0] > limit:
        return -1, 0
    for i in range(WIDTH):
        mv = possible & _column_mask(ORDER[i])
        if mv == 0:
            continue
        child_cur, child_mask = cur ^ mask, mask | mv
        if moves + 1 >= CELLS:
            score = 0
        elif (winning_cells(child_cur, child_mask) & _possible(child_mask)) != 0:
            score = -((CELLS - moves) // 2)  # the opponent wins at once
        else:  # does this column reach `best`? a null window at -best says so
            r = negamax(child_cur, child_mask, moves + 1, -best, -best + 1, table, work, limit)
            if work[0] > limit:
                return -1, 0
            score = best if r <= -best else best - 1
        if score >= best:
            return ORDER[i], best
    return -1, 0  # not reached: some column always reaches the position's score


def position(moves: Iterable[int]) -> tuple[int, int, int]:
    """(stones of the side to move, mask, moves played) of a history of 0-based columns.

    Raises GameError for a column out of range, a full column, a history that goes on after a
    win, or a game that is already over (a win or a full board).
    """
    cur = mask = n = 0
    won = False
    for c in moves:
        if won:
            raise GameError(f"move {n + 1} comes after the game was won")
        if not 0 <= c < WIDTH:
            raise GameError(f"move {n + 1}: column {c + 1} is outside 1-{WIDTH}")
        if mask & (1 << (c * STRIDE + HEIGHT - 1)):
            raise GameError(f"move {n + 1}: column {c + 1} is full")
        cur ^= mask
        mask |= mask + (1 << (c * STRIDE))
        n += 1
        won = bool(is_four(np.int64(cur ^ mask)))
    if won:
        raise GameError(f"the game is already over: move {n} wins")
    if n == CELLS:
        raise GameError("the game is already over: the board is full")
    return cur, mask, n


class Connect4Solver:
    """Holds the transposition table (about 67 MB by default) shared by all solves of a
    session."""

    def __init__(self, table_size: int = TABLE_SIZE) -> None:
        self.table = np.zeros(table_size, dtype=np.int64)
        self.work = np.zeros(1 + (CELLS + 1) * SCRATCH_STRIDE, dtype=np.int64)

    @property
    def nodes(self) -> int:
        """Search nodes visited since construction (or `reset`)."""
        return int(self.work[0])

    def reset(self) -> None:
        self.table[:] = 0
        self.work[0] = 0

    def solve(self, moves: Iterable[int]) -> int:
        """Exact score for the side to move after `moves` (0-based columns)."""
        cur, mask, n = position(moves)
        args = (self.table, self.work, NO_LIMIT)
        return int(solve_position(np.int64(cur), np.int64(mask), np.int64(n), *args))

    def analyze(self, moves: Iterable[int]) -> list[int | None]:
        """Exact score of each of the 7 columns for the side to move; None for a full column."""
        cur, mask, n = position(moves)
        out = np.zeros(WIDTH, dtype=np.int64)
        args = (self.table, self.work, out)
        analyze_position(np.int64(cur), np.int64(mask), np.int64(n), *args)
        return [None if v == FULL else int(v) for v in out]

    def best_move(self, moves: Iterable[int]) -> int:
        """A best column (0-based), the most central among equally good ones."""
        scores = self.analyze(list(moves))
        playable = [c for c in ORDER.tolist() if scores[c] is not None]
        return max(playable, key=lambda c: scores[c])  # max keeps the first (central) of ties


class ExactSolver:
    """Connect 4's `Game.exact_solver` (engine.protocol): an optimal move of a state array
    within a time budget, for a search agent's `exact=` (agents.search.core.Prover). numba
    cannot read a clock, so the search runs in slices of nodes and the clock is read between
    them. A slice cut short leaves true bounds in the table, so the next one goes on from them;
    it still walks again from the root to where the last stopped, so each slice may double the
    last (short slices would spend themselves on that walk), up to what the time left allows
    at the speed the slices so far ran. The table lives as long as the solver."""

    CHUNK = 2048  # nodes of the first slice (about half a millisecond)

    def __init__(self) -> None:
        self.solver = Connect4Solver(SMALL_TABLE)
        table, work, zero = self.solver.table, self.solver.work, np.int64(0)
        best_move(zero, zero, zero, table, work, work[0] + 1)  # compiled now, not in play

    def best(self, s: np.ndarray, ms: float) -> tuple[int, int, int] | None:
        """(column, result for the side to move: 1 won / 0 drawn / -1 lost, plies to the end
        with best play, 0 for a draw) of an ongoing position `s` (the rules' state array), or
        None when `ms` milliseconds were not enough."""
        cur, mask, moves = np.int64(s[0]), np.int64(s[1]), np.int64(s[2])
        table, work = self.solver.table, self.solver.work
        started = time.perf_counter()
        deadline, chunk, before = started + ms / 1000.0, self.CHUNK, work[0]
        while True:
            column, score = best_move(cur, mask, moves, table, work, work[0] + chunk)
            if column >= 0:
                return int(column), *result_plies(int(score), int(moves))
            now = time.perf_counter()
            if now >= deadline:
                return None
            speed = (work[0] - before) / max(now - started, 1e-9)  # nodes a second so far
            chunk = int(max(self.CHUNK, min(2 * chunk, speed * (deadline - now))))


def result_plies(score: int, moves: int) -> tuple[int, int]:
    """(1 / 0 / -1, plies to the end) of a solver score for the side to move after `moves`
    stones: a win scoring 22 - k ends with the winner's k-th stone."""
    if score == 0:
        return 0, 0
    k = (CELLS + 2) // 2 - abs(score)  # the winner's stones once it has won
    if score > 0:
        return 1, 2 * (k - moves // 2) - 1
    return -1, 2 * (k - (moves - moves // 2))


def parse_line(text: str) -> list[int]:
    """0-based columns of a common-notation line; GameError with a readable reason."""
    text = text.strip()
    for i, ch in enumerate(text):
        if not ch.isdigit():
            raise GameError(f"character {i + 1} ({ch!r}) is not a column digit 1-{WIDTH}")
        if not 1 <= int(ch) <= WIDTH:
            raise GameError(f"move {i + 1}: column {ch} is outside 1-{WIDTH}")
    return [int(ch) - 1 for ch in text]


def solve_lines(lines: Iterable[str], analyze: bool, out: TextIO, err: TextIO) -> int:
    """Answers each line as soon as it is read: `moves score` or `moves s1 ... s7` (x: full).

    A bad line gets one `gridbots: error: line N: ...` on err and is skipped; returns 2 if any
    line was bad, else 0.
    """
    solver = Connect4Solver()
    status = 0
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        try:
            moves = parse_line(text)
            if analyze:
                scores = solver.analyze(moves)
                answer = " ".join("x" if v is None else str(v) for v in scores)
            else:
                answer = str(solver.solve(moves))
        except GameError as exc:
            err.write(f"gridbots: error: line {number}: {exc}\n")
            err.flush()
            status = 2
            continue
        out.write(f"{text} {answer}\n")
        out.flush()
    return status
