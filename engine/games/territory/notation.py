"""Territory's move notation: the names `action_to_string` writes, read back.

A move is `produce (r,c)` or `(r,c)->(r,c) xN` (N troops sent to the neighbouring tile, an
attack or a transport as the target's owner makes it); `(r,c)->off-map D xN` names an id that
points off the map (never legal, still named). Names carry spaces and commas, so a history is
read by matching whole moves rather than by splitting: moves and plain action ids may be
separated by spaces, commas or semicolons, and `format_moves` writes them separated by `; `.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.games.territory.rules import (
    DC,
    DIRECTION_NAMES,
    DR,
    IDS,
    MAX_TROOPS,
    PRODUCE,
    neighbour,
)
from engine.protocol import GameError

HINT = "write produce (r,c), (r,c)->(r,c) xN or an action id"
_TILE = r"\(\s*(\d+)\s*,\s*(\d+)\s*\)"
_MOVE = re.compile(
    rf"produce\s*{_TILE}"
    rf"|{_TILE}\s*->\s*(?:{_TILE}|off-map\s+({'|'.join(DIRECTION_NAMES)}))\s*x\s*(\d+)"
    r"|(\d+)(?![\w(])",
    re.IGNORECASE,
)
_SEPARATORS = re.compile(r"[\s,;]*")


def tile_name(tile: int, size: int) -> str:
    return f"({tile // size},{tile % size})"


def action_name(action: int, size: int) -> str:
    tile, idx = divmod(int(action), IDS)
    if not 0 <= tile < size * size:
        return str(action)
    if idx == PRODUCE:
        return f"produce {tile_name(tile, size)}"
    d, sent = divmod(idx - 1, MAX_TROOPS)
    target = int(neighbour(tile, d, size))
    where = tile_name(target, size) if target >= 0 else f"off-map {DIRECTION_NAMES[d]}"
    return f"{tile_name(tile, size)}->{where} x{sent + 1}"


def format_moves(actions: Iterable[int], size: int) -> str:
    return "; ".join(action_name(int(a), size) for a in actions)


def parse_moves(text: str, size: int) -> list[int]:
    """Every move in `text`, in order; one clear GameError naming the first unreadable part."""
    actions, at = [], _SEPARATORS.match(text).end()
    while at < len(text):
        found = _MOVE.match(text, at)
        if found is None:
            bad = text[at:].split(";")[0].strip()[:40]
            raise GameError(f"territory: cannot read {bad!r} as a move; {HINT}")
        actions.append(_action(found, size))
        at = _SEPARATORS.match(text, found.end()).end()
    return actions


def _action(found: re.Match, size: int) -> int:
    text = found.group(0)
    pr, pc, fr, fc, tr, tc, off, count, number = found.groups()
    if number is not None:
        action = int(number)
        if action >= size * size * IDS:
            raise GameError(f"territory: action id {action} is not below {size * size * IDS}")
        return action
    if pr is not None:
        return _tile(pr, pc, size, text) * IDS + PRODUCE
    origin = _tile(fr, fc, size, text)
    sent = int(count)
    if not 1 <= sent <= MAX_TROOPS:
        raise GameError(f"territory: {text!r} sends {sent} troops; a move sends 1 to {MAX_TROOPS}")
    if off is not None:
        d = [name.lower() for name in DIRECTION_NAMES].index(off.lower())
    else:
        dr, dc = int(tr) - origin // size, int(tc) - origin % size
        steps = list(zip(DR, DC, strict=True))
        if (dr, dc) not in steps:
            raise GameError(f"territory: in {text!r} the two tiles are not neighbours")
        d = steps.index((dr, dc))
        _tile(tr, tc, size, text)
    return origin * IDS + 1 + d * MAX_TROOPS + sent - 1


def _tile(row: str, col: str, size: int, text: str) -> int:
    r, c = int(row), int(col)
    if r >= size or c >= size:
        raise GameError(f"territory: tile ({r},{c}) in {text!r} is off the {size}x{size} map")
    return r * size + c
