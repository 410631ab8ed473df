"""Cooperative Sokoban: 1-4 players push boxes into holes so that all stand on exits together.

Rules. Each lap every player picks 0 up, 1 down, 2 left, 3 right or 4 stay (the neutral action);
all five are always legal and a blocked move does nothing. A player steps onto floor or an exit;
stepping onto a box pushes it one tile on if that tile is floor, an exit or a hole free of boxes
and players (a box never pushes a box). A box pushed into a hole fills it: both vanish, the tile
is floor. Walls, unfilled holes and the outside of the board stop players.

A lap is resolved symmetrically in the players (fair) and deterministically:
1. each move is judged on the position at the start of the lap: it fails when its target or its
   box's landing tile is blocked, a tile holding a player at the start counting as blocked even
   if that player leaves (no swaps, no following);
2. each surviving move claims its player's target and, for a push, the landing tile; moves whose
   claims overlap all fail (two players into one tile, two pushes of one box, a box and a player
   into one tile). A failed player stays on a tile nobody could claim: no cascades.

The team wins (+1 for all) once every player stands on an exit at the same time, and loses (-1
for all) after `limit` laps or when the deadlock test proves some player can never reach an exit.

Deadlock test, at the start and after each lap with a push (only pushes change what it reads).
It is sound: every fact it derives holds in all continuations, so a winnable position is never
declared lost.
- Frozen box: blocked on both axes by a wall, the edge, a frozen box or a dead hole. A push along
  an axis needs both neighbours on it usable (pusher one side, landing the other): it never moves.
- Dead hole: no box reaches it in a relaxation that ignores players and movable boxes and lets
  boxes and pushers cross holes. Real pushes are relaxation pushes, so it stays open for good: a
  wall. A box is live when it reaches some hole so. With fewer than two live boxes no other box
  can fill a hole first, so the one box meets every other hole open: those count as walls.
- Each player's area over all tiles but walls, frozen boxes and dead holes (movable boxes and live
  holes passable) must hold an exit not under a frozen box, and such exits must be >= players.

State array (int64): a header, then 7 planes of H row bitboards (bit c of word r = column c):
  s[0] W  s[1] H  s[2] players  s[3] laps played  s[4] lap limit
  s[5] status: 0 ongoing, 1 won, 2 lost on the limit, 3 lost by deadlock
  s[6:10] player tiles r*W+c (unused slots 0)   s[10:12] spare
  s[12 + k*H : 12 + (k+1)*H] plane k: walls, boxes, unfilled holes, exits, frozen boxes, dead
  holes, scratch (zero between kernel calls, so equal positions give equal arrays).

Levels are text files in engine/boards/sokoban/: `w` wall, ` ` floor, `p` player (numbered in
reading order), `b` box, `h` hole, `e` exit; `#` lines are headers such as `# name: corridors`,
`# limit: 60` (laps; default 4 per non-wall tile). Short lines are padded with walls; outside the
board is wall. At most 32x32, 1-4 players, at least as many exits as players; boxes and holes
need not match. Observation per player: (6, H, W) planes of walls, boxes, unfilled holes, exits,
own position, other players.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.bits import lowest_bit_index, popcount
from engine.protocol import SIMULTANEOUS, TERMINAL, KernelSet

W_, H_, NP_, STEP, LIMIT, STATUS, PLAYERS, HEADER = 0, 1, 2, 3, 4, 5, 6, 12
WALL, BOX, HOLE, EXIT, FROZEN, DEAD, SCR = 0, 1, 2, 3, 4, 5, 6
NUM_PLANES = 7
ONGOING, WON, LOST_LIMIT, LOST_DEADLOCK = 0, 1, 2, 3
UP, DOWN, LEFT, RIGHT, STAY = 0, 1, 2, 3, 4
MAX_SIZE, MAX_PLAYERS, OBS_PLANES = 32, 4, 6
ACTION_NAMES = ("up", "down", "left", "right", "stay")


# ---- bitboard helpers ----------------------------------------------------------------------
@njit(cache=True, inline="always")
def row(s, k, r):
    return s[HEADER + k * s[H_] + r]


@njit(cache=True, inline="always")
def bit(s, k, r, c):
    return (s[HEADER + k * s[H_] + r] >> c) & 1


@njit(cache=True, inline="always")
def full(s):
    return (np.int64(1) << s[W_]) - 1


@njit(cache=True, inline="always")
def blocked(s, r):
    """Permanent obstacles of row r, everything off the board included."""
    if r < 0 or r >= s[H_]:
        return np.int64(-1)
    return row(s, WALL, r) | row(s, FROZEN, r) | row(s, DEAD, r) | ~full(s)


@njit(cache=True, inline="always")
def free(s, r, holes):
    """Tiles of row r that boxes and pushers may use in the relaxation (holes optional)."""
    f = ~blocked(s, r)
    return f if holes else f & ~row(s, HOLE, r)


@njit(cache=True, inline="always")
def occupied(s, cell):
    for p in range(s[NP_]):
        if s[PLAYERS + p] == cell:
            return True
    return False


@njit(cache=True)
def clear_scratch(s):
    base = HEADER + SCR * s[H_]
    for r in range(s[H_]):
        s[base + r] = 0


# ---- deadlock analysis ---------------------------------------------------------------------
@njit(cache=True)
def freeze(s):
    """Adds boxes blocked on both axes to the frozen plane, up to a fixpoint."""
    h = s[H_]
    while True:
        changed = False
        for r in range(h):
            boxes = row(s, BOX, r) & ~row(s, FROZEN, r)
            if boxes == 0:
                continue
            b = blocked(s, r)
            horizontal = (b << 1) | 1 | (b >> 1)
            vertical = blocked(s, r - 1) | blocked(s, r + 1)
            stuck = boxes & horizontal & vertical
            if stuck:
                s[HEADER + FROZEN * h + r] |= stuck
                changed = True
        if not changed:
            return


@njit(cache=True)
def fill(s, boxes, holes, stop):
    """Grows the scratch plane to a fixpoint: over player steps, or (boxes) backwards along box
    pushes using `free(holes)` tiles; with `stop`, returns True once it holds a movable box."""
    h = s[H_]
    scr = HEADER + SCR * h
    forward = True
    while True:
        changed = False
        for i in range(h):
            r = i if forward else h - 1 - i
            x = s[scr + r]
            f = free(s, r, holes)
            if boxes and 0 < r < h - 1:
                above, below = free(s, r - 1, holes), free(s, r + 1, holes)
                x |= s[scr + r + 1] & f & above  # pushed down, pusher above
                x |= s[scr + r - 1] & f & below  # pushed up, pusher below
            elif not boxes:
                x |= ((s[scr + r - 1] if r > 0 else 0) | (s[scr + r + 1] if r < h - 1 else 0)) & f
            while True:
                if boxes:
                    y = x | ((x >> 1) & f & (f << 1)) | ((x << 1) & f & (f >> 1))
                else:
                    y = (x | (x << 1) | (x >> 1)) & f
                if y == x:
                    break
                x = y
            if x != s[scr + r]:
                s[scr + r] = x
                changed = True
            if stop and (x & row(s, BOX, r) & ~row(s, FROZEN, r)) != 0:
                return True
        forward = not forward
        if not changed:
            return False


@njit(cache=True)
def kill_holes(s):
    """Marks holes no box can ever fill as dead; True when it found a new one."""
    h = s[H_]
    scr = HEADER + SCR * h
    for r in range(h):
        s[scr + r] = row(s, HOLE, r) & ~row(s, DEAD, r)
    fill(s, True, True, False)
    live = 0
    for r in range(h):
        live += popcount(s[scr + r] & row(s, BOX, r) & ~row(s, FROZEN, r))
    clear_scratch(s)
    found = False
    for r in range(h):
        open_holes = row(s, HOLE, r) & ~row(s, DEAD, r)
        while open_holes:
            c = lowest_bit_index(open_holes)
            open_holes &= open_holes - 1
            reachable = False
            if live > 0:
                s[scr + r] = np.int64(1) << c
                reachable = fill(s, True, live >= 2, True)
                clear_scratch(s)
            if not reachable:
                s[HEADER + DEAD * h + r] |= np.int64(1) << c
                found = True
    return found


@njit(cache=True)
def is_lost(s):
    """The deadlock test of the module docstring."""
    freeze(s)
    while kill_holes(s):
        freeze(s)
    h, w = s[H_], s[W_]
    scr = HEADER + SCR * h
    exits = 0
    for r in range(h):
        s[scr + r] = row(s, EXIT, r) & ~row(s, FROZEN, r)
        exits += popcount(s[scr + r])
    if exits < s[NP_]:
        clear_scratch(s)
        return True
    fill(s, False, True, False)
    lost = False
    for p in range(s[NP_]):
        cell = s[PLAYERS + p]
        if ((s[scr + cell // w] >> (cell % w)) & 1) == 0:
            lost = True
    clear_scratch(s)
    return lost


# ---- moves ---------------------------------------------------------------------------------
@njit(cache=True)
def candidate(s, p, a):
    """(player target, box landing or -1) of a move judged on the lap's start; (-1, -1) fails."""
    if p >= s[NP_] or a == STAY:
        return -1, -1
    w, h = s[W_], s[H_]
    dr = 1 if a == DOWN else (-1 if a == UP else 0)
    dc = 1 if a == RIGHT else (-1 if a == LEFT else 0)
    pos = s[PLAYERS + p]
    tr, tc = pos // w + dr, pos % w + dc
    if tr < 0 or tr >= h or tc < 0 or tc >= w:
        return -1, -1
    target = tr * w + tc
    if bit(s, WALL, tr, tc) or bit(s, HOLE, tr, tc) or occupied(s, target):
        return -1, -1
    if bit(s, BOX, tr, tc) == 0:
        return target, -1
    br, bc = tr + dr, tc + dc
    if br < 0 or br >= h or bc < 0 or bc >= w:
        return -1, -1
    landing = br * w + bc
    if bit(s, WALL, br, bc) or bit(s, BOX, br, bc) or occupied(s, landing):
        return -1, -1
    return target, landing


@njit(cache=True, inline="always")
def clash(t, b, u, c):
    """Whether claims (t, b) and (u, c) overlap; u < 0 is a failed or idle move."""
    if u < 0:
        return False
    return t == u or t == c or (b >= 0 and (b == u or b == c))


@njit(cache=True)
def move(s, p, t, b):
    """Carries out a successful move; True when it pushed a box."""
    s[PLAYERS + p] = t
    if b < 0:
        return False
    w, h = s[W_], s[H_]
    s[HEADER + BOX * h + t // w] &= ~(np.int64(1) << (t % w))
    r, c = b // w, b % w
    if bit(s, HOLE, r, c):
        s[HEADER + HOLE * h + r] &= ~(np.int64(1) << c)
    else:
        s[HEADER + BOX * h + r] |= np.int64(1) << c
    return True


@njit(cache=True)
def lap(s, a0, a1, a2, a3):
    """One simultaneous lap (see the module docstring for the resolution rule)."""
    t0, b0 = candidate(s, 0, a0)
    t1, b1 = candidate(s, 1, a1)
    t2, b2 = candidate(s, 2, a2)
    t3, b3 = candidate(s, 3, a3)
    ok0 = t0 >= 0 and not (clash(t0, b0, t1, b1) or clash(t0, b0, t2, b2) or clash(t0, b0, t3, b3))
    ok1 = t1 >= 0 and not (clash(t1, b1, t0, b0) or clash(t1, b1, t2, b2) or clash(t1, b1, t3, b3))
    ok2 = t2 >= 0 and not (clash(t2, b2, t0, b0) or clash(t2, b2, t1, b1) or clash(t2, b2, t3, b3))
    ok3 = t3 >= 0 and not (clash(t3, b3, t0, b0) or clash(t3, b3, t1, b1) or clash(t3, b3, t2, b2))
    pushed = False
    if ok0:
        pushed |= move(s, 0, t0, b0)
    if ok1:
        pushed |= move(s, 1, t1, b1)
    if ok2:
        pushed |= move(s, 2, t2, b2)
    if ok3:
        pushed |= move(s, 3, t3, b3)
    s[STEP] += 1
    w = s[W_]
    won = True
    for p in range(s[NP_]):
        cell = s[PLAYERS + p]
        if bit(s, EXIT, cell // w, cell % w) == 0:
            won = False
    if won:
        s[STATUS] = WON
    elif pushed and is_lost(s):
        s[STATUS] = LOST_DEADLOCK
    elif s[STEP] >= s[LIMIT]:
        s[STATUS] = LOST_LIMIT


# ---- kernels -------------------------------------------------------------------------------
@njit(cache=True)
def init(config):
    s = config.copy()
    s[STEP] = 0
    s[STATUS] = LOST_DEADLOCK if is_lost(s) else ONGOING
    return s


@njit(cache=True)
def current_player(s):
    return SIMULTANEOUS if s[STATUS] == ONGOING else TERMINAL


@njit(cache=True)
def legal_actions(s, player, out):
    if s[STATUS] != ONGOING or player < 0 or player >= s[NP_]:
        return 0
    for a in range(5):
        out[a] = a
    return 5


@njit(cache=True)
def chance_probability(s, action):
    return 0.0


@njit(cache=True)
def apply_action(s, action):
    """A lap where player 0 plays `action` and the others stay (what a 1-player level needs)."""
    lap(s, action, STAY, STAY, STAY)


@njit(cache=True, inline="always")
def entry(joint, i):
    return joint[i] if i < joint.shape[0] else STAY


@njit(cache=True)
def apply_joint(s, joint):
    lap(s, joint[0], entry(joint, 1), entry(joint, 2), entry(joint, 3))


@njit(cache=True)
def returns(s, out):
    value = 1.0 if s[STATUS] == WON else (-1.0 if s[STATUS] != ONGOING else 0.0)
    for p in range(s[NP_]):
        out[p] = value


@njit(cache=True)
def observation(s, player, out):
    """Planes walls, boxes, unfilled holes, exits, own position, other players; row 0 on top."""
    w, h = s[W_], s[H_]
    cells = w * h
    for r in range(h):
        for c in range(w):
            i = r * w + c
            out[i] = bit(s, WALL, r, c)
            out[cells + i] = bit(s, BOX, r, c)
            out[2 * cells + i] = bit(s, HOLE, r, c)
            out[3 * cells + i] = bit(s, EXIT, r, c)
            out[4 * cells + i] = 0.0
            out[5 * cells + i] = 0.0
    for p in range(s[NP_]):
        out[(4 if p == player else 5) * cells + s[PLAYERS + p]] = 1.0


KERNELS = KernelSet.collect(globals())


# ---- planning layout (agents: planner) -----------------------------------------------------
def layout(s: np.ndarray) -> dict[str, np.ndarray]:
    """The grid a planning agent reads, so no agent decodes the state array's offsets.

    Boolean (H, W) planes `walls` (the outside of the board is wall too), `boxes`, `holes`
    (unfilled) and `exits`; `players` the player tiles r * W + c; `moves` the action ids of
    up, down, left, right, in the order of engine.pathfind's moves; `stay` the idle action.
    """
    w, h = int(s[W_]), int(s[H_])
    columns = np.arange(w, dtype=np.int64)

    def plane(k: int) -> np.ndarray:
        rows = s[HEADER + k * h : HEADER + (k + 1) * h]
        return ((rows[:, None] >> columns[None, :]) & 1).astype(bool)

    return {
        "width": np.int64(w),
        "height": np.int64(h),
        "walls": plane(WALL),
        "boxes": plane(BOX),
        "holes": plane(HOLE),
        "exits": plane(EXIT),
        "players": s[PLAYERS : PLAYERS + int(s[NP_])].copy(),
        "moves": np.array([UP, DOWN, LEFT, RIGHT], dtype=np.int64),
        "stay": np.int64(STAY),
    }
