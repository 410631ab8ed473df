"""Thorough data generation: every state of the game tree, targets from alpha-beta play.

The tree is enumerated depth first from the start state (no cut-offs: every state is kept) down
to X moves (X = 0: the whole tree, for tiny games). Each enumerated decision state gets
a-posteriori targets from final states chosen by search, so no target rests on an opponent's
suicidal move: from the state, every player plays the move a depth-Y paranoid alpha-beta search
picks (max for the player, min for everyone else, expectation over chance, max-min over
simultaneous laps), with the game's `evaluate` heuristic at the horizon or, for games without
one, the mean of Z random playouts. `action_scores[a]` is the final return after `a` and such
play; `outcome` is that of the searched move (`action`), whose game (prefix + search play)
gets the games and sequences rows. Chance states are enumerated but recorded no positions.
Shard k is the subtree of the start's k-th child (shard 0 also records the start itself).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit

from engine.bits import new_rng
from engine.loops import apply_child, expand, random_playout, sample_chance
from engine.protocol import Game
from engine.specialise import (
    apply_action,
    apply_joint,
    bind,
    chance_probability,
    current_player,
    generic,
    legal_actions,
    returns,
)
from features.errors import DataError
from features.generate.randomized import _grow, _record, build_tables, wins_at_once

CHANCE = -1
SIMULTANEOUS = -2
TERMINAL = -4
MAX_NODE, MIN_NODE, CHANCE_NODE, SIM_NODE = 0, 1, 2, 3
INF = 1e9

#: x = depth limit (0: whole tree), y = search depth, z = playouts per horizon state for
#: games without an `evaluate` heuristic
PARAMS: dict[str, Any] = {"x": 3, "y": 2, "z": 4}


def validate_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    if int(params["y"]) > 12:
        raise DataError(f"Y = {params['y']} is too deep for the target search (at most 12)")
    if game.evaluate is None and int(params["z"]) < 1:
        raise DataError(f"{game.name} has no evaluate heuristic: Z (playouts) must be >= 1")
    params.pop("shard_size", None)
    return params


def _root(game: Game, seed: int) -> np.ndarray:
    return game.new_state_array(seed=int(seed))


def num_shards(game: Game, params: dict[str, Any], seed: int = 0) -> int:
    """One shard per child of the start (joint moves and chance outcomes count as children)."""
    state = game.new_initial_state(seed=0)
    if state.is_terminal():
        return 1
    player = state.current_player()
    if player >= 0 or state.is_chance_node():
        return max(1, len(state.legal_actions()))
    return max(1, math.prod(max(1, len(state.legal_actions(p))) for p in range(game.num_players)))


def game_id_stride(game: Game, params: dict[str, Any]) -> int:
    return 1 << 32


@njit(cache=True)
def _no_evaluate(s, player):  # pragma: no cover - stands in for games without a heuristic
    return 0.0


@generic(inline=True)
def horizon(s, q, use_eval, playouts, num_players, neutral, rng, buffer, joint, outcome, child):
    """Value of a state for q: final return, else the heuristic or mean random playouts."""
    if current_player(s) == TERMINAL:
        returns(s, outcome)
        return outcome[q]
    if use_eval:
        return evaluate(s, q)
    total = 0.0
    for _ in range(playouts):
        child[:] = s
        random_playout(child, num_players, neutral, rng, buffer, joint)
        returns(child, outcome)
        total += outcome[q]
    return total / playouts


@generic
def node_value(root, q, depth, alpha0, beta0, teams, use_eval, playouts, num_players, neutral,
               rng, ws):
    """Paranoid alpha-beta value of `root` for player q, searched `depth` plies (iterative)."""
    (states, legal, counts, kinds, total, index, acc, alpha, beta, grp, buffer, joint,
     outcome, child, _) = ws
    if depth == 0 or current_player(root) == TERMINAL:
        return horizon(root, q, use_eval, playouts, num_players, neutral, rng, buffer, joint,
                       outcome, child)
    states[0] = root
    level = 0
    opening = True
    v = 0.0
    while True:
        if opening:  # set up the frame of `level`
            s = states[level]
            player = current_player(s)
            total[level] = expand(s, num_players, neutral, legal, counts, level)
            index[level] = 0
            if level == 0:
                alpha[0], beta[0] = alpha0, beta0
            if player >= 0:
                kinds[level] = MAX_NODE if teams[player] == teams[q] else MIN_NODE
            elif player == CHANCE:
                kinds[level] = CHANCE_NODE
            else:
                kinds[level] = SIM_NODE
                for a in range(counts[level, q]):
                    grp[level, a] = INF
            acc[level] = -INF if kinds[level] != MIN_NODE else INF
            if kinds[level] == CHANCE_NODE:
                acc[level] = 0.0
            opening = False
        k = kinds[level]
        cut = (k == MAX_NODE and acc[level] >= beta[level]) or (
            k == MIN_NODE and acc[level] <= alpha[level]
        )
        if index[level] < total[level] and not cut:
            nxt = states[level + 1]
            nxt[:] = states[level]
            apply_child(nxt, num_players, legal, counts, level, index[level], joint)
            if level + 1 == depth or current_player(nxt) == TERMINAL:
                v = horizon(nxt, q, use_eval, playouts, num_players, neutral, rng, buffer,
                            joint, outcome, child)
            else:
                lo, hi = -INF, INF
                if k == MAX_NODE:
                    lo, hi = max(alpha[level], acc[level]), beta[level]
                elif k == MIN_NODE:
                    lo, hi = alpha[level], min(beta[level], acc[level])
                level += 1
                alpha[level], beta[level] = lo, hi
                opening = True
                continue
        else:
            if k == SIM_NODE:
                best = -INF
                for a in range(counts[level, q]):
                    best = max(best, grp[level, a])
                acc[level] = best
            v = acc[level]
            if level == 0:
                return v
            level -= 1
            k = kinds[level]
        # fold the child's value v into the frame of `level`
        i = index[level]
        if k == MAX_NODE:
            acc[level] = max(acc[level], v)
        elif k == MIN_NODE:
            acc[level] = min(acc[level], v)
        elif k == CHANCE_NODE:
            acc[level] += chance_probability(states[level], legal[level, 0, i]) * v
        else:
            below = 1
            for p in range(q):
                below *= counts[level, p]
            a = (i // below) % counts[level, q]
            grp[level, a] = min(grp[level, a], v)
        index[level] += 1


@generic
def choose(s, q, depth, teams, use_eval, playouts, num_players, neutral, rng, ws, options):
    """Index into options[q] of q's searched move (first best); options[p] hold legal moves."""
    joint, probe = ws[11], ws[14]
    nq = legal_actions(s, q, options[q])
    best, best_i = -INF, 0
    if current_player(s) != SIMULTANEOUS:
        for i in range(nq):
            probe[:] = s
            apply_action(probe, options[q, i])
            v = node_value(probe, q, depth - 1, best, INF, teams, use_eval, playouts,
                           num_players, neutral, rng, ws)
            if v > best:
                best, best_i = v, i
        return best_i
    n = np.empty(num_players, dtype=np.int64)
    combos = 1
    for p in range(num_players):
        n[p] = legal_actions(s, p, options[p]) if p != q else nq
        if n[p] == 0:
            options[p, 0] = neutral
            n[p] = 1
        if p != q:
            combos *= n[p]
    for i in range(nq):
        worst = INF
        for c in range(combos):
            rest = c
            for p in range(num_players):
                if p == q:
                    joint[p] = options[q, i]
                else:
                    joint[p] = options[p, rest % n[p]]
                    rest //= n[p]
            probe[:] = s
            apply_joint(probe, joint)
            v = node_value(probe, q, depth - 1, best, worst, teams, use_eval, playouts,
                           num_players, neutral, rng, ws)
            worst = min(worst, v)
            if worst <= best:
                break
        if worst > best:
            best, best_i = worst, i
    return best_i


@generic
def search_play(s, depth, teams, use_eval, playouts, num_players, neutral, rng, ws, options,
                hist, seq, moves):
    """Plays s to the end, every player by its search; records history/sequence entries.
    Returns (history entries, sequence entries, steps)."""
    nh, ns, steps = 0, 0, 0
    joint = moves
    while True:
        player = current_player(s)
        if player == TERMINAL:
            return nh, ns, steps
        if player >= 0:
            i = choose(s, player, depth, teams, use_eval, playouts, num_players, neutral, rng,
                       ws, options)
            a = options[player, i]
            apply_action(s, a)
        elif player == CHANCE:
            a = sample_chance(s, ws[10], rng)
            apply_action(s, a)
        else:
            a = 0
            for p in range(num_players):
                if legal_actions(s, p, options[p]) == 0:
                    joint[p] = neutral
                else:
                    joint[p] = options[p, choose(s, p, depth, teams, use_eval, playouts,
                                                 num_players, neutral, rng, ws, options)]
            apply_joint(s, joint)
        nh, ns = _record(player, a, joint, num_players, neutral, player, hist, nh, seq, ns)
        steps += 1


@generic
def thorough_shard(start, branch, max_depth, depth, teams, use_eval, playouts, num_players,
                   num_actions, neutral, obs_size, max_len, rng, record, rows_cap, games_cap):
    """Enumerates the start (when branch == 0) and the subtree of its child `branch` down to
    `max_depth`; with `record` False only counts (games, position rows)."""
    size = start.shape[0]
    width = max(num_actions, 64)
    levels = max_depth + 1
    legal = np.empty((levels, num_players, width), dtype=np.int64)
    counts = np.zeros((levels, num_players), dtype=np.int64)
    total = np.zeros(levels, dtype=np.int64)
    index = np.zeros(levels, dtype=np.int64)
    states = np.empty((levels + 1, size), dtype=np.int64)
    kinds = np.zeros(levels, dtype=np.int64)  # the mover at each level (path recording)
    path = np.empty((levels, num_players), dtype=np.int64)
    sdepth = max(depth, 1) + 1
    ws = (
        np.empty((sdepth + 1, size), dtype=np.int64), np.empty((sdepth, num_players, width),
                                                               dtype=np.int64),
        np.zeros((sdepth, num_players), dtype=np.int64), np.zeros(sdepth, dtype=np.int64),
        np.zeros(sdepth, dtype=np.int64), np.zeros(sdepth, dtype=np.int64),
        np.zeros(sdepth, dtype=np.float64), np.zeros(sdepth, dtype=np.float64),
        np.zeros(sdepth, dtype=np.float64), np.zeros((sdepth, width), dtype=np.float64),
        np.empty(width, dtype=np.int64), np.empty(num_players, dtype=np.int64),
        np.zeros(num_players, dtype=np.float64), np.empty(size, dtype=np.int64),
        np.empty(size, dtype=np.int64),
    )
    wlegal = np.empty((num_players, width), dtype=np.int64)
    wcounts = np.zeros(num_players, dtype=np.int64)
    options = np.empty((num_players, width), dtype=np.int64)
    moves = np.empty(num_players, dtype=np.int64)
    outcome = np.zeros(num_players, dtype=np.float64)
    child = np.empty(size, dtype=np.int64)
    final = np.empty(size, dtype=np.int64)
    span = (max_len + levels + 1) * num_players
    pre_hist = np.empty(span, dtype=np.int16)
    pre_seq = np.empty(span, dtype=np.int16)
    g_hist = np.empty(span, dtype=np.int16)
    g_seq = np.empty(span, dtype=np.int16)
    n_games = games_cap if record else 0
    rows = rows_cap if record else 0
    g_state = np.zeros(n_games, dtype=np.int64)
    g_returns = np.empty((n_games, num_players), dtype=np.float32)
    g_length = np.empty(n_games, dtype=np.int32)
    g_seq_len = np.empty(n_games, dtype=np.int32)
    hist_off = np.zeros(n_games + 1, dtype=np.int64)
    seq_off = np.zeros(n_games * num_players + 1, dtype=np.int64)
    hist = np.empty(n_games * 16 + 16, dtype=np.int16)
    seq = np.empty(n_games * 16 * num_players + 16, dtype=np.int16)
    p_game = np.empty(rows, dtype=np.int64)
    p_ply = np.empty(rows, dtype=np.int32)
    p_player = np.empty(rows, dtype=np.int8)
    p_state = np.empty((rows, size), dtype=np.int64)
    p_mask = np.zeros((rows, num_actions), dtype=np.int8)
    p_feat = np.zeros((rows, obs_size), dtype=np.float32)
    p_action = np.empty(rows, dtype=np.int16)
    p_outcome = np.empty(rows, dtype=np.float32)
    p_scores = np.full((rows, num_actions), np.nan, dtype=np.float32)
    p_wins = np.zeros(rows, dtype=np.int16)
    chosen = np.empty(num_players, dtype=np.int64)
    g = 0
    n_rows = 0
    nh_all = 0
    ns_all = 0
    states[0] = start
    level = 0
    visit = True
    while level >= 0:
        s = states[level]
        if visit:  # a node reached for the first time: record it, then open its children
            visit = False
            player = current_player(s)
            if player != TERMINAL and player != CHANCE and (level > 0 or branch == 0):
                deciders = 0
                for p in range(num_players):
                    if (player == SIMULTANEOUS or p == player) and legal_actions(
                        s, p, options[p]
                    ) > 0:
                        deciders += 1
                if record:
                    # the prefix (path to this node), then the searched game from it
                    pre_nh, pre_ns = 0, 0
                    for lv in range(level):
                        pre_nh, pre_ns = _record(kinds[lv], path[lv, 0], path[lv],
                                                 num_players, neutral, kinds[lv], pre_hist,
                                                 pre_nh, pre_seq, pre_ns)
                    for p in range(num_players):
                        chosen[p] = -1
                        if player == SIMULTANEOUS or p == player:
                            if legal_actions(s, p, options[p]) > 0:
                                chosen[p] = options[p, choose(s, p, depth, teams, use_eval,
                                                              playouts, num_players, neutral,
                                                              rng, ws, options)]
                    final[:] = s
                    if player == SIMULTANEOUS:
                        for p in range(num_players):
                            moves[p] = chosen[p] if chosen[p] >= 0 else neutral
                        apply_joint(final, moves)
                        nh, ns = _record(player, 0, moves, num_players, neutral, 0, g_hist,
                                         0, g_seq, 0)
                    else:
                        apply_action(final, chosen[player])
                        nh, ns = _record(player, chosen[player], moves, num_players, neutral,
                                         player, g_hist, 0, g_seq, 0)
                    a_nh, a_ns, a_steps = search_play(final, depth, teams, use_eval, playouts,
                                                      num_players, neutral, rng, ws, options,
                                                      g_hist[nh:], g_seq[ns:], moves)
                    nh += a_nh
                    ns += a_ns
                    returns(final, outcome)
                    for p in range(num_players):
                        g_returns[g, p] = outcome[p]
                    g_length[g] = level + 1 + a_steps
                    g_seq_len[g] = (pre_ns + ns) // num_players
                    hist = _grow(hist, nh_all, pre_nh + nh)
                    hist[nh_all:nh_all + pre_nh] = pre_hist[:pre_nh]
                    hist[nh_all + pre_nh:nh_all + pre_nh + nh] = g_hist[:nh]
                    nh_all += pre_nh + nh
                    hist_off[g + 1] = nh_all
                    seq = _grow(seq, ns_all, (pre_ns + ns) * num_players)
                    for p in range(num_players):
                        seq[ns_all:ns_all + pre_ns] = pre_seq[:pre_ns]
                        seq[ns_all + pre_ns:ns_all + pre_ns + ns] = g_seq[:ns]
                        ns_all += pre_ns + ns
                        seq_off[g * num_players + p + 1] = ns_all
                    for q in range(num_players):
                        if chosen[q] < 0:
                            continue
                        row = n_rows
                        n_rows += 1
                        p_game[row] = g
                        p_ply[row] = level
                        p_player[row] = q
                        p_state[row] = s
                        p_action[row] = chosen[q]
                        p_outcome[row] = g_returns[g, q]
                        observation(s, q, p_feat[row])
                        nq = legal_actions(s, q, options[q])
                        for p in range(num_players):
                            wcounts[p] = 0
                            if player == SIMULTANEOUS or p == player:
                                wcounts[p] = legal_actions(s, p, wlegal[p])
                        wins = 0
                        for t in range(nq):
                            a = wlegal[q, t]
                            p_mask[row, a] = 1
                            if wins_at_once(s, q, a, num_players, neutral, wlegal, wcounts,
                                            moves, child, outcome):
                                wins += 1
                            if a == chosen[q]:
                                p_scores[row, a] = p_outcome[row]
                                continue
                            child[:] = s
                            if player == SIMULTANEOUS:
                                for p in range(num_players):
                                    moves[p] = chosen[p] if chosen[p] >= 0 else neutral
                                moves[q] = a
                                apply_joint(child, moves)
                            else:
                                apply_action(child, a)
                            search_play(child, depth, teams, use_eval, playouts, num_players,
                                        neutral, rng, ws, options, g_hist, g_seq, moves)
                            returns(child, outcome)
                            p_scores[row, a] = outcome[q]
                        p_wins[row] = wins
                    g += 1
                else:
                    g += 1
                    n_rows += deciders
            if player == TERMINAL or level == max_depth:
                total[level] = 0
            else:
                total[level] = expand(s, num_players, neutral, legal, counts, level)
            index[level] = 0
            if level == 0:  # this shard's branch only
                index[0] = branch
                total[0] = min(total[0], branch + 1)
        if index[level] >= total[level]:
            level -= 1
            if level >= 0:
                index[level] += 1
            continue
        kinds[level] = current_player(s)
        nxt = states[level + 1]
        nxt[:] = s
        apply_child(nxt, num_players, legal, counts, level, index[level], path[level])
        if kinds[level] != SIMULTANEOUS:
            i = index[level]
            path[level, 0] = legal[level, 0, i]
        level += 1
        visit = True
    return (
        (g_state[:g], g_returns[:g], g_length[:g], g_seq_len[:g], hist_off[:g + 1],
         hist[:nh_all], seq_off[:g * num_players + 1], seq[:ns_all]),
        (p_game[:n_rows], p_ply[:n_rows], p_player[:n_rows], p_state[:n_rows],
         p_mask[:n_rows], p_feat[:n_rows], p_action[:n_rows], p_outcome[:n_rows],
         p_scores[:n_rows], p_wins[:n_rows]),
        g, n_rows,
    )


@njit(cache=True)
def _placeholder_observation(s, player, out):  # pragma: no cover - replaced by bind
    out[:] = 0.0


observation = _placeholder_observation  # bound to the game's observation kernel
evaluate = _no_evaluate  # bound to the game's heuristic (or kept, with use_eval False)


def _loop(game: Game):
    heuristic = game.evaluate if game.evaluate is not None else _no_evaluate
    return bind(
        thorough_shard,
        game.kernels.search(),
        observation=game.kernels.observation,
        evaluate=heuristic,
    )


def generate_shard(
    game: Game, params: dict[str, Any], seed: int, shard: int, first_game_id: int
) -> dict[str, pa.Table]:
    start = _root(game, 0)
    sequence = np.random.SeedSequence([int(seed), int(shard)])
    loop = _loop(game)
    max_depth = int(params["x"]) or game.max_game_length
    teams = np.asarray(game.teams, dtype=np.int64)
    common = (
        teams, game.evaluate is not None, int(params["z"]), game.num_players, game.num_actions,
        game.neutral_action, int(np.prod(game.observation_shape)), game.max_game_length,
    )
    seed_rng = int(sequence.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
    *_, n_games, n_rows = loop(start, shard, max_depth, int(params["y"]), *common,
                               new_rng(seed_rng), False, 0, 0)
    games, positions, _, _ = loop(start, shard, max_depth, int(params["y"]), *common,
                                  new_rng(seed_rng), True, n_rows, n_games)
    seeds = np.zeros(1, dtype=np.int64)
    agents = [f"alphabeta:depth={int(params['y'])}"] * game.num_players
    return build_tables(game, "thorough", first_game_id, seeds, agents, games, positions)
