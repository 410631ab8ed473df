"""Othello (Reversi) on 64-bit bitboards.

Squares use the printed-board convention: columns a-h left to right, rows 1-8 top to bottom, so
the start holds white on d4 and e5, black on d5 and e4, and black (player 0, moving first) may
play d3, c4, f5 or e6. Action = 8 * (row - 1) + column index = the square's bit; action 64 is a
pass, legal only when the player has no placement. State array:
  s[0] black discs   s[1] white discs   s[2] player to move (0 black, 1 white)
  s[3] status: -1 ongoing, 0/1 winner, 2 draw
  s[4] legal placements of the player to move (0 while ongoing means: must pass)
  s[5] actions played
The legal-move board is computed once when a move is applied, so legal_actions only scans bits.
The game ends as soon as neither player can place a disc (a wipe-out included); that is found
while applying the move that causes it, so a tree never holds two passes in a row.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np
from numba import njit

from engine.bits import lowest_bit_index, popcount
from engine.protocol import CHANCE, TERMINAL, Game, GameError, KernelSet
from engine.registry import register

SIZE = 8
CELLS = SIZE * SIZE
PASS = CELLS
ONGOING, DRAW = -1, 2
BLACK, WHITE, TO_MOVE, STATUS, LEGAL, PLIES = 0, 1, 2, 3, 4, 5
STATE_SIZE = 6
NEUTRAL = -1
COLUMNS = "abcdefgh"
#: discs not on column a or h: a horizontal or diagonal run must stay inside them, which stops a
#: shift from wrapping from one row's h-square to the next row's a-square
INNER = 0x7E7E7E7E7E7E7E7E
ALL64 = (1 << 64) - 1
START_BLACK = (1 << 35) | (1 << 28)  # d5, e4
START_WHITE = (1 << 27) | (1 << 36)  # d4, e5


@njit(cache=True, inline="always")
def _moves_up(own, run, empty, n):
    """Empty squares reached from `own` over >= 1 `run` disc, moving toward higher bits."""
    x = (own << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    return (x << n) & empty


@njit(cache=True, inline="always")
def _moves_down(own, run, empty, n):
    x = (own >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    return (x >> n) & empty


@njit(cache=True, inline="always")
def mobility(own, opp):
    """Bitboard of the squares where the owner of `own` may place a disc (uint64 in and out)."""
    empty = ~(own | opp)
    inner = opp & np.uint64(INNER)
    one, seven, eight, nine = np.uint64(1), np.uint64(7), np.uint64(8), np.uint64(9)
    return (
        _moves_up(own, inner, empty, one)
        | _moves_down(own, inner, empty, one)
        | _moves_up(own, opp, empty, eight)
        | _moves_down(own, opp, empty, eight)
        | _moves_up(own, inner, empty, seven)
        | _moves_down(own, inner, empty, seven)
        | _moves_up(own, inner, empty, nine)
        | _moves_down(own, inner, empty, nine)
    )


@njit(cache=True, inline="always")
def _flips_up(move, own, run, n):
    """The `run` discs between `move` and an own disc toward higher bits (0 if unbounded)."""
    x = (move << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    x |= (x << n) & run
    return x if (x << n) & own else np.uint64(0)


@njit(cache=True, inline="always")
def _flips_down(move, own, run, n):
    x = (move >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    x |= (x >> n) & run
    return x if (x >> n) & own else np.uint64(0)


@njit(cache=True, inline="always")
def flips(move, own, opp):
    """Opponent discs turned by placing the single-bit board `move` (uint64 in and out)."""
    inner = opp & np.uint64(INNER)
    one, seven, eight, nine = np.uint64(1), np.uint64(7), np.uint64(8), np.uint64(9)
    return (
        _flips_up(move, own, inner, one)
        | _flips_down(move, own, inner, one)
        | _flips_up(move, own, opp, eight)
        | _flips_down(move, own, opp, eight)
        | _flips_up(move, own, inner, seven)
        | _flips_down(move, own, inner, seven)
        | _flips_up(move, own, inner, nine)
        | _flips_down(move, own, inner, nine)
    )


@njit(cache=True, inline="always")
def _settle(s, mover, own, opp):
    """Hands the turn to the opponent of `mover` (own/opp are mover's discs and the other's)."""
    nxt = 1 - mover
    s[TO_MOVE] = nxt
    legal = mobility(opp, own)
    s[LEGAL] = np.int64(legal)
    if legal == np.uint64(0) and mobility(own, opp) == np.uint64(0):
        mine, theirs = popcount(own), popcount(opp)
        s[STATUS] = DRAW if mine == theirs else (mover if mine > theirs else nxt)


@njit(cache=True)
def init(config):
    """config = [black discs, white discs, player to move] (a bad position ends at once)."""
    s = np.zeros(STATE_SIZE, dtype=np.int64)
    s[BLACK] = config[0]
    s[WHITE] = config[1]
    s[STATUS] = ONGOING
    mover = 1 - config[2]
    _settle(s, mover, np.uint64(s[mover]), np.uint64(s[1 - mover]))
    return s


@njit(cache=True)
def current_player(s):
    if s[STATUS] != ONGOING:
        return TERMINAL
    return s[TO_MOVE]


@njit(cache=True)
def legal_actions(s, player, out):
    if s[STATUS] != ONGOING or player != s[TO_MOVE]:
        return 0
    board = np.uint64(s[LEGAL])
    if board == np.uint64(0):
        out[0] = PASS
        return 1
    n = 0
    while board != np.uint64(0):
        out[n] = lowest_bit_index(board)
        board &= board - np.uint64(1)
        n += 1
    return n


@njit(cache=True)
def chance_probability(s, action):
    return 0.0


@njit(cache=True)
def apply_action(s, action):
    mover = s[TO_MOVE]
    s[PLIES] += 1
    if action == PASS:
        s[TO_MOVE] = 1 - mover
        s[LEGAL] = np.int64(mobility(np.uint64(s[1 - mover]), np.uint64(s[mover])))
        return
    own = np.uint64(s[mover])
    opp = np.uint64(s[1 - mover])
    move = np.uint64(1) << np.uint64(action)
    turned = flips(move, own, opp)
    own |= turned | move
    opp ^= turned
    s[mover] = np.int64(own)
    s[1 - mover] = np.int64(opp)
    _settle(s, mover, own, opp)


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
    """Three 8x8 planes (row 1 first): player's discs, opponent's, player's legal squares.

    The third plane is empty when it is not the player's turn, or when the player must pass.
    """
    own = s[player]
    opp = s[1 - player]
    legal = s[LEGAL] if (s[STATUS] == ONGOING and s[TO_MOVE] == player) else np.int64(0)
    for i in range(CELLS):
        out[i] = np.float32((own >> i) & 1)
        out[CELLS + i] = np.float32((opp >> i) & 1)
        out[2 * CELLS + i] = np.float32((legal >> i) & 1)


# ---- heuristic evaluation (agents: alphabeta) ---------------------------------------------------
# The weighted sum of study 002 (§3.2): corners x4, discs next to a free corner x-2, edges x1,
# frontier (empty squares next to own discs) x-0.2, discs x0.5, mobility x2, each as own minus
# opponent's count; a finished game is worth its result (the study: +-infinity). The sum is
# kept in integer tenths (weights x10), so positions the study scores equally score exactly
# equally here too and a fixed-depth search breaks their ties as plain minimax does.
CORNER_SQUARES = (0, 7, 56, 63)
CORNER_NEIGHBOURS = ((1, 8, 9), (6, 14, 15), (48, 49, 57), (54, 55, 62))
CORNERS = sum(1 << sq for sq in CORNER_SQUARES)
NEAR_CORNERS = sum(1 << sq for group in CORNER_NEIGHBOURS for sq in group)
BORDER = sum(1 << sq for sq in range(CELLS) if sq % SIZE in (0, 7) or sq // SIZE in (0, 7))
#: border squares that are neither corners nor next to a corner
EDGES = BORDER & ~(CORNERS | NEAR_CORNERS)
NOT_A = 0xFEFEFEFEFEFEFEFE  # shifting toward higher columns must not land on column a
NOT_H = 0x7F7F7F7F7F7F7F7F
EVAL_SCALE = 200.0  # tenths: tanh(sum / 20) of the study's sum


@njit(cache=True, inline="always")
def _neighbours(x):
    """Squares next to any disc of x (8 directions, no wrap between rows)."""
    a, h = np.uint64(NOT_A), np.uint64(NOT_H)
    one, seven, eight, nine = np.uint64(1), np.uint64(7), np.uint64(8), np.uint64(9)
    return (
        ((x << one) & a)
        | ((x >> one) & h)
        | (x << eight)
        | (x >> eight)
        | ((x << nine) & a)
        | ((x >> nine) & h)
        | ((x << seven) & h)
        | ((x >> seven) & a)
    )


@njit(cache=True, inline="always")
def _features(own, opp):
    """The study's weighted sum in tenths for the owner of `own`, before the opponent's is
    subtracted (an exact integer)."""
    empty = ~(own | opp)
    near_free = np.uint64(0)
    for i in range(4):
        if (empty >> np.uint64(CORNER_SQUARES[i])) & np.uint64(1):
            for sq in CORNER_NEIGHBOURS[i]:
                near_free |= np.uint64(1) << np.uint64(sq)
    return (
        40 * popcount(own & np.uint64(CORNERS))
        - 20 * popcount(own & near_free)
        + 10 * popcount(own & np.uint64(EDGES))
        - 2 * popcount(_neighbours(own) & empty)
        + 5 * popcount(own)
        + 20 * popcount(mobility(own, opp))
    )


@njit(cache=True)
def evaluate(s, player):
    """The study's heuristic for `player`, squashed into [-1, 1] (a result is exactly +-1, 0)."""
    if s[STATUS] != ONGOING:
        return 0.0 if s[STATUS] == DRAW else (1.0 if s[STATUS] == player else -1.0)
    own = np.uint64(s[player])
    opp = np.uint64(s[1 - player])
    return np.tanh((_features(own, opp) - _features(opp, own)) / EVAL_SCALE)


# ---- end of heuristic evaluation ---------------------------------------------------------------


KERNELS = KernelSet.collect(globals())


def square_name(action: int) -> str:
    """`d3` for a square, `pass` for 64."""
    if action == PASS:
        return "pass"
    return f"{COLUMNS[action % SIZE]}{action // SIZE + 1}"


def parse_square(token: str) -> int:
    """`d3`, `pass` or a plain integer 0-64 as an action."""
    word = token.strip().lower()
    if word == "pass":
        return PASS
    if re.fullmatch(r"[a-h][1-8]", word):
        return (int(word[1]) - 1) * SIZE + COLUMNS.index(word[0])
    if re.fullmatch(r"\d+", word) and int(word) <= PASS:
        return int(word)
    raise GameError(f"othello: bad move {token!r}; expected a square a1-h8, 'pass' or 0-64")


_DISC = {"x": 0, "b": 0, "o": 1, "w": 1, ".": -1, "-": -1}


def diagram_config(text: str, to_move: int = 0) -> np.ndarray:
    """The `init` config of a position drawn as 8 rows of 8 cells (row 1 first).

    Cells: X/B black, O/W white, ./- empty; spaces are ignored. Lets users and tests start from
    any position without replaying a game to reach it.
    """
    rows = [row.replace(" ", "") for row in text.strip().splitlines() if row.strip()]
    if len(rows) != SIZE or any(len(row) != SIZE for row in rows):
        raise GameError(f"othello: a diagram is 8 rows of 8 cells, got {rows!r}")
    if to_move not in (0, 1):
        raise GameError(f"othello: to_move is 0 (black) or 1 (white), got {to_move!r}")
    boards = [0, 0]
    for r, row in enumerate(rows):
        for c, cell in enumerate(row.lower()):
            if cell not in _DISC:
                raise GameError(f"othello: bad cell {cell!r} in diagram row {r + 1}")
            if _DISC[cell] >= 0:
                boards[_DISC[cell]] |= 1 << (r * SIZE + c)
    signed = [b - ALL64 - 1 if b >= 1 << 63 else b for b in boards]
    return np.array([signed[0], signed[1], to_move], dtype=np.int64)


def state_from_diagram(text: str, to_move: int = 0) -> np.ndarray:
    """A kernel state array for a drawn position (see `diagram_config`)."""
    return init(diagram_config(text, to_move))


def disc_owner(s: np.ndarray, square: int) -> int:
    """0 black, 1 white, -1 empty."""
    for player in (BLACK, WHITE):
        if (int(s[player]) >> square) & 1:
            return player
    return -1


@register
class Othello(Game):
    """Two players place discs and turn the opponent's discs they enclose; most discs wins."""

    name = "othello"
    openspiel_name = "othello"
    kind = "duel"
    neutral_action = NEUTRAL
    evaluate = staticmethod(evaluate)  # numba dispatchers bind as methods otherwise
    default_opponent = "alphabeta:ms=1000"
    grid_style: ClassVar[dict[str, Any]] = {
        "cell": "square", "background": "#1e6b3a", "empty": "#2f8a4f",
        "pieces": {"X": {"color": "#111", "disc": True, "name": "black"},
                   "O": {"color": "#fff", "disc": True, "name": "white"}},
    }  # fmt: skip

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        self.num_players = 2
        self.teams = (0, 1)
        self.num_actions = CELLS + 1
        self.observation_shape = (3, SIZE, SIZE)
        # 60 placements at most, and every pass is followed by a placement
        self.max_game_length = 2 * (CELLS - 4)

    def initial_config(self, rng: np.random.Generator, **scenario) -> np.ndarray:
        if scenario:
            raise GameError(f"othello: unknown scenario option(s) {sorted(scenario)}")
        return np.array([START_BLACK, START_WHITE, 0], dtype=np.int64)

    def render(self, s: np.ndarray) -> str:
        """X black, O white, * a legal square of the player to move."""
        legal = int(s[LEGAL]) if s[STATUS] == ONGOING else 0
        rows = ["  " + " ".join(COLUMNS)]
        for r in range(SIZE):
            cells = []
            for c in range(SIZE):
                square = r * SIZE + c
                owner = disc_owner(s, square)
                cells.append("XO"[owner] if owner >= 0 else "*" if (legal >> square) & 1 else ".")
            rows.append(f"{r + 1} " + " ".join(cells))
        black, white = ((int(s[p]) & ALL64).bit_count() for p in (BLACK, WHITE))
        status = int(s[STATUS])
        if status == ONGOING:
            side = "XO"[int(s[TO_MOVE])]
            line = f"{side} to move" + (" (must pass)" if legal == 0 else "")
        else:
            line = "draw" if status == DRAW else f"{'XO'[status]} wins"
        rows.append(f"{line}   X {black} - O {white}")
        return "\n".join(rows)

    def action_to_string(self, player: int, action: int) -> str:
        return square_name(action) if player != CHANCE else str(action)

    def grid(self, s: np.ndarray) -> list[str]:
        owners = [disc_owner(s, square) for square in range(SIZE * SIZE)]
        return [
            "".join("XO"[o] if o >= 0 else "." for o in owners[r * SIZE : (r + 1) * SIZE])
            for r in range(SIZE)
        ]

    def move_cells(self, action: int) -> tuple[tuple[int, int], ...]:
        return ((action // SIZE, action % SIZE),) if 0 <= action < SIZE * SIZE else ()

    def parse_moves(self, text: str) -> list[int]:
        """Space/comma separated `d3`, `pass` or integers; also a run like `f5d6c3`."""
        actions = []
        for token in filter(None, re.split(r"[\s,]+", text.strip())):
            if re.fullmatch(r"([a-hA-H][1-8]){2,}", token):
                actions.extend(parse_square(token[i : i + 2]) for i in range(0, len(token), 2))
            else:
                actions.append(parse_square(token))
        return actions

    def format_moves(self, actions) -> str:
        return " ".join(square_name(int(a)) for a in actions)

    def player_name(self, player: int) -> str:
        return ("black", "white")[player] if player in (0, 1) else super().player_name(player)

    def illegal_reason(self, s: np.ndarray, action: int, player: int) -> str | None:
        if int(s[LEGAL]) == 0:
            return f"{self.player_name(player)} has no move and must pass"
        if action == PASS:
            return "passing is allowed only when no move is legal"
        if disc_owner(s, action) >= 0:
            return f"{square_name(action)} is taken"
        return "it flips nothing"


# ---- data hooks (features/encode.py, features/symmetry.py) -------------------------------------
def _board_codes(self, states: np.ndarray) -> np.ndarray:
    """Board codes of a batch of states [n, 6] as [n, 8, 8] int8 (row 1 first): 0 empty,
    1 black (player 0), 2 white (player 1)."""
    states = np.atleast_2d(np.asarray(states, dtype=np.int64))
    squares = np.arange(CELLS, dtype=np.int64)
    black = (states[:, BLACK, None] >> squares) & 1
    white = (states[:, WHITE, None] >> squares) & 1
    return (black + 2 * white).astype(np.int8).reshape(len(states), SIZE, SIZE)


def _symmetries(self) -> list[tuple[np.ndarray, np.ndarray]]:
    """The 8 symmetries of the square (identity first) as (observation, action) gather
    permutations; the pass stays the pass."""
    grid = np.arange(CELLS).reshape(SIZE, SIZE)
    found = []
    for flipped in (grid, grid.T):
        for turns in range(4):
            cells = np.rot90(flipped, turns).ravel()
            observation = np.concatenate([cells + k * CELLS for k in range(3)])
            found.append((observation, np.append(cells, PASS)))
    return found


Othello.board_codes = _board_codes
Othello.symmetries = _symmetries
Othello.action_cells = (1, 1)  # square a1..h8 = its cell, then the pass
# ---- end of data hooks -------------------------------------------------------------------------
