"""Territory: the hex territory game of study 003 (blue, red and grey nature on hexagonal tiles).

A tile is owned while it holds troops (at most 20). Each round a player makes one move:
production (+1 troop on an own tile below 20), attack (up to all troops of an own tile against a
neighbouring tile of the opponent or nature: more attackers conquer and keep the difference,
fewer lose the difference, equal numbers leave both tiles to nature, an empty tile is taken
undefended; sending every troop abandons the origin, which is how a stack "hops") or transport
(between neighbouring own tiles within the 20-troop cap; an emptied origin goes to nature).
A player with no tile is out. Presets are the study's training cases plus a symmetric duel.

Map: a size x size rhombus of hexes; tile (row, col) touches (row, col±1), (row±1, col),
(row+1, col-1) and (row-1, col+1). The study states no adjacency; this is the layout its three
worked examples fit ((2,3)-(3,3), (4,5)-(5,4), (0,2)-(1,2)). Blue starts in the corner (0,0),
red in (size-1, size-1): the two acute corners, as far apart as the map allows.

Actions: tile t has `IDS` ids: id 0 produces, id 1 + d*20 + (k-1) sends k troops in direction
d (attack or transport, whichever the target's owner makes it): action = t * IDS + id.

State array (int64): a header, then one signed troop count per tile (+ blue, - red, 0 nature):
  s[0] player to move  s[1] rounds played  s[2] status (-1 ongoing, 0/1 winner, 2 draw)
  s[3] round limit  s[4] size  s[5] red mode  s[6] goal  s[7] red's seed  s[8] limit rule
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from engine.kernel_cache import stamp_package

stamp_package(__path__[0])  # before any kernel module compiles: one cache stamp for all

from engine.games.territory import notation  # noqa: E402
from engine.games.territory.rules import (  # noqa: E402, F401  (re-exported)
    ANY,
    ATTACK,
    CONQUER,
    DC,
    DIRECTION_NAMES,
    DIRECTIONS,
    DR,
    DRAW,
    ELIMINATE,
    GOAL,
    HEADER,
    IDS,
    LIMIT,
    LIMIT_DRAW,
    LIMIT_MAJORITY,
    LIMIT_RULE,
    MAX_TROOPS,
    ONGOING,
    PRODUCE,
    PRODUCTION,
    RED_ABSENT,
    RED_AGENT,
    RED_GREEDY,
    RED_MODE,
    RED_SCRIPTED,
    RED_STATIC,
    ROUND,
    SEED,
    SIZE,
    STATUS,
    TO_MOVE,
    TRANSPORT,
    greedy_action,
    move_kind,
    neighbour,
    position_key,
    scripted_action,
    sign_of,
    tile_counts,
)
from engine.protocol import TERMINAL, Game, GameError, KernelSet  # noqa: E402
from engine.registry import register  # noqa: E402


# ---- kernels ----------------------------------------------------------------------------------
@njit(cache=True)
def init(config):
    """config = [size, round limit, red mode, goal, red seed, limit rule, tile values...]."""
    n = config[0] * config[0]
    s = np.zeros(HEADER + n, dtype=np.int64)
    s[STATUS] = ONGOING
    s[SIZE] = config[0]
    s[LIMIT] = config[1]
    s[RED_MODE] = config[2]
    s[GOAL] = config[3]
    s[SEED] = config[4]
    s[LIMIT_RULE] = config[5]
    s[HEADER:] = config[6 : 6 + n]
    return s


@njit(cache=True)
def current_player(s):
    if s[STATUS] != ONGOING:
        return TERMINAL
    return s[TO_MOVE]


@njit(cache=True)
def legal_actions(s, player, out):
    """Ascending action ids: per own tile, production, then each direction and troop count."""
    if s[STATUS] != ONGOING or player != s[TO_MOVE]:
        return 0
    sign = sign_of(player)
    size = s[SIZE]
    count = 0
    for tile in range(size * size):
        troops = s[HEADER + tile] * sign
        if troops <= 0:
            continue
        base = tile * IDS
        if troops < MAX_TROOPS:
            out[count] = base
            count += 1
        for d in range(DIRECTIONS):
            target = neighbour(tile, d, size)
            if target < 0:
                continue
            there = s[HEADER + target] * sign
            most = troops if there <= 0 else min(troops, MAX_TROOPS - there)
            first = base + 1 + d * MAX_TROOPS
            for k in range(most):
                out[count] = first + k
                count += 1
    return count


@njit(cache=True)
def chance_probability(s, action):
    return 0.0


@njit(cache=True)
def play_move(s, action, player):
    """Applies one (legal) move of `player` to the board only: no turn, round or end handling."""
    sign = sign_of(player)
    tile = action // IDS
    idx = action % IDS
    if idx == PRODUCE:
        s[HEADER + tile] += sign
        return
    target = neighbour(tile, (idx - 1) // MAX_TROOPS, s[SIZE])
    sent = (idx - 1) % MAX_TROOPS + 1
    s[HEADER + tile] -= sign * sent  # an emptied origin is nature (0 troops)
    there = s[HEADER + target] * sign
    if there >= 0:  # own tile (transport) or nature (taken undefended)
        s[HEADER + target] += sign * sent
        return
    defenders = -there
    if sent > defenders:
        s[HEADER + target] = sign * (sent - defenders)
    elif sent < defenders:
        s[HEADER + target] = -sign * (defenders - sent)
    else:  # equal numbers: both tiles end with zero troops (study §2.2)
        s[HEADER + target] = 0
        s[HEADER + tile] = 0


@njit(cache=True)
def _settle(s):
    """Ends the game when a goal is met or a player is out; returns True when it ended."""
    counts = np.zeros(4, dtype=np.int64)
    tile_counts(s, counts)
    n = s[SIZE] * s[SIZE]
    if s[GOAL] == CONQUER:
        if counts[0] == n:
            s[STATUS] = 0
        elif counts[0] == 0:
            s[STATUS] = 1
    elif counts[0] == 0 and counts[1] == 0:
        s[STATUS] = DRAW
    elif counts[1] == 0:
        s[STATUS] = 0
    elif counts[0] == 0:
        s[STATUS] = 1
    return s[STATUS] != ONGOING


@njit(cache=True)
def _end_of_limit(s):
    if s[LIMIT_RULE] == LIMIT_DRAW:
        s[STATUS] = DRAW
        return
    counts = np.zeros(4, dtype=np.int64)
    tile_counts(s, counts)
    if counts[0] != counts[1]:
        s[STATUS] = 0 if counts[0] > counts[1] else 1
    elif counts[2] != counts[3]:
        s[STATUS] = 0 if counts[2] > counts[3] else 1
    else:
        s[STATUS] = DRAW


@njit(cache=True)
def apply_action(s, action):
    mover = s[TO_MOVE]
    play_move(s, action, mover)
    if _settle(s):
        return
    if s[RED_MODE] == RED_AGENT:
        s[TO_MOVE] = 1 - mover
        if mover == 0:
            return
    elif s[RED_MODE] == RED_SCRIPTED or s[RED_MODE] == RED_GREEDY:
        if s[RED_MODE] == RED_SCRIPTED:
            reply = scripted_action(s, 1, s[SEED])
        else:
            reply = greedy_action(s, 1)
        if reply >= 0:
            play_move(s, reply, 1)
            if _settle(s):
                s[ROUND] += 1
                return
    s[ROUND] += 1
    if s[ROUND] >= s[LIMIT]:
        _end_of_limit(s)


@njit(cache=True)
def apply_joint(s, joint):
    apply_action(s, joint[0])


@njit(cache=True)
def returns(s, out):
    out[0] = 0.0
    out[1] = 0.0
    if s[STATUS] == 0 or s[STATUS] == 1:
        out[s[STATUS]] = 1.0
        out[1 - s[STATUS]] = -1.0


@njit(cache=True)
def observation(s, player, out):
    """Three size x size planes: the player's troops / 20, the opponent's troops / 20, and the
    share of the round limit already played (constant plane)."""
    n = s[SIZE] * s[SIZE]
    sign = sign_of(player)
    elapsed = s[ROUND] / max(s[LIMIT], 1)
    for i in range(n):
        v = s[HEADER + i] * sign
        out[i] = v / MAX_TROOPS if v > 0 else 0.0
        out[n + i] = -v / MAX_TROOPS if v < 0 else 0.0
        out[2 * n + i] = elapsed


@njit(cache=True)
def evaluate(s, player):
    """Heuristic in [-1, 1] for search agents: tile and troop balance of `player`."""
    if s[STATUS] != ONGOING:
        if s[STATUS] == DRAW:
            return 0.0
        return 1.0 if s[STATUS] == player else -1.0
    counts = np.zeros(4, dtype=np.int64)
    tile_counts(s, counts)
    own, other = (0, 1) if player == 0 else (1, 0)
    raw = 0.25 * (counts[own] - counts[other]) + 0.04 * (counts[2 + own] - counts[2 + other])
    return np.tanh(raw)


KERNELS = KernelSet.collect(globals())


# ---- presets (the study's training cases and the symmetric duel) ------------------------------
#: name: (red mode, goal, default round limit, rule at the limit). Study §6: 5,000 / 500 / 5,000 /
#: 500 rounds; the duel is gridbots' own, short enough for search agents to play many games.
PRESETS: dict[str, tuple[int, int, int, int]] = {
    "expand-alone": (RED_ABSENT, CONQUER, 5000, LIMIT_DRAW),
    "beat-red-easy": (RED_STATIC, ELIMINATE, 500, LIMIT_DRAW),
    "beat-red-hard": (RED_STATIC, ELIMINATE, 5000, LIMIT_DRAW),
    "against-red": (RED_SCRIPTED, ELIMINATE, 500, LIMIT_DRAW),
    "duel": (RED_AGENT, ELIMINATE, 100, LIMIT_MAJORITY),
    "duel-vs-red": (RED_SCRIPTED, ELIMINATE, 100, LIMIT_MAJORITY),  # the duel, red scripted
    "duel-vs-greedy": (RED_GREEDY, ELIMINATE, 100, LIMIT_MAJORITY),  # red: greedy_action
}


def hex_distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    dr, dc = b[0] - a[0], b[1] - a[1]
    return (abs(dr) + abs(dc) + abs(dr + dc)) // 2


def static_red(size: int, centre: tuple[int, int], tiles: int, troops: int) -> np.ndarray:
    """`tiles` tiles nearest `centre` (ties by index), `troops` spread evenly, the extra ones on
    the nearest tiles: the study gives red's counts (6 / 40 and 19 / 222), not the layout."""
    cells = sorted(
        (hex_distance((r, c), centre), r * size + c) for r in range(size) for c in range(size)
    )[:tiles]
    board = np.zeros(size * size, dtype=np.int64)
    base, extra = divmod(troops, tiles)
    for rank, (_, index) in enumerate(cells):
        board[index] = -min(MAX_TROOPS, base + (1 if rank < extra else 0))
    return board


def preset_board(preset: str, size: int) -> np.ndarray:
    """Starting troops: blue 1 in (0,0); red per preset (study §6, figures 5.1, 6.5, 6.10)."""
    n = size * size
    board = np.zeros(n, dtype=np.int64)
    if preset == "beat-red-easy":  # 6 tiles, 40 troops on 6x6: the radius-2 corner
        share = n / 36
        board = static_red(size, (size - 1, size - 1), round(6 * share), round(40 * share))
    elif preset == "beat-red-hard":  # 19 tiles, 222 troops on 6x6: the radius-2 hexagon
        share = n / 36
        board = static_red(size, (size // 2, size // 2), round(19 * share), round(222 * share))
    elif preset in ("against-red", "duel", "duel-vs-red", "duel-vs-greedy"):
        board[n - 1] = -1
    board[0] = 1
    return board


@register
class Territory(Game):
    """Blue and red conquer a hex map by production, attack and transport (study 003)."""

    name = "territory"
    kind = "duel"
    neutral_action = -1
    evaluate = staticmethod(evaluate)
    position_key = staticmethod(position_key)
    sparring_action = staticmethod(greedy_action)
    default_params: ClassVar[dict[str, Any]] = {"size": 6, "preset": "duel", "rounds": 0}
    grid_style: ClassVar[dict[str, Any]] = {
        "cell": "hex", "background": "#f4f1ea", "empty": "#b9b9b9", "ink": "#fff", "gap": 2,
        "pieces": {"B": {"color": "#1f6feb", "name": "blue"},
                   "R": {"color": "#cf222e", "name": "red"}},
    }  # fmt: skip

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        size, preset, rounds = self.params["size"], self.params["preset"], self.params["rounds"]
        if isinstance(size, bool) or not isinstance(size, int) or not 2 <= size <= 16:
            raise GameError(f"territory: size must be an integer in 2..16, got {size!r}")
        if preset not in PRESETS:
            raise GameError(f"territory: unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
            raise GameError(f"territory: rounds must be >= 0 (0: the preset's), got {rounds!r}")
        self.size = size
        self.num_tiles = size * size
        self.red_mode, self.goal, default_rounds, self.limit_rule = PRESETS[preset]
        self.rounds = rounds or default_rounds
        self.num_players = 2
        self.teams = (0, 1)
        self.num_actions = self.num_tiles * IDS
        self.observation_shape = (3, size, size)
        self.max_game_length = self.rounds * (2 if self.red_mode == RED_AGENT else 1)

    def seeded_start(self, **scenario: Any) -> bool:
        return self.red_mode == RED_SCRIPTED

    def initial_config(self, rng: np.random.Generator, **scenario: Any) -> np.ndarray:
        """The preset's board; the seed drives red's scripted policy (`against-red`)."""
        if scenario:
            raise GameError(
                f"territory: unknown scenario option(s) {sorted(scenario)}; "
                "pick a preset with the game parameter, e.g. territory:preset=against-red"
            )
        red_seed = int(rng.integers(0, 2**62))
        head = [self.size, self.rounds, self.red_mode, self.goal, red_seed, self.limit_rule]
        board = preset_board(self.params["preset"], self.size)
        return np.concatenate([np.array(head, dtype=np.int64), board])

    # ---- notation and pictures -----------------------------------------------------------------
    def action_to_string(self, player: int, action: int) -> str:
        return notation.action_name(action, self.size)

    def player_name(self, player: int) -> str:
        return ("blue", "red")[player] if player in (0, 1) else super().player_name(player)

    def parse_moves(self, text: str) -> list[int]:
        """`produce (r,c)`, `(r,c)->(r,c) xN` or action ids, separated by spaces, `,` or `;`."""
        return notation.parse_moves(text, self.size)

    def format_moves(self, actions) -> str:
        return notation.format_moves(actions, self.size)

    def grid(self, s: np.ndarray) -> list[str]:
        """B blue, R red (with troops), `.` nature; row r is drawn r half tiles to the right."""
        size = int(s[SIZE])
        marks = ["B" if v > 0 else "R" if v < 0 else "." for v in s[HEADER : HEADER + size * size]]
        return ["".join(marks[r * size : (r + 1) * size]) for r in range(size)]

    def grid_labels(self, s: np.ndarray) -> list[list[str]]:
        """The troops on each owned tile."""
        size = int(s[SIZE])
        tiles = s[HEADER : HEADER + size * size]
        return [[str(abs(int(v))) if v else "" for v in tiles[r * size : (r + 1) * size]]
                for r in range(size)]  # fmt: skip

    def move_cells(self, action: int) -> tuple[tuple[int, int], ...]:
        """The tile a move starts from."""
        tile = int(action) // IDS
        return (divmod(tile, self.size),) if 0 <= tile < self.num_tiles else ()

    def move_target(self, action: int) -> tuple[int, int] | None:
        """The neighbour the troops go to (None: production, or off the map)."""
        tile, idx = divmod(int(action), IDS)
        if not 0 <= tile < self.num_tiles or idx == PRODUCE:
            return None
        target = int(neighbour(tile, (idx - 1) // MAX_TROOPS, self.size))
        return divmod(target, self.size) if target >= 0 else None

    def render(self, s: np.ndarray) -> str:
        """The rhombus as hexes: each row shifted half a tile right of the one above, so a tile
        touches its two neighbours in each adjacent row. B/R = blue/red with troops, . nature."""
        size = int(s[SIZE])
        counts = np.zeros(4, dtype=np.int64)
        tile_counts(s, counts)
        status = int(s[STATUS])
        if status == ONGOING:
            where = f"{'blue' if s[TO_MOVE] == 0 else 'red'} to move"
        else:
            where = "draw" if status == DRAW else f"{('blue', 'red')[status]} wins"
        preset = self.params["preset"]
        lines = [
            f"territory {size}x{size} {preset}, round {int(s[ROUND])}/{int(s[LIMIT])}, {where}",
            f"blue {counts[0]} tiles {counts[2]} troops | red {counts[1]} tiles {counts[3]} troops",
            "     " + " ".join(f"{c:^3}" for c in range(size)),
        ]
        for r in range(size):
            cells = []
            for c in range(size):
                v = int(s[HEADER + r * size + c])
                cells.append(f"B{v:>2}" if v > 0 else f"R{-v:>2}" if v < 0 else " . ")
            lines.append(f"{r:>3}  " + "  " * r + " ".join(cells))
        return "\n".join(lines)

    def heuristic_action(self, state, player: int, options: dict[str, str]) -> int:
        """`heuristic[:seed=N]`: the study's scripted red policy (§6.4) for either seat;
        `heuristic:policy=greedy`: gridbots' greedy spreader (greedy_action)."""
        unknown = set(options) - {"seed", "policy"}
        if unknown:
            raise GameError(f"territory heuristic: unknown option(s) {sorted(unknown)}")
        policy = options.get("policy", "study")
        if policy not in ("study", "greedy"):
            raise GameError(f"territory heuristic: policy is study or greedy, not {policy!r}")
        if policy == "greedy":
            return int(greedy_action(state.array, player))
        try:
            seed = int(options.get("seed", 0))
        except ValueError:
            raise GameError(
                f"territory heuristic: seed must be an integer, got {options['seed']!r}"
            ) from None
        return int(scripted_action(state.array, player, seed))

    def tile_moves(self) -> dict[str, Any]:
        """The action layout learned tile-move policies decode into (agents.neat.codec):
        neighbours[tile, d] (-1 off the map), ids per tile, troops cap, and the 180-degree turn
        that shows red the board as blue sees it (tile t -> n-1-t, direction d -> d+3)."""
        n = self.num_tiles
        neighbours = np.array(
            [[neighbour(t, d, self.size) for d in range(DIRECTIONS)] for t in range(n)],
            dtype=np.int64,
        )
        return {
            "neighbours": neighbours,
            "ids_per_tile": IDS,
            "max_count": MAX_TROOPS,
            "turn_tiles": np.arange(n - 1, -1, -1, dtype=np.int64),
            "turn_directions": np.array([(d + 3) % DIRECTIONS for d in range(DIRECTIONS)]),
        }
