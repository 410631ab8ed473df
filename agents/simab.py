"""Simultaneous alpha-beta for n-player simultaneous games: `simab:depth=N` or `simab:ms=T`.

After the original engine's controller: the seated player's node is MAX over its own actions;
its child MIN node enumerates the joint actions of every other player (team-mates included,
assumed to play their worst for us, so our choice never depends on them) and simulates the whole
lap there, own action plus joint, since nothing can be applied before everybody has chosen.
Alpha rises at MAX nodes and cuts at MIN nodes, beta the other way round, as in the two-player
case. One lap is one MAX/MIN pair; `depth` counts laps.

Leaves use the game's `evaluate(s, player)` heuristic in [-1, 1] (zero for a game without one);
a finished game scores its return times WIN_SCALE, minus the laps it took to win or plus the
laps it took to lose, so results dominate evaluations and survival lasts as long as it can. A
seated player who is out while the game goes on has lost for sure when no team-mate can act.

The search is one per-game compiled loop over an explicit stack; Python runs iterative
deepening over it for `ms=T`, with a node budget per depth estimated from the speed so far.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from agents.alphabeta import WIN_SCALE, result_value
from agents.base import Agent, AgentError, builder, option
from engine.protocol import SIMULTANEOUS, TERMINAL, Game, State
from engine.specialise import apply_joint, bind, current_player, generic, legal_actions

INF = 1e18
SIMS, LEAVES, ABORTED, MIN_NODES = 0, 1, 2, 3
MAX_DEPTH = 64


def evaluate(s, player):
    """Placeholder: `bind` replaces it with the game's heuristic (or `zero_evaluate`)."""
    raise TypeError("evaluate is only available inside a bound search")


@njit(cache=True)
def zero_evaluate(s, player):
    """The heuristic of a game without one: only finished games tell anything apart."""
    return 0.0


@generic(inline=True)
def open_lap(s, me, k, num_players, neutral, legal, counts):
    """The joint moves of the others at lap k (dead players: the neutral action); their count."""
    total = 1
    for p in range(num_players):
        if p == me:
            counts[k, p] = 1
            continue
        c = legal_actions(s, p, legal[k, p])
        if c == 0:
            legal[k, p, 0] = neutral
            c = 1
        counts[k, p] = c
        total *= c
    return total


@generic(inline=True)
def others_alive(s, me, teams, num_players, scratch):
    """Whether a team-mate of `me` can still act."""
    for q in range(num_players):
        if q != me and teams[q] == teams[me] and legal_actions(s, q, scratch) > 0:
            return True
    return False


@generic
def simab_search(root, me, depth, teams, num_players, num_actions, neutral, prune, first,
                 budget, stats):  # fmt: skip
    """One search of `depth` laps from `root` for `me`: (value, best own action). `first` is
    tried first at the root (the previous depth's choice); with `prune` off it is plain max-min.
    Stops (stats[ABORTED] = 1, result unusable) after `budget` simulated laps."""
    width = max(num_actions, 64)
    states = np.empty((depth + 1, root.shape[0]), dtype=np.int64)
    own = np.empty((depth, width), dtype=np.int64)
    own_n = np.zeros(depth, dtype=np.int64)
    own_i = np.zeros(depth, dtype=np.int64)
    legal = np.empty((depth, num_players, width), dtype=np.int64)
    counts = np.zeros((depth, num_players), dtype=np.int64)
    joints = np.zeros(depth, dtype=np.int64)
    joint_i = np.zeros(depth, dtype=np.int64)
    max_val = np.zeros(depth, dtype=np.float64)
    max_alpha = np.zeros(depth, dtype=np.float64)
    max_beta = np.zeros(depth, dtype=np.float64)
    min_val = np.zeros(depth, dtype=np.float64)
    min_alpha = np.zeros(depth, dtype=np.float64)
    min_beta = np.zeros(depth, dtype=np.float64)
    joint = np.empty(num_players, dtype=np.int64)
    scratch = np.empty(width, dtype=np.int64)
    out = np.zeros(num_players, dtype=np.float64)
    states[0] = root
    own_n[0] = legal_actions(root, me, own[0])
    if own_n[0] == 0:
        return 0.0, neutral
    for i in range(own_n[0]):  # the previous best first
        if own[0, i] == first:
            own[0, i] = own[0, 0]
            own[0, 0] = first
    best = own[0, 0]
    joints[0] = open_lap(root, me, 0, num_players, neutral, legal, counts)
    max_val[0], max_alpha[0], max_beta[0] = -INF, -INF, INF
    level = 0
    while True:
        k = level >> 1
        if level & 1 == 0:  # MAX node of lap k
            if own_i[k] == own_n[k] or (prune and max_alpha[k] >= max_beta[k]):
                v = max_val[k]
                if k == 0:
                    return v, best
                level -= 1
                k -= 1
                if v < min_val[k]:
                    min_val[k] = v
                if v < min_beta[k]:
                    min_beta[k] = v
                joint_i[k] += 1
                continue
            min_val[k], min_alpha[k], min_beta[k] = INF, max_alpha[k], max_beta[k]
            joint_i[k] = 0
            stats[MIN_NODES] += 1
            level += 1
            continue
        # MIN node of lap k: the others' joint moves against own[k, own_i[k]]
        if joint_i[k] == joints[k] or (prune and min_alpha[k] >= min_beta[k]):
            v = min_val[k]
            level -= 1
            if v > max_val[k]:
                max_val[k] = v
                if k == 0:
                    best = own[0, own_i[0]]
            if v > max_alpha[k]:
                max_alpha[k] = v
            own_i[k] += 1
            continue
        index = joint_i[k]
        for p in range(num_players):
            if p == me:
                joint[p] = own[k, own_i[k]]
            else:
                c = counts[k, p]
                joint[p] = legal[k, p, index % c]
                index //= c
        child = states[k + 1]
        child[:] = states[k]
        apply_joint(child, joint)
        stats[SIMS] += 1
        if stats[SIMS] > budget:
            stats[ABORTED] = 1
            return 0.0, best
        if current_player(child) == TERMINAL:
            v = result_value(child, me, k + 1, out)
        else:
            n = legal_actions(child, me, own[k + 1]) if k + 1 < depth else 0
            if n == 0 and legal_actions(child, me, scratch) == 0:
                if others_alive(child, me, teams, num_players, scratch):
                    v = evaluate(child, me)
                else:
                    v = -WIN_SCALE + k + 1
                stats[LEAVES] += 1
            elif n == 0:
                v = evaluate(child, me)
                stats[LEAVES] += 1
            else:
                own_n[k + 1] = n
                own_i[k + 1] = 0
                joints[k + 1] = open_lap(child, me, k + 1, num_players, neutral, legal, counts)
                max_val[k + 1] = -INF
                max_alpha[k + 1], max_beta[k + 1] = min_alpha[k], min_beta[k]
                level += 1
                continue
        if v < min_val[k]:
            min_val[k] = v
        if v < min_beta[k]:
            min_beta[k] = v
        joint_i[k] += 1


def bound_search(game: Game):
    """The compiled search for `game`, with its heuristic (or none)."""
    return bind(simab_search, game.kernels.search(), evaluate=game.evaluate or zero_evaluate)


def search(game: Game, s: np.ndarray, player: int, depth: int, prune: bool = True,
           first: int = -1, budget: int = 1 << 62) -> tuple[float, int, np.ndarray]:  # fmt: skip
    """(value, best action, stats [sims, leaves, aborted, min nodes]) of one fixed-depth search."""
    stats = np.zeros(4, dtype=np.int64)
    teams = np.array(game.teams, dtype=np.int64)
    meta = (game.num_players, game.num_actions, game.neutral_action)
    value, action = bound_search(game)(s, player, depth, teams, *meta, prune, first, budget, stats)
    return float(value), int(action), stats


@builder("simab")
class SimABAgent(Agent):
    """Simultaneous alpha-beta with iterative deepening under a lap or time budget."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        if options:
            raise AgentError(f"simab: unknown option(s) {sorted(options)}; known: depth, ms")
        if self.depth < 0 or self.ms < 0 or self.depth > MAX_DEPTH:
            raise AgentError(f"simab: depth in 0..{MAX_DEPTH}, ms >= 0")
        if not game.simultaneous:
            raise AgentError(f"simab: {game.name} is turn-based; use alphabeta")
        if not self.depth and not self.ms:
            self.depth = 3
        self.last: tuple[float, int, int] | None = None  # value, action, depth reached

    def step(self, state: State, player: int | None = None) -> int:
        if player is None:
            if self.game.num_players != 1:
                raise AgentError("simab: a simultaneous game needs the seated player")
            player = 0
        if state.current_player() != SIMULTANEOUS or not state.legal_actions(player):
            return self.game.neutral_action
        if self.ms:
            return self._timed(state.array, player)
        value, action, _ = search(self.game, state.array, player, self.depth)
        self.last = (value, action, self.depth)
        return action

    def _timed(self, s: np.ndarray, player: int) -> int:
        """Iterative deepening until the next depth would not fit in the time left."""
        start = time.perf_counter()
        deadline = start + self.ms / 1000
        action, rate, sims_before = -1, 0.0, 0
        for depth in range(1, MAX_DEPTH + 1):
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            budget = max(int(left * rate), 64) if rate else 1 << 62
            tick = time.perf_counter()
            value, best, stats = search(self.game, s, player, depth, first=action, budget=budget)
            spent = time.perf_counter() - tick
            if stats[ABORTED]:
                break
            action = best
            self.last = (value, action, depth)
            rate = stats[SIMS] / max(spent, 1e-6)
            if abs(value) > WIN_SCALE / 2 or stats[SIMS] == sims_before:
                break  # the result is known, or deeper search sees nothing new
            sims_before = stats[SIMS]
        if action < 0:  # not even depth 1 fitted
            value, action, _ = search(self.game, s, player, 1)
            self.last = (value, action, 1)
        return action
