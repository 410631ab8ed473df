"""TD networks as the leaf evaluation of the shared alpha-beta core (agents.search.core).

The core's NETWORK leaf calls an njit `network(s, player, weights)` with one float64 array of
weights passed at run time (never compiled in), so a network is packed into one array here:
a header (observation length, then the architecture's sizes) and its weights. The leaf reads
seat 0's observation of `s` (the network's input), computes the estimate v for seat 1 as
agents.td.mlp / agents.td.ntuple do, and returns it for `player` on the core's [-1, 1] scale:
2v - 1 for seat 1, 1 - 2v for seat 0 (the study's complement rule, rescaled).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from agents.td.mlp import activate
from agents.td.net import VALUE_SEAT, observation
from agents.td.ntuple import phase_of
from engine.specialise import generic


@njit(cache=True, inline="always")
def _for_player(v, player):
    value = 2.0 * v - 1.0 if player == VALUE_SEAT else 1.0 - 2.0 * v
    return min(1.0, max(-1.0, value))


@generic
def mlp_leaf(s, player, weights):
    """weights: [observation length, inputs, hidden, activation, w_in (row-major), w_out]."""
    length, size, hidden, kind = int(weights[0]), int(weights[1]), int(weights[2]), int(weights[3])
    obs = np.zeros(length, dtype=np.float32)
    observation(s, 0, obs)
    z = np.zeros(hidden)
    base = 4
    for j in range(size):
        if obs[j] != 0.0:
            row = base + j * hidden
            for i in range(hidden):
                z[i] += obs[j] * weights[row + i]
    out_at = base + size * hidden
    total = 0.0
    for i in range(hidden):
        total += weights[out_at + i] * activate(z[i], kind)
    return _for_player(activate(total, kind), player)


@generic
def ntuple_leaf(s, player, weights):
    """weights: [observation length, cells, lookups L, width n, linear output (0/1), phases,
    stride, cells of each lookup (L x n, -1 padded), table offset of each lookup (L), the
    tables] (agents.td.ntuple: a game stage's tables lie `stride` further on)."""
    length, cells, lookups, width = (
        int(weights[0]),
        int(weights[1]),
        int(weights[2]),
        int(weights[3]),
    )
    linear = weights[4] != 0.0
    phases, stride = int(weights[5]), int(weights[6])
    obs = np.zeros(length, dtype=np.float32)
    observation(s, 0, obs)
    state = np.empty(cells, dtype=np.int64)  # each cell's state, read once, not per lookup
    occupied = 0
    for k in range(cells):
        state[k] = int(obs[k]) + 2 * int(obs[cells + k])
        occupied += state[k] != 0
    shift = phase_of(occupied, phases, cells) * stride
    head = 7
    offsets = head + lookups * width
    tables = offsets + lookups
    total = 0.0
    for i in range(lookups):
        at = int(weights[offsets + i]) + shift
        power = 1
        row = head + i * width
        for j in range(width):
            k = int(weights[row + j])
            if k < 0:
                break
            at += state[k] * power
            power *= 3
        total += weights[tables + at]
    return _for_player(total if linear else 1.0 / (1.0 + math.exp(-total)), player)


def pack(game, network) -> np.ndarray:
    """The one float64 array the leaf of `network`'s architecture reads."""
    length = float(np.prod(game.observation_shape))
    if network.architecture == "ntuple":
        lookups, width = network.lookup_cells.shape
        linear = float(network.activation == "linear")
        header = [length, network.cells, lookups, width, linear, network.phases, network.stride]
        parts = [header, network.lookup_cells.ravel(), network.offset, network.lut]
    else:
        header = [length, network.size, network.hidden, network.kind]
        parts = [header, network.w_in.ravel(), network.w_out]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


def leaf(game, network):
    """The compiled leaf evaluation of `network`'s architecture for `game`."""
    from engine.specialise import bind

    loop = ntuple_leaf if network.architecture == "ntuple" else mlp_leaf
    return bind(loop, game.kernels.search(), observation=game.kernels.observation)
