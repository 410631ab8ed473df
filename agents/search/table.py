"""The alpha-beta core's memory: the transposition table (keys, depths, bounds, moves, values)
and the move-ordering memory kept between searches (killers per ply, history per player), with
the conversions that let a proven result's distance hold wherever a position recurs."""

from __future__ import annotations

import numpy as np
from numba import njit

RESULT_BOUND = 2.0  # |value| above this is a finished game, not an evaluation
# table flags
EXACT, LOWER, UPPER = 0, 1, 2


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


@njit(cache=True)
def table(bits):
    """A transposition table of 2**bits entries: key, depth, flag, move, value."""
    n = 1 << bits
    return (
        np.zeros(n, np.int64),
        np.full(n, -1, np.int16),
        np.zeros(n, np.int8),
        np.zeros(n, np.int64),
        np.zeros(n, np.float64),
    )


@njit(cache=True)
def memory(max_depth, num_players, num_actions):
    """Move-ordering memory kept between searches: killers per ply, history per player."""
    return (
        np.full((max_depth + 1, 2), -1, np.int64),
        np.zeros((num_players, num_actions + 1), np.int64),
    )


@njit(cache=True, inline="always")
def store(tt, key, remaining, flag, move, value, ply):
    slot = key & (tt[0].shape[0] - 1)
    tt[0][slot], tt[1][slot], tt[2][slot] = key, remaining, flag
    tt[3][slot], tt[4][slot] = move, to_table(value, ply)


@njit(cache=True, inline="always")
def window_flag(value, alpha0, beta0):
    if value <= alpha0:
        return UPPER
    if value >= beta0:
        return LOWER
    return EXACT


@njit(cache=True, inline="always")
def remember_cutoff(killers, history, ply, mover, a, depth):
    """Move-ordering memory of a cut-off by `a`: the killer slots of its ply, the mover's
    history score (deeper cuts count more)."""
    if a != killers[ply, 0]:
        killers[ply, 1] = killers[ply, 0]
        killers[ply, 0] = a
    history[mover, a] += (depth - ply) * (depth - ply)
