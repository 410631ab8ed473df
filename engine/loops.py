"""Generic hot loops written once against the kernel set: random playouts and perft.

Each `@generic` function calls the kernels by their protocol names; `engine.specialise.bind`
compiles a per-game copy (cached on disk). `play_random_games` and `count_leaves` are the calls
the rest of the code uses. Nothing here knows a game's rules.
"""

from __future__ import annotations

import numpy as np

from engine.bits import rand_below, rand_unit
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL
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


@generic(inline=True)
def sample_chance(s, buffer, rng):
    """A chance outcome drawn by its probability."""
    count = legal_actions(s, CHANCE, buffer)
    u = rand_unit(rng)
    acc = 0.0
    for i in range(count - 1):
        acc += chance_probability(s, buffer[i])
        if u < acc:
            return buffer[i]
    return buffer[count - 1]


@generic(inline=True)
def random_playout(s, num_players, neutral, rng, buffer, joint):
    """Plays `s` (in place) to the end at random; returns the number of moves made."""
    moves = 0
    while True:
        player = current_player(s)
        if player >= 0:
            count = legal_actions(s, player, buffer)
            apply_action(s, buffer[rand_below(rng, count)])
        elif player == SIMULTANEOUS:
            for p in range(num_players):
                count = legal_actions(s, p, buffer)
                joint[p] = buffer[rand_below(rng, count)] if count > 0 else neutral
            apply_joint(s, joint)
        elif player == CHANCE:
            apply_action(s, sample_chance(s, buffer, rng))
        else:
            return moves
        moves += 1


@generic
def random_playouts(start, num_players, num_actions, neutral, num_games, rng):
    """`num_games` random games from `start`: (total moves, summed returns per player)."""
    buffer = np.empty(max(num_actions, 64), dtype=np.int64)
    joint = np.empty(num_players, dtype=np.int64)
    outcome = np.zeros(num_players, dtype=np.float64)
    totals = np.zeros(num_players, dtype=np.float64)
    s = start.copy()
    moves = 0
    for _ in range(num_games):
        s[:] = start
        moves += random_playout(s, num_players, neutral, rng, buffer, joint)
        returns(s, outcome)
        totals += outcome
    return moves, totals


@generic(inline=True)
def expand(s, num_players, neutral, legal, counts, level):
    """Fills the move lists of `level`; returns how many children the node has (0 at the end)."""
    player = current_player(s)
    if player == TERMINAL:
        return 0
    if player == SIMULTANEOUS:
        total = 1
        for p in range(num_players):
            c = legal_actions(s, p, legal[level, p])
            if c == 0:
                legal[level, p, 0] = neutral
                c = 1
            counts[level, p] = c
            total *= c
        return total
    counts[level, 0] = legal_actions(s, player, legal[level, 0])
    return counts[level, 0]


@generic(inline=True)
def apply_child(s, num_players, legal, counts, level, index, joint):
    """Plays child number `index` of the node at `level` (a joint move decoded in mixed radix)."""
    if current_player(s) == SIMULTANEOUS:
        for p in range(num_players):
            c = counts[level, p]
            joint[p] = legal[level, p, index % c]
            index //= c
        apply_joint(s, joint)
    else:
        apply_action(s, legal[level, 0, index])


@generic
def perft(start, depth, num_players, num_actions, neutral):
    """Leaves of the tree cut at `depth`; a position that ends early is one leaf.

    Chance outcomes and joint moves of a simultaneous lap each count as one branch. Iterative
    depth-first search over a stack of state copies (no recursion, no allocation per node).
    """
    if depth == 0:
        return 1
    width = max(num_actions, 64)
    states = np.empty((depth + 1, start.shape[0]), dtype=np.int64)
    legal = np.empty((depth, num_players, width), dtype=np.int64)
    counts = np.zeros((depth, num_players), dtype=np.int64)
    totals = np.zeros(depth, dtype=np.int64)
    index = np.zeros(depth, dtype=np.int64)
    joint = np.empty(num_players, dtype=np.int64)
    states[0] = start
    totals[0] = expand(states[0], num_players, neutral, legal, counts, 0)
    if totals[0] == 0:
        return 1
    leaves = 0
    level = 0
    while level >= 0:
        if index[level] == totals[level]:
            level -= 1
            if level >= 0:
                index[level] += 1
            continue
        child = states[level + 1]
        child[:] = states[level]
        apply_child(child, num_players, legal, counts, level, index[level], joint)
        if level + 1 == depth:
            leaves += 1
            index[level] += 1
            continue
        n = expand(child, num_players, neutral, legal, counts, level + 1)
        if n == 0:
            leaves += 1
            index[level] += 1
            continue
        level += 1
        totals[level] = n
        index[level] = 0
    return leaves


def count_leaves(game, start: np.ndarray, depth: int) -> int:
    """perft(depth) from the position `start` (a state array of `game`)."""
    entry = bind(perft, game.kernels.search())
    return int(entry(start, depth, game.num_players, game.num_actions, game.neutral_action))


def play_random_games(game, start: np.ndarray, num_games: int, rng: np.ndarray):
    """`num_games` random games from `start`: (total moves, summed returns per player)."""
    entry = bind(random_playouts, game.kernels.search())
    meta = (game.num_players, game.num_actions, game.neutral_action)
    return entry(start, *meta, num_games, rng)
