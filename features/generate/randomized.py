"""Randomized data generation: X random non-terminal states, Y random final states from each.

A random state is reached by a random number (0..Z) of random moves from the start; a move
that would end the game is replaced by another one (the study's "step back and try another
move"); when every move ends it, the walk stops early. From each state the Y playouts are
spread round robin over the legal actions of the side to move (each living player in a
simultaneous game, independently), so `action_scores` holds the mean final return after each
action and `outcome` the mean over all Y. Every playout is a whole game (prefix + playout)
with a games row and one sequences row per player; each state gets one positions row per side
to move, attached to its first playout's game. Everything per state runs in one bound numba
loop writing flat arrays; Arrow tables are built from them in bulk.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit

from agents.guards import immediate_wins, win_buffers
from engine.bits import new_rng, rand_below
from engine.loops import sample_chance
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
from features.generate import checked_scenario
from features.generate.flat_tables import build_tables

TRIES = 8  # random joint moves / chance draws tried before a walk gives up on a step

#: x random states, y playouts each; games (optional) = total playouts, x then follows;
#: z = most random moves to a state (0: the game's max length - 1); shard_size in games;
#: scenario = options of each walk's seeded start (Lazerbike's start=random, as matches play)
PARAMS: dict[str, Any] = {"x": 1000, "y": 10, "z": 0, "games": None, "shard_size": 20000,
                          "scenario": {}}  # fmt: skip


def validate_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    y = int(params["y"])
    if params.get("games") is not None:
        params["x"] = math.ceil(int(params["games"]) / y)
        total = int(params["games"])
    else:
        total = int(params["x"]) * y
    if int(params["x"]) < 1:
        raise DataError("X = 0 cannot work: randomized needs at least one random state")
    params["total_games"] = total
    params["z"] = int(params["z"]) or max(game.max_game_length - 1, 0)
    params["scenario"] = checked_scenario(game, params["scenario"], "randomized")
    if "opening" in params["scenario"]:
        raise DataError("randomized does not use --opening: its random walk is the opening")
    params["states_per_shard"] = max(1, int(params["shard_size"]) // y)
    return params


def num_shards(game: Game, params: dict[str, Any]) -> int:
    return math.ceil(int(params["x"]) / int(params["states_per_shard"]))


def game_id_stride(game: Game, params: dict[str, Any]) -> int:
    """Ids run 0..total-1 without gaps: each shard plays states_per_shard * Y games."""
    return int(params["states_per_shard"]) * int(params["y"])


# ---- the numba part ----------------------------------------------------------------------------
@njit(cache=True)
def _grow(buffer, used, extra):
    """`buffer`, or a copy twice as large when `extra` more entries would not fit."""
    if used + extra <= buffer.shape[0]:
        return buffer
    bigger = np.empty(max(2 * buffer.shape[0], used + extra), dtype=buffer.dtype)
    bigger[:used] = buffer[:used]
    return bigger


@njit(cache=True)
def _append_game(hist, seq, fill, hist_off, seq_off, g, num_players, pre_h, h, pre_s, sq):
    """Appends game g: history prefix + rest, and its action matrix once per player's row.
    Returns the (possibly grown) history and sequence buffers."""
    n = fill[0]
    hist = _grow(hist, n, pre_h.shape[0] + h.shape[0])
    hist[n : n + pre_h.shape[0]] = pre_h
    n += pre_h.shape[0]
    hist[n : n + h.shape[0]] = h
    fill[0] = n + h.shape[0]
    hist_off[g + 1] = fill[0]
    m = pre_s.shape[0] + sq.shape[0]
    seq = _grow(seq, fill[1], m * num_players)
    for p in range(num_players):
        n = fill[1]
        seq[n : n + pre_s.shape[0]] = pre_s
        seq[n + pre_s.shape[0] : n + m] = sq
        fill[1] = n + m
        seq_off[g * num_players + p + 1] = fill[1]
    return hist, seq


@njit(cache=True, inline="always")
def _record(kind, action, joint, num_players, neutral, mover, hist, nh, seq, ns):
    """Appends one step to a history (flat) and a sequence matrix (neutral-padded); kind is
    the player (>= 0), SIMULTANEOUS or CHANCE. Returns the new (nh, ns)."""
    if kind == SIMULTANEOUS:
        for p in range(num_players):
            hist[nh + p] = joint[p]
            seq[ns + p] = joint[p]
        return nh + num_players, ns + num_players
    hist[nh] = action
    if kind == CHANCE:
        return nh + 1, ns
    for p in range(num_players):
        seq[ns + p] = neutral
    seq[ns + mover] = action
    return nh + 1, ns + num_players


@generic(inline=True)
def random_joint(s, num_players, neutral, rng, buffer, joint):
    for p in range(num_players):
        count = legal_actions(s, p, buffer)
        joint[p] = buffer[rand_below(rng, count)] if count > 0 else neutral


@generic(inline=True)
def walk(s, steps, num_players, neutral, rng, buffer, joint, child, hist, seq, counters):
    """Up to `steps` random moves that never end the game; counters = [history entries,
    sequence entries, steps]. Ends on a decision node when it can; False if stuck on chance."""
    nh, ns, done = 0, 0, 0
    while True:
        player = current_player(s)
        if done >= steps and player != CHANCE:
            break
        moved = False
        if player >= 0:
            count = legal_actions(s, player, buffer)
            for t in range(count):  # a random order, stopping at the first safe move
                j = t + rand_below(rng, count - t)
                buffer[t], buffer[j] = buffer[j], buffer[t]
                child[:] = s
                apply_action(child, buffer[t])
                if current_player(child) != TERMINAL:
                    nh, ns = _record(
                        player, buffer[t], joint, num_players, neutral, player, hist, nh, seq, ns
                    )
                    moved = True
                    break
        elif player == SIMULTANEOUS:
            for _ in range(TRIES):
                random_joint(s, num_players, neutral, rng, buffer, joint)
                child[:] = s
                apply_joint(child, joint)
                if current_player(child) != TERMINAL:
                    nh, ns = _record(player, 0, joint, num_players, neutral, 0, hist, nh, seq, ns)
                    moved = True
                    break
        elif player == CHANCE:
            for _ in range(TRIES):
                outcome = sample_chance(s, buffer, rng)
                child[:] = s
                apply_action(child, outcome)
                if current_player(child) != TERMINAL:
                    nh, ns = _record(
                        player, outcome, joint, num_players, neutral, 0, hist, nh, seq, ns
                    )
                    moved = True
                    break
        if not moved:
            break
        s[:] = child
        done += 1
    counters[0], counters[1], counters[2] = nh, ns, done
    return current_player(s) != CHANCE


@generic
def randomized_states(
    starts,
    start_of,
    playouts,
    max_moves,
    teams,
    num_players,
    num_actions,
    neutral,
    obs_size,
    max_len,
    rng,
):
    """The whole shard: per state i (from starts[start_of[i]]), playouts[i] games."""
    n_states = start_of.shape[0]
    size = starts.shape[1]
    n_games = 0
    for i in range(n_states):
        n_games += playouts[i]
    width = max(num_actions, 64)
    buffer = np.empty(width, dtype=np.int64)
    joint = np.empty(num_players, dtype=np.int64)
    outcome = np.zeros(num_players, dtype=np.float64)
    counters = np.zeros(3, dtype=np.int64)
    win_scratch = win_buffers(size, num_players, num_actions)
    s = np.empty(size, dtype=np.int64)
    r = np.empty(size, dtype=np.int64)
    child = np.empty(size, dtype=np.int64)
    span = (max_moves + max_len + 1) * num_players
    pre_hist = np.empty(span, dtype=np.int16)
    pre_seq = np.empty(span, dtype=np.int16)
    g_hist = np.empty(span, dtype=np.int16)
    g_seq = np.empty(span, dtype=np.int16)
    legal = np.empty((num_players, width), dtype=np.int64)
    counts = np.zeros(num_players, dtype=np.int64)
    sums = np.zeros((num_players, width), dtype=np.float64)
    tries = np.zeros((num_players, width), dtype=np.int64)
    # games / sequences
    g_state = np.empty(n_games, dtype=np.int64)
    g_returns = np.empty((n_games, num_players), dtype=np.float32)
    g_length = np.empty(n_games, dtype=np.int32)
    g_seq_len = np.empty(n_games, dtype=np.int32)
    hist_off = np.zeros(n_games + 1, dtype=np.int64)
    seq_off = np.zeros(n_games * num_players + 1, dtype=np.int64)
    hist = np.empty(n_games * 32, dtype=np.int16)
    seq = np.empty(n_games * 32 * num_players, dtype=np.int16)
    # positions
    rows = n_states * num_players
    p_game = np.empty(rows, dtype=np.int64)
    p_ply = np.empty(rows, dtype=np.int32)
    p_player = np.empty(rows, dtype=np.int8)
    p_state = np.empty((rows, size), dtype=np.int64)
    p_mask = np.zeros((rows, num_actions), dtype=np.int8)
    p_feat = np.zeros((rows, obs_size), dtype=np.float32)
    p_action = np.empty(rows, dtype=np.int16)
    p_outcome = np.empty(rows, dtype=np.float32)
    p_scores = np.empty((rows, num_actions), dtype=np.float32)
    p_wins = np.zeros(rows, dtype=np.int16)
    fill = np.zeros(2, dtype=np.int64)  # history / sequence entries written so far
    g = 0
    n_rows = 0
    for i in range(n_states):
        for _ in range(1000):  # a walk stuck on a chance node starts over
            s[:] = starts[start_of[i]]
            if walk(
                s,
                rand_below(rng, max_moves + 1),
                num_players,
                neutral,
                rng,
                buffer,
                joint,
                child,
                pre_hist,
                pre_seq,
                counters,
            ):
                break
        pre_nh, pre_ns, pre_steps = counters[0], counters[1], counters[2]
        r[:] = s
        mover = current_player(r)
        for p in range(num_players):
            counts[p] = 0
            if mover == SIMULTANEOUS or p == mover:
                counts[p] = legal_actions(r, p, legal[p])
            for t in range(counts[p]):  # shuffled, so round robin favours no action
                j = t + rand_below(rng, counts[p] - t)
                legal[p, t], legal[p, j] = legal[p, j], legal[p, t]
            sums[p, :] = 0.0
            tries[p, :] = 0
        first_game = g
        for k in range(playouts[i]):
            s[:] = r
            nh, ns = 0, 0
            if mover == SIMULTANEOUS:
                for p in range(num_players):
                    joint[p] = legal[p, k % counts[p]] if counts[p] > 0 else neutral
                apply_joint(s, joint)
                nh, ns = _record(mover, 0, joint, num_players, neutral, 0, g_hist, nh, g_seq, ns)
            else:
                a = legal[mover, k % counts[mover]]
                apply_action(s, a)
                nh, ns = _record(
                    mover, a, joint, num_players, neutral, mover, g_hist, nh, g_seq, ns
                )
            steps = 1
            while True:  # random playout, recorded
                player = current_player(s)
                if player == TERMINAL:
                    break
                if player >= 0:
                    count = legal_actions(s, player, buffer)
                    a = buffer[rand_below(rng, count)]
                    apply_action(s, a)
                elif player == SIMULTANEOUS:
                    random_joint(s, num_players, neutral, rng, buffer, joint)
                    a = 0
                    apply_joint(s, joint)
                else:
                    a = sample_chance(s, buffer, rng)
                    apply_action(s, a)
                nh, ns = _record(
                    player, a, joint, num_players, neutral, player, g_hist, nh, g_seq, ns
                )
                steps += 1
            returns(s, outcome)
            for p in range(num_players):
                g_returns[g, p] = outcome[p]
                if counts[p] > 0:
                    slot = k % counts[p]
                    sums[p, slot] += outcome[p]
                    tries[p, slot] += 1
            g_state[g] = i
            g_length[g] = pre_steps + steps
            g_seq_len[g] = (pre_ns + ns) // num_players
            hist, seq = _append_game(
                hist, seq, fill, hist_off, seq_off, g, num_players, pre_hist[:pre_nh],
                g_hist[:nh], pre_seq[:pre_ns], g_seq[:ns],
            )  # fmt: skip
            g += 1
        for q in range(num_players):
            if counts[q] == 0:
                continue
            row = n_rows
            n_rows += 1
            p_game[row] = first_game
            p_ply[row] = pre_steps
            p_player[row] = q
            p_state[row] = r
            p_action[row] = legal[q, 0]
            total = 0.0
            for k in range(playouts[i]):
                total += g_returns[first_game + k, q]
            p_outcome[row] = total / max(playouts[i], 1)
            observation(r, q, p_feat[row])
            for a in range(num_actions):
                p_scores[row, a] = np.nan
            for t in range(counts[q]):
                a = legal[q, t]
                p_mask[row, a] = 1
                if tries[q, t] > 0:
                    p_scores[row, a] = sums[q, t] / tries[q, t]
            p_wins[row] = immediate_wins(r, q, teams, num_players, neutral, win_scratch)[1]
    return (
        (
            g_state,
            g_returns,
            g_length,
            g_seq_len,
            hist_off,
            hist[: fill[0]],
            seq_off,
            seq[: fill[1]],
        ),
        (
            p_game[:n_rows],
            p_ply[:n_rows],
            p_player[:n_rows],
            p_state[:n_rows],
            p_mask[:n_rows],
            p_feat[:n_rows],
            p_action[:n_rows],
            p_outcome[:n_rows],
            p_scores[:n_rows],
            p_wins[:n_rows],
        ),
    )


@njit(cache=True)
def _placeholder_observation(s, player, out):  # pragma: no cover - replaced by bind
    out[:] = 0.0


observation = _placeholder_observation  # bound to the game's observation kernel


# ---- Python side -------------------------------------------------------------------------------
def _loop(game: Game):
    return bind(randomized_states, game.kernels.search(), observation=game.kernels.observation)


def shard_states(params: dict[str, Any], shard: int) -> tuple[int, np.ndarray]:
    """(first state index, playouts per state) of a shard; only the last state may be short."""
    per = int(params["states_per_shard"])
    first = shard * per
    count = max(0, min(per, int(params["x"]) - first))
    y = int(params["y"])
    total = int(params["total_games"])
    starts = first + np.arange(count, dtype=np.int64)
    playouts = np.clip(total - starts * y, 0, y).astype(np.int64)
    return first, playouts


def start_states(game: Game, seeds: np.ndarray, scenario: dict[str, Any] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Initial state arrays for the scenario seeds; one row when the seed changes nothing."""
    scenario = scenario or {}
    first = game.new_state_array(seed=int(seeds[0]) if len(seeds) else 0, **scenario)
    probe = [game.new_state_array(seed=k, **scenario) for k in (1, 2, 3)]
    if all(np.array_equal(first, other) for other in probe):
        return first[None, :], np.zeros(len(seeds), dtype=np.int64)
    starts = np.stack([game.new_state_array(seed=int(k), **scenario) for k in seeds])
    return starts, np.arange(len(seeds), dtype=np.int64)


def generate_shard(
    game: Game, params: dict[str, Any], seed: int, shard: int, first_game_id: int
) -> dict[str, pa.Table]:
    _, playouts = shard_states(params, shard)
    sequence = np.random.SeedSequence([int(seed), int(shard)])
    seeds = np.random.default_rng(sequence).integers(0, 2**31, size=len(playouts))
    starts, start_of = start_states(game, seeds, params["scenario"])
    rng = new_rng(int(sequence.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)))
    obs_size = int(np.prod(game.observation_shape))
    games, positions = _loop(game)(
        starts,
        start_of,
        playouts,
        int(params["z"]),
        np.asarray(game.teams, dtype=np.int64),
        game.num_players,
        game.num_actions,
        game.neutral_action,
        obs_size,
        game.max_game_length,
        rng,
    )
    agents = ["random"] * game.num_players
    return build_tables(game, "randomized", first_game_id, seeds, agents, games, positions,
                        params["scenario"])  # fmt: skip
