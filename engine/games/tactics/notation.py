"""Tactics notation and the readable board.

An action is written `card@cell` (`sword@f3`, `end@f2`), a combination `combine:move+spark` (its
cell holds the two ingredients), a chance outcome `draw:spark`. Every action id, legal or not,
writes and reads back to itself, so histories round-trip through text.
"""

from __future__ import annotations

import re

import numpy as np

from engine.games.tactics.layout import (
    ALIVE,
    ARMORED,
    BOARD,
    BOOSTED,
    BORROWED,
    BURN,
    CELL,
    CHAIN_TO,
    CHAINED,
    CLASS,
    COLUMNS,
    COMBINE,
    CUR,
    DRAW,
    DRAW_BASE,
    DUSTED,
    FACTION,
    HAND,
    HEALING,
    HP,
    IDS,
    MAX_HP,
    MAX_TURNS,
    NUM_UNITS,
    ONGOING,
    PENDING,
    ROUND,
    SHIELDED,
    SIZE,
    STATUS,
    TURN,
    attack_of,
    defence_of,
    speed_of,
    unit_base,
)
from engine.games.tactics.scenarios import CLASSES, cell_of
from engine.protocol import GameError

CARD_NAMES = {
    0: "move",
    1: "sword",
    2: "bow",
    3: "spear",
    4: "spark",
    5: "ground",
    6: "drawing",
    7: "weakspark",
    8: "dust",
    9: "slowheal",
    11: "chain",
    13: "end",
    14: "combine",
    15: "swap",
    19: "dustspark",
    20: "sparkdive",
    21: "shatter",
    22: "shield",
    23: "boost",
    26: "armor",
    27: "fastheal",
}
NAMES = [CARD_NAMES.get(k, f"id{k}") for k in range(IDS)]
CARD_IDS = {name: k for k, name in enumerate(NAMES)}
STATUS_NAMES = (
    (BURN, "burn"),
    (DUSTED, "dusted"),
    (HEALING, "healing"),
    (CHAINED, "chained"),
    (SHIELDED, "shield"),
    (BOOSTED, "boost"),
    (ARMORED, "armor"),
)
_ROW_RE = re.compile(r"^[a-l](1[0-2]|[1-9])$")


def cell_name(cell: int) -> str:
    return f"{COLUMNS[cell % SIZE]}{cell // SIZE + 1}"


def action_name(action: int) -> str:
    if action >= DRAW_BASE:
        return f"draw:{NAMES[action - DRAW_BASE]}"
    cell, card = divmod(int(action), IDS)
    if card == COMBINE:
        first, second = divmod(cell, SIZE)
        return f"combine:{NAMES[first]}+{NAMES[second]}"
    return f"{NAMES[card]}@{cell_name(cell)}"


def _card(name: str, token: str) -> int:
    if name not in CARD_IDS:
        raise GameError(f"tactics: unknown card {name!r} in {token!r}")
    return CARD_IDS[name]


def parse_action(token: str) -> int:
    """Reads one token: an integer id or the notation `action_name` writes."""
    token = token.strip().lower()
    if re.fullmatch(r"\d+", token):
        value = int(token)
        if value >= DRAW_BASE + IDS:
            raise GameError(f"tactics: action {value} out of range")
        return value
    if token.startswith("draw:"):
        return DRAW_BASE + _card(token[5:], token)
    if token.startswith("combine:"):
        first, plus, second = token[8:].partition("+")
        a, b = _card(first, token), _card(second, token)
        if not plus or a >= SIZE or b >= SIZE:
            raise GameError(f"tactics: bad combination {token!r}")
        return (a * SIZE + b) * IDS + COMBINE
    name, at, where = token.partition("@")
    if not at or not _ROW_RE.match(where):
        raise GameError(f"tactics: bad action {token!r}; write card@cell, e.g. sword@f3")
    return cell_of(where) * IDS + _card(name, token)


def parse_moves(text: str) -> list[int]:
    return [parse_action(t) for t in re.split(r"[\s,]+", text.strip()) if t]


def format_moves(actions) -> str:
    return " ".join(action_name(int(a)) for a in actions)


def unit_symbol(s: np.ndarray, i: int) -> str:
    letter = CLASSES[int(s[unit_base(i) + CLASS])].letter
    return letter if s[unit_base(i) + FACTION] == 0 else letter.lower()


def grid(s: np.ndarray) -> list[str]:
    """The board for pictures: `.` free, `#` wall, units by class letter (side 0 upper case)."""
    rows = []
    for r in range(SIZE):
        line = ""
        for c in range(SIZE):
            v = int(s[BOARD + r * SIZE + c])
            line += "#" if v < 0 else unit_symbol(s, v - 1) if v > 0 else "."
        rows.append(line)
    return rows


def grid_labels(s: np.ndarray) -> list[list[str]]:
    """Health on each unit and wall, `*` on the unit whose turn it is."""
    acting = int(s[CUR]) if s[STATUS] == ONGOING else -1
    labels = []
    for r in range(SIZE):
        row = []
        for c in range(SIZE):
            v = int(s[BOARD + r * SIZE + c])
            text = str(-v) if v < 0 else str(int(s[unit_base(v - 1) + HP])) if v > 0 else ""
            row.append(text + ("*" if v > 0 and v - 1 == acting else ""))
        labels.append(row)
    return labels


def render(s: np.ndarray) -> str:
    """The grid (side 0 upper case, side 1 lower case, # walls, * the acting unit), one line
    per living unit, and whose turn it is."""
    rows = ["    " + " ".join(COLUMNS)]
    acting = int(s[CUR]) if s[STATUS] == ONGOING else -1
    for r in range(SIZE):
        cells = []
        for c in range(SIZE):
            v = int(s[BOARD + r * SIZE + c])
            if v < 0:
                cells.append("#")
            elif v > 0:
                cells.append(unit_symbol(s, v - 1))
            else:
                cells.append(".")
        mark = ""
        if acting >= 0 and s[unit_base(acting) + CELL] // SIZE == r:
            mark = f"  <- {unit_symbol(s, acting)} acts"
        rows.append(f"{r + 1:>3} " + " ".join(cells) + mark)
    for i in range(int(s[NUM_UNITS])):
        b = unit_base(i)
        if not s[b + ALIVE]:
            continue
        statuses = [f"{name} {int(s[b + f])}" for f, name in STATUS_NAMES if s[b + f] > 0]
        if s[b + CHAINED] > 0:
            statuses.append(f"to {cell_name(int(s[unit_base(int(s[b + CHAIN_TO])) + CELL]))}")
        if s[b + BORROWED] > 0:
            statuses.append(f"borrowed {int(s[b + BORROWED])}")
        hand = [NAMES[k] for k in range(IDS) if int(s[b + HAND]) >> k & 1]
        rows.append(
            f"{'*' if i == acting else ' '}{unit_symbol(s, i)} {cell_name(int(s[b + CELL])):>3} "
            f"hp {int(s[b + HP])}/{int(s[b + MAX_HP])} atk {attack_of(s, i)} "
            f"def {defence_of(s, i)} spd {speed_of(s, i)}"
            + (f" [{', '.join(statuses)}]" if statuses else "")
            + f" hand: {' '.join(hand) or '-'}"
        )
    turn = f"turn {int(s[TURN])}/{int(s[MAX_TURNS])}, round {int(s[ROUND])}"
    status = int(s[STATUS])
    if status == ONGOING:
        who = f"side {int(s[unit_base(acting) + FACTION])} ({unit_symbol(s, acting)})"
        rows.append(f"{turn}: {who} " + ("draws a card" if s[PENDING] else "to act"))
    else:
        rows.append(f"{turn}: " + ("draw" if status == DRAW else f"side {status} wins"))
    return "\n".join(rows)
