"""Thorough data generation: every state of the game tree, targets from alpha-beta play.

The tree is enumerated depth first from the start state (no cut-offs: every state is kept) down
to X moves (X = 0: the whole tree, for tiny games). Each enumerated decision state gets
a-posteriori targets from final states chosen by search, so no target rests on an opponent's
suicidal move: from the state, every player plays the move the shared alpha-beta core
(agents.search.core) picks at depth Y (max for the player's team, min for the others, expectation
over chance, max-min over simultaneous laps), with the game's `evaluate` heuristic at the
horizon or, for games without one, the mean of Z random playouts. `action_scores[a]` is the
final return after `a` and such play; `outcome` is that of the searched move (`action`), whose
game (prefix + search play) gets the games and sequences rows. Chance states are enumerated but
record no positions.
Shard k is the subtree of the start's k-th child (shard 0 also records the start itself).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit

from agents.guards import immediate_wins, win_buffers
from agents.search.core import (
    HEURISTIC,
    PLAYOUT,
    config,
    memory,
    table,
    workspace,
    zero_evaluate,
    zero_network,
)
from agents.search.core import search as alphabeta
from engine.bits import new_rng
from engine.loops import apply_child, expand, sample_chance
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game
from engine.specialise import (
    apply_action,
    apply_joint,
    bind,
    current_player,
    generic,
    legal_actions,
    returns,
)
from features.errors import DataError
from features.generate.flat_tables import build_tables
from features.generate.randomized import _append_game, _record

TABLE_BITS = 14  # the targets' searches share one small table per shard

#: x = depth limit (0: whole tree), y = search depth, z = playouts per horizon state for
#: games without an `evaluate` heuristic
PARAMS: dict[str, Any] = {"x": 3, "y": 2, "z": 4}


def validate_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    if int(params["y"]) > 12:
        raise DataError(f"Y = {params['y']} is too deep for the target search (at most 12)")
    if int(params["y"]) < 1:
        raise DataError(f"Y = {params['y']}: the target search needs at least 1 ply")
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
def _workspace(depth, size, num_players, num_actions):
    """The core's buffers, table and ordering memory for depth-`depth` searches, plus a move
    buffer for chance draws."""
    return (
        workspace(depth, size, num_players, num_actions),
        table(np.int64(TABLE_BITS)),  # not Literal[int](14): one compiled table()
        memory(depth, num_players, num_actions),
        np.empty(max(num_actions, 64), np.int64),
    )


@generic
def choose(s, q, cfg, rng, ws):
    """q's searched move at s: the first best move of the shared alpha-beta core to Y plies."""
    budget, hint = np.int64(1 << 62), np.int64(-1)  # int64, not literals: the agents' copy
    _, move = alphabeta(s, q, cfg[5], budget, hint, cfg[0], rng, ws[0], ws[1], ws[2])
    return move


@generic(inline=True)
def searched_joint(s, cfg, rng, ws, options, joint):
    """Every living player's searched move at a simultaneous lap (neutral for the others)."""
    for p in range(cfg[3]):
        if legal_actions(s, p, options[p]) == 0:
            joint[p] = cfg[4]
        else:
            joint[p] = choose(s, p, cfg, rng, ws)


@generic
def search_play(s, cfg, rng, ws, options, hist, seq, joint):
    """Plays s to the end, every player by its search, recording the steps; returns
    (history entries, sequence entries, steps)."""
    num_players, neutral = cfg[3], cfg[4]
    nh, ns, steps = 0, 0, 0
    while True:
        player = current_player(s)
        if player == TERMINAL:
            return nh, ns, steps
        a = 0
        if player >= 0:
            a = choose(s, player, cfg, rng, ws)
            apply_action(s, a)
        elif player == CHANCE:
            a = sample_chance(s, ws[3], rng)
            apply_action(s, a)
        else:
            searched_joint(s, cfg, rng, ws, options, joint)
            apply_joint(s, joint)
        nh, ns = _record(player, a, joint, num_players, neutral, player, hist, nh, seq, ns)
        steps += 1


@generic
def record_node(s, level, prefix, cfg, rng, ws, scratch, games, g, positions, row):
    """Game g (prefix + the searched move + search play) and one positions row per player to
    move, from `row` on; returns the number of rows written."""
    num_players, neutral = cfg[3], cfg[4]
    options, moves, chosen, child, final, wlegal, wcounts, outcome, g_hist, g_seq, win_scratch = (
        scratch
    )
    g_returns, g_length, g_seq_len = games
    p_game, p_ply, p_player, p_state, p_mask, p_feat, p_action, p_outcome, p_scores, p_wins = (
        positions
    )
    player = current_player(s)
    for p in range(num_players):
        wcounts[p] = 0
        if player == SIMULTANEOUS or p == player:
            wcounts[p] = legal_actions(s, p, wlegal[p])
    final[:] = s
    if player == SIMULTANEOUS:
        searched_joint(s, cfg, rng, ws, options, moves)
        for p in range(num_players):
            chosen[p] = moves[p] if wcounts[p] > 0 else -1
        apply_joint(final, moves)
        nh, ns = _record(player, 0, moves, num_players, neutral, 0, g_hist, 0, g_seq, 0)
    else:
        chosen[:] = -1
        chosen[player] = choose(s, player, cfg, rng, ws)
        apply_action(final, chosen[player])
        nh, ns = _record(player, chosen[player], moves, num_players, neutral, player, g_hist,
                         0, g_seq, 0)  # fmt: skip
    a_nh, a_ns, a_steps = search_play(final, cfg, rng, ws, options, g_hist[nh:], g_seq[ns:],
                                      moves)  # fmt: skip
    returns(final, outcome)
    for p in range(num_players):
        g_returns[g, p] = outcome[p]
    g_length[g] = level + 1 + a_steps
    g_seq_len[g] = (prefix + ns + a_ns) // num_players
    written = 0
    for q in range(num_players):
        if chosen[q] < 0:
            continue
        r = row + written
        written += 1
        p_game[r], p_ply[r], p_player[r], p_action[r] = g, level, q, chosen[q]
        p_state[r] = s
        p_outcome[r] = g_returns[g, q]
        observation(s, q, p_feat[r])
        p_wins[r] = immediate_wins(s, q, cfg[0][0], num_players, neutral, win_scratch)[1]
        for t in range(wcounts[q]):
            a = wlegal[q, t]
            p_mask[r, a] = 1
            if a == chosen[q]:
                p_scores[r, a] = p_outcome[r]
                continue
            child[:] = s
            if player == SIMULTANEOUS:
                for p in range(num_players):
                    moves[p] = chosen[p] if chosen[p] >= 0 else neutral
                moves[q] = a
                apply_joint(child, moves)
            else:
                apply_action(child, a)
            search_play(child, cfg, rng, ws, options, g_hist[nh + a_nh :], g_seq[ns + a_ns :],
                        moves)  # fmt: skip
            returns(child, outcome)
            p_scores[r, a] = outcome[q]
    return written, nh + a_nh, ns + a_ns


@generic
def thorough_shard(start, branch, max_depth, cfg, num_actions, obs_size, max_len, rng, caps):
    """Enumerates the start (when branch == 0) and the subtree of its child `branch` down to
    `max_depth`, depth first; with caps = (0, 0) it only counts (games, position rows)."""
    num_players, neutral = cfg[3], cfg[4]
    record = caps[0] > 0
    size, width, levels = start.shape[0], max(num_actions, 64), max_depth + 1
    legal = np.empty((levels, num_players, width), dtype=np.int64)
    counts = np.zeros((levels, num_players), dtype=np.int64)
    total = np.zeros(levels, dtype=np.int64)
    index = np.zeros(levels, dtype=np.int64)
    states = np.empty((levels + 1, size), dtype=np.int64)
    kinds = np.zeros(levels, dtype=np.int64)  # the mover at each level of the path
    path = np.empty((levels, num_players), dtype=np.int64)  # the move(s) made at each level
    ws = _workspace(cfg[5], size, num_players, num_actions)
    span = (max_len + levels + 1) * num_players
    pre_hist = np.empty(span, dtype=np.int16)
    pre_seq = np.empty(span, dtype=np.int16)
    scratch = (
        np.empty((num_players, width), np.int64), np.empty(num_players, np.int64),
        np.empty(num_players, np.int64), np.empty(size, np.int64), np.empty(size, np.int64),
        np.empty((num_players, width), np.int64), np.zeros(num_players, np.int64),
        np.zeros(num_players), np.empty(3 * span, np.int16), np.empty(3 * span, np.int16),
        win_buffers(size, num_players, num_actions),
    )  # fmt: skip
    options, g_hist, g_seq = scratch[0], scratch[8], scratch[9]
    n, rows = caps
    games = (np.empty((n, num_players), np.float32), np.empty(n, np.int32), np.empty(n, np.int32))
    hist_off = np.zeros(n + 1, dtype=np.int64)
    seq_off = np.zeros(n * num_players + 1, dtype=np.int64)
    hist = np.empty(n * 16 + 16, dtype=np.int16)
    seq = np.empty(n * 16 * num_players + 16, dtype=np.int16)
    fill = np.zeros(2, dtype=np.int64)
    positions = (
        np.empty(rows, np.int64), np.empty(rows, np.int32), np.empty(rows, np.int8),
        np.empty((rows, size), np.int64), np.zeros((rows, num_actions), np.int8),
        np.zeros((rows, obs_size), np.float32), np.empty(rows, np.int16),
        np.empty(rows, np.float32), np.full((rows, num_actions), np.nan, np.float32),
        np.zeros(rows, np.int16),
    )  # fmt: skip
    # np.int64, not literal 0s: numba would compile record_node once more for Literal[int](0)
    g, n_rows, level, visit = np.int64(0), np.int64(0), np.int64(0), True
    states[0] = start
    while level >= 0:
        s = states[level]
        if visit:  # first time here: record the state, then open its children
            visit = False
            player = current_player(s)
            if player != TERMINAL and player != CHANCE and (level > 0 or branch == 0):
                if record:
                    pre_nh, pre_ns = np.int64(0), np.int64(0)
                    for lv in range(level):
                        pre_nh, pre_ns = _record(kinds[lv], path[lv, 0], path[lv], num_players,
                                                 neutral, kinds[lv], pre_hist, pre_nh, pre_seq,
                                                 pre_ns)  # fmt: skip
                    written, nh, ns = record_node(s, level, pre_ns, cfg, rng, ws, scratch,
                                                  games, g, positions, n_rows)  # fmt: skip
                    hist, seq = _append_game(hist, seq, fill, hist_off, seq_off, g,
                                             num_players, pre_hist[:pre_nh], g_hist[:nh],
                                             pre_seq[:pre_ns], g_seq[:ns])  # fmt: skip
                    n_rows += written
                else:
                    for p in range(num_players):
                        if (player == SIMULTANEOUS or p == player) and legal_actions(
                            s, p, options[p]
                        ) > 0:
                            n_rows += 1
                g += 1
            total[level] = 0
            if player != TERMINAL and level < max_depth:
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
            path[level, 0] = legal[level, 0, index[level]]
        level += 1
        visit = True
    g_returns, g_length, g_seq_len = games
    states_of = np.zeros(g, dtype=np.int64)
    return (
        (states_of, g_returns[:g], g_length[:g], g_seq_len[:g], hist_off[: g + 1],
         hist[: fill[0]], seq_off[: g * num_players + 1], seq[: fill[1]]),
        tuple_head(positions, n_rows),
        g,
        n_rows,
    )  # fmt: skip


@njit(cache=True)
def tuple_head(positions, n):
    return (
        positions[0][:n], positions[1][:n], positions[2][:n], positions[3][:n],
        positions[4][:n], positions[5][:n], positions[6][:n], positions[7][:n],
        positions[8][:n], positions[9][:n],
    )  # fmt: skip


@njit(cache=True)
def _placeholder_observation(s, player, out):  # pragma: no cover - replaced by bind
    out[:] = 0.0


observation = _placeholder_observation  # bound to the game's observation kernel


def _loop(game: Game):
    heuristic = game.evaluate if game.evaluate is not None else zero_evaluate
    return bind(
        thorough_shard,
        game.kernels.search(),
        observation=game.kernels.observation,
        evaluate=heuristic,
        network_value=zero_network,
    )


def generate_shard(
    game: Game, params: dict[str, Any], seed: int, shard: int, first_game_id: int
) -> dict[str, pa.Table]:
    start = _root(game, 0)
    sequence = np.random.SeedSequence([int(seed), int(shard)])
    loop = _loop(game)
    max_depth = int(params["x"]) or game.max_game_length
    mode = HEURISTIC if game.evaluate is not None else PLAYOUT
    cfg = (
        config(game, mode, int(params["z"])),
        game.evaluate is not None,
        int(params["z"]),
        game.num_players,
        game.neutral_action,
        int(params["y"]),
    )
    meta = (game.num_actions, int(np.prod(game.observation_shape)), game.max_game_length)
    seed_rng = int(sequence.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
    *_, n_games, n_rows = loop(start, shard, max_depth, cfg, *meta, new_rng(seed_rng), (0, 0))
    games, positions, _, _ = loop(
        start, shard, max_depth, cfg, *meta, new_rng(seed_rng), (n_games, n_rows)
    )
    seeds = np.zeros(1, dtype=np.int64)
    agents = [f"search:depth={int(params['y'])}"] * game.num_players  # the core, fixed depth
    return build_tables(game, "thorough", first_game_id, seeds, agents, games, positions)
