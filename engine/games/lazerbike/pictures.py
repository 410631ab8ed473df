"""Lazerbike's pictures of a state for data, models and path-finding: board codes (with each
bike's neck, so one picture shows the heading), the board's eight symmetries, and the walking
grid of engine.pathfind. Plain functions over the rules' state layout; the game class
(engine.games.lazerbike) answers its hooks with them.
"""

from __future__ import annotations

import numpy as np

from engine.games.lazerbike.rules import (
    ALIVE,
    CELLS,
    FORWARD,
    HEAD,
    LAP,
    LEFT,
    MAX_BIKES,
    NUM_PLAYERS,
    PLANES,
    POS,
    RIGHT,
    SIZE,
)

# ---- data hooks (features/encode.py, features/symmetry.py) -------------------------------------
_STEPS = ((-1, 0), (0, 1), (1, 0), (0, -1))  # (row, col) step of headings N, E, S, W


def board_codes(states: np.ndarray) -> np.ndarray:
    """Board codes of a batch of states as [n, 15, 15] int8 (row 0 = north): 0 free, -1 a
    deadly tile (any trail, dead bikes' included), p + 1 the head of living bike p, -(p + 2)
    the trail tile that head came from (its neck; none before the first lap). Turns are
    relative to the heading, and head plus neck show it where a lone head would not."""
    states = np.atleast_2d(np.asarray(states, dtype=np.int64))
    codes = np.where(states[:, :CELLS] != 0, -1, 0).astype(np.int8)
    rows = np.arange(len(states))
    back = np.array([-(dr * SIZE + dc) for dr, dc in _STEPS])  # a step against each heading
    for p in range(MAX_BIKES):
        living = (p < states[:, NUM_PLAYERS]) & (states[:, ALIVE + p] != 0)
        heads = states[living, POS + p]
        moved = states[living, LAP] > 0
        necks = heads[moved] + back[states[living, HEAD + p][moved]]
        codes[rows[living][moved], necks] = -(p + 2)
        codes[rows[living], heads] = p + 1
    return codes.reshape(len(states), SIZE, SIZE)


def symmetries() -> list[tuple[np.ndarray, np.ndarray]]:
    """The 8 symmetries of the square board (identity first), as (observation, action) gather
    permutations. The heading planes move with the board; actions are turns relative to the
    heading, so rotations keep them and reflections swap left and right."""
    grid = np.arange(CELLS).reshape(SIZE, SIZE)
    found = []
    for flipped in (grid, grid.T):
        for turns in range(4):
            cells = np.rot90(flipped, turns).ravel()
            where = np.argsort(cells)  # old tile -> its tile after the transform
            mid = 7 * SIZE + 7
            heading_to = []
            for dr, dc in _STEPS:
                r, c = divmod(int(where[mid + dr * SIZE + dc]), SIZE)
                heading_to.append(_STEPS.index((r - 7, c - 7)))
            observation = np.concatenate([cells + k * CELLS for k in range(PLANES)])
            for h, h2 in enumerate(heading_to):
                start = (6 + h2) * CELLS
                observation[start : start + CELLS] = cells + (6 + h) * CELLS
            rotation = heading_to[1] == (heading_to[0] + 1) % 4
            actions = np.array([LEFT, FORWARD, RIGHT] if rotation else [RIGHT, FORWARD, LEFT])
            found.append((observation, actions))
    return found


# ---- path-finding grid (agents: space) ---------------------------------------------------------
def walk_grid(s: np.ndarray, player: int) -> tuple[np.ndarray, int, int, int]:
    """(per-tile entry costs, width, height, source tile) for engine.pathfind: free tiles cost
    1, trails and heads are blocked (-1), the source is `player`'s head."""
    cost = np.where(s[:CELLS] == 0, 1.0, -1.0)
    return cost, SIZE, SIZE, int(s[POS + player])
