"""Fitness evaluation for NEAT on the numba engine: whole games per network, threads over cores.

`play_networks` is a generic loop (engine.specialise): it plays a batch of games to the end, each
seat driven by a packed network through agents.neat.codec (encode, forward, decode with move
guiding), and records per seat what the study's fitness functions need. It never names a game:
it reads the game's kernels, its observation planes, its `position_key` (the study's stale rule:
a position seen more than `stale_limit` times ends the game) and its `tile_moves()` layout.
Threads run chunks of games side by side (the loop releases the GIL), so a generation uses every
core; nothing in it is random, so fitness is reproducible whatever the thread count.

The study's fitness functions (§6; formulas reconstructed so that they reproduce every figure it
reports, see the digest notes-001-003.md) are computed from those statistics in `fitness`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from agents.neat.codec import (
    AFTERSTATE,
    DECODINGS,
    MOVE_FEATURES,
    SCORED,
    afterstate_inputs,
    decode,
    encode,
    forward,
    forward_logit,
    move_features,
)
from agents.neat.network import Packed
from engine.bits import rand_below
from engine.protocol import Game
from engine.specialise import apply_action, bind, current_player, generic, legal_actions, returns

# per-seat statistics, stats[game, seat, ...]
(
    MOVES,
    PRODUCTIONS,
    ATTACKS,
    TRANSPORTS,
    GUIDED,
    PAYOFF,
    TILES,
    TROOPS,
    OPP_TILES,
    OPP_TROOPS,
    RETURN,
    STALE,
) = range(12)
NUM_STATS = 12
RANDOM_SEAT = -2  # a seat playing uniformly random legal moves (a sparring partner)
SCRIPTED_SEAT = -3  # a seat played by the game's `sparring_action` (a fixed scripted player)
STAT_NAMES = (
    "moves",
    "productions",
    "attacks",
    "transports",
    "guided",
    "payoff",
    "tiles",
    "troops",
    "opp_tiles",
    "opp_troops",
    "return",
    "stale",
)


def observation(s, player, out):
    """Placeholder: `bind` puts the game's observation kernel here."""
    raise TypeError("only inside a bound loop")


def position_key(s):
    """Placeholder: `bind` puts the game's position_key kernel here."""
    raise TypeError("only inside a bound loop")


def sparring_action(s, player):
    """Placeholder: `bind` puts the game's sparring_action kernel here (or `no_sparring`)."""
    raise TypeError("only inside a bound loop")


@njit(cache=True)
def no_sparring(s, player):
    """The sparring kernel of a game without one: never moves (the seat plays its first legal
    move), so a batch that seats SCRIPTED_SEAT there is refused before it plays."""
    return -1


@njit(cache=True, inline="always")
def _balance(obs, n, max_count, out):
    """(own tiles, own troops, opponent tiles, opponent troops) from observation planes."""
    out[:] = 0.0
    for i in range(n):
        if obs[i] > 0:
            out[0] += 1.0
            out[1] += obs[i] * max_count
        if obs[n + i] > 0:
            out[2] += 1.0
            out[3] += obs[n + i] * max_count


@generic(nogil=True)
def play_networks(
    games,
    starts,
    seats,
    mode,
    nodes,
    bias,
    response,
    kind,
    links,
    weight,
    net_rows,
    width,
    num_inputs,
    num_outputs,
    obs_size,
    neighbours,
    ids,
    max_count,
    turn_tiles,
    payoff,
    stale_limit,
    table_bits,
    random_seed,
    stats,
    trace,
):
    """Plays games[i] from starts[games[i]] with seats[games[i], player] = network index (-1: the
    seat never moves; RANDOM_SEAT: uniform random moves, seeded by random_seed and the game;
    SCRIPTED_SEAT: the game's sparring_action, its first legal move when that has none),
    writing stats[game, seat, :]. trace (when non-empty) receives the actions of the first game
    listed, -1 after its end."""
    rng = np.zeros(1, dtype=np.uint64)
    n = neighbours.shape[0]
    legal = np.empty(n * ids, dtype=np.int64)
    obs = np.zeros(obs_size, dtype=np.float64)
    inputs = np.zeros(n, dtype=np.float64)
    feats = np.zeros((n * ids, MOVE_FEATURES), dtype=np.float64)
    values = np.zeros(width, dtype=np.float64)
    out = np.zeros(num_outputs, dtype=np.float64)
    before = np.zeros(4, dtype=np.float64)
    after = np.zeros(4, dtype=np.float64)
    result = np.zeros(2, dtype=np.float64)
    child = np.empty(starts.shape[1], dtype=np.int64)  # afterstate: positions moves lead to
    seen = np.zeros(obs_size, dtype=np.float64)
    rows = np.zeros((n * ids, n), dtype=np.float64)
    table_size = 1 << table_bits
    keys = np.zeros(table_size, dtype=np.int64)
    counts = np.zeros(table_size, dtype=np.int64)
    for gi in range(games.shape[0]):
        g = games[gi]
        s = starts[g].copy()
        rng[0] = np.uint64(random_seed * 1000003 + g) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
        counts[:] = 0
        played = 0
        stale = False
        while True:
            player = current_player(s)
            if player < 0:
                break
            count = legal_actions(s, player, legal)
            observation(s, player, obs)
            _balance(obs, n, max_count, before)
            net = seats[g, player]
            if net == RANDOM_SEAT:
                action, guided = legal[rand_below(rng, count)], False
            elif net == SCRIPTED_SEAT:
                action, guided = sparring_action(s, player), False
                if action < 0:
                    action = legal[0]
            elif mode == SCORED or mode == AFTERSTATE:  # one value per legal move, best played
                if mode == SCORED:  # the network reads each move's features
                    move_features(obs, n, legal, count, neighbours, ids, max_count, feats)
                    candidates = feats
                else:  # ... or the board each move leads to, and is ranked before activation
                    afterstate_inputs(s, player, legal, count, n, turn_tiles, child, seen, rows)
                    candidates = rows
                action, guided, top = legal[0], False, -np.inf
                for i in range(count):
                    value = forward_logit(
                        net, nodes, bias, response, kind, links, weight, net_rows, values,
                        candidates[i, :num_inputs], 0,
                    )  # fmt: skip
                    if value > top:
                        action, top = legal[i], value
            else:
                encode(obs, n, player, turn_tiles, inputs)
                forward(
                    net, nodes, bias, response, kind, links, weight, net_rows, values, inputs, out
                )
                action, guided = decode(
                    mode, out, player, legal, count, neighbours, ids, max_count, turn_tiles
                )
            tile = action // ids
            idx = action % ids
            if idx == 0:
                stats[g, player, PRODUCTIONS] += 1
            elif obs[neighbours[tile, (idx - 1) // max_count]] > 0:
                stats[g, player, TRANSPORTS] += 1
            else:
                stats[g, player, ATTACKS] += 1
            stats[g, player, MOVES] += 1
            if guided:
                stats[g, player, GUIDED] += 1
            if trace.shape[0] > 0 and gi == 0 and played < trace.shape[0]:
                trace[played] = action
            played += 1
            apply_action(s, action)
            observation(s, player, obs)
            _balance(obs, n, max_count, after)
            for k in range(4):
                stats[g, player, PAYOFF] += payoff[k] * (after[k] - before[k])
            key = position_key(s)
            slot = key & (table_size - 1)
            while counts[slot] > 0 and keys[slot] != key:
                slot = (slot + 1) & (table_size - 1)
            keys[slot] = key
            counts[slot] += 1
            if counts[slot] > stale_limit:
                stale = True
                break
        if trace.shape[0] > 0 and gi == 0:
            trace[played:] = -1
        returns(s, result)
        for p in range(2):
            observation(s, p, obs)
            _balance(obs, n, max_count, after)
            stats[g, p, TILES] = after[0]
            stats[g, p, TROOPS] = after[1]
            stats[g, p, OPP_TILES] = after[2]
            stats[g, p, OPP_TROOPS] = after[3]
            stats[g, p, RETURN] = result[p]
            stats[g, p, STALE] = 1.0 if stale else 0.0


@dataclass
class Batch:
    """Games to play: start states (one row each) and the network index of each seat."""

    starts: np.ndarray  # (games, state size) int64
    seats: np.ndarray  # (games, 2) int64: a network, -1 (never moves), RANDOM_ or SCRIPTED_SEAT
    random_seed: int = 0


class Evaluator:
    """Plays batches of games between packed networks on `workers` threads."""

    def __init__(
        self,
        game: Game,
        decoding: str = "guided",
        workers: int = 2,
        stale_limit: int = 3,
        payoff: tuple[float, ...] = (0, 0, 0, 0),
    ):
        if game.tile_moves is None or game.position_key is None:
            raise ValueError(f"{game.name} has no tile-move layout: NEAT cannot play it")
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {list(DECODINGS)}, got {decoding!r}")
        self.game = game
        self.layout = game.tile_moves()
        self.mode = DECODINGS[decoding]
        self.workers = max(1, int(workers))
        self.stale_limit = int(stale_limit)
        self.payoff = np.asarray(payoff, dtype=np.float64)
        self.loop = bind(
            play_networks,
            game.kernels.search(),
            observation=game.kernels.observation,
            position_key=game.position_key,
            sparring_action=game.sparring_action or no_sparring,
        )
        self.table_bits = max(10, int(np.ceil(np.log2(2 * game.max_game_length + 2))))

    def play(self, packed: Packed, batch: Batch, trace_game: int | None = None) -> np.ndarray:
        """stats[game, seat, stat] for every game of the batch (and the trace when asked)."""
        if self.game.sparring_action is None and (batch.seats == SCRIPTED_SEAT).any():
            raise ValueError(f"{self.game.name} has no sparring_action to seat")
        total = len(batch.starts)
        stats = np.zeros((total, 2, NUM_STATS), dtype=np.float64)
        n_out = packed.net_rows.shape[1] - 2
        obs_size = int(np.prod(self.game.observation_shape))
        layout = self.layout
        fixed = (
            batch.starts,
            batch.seats,
            self.mode,
            *packed.arrays(),
            packed.width,
            packed.num_inputs,
            n_out,
            obs_size,
            layout["neighbours"],
            layout["ids_per_tile"],
            layout["max_count"],
            layout["turn_tiles"],
            self.payoff,
            self.stale_limit,
            self.table_bits,
            int(batch.random_seed),
            stats,
        )
        if trace_game is not None:
            trace = np.full(self.game.max_game_length, -1, dtype=np.int64)
            self.loop(np.array([trace_game], dtype=np.int64), *fixed, trace)
            self.last_trace = trace[trace >= 0]
            return stats
        none = np.zeros(0, dtype=np.int64)
        chunks = np.array_split(np.arange(total, dtype=np.int64), min(total, 4 * self.workers))
        if self.workers == 1:
            for chunk in chunks:
                self.loop(chunk, *fixed, none)
        else:
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(lambda chunk: self.loop(chunk, *fixed, none), chunks))
        return stats


# ---- the study's fitness functions (§6) ------------------------------------------------------
def fitness(
    case: str,
    stats: np.ndarray,
    start: np.ndarray,
    game: Game,
    seat: int = 0,
    win_bonus: float = 0.0,
    margin_bonus: float = 0.0,
) -> np.ndarray:
    """Fitness of `seat` in each game (in % for the presets, the mean payoff for the duel).

    expand-alone   50 (t/n)^2 + won 50 (1 - R/limit)^2        (t: blue tiles, R: rounds)
    beat-red-*     30 x/x0 + 20 k/k0 + 20 won + 30 won (1 - R/limit)   (x: red tiles taken,
                   k: red troops killed, x0 / k0: red's tiles / troops at the start)
    against-red    50 t/n + won 50 (1 - R/limit)
    duel           mean per-move payoff (+ win_bonus x the game's return + margin_bonus x the
                   tile margin / n at the end; both 0 in the study)
    """
    s = stats[:, seat]
    n = game.num_tiles
    won = (s[:, RETURN] > 0).astype(np.float64)
    rounds = s[:, MOVES]
    share = 1.0 - rounds / game.rounds
    if case == "expand-alone":
        return 50 * (s[:, TILES] / n) ** 2 + won * 50 * share**2
    if case in ("beat-red-easy", "beat-red-hard"):
        board = start[-n:]
        red_tiles, red_troops = float((board < 0).sum()), float(-board[board < 0].sum())
        taken = (red_tiles - s[:, OPP_TILES]) / red_tiles
        killed = (red_troops - s[:, OPP_TROOPS]) / red_troops
        return 30 * taken + 20 * killed + 20 * won + 30 * won * share
    if case == "against-red":
        return 50 * s[:, TILES] / n + won * 50 * share
    if case == "duel":
        margin = (s[:, TILES] - s[:, OPP_TILES]) / n
        payoff = s[:, PAYOFF] / np.maximum(s[:, MOVES], 1)
        return payoff + win_bonus * s[:, RETURN] + margin_bonus * margin
    raise ValueError(f"no fitness function for {case!r}")


def summary(stats: np.ndarray, seat: int = 0) -> dict[str, Any]:
    """One game's statistics for `seat` as a dict (reports, MLflow)."""
    return {name: float(stats[seat, i]) for i, name in enumerate(STAT_NAMES)}
