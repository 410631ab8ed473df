"""The one alpha-beta core's loop (agents.search.core is its Python side): every alpha-beta search
in gridbots runs it.

Values are from the point of view of one player `q` (minimax, not negamax), which makes the
same loop serve every kind of node the games have:

  MAX      a player of q's team is to move (q itself, or a team-mate in a turn-based game)
  MIN      a player of another team is to move
  CHANCE   the expectation over the chance outcomes (children searched with a full window)
  LAP_MAX  a simultaneous lap: MAX over q's own actions, each followed by
  LAP_MIN  MIN over the joint actions of every other player (team-mates included: nobody
           can coordinate within a lap), after which the whole lap is applied

Depth counts plies: a turn-based action, a chance outcome and a whole simultaneous lap are one
ply each. A finished game scores its return times `scale` minus (for a win) or plus (for a
loss) its distance in plies, so with scale = WIN_SCALE results outrank every evaluation in
[-1, 1] and faster wins come first; games with chance nodes use scale = 1 so that
expectations mix results and evaluations on one scale. At a lap where q cannot act while the
game goes on, q is out: lost for sure when no team-mate can act, else the position is a leaf.

Moves are ordered by the transposition table's move, two killer moves per ply and a history
table; the root is searched in the game's legal order (a `root_hint` move first when given),
and a move replaces the best only when strictly better, so a search returns exactly the
minimax value and the first best move of plain fixed-depth minimax, whatever the table holds.
The table answers a probe only at exactly the remaining depth it was stored with, and its
keys include q.

Leaf evaluation is pluggable: the game's `evaluate(s, q)` kernel (HEURISTIC), the mean return
of random playouts (PLAYOUT), or a Python function over a batch of positions (BATCH): a node
one ply above the horizon expands all its children and the loop returns NEED_VALUES with their
states in the workspace; the caller writes their values and calls `run` again, which resumes
where it stopped (the whole stack lives in the workspace, nothing on numba's call stack).
Portfolio searches replace the moves of turn nodes by binding `child_moves(s, player, out)`
and `play_move(s, move)` (see `compiled`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.search.table import (
    EXACT,
    LOWER,
    RESULT_BOUND,
    UPPER,
    from_table,
    hash_state,
    remember_cutoff,
    store,
    window_flag,
)
from engine.loops import random_playout
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL
from engine.specialise import (
    apply_action,
    apply_joint,
    chance_probability,
    current_player,
    generic,
    legal_actions,
    returns,
)

WIN_SCALE = 1000.0
INF = 1e18
# leaf evaluation modes
HEURISTIC, PLAYOUT, BATCH, NETWORK = 0, 1, 2, 3
# what `run` returns
DONE, NEED_VALUES = 0, 1
# node kinds
MAX_NODE, MIN_NODE, CHANCE_NODE, LAP_MAX, LAP_MIN, UNKNOWN = 0, 1, 2, 3, 4, -1
# loop phases
IDLE, ENTER, NEXT, BACK, AWAIT = 0, 1, 2, 3, 4
# columns of the per-frame integer table
KIND, PLY, COUNT, INDEX, BEST, KEY, OWN, MOVER = 0, 1, 2, 3, 4, 5, 6, 7
# columns of the per-frame float table
ALPHA, BETA, ALPHA0, BETA0, ACC = 0, 1, 2, 3, 4
# registers: regs (int64) and the value passed up (vals float64)
FRAME, PHASE, NODES, LEAVES, ABORTED, PENDING, MOVE = 0, 1, 2, 3, 4, 5, 6
VALUE = 0
TT_FIRST, KILLER_1, KILLER_2 = 1 << 60, 1 << 59, 1 << 58
Q_MIX = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64: the player in a key


def evaluate(s, player):
    """Placeholder: `compiled` binds the game's heuristic kernel (or `zero_evaluate`)."""
    raise TypeError("evaluate is only available inside a bound search")


def network_value(s, player, weights):
    """Placeholder: `compiled` binds a learned evaluation (NETWORK mode) or `zero_network`."""
    raise TypeError("network_value is only available inside a bound search")


@njit(cache=True)
def zero_network(s, player, weights):
    """The NETWORK leaf of a search built without a network."""
    return 0.0


@njit(cache=True)
def zero_evaluate(s, player):
    """The evaluation of a game without a heuristic: only finished games tell anything apart."""
    return 0.0


@generic(inline=True)
def child_moves(s, player, out):
    """The moves a turn node offers (default: the legal actions); portfolio searches rebind."""
    return legal_actions(s, player, out)


@generic(inline=True)
def play_move(s, move):
    """Plays one move of a turn node (default: the action); portfolio searches rebind."""
    apply_action(s, move)


@njit(cache=True, inline="always")
def scaled(r, ply, scale):
    """A return `r` reached `ply` plies from the root, on the search's scale."""
    if scale <= RESULT_BOUND:
        return r
    if r > 0:
        return r * scale - ply
    if r < 0:
        return r * scale + ply
    return 0.0


@generic(inline=True)
def result_value(s, q, ply, scale, out):
    """A finished game for q on the search's scale."""
    returns(s, out)
    return scaled(out[q], ply, scale)


@generic(inline=True)
def leaf_value(s, q, mode, playouts, weights, num_players, neutral, rng, scratch, buffer, joint,
               out):  # fmt: skip
    """The evaluation of a cut-off position for q, in [-1, 1]."""
    if mode == HEURISTIC:
        return evaluate(s, q)
    if mode == NETWORK:
        return network_value(s, q, weights)
    total = 0.0
    for _ in range(playouts):
        scratch[:] = s
        random_playout(scratch, num_players, neutral, rng, buffer, joint)
        returns(scratch, out)
        total += out[q]
    return total / playouts


@generic(inline=True)
def mates_can_act(s, q, teams, num_players, buffer):
    for p in range(num_players):
        if p != q and teams[p] == teams[q] and legal_actions(s, p, buffer) > 0:
            return True
    return False


@njit(cache=True)
def workspace(max_depth, size, num_players, num_actions):
    """Every buffer of one search up to `max_depth` plies (a lap takes two frames)."""
    frames = 2 * max_depth + 2
    width = max(num_actions, 64)
    return (
        np.empty((frames, size), np.int64),  # 0 states
        np.empty((frames, width), np.int64),  # 1 moves
        np.empty((frames, width), np.int64),  # 2 order
        np.empty((frames, num_players, width), np.int64),  # 3 legal (lap frames)
        np.ones((frames, num_players), np.int64),  # 4 counts (lap frames)
        np.zeros((frames, 8), np.int64),  # 5 ints
        np.zeros((frames, 5), np.float64),  # 6 floats
        np.zeros(8, np.int64),  # 7 regs
        np.zeros(2, np.float64),  # 8 vals
        np.empty(size, np.int64),  # 9 scratch state
        np.empty(width, np.int64),  # 10 buffer
        np.empty(num_players, np.int64),  # 11 joint
        np.zeros(num_players, np.float64),  # 12 out
        np.empty((width, size), np.int64),  # 13 batch states
        np.empty(width, np.int64),  # 14 batch movers
        np.zeros(width, np.float64),  # 15 batch values (written by the caller)
        np.zeros(width, np.float64),  # 16 child values of a frontier node
        np.empty(width, np.int64),  # 17 child slot in the batch (-1: finished game)
    )


@generic
def run(root, q, depth, budget, root_hint, cfg, rng, ws, tt, mem):
    """Runs a search of `root` for q to `depth` plies, or resumes one after NEED_VALUES.

    Returns DONE (value in ws[8][VALUE], move in ws[7][MOVE], -1 when the root is finished;
    ws[7][ABORTED] = 1 when the node budget ran out, result unusable) or NEED_VALUES (write
    the values for q of ws[13][:n], whose movers are ws[14][:n], n = ws[7][PENDING], into
    ws[15][:n] and call again with the same arguments). cfg = (teams, num_players, neutral,
    mode, playouts, scale, prune, weights); with prune off every window stays open and the
    table is never probed: plain minimax, every node visited. `weights` (float64) reach the
    NETWORK leaf as they are, so a learned evaluation runs inside the loop without being
    compiled into it."""
    teams, num_players, neutral, mode, playouts, scale, prune, weights = cfg
    states, moves, order, legal, counts, ints, floats, regs, vals = ws[:9]
    scratch, buffer, joint, out = ws[9], ws[10], ws[11], ws[12]
    b_states, b_movers, b_values, c_values, c_slot = ws[13], ws[14], ws[15], ws[16], ws[17]
    killers, history = mem
    tt_key, tt_depth, tt_flag, tt_move, tt_value = tt
    mask = tt_key.shape[0] - 1
    q_mix = (q + 1) * Q_MIX
    if regs[PHASE] == IDLE:
        states[0] = root
        ints[0, KIND], ints[0, PLY] = UNKNOWN, 0
        floats[0, ALPHA], floats[0, BETA] = -INF, INF
        regs[FRAME], regs[PHASE] = 0, ENTER
        regs[NODES], regs[LEAVES], regs[ABORTED], regs[PENDING], regs[MOVE] = 0, 0, 0, 0, -1
    f, phase, value = regs[FRAME], regs[PHASE], vals[VALUE]
    while True:
        if phase == ENTER:
            regs[NODES] += 1
            if regs[NODES] > budget:
                regs[ABORTED], regs[PHASE] = 1, IDLE
                return DONE
            s = states[f]
            ply = ints[f, PLY]
            kind = ints[f, KIND]
            phase = BACK
            if kind == LAP_MIN:  # q's own action is fixed: the others' joint actions
                n = 1
                for p in range(num_players):
                    counts[f, p] = 1
                    if p != q:
                        c = legal_actions(s, p, legal[f, p])
                        if c == 0:
                            legal[f, p, 0] = neutral
                            c = 1
                        counts[f, p] = c
                        n *= c
                ints[f, COUNT], ints[f, INDEX], ints[f, BEST] = n, 0, 0
                floats[f, ACC] = INF
                floats[f, ALPHA0], floats[f, BETA0] = floats[f, ALPHA], floats[f, BETA]
                phase = NEXT
                continue
            mover = current_player(s)
            if mover == TERMINAL:
                value = result_value(s, q, ply, scale, out)
                continue
            n = 0
            if mover == SIMULTANEOUS:
                n = legal_actions(s, q, moves[f])
                if n == 0:  # q is out while the game goes on
                    if mates_can_act(s, q, teams, num_players, buffer):
                        value = leaf_value(s, q, mode, playouts, weights, num_players, neutral,
                                           rng, scratch, buffer, joint, out)  # fmt: skip
                        regs[LEAVES] += 1
                    else:
                        value = scaled(-1.0, ply, scale)
                    continue
            if ply >= depth:
                value = leaf_value(s, q, mode, playouts, weights, num_players, neutral, rng,
                                   scratch, buffer, joint, out)  # fmt: skip
                regs[LEAVES] += 1
                continue
            if mover == SIMULTANEOUS:
                kind = LAP_MAX
            elif mover == CHANCE:
                kind = CHANCE_NODE
            elif teams[mover] == teams[q]:
                kind = MAX_NODE
            else:
                kind = MIN_NODE
            ints[f, KIND], ints[f, MOVER] = kind, mover
            hint = -1
            if kind != CHANCE_NODE:
                key = hash_state(s) ^ q_mix
                ints[f, KEY] = key
                slot = key & mask
                if prune and tt_key[slot] == key and tt_depth[slot] >= 0:
                    if f > 0 and tt_depth[slot] == depth - ply:
                        stored = from_table(tt_value[slot], ply)
                        flag = tt_flag[slot]
                        if (
                            flag == EXACT
                            or (flag == LOWER and stored >= floats[f, BETA])
                            or (flag == UPPER and stored <= floats[f, ALPHA])
                        ):
                            value = stored
                            regs[LEAVES] += 1  # may hide evaluations: never call it exact
                            continue
                    hint = tt_move[slot]
                if f == 0:
                    hint = root_hint  # the root keeps the legal order: plain minimax's choice
            if kind == CHANCE_NODE:
                n = legal_actions(s, CHANCE, moves[f])
            elif kind != LAP_MAX:
                n = child_moves(s, mover, moves[f])
            who = q if kind == LAP_MAX else mover
            for i in range(n):
                a = moves[f, i]
                if a == hint:
                    order[f, i] = TT_FIRST
                elif f == 0 or kind == CHANCE_NODE:
                    order[f, i] = 0
                elif kind != LAP_MAX and a == killers[ply, 0]:
                    order[f, i] = KILLER_1
                elif kind != LAP_MAX and a == killers[ply, 1]:
                    order[f, i] = KILLER_2
                else:
                    order[f, i] = history[who, a]
            ints[f, COUNT], ints[f, INDEX], ints[f, BEST] = n, 0, moves[f, 0]
            floats[f, ALPHA0], floats[f, BETA0] = floats[f, ALPHA], floats[f, BETA]
            floats[f, ACC] = INF if kind == MIN_NODE else (0.0 if kind == CHANCE_NODE else -INF)
            phase = NEXT
            if mode == BATCH and ply + 1 == depth and kind != LAP_MAX:
                pending = 0  # the children are leaves: all of them, one batch
                for i in range(n):
                    child = b_states[pending]
                    child[:] = s
                    if kind == CHANCE_NODE:
                        apply_action(child, moves[f, i])
                    else:
                        play_move(child, moves[f, i])
                    nxt = current_player(child)
                    if nxt == TERMINAL:
                        c_values[i] = result_value(child, q, ply + 1, scale, out)
                        c_slot[i] = -1
                    else:
                        b_movers[pending] = nxt
                        c_slot[i] = pending
                        pending += 1
                regs[NODES] += n
                regs[LEAVES] += pending
                regs[PENDING] = pending
                phase = AWAIT
                if pending > 0:
                    regs[FRAME], regs[PHASE] = f, AWAIT
                    return NEED_VALUES
        elif phase == AWAIT:  # the batch's values are in b_values: fold every child
            s = states[f]
            kind, n = ints[f, KIND], ints[f, COUNT]
            acc = floats[f, ACC]
            for i in range(n):
                v = c_values[i] if c_slot[i] < 0 else b_values[c_slot[i]]
                if kind == CHANCE_NODE:
                    acc += chance_probability(s, moves[f, i]) * v
                elif (kind == MAX_NODE and v > acc) or (kind == MIN_NODE and v < acc):
                    acc = v
                    ints[f, BEST] = moves[f, i]
            value = acc
            if kind != CHANCE_NODE:
                store(tt, ints[f, KEY], depth - ints[f, PLY], EXACT, ints[f, BEST], value,
                      ints[f, PLY])  # fmt: skip
            phase = BACK
        elif phase == NEXT:
            i = ints[f, INDEX]
            kind = ints[f, KIND]
            if i == ints[f, COUNT]:
                value = floats[f, ACC]
                if kind == MAX_NODE or kind == MIN_NODE or kind == LAP_MAX:
                    flag = window_flag(value, floats[f, ALPHA0], floats[f, BETA0])
                    store(tt, ints[f, KEY], depth - ints[f, PLY], flag, ints[f, BEST], value,
                          ints[f, PLY])  # fmt: skip
                phase = BACK
                continue
            if kind != CHANCE_NODE and kind != LAP_MIN:
                pick = i  # selection sort: the best-ordered remaining move, first on ties
                for j in range(i + 1, ints[f, COUNT]):
                    if order[f, j] > order[f, pick]:
                        pick = j
                if pick != i:
                    moves[f, i], moves[f, pick] = moves[f, pick], moves[f, i]
                    order[f, i], order[f, pick] = order[f, pick], order[f, i]
            child = states[f + 1]
            child[:] = states[f]
            ints[f + 1, KIND], ints[f + 1, PLY] = UNKNOWN, ints[f, PLY] + 1
            if kind == MAX_NODE or kind == MIN_NODE:
                play_move(child, moves[f, i])
            elif kind == CHANCE_NODE:
                apply_action(child, moves[f, i])
            elif kind == LAP_MAX:
                ints[f + 1, KIND], ints[f + 1, PLY] = LAP_MIN, ints[f, PLY]
                ints[f + 1, OWN] = moves[f, i]
            else:  # LAP_MIN: joint action number i in mixed radix, q's own fixed
                rest = i
                for p in range(num_players):
                    if p == q:
                        joint[p] = ints[f, OWN]
                    else:
                        joint[p] = legal[f, p, rest % counts[f, p]]
                        rest //= counts[f, p]
                apply_joint(child, joint)
            acc, alpha, beta = floats[f, ACC], floats[f, ALPHA], floats[f, BETA]
            if not prune:
                floats[f + 1, ALPHA], floats[f + 1, BETA] = -INF, INF
            elif kind == MAX_NODE or kind == LAP_MAX:
                floats[f + 1, ALPHA], floats[f + 1, BETA] = max(alpha, acc), beta
            elif kind == CHANCE_NODE:
                floats[f + 1, ALPHA], floats[f + 1, BETA] = -INF, INF
            else:
                floats[f + 1, ALPHA], floats[f + 1, BETA] = alpha, min(beta, acc)
            f += 1
            phase = ENTER
        else:  # BACK: `value` is the finished value of frame f
            if f == 0:
                regs[MOVE] = ints[0, BEST] if ints[0, KIND] != UNKNOWN else -1
                regs[PHASE] = IDLE
                vals[VALUE] = value
                return DONE
            f -= 1
            kind, i, ply = ints[f, KIND], ints[f, INDEX], ints[f, PLY]
            a = moves[f, i]
            if kind == CHANCE_NODE:
                floats[f, ACC] += chance_probability(states[f], a) * value
            elif kind == MAX_NODE or kind == LAP_MAX:
                if value > floats[f, ACC]:
                    floats[f, ACC] = value
                    ints[f, BEST] = a
                if floats[f, ACC] >= floats[f, BETA]:
                    if kind == MAX_NODE:
                        remember_cutoff(killers, history, ply, ints[f, MOVER], a, depth)
                    store(tt, ints[f, KEY], depth - ply, LOWER, a, floats[f, ACC], ply)
                    value = floats[f, ACC]
                    continue  # phase stays BACK: this frame is done too
            else:
                if value < floats[f, ACC]:
                    floats[f, ACC] = value
                    ints[f, BEST] = a if kind == MIN_NODE else i
                if floats[f, ACC] <= floats[f, ALPHA]:
                    if kind == MIN_NODE:
                        remember_cutoff(killers, history, ply, ints[f, MOVER], a, depth)
                        store(tt, ints[f, KEY], depth - ply, UPPER, a, floats[f, ACC], ply)
                    value = floats[f, ACC]
                    continue
            ints[f, INDEX] += 1
            phase = NEXT


@generic
def search(root, q, depth, budget, root_hint, cfg, rng, ws, tt, mem):
    """(value, move) of a HEURISTIC or PLAYOUT search, for callers inside numba code."""
    ws[7][PHASE] = IDLE
    run(root, q, depth, budget, root_hint, cfg, rng, ws, tt, mem)
    return ws[8][VALUE], ws[7][MOVE]
