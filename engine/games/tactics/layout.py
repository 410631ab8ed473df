"""Tactics: constants, the flat state layout, unit fields, effective stats and board geometry.

Everything here is shared by the kernels (`effects`, `targets`, `rules`) and the Python side
(`scenarios`, `notation`). Cells are numbered `row * 12 + col`, row 0 at the top.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SIZE = 12
COLUMNS = "abcdefghijkl"  # cell names: column letter, then the row counted from 1 at the top
CELLS = SIZE * SIZE
IDS = 30  # action ids per cell
NUM_ACTIONS = CELLS * IDS  # 4,320 policy entries: action = cell * IDS + id
DRAW_BASE = NUM_ACTIONS  # chance outcome "draw card k" = DRAW_BASE + k (outside the policy)
MAX_UNITS = 12
MAX_PER_SIDE = MAX_UNITS // 2
WALL_HP = 3
DEFAULT_MAX_TURNS = 64
MAX_ACTIONS_PER_TURN = 32  # hand cards (<= 19) + Action Drawing's refill + End Turn + draws

# ---- action ids (Appendix 3; Combine Actions is 14 as in the study's code, End Turn 13) --------
MOVE, SWORD, BOW, SPEAR, SPARK, GROUND, DRAWING, WEAK_SPARK, DUST, SLOW_HEAL = range(10)
CHAIN, END_TURN, COMBINE, SWAP = 11, 13, 14, 15
DUST_SPARK, SPARK_DIVE, SHATTER, SHIELD, BOOST = 19, 20, 21, 22, 23
ARMOR, FAST_HEAL = 26, 27

#: (ingredient, ingredient, result), ingredients in increasing order
RECIPES = (
    (DRAWING, SLOW_HEAL, CHAIN),
    (MOVE, DRAWING, SWAP),
    (WEAK_SPARK, DUST, DUST_SPARK),
    (MOVE, SPARK, SPARK_DIVE),
    (SPARK, GROUND, SHATTER),
    (GROUND, SLOW_HEAL, SHIELD),
    (SPARK, DRAWING, BOOST),
    (MOVE, GROUND, ARMOR),
    (MOVE, SLOW_HEAL, FAST_HEAL),
)
RECIPE_TABLE = np.array(RECIPES, dtype=np.int64)
NUM_RECIPES = len(RECIPES)

# ---- ranges (squared Euclidean distance between cell centres) ---------------------------------
MOVE_RADIUS2 = 25
SPARK_RADIUS2 = 25
SHATTER_RADIUS2 = 25
WEAK_SPARK_RADIUS2 = 16
DUST_RADIUS2 = 16
SPLASH_RADIUS2 = 9

# ---- damage and durations (Appendix 3) ---------------------------------------------------------
SWORD_DAMAGE = SPEAR_DAMAGE = 4
BOW_DAMAGE = 1
SPARK_DAMAGE = WEAK_SPARK_DAMAGE = 3
DRAWING_COST = 3
DUST_SPARK_DAMAGE = 10
SHATTER_DAMAGE, SPLASH_DAMAGE = 5, 7
BURN_TURNS, BURN_LOSS = 3, 2
DUST_TURNS, DUST_SLOW = 2, 2
HEAL_TURNS, HEAL_GAIN = 4, 2
CHAIN_TURNS = 3
SHIELD_TURNS = 3
BOOST_TURNS = 4
ARMOR_TURNS, ARMOR_DEFENCE = 3, 2
FAST_HEAL_GAIN = 5

# ---- state layout -----------------------------------------------------------------------------
# header
STATUS, TURN, CUR, PENDING, ORDER_POS, ORDER_LEN, NUM_UNITS, MAX_TURNS, ROUND, WALLS = range(10)
ORDER = 10  # MAX_UNITS unit indices in this round's acting order
BOARD = ORDER + MAX_UNITS  # CELLS entries: 0 empty, i + 1 unit i, -hp a wall
UNITS = BOARD + CELLS
# unit fields
(
    FACTION,
    ALIVE,
    CELL,
    HP,
    MAX_HP,
    ATK,
    DEF,
    SPD,
    HAND,  # bit k: card k in hand
    DECK,  # bit k: card k in the deck (Move always)
    CLASS,
    BURN,  # status durations, in the bearer's turns still to tick
    DUSTED,
    HEALING,
    CHAINED,  # this unit shares the damage dealt to unit CHAIN_TO
    CHAIN_TO,
    SHIELDED,
    BOOSTED,
    BORROWED,  # health Boost took, given back when it ends
    ARMORED,
) = range(20)
UNIT_FIELDS = 20
STATE_SIZE = UNITS + MAX_UNITS * UNIT_FIELDS

ONGOING, DRAW = -1, 2
NO_DRAW, TURN_DRAW, DRAWING_DRAW = 0, 1, 2

#: config vector: [max_turns, units, walls, wall cells..., per unit CONFIG_UNIT values]
CONFIG_UNIT = 8  # faction, cell, class, max hp, attack, defence, speed, deck bits

# ---- observation planes (per cell, planes-first) ----------------------------------------------
(
    P_WALL,
    P_OWN,
    P_ENEMY,
    P_CONTROLLED,
    P_HP,
    P_MAX_HP,
    P_SPEED,
    P_ATTACK,
    P_DEFENCE,
    P_BURN,
    P_DUSTED,
    P_HEALING,
    P_CHAINED,
    P_CHAIN_ANCHOR,
    P_SHIELD,
    P_BOOST,
    P_BORROWED,
    P_ARMOR,
) = range(18)
P_HAND = 18
P_DECK = P_HAND + IDS
PLANES = P_DECK + IDS  # 78, the study's per-cell feature count

DIRECTIONS = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)], dtype=np.int64)  # N E S W


def _disc(radius2: int) -> np.ndarray:
    offsets = [
        (dr, dc) for dr in range(-5, 6) for dc in range(-5, 6) if 0 < dr * dr + dc * dc <= radius2
    ]
    return np.array(offsets, dtype=np.int64)


MOVE_OFFSETS = _disc(MOVE_RADIUS2)  # 80 cells


@njit(cache=True, inline="always")
def unit_base(i):
    return UNITS + i * UNIT_FIELDS


@njit(cache=True, inline="always")
def bit(card):
    return np.int64(1) << card


@njit(cache=True, inline="always")
def occupant(s, cell):
    """The unit index on `cell`, or -1 (empty or a wall)."""
    v = s[BOARD + cell]
    return v - 1 if v > 0 else -1


@njit(cache=True, inline="always")
def dist2(a, b):
    dr = a // SIZE - b // SIZE
    dc = a % SIZE - b % SIZE
    return dr * dr + dc * dc


@njit(cache=True, inline="always")
def isqrt(n):
    r = np.int64(np.sqrt(np.float64(n)))
    while r * r > n:
        r -= 1
    while (r + 1) * (r + 1) <= n:
        r += 1
    return r


@njit(cache=True, inline="always")
def step(cell, d):
    """The neighbour of `cell` in direction d (0 N, 1 E, 2 S, 3 W), or -1 off the board."""
    r = cell // SIZE + DIRECTIONS[d, 0]
    c = cell % SIZE + DIRECTIONS[d, 1]
    if r < 0 or r >= SIZE or c < 0 or c >= SIZE:
        return -1
    return r * SIZE + c


@njit(cache=True, inline="always")
def offset_cell(cell, dr, dc):
    r = cell // SIZE + dr
    c = cell % SIZE + dc
    if r < 0 or r >= SIZE or c < 0 or c >= SIZE:
        return -1
    return r * SIZE + c


@njit(cache=True)
def clear_line(s, a, b):
    """Line of sight from cell a to cell b: no unit or wall on a cell whose interior the segment
    between the two centres crosses (a segment through a corner touches neither cell there).
    Symmetric in a and b and under the board's flips."""
    r, c = a // SIZE, a % SIZE
    r1, c1 = b // SIZE, b % SIZE
    nr, nc = abs(r1 - r), abs(c1 - c)
    sr = 1 if r1 > r else -1
    sc = 1 if c1 > c else -1
    ir = 0
    ic = 0
    while ir < nr or ic < nc:
        decision = (1 + 2 * ic) * nr - (1 + 2 * ir) * nc
        if decision == 0:
            r += sr
            c += sc
            ir += 1
            ic += 1
        elif decision < 0:
            c += sc
            ic += 1
        else:
            r += sr
            ir += 1
        if (r != r1 or c != c1) and s[BOARD + r * SIZE + c] != 0:
            return False
    return True


@njit(cache=True, inline="always")
def attack_of(s, i):
    b = unit_base(i)
    return s[b + ATK] + (4 if s[b + BOOSTED] > 0 else 0)


@njit(cache=True, inline="always")
def defence_of(s, i):
    b = unit_base(i)
    d = s[b + DEF]
    if s[b + BURN] > 0:
        d -= 1
    if s[b + ARMORED] > 0:
        d += ARMOR_DEFENCE
    if s[b + BOOSTED] > 0:
        d -= 1
    return d


@njit(cache=True, inline="always")
def speed_of(s, i):
    b = unit_base(i)
    v = s[b + SPD]
    if s[b + DUSTED] > 0:
        v -= DUST_SLOW
    if s[b + SHIELDED] > 0:
        v -= 1
    if s[b + BOOSTED] > 0:
        v += 1
    return v


@njit(cache=True, inline="always")
def is_alive(s, i):
    return s[unit_base(i) + ALIVE] != 0


@njit(cache=True, inline="always")
def faction_of(s, i):
    return s[unit_base(i) + FACTION]
