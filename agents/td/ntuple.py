"""An n-tuple network (Lucas 2008; Szubert, Jaśkowski & Krawiec): the strongest one-ply learned
evaluators of Othello, here as a second architecture for the same TD loops (agents.td.net).

Each cell of the board is empty (0), seat 0's (1) or seat 1's (2), read from the first two
observation planes seen by seat 0. A tuple is a list of cells; its pattern of states indexes a
table of weights, and every image of the tuple under the game's symmetries reads the same
table. The estimate for seat 1 is v = sigmoid(sum of the looked-up weights), on the study's
[0, 1] scale, or the sum itself (`linear`: no saturation, the plain least-mean-squares TD
of linear function approximation); either plays by the study's rules (seat 0 maximises
1 - v). A TD step moves each looked-up weight by -rate * delta * dv/dsum, the gradient of
(v - target)^2 / 2.

The tuples are generic geometry over the board's rows and columns, kept one per orbit of the
game's symmetries: by default (`lines-corners`) straight lines (every row, column and diagonal
of at least 4 cells) and corner blocks (3x3, and 2x5 both ways), on Othello 11 tuples, 84
lookups, 115k weights; or systematic shapes (Jaśkowski 2014): every straight N-cell line
(`straight-N`) or every RxC block (`rect-RxC`), joined with `+`. With `phases` > 1 each game
stage (occupied cells * phases // (cells + 1)) has its own copy of the tables, as Othello
programs since Logistello weigh patterns by stage. A child's indices are the parent's plus the
contributions of the cells that changed, so a move list costs a few table reads per successor.

With temporal coherence learning (`tcl`, Beal and Smith 1999, as Jaśkowski's n-tuple TD uses it)
each weight keeps the sum E of the steps asked of it and the sum A of their sizes, and takes
only |E| / A of its next step (1 before its first): a weight whose steps keep one sign learns at
the full rate, one pushed back and forth by noise slows to a stop, without a global schedule.
"""

from __future__ import annotations

import math
import re

import numpy as np
from numba import njit

STATES = 3  # empty, seat 0, seat 1


@njit(cache=True, inline="always")
def _cells(x, size, cells):
    for k in range(size):
        cells[k] = np.int64(x[k] + 2.0 * x[size + k])


@njit(cache=True, inline="always")
def _value(lut, index, linear):
    total = 0.0
    for i in range(index.shape[0]):
        total += lut[index[i]]
    return total if linear else 1.0 / (1.0 + math.exp(-total))


# ---- the hooks of agents.td.net (net = NTuple.arrays()) --------------------------------------
LUT, LOOKUP_CELLS, OFFSET, CELL_PTR, CELL_LOOKUP, CELL_POWER, CELLS, INDEX, CHILD, STATE = range(10)
LINEAR, PHASES, STRIDE, TCL, TCL_SUM, TCL_SIZE = 10, 11, 12, 13, 14, 15


@njit(cache=True, inline="always")
def phase_of(occupied, phases, size):
    """The game stage a position's tables belong to: occupied cells * phases // (cells + 1)."""
    return occupied * phases // (size + 1)


@njit(cache=True, inline="always")
def nt_prepare(net, x):
    """The parent's cell states and the table index of every lookup."""
    lookup_cells, offset, index, cells = net[LOOKUP_CELLS], net[OFFSET], net[INDEX], net[STATE]
    _cells(x, net[CELLS], cells)
    occupied = 0
    for k in range(net[CELLS]):
        occupied += cells[k] != 0
    shift = phase_of(occupied, net[PHASES], net[CELLS]) * net[STRIDE]
    for i in range(lookup_cells.shape[0]):
        at = offset[i] + shift
        power = 1
        for j in range(lookup_cells.shape[1]):
            k = lookup_cells[i, j]
            if k < 0:
                break
            at += cells[k] * power
            power *= STATES
        index[i] = at


@njit(cache=True, inline="always")
def nt_child_value(net, x, xc):
    """The parent's indices plus the contributions of the cells the move changed."""
    index, child, cells, size = net[INDEX], net[CHILD], net[STATE], net[CELLS]
    cell_ptr, cell_lookup, cell_power = net[CELL_PTR], net[CELL_LOOKUP], net[CELL_POWER]
    for i in range(index.shape[0]):
        child[i] = index[i]
    before, after = 0, 0
    for k in range(size):
        state = np.int64(xc[k] + 2.0 * xc[size + k])
        before += cells[k] != 0
        after += state != 0
        if state != cells[k]:
            change = state - cells[k]
            for e in range(cell_ptr[k], cell_ptr[k + 1]):
                child[cell_lookup[e]] += change * cell_power[e]
    phases = net[PHASES]
    if phases > 1:
        shift = (phase_of(after, phases, size) - phase_of(before, phases, size)) * net[STRIDE]
        if shift != 0:
            for i in range(index.shape[0]):
                child[i] += shift
    return _value(net[LUT], child, net[LINEAR])


@njit(cache=True, inline="always")
def nt_current_value(net):
    return _value(net[LUT], net[INDEX], net[LINEAR])


@njit(cache=True, inline="always")
def nt_learn(net, x, v, rate, delta):
    lut, index = net[LUT], net[INDEX]
    step = rate * delta * (1.0 if net[LINEAR] else v * (1.0 - v))
    if not net[TCL]:
        for i in range(index.shape[0]):
            lut[index[i]] -= step
        return
    asked, size = net[TCL_SUM], net[TCL_SIZE]  # temporal coherence: |E| / A of the step
    for i in range(index.shape[0]):
        w = index[i]
        lut[w] -= step * (abs(asked[w]) / size[w] if size[w] > 0.0 else 1.0)
        asked[w] += step
        size[w] += abs(step)


# ---- geometry ------------------------------------------------------------------------------------
def candidate_tuples(height: int, width: int) -> list[tuple[int, ...]]:
    """Lines (rows, columns, diagonals of >= 4 cells) and corner blocks, cells row-major."""
    found: list[tuple[int, ...]] = []
    found += [tuple(r * width + c for c in range(width)) for r in range(height)]
    found += [tuple(r * width + c for r in range(height)) for c in range(width)]
    for dc in (1, -1):
        for start in range(-height, width + height):
            line = []
            for r in range(height):
                c = start + dc * r
                if 0 <= c < width:
                    line.append(r * width + c)
            if len(line) >= 4:
                found.append(tuple(line))
    for rows, cols in ((3, 3), (2, 5), (5, 2)):
        if rows > height or cols > width:
            continue
        for flip_r in (False, True):
            for flip_c in (False, True):
                block = []
                for r in range(rows):
                    for c in range(cols):
                        rr = height - 1 - r if flip_r else r
                        cc = width - 1 - c if flip_c else c
                        block.append(rr * width + cc)
                found.append(tuple(block))
    return found


#: the systematic shape sets (`tuples=`): every placement of every shape, each orbit of the
#: board's symmetries one table (Jaśkowski 2014: many short tuples placed systematically)
SHAPES_HELP = "lines-corners, straight-N, rect-RxC, or several joined by '+'"


def straight_tuples(height: int, width: int, n: int) -> list[tuple[int, ...]]:
    """Every straight line of n cells: along rows, columns and both diagonals."""
    found = []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        for r in range(height):
            for c in range(width):
                cells = [(r + dr * k, c + dc * k) for k in range(n)]
                if all(0 <= rr < height and 0 <= cc < width for rr, cc in cells):
                    found.append(tuple(rr * width + cc for rr, cc in cells))
    return found


def rectangle_tuples(height: int, width: int, rows: int, cols: int) -> list[tuple[int, ...]]:
    """Every rows x cols block (and cols x rows), cells row-major within the block."""
    found = []
    for h, w in dict.fromkeys(((rows, cols), (cols, rows))):
        for r in range(height - h + 1):
            for c in range(width - w + 1):
                found.append(tuple((r + i) * width + c + j for i in range(h) for j in range(w)))
    return found


def shape_tuples(height: int, width: int, shapes: str) -> list[tuple[int, ...]]:
    """The tuples a `tuples=` name places; ValueError naming the known shapes otherwise."""
    found: list[tuple[int, ...]] = []
    for part in shapes.split("+"):
        straight = re.fullmatch(r"straight-(\d)", part)
        rect = re.fullmatch(r"rect-(\d)x(\d)", part)
        if part == "lines-corners":
            found += candidate_tuples(height, width)
        elif straight and 2 <= int(straight[1]) <= max(height, width):
            found += straight_tuples(height, width, int(straight[1]))
        elif rect and 1 <= int(rect[1]) * int(rect[2]) <= 10:
            found += rectangle_tuples(height, width, int(rect[1]), int(rect[2]))
        else:
            raise ValueError(f"n-tuple shape {part!r}; known: {SHAPES_HELP} (at most 10 cells)")
    return found


def cell_symmetries(game) -> list[np.ndarray]:
    """Cell gather permutations of the game's symmetries (identity only when it has none)."""
    cells = int(np.prod(game.observation_shape[1:]))
    if game.symmetries is None:
        return [np.arange(cells)]
    return [np.asarray(obs[:cells]) for obs, _ in game.symmetries()]


def lookups(game, shapes: str = "lines-corners") -> tuple[list[tuple[int, ...]], list[int]]:
    """(every lookup's cells, the tuple each reads): one tuple per symmetry orbit of the
    placed shapes, each read through every symmetry (images equal as ordered lists merged)."""
    height, width = game.observation_shape[1:]
    symmetries = cell_symmetries(game)
    seen: set[frozenset[int]] = set()
    cells_of: list[tuple[int, ...]] = []
    table_of: list[int] = []
    tables = 0
    for tup in shape_tuples(height, width, shapes):
        if frozenset(tup) in seen:
            continue
        images = list(dict.fromkeys(tuple(int(p[k]) for k in tup) for p in symmetries))
        seen.update(frozenset(image) for image in images)
        cells_of += images
        table_of += [tables] * len(images)
        tables += 1
    return cells_of, table_of


class NTuple:
    """Tables of weights and the lookups that read them."""

    architecture = "ntuple"
    hooks = (nt_prepare, nt_child_value, nt_current_value, nt_learn)
    OUTPUTS = ("sigmoid", "linear")

    def __init__(
        self,
        lut: np.ndarray,
        lookup_cells: np.ndarray,
        offset: np.ndarray,
        size: int,
        activation: str = "sigmoid",
        phases: int = 1,
        tcl: bool = False,
    ):
        if activation not in self.OUTPUTS:
            raise ValueError(f"n-tuple output {activation!r}; known: {', '.join(self.OUTPUTS)}")
        if phases < 1 or len(lut) % phases:
            raise ValueError(f"n-tuple phases={phases}: a positive divisor of the tables' size")
        self.activation = activation
        self.phases = int(phases)
        self.stride = len(lut) // self.phases
        self.lut = np.ascontiguousarray(lut, dtype=np.float64)
        self.lookup_cells = np.ascontiguousarray(lookup_cells, dtype=np.int64)
        self.offset = np.ascontiguousarray(offset, dtype=np.int64)
        self.cells = int(size)
        self.planes = 2
        rows, powers = [[] for _ in range(size)], [[] for _ in range(size)]
        for i, tup in enumerate(self.lookup_cells):
            for j, k in enumerate(tup[tup >= 0]):
                rows[k].append(i)
                powers[k].append(STATES**j)
        self.cell_ptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
        self.cell_lookup = np.array([i for r in rows for i in r], dtype=np.int64)
        self.cell_power = np.array([p for r in powers for p in r], dtype=np.int64)
        self._index = np.zeros((2, len(self.offset)), dtype=np.int64)
        self._cells = np.zeros(size, dtype=np.int64)
        self.tcl = bool(tcl)  # per weight: the sum of its steps, the sum of their sizes
        self.coherence = np.zeros((2, len(self.lut) if self.tcl else 0), dtype=np.float64)

    @classmethod
    def initial(
        cls,
        game,
        std: float = 0.0,
        seed: int = 0,
        activation: str = "sigmoid",
        shapes: str = "lines-corners",
        phases: int = 1,
        tcl: bool = False,
    ) -> NTuple:
        cells_of, table_of = lookups(game, shapes)
        longest = max(len(c) for c in cells_of)
        lookup_cells = np.full((len(cells_of), longest), -1, dtype=np.int64)
        for i, tup in enumerate(cells_of):
            lookup_cells[i, : len(tup)] = tup
        sizes, starts = {}, []
        for tup, table in zip(cells_of, table_of, strict=True):
            sizes[table] = STATES ** len(tup)
        first = np.concatenate([[0], np.cumsum([sizes[t] for t in range(len(sizes))])])
        starts = [int(first[t]) for t in table_of]
        rng = np.random.default_rng(seed)
        total = int(first[-1]) * max(phases, 1)
        lut = rng.normal(0.0, std, size=total) if std else np.zeros(total)
        cells = int(np.prod(game.observation_shape[1:]))
        return cls(lut, lookup_cells, np.array(starts), cells, activation, phases, tcl)

    @property
    def size(self) -> int:
        return 2 * self.cells

    @property
    def hidden(self) -> int:
        return len(self.offset)

    def arrays(self) -> tuple:
        index, child = self._index
        linear = self.activation == "linear"
        return (
            self.lut,
            self.lookup_cells,
            self.offset,
            self.cell_ptr,
            self.cell_lookup,
            self.cell_power,
            self.cells,
            index,
            child,
            self._cells,
            linear,
            self.phases,
            self.stride,
            self.tcl,
            self.coherence[0],
            self.coherence[1],
        )

    def weights(self) -> dict[str, np.ndarray]:
        return {"lut": self.lut, "lookup_cells": self.lookup_cells, "offset": self.offset}

    def learning_state(self) -> dict[str, np.ndarray]:
        """What training keeps besides the weights (a checkpoint saves it; export does not)."""
        return {"tcl_coherence": self.coherence} if self.tcl else {}

    def copy(self) -> NTuple:
        lut, cells = self.lut.copy(), self.cells
        return NTuple(lut, self.lookup_cells, self.offset, cells, self.activation, self.phases)

    def value(self, x: np.ndarray) -> float:
        """The estimate for seat 1 of one encoded position (seat 0's first two planes)."""
        net = self.arrays()
        nt_prepare(net, np.asarray(x, dtype=np.float32))
        return float(nt_current_value(net))
