"""Tactics line-ups: unit classes, named presets and seeded random line-ups, always mirrored.

A line-up is a config vector (`layout.CONFIG_UNIT`) the `init` kernel turns into a state. Side 1
is side 0 turned half a circle about the board's centre (cell k -> cell 143 - k) with the same
classes, so the only asymmetry left is the study's speed tie-break in favour of side 0; a
tournament plays every line-up twice with sides swapped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.games.tactics.layout import (
    BOW,
    CELLS,
    COLUMNS,
    DRAWING,
    DUST,
    GROUND,
    MAX_PER_SIDE,
    SIZE,
    SLOW_HEAL,
    SPARK,
    SPEAR,
    SWORD,
    WEAK_SPARK,
)
from engine.protocol import GameError


@dataclass(frozen=True)
class UnitClass:
    name: str
    letter: str
    max_hp: int
    attack: int
    defence: int
    speed: int
    deck: tuple[int, ...]  # Move is in every deck as well

    def deck_bits(self) -> int:
        return sum(1 << card for card in self.deck)


#: the study names no classes; three that between them reach every combination
CLASSES = (
    UnitClass("knight", "K", 14, 1, 1, 2, (SWORD, SPEAR, GROUND, DRAWING, SLOW_HEAL)),
    UnitClass("ranger", "R", 10, 1, 0, 4, (BOW, WEAK_SPARK, DUST, GROUND, DRAWING)),
    UnitClass("mage", "M", 9, 0, 0, 3, (SPARK, WEAK_SPARK, DUST, GROUND, DRAWING, SLOW_HEAL)),
)
CLASS_BY_LETTER = {c.letter: i for i, c in enumerate(CLASSES)}

#: named line-ups of side 0 as (class letter, cell) plus walls on side 0's half; mirrored
PRESETS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "duel": ((("K", "f2"),), ()),
    "trio": ((("K", "f2"), ("R", "e1"), ("M", "g1")), ()),
    "fort": ((("K", "f2"), ("R", "e1"), ("M", "g1")), ("d5", "f5", "i5")),
}
HOME_FIRST_ROW, HOME_ROWS = 0, 3  # random line-ups: side 0 starts in rows 1-3
MAX_WALL_PAIRS = 3  # walls in the rows between side 0's home rows and the middle


def cell_of(name: str) -> int:
    """`e1` -> the cell in column e, row 1 (rows counted from the top)."""
    name = name.strip().lower()
    if len(name) < 2 or name[0] not in COLUMNS or not name[1:].isdigit():
        raise GameError(f"tactics: bad cell {name!r}; cells are a1 .. l12")
    row = int(name[1:]) - 1
    if not 0 <= row < SIZE:
        raise GameError(f"tactics: bad cell {name!r}; cells are a1 .. l12")
    return row * SIZE + COLUMNS.index(name[0])


def mirror(cell: int) -> int:
    return CELLS - 1 - cell


def build_config(
    classes: list[int], cells: list[int], walls: list[int], max_turns: int
) -> np.ndarray:
    """Side 0 as given, side 1 mirrored; walls mirrored too."""
    all_walls = [*walls, *(mirror(c) for c in walls)]
    units = [(0, cell, k) for k, cell in zip(classes, cells, strict=True)]
    units += [(1, mirror(cell), k) for k, cell in zip(classes, cells, strict=True)]
    config = [max_turns, len(units), len(all_walls), *all_walls]
    for faction, cell, k in units:
        c = CLASSES[k]
        config += [faction, cell, k, c.max_hp, c.attack, c.defence, c.speed, c.deck_bits()]
    return np.array(config, dtype=np.int64)


def random_lineup(rng: np.random.Generator, units: int, max_turns: int) -> np.ndarray:
    """`units` random classes on random cells of side 0's home rows, 0-3 wall pairs between."""
    if not 1 <= units <= MAX_PER_SIDE:
        raise GameError(f"tactics: units must be 1..{MAX_PER_SIDE}, got {units}")
    first = HOME_FIRST_ROW * SIZE
    cells = (first + rng.choice(HOME_ROWS * SIZE, size=units, replace=False)).tolist()
    classes = rng.integers(len(CLASSES), size=units).tolist()
    pairs = int(rng.integers(MAX_WALL_PAIRS + 1))
    between = (SIZE // 2 - HOME_FIRST_ROW - HOME_ROWS) * SIZE
    walls = (first + HOME_ROWS * SIZE + rng.choice(between, size=pairs, replace=False)).tolist()
    return build_config(classes, cells, walls, max_turns)


def preset_lineup(name: str, max_turns: int) -> np.ndarray:
    if name not in PRESETS:
        raise GameError(f"tactics: unknown preset {name!r}; known: random, {', '.join(PRESETS)}")
    units, walls = PRESETS[name]
    return build_config(
        [CLASS_BY_LETTER[letter] for letter, _ in units],
        [cell_of(cell) for _, cell in units],
        [cell_of(cell) for cell in walls],
        max_turns,
    )


def custom_config(
    units: list[tuple[int, str, str]],
    walls: tuple[str, ...] = (),
    max_turns: int = 64,
    decks: dict[int, tuple[int, ...]] | None = None,
) -> np.ndarray:
    """A hand-made position, not mirrored: units as (side, class letter, cell), in index order;
    `decks` replaces the class deck of some units (by index). For tests and worked examples."""
    decks = decks or {}
    config = [max_turns, len(units), len(walls), *(cell_of(c) for c in walls)]
    for i, (side, letter, cell) in enumerate(units):
        c = CLASSES[CLASS_BY_LETTER[letter]]
        deck = sum(1 << card for card in decks.get(i, c.deck))
        config += [side, cell_of(cell), CLASS_BY_LETTER[letter]]
        config += [c.max_hp, c.attack, c.defence, c.speed, deck]
    return np.array(config, dtype=np.int64)
