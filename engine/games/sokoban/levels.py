"""Sokoban levels: the shipped boards by name, level files by path, and the text format's
parser (every problem a GameError as `source:line:column: message`). The rules and kernels
live in engine.games.sokoban.rules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.games.sokoban.rules import (
    BOX,
    EXIT,
    H_,
    HEADER,
    HOLE,
    LIMIT,
    MAX_PLAYERS,
    MAX_SIZE,
    NP_,
    NUM_PLANES,
    ONGOING,
    PLAYERS,
    STATUS,
    W_,
    WALL,
    init,
)
from engine.protocol import GameError

#: the shipped levels (package data: engine/boards/**/*.txt)
BOARDS = Path(__file__).resolve().parents[2] / "boards" / "sokoban"


@dataclass(frozen=True)
class Level:
    """A parsed level: its name, where it came from and the state array before analysis."""

    name: str
    source: str
    width: int
    height: int
    num_players: int
    limit: int
    config: np.ndarray


def level_names() -> list[str]:
    """The shipped levels, by file stem."""
    return sorted(p.stem for p in BOARDS.glob("*.txt"))


def load_level(spec: str) -> Level:
    """A shipped level by name, or a level file by path (anything with a slash or `.txt`)."""
    if "/" in spec or "\\" in spec or spec.endswith(".txt"):
        path = Path(spec)
    else:
        if spec not in level_names():  # never a path built from arbitrary text
            raise GameError(f"sokoban: unknown level {spec!r}; shipped: {', '.join(level_names())}")
        path = BOARDS / f"{spec}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise GameError(f"sokoban: cannot read level {str(path)!r}: {error}") from None
    return parse_level(text, str(path), path.stem)


def parse_level(text: str, source: str = "<level>", name: str = "level") -> Level:
    """Parses level text; every problem raises GameError as `source:line:column: message`."""
    meta: dict[str, tuple[str, int, int]] = {}
    grid: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            key, colon, value = line[1:].partition(":")
            if colon and key.strip():
                column = len(line) - len(value.lstrip()) + 1
                meta[key.strip().lower()] = (value.strip(), number, column)
        else:
            grid.append((number, line))
    while grid and not grid[0][1].strip():
        grid.pop(0)
    while grid and not grid[-1][1].strip():
        grid.pop()
    if not grid:
        raise GameError(f"{source}: empty level (no tile lines)")
    if len(grid) > MAX_SIZE:
        raise GameError(f"{source}:{grid[MAX_SIZE][0]}:1: more than {MAX_SIZE} rows")
    for number, line in grid:  # before any bit mask is built from the width
        if len(line) > MAX_SIZE:
            raise GameError(f"{source}:{number}:{MAX_SIZE + 1}: more than {MAX_SIZE} columns")
    height, width = len(grid), max(len(line) for _, line in grid)
    walls, boxes, holes, exits = (np.zeros(height, dtype=np.int64) for _ in range(4))
    players: list[int] = []
    for r, (number, line) in enumerate(grid):
        walls[r] |= ((1 << width) - 1) & ~((1 << len(line)) - 1)
        for c, ch in enumerate(line):
            if ch not in "w pbhe":
                raise GameError(
                    f"{source}:{number}:{c + 1}: unknown tile {ch!r}; tiles: w wall, space "
                    "floor, p player, b box, h hole, e exit"
                )
            plane = {"w": walls, "b": boxes, "h": holes, "e": exits}.get(ch)
            if plane is not None:
                plane[r] |= 1 << c
            if ch == "p":
                if len(players) == MAX_PLAYERS:
                    raise GameError(f"{source}:{number}:{c + 1}: more than {MAX_PLAYERS} players")
                players.append(r * width + c)
    if not players:
        raise GameError(f"{source}: no player (tile 'p')")
    num_exits = sum(bin(int(x)).count("1") for x in exits)
    if num_exits < len(players):
        raise GameError(f"{source}: {num_exits} exit(s) (tile 'e') for {len(players)} player(s)")
    open_tiles = height * width - sum(bin(int(x)).count("1") for x in walls)
    limit = 4 * open_tiles
    if "limit" in meta:
        value, number, column = meta["limit"]
        if not re.fullmatch(r"[1-9][0-9]{0,5}", value):
            message = "limit must be a positive integer (below a million)"
            raise GameError(f"{source}:{number}:{column}: {message}")
        limit = int(value)
    config = np.zeros(HEADER + NUM_PLANES * height, dtype=np.int64)
    config[[W_, H_, NP_, LIMIT]] = width, height, len(players), limit
    config[PLAYERS : PLAYERS + len(players)] = players
    for k, plane in ((WALL, walls), (BOX, boxes), (HOLE, holes), (EXIT, exits)):
        config[HEADER + k * height : HEADER + (k + 1) * height] = plane
    if init(config)[STATUS] != ONGOING:
        raise GameError(
            f"{source}: lost from the start: some player can never reach an exit "
            "(walls, stuck boxes or holes no box can fill are in the way)"
        )
    title = meta.get("name", (name, 0, 0))[0] or name
    return Level(title, source, width, height, len(players), limit, config)
