"""Tactics kernels that list the legal targets of each card in the acting unit's hand.

Each writer appends `cell * IDS + id` actions to `out` from index n and returns the new count.
Who may be targeted (a choice the study leaves open, see the package docstring): attacks aim
at enemy units or walls, support cards at allied units (the caster included), Swap at any other
unit; area cards name a direction (the adjacent cell) or the caster's own cell.
"""

from __future__ import annotations

from numba import njit

from engine.games.tactics.layout import (
    ARMOR,
    BOARD,
    BOOST,
    BOW,
    CELL,
    CELLS,
    CHAIN,
    COMBINE,
    DRAWING,
    DUST,
    DUST_SPARK,
    END_TURN,
    FACTION,
    FAST_HEAL,
    GROUND,
    HAND,
    IDS,
    MOVE,
    MOVE_OFFSETS,
    NUM_RECIPES,
    NUM_UNITS,
    RECIPE_TABLE,
    SHATTER,
    SHATTER_RADIUS2,
    SHIELD,
    SIZE,
    SLOW_HEAL,
    SPARK,
    SPARK_DIVE,
    SPARK_RADIUS2,
    SPEAR,
    SWAP,
    SWORD,
    WALLS,
    WEAK_SPARK,
    WEAK_SPARK_RADIUS2,
    bit,
    clear_line,
    dist2,
    faction_of,
    is_alive,
    occupant,
    offset_cell,
    step,
    unit_base,
)

# who a single-target card may aim at
ENEMY_OR_WALL, ALLY, ENEMY, OTHER_UNIT = 0, 1, 2, 3


@njit(cache=True, inline="always")
def _emit(out, n, cell, card):
    out[n] = cell * IDS + card
    return n + 1


@njit(cache=True)
def _moves(s, here, out, n):
    for k in range(MOVE_OFFSETS.shape[0]):
        cell = offset_cell(here, MOVE_OFFSETS[k, 0], MOVE_OFFSETS[k, 1])
        if cell >= 0 and s[BOARD + cell] == 0:
            n = _emit(out, n, cell, MOVE)
    return n


@njit(cache=True)
def _directions(s, here, card, out, n, need_free):
    """The four orthogonal neighbours on the board (free ones only for Ground)."""
    for d in range(4):
        cell = step(here, d)
        if cell >= 0 and (not need_free or s[BOARD + cell] == 0):
            n = _emit(out, n, cell, card)
    return n


@njit(cache=True)
def _in_reach(s, here, cell, radius2, sight):
    if radius2 > 0 and dist2(here, cell) > radius2:
        return False
    return not sight or clear_line(s, here, cell)


@njit(cache=True)
def _units(s, me, card, who, radius2, sight, out, n):
    """Single targets among units (and walls for ENEMY_OR_WALL), within a range and sight."""
    here = s[unit_base(me) + CELL]
    mine = faction_of(s, me)
    for j in range(s[NUM_UNITS]):
        if not is_alive(s, j):
            continue
        same = faction_of(s, j) == mine
        if who == ALLY and not same:
            continue
        if (who == ENEMY or who == ENEMY_OR_WALL) and same:
            continue
        if who == OTHER_UNIT and j == me:
            continue
        cell = s[unit_base(j) + CELL]
        if _in_reach(s, here, cell, radius2, sight):
            n = _emit(out, n, cell, card)
    if who == ENEMY_OR_WALL and s[WALLS] > 0:
        for cell in range(CELLS):
            if s[BOARD + cell] < 0 and _in_reach(s, here, cell, radius2, sight):
                n = _emit(out, n, cell, card)
    return n


@njit(cache=True)
def _dive_landings(s, me, out, n):
    """Free cells orthogonally next to an enemy unit, each once."""
    mine = faction_of(s, me)
    for j in range(s[NUM_UNITS]):
        if not is_alive(s, j) or faction_of(s, j) == mine:
            continue
        for d in range(4):
            cell = step(s[unit_base(j) + CELL], d)
            if cell < 0 or s[BOARD + cell] != 0:
                continue
            seen = False  # listed already through an enemy with a lower index?
            for e in range(4):
                other = step(cell, e)
                if other >= 0:
                    k = occupant(s, other)
                    if 0 <= k < j and faction_of(s, k) != mine:
                        seen = True
            if not seen:
                n = _emit(out, n, cell, SPARK_DIVE)
    return n


@njit(cache=True)
def enemy_next_to(s, me, cell):
    """True when an enemy of unit `me` stands orthogonally next to `cell`."""
    mine = faction_of(s, me)
    for d in range(4):
        other = step(cell, d)
        if other >= 0:
            k = occupant(s, other)
            if k >= 0 and faction_of(s, k) != mine:
                return True
    return False


@njit(cache=True)
def card_targets(s, me, card, out, n):
    """The legal actions of one card held by unit `me`."""
    here = s[unit_base(me) + CELL]
    if card == MOVE:
        return _moves(s, here, out, n)
    if card == SWORD or card == SPEAR:
        return _directions(s, here, card, out, n, False)
    if card == GROUND:
        return _directions(s, here, card, out, n, True)
    if card == BOW:
        return _units(s, me, card, ENEMY_OR_WALL, 0, True, out, n)
    if card == SPARK:
        return _units(s, me, card, ENEMY_OR_WALL, SPARK_RADIUS2, False, out, n)
    if card == WEAK_SPARK:
        return _units(s, me, card, ENEMY_OR_WALL, WEAK_SPARK_RADIUS2, True, out, n)
    if card == SHATTER:
        return _units(s, me, card, ENEMY_OR_WALL, SHATTER_RADIUS2, False, out, n)
    if card == SLOW_HEAL or card == SHIELD or card == BOOST or card == ARMOR:
        return _units(s, me, card, ALLY, 0, False, out, n)
    if card == CHAIN:
        return _units(s, me, card, ENEMY, 0, False, out, n)
    if card == SWAP:
        return _units(s, me, card, OTHER_UNIT, 0, False, out, n)
    if card == SPARK_DIVE:
        return _dive_landings(s, me, out, n)
    if card == DRAWING or card == DUST or card == DUST_SPARK or card == FAST_HEAL:
        return _emit(out, n, here, card)
    return n


@njit(cache=True)
def combinations(s, me, out, n):
    """Combine Actions: its cell is (first ingredient, second ingredient); both must be in hand
    and the result not."""
    hand = s[unit_base(me) + HAND]
    for k in range(NUM_RECIPES):
        a, b, result = RECIPE_TABLE[k, 0], RECIPE_TABLE[k, 1], RECIPE_TABLE[k, 2]
        if (hand & bit(a)) and (hand & bit(b)) and not (hand & bit(result)):
            n = _emit(out, n, a * SIZE + b, COMBINE)
    return n


@njit(cache=True)
def unit_actions(s, me, out):
    """Every legal action of unit `me`: its cards' targets, combinations, then End Turn."""
    b = unit_base(me)
    hand = s[b + HAND]
    n = 0
    for card in range(IDS):
        if hand & bit(card):
            n = card_targets(s, me, card, out, n)
    n = combinations(s, me, out, n)
    return _emit(out, n, s[b + CELL], END_TURN)


@njit(cache=True)
def same_side(s, a, b):
    return s[unit_base(a) + FACTION] == s[unit_base(b) + FACTION]
