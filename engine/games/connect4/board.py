"""Connect 4's bit layout, shared by the rules (the package) and the exact solver.

Column c owns bits 7c … 7c+5 (bottom to top) and a sentinel bit 7c+6, so a move is
`mask + bottom(c)` and four in a row is four shifted ANDs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WIDTH, HEIGHT = 7, 6
STRIDE = HEIGHT + 1
CELLS = WIDTH * HEIGHT


@njit(cache=True, inline="always")
def bottom(c):
    return np.int64(1) << (c * STRIDE)


@njit(cache=True, inline="always")
def top(c):
    return np.int64(1) << (HEIGHT - 1 + c * STRIDE)


@njit(cache=True, inline="always")
def is_four(p):
    """True when bitboard p holds four aligned stones (vertical, horizontal, two diagonals)."""
    m = p & (p >> 1)
    if m & (m >> 2):
        return True
    m = p & (p >> STRIDE)
    if m & (m >> (2 * STRIDE)):
        return True
    m = p & (p >> (STRIDE - 1))
    if m & (m >> (2 * (STRIDE - 1))):
        return True
    m = p & (p >> (STRIDE + 1))
    return (m & (m >> (2 * (STRIDE + 1)))) != 0
