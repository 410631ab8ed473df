"""TD learning of study 002 in numba: one turn, self-play training, network-vs-network games.

Training (models.td) and play (`td:model=…`, agents.td.agent) run the same loops, so a trained
network plays exactly as it learned. The loops are written once against the game's kernels and
its observation, and once against the network through four hooks (`prepare`, `child_value`,
`current_value`, `learn`) that each architecture binds: the study's one-hidden-layer network
(agents.td.mlp) or an n-tuple network (agents.td.ntuple). The input is the study's encoding
(§2.1.1) for any board game: the observation seen by seat 0, whose first planes are seat 0's
pieces then seat 1's, row by row (Othello: 64 black bits, then 64 white bits).

The output estimates seat 1's result ("the victory probability of white", §2.1.3): seat 1
picks the successor with the highest estimate, seat 0 the one with the highest complement
1 - v, so one network plays both sides. Finished games are valued by their result: seat 1's
return mapped to [0, 1] (win 1, draw 0.5, loss 0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from engine.bits import rand_below, rand_unit
from engine.protocol import TERMINAL
from engine.specialise import apply_action, current_player, generic, legal_actions, returns

#: move-selection rules (§2.4); RANDOM ignores the network (the study's random opponent)
GREEDY, EPSILON_GREEDY, SOFTMAX, RANDOM = 0, 1, 2, 3
SELECTIONS = {"greedy": GREEDY, "egreedy": EPSILON_GREEDY, "softmax": SOFTMAX, "random": RANDOM}
VALUE_SEAT = 1  # the seat whose result the network estimates


def observation(s, player, out):
    """Placeholder: `bind(..., observation=kernels.observation)` supplies the game's kernel."""
    raise TypeError("observation is only available inside a bound loop")


# the network's hooks, bound per architecture (agents.td.mlp, agents.td.ntuple); `net` is the
# architecture's tuple of weights, settings and scratch arrays
def prepare(net, x):
    """Caches what the parent position x (seat 0's observation) means to the network."""
    raise TypeError("prepare is only available inside a bound loop")


def child_value(net, x, xc):
    """The estimate for seat 1 of a child whose observation is xc (parent prepared with x)."""
    raise TypeError("child_value is only available inside a bound loop")


def current_value(net):
    """The estimate for seat 1 of the prepared parent."""
    raise TypeError("current_value is only available inside a bound loop")


def learn(net, x, v, rate, delta):
    """One step of rate * delta (= v - target) down the gradient of v at the prepared parent."""
    raise TypeError("learn is only available inside a bound loop")


def evaluate(s, player):
    """Placeholder: `bound` supplies the game's heuristic (the heuristic training opponent)."""
    raise TypeError("evaluate is only available inside a bound loop")


@njit(cache=True, inline="always")
def result_value(out):
    """A finished game's value on the network's scale: seat 1's return in [-1, 1] → [0, 1]."""
    return 0.5 * (out[VALUE_SEAT] + 1.0)


@njit(cache=True, inline="always")
def mover_score(value, mover):
    """The study's perspective rule: seat 1 maximises v, seat 0 the complement 1 - v."""
    return value if mover == VALUE_SEAT else 1.0 - value


@njit(cache=True)
def choose(values, n, mover, rule, epsilon, temperature, rng):
    """(best index, chosen index) among n successors; the first best wins ties.

    ε-greedy plays a uniformly random move (possibly the best) with probability ε; softmax
    draws a move with probability ∝ exp(score / temperature) (the study: temperature 1)."""
    best = 0
    for i in range(1, n):
        if mover_score(values[i], mover) > mover_score(values[best], mover):
            best = i
    if rule == GREEDY or n == 1:
        return best, best
    if rule == RANDOM:
        return best, rand_below(rng, n)
    if rule == EPSILON_GREEDY:
        if rand_unit(rng) < epsilon:
            return best, rand_below(rng, n)
        return best, best
    top = mover_score(values[best], mover)  # softmax, shifted by the maximum for stability
    total = 0.0
    for i in range(n):
        total += math.exp((mover_score(values[i], mover) - top) / temperature)
    u = rand_unit(rng) * total
    acc = 0.0
    for i in range(n - 1):
        acc += math.exp((mover_score(values[i], mover) - top) / temperature)
        if u < acc:
            return best, i
    return best, n - 1


class Workspace:
    """The scratch arrays one bound turn needs besides the network's own."""

    def __init__(self, game):
        width = max(game.num_actions, 64)
        state_size = game.new_initial_state(seed=0).array.shape[0]
        cells = int(np.prod(game.observation_shape))
        self.arrays = (
            np.empty(width, dtype=np.int64),  # moves
            np.empty(width, dtype=np.float64),  # successor values
            np.empty(state_size, dtype=np.int64),  # child state
            np.zeros(cells, dtype=np.float32),  # the parent's observation
            np.zeros(cells, dtype=np.float32),  # a child's observation
            np.zeros(game.num_players, dtype=np.float64),  # returns
        )


@generic(inline=True)
def successor_values(s, mover, net, x, moves, values, child, obs, out):
    """Fills moves and values (the estimate for seat 1, or the result of a finished game) for
    every legal move of `mover`; returns the count. The parent is prepared with x."""
    n = legal_actions(s, mover, moves)
    for k in range(n):
        child[:] = s
        apply_action(child, moves[k])
        if current_player(child) == TERMINAL:
            returns(child, out)
            values[k] = result_value(out)
        else:
            observation(child, 0, obs)
            values[k] = child_value(net, x, obs)
    return n


@generic(inline=True)
def scored_turn(s, mover, net, rule, epsilon, temperature, rng, moves, values, child, x, obs, out):
    """Prepares the network on `s` (input x), values every successor of `mover` and picks one
    by `rule`: returns (count, best index, chosen index)."""
    observation(s, 0, x)
    prepare(net, x)
    n = successor_values(s, mover, net, x, moves, values, child, obs, out)
    best, chosen = choose(values, n, mover, rule, epsilon, temperature, rng)
    return n, best, chosen


@generic
def td_move(s, net, rule, epsilon, temperature, rng, moves, values, child, x, obs, out):
    """The move of the player to move in `s` (not applied), without learning: how a trained
    network plays (the td agent, duels)."""
    mover = current_player(s)
    if rule == RANDOM:
        n = legal_actions(s, mover, moves)
        return moves[rand_below(rng, n)]
    _n, _best, chosen = scored_turn(
        s, mover, net, rule, epsilon, temperature, rng, moves, values, child, x, obs, out
    )
    return moves[chosen]


@generic
def td_learn(
    s,
    net,
    rule,
    epsilon,
    temperature,
    sarsa,
    rate,
    forced,
    rng,
    moves,
    values,
    child,
    x,
    obs,
    out,
):
    """One training turn of the player to move in `s` (not applied): returns the action.

    The network first takes one TD step on the current state: toward the best successor for
    the mover (Q-learning, §2.2.1) or toward the chosen one (SARSA, §2.2.2). `forced` >= 0 is
    a move made by someone else (an opponent agent): it is the chosen move, and the step goes
    toward it whatever the rule, since the opponent is the environment. (Apart from td_move so
    that neither is compiled again for the constant flags its callers pass.)"""
    mover = current_player(s)
    n, best, chosen = scored_turn(
        s, mover, net, rule, epsilon, temperature, rng, moves, values, child, x, obs, out
    )
    if forced >= 0:
        chosen = 0
        for k in range(n):
            if moves[k] == forced:
                chosen = k
    v = current_value(net)
    target = values[chosen] if (sarsa or forced >= 0) else values[best]
    learn(net, x, v, rate, v - target)
    return moves[chosen]


@generic
def counter_move(s, mover, weights, epsilon, rng, moves, child, obs):
    """A weighted piece counter's move at one ply (the Othello League's opponent): the move
    whose result maximises sum_k weights[k] * (own disc on k - opponent's disc on k), read
    from the mover's first two observation planes; a uniformly random move with probability
    epsilon. Ties go to the first best."""
    n = legal_actions(s, mover, moves)
    if n == 1 or rand_unit(rng) < epsilon:
        return moves[rand_below(rng, n)]
    cells = weights.shape[0]
    best, best_value = 0, -math.inf
    for k in range(n):
        child[:] = s
        apply_action(child, moves[k])
        observation(child, mover, obs)
        value = 0.0
        for c in range(cells):
            value += weights[c] * (obs[c] - obs[cells + c])
        if value > best_value:
            best, best_value = k, value
    return moves[best]


@generic
def heuristic_move(s, mover, depth, epsilon, rng, moves, child):
    """The game's own heuristic (`evaluate`, the one alpha-beta searches with) searched to depth
    1 or 2 for `mover`, plain minimax, the first best move winning ties; a uniformly random move
    with probability epsilon. A training opponent that, unlike the weighted piece counter, counts
    mobility and looks at the reply: the learner meets positions a searching player steers to."""
    n = legal_actions(s, mover, moves)
    if n == 1 or rand_unit(rng) < epsilon:
        return moves[rand_below(rng, n)]
    replies = np.empty(moves.shape[0], dtype=np.int64)
    grandchild = np.empty_like(child)
    best, best_value = 0, -np.inf
    for k in range(n):
        child[:] = s
        apply_action(child, moves[k])
        reply = current_player(child)
        if depth < 2 or reply == TERMINAL:
            value = evaluate(child, mover)
        else:
            m = legal_actions(child, reply, replies)
            value = -np.inf if reply == mover else np.inf
            for j in range(m):
                grandchild[:] = child
                apply_action(grandchild, replies[j])
                leaf = evaluate(grandchild, mover)
                value = max(value, leaf) if reply == mover else min(value, leaf)
        if value > best_value:
            best, best_value = k, value
    return moves[best]


@generic
def self_play(
    start,
    net,
    rule,
    epsilon,
    temperature,
    sarsa,
    rate,
    games,
    opponent_random,
    counter,
    counter_epsilon,
    counter_share,
    heuristic_depth,
    heuristic_epsilon,
    heuristic_share,
    rng,
    moves,
    values,
    child,
    x,
    obs,
    out,
    results,
):
    """`games` training games from `start`; results[g] = seat 1's return of game g.

    opponent_random = 0: self-play, one network on both seats, learning at every turn.
    opponent_random = 1: the learner takes seat g % 2 against a uniformly random player and
    learns at every turn (the random moves are its environment).
    opponent_random = 2: as 1 against the weighted piece counter `counter` (one weight per
    cell) that plays a random move with probability counter_epsilon (counter_move), in a
    share counter_share of the games (drawn game by game); the others are self-play.
    Mode 3: as 1 against the game's heuristic searched to heuristic_depth (heuristic_move)
    with heuristic_epsilon, in a share heuristic_share of the games (after counter_share's,
    with opponent 0 or 2): one run may mix self-play, the counter and the heuristic."""
    s = start.copy()
    for g in range(games):
        s[:] = start
        learner = g % 2
        mode = opponent_random
        if mode == 2 and counter_share < 1.0:
            u = rand_unit(rng)
            mode = 2 if u < counter_share else (3 if u < counter_share + heuristic_share else 0)
        elif mode == 0 and heuristic_share > 0.0:
            mode = 3 if rand_unit(rng) < heuristic_share else 0
        while True:
            mover = current_player(s)
            if mover == TERMINAL:
                break
            forced = -1
            if mode == 1 and mover != learner:
                n = legal_actions(s, mover, moves)
                forced = moves[rand_below(rng, n)]
            elif mode == 2 and mover != learner:
                forced = counter_move(s, mover, counter, counter_epsilon, rng, moves, child, obs)
            elif mode == 3 and mover != learner:
                depth = heuristic_depth
                forced = heuristic_move(s, mover, depth, heuristic_epsilon, rng, moves, child)
            action = td_learn(
                s,
                net,
                rule,
                epsilon,
                temperature,
                sarsa,
                rate,
                forced,
                rng,
                moves,
                values,
                child,
                x,
                obs,
                out,
            )
            apply_action(s, action)
        returns(s, out)
        results[g] = out[VALUE_SEAT]


@generic
def duel(
    starts,
    seat_a,
    net_a,
    rule_a,
    epsilon_a,
    temp_a,
    net_b,
    rule_b,
    epsilon_b,
    temp_b,
    rng,
    moves,
    values,
    child,
    x,
    obs,
    out,
    results,
):
    """Network A against network B of the same architecture (either may play RANDOM), no
    learning: game g starts from starts[g] with A on seat seat_a[g]; results[g] = A's return."""
    for g in range(starts.shape[0]):
        s = starts[g].copy()
        while True:
            mover = current_player(s)
            if mover == TERMINAL:
                break
            if mover == seat_a[g]:
                net, rule, epsilon, temp = net_a, rule_a, epsilon_a, temp_a
            else:
                net, rule, epsilon, temp = net_b, rule_b, epsilon_b, temp_b
            action = td_move(s, net, rule, epsilon, temp, rng, moves, values, child, x, obs, out)
            apply_action(s, action)
        returns(s, out)
        results[g] = out[seat_a[g]]


# ---- Python side ---------------------------------------------------------------------------------
def input_size(game, planes: int) -> int:
    """Length of the encoding: `planes` observation planes of seat 0 (the study's 128 bits)."""
    shape = game.observation_shape
    if not 1 <= planes <= shape[0]:
        raise ValueError(f"planes={planes}: {game.name} observations have {shape[0]} planes")
    return int(planes * np.prod(shape[1:]))


def encode(game, s: np.ndarray, planes: int) -> np.ndarray:
    """The network input of one state array (float32 [input_size])."""
    out = np.zeros(int(np.prod(game.observation_shape)), dtype=np.float32)
    game.kernels.observation(s, 0, out)
    return out[: input_size(game, planes)]


def supports(game) -> str | None:
    """Why a game cannot host a TD network (None when it can)."""
    if game.num_players != 2 or game.simultaneous or game.has_chance:
        return f"{game.name} is not a two-player turn-based game without chance"
    return None


def bound(game, loop, network):
    """The compiled copy of a loop of this module for one game and one network architecture."""
    from agents.search.loop import zero_evaluate
    from engine.specialise import bind

    hook_prepare, hook_child, hook_current, hook_learn = network.hooks
    return bind(
        loop,
        game.kernels.search(),
        observation=game.kernels.observation,
        prepare=hook_prepare,
        child_value=hook_child,
        current_value=hook_current,
        learn=hook_learn,
        evaluate=game.evaluate or zero_evaluate,
    )
