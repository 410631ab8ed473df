"""Tactics kernel set: init, current player, legal actions, chance, apply, returns, observation.

`apply_action` trusts its caller (State checks legality; search loops only play listed actions).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.bits import popcount
from engine.games.tactics.effects import (
    DESTROYED,
    HIT,
    acting_faction,
    check_end,
    draw_candidates,
    heal,
    lose_health,
    offer_draw,
    start_next_turn,
    strike_cell,
)
from engine.games.tactics.layout import (
    ALIVE,
    ARMOR,
    ARMOR_TURNS,
    ARMORED,
    ATK,
    BOARD,
    BOOST,
    BOOST_TURNS,
    BOOSTED,
    BORROWED,
    BOW,
    BOW_DAMAGE,
    BURN,
    BURN_TURNS,
    CELL,
    CELLS,
    CHAIN,
    CHAIN_TO,
    CHAIN_TURNS,
    CHAINED,
    CLASS,
    COMBINE,
    CONFIG_UNIT,
    CUR,
    DECK,
    DEF,
    DRAW_BASE,
    DRAWING,
    DRAWING_COST,
    DRAWING_DRAW,
    DUST,
    DUST_RADIUS2,
    DUST_SPARK,
    DUST_SPARK_DAMAGE,
    DUST_TURNS,
    DUSTED,
    END_TURN,
    FACTION,
    FAST_HEAL,
    FAST_HEAL_GAIN,
    GROUND,
    HAND,
    HEAL_TURNS,
    HEALING,
    HP,
    IDS,
    MAX_HP,
    MAX_TURNS,
    MAX_UNITS,
    MOVE,
    NUM_RECIPES,
    NUM_UNITS,
    ONGOING,
    ORDER_LEN,
    ORDER_POS,
    P_ARMOR,
    P_ATTACK,
    P_BOOST,
    P_BORROWED,
    P_BURN,
    P_CHAIN_ANCHOR,
    P_CHAINED,
    P_CONTROLLED,
    P_DECK,
    P_DEFENCE,
    P_DUSTED,
    P_ENEMY,
    P_HAND,
    P_HEALING,
    P_HP,
    P_MAX_HP,
    P_OWN,
    P_SHIELD,
    P_SPEED,
    P_WALL,
    PENDING,
    RECIPE_TABLE,
    SHATTER,
    SHATTER_DAMAGE,
    SHIELD,
    SHIELD_TURNS,
    SHIELDED,
    SIZE,
    SLOW_HEAL,
    SPARK,
    SPARK_DAMAGE,
    SPARK_DIVE,
    SPD,
    SPEAR,
    SPEAR_DAMAGE,
    SPLASH_DAMAGE,
    SPLASH_RADIUS2,
    STATE_SIZE,
    STATUS,
    SWAP,
    SWORD,
    SWORD_DAMAGE,
    WALL_HP,
    WALLS,
    WEAK_SPARK,
    WEAK_SPARK_DAMAGE,
    attack_of,
    bit,
    defence_of,
    dist2,
    isqrt,
    offset_cell,
    speed_of,
    step,
    unit_base,
)
from engine.games.tactics.targets import unit_actions
from engine.protocol import CHANCE, TERMINAL


@njit(cache=True)
def init(config):
    """A position from the config vector (see layout.CONFIG_UNIT); the first turn has begun."""
    s = np.zeros(STATE_SIZE, dtype=np.int64)
    s[STATUS] = ONGOING
    s[MAX_TURNS] = config[0]
    n, walls = config[1], config[2]
    s[NUM_UNITS] = n
    s[ORDER_POS] = -1
    s[ORDER_LEN] = 0
    s[CUR] = -1
    for k in range(walls):
        s[BOARD + config[3 + k]] = -WALL_HP
    s[WALLS] = walls
    start = 3 + walls
    for i in range(MAX_UNITS):
        b = unit_base(i)
        s[b + CHAIN_TO] = -1
        if i >= n:
            continue
        c = config[start + i * CONFIG_UNIT : start + (i + 1) * CONFIG_UNIT]
        s[b + FACTION], s[b + CELL], s[b + CLASS] = c[0], c[1], c[2]
        s[b + MAX_HP], s[b + HP] = c[3], c[3]
        s[b + ATK], s[b + DEF], s[b + SPD] = c[4], c[5], c[6]
        s[b + DECK] = c[7] | bit(MOVE)
        s[b + ALIVE] = 1
        s[BOARD + c[1]] = i + 1
    if not check_end(s):
        start_next_turn(s)
    return s


@njit(cache=True)
def current_player(s):
    if s[STATUS] != ONGOING:
        return TERMINAL
    if s[PENDING]:
        return CHANCE
    return acting_faction(s)


@njit(cache=True)
def legal_actions(s, player, out):
    if s[STATUS] != ONGOING:
        return 0
    if s[PENDING]:
        if player != CHANCE:
            return 0
        cards = draw_candidates(s, s[CUR], s[PENDING])
        n = 0
        for card in range(IDS):
            if cards & bit(card):
                out[n] = DRAW_BASE + card
                n += 1
        return n
    if player != acting_faction(s):
        return 0
    return unit_actions(s, s[CUR], out)


@njit(cache=True)
def chance_probability(s, action):
    if s[STATUS] != ONGOING or not s[PENDING]:
        return 0.0
    cards = draw_candidates(s, s[CUR], s[PENDING])
    card = action - DRAW_BASE
    if card < 0 or card >= IDS or not (cards & bit(card)):
        return 0.0
    return 1.0 / popcount(cards)


@njit(cache=True)
def _burn(s, cell):
    """Spark's Burn on the unit left standing on `cell` after a landed hit."""
    v = s[BOARD + cell]
    if v > 0:
        s[unit_base(v - 1) + BURN] = BURN_TURNS


@njit(cache=True)
def _spark(s, me, cell, raw):
    if strike_cell(s, me, cell, raw, False) == HIT:
        _burn(s, cell)


@njit(cache=True)
def _relocate(s, me, cell):
    b = unit_base(me)
    s[BOARD + s[b + CELL]] = 0
    s[BOARD + cell] = me + 1
    s[b + CELL] = cell


@njit(cache=True)
def _play_card(s, me, card, target):
    """The effect of one card; the card has left the hand already."""
    b = unit_base(me)
    here = s[b + CELL]
    if card == MOVE:
        _relocate(s, me, target)
    elif card == SWORD or card == SPEAR:
        d = 0
        while step(here, d) != target:
            d += 1
        front = target
        if card == SWORD:  # a plus shape centred on the cell in front
            strike_cell(s, me, front, SWORD_DAMAGE, False)
            ahead = step(front, d)
            if ahead >= 0:
                strike_cell(s, me, ahead, SWORD_DAMAGE, False)
            for side in ((d + 1) % 4, (d + 3) % 4):
                flank = step(front, side)
                if flank >= 0:
                    strike_cell(s, me, flank, SWORD_DAMAGE, False)
        else:  # three cells in a line
            cell = front
            for _ in range(3):
                if cell < 0:
                    break
                strike_cell(s, me, cell, SPEAR_DAMAGE, False)
                cell = step(cell, d)
    elif card == BOW:
        strike_cell(s, me, target, BOW_DAMAGE + isqrt(dist2(here, target)) // 2, False)
    elif card == SPARK:
        _spark(s, me, target, SPARK_DAMAGE)
    elif card == GROUND:
        s[BOARD + target] = -WALL_HP
        s[WALLS] += 1
    elif card == DRAWING:
        lose_health(s, me, DRAWING_COST)
        if s[b + ALIVE]:
            s[b + HAND] |= bit(MOVE)
            offer_draw(s, me, DRAWING_DRAW)
    elif card == WEAK_SPARK:
        strike_cell(s, me, target, WEAK_SPARK_DAMAGE, False)
    elif card == DUST or card == DUST_SPARK:
        for j in range(s[NUM_UNITS]):
            bj = unit_base(j)
            if j == me or not s[bj + ALIVE] or dist2(here, s[bj + CELL]) > DUST_RADIUS2:
                continue
            if card == DUST:
                s[bj + DUSTED] = DUST_TURNS
            elif s[bj + DUSTED] > 0:
                strike_cell(s, me, s[bj + CELL], DUST_SPARK_DAMAGE, True)
    elif card == SLOW_HEAL:
        s[unit_base(s[BOARD + target] - 1) + HEALING] = HEAL_TURNS
    elif card == CHAIN:
        bt = unit_base(s[BOARD + target] - 1)
        s[bt + CHAINED] = CHAIN_TURNS
        s[bt + CHAIN_TO] = me
    elif card == SWAP:
        other = s[BOARD + target] - 1
        s[BOARD + here] = other + 1
        s[unit_base(other) + CELL] = here
        s[BOARD + target] = me + 1
        s[b + CELL] = target
    elif card == SPARK_DIVE:
        _relocate(s, me, target)
        for d in range(4):
            cell = step(target, d)
            if cell >= 0 and s[BOARD + cell] > 0:
                _spark(s, me, cell, SPARK_DAMAGE)
    elif card == SHATTER:
        was_wall = s[BOARD + target] < 0
        if strike_cell(s, me, target, SHATTER_DAMAGE, False) == DESTROYED or was_wall:
            for dr in range(-3, 4):
                for dc in range(-3, 4):
                    cell = offset_cell(target, dr, dc)
                    if cell >= 0 and cell != target and dr * dr + dc * dc <= SPLASH_RADIUS2:
                        strike_cell(s, me, cell, SPLASH_DAMAGE, True)
    elif card == SHIELD:
        s[unit_base(s[BOARD + target] - 1) + SHIELDED] = SHIELD_TURNS
    elif card == BOOST:
        bt = unit_base(s[BOARD + target] - 1)
        taken = s[bt + HP] // 2
        s[bt + HP] -= taken
        s[bt + BORROWED] += taken
        s[bt + BOOSTED] = BOOST_TURNS
    elif card == ARMOR:
        s[unit_base(s[BOARD + target] - 1) + ARMORED] = ARMOR_TURNS
    elif card == FAST_HEAL:
        heal(s, me, FAST_HEAL_GAIN)


@njit(cache=True)
def apply_action(s, action):
    if s[PENDING]:  # a drawn card
        s[unit_base(s[CUR]) + HAND] |= bit(action - DRAW_BASE)
        s[PENDING] = 0
        return
    me = s[CUR]
    b = unit_base(me)
    card = action % IDS
    target = action // IDS
    if card == END_TURN:
        start_next_turn(s)
        return
    if card == COMBINE:
        first, second = target // SIZE, target % SIZE
        s[b + HAND] &= ~(bit(first) | bit(second))
        for k in range(NUM_RECIPES):
            if RECIPE_TABLE[k, 0] == first and RECIPE_TABLE[k, 1] == second:
                s[b + HAND] |= bit(RECIPE_TABLE[k, 2])
        return
    s[b + HAND] &= ~bit(card)
    _play_card(s, me, card, target)
    if check_end(s):
        return
    if not s[b + ALIVE]:  # fell on its own turn (Action Drawing, a splash, a chain)
        s[PENDING] = 0
        start_next_turn(s)


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
    """78 planes of 12 x 12, relative to `player` (own units, enemy units); values scaled to
    about [0, 1]: health / 20, attack, defence and speed / 5, statuses / their duration."""
    out[:] = 0.0
    for cell in range(CELLS):
        v = s[BOARD + cell]
        if v < 0:
            out[P_WALL * CELLS + cell] = 1.0
            out[P_HP * CELLS + cell] = -v / 20.0
    anchors = np.zeros(MAX_UNITS, dtype=np.bool_)
    for i in range(s[NUM_UNITS]):
        b = unit_base(i)
        if s[b + ALIVE] and s[b + CHAINED] > 0:
            anchors[s[b + CHAIN_TO]] = True
    for i in range(s[NUM_UNITS]):
        b = unit_base(i)
        if not s[b + ALIVE]:
            continue
        cell = s[b + CELL]
        side = P_OWN if s[b + FACTION] == player else P_ENEMY
        out[side * CELLS + cell] = 1.0
        if i == s[CUR] and s[STATUS] == ONGOING:
            out[P_CONTROLLED * CELLS + cell] = 1.0
        out[P_HP * CELLS + cell] = s[b + HP] / 20.0
        out[P_MAX_HP * CELLS + cell] = s[b + MAX_HP] / 20.0
        out[P_SPEED * CELLS + cell] = speed_of(s, i) / 5.0
        out[P_ATTACK * CELLS + cell] = attack_of(s, i) / 5.0
        out[P_DEFENCE * CELLS + cell] = defence_of(s, i) / 5.0
        out[P_BURN * CELLS + cell] = s[b + BURN] / 3.0
        out[P_DUSTED * CELLS + cell] = s[b + DUSTED] / 2.0
        out[P_HEALING * CELLS + cell] = s[b + HEALING] / 4.0
        out[P_CHAINED * CELLS + cell] = s[b + CHAINED] / 3.0
        out[P_CHAIN_ANCHOR * CELLS + cell] = 1.0 if anchors[i] else 0.0
        out[P_SHIELD * CELLS + cell] = s[b + SHIELDED] / 3.0
        out[P_BOOST * CELLS + cell] = s[b + BOOSTED] / 4.0
        out[P_BORROWED * CELLS + cell] = s[b + BORROWED] / 20.0
        out[P_ARMOR * CELLS + cell] = s[b + ARMORED] / 3.0
        for card in range(IDS):
            if s[b + HAND] & bit(card):
                out[(P_HAND + card) * CELLS + cell] = 1.0
            if s[b + DECK] & bit(card):
                out[(P_DECK + card) * CELLS + cell] = 1.0
