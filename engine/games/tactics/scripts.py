"""Tactics scripted policies: the portfolio of hierarchical portfolio search (study 004).

Each script answers one decision of the acting unit's turn (`script_action`) from the position
alone, so a turn is the script called until it says End Turn; every other action spends a card,
so a scripted turn always ends. Attacks are chosen by trying each one on a scratch copy and
scoring the change of `worth` (health, lives, statuses) for the unit's side; moves by distance.

  0 attack   hit the weakest enemy hardest; otherwise close in on it, then hit
  1 kite     hit from range; close only to distance 4, otherwise fall back from the nearest enemy
  2 heal     heal, shield or armour the most hurt ally (combining for Fast Heal), then fall back
  3 combo    combine cards when that opens a stronger attack, then play like `attack`
  4 guard    armour up and raise a wall toward the nearest enemy, hit only from where it stands
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.games.tactics.layout import (
    ALIVE,
    ARMOR,
    ARMORED,
    BOARD,
    BOW,
    BURN,
    CELL,
    COMBINE,
    CUR,
    DUST_SPARK,
    END_TURN,
    FACTION,
    FAST_HEAL,
    GROUND,
    HAND,
    HEALING,
    HP,
    IDS,
    MAX_HP,
    MOVE,
    MOVE_OFFSETS,
    NUM_ACTIONS,
    NUM_UNITS,
    SHATTER,
    SHIELD,
    SHIELDED,
    SIZE,
    SLOW_HEAL,
    SPARK,
    SPARK_DIVE,
    SPEAR,
    SWORD,
    TURN,
    WEAK_SPARK,
    bit,
    dist2,
    offset_cell,
    unit_base,
)
from engine.games.tactics.rules import apply_action, current_player, legal_actions, returns
from engine.protocol import CHANCE, TERMINAL

SCRIPT_NAMES = ("attack", "kite", "heal", "combo", "guard")
NUM_SCRIPTS = len(SCRIPT_NAMES)
ATTACK, KITE, HEAL, COMBO, GUARD = range(NUM_SCRIPTS)
LIFE = 10  # a living unit is worth this much beyond its health


@njit(cache=True)
def worth(s, side):
    """Material of `side` minus the other's: health, lives, expected Burn and healing, guards."""
    total = 0.0
    for i in range(s[NUM_UNITS]):
        b = unit_base(i)
        if not s[b + ALIVE]:
            continue
        w = s[b + HP] + LIFE - 2.0 * s[b + BURN] + 1.5 * min(s[b + HEALING], 2)
        if s[b + SHIELDED] > 0:
            w += 3.0
        if s[b + ARMORED] > 0:
            w += 1.5
        total += w if s[b + FACTION] == side else -w
    return total


@njit(cache=True, inline="always")
def _is_attack(card):
    return (
        card == SWORD
        or card == BOW
        or card == SPEAR
        or card == SPARK
        or card == WEAK_SPARK
        or card == DUST_SPARK
        or card == SPARK_DIVE
        or card == SHATTER
    )


@njit(cache=True)
def _gain(s, side, action, scratch):
    scratch[:] = s
    apply_action(scratch, action)
    return worth(scratch, side) - worth(s, side)


@njit(cache=True)
def _best_attack(s, side, actions, n, scratch, allow_moving):
    """(gain, action) of the attack that improves `worth` most (-1 if none helps)."""
    best, choice = 0.0, -1
    for k in range(n):
        card = actions[k] % IDS
        if not _is_attack(card) or (card == SPARK_DIVE and not allow_moving):
            continue
        g = _gain(s, side, actions[k], scratch)
        if g > best + 1e-9:
            best, choice = g, actions[k]
    return best, choice


@njit(cache=True)
def _weakest_enemy(s, me):
    side, best, cell = s[unit_base(me) + FACTION], 1 << 30, -1
    for j in range(s[NUM_UNITS]):
        b = unit_base(j)
        if s[b + ALIVE] and s[b + FACTION] != side and s[b + HP] < best:
            best, cell = s[b + HP], s[b + CELL]
    return cell


@njit(cache=True)
def _nearest_enemy_d2(s, me, cell):
    side, best = s[unit_base(me) + FACTION], 1 << 30
    for j in range(s[NUM_UNITS]):
        b = unit_base(j)
        if s[b + ALIVE] and s[b + FACTION] != side:
            best = min(best, dist2(cell, s[b + CELL]))
    return best


@njit(cache=True)
def _move_toward(s, me, goal, keep2):
    """The free cell within reach closest to `goal` but not nearer than sqrt(keep2)."""
    here = s[unit_base(me) + CELL]
    best, choice = dist2(here, goal), -1
    if best < keep2:
        best = 1 << 30
    for k in range(MOVE_OFFSETS.shape[0]):
        cell = offset_cell(here, MOVE_OFFSETS[k, 0], MOVE_OFFSETS[k, 1])
        if cell < 0 or s[BOARD + cell] != 0:
            continue
        d = dist2(cell, goal)
        if keep2 <= d < best:
            best, choice = d, cell
    return -1 if choice < 0 else choice * IDS + MOVE


@njit(cache=True)
def _move_away(s, me):
    """The free cell within reach farthest from the nearest enemy (none if no gain)."""
    here = s[unit_base(me) + CELL]
    best, choice = _nearest_enemy_d2(s, me, here), -1
    for k in range(MOVE_OFFSETS.shape[0]):
        cell = offset_cell(here, MOVE_OFFSETS[k, 0], MOVE_OFFSETS[k, 1])
        if cell >= 0 and s[BOARD + cell] == 0:
            d = _nearest_enemy_d2(s, me, cell)
            if d > best:
                best, choice = d, cell
    return -1 if choice < 0 else choice * IDS + MOVE


@njit(cache=True)
def _find(actions, n, card, cell):
    """The action of `card` on `cell` if it is legal (any cell when cell < 0), else -1."""
    for k in range(n):
        if actions[k] % IDS == card and (cell < 0 or actions[k] // IDS == cell):
            return actions[k]
    return -1


@njit(cache=True)
def _most_hurt_ally(s, me):
    side, best, cell = s[unit_base(me) + FACTION], 1.0, -1
    for j in range(s[NUM_UNITS]):
        b = unit_base(j)
        if s[b + ALIVE] and s[b + FACTION] == side:
            ratio = s[b + HP] / s[b + MAX_HP]
            if ratio < best:
                best, cell = ratio, s[b + CELL]
    return cell


@njit(cache=True)
def _support(s, me, actions, n):
    """Healing and guarding, most hurt ally first; -1 when nothing is worth doing."""
    b = unit_base(me)
    hand = s[b + HAND]
    hurt = _most_hurt_ally(s, me)
    if s[b + HP] <= s[b + MAX_HP] - 4:
        if hand & bit(FAST_HEAL):
            return _find(actions, n, FAST_HEAL, -1)
        combine = (MOVE * SIZE + SLOW_HEAL) * IDS + COMBINE
        if _find(actions, n, COMBINE, MOVE * SIZE + SLOW_HEAL) == combine:
            return combine
    if hurt >= 0:
        v = s[BOARD + hurt] - 1
        if s[unit_base(v) + HEALING] == 0:
            a = _find(actions, n, SLOW_HEAL, hurt)
            if a >= 0:
                return a
        if s[unit_base(v) + SHIELDED] == 0:
            a = _find(actions, n, SHIELD, hurt)
            if a >= 0:
                return a
    threatened = _nearest_enemy_d2(s, me, s[b + CELL]) <= 36
    if threatened and s[b + ARMORED] == 0:
        a = _find(actions, n, ARMOR, s[b + CELL])
        if a >= 0:
            return a
    return -1


@njit(cache=True)
def _wall_toward_enemy(s, me, actions, n):
    here = s[unit_base(me) + CELL]
    best, choice = _nearest_enemy_d2(s, me, here), -1
    for k in range(n):
        if actions[k] % IDS == GROUND:
            d = _nearest_enemy_d2(s, me, actions[k] // IDS)
            if d < best:
                best, choice = d, actions[k]
    return choice


@njit(cache=True)
def _combo(s, side, actions, n, scratch, follow):
    """A combination whose best follow-up attack beats every attack available now."""
    now, _ = _best_attack(s, side, actions, n, scratch, True)
    best, choice = now, -1
    for k in range(n):
        if actions[k] % IDS != COMBINE:
            continue
        scratch[:] = s
        apply_action(scratch, actions[k])
        m = legal_actions(scratch, current_player(scratch), follow)
        after, _ = _best_attack(scratch, side, follow, m, scratch.copy(), True)
        if after > best + 1e-9:
            best, choice = after, actions[k]
    return choice


@njit(cache=True)
def script_action(s, script, actions, scratch, follow):
    """Script `script`'s next action for the acting unit (END_TURN when it is done)."""
    me = s[CUR]
    b = unit_base(me)
    side = s[b + FACTION]
    n = legal_actions(s, side, actions)
    end = s[b + CELL] * IDS + END_TURN
    has_move = (s[b + HAND] & bit(MOVE)) != 0
    if script == HEAL or script == GUARD:
        a = _support(s, me, actions, n)
        if a >= 0:
            return a
    if script == GUARD:
        a = _wall_toward_enemy(s, me, actions, n)
        if a >= 0:
            return a
        _, a = _best_attack(s, side, actions, n, scratch, False)
        return a if a >= 0 else end
    if script == COMBO:
        a = _combo(s, side, actions, n, scratch, follow)
        if a >= 0:
            return a
    if script != HEAL:
        _, a = _best_attack(s, side, actions, n, scratch, True)
        if a >= 0:
            return a
    if not has_move:
        return end
    if script == HEAL:
        a = _move_away(s, me)
    elif script == KITE:
        holding_attack = False
        for card in (SWORD, BOW, SPEAR, SPARK, WEAK_SPARK, SHATTER):
            if s[b + HAND] & bit(card):
                holding_attack = True
        if holding_attack:
            a = _move_toward(s, me, _weakest_enemy(s, me), 9)
        else:
            a = _move_away(s, me)
    else:
        a = _move_toward(s, me, _weakest_enemy(s, me), 1)
    return a if a >= 0 else end


def scratch_buffers(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The buffers `script_action` needs: two action lists and a scratch state."""
    return (
        np.empty(NUM_ACTIONS, dtype=np.int64),
        np.empty(size, dtype=np.int64),
        np.empty(NUM_ACTIONS, dtype=np.int64),
    )


# ---- the portfolio as turn-level moves (agents/search/hps.py) ---------------------------------
@njit(cache=True)
def seeded_draw(s, actions):
    """A chance outcome picked by a hash of the whole position: searches that meet the same
    position see the same draw, so a transposition table stays consistent."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for i in range(s.shape[0]):
        h ^= np.uint64(s[i])
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    n = legal_actions(s, CHANCE, actions)
    return actions[np.int64(h % np.uint64(n))]


@njit(cache=True)
def portfolio_moves(s, player, out):
    """The turn-level moves of a node: one per script, less the scripts whose turn ends in the
    same position as an earlier script's (they would only repeat a subtree)."""
    if current_player(s) != player or player < 0:
        return 0
    ends = np.empty((NUM_SCRIPTS, s.shape[0]), dtype=np.int64)
    n = 0
    for k in range(NUM_SCRIPTS):
        ends[n] = s
        play_script_turn(ends[n], k)
        repeated = False
        for j in range(n):
            if np.array_equal(ends[j], ends[n]):
                repeated = True
                break
        if not repeated:
            out[n] = k
            n += 1
    return n


@njit(cache=True)
def play_script_turn(s, script):
    """Script `script` plays the acting unit's whole turn in place; a draw inside the turn
    (Action Drawing) is `seeded_draw`; the next unit's turn-start draw is left to the search."""
    actions = np.empty(NUM_ACTIONS, dtype=np.int64)
    follow = np.empty(NUM_ACTIONS, dtype=np.int64)
    scratch = np.empty_like(s)
    turn = s[TURN]
    while s[TURN] == turn:
        player = current_player(s)
        if player == TERMINAL:
            return
        if player == CHANCE:
            apply_action(s, seeded_draw(s, actions))
        else:
            apply_action(s, script_action(s, script, actions, scratch, follow))


@njit(cache=True)
def scripted_playout(s, q):
    """Study 004's playout evaluation: the `attack` script plays both sides to the end (draws
    seeded by the position); the result for player q."""
    game = s.copy()
    actions = np.empty(NUM_ACTIONS, dtype=np.int64)
    follow = np.empty(NUM_ACTIONS, dtype=np.int64)
    scratch = np.empty_like(s)
    out = np.zeros(2)
    while True:
        player = current_player(game)
        if player == TERMINAL:
            returns(game, out)
            return out[q]
        if player == CHANCE:
            apply_action(game, seeded_draw(game, actions))
        else:
            apply_action(game, script_action(game, ATTACK, actions, scratch, follow))


@njit(cache=True)
def evaluate(s, player):
    """The hand-written material heuristic in [-1, 1] (HPS_R's kind of evaluation)."""
    if current_player(s) == TERMINAL:
        out = np.zeros(2)
        returns(s, out)
        return out[player]
    return np.tanh(worth(s, player) / 20.0)
