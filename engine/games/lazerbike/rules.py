"""Lazerbike: 2 to 4 light-cycles on a 15x15 board, moving simultaneously, leaving laser trails.

Every living bike turns left (0), goes forward (1) or turns right (2) each lap; all moves of a
lap are resolved together. A bike dies entering a wall, any trail (heads are trail too, so a
head-on swap kills both) or a tile another bike enters in the same lap. The game ends when at
most one team has a living bike: that team gets +1, every other bike -1; if the last bikes all
die in the same lap, the teams alive at the start of that lap draw (0) and the rest get -1.

State array (int64):
  s[0:225]   board, row-major (row 0 = north): 0 free, p + 1 trail of bike p (head included)
  s[225] number of bikes   s[226] laps played   s[227] status: -1 ongoing, 1 over
  then four slots per field, one per bike (unused slots stay 0):
  POS row * 15 + col of the head (last tile for a dead bike)   HEAD heading 0 N, 1 E, 2 S, 3 W
  ALIVE 1/0 (2 = dying, only inside a lap)   TEAM team id   TARGET scratch tile of a lap
  RET final return of each bike
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.bits import popcount
from engine.protocol import SIMULTANEOUS, TERMINAL, KernelSet

SIZE = 15
CELLS = SIZE * SIZE
MAX_BIKES = 4
NUM_PLAYERS, LAP, STATUS = CELLS, CELLS + 1, CELLS + 2
POS = CELLS + 3
HEAD = POS + MAX_BIKES
ALIVE = HEAD + MAX_BIKES
TEAM = ALIVE + MAX_BIKES
TARGET = TEAM + MAX_BIKES
RET = TARGET + MAX_BIKES
STATE_SIZE = RET + MAX_BIKES
ONGOING, OVER = -1, 1
DYING = 2
LEFT, FORWARD, RIGHT = 0, 1, 2
NEUTRAL = -2
OFF_BOARD = -1
PLANES = 12
HEADINGS = "NESW"
ACTION_NAMES = ("left", "forward", "right")
#: config vector: [bikes, team x4, pos x4, heading x4]
CONFIG_SIZE = 1 + 3 * MAX_BIKES
#: symmetric starts (row, col, heading): west, east, north, south sides, all facing inward
SYMMETRIC = ((7, 2, 1), (7, 12, 3), (2, 7, 2), (12, 7, 0))


@njit(cache=True, inline="always")
def step_target(pos, heading):
    """The tile one step ahead, or OFF_BOARD when that step leaves the board."""
    r = pos // SIZE
    c = pos - r * SIZE
    if heading == 0:
        return OFF_BOARD if r == 0 else pos - SIZE
    if heading == 1:
        return OFF_BOARD if c == SIZE - 1 else pos + 1
    if heading == 2:
        return OFF_BOARD if r == SIZE - 1 else pos + SIZE
    return OFF_BOARD if c == 0 else pos - 1


@njit(cache=True)
def init(config):
    s = np.zeros(STATE_SIZE, dtype=np.int64)
    n = config[0]
    s[NUM_PLAYERS] = n
    s[STATUS] = ONGOING
    for p in range(n):
        s[TEAM + p] = config[1 + p]
        s[POS + p] = config[1 + MAX_BIKES + p]
        s[HEAD + p] = config[1 + 2 * MAX_BIKES + p]
        s[ALIVE + p] = 1
        s[s[POS + p]] = p + 1
    return s


@njit(cache=True)
def current_player(s):
    return SIMULTANEOUS if s[STATUS] == ONGOING else TERMINAL


@njit(cache=True)
def legal_actions(s, player, out):
    if s[STATUS] != ONGOING or player < 0 or player >= s[NUM_PLAYERS] or s[ALIVE + player] == 0:
        return 0
    out[0] = LEFT
    out[1] = FORWARD
    out[2] = RIGHT
    return 3


@njit(cache=True)
def chance_probability(s, action):
    return 0.0


@njit(cache=True)
def apply_joint(s, joint):
    """One lap: targets first, then deaths (walls, trails, shared tiles), then moves."""
    n = s[NUM_PLAYERS]
    teams_before = np.int64(0)
    for p in range(n):
        if s[ALIVE + p]:
            teams_before |= np.int64(1) << s[TEAM + p]
            heading = (s[HEAD + p] + joint[p] + 3) & 3
            s[HEAD + p] = heading
            s[TARGET + p] = step_target(s[POS + p], heading)
    for p in range(n):
        if s[ALIVE + p] == 0:
            continue
        t = s[TARGET + p]
        dies = t == OFF_BOARD or s[t] != 0
        if not dies:
            for q in range(n):
                if q != p and s[ALIVE + q] and s[TARGET + q] == t:
                    dies = True
                    break
        if dies:
            s[ALIVE + p] = DYING  # still alive for the shared-tile test of later bikes
    teams_after = np.int64(0)
    for p in range(n):
        if s[ALIVE + p]:
            t = s[TARGET + p]
            if s[ALIVE + p] == DYING:
                s[ALIVE + p] = 0
            else:
                s[t] = p + 1
                s[POS + p] = t
                teams_after |= np.int64(1) << s[TEAM + p]
    s[LAP] += 1
    if popcount(teams_after) <= 1:
        s[STATUS] = OVER
        winners = teams_after if teams_after else teams_before
        value = 1 if teams_after else 0
        for p in range(n):
            s[RET + p] = value if (winners >> s[TEAM + p]) & 1 else -1


@njit(cache=True)
def apply_action(s, action):
    """Not a turn-based game; kept for the protocol (a lone action never applies)."""
    return


@njit(cache=True)
def returns(s, out):
    for p in range(s[NUM_PLAYERS]):
        out[p] = np.float64(s[RET + p]) if s[STATUS] == OVER else 0.0


@njit(cache=True)
def observation(s, player, out):
    """Twelve 15x15 planes, row 0 = north. 0 own head, 1 own trail (head included), 2 team-mates'
    trails, 3 opponents' trails, 4 heads of the other living bikes, 5 free tiles, 6-9 own
    heading N/E/S/W one-hot as constant planes (all zero once the own bike is dead), 10-11 the
    Voronoi split `evaluate` counts: free tiles the own team reaches strictly first, and those
    another team does (a value network sees where the territory lies, not only its size)."""
    out[:] = 0.0
    team = s[TEAM + player]
    for cell in range(CELLS):
        v = s[cell]
        if v == 0:
            out[5 * CELLS + cell] = 1.0
        elif v - 1 == player:
            out[CELLS + cell] = 1.0
        elif s[TEAM + v - 1] == team:
            out[2 * CELLS + cell] = 1.0
        else:
            out[3 * CELLS + cell] = 1.0
    out[s[POS + player]] = 1.0
    for q in range(s[NUM_PLAYERS]):
        if q != player and s[ALIVE + q]:
            out[4 * CELLS + s[POS + q]] = 1.0
    if s[ALIVE + player]:
        base = (6 + s[HEAD + player]) * CELLS
        out[base : base + CELLS] = 1.0
    owners = np.empty(CELLS, dtype=np.int64)
    _owners(s, owners)
    team = s[TEAM + player]
    for cell in range(CELLS):
        if owners[cell] == team:
            out[10 * CELLS + cell] = 1.0
        elif owners[cell] >= 0:
            out[11 * CELLS + cell] = 1.0


# ---- heuristic evaluation (agents: simab) -------------------------------------------------------
UNREACHED = CELLS + 1
MAX_TEAMS = 10  # team ids are digits


@njit(cache=True, inline="always")
def _distances(s, start, dist, queue):
    """BFS steps from the head tile `start` to every free tile reachable over free tiles."""
    dist[:] = UNREACHED
    dist[start] = 0
    queue[0] = start
    head, tail = 0, 1
    while head < tail:
        tile = queue[head]
        head += 1
        for heading in range(4):
            nxt = step_target(tile, heading)
            if nxt != OFF_BOARD and s[nxt] == 0 and dist[nxt] == UNREACHED:
                dist[nxt] = dist[tile] + 1
                queue[tail] = nxt
                tail += 1


@njit(cache=True)
def _owners(s, owners):
    """owners[cell]: the team whose living bikes reach the free tile strictly first over free
    tiles, -1 where teams tie, none reaches it, or the tile is not free; the free-tile count."""
    n = s[NUM_PLAYERS]
    dist = np.empty((n, CELLS), dtype=np.int64)
    queue = np.empty(CELLS, dtype=np.int64)
    for p in range(n):
        if s[ALIVE + p]:
            _distances(s, s[POS + p], dist[p], queue)
    free = 0
    for cell in range(CELLS):
        owners[cell] = -1
        if s[cell] != 0:
            continue
        free += 1
        best, owner = UNREACHED, -1
        for p in range(n):
            if s[ALIVE + p] == 0 or dist[p, cell] > best:
                continue
            if dist[p, cell] < best:
                best, owner = dist[p, cell], s[TEAM + p]
            elif owner != s[TEAM + p]:
                owner = -1  # two teams tie: nobody's
        if best < UNREACHED:
            owners[cell] = owner
    return free


@njit(cache=True)
def evaluate(s, player):
    """Voronoi territory in [-1, 1]: free tiles `player`'s team reaches strictly first, minus
    the best other team's, over the free tiles. Dead bike -1; a finished game its return."""
    if s[STATUS] == OVER:
        return np.float64(s[RET + player])
    if s[ALIVE + player] == 0:
        return -1.0
    owners = np.empty(CELLS, dtype=np.int64)
    free = _owners(s, owners)
    tiles = np.zeros(MAX_TEAMS, dtype=np.int64)
    for cell in range(CELLS):
        if owners[cell] >= 0:
            tiles[owners[cell]] += 1
    team = s[TEAM + player]
    rival = 0
    for t in range(MAX_TEAMS):
        if t != team and tiles[t] > rival:
            rival = tiles[t]
    return (tiles[team] - rival) / max(free, 1)


KERNELS = KernelSet.collect(globals())
