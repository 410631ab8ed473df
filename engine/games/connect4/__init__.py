"""Connect 4 on a 7x6 board with bitboards.

Bit layout (board.py): column c owns bits 7c … 7c+5 (bottom to top) and a sentinel bit 7c+6,
so a move is `mask + bottom(c)` and four in a row is four shifted ANDs. State array:
  s[0] stones of the side to move   s[1] all stones   s[2] moves played
  s[3] status: -1 ongoing, 0/1 winner, 2 draw
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from engine.kernel_cache import stamp_package

stamp_package(__path__[0])  # the rules and the solver's kernels: one cache stamp for both

from engine.bits import popcount  # noqa: E402
from engine.games.connect4.board import CELLS, HEIGHT, STRIDE, WIDTH, bottom, is_four, top  # noqa: E402
from engine.games.connect4.solver import ExactSolver  # noqa: E402
from engine.protocol import CHANCE, TERMINAL, Game, GameError, KernelSet  # noqa: E402
from engine.registry import register  # noqa: E402

ONGOING, DRAW = -1, 2
POSITION, MASK, MOVES, STATUS = 0, 1, 2, 3
NEUTRAL = -1


@njit(cache=True)
def init(config):
    s = np.zeros(4, dtype=np.int64)
    s[STATUS] = ONGOING
    return s


@njit(cache=True)
def current_player(s):
    if s[STATUS] != ONGOING:
        return TERMINAL
    return s[MOVES] & 1


@njit(cache=True)
def legal_actions(s, player, out):
    if s[STATUS] != ONGOING or player != (s[MOVES] & 1):
        return 0
    n = 0
    for c in range(WIDTH):
        if (s[MASK] & top(c)) == 0:
            out[n] = c
            n += 1
    return n


@njit(cache=True)
def chance_probability(s, action):
    return 0.0


@njit(cache=True)
def apply_action(s, action):
    mover = s[MOVES] & 1
    s[POSITION] ^= s[MASK]
    s[MASK] |= s[MASK] + bottom(action)
    s[MOVES] += 1
    if is_four(s[POSITION] ^ s[MASK]):
        s[STATUS] = mover
    elif s[MOVES] == CELLS:
        s[STATUS] = DRAW


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
    """Two 6x7 planes (row 0 = top): the player's stones, then the opponent's."""
    own = s[POSITION] if (s[MOVES] & 1) == player else s[POSITION] ^ s[MASK]
    other = own ^ s[MASK]
    for c in range(WIDTH):
        for r in range(HEIGHT):
            bit = np.int64(1) << (c * STRIDE + r)
            cell = (HEIGHT - 1 - r) * WIDTH + c
            out[cell] = 1.0 if own & bit else 0.0
            out[CELLS + cell] = 1.0 if other & bit else 0.0


@njit(cache=True)
def cell_owner(s, c, r):
    """0 / 1 for the player whose stone is at column c, row r (0 = bottom); -1 if empty."""
    bit = np.int64(1) << (c * STRIDE + r)
    if (s[MASK] & bit) == 0:
        return -1
    to_move = s[MOVES] & 1
    return to_move if s[POSITION] & bit else 1 - to_move


# ---- heuristic evaluation (agents: alphabeta, simab) -------------------------------------------
#: the 42 playable bits (sentinel bits excluded)
PLAYABLE = sum(0x3F << (STRIDE * c) for c in range(WIDTH))


@njit(cache=True, inline="always")
def _open_windows(own, empty, d):
    """(# windows with exactly 3, # with exactly 2 of `own`'s stones, the rest empty) along d.

    A window is four cells b, b+d, b+2d, b+3d; the sentinel bits are never set, so windows
    that would wrap around the board are never open. Counting is bit-sliced: one add per bit.
    """
    a = own | empty
    avail = a & (a >> d) & (a >> (2 * d)) & (a >> (3 * d))
    p1, p2, p3 = own >> d, own >> (2 * d), own >> (3 * d)
    x, cx = own ^ p1, own & p1
    y, cy = p2 ^ p3, p2 & p3
    bit0 = x ^ y
    bit1 = cx ^ cy ^ (x & y)
    bit2 = cx & cy
    three = avail & bit0 & bit1 & ~bit2
    two = avail & ~bit0 & bit1 & ~bit2
    return popcount(three), popcount(two)


@njit(cache=True)
def evaluate(s, player):
    """Threat counting for `player` in [-1, 1]: open 3- and 2-windows, own minus opponent's."""
    if s[STATUS] != ONGOING:
        return 0.0 if s[STATUS] == DRAW else (1.0 if s[STATUS] == player else -1.0)
    own = s[POSITION] if (s[MOVES] & 1) == player else s[POSITION] ^ s[MASK]
    other = own ^ s[MASK]
    empty = np.int64(PLAYABLE) & ~s[MASK]
    raw = 0.0
    for d in (1, STRIDE - 1, STRIDE, STRIDE + 1):
        mine3, mine2 = _open_windows(own, empty, d)
        theirs3, theirs2 = _open_windows(other, empty, d)
        raw += (mine3 - theirs3) + 0.25 * (mine2 - theirs2)
    return np.tanh(raw / 6.0)


# ---- end of heuristic evaluation ---------------------------------------------------------------


KERNELS = KernelSet.collect(globals())


@register
class Connect4(Game):
    """Two players drop stones into 7 columns; four in a row wins."""

    name = "connect4"
    openspiel_name = "connect_four"
    kind = "duel"
    neutral_action = NEUTRAL
    evaluate = staticmethod(evaluate)  # numba dispatchers bind as methods otherwise
    exact_solver = ExactSolver  # the solver's optimal move within a time budget (`exact=`)
    default_opponent = "alphabeta:ms=1000"
    grid_style: ClassVar[dict[str, Any]] = {
        "cell": "round", "background": "#234", "empty": "#f4f6f8",
        "pieces": {"X": {"color": "#d1242f", "disc": True, "name": "X"},
                   "O": {"color": "#d4a72c", "disc": True, "name": "O"}},
    }  # fmt: skip

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        self.num_players = 2
        self.teams = (0, 1)
        self.num_actions = WIDTH
        self.observation_shape = (2, HEIGHT, WIDTH)
        self.max_game_length = CELLS

    def render(self, s: np.ndarray) -> str:
        symbols = {-1: ".", 0: "X", 1: "O"}
        rows = [
            " ".join(symbols[int(cell_owner(s, c, r))] for c in range(WIDTH))
            for r in range(HEIGHT - 1, -1, -1)
        ]
        rows.append(" ".join(str(c + 1) for c in range(WIDTH)))
        status = int(s[STATUS])
        if status == ONGOING:
            rows.append(f"{'XO'[int(s[MOVES]) & 1]} to move")
        else:
            rows.append("draw" if status == DRAW else f"{'XO'[status]} wins")
        return "\n".join(rows)

    def action_to_string(self, player: int, action: int) -> str:
        return str(action + 1) if player != CHANCE else str(action)

    def grid(self, s: np.ndarray) -> list[str]:
        symbols = {-1: ".", 0: "X", 1: "O"}
        return [
            "".join(symbols[int(cell_owner(s, c, r))] for c in range(WIDTH))
            for r in range(HEIGHT - 1, -1, -1)
        ]

    def move_cells(self, action: int) -> tuple[tuple[int, int], ...]:
        return tuple((r, action) for r in range(HEIGHT)) if 0 <= action < WIDTH else ()

    def parse_moves(self, text: str) -> list[int]:
        """Common notation: one digit 1-7 per move, e.g. `4453`."""
        text = "".join(text.split())
        if any(ch not in "1234567" for ch in text):
            raise GameError(f"connect4: moves are digits 1-7, got {text!r}")
        return [int(ch) - 1 for ch in text]

    def format_moves(self, actions) -> str:
        return "".join(str(a + 1) for a in actions)

    def player_name(self, player: int) -> str:
        return "XO"[player] if player in (0, 1) else super().player_name(player)

    def illegal_reason(self, s: np.ndarray, action: int, player: int) -> str | None:
        return f"column {action + 1} is full"  # the only way a column 1-7 can be refused


# ---- data hooks (features/encode.py, features/symmetry.py) -------------------------------------
def _board_codes(self, states: np.ndarray) -> np.ndarray:
    """Board codes of a batch of states [n, 4] as [n, 6, 7] int8 (row 0 = top, as the
    observation): 0 empty, 1 a stone of player 0, 2 of player 1."""
    states = np.atleast_2d(np.asarray(states, dtype=np.int64))
    to_move = states[:, POSITION]
    first = np.where((states[:, MOVES] & 1) == 0, to_move, to_move ^ states[:, MASK])
    second = first ^ states[:, MASK]
    codes = np.zeros((len(states), HEIGHT, WIDTH), dtype=np.int8)
    for c in range(WIDTH):
        for r in range(HEIGHT):
            bit = c * STRIDE + r
            codes[:, HEIGHT - 1 - r, c] = ((first >> bit) & 1) + 2 * ((second >> bit) & 1)
    return codes


def _symmetries(self) -> list[tuple[np.ndarray, np.ndarray]]:
    """Identity and the left-right mirror, as (observation, action) gather permutations."""
    cells = np.arange(2 * CELLS).reshape(2, HEIGHT, WIDTH)
    columns = np.arange(WIDTH)
    return [(cells.ravel(), columns), (cells[:, :, ::-1].ravel(), columns[::-1].copy())]


Connect4.board_codes = _board_codes
Connect4.symmetries = _symmetries
Connect4.sequence_length = 20  # the study's window: at most 21 rounds, targets shifted by one
# ---- end of data hooks -------------------------------------------------------------------------
