"""Territory's map, its hashing and the red policies that move without a seated player.

The package's root (engine.games.territory: the rules' kernels and the Game) imports every name
it uses from here; the notation (engine.games.territory.notation) reads the map's layout too.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MAX_TROOPS = 20
DIRECTIONS = 6
IDS = 1 + DIRECTIONS * MAX_TROOPS  # ids per tile
PRODUCE = 0
#: row / column steps of the six directions: E, SE, SW, W, NW, NE (as drawn, rows shift right)
DR = (0, 1, 1, 0, -1, -1)
DC = (1, 0, -1, -1, 0, 1)
DIRECTION_NAMES = ("E", "SE", "SW", "W", "NW", "NE")

TO_MOVE, ROUND, STATUS, LIMIT, SIZE, RED_MODE, GOAL, SEED, LIMIT_RULE = range(9)
HEADER = 9
ONGOING, DRAW = -1, 2
# red modes: a seated player, a static army that never moves, the study's scripted policy, absent
RED_AGENT, RED_STATIC, RED_SCRIPTED, RED_ABSENT, RED_GREEDY = 0, 1, 2, 3, 4
# goals: eliminate the opponent, or own every tile (the empty-map case)
ELIMINATE, CONQUER = 0, 1
# at the round limit: a draw, or the player with more tiles (then more troops) wins
LIMIT_DRAW, LIMIT_MAJORITY = 0, 1
# move kinds (scripted policy, statistics)
ANY, PRODUCTION, ATTACK, TRANSPORT = 0, 1, 2, 3


# ---- map --------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def neighbour(tile, d, size):
    """The tile next to `tile` in direction d, or -1 off the map."""
    r = tile // size + DR[d]
    c = tile % size + DC[d]
    if r < 0 or r >= size or c < 0 or c >= size:
        return -1
    return r * size + c


@njit(cache=True, inline="always")
def sign_of(player):
    return 1 if player == 0 else -1


@njit(cache=True, inline="always")
def move_kind(s, action, player):
    """PRODUCTION, ATTACK or TRANSPORT for a legal action of `player`."""
    idx = action % IDS
    if idx == PRODUCE:
        return PRODUCTION
    target = neighbour(action // IDS, (idx - 1) // MAX_TROOPS, s[SIZE])
    return TRANSPORT if s[HEADER + target] * sign_of(player) > 0 else ATTACK


@njit(cache=True)
def tile_counts(s, out):
    """out[0..1] = tiles of blue / red, out[2..3] = troops of blue / red."""
    out[:] = 0
    n = s[SIZE] * s[SIZE]
    for i in range(n):
        v = s[HEADER + i]
        if v > 0:
            out[0] += 1
            out[2] += v
        elif v < 0:
            out[1] += 1
            out[3] -= v


@njit(cache=True, inline="always")
def _mix(x):
    """splitmix64 finaliser (as uint64)."""
    x = np.uint64(x)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True)
def position_key(s):
    """Hash of the board and the player to move (not the clock): the study's stale-game test
    counts repetitions of this."""
    h = _mix(np.uint64(s[TO_MOVE]) + np.uint64(0x9E3779B97F4A7C15))
    for i in range(HEADER, s.shape[0]):
        h = _mix(h ^ np.uint64(s[i] + 64))
    return np.int64(h)


@njit(cache=True)
def _moves_of_kind(s, player, kind, pick):
    """With pick < 0: how many legal moves of `kind` (ANY, PRODUCTION, ATTACK) player has;
    else the pick-th such move (ascending ids). No buffer, so the kernel allocates nothing."""
    sign = sign_of(player)
    size = s[SIZE]
    seen = 0
    for tile in range(size * size):
        troops = s[HEADER + tile] * sign
        if troops <= 0:
            continue
        base = tile * IDS
        if troops < MAX_TROOPS and (kind == ANY or kind == PRODUCTION):
            if seen == pick:
                return base
            seen += 1
        if kind == PRODUCTION:
            continue
        for d in range(DIRECTIONS):
            target = neighbour(tile, d, size)
            if target < 0:
                continue
            there = s[HEADER + target] * sign
            if there > 0 and kind == ATTACK:
                continue
            most = troops if there <= 0 else min(troops, MAX_TROOPS - there)
            if pick >= seen and pick < seen + most:
                return base + 1 + d * MAX_TROOPS + (pick - seen)
            seen += most
    return seen if pick < 0 else -1


@njit(cache=True)
def scripted_action(s, player, seed):
    """The study's red policy (§6.4) for `player`: a random attack when the opponent holds more
    tiles, else a random production when short of troops (< 20, or fewer than the opponent's),
    else a random move. "Random" is a hash of the position and `seed`, so the policy always
    answers the same position the same way, as the study requires. -1 when it cannot move."""
    counts = np.zeros(4, dtype=np.int64)
    tile_counts(s, counts)
    own, other = (0, 1) if player == 0 else (1, 0)
    h = _mix(np.uint64(position_key(s)) ^ _mix(np.uint64(seed) + np.uint64(1)))
    if counts[other] > counts[own]:
        n = _moves_of_kind(s, player, ATTACK, -1)
        if n > 0:
            return _moves_of_kind(s, player, ATTACK, np.int64(h % np.uint64(n)))
    mine = counts[2 + own]
    if mine < MAX_TROOPS or mine < counts[2 + other]:
        n = _moves_of_kind(s, player, PRODUCTION, -1)
        if n > 0:
            return _moves_of_kind(s, player, PRODUCTION, np.int64(h % np.uint64(n)))
    n = _moves_of_kind(s, player, ANY, -1)
    if n == 0:
        return -1
    return _moves_of_kind(s, player, ANY, np.int64(h % np.uint64(n)))


@njit(cache=True)
def greedy_action(s, player):
    """gridbots' hand-written greedy policy (not the study's): take an enemy tile with one troop
    more than it holds, from a stack that keeps a troop; else claim the nature tile next to the
    largest stack with a single troop; else produce on the smallest own tile; else the first
    legal move. Deterministic; -1 when it cannot move."""
    sign = sign_of(player)
    size = s[SIZE]
    best, best_score = -1, -1e9
    for tile in range(size * size):
        troops = s[HEADER + tile] * sign
        if troops <= 0:
            continue
        if troops < MAX_TROOPS and 10.0 - troops > best_score:
            best, best_score = tile * IDS, 10.0 - troops
        for d in range(DIRECTIONS):
            target = neighbour(tile, d, size)
            if target < 0:
                continue
            there = s[HEADER + target] * sign
            if there < 0 and troops > 1 - there and 100.0 - there > best_score:
                best, best_score = tile * IDS + 1 + d * MAX_TROOPS - there, 100.0 - there
            elif there == 0 and troops >= 2 and 50.0 + troops > best_score:
                best, best_score = tile * IDS + 1 + d * MAX_TROOPS, 50.0 + troops
    if best < 0:
        return _moves_of_kind(s, player, ANY, 0)
    return best
