"""Tactics kernels for what happens to units: damage, death, status effects, turn order, draws.

Attacks go through `strike_*` (the damage formula, Shield, Damage Chain); health lost to Burn,
Action Drawing and Boost bypasses them (`lose_health`). `start_next_turn` is the only place a
turn begins: order, the turn limit, status ticks and the hand refill all live there.
"""

from __future__ import annotations

from numba import njit

from engine.bits import popcount
from engine.games.tactics.layout import (
    ALIVE,
    ARMORED,
    BOARD,
    BOOSTED,
    BORROWED,
    BURN,
    BURN_LOSS,
    CELL,
    CHAIN_TO,
    CHAINED,
    CUR,
    DECK,
    DRAW,
    DRAWING,
    DRAWING_DRAW,
    DUSTED,
    FACTION,
    HAND,
    HEAL_GAIN,
    HEALING,
    HP,
    MAX_HP,
    MAX_TURNS,
    MOVE,
    NO_DRAW,
    NUM_UNITS,
    ONGOING,
    ORDER,
    ORDER_LEN,
    ORDER_POS,
    PENDING,
    ROUND,
    SHIELDED,
    STATUS,
    TURN,
    WALLS,
    attack_of,
    bit,
    defence_of,
    faction_of,
    is_alive,
    speed_of,
    unit_base,
)

# what a strike did to the element on the cell
NOTHING, BLOCKED, HIT, DESTROYED = 0, 1, 2, 3


@njit(cache=True)
def check_end(s):
    """Ends the game when at most one faction has units (none: a draw); True if it has ended."""
    if s[STATUS] != ONGOING:
        return True
    alive0 = False
    alive1 = False
    for i in range(s[NUM_UNITS]):
        if is_alive(s, i):
            if faction_of(s, i) == 0:
                alive0 = True
            else:
                alive1 = True
    if alive0 and alive1:
        return False
    s[STATUS] = 0 if alive0 else (1 if alive1 else DRAW)
    s[PENDING] = NO_DRAW
    return True


@njit(cache=True)
def kill(s, i):
    """Removes unit i from the board; its statuses end, and so do chains anchored on it."""
    b = unit_base(i)
    s[b + ALIVE] = 0
    s[b + HP] = 0
    s[BOARD + s[b + CELL]] = 0
    for field in (BURN, DUSTED, HEALING, CHAINED, SHIELDED, BOOSTED, BORROWED, ARMORED):
        s[b + field] = 0
    s[b + CHAIN_TO] = -1
    for j in range(s[NUM_UNITS]):
        bj = unit_base(j)
        if s[bj + CHAINED] > 0 and s[bj + CHAIN_TO] == i:
            s[bj + CHAINED] = 0
            s[bj + CHAIN_TO] = -1


@njit(cache=True)
def lose_health(s, i, amount):
    """Direct health loss (no formula, no Shield, no Chain); death at 0."""
    b = unit_base(i)
    if amount <= 0 or s[b + ALIVE] == 0:
        return
    s[b + HP] -= amount
    if s[b + HP] <= 0:
        kill(s, i)


@njit(cache=True)
def heal(s, i, amount):
    b = unit_base(i)
    if s[b + ALIVE] != 0:
        s[b + HP] = min(s[b + MAX_HP], s[b + HP] + amount)


@njit(cache=True)
def strike_unit(s, attacker, i, raw):
    """One attack on unit i: a Shield absorbs it whole; otherwise `max(0, raw + attack - defence)`
    is lost, and every unit chained to i loses the same. Returns BLOCKED, HIT or DESTROYED."""
    b = unit_base(i)
    if s[b + SHIELDED] > 0:
        s[b + SHIELDED] = 0
        return BLOCKED
    damage = raw + attack_of(s, attacker) - defence_of(s, i)
    if damage > 0:
        for j in range(s[NUM_UNITS]):
            bj = unit_base(j)
            if j != i and s[bj + ALIVE] != 0 and s[bj + CHAINED] > 0 and s[bj + CHAIN_TO] == i:
                lose_health(s, j, damage)
        lose_health(s, i, damage)
    return DESTROYED if s[b + ALIVE] == 0 else HIT


@njit(cache=True)
def strike_cell(s, attacker, cell, raw, allies):
    """An attack on whatever stands on `cell`: a wall (defence 0) or a unit; the attacker's own
    side only when `allies`. Returns NOTHING, BLOCKED, HIT or DESTROYED."""
    v = s[BOARD + cell]
    if v < 0:
        damage = raw + attack_of(s, attacker)
        if damage <= 0:
            return HIT
        left = -v - damage
        if left > 0:
            s[BOARD + cell] = -left
            return HIT
        s[BOARD + cell] = 0
        s[WALLS] -= 1
        return DESTROYED
    if v > 0:
        i = v - 1
        if not allies and faction_of(s, i) == faction_of(s, attacker):
            return NOTHING
        return strike_unit(s, attacker, i, raw)
    return NOTHING


@njit(cache=True)
def tick_statuses(s, i):
    """Start of unit i's own turn: Burn and Slow Healing act, then every status loses a turn;
    Boost gives back the health it took when it runs out."""
    b = unit_base(i)
    if s[b + BURN] > 0:
        lose_health(s, i, BURN_LOSS)
        if s[b + ALIVE] == 0:
            return
    if s[b + HEALING] > 0:
        heal(s, i, HEAL_GAIN)
    for field in (BURN, DUSTED, HEALING, SHIELDED, ARMORED):
        if s[b + field] > 0:
            s[b + field] -= 1
    if s[b + CHAINED] > 0:
        s[b + CHAINED] -= 1
        if s[b + CHAINED] == 0:
            s[b + CHAIN_TO] = -1
    if s[b + BOOSTED] > 0:
        s[b + BOOSTED] -= 1
        if s[b + BOOSTED] == 0:
            heal(s, i, s[b + BORROWED])
            s[b + BORROWED] = 0


@njit(cache=True)
def new_round(s):
    """This round's order: living units by speed, faster first; ties: faction 0 (the study's
    Faction 1), then the lower unit index."""
    n = 0
    for i in range(s[NUM_UNITS]):
        if is_alive(s, i):
            # insertion sort on (-speed, faction, index)
            j = n
            while j > 0:
                k = s[ORDER + j - 1]
                sk, si = speed_of(s, k), speed_of(s, i)
                if sk > si or (sk == si and faction_of(s, k) <= faction_of(s, i)):
                    break
                s[ORDER + j] = k
                j -= 1
            s[ORDER + j] = i
            n += 1
    s[ORDER_LEN] = n
    s[ROUND] += 1


@njit(cache=True)
def draw_candidates(s, i, kind):
    """Cards unit i may draw: deck cards not in hand; never Move (refilled free), and Action
    Drawing never draws itself."""
    b = unit_base(i)
    cards = s[b + DECK] & ~s[b + HAND] & ~bit(MOVE)
    if kind == DRAWING_DRAW:
        cards &= ~bit(DRAWING)
    return cards


@njit(cache=True)
def offer_draw(s, i, kind):
    """One random card: a chance node when there is a choice, the card itself when only one."""
    cards = draw_candidates(s, i, kind)
    count = popcount(cards)
    if count == 1:
        s[unit_base(i) + HAND] |= cards
    elif count > 1:
        s[PENDING] = kind


@njit(cache=True)
def start_next_turn(s):
    """Hands the turn to the next living unit (a new round once everyone has acted). A game
    that reaches its turn limit is a draw. The unit's statuses tick (Burn may kill it: the next
    unit goes on), then it gets Move back and draws one card (TURN_DRAW)."""
    while s[STATUS] == ONGOING:
        pos = s[ORDER_POS] + 1
        while pos < s[ORDER_LEN] and not is_alive(s, s[ORDER + pos]):
            pos += 1
        if pos >= s[ORDER_LEN]:
            new_round(s)
            pos = 0
        s[ORDER_POS] = pos
        if s[TURN] >= s[MAX_TURNS]:
            s[STATUS] = DRAW
            s[PENDING] = NO_DRAW
            return
        s[TURN] += 1
        i = s[ORDER + pos]
        s[CUR] = i
        tick_statuses(s, i)
        if not is_alive(s, i):
            if check_end(s):
                return
            continue
        s[unit_base(i) + HAND] |= bit(MOVE)
        offer_draw(s, i, 1)
        return


@njit(cache=True)
def acting_faction(s):
    return s[unit_base(s[CUR]) + FACTION]
