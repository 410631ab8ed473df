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

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit

from engine.bits import popcount
from engine.protocol import SIMULTANEOUS, TERMINAL, Game, GameError, KernelSet, State
from engine.registry import register

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
PLANES = 10
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
    """Ten 15x15 planes, row 0 = north. 0 own head, 1 own trail (head included), 2 team-mates'
    trails, 3 opponents' trails, 4 heads of the other living bikes, 5 free tiles, 6-9 own
    heading N/E/S/W one-hot as constant planes (all zero once the own bike is dead)."""
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
def evaluate(s, player):
    """Voronoi territory in [-1, 1]: free tiles `player`'s team reaches strictly first, minus
    the best other team's, over the free tiles. Dead bike -1; a finished game its return."""
    if s[STATUS] == OVER:
        return np.float64(s[RET + player])
    if s[ALIVE + player] == 0:
        return -1.0
    n = s[NUM_PLAYERS]
    dist = np.empty((n, CELLS), dtype=np.int64)
    queue = np.empty(CELLS, dtype=np.int64)
    for p in range(n):
        if s[ALIVE + p]:
            _distances(s, s[POS + p], dist[p], queue)
    tiles = np.zeros(MAX_TEAMS, dtype=np.int64)
    free = 0
    for cell in range(CELLS):
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
        if best < UNREACHED and owner >= 0:
            tiles[owner] += 1
    team = s[TEAM + player]
    rival = 0
    for t in range(MAX_TEAMS):
        if t != team and tiles[t] > rival:
            rival = tiles[t]
    return (tiles[team] - rival) / max(free, 1)


KERNELS = KernelSet.collect(globals())


def _heading(value: Any) -> int:
    if isinstance(value, str) and value.upper() in HEADINGS and len(value) == 1:
        return HEADINGS.index(value.upper())
    if isinstance(value, int | np.integer) and 0 <= int(value) < 4:
        return int(value)
    raise GameError(f"lazerbike: heading must be N/E/S/W or 0-3, got {value!r}")


BIKE_COLOURS = ("#d1242f", "#1f6feb", "#1a7f37", "#d4a72c")  # the page's bikes A-D


@register
class Lazerbike(Game):
    """Light-cycles: simultaneous relative turns; the last team with a living bike wins."""

    name = "lazerbike"
    kind = "war"
    simultaneous = True
    neutral_action = NEUTRAL
    real_time = True
    default_opponent = "simab:ms=100"
    grid_style: ClassVar[dict[str, Any]] = {
        "cell": "square", "background": "#111", "empty": "#1b1f27", "ink": "#fff", "gap": 0,
        "pieces": {
            **{str(p + 1): {"color": f"{c}8c", "name": f"trail {p + 1}"}
               for p, c in enumerate(BIKE_COLOURS)},
            **{"ABCD"[p]: {"color": c, "letter": True, "name": f"bike {'ABCD'[p]}"}
               for p, c in enumerate(BIKE_COLOURS)},
            **{"abcd"[p]: {"color": c, "letter": True, "name": f"crashed {'ABCD'[p]}"}
               for p, c in enumerate(BIKE_COLOURS)},
        },
    }  # fmt: skip
    evaluate = staticmethod(evaluate)  # numba dispatchers bind as methods otherwise
    default_params: ClassVar[dict[str, Any]] = {"players": 2, "teams": ""}
    player_counts = (2, MAX_BIKES)

    def seeded_start(self, **scenario: Any) -> bool:
        return scenario.get("start") == "random"

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        players = self.params["players"]
        if not isinstance(players, int | np.integer) or not 2 <= int(players) <= MAX_BIKES:
            raise GameError(f"lazerbike: players must be 2, 3 or 4, got {players!r}")
        self.num_players = int(players)
        teams = self.params["teams"]
        if isinstance(teams, int | np.integer):  # "0101" arrives as 101 from a game spec
            teams = str(int(teams)).zfill(self.num_players)
        if teams in ("", None):
            self.teams = tuple(range(self.num_players))
        else:
            if not isinstance(teams, str) or len(teams) != self.num_players or not teams.isdigit():
                raise GameError(
                    f"lazerbike: teams must be {self.num_players} digits (one team per bike, "
                    f"e.g. '0101'), got {teams!r}"
                )
            self.teams = tuple(int(ch) for ch in teams)
            if len(set(self.teams)) < 2:
                raise GameError(f"lazerbike: teams {teams!r} put every bike in one team")
        self.num_actions = 3
        self.observation_shape = (PLANES, SIZE, SIZE)
        self.max_game_length = CELLS

    def initial_config(self, rng: np.random.Generator, **scenario: Any) -> np.ndarray:
        """`start`: "symmetric" (default), "random", or explicit [(row, col, heading), ...]."""
        start = scenario.pop("start", "symmetric")
        if scenario:
            raise GameError(f"lazerbike: unknown scenario option(s) {sorted(scenario)}")
        if isinstance(start, str):
            if start == "symmetric":
                setup = list(SYMMETRIC[: self.num_players])
            elif start == "random":
                setup = self._random_setup(rng)
            else:
                raise GameError(
                    f"lazerbike: start must be 'symmetric', 'random' or a list of "
                    f"(row, col, heading), got {start!r}"
                )
        else:
            setup = self._check_setup(start)
        config = np.zeros(CONFIG_SIZE, dtype=np.int64)
        config[0] = self.num_players
        for p, (r, c, h) in enumerate(setup):
            config[1 + p] = self.teams[p]
            config[1 + MAX_BIKES + p] = r * SIZE + c
            config[1 + 2 * MAX_BIKES + p] = h
        return config

    def _check_setup(self, start: Any) -> list[tuple[int, int, int]]:
        try:
            setup = [(int(r), int(c), _heading(h)) for r, c, h in start]
        except GameError:
            raise
        except (TypeError, ValueError) as error:
            message = f"lazerbike: start must be (row, col, heading) triples: {error}"
            raise GameError(message) from None
        if len(setup) != self.num_players:
            raise GameError(f"lazerbike: start needs {self.num_players} bikes, got {len(setup)}")
        for r, c, _ in setup:
            if not (0 <= r < SIZE and 0 <= c < SIZE):
                raise GameError(f"lazerbike: start tile ({r}, {c}) is off the 15x15 board")
        if len({(r, c) for r, c, _ in setup}) != len(setup):
            raise GameError("lazerbike: two bikes start on the same tile")
        return setup

    def _random_setup(self, rng: np.random.Generator) -> list[tuple[int, int, int]]:
        """Tiles one step off the walls, 3+ apart (Chebyshev); headings with 3+ free tiles ahead."""
        setup: list[tuple[int, int, int]] = []
        while len(setup) < self.num_players:
            r, c = (int(x) for x in rng.integers(1, SIZE - 1, size=2))
            if any(max(abs(r - r2), abs(c - c2)) < 3 for r2, c2, _ in setup):
                continue
            room = (r, SIZE - 1 - c, SIZE - 1 - r, c)  # free steps ahead for N, E, S, W
            headings = [h for h in range(4) if room[h] >= 3]
            setup.append((r, c, headings[int(rng.integers(len(headings)))]))
        return setup

    def grid(self, s: np.ndarray) -> list[str]:
        """Trails by the number of their bike, bikes A-D (a-d once crashed), `.` free."""
        rows = [
            ["." if v == 0 else str(int(v)) for v in s[r * SIZE : (r + 1) * SIZE]]
            for r in range(SIZE)
        ]
        for p in range(int(s[NUM_PLAYERS])):
            r, c = divmod(int(s[POS + p]), SIZE)
            rows[r][c] = "ABCD"[p] if s[ALIVE + p] else "abcd"[p]
        return ["".join(row) for row in rows]

    def render(self, s: np.ndarray) -> str:
        n = int(s[NUM_PLAYERS])
        lines = [" ".join(row) for row in self.grid(s)]
        status = f"lap {int(s[LAP])}  " + " ".join(
            f"{'ABCD'[p]}({r},{c}){heading}" if alive else f"{'abcd'[p]}({r},{c})dead"
            for p, (r, c, heading, alive) in enumerate(bikes(s))
        )
        if len(set(self.teams)) < n:
            status += "  teams " + "".join(str(t) for t in self.teams)
        if s[STATUS] == OVER:
            values = [int(s[RET + p]) for p in range(n)]
            winners = "".join("ABCD"[p] for p in range(n) if values[p] > 0)
            status += f"  over: {winners} win" if winners else "  over: draw"
        lines.append(status)
        return "\n".join(lines)

    def action_to_string(self, player: int, action: int) -> str:
        if action == NEUTRAL:
            return "-"
        return ACTION_NAMES[action] if 0 <= action < 3 else str(action)

    def player_name(self, player: int) -> str:
        return "ABCD"[player] if 0 <= player < MAX_BIKES else super().player_name(player)

    def arrow_action(self, s: np.ndarray, player: int, arrow: str) -> int | None:
        """Arrows name compass headings (up = north); a bike can turn left or right or keep
        going, so the arrow behind it is ignored; no key keeps going."""
        if arrow == "":
            return FORWARD
        wanted = {"up": 0, "right": 1, "down": 2, "left": 3}.get(arrow)
        if wanted is None or not s[ALIVE + player]:
            return None
        turn = (wanted - int(s[HEAD + player])) % 4
        return {0: FORWARD, 1: RIGHT, 3: LEFT}.get(turn)

    def parse_moves(self, text: str) -> list[int]:
        """Integers (neutral -2) or words left/forward/right (or l/f/r, '-'), space/comma split."""
        words = {"left": 0, "l": 0, "forward": 1, "f": 1, "right": 2, "r": 2, "-": NEUTRAL}
        moves = []
        for token in filter(None, text.replace(",", " ").split()):
            if token.lower() in words:
                moves.append(words[token.lower()])
                continue
            try:
                moves.append(int(token))
            except ValueError:
                raise GameError(
                    f"lazerbike: moves are integers or left/forward/right, got {token!r}"
                ) from None
        return moves


def state_from_setup(game: Game, setup: Sequence[tuple[int, int, Any]]) -> State:
    """A position with bikes at explicit (row, col, heading) tiles, heading N/E/S/W or 0-3.

    Same as `game.new_initial_state(start=setup)`, so histories replay with that scenario.
    """
    return game.new_initial_state(start=list(setup))


def bikes(state: State | np.ndarray) -> list[tuple[int, int, str, bool]]:
    """Each bike as (row, col, heading N/E/S/W, alive): what scenario scripts and tests read."""
    s = state.array if isinstance(state, State) else state
    return [
        (*divmod(int(s[POS + p]), SIZE), HEADINGS[int(s[HEAD + p])], bool(s[ALIVE + p]))
        for p in range(int(s[NUM_PLAYERS]))
    ]


# the views of a state that data, models and path-finding read (board codes, symmetries, the
# walking grid) live in lazerbike_pictures, which attaches them to the class
import engine.games.lazerbike_pictures  # noqa: E402, F401
