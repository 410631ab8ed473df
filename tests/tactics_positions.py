"""Hand-made tactics positions for the tests: units placed by cell, hands dealt, no pending draw."""

from __future__ import annotations

import numpy as np

from engine import load_game
from engine.games.tactics import layout as L
from engine.games.tactics.notation import parse_action
from engine.games.tactics.scenarios import CLASS_BY_LETTER, CLASSES, custom_config
from engine.protocol import State

GAME = load_game("tactics", units=1)


def position(
    units: list[tuple[int, str, str]],
    hands: dict[int, tuple[int, ...]] | None = None,
    walls: tuple[str, ...] = (),
    decks: dict[int, tuple[int, ...]] | None = None,
    max_turns: int = 64,
) -> State:
    """Units (side, class letter, cell) in index order; the first to act has begun its turn
    with exactly the cards in `hands` (Move only when a unit is not named), nothing to draw.
    Decks hold only Move unless `decks` names cards (`class_deck(letter)` for a class's)."""
    decks = {i: (decks or {}).get(i, ()) for i in range(len(units))}
    config = custom_config(units, walls, max_turns, decks)
    s = GAME.kernels.init(config)
    for i in range(len(units)):
        s[L.unit_base(i) + L.HAND] = sum(1 << c for c in (hands or {}).get(i, (L.MOVE,)))
    s[L.PENDING] = 0
    return State(GAME, s, config)


def class_deck(letter: str) -> tuple[int, ...]:
    return CLASSES[CLASS_BY_LETTER[letter]].deck


def unit(state: State, i: int, field: int) -> int:
    return int(state.array[L.unit_base(i) + field])


def hp(state: State, i: int) -> int:
    return unit(state, i, L.HP)


def play(state: State, *tokens: str) -> None:
    for token in tokens:
        state.apply_action(parse_action(token))


def names(state: State) -> set[str]:
    return {state.action_to_string(a) for a in state.legal_actions()}


def act_as(state: State, i: int) -> None:
    """Gives unit i the turn in progress (its place in this round's order)."""
    s = state.array
    order = [int(s[L.ORDER + k]) for k in range(int(s[L.ORDER_LEN]))]
    s[L.CUR] = i
    s[L.ORDER_POS] = order.index(i)


def acting(state: State) -> int:
    return int(state.array[L.CUR])


def set_hand(state: State, i: int, *cards: int) -> None:
    state.array[L.unit_base(i) + L.HAND] = sum(1 << c for c in cards)


def set_field(state: State, i: int, field: int, value: int) -> None:
    state.array[L.unit_base(i) + field] = value


def wall_hp(state: State, cell: str) -> int:
    from engine.games.tactics.scenarios import cell_of

    v = int(state.array[L.BOARD + cell_of(cell)])
    return -v if v < 0 else 0


__all__ = ["GAME", "L", "np", "position"]
