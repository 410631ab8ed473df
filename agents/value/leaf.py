"""A value MLP over observation planes, run inside the alpha-beta loop (the core's NETWORK leaf).

A search that hands its leaves to onnxruntime pays a Python round trip and a session call per
frontier node: on tactics, HPS's frontier nodes have about 3.5 children, and a leaf cost ~20 µs
that way, a third of a scripted playout. The value-mlp family's graphs are small dense chains
(an optional per-cell encoder, shared by every cell, then a mean over the cells or their codes
side by side, or the relational block over the occupied cells, then ReLU layers and a
sigmoid), so the loop can compute them itself from the ONNX file's weights, the way chess
engines evaluate their networks inside the search: no call leaves numba, and alpha-beta
cut-offs skip leaves a batch would have evaluated.

The file stays the model (ONNX, never pickles): `read_chain` takes the weight tensors of its
MatMul and Add nodes in graph order, checks their shapes against the architecture the file's
metadata declares, and `leaf` only accepts the result once it matches onnxruntime on positions
of the game (`parity`); a file that does not fit runs on onnxruntime in batches as before.

The packed float64 array the leaf reads: [observation length, planes C, cells N, cell code E
(0: none), pooled (0/1), dense layers K, relational width H (0: none), neighbourhoods R, then
each layer's (inputs, outputs)], then the encoder's C x E kernel and E biases, then (H > 0) the
R x N x N neighbourhood constant and the relational layer's (1 + R) E x H kernel and H biases,
then each layer's kernel (row-major) and biases. The relational block (value-mlp `relate`)
touches only occupied cells, so the loop's cost grows with the pieces on the board squared,
not with the board: the graph's matrix products over all N cells are mostly zeros.
"""

from __future__ import annotations

import math
from itertools import islice
from pathlib import Path

import numpy as np
from numba import njit

from agents.value.features import ValueEncoder, observation  # observation: a placeholder
from engine.protocol import Game
from engine.specialise import generic

HEADER = 8
SPAN = 16  # floats the scan for set entries ORs together
PARITY_TOLERANCE = 1e-4  # float32 onnxruntime against the loop's float64


@generic
def planes_mlp_value(s, player, weights):
    """`player`'s value in [-1, 1]: 2p - 1 of the network's win probability p for the planes
    seen by `player` (value-planes rows are each side's view with that side's result)."""
    length, planes, cells = int(weights[0]), int(weights[1]), int(weights[2])
    code, pooled, layers = int(weights[3]), weights[4] != 0.0, int(weights[5])
    padded = -(-length // SPAN) * SPAN
    obs = np.zeros(padded, dtype=np.float32)
    observation(s, player, obs[:length])
    # the planes' few set entries (66 of 11,232 in a tactics game), found a span at a time:
    # an OR over each span's 64-bit words first, a loop LLVM vectorises, then only the spans
    # with a set bit are read float by float (a store in the first loop would stop that)
    words = obs.view(np.uint64)
    spans = np.empty(padded // SPAN, dtype=np.uint64)
    for b in range(spans.size):
        acc = np.uint64(0)
        for j in range(SPAN // 2):
            acc |= words[b * (SPAN // 2) + j]
        spans[b] = acc
    at_index = np.empty(length, dtype=np.int64)
    found = 0
    for b in range(spans.size):
        if spans[b] != 0:
            for i in range(b * SPAN, (b + 1) * SPAN):
                if obs[i] != 0.0:
                    at_index[found] = i
                    found += 1
    relate, kinds = int(weights[6]), int(weights[7])
    at = HEADER + 2 * layers
    if relate > 0:  # occupied cells' codes, what each sees of the others, pooled
        h = np.zeros(code + relate)
        at = _related(obs, at_index[:found], planes, cells, code, relate, kinds, weights, at, h)
    elif code > 0:  # every cell's code; a cell with no set entry has the bias's code
        kernel, bias = at, at + planes * code
        at = bias + code
        z = np.empty((cells, code))
        touched = np.zeros(cells, dtype=np.bool_)
        for k in range(found):
            c, cell = divmod(at_index[k], cells)
            if not touched[cell]:
                touched[cell] = True
                for e in range(code):
                    z[cell, e] = weights[bias + e]
            x, row = obs[at_index[k]], kernel + c * code
            for e in range(code):
                z[cell, e] += x * weights[row + e]
        empty = np.empty(code)  # the code of a cell with nothing set
        for e in range(code):
            empty[e] = max(weights[bias + e], 0.0)
        if pooled:  # the mean of the cells' codes
            h = empty * (cells - touched.sum())
            for cell in range(cells):
                if touched[cell]:
                    for e in range(code):
                        h[e] += max(z[cell, e], 0.0)
            h /= cells
        else:  # the cells' codes side by side
            h = np.empty(cells * code)
            for cell in range(cells):
                for e in range(code):
                    h[cell * code + e] = max(z[cell, e], 0.0) if touched[cell] else empty[e]
    else:  # the first layer reads the planes themselves: only their set entries
        h = np.zeros(1)
    for k in range(layers):
        n_in, n_out = int(weights[HEADER + 2 * k]), int(weights[HEADER + 2 * k + 1])
        bias = at + n_in * n_out
        out = weights[bias : bias + n_out].copy()
        if k == 0 and code == 0:
            for j in range(found):
                x, row = obs[at_index[j]], at + at_index[j] * n_out
                for i in range(n_out):
                    out[i] += x * weights[row + i]
        else:
            for j in range(n_in):
                if h[j] != 0.0:
                    row = at + j * n_out
                    for i in range(n_out):
                        out[i] += h[j] * weights[row + i]
        at = bias + n_out
        if k < layers - 1:
            for i in range(n_out):
                out[i] = max(out[i], 0.0)
        h = out
    p = 1.0 / (1.0 + math.exp(-h[0]))
    return min(1.0, max(-1.0, 2.0 * p - 1.0))


@njit(cache=True)
def _related(obs, at_index, planes, cells, code, relate, kinds, weights, at, pooled):
    """The relational block of `planes_mlp_value` into `pooled` [E + H] (the board means of the
    occupied cells' codes and of their relational outputs); returns where the dense layers'
    weights begin."""
    kernel, bias = at, at + planes * code
    near = bias + code  # the R x N x N neighbourhoods
    rel_kernel = near + kinds * cells * cells
    rel_bias = rel_kernel + (1 + kinds) * code * relate
    occupied = np.empty(at_index.size, dtype=np.int64)
    slot = np.full(cells, -1, dtype=np.int64)
    count = 0
    for k in range(at_index.size):
        cell = at_index[k] % cells
        if slot[cell] < 0:
            slot[cell] = count
            occupied[count] = cell
            count += 1
    z = np.empty((count, code))
    for t in range(count):
        for e in range(code):
            z[t, e] = weights[bias + e]
    for k in range(at_index.size):
        c, cell = divmod(at_index[k], cells)
        x, row, t = obs[at_index[k]], kernel + c * code, slot[cell]
        for e in range(code):
            z[t, e] += x * weights[row + e]
    for t in range(count):
        for e in range(code):
            z[t, e] = max(z[t, e], 0.0)
            pooled[e] += z[t, e]
    seen = np.empty((1 + kinds) * code)
    for t in range(count):
        seen[:code] = z[t]
        seen[code:] = 0.0
        for r in range(kinds):
            row = near + (r * cells + occupied[t]) * cells
            for u in range(count):
                if weights[row + occupied[u]] != 0.0:
                    for e in range(code):
                        seen[(1 + r) * code + e] += weights[row + occupied[u]] * z[u, e]
        for i in range(relate):
            total = weights[rel_bias + i]
            for j in range(seen.size):
                if seen[j] != 0.0:
                    total += seen[j] * weights[rel_kernel + j * relate + i]
            pooled[code + i] += max(total, 0.0)
    pooled /= cells
    return rel_bias + relate


@generic
def planes_mlp_values(states, player, weights, out):
    """out[i]: `planes_mlp_value` of states[i] for `player`, in one compiled loop (the parity
    probe and the speed benchmark time the leaf without a Python call per state)."""
    for i in range(states.shape[0]):
        out[i] = planes_mlp_value(states[i], player, weights)


def read_chain(path: str | Path, game: Game) -> np.ndarray | None:
    """The packed weights of a value-mlp over `game`'s value-planes, or None when the file's
    graph is not the dense chain its metadata declares (the loop then cannot run it)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    meta = {p.key: p.value for p in model.metadata_props}
    declared = (meta.get("gridbots.family"), meta.get("gridbots.encoding"))
    if declared != ("value-mlp", "value-planes"):
        return None
    known = {"Reshape", "Transpose", "Shape", "Cast", "Gather", "Concat", "MatMul", "Add",
             "Relu", "ReduceMean", "Sigmoid", "Identity", "Flatten", "Squeeze", "Unsqueeze",
             "Abs", "GlobalMaxPool", "Greater", "Mul"}  # fmt: skip
    if any(node.op_type not in known for node in model.graph.node):
        return None
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    products = [n for n in model.graph.node if n.op_type == "MatMul"]
    near = [tensors[n.input[0]] for n in products if n.input[0] in tensors]  # relate's constant
    kernels = [n for n in products if n.input[0] not in tensors]
    biases = [n for n in model.graph.node if n.op_type == "Add"]
    if len(kernels) != len(biases):
        return None
    try:
        mats = [tensors[n.input[1]].astype(np.float64) for n in kernels]
        adds = [tensors[n.input[1]].astype(np.float64).reshape(-1) for n in biases]
        code, layers = int(meta.get("gridbots.cell_encoder", 0)), int(meta["gridbots.layers"])
        relate = int(meta.get("gridbots.relate", 0))
    except (KeyError, ValueError):
        return None
    planes, cells = game.observation_shape[0], int(np.prod(game.observation_shape[1:]))
    pooled = meta.get("gridbots.pool", "none") == "mean"
    encoder = (mats.pop(0), adds.pop(0)) if code else None
    if encoder is not None and (encoder[0].shape != (planes, code) or encoder[1].size != code):
        return None
    width = code if pooled else cells * code if code else planes * cells
    relational: list[np.ndarray] = []
    if len(near) != (1 if relate else 0):
        return None
    kinds = near[0].shape[0] // cells if relate else 0
    if relate:
        kernel, bias = mats.pop(0), adds.pop(0)
        if (near[0].shape != (kinds * cells, cells) or kernel.shape != ((1 + kinds) * code, relate)
                or bias.size != relate):  # fmt: skip
            return None
        relational = [near[0].astype(np.float64).ravel(), kernel.ravel(), bias]
        width = code + relate
    if len(mats) != layers + 1:
        return None
    sizes = []
    for kernel, bias in zip(mats, adds, strict=True):
        if kernel.ndim != 2 or kernel.shape[0] != width or bias.size != kernel.shape[1]:
            return None
        sizes += [kernel.shape[0], kernel.shape[1]]
        width = kernel.shape[1]
    if width != 1:
        return None
    header = [planes * cells, planes, cells, code, float(pooled), len(mats), relate, kinds, *sizes]
    parts = [np.asarray(header, dtype=np.float64)]
    if encoder is not None:
        parts += [encoder[0].ravel(), encoder[1], *relational]
    for kernel, bias in zip(mats, adds, strict=True):
        parts += [kernel.ravel(), bias]
    return np.concatenate(parts)


def compiled_leaf(game: Game, loop=planes_mlp_value):
    """`planes_mlp_value` (or `planes_mlp_values`) compiled for `game`'s observation kernel."""
    from engine.specialise import bind

    kernels = game.kernels
    return bind(loop, kernels.search(), observation=kernels.observation)


def loop_values(game: Game, states: np.ndarray, player: int, weights: np.ndarray) -> np.ndarray:
    """The loop's values of `states` for `player` (float64 [n])."""
    out = np.empty(len(states))
    states = np.ascontiguousarray(states, dtype=np.int64)
    compiled_leaf(game, planes_mlp_values)(states, int(player), weights, out)
    return out


def sample_states(game: Game, count: int = 16, seed: int = 0) -> np.ndarray:
    """Positions along seeded random games (chance nodes included): the parity probe."""
    from engine.match import random_states

    return np.stack([s.array.copy() for s in islice(random_states(game, seed), count)])


def parity(game: Game, path: str | Path, weights: np.ndarray, states: np.ndarray) -> float:
    """Largest |loop - onnxruntime| over `states` seen by either seat, on the [-1, 1] scale."""
    from agents.onnx.runtime import open_session

    session, _ = open_session(path)
    name = session.get_inputs()[0].name
    encode = ValueEncoder(game, "value-planes").batch  # the network's inputs, as trained
    worst = 0.0
    for player in range(game.num_players):
        batch = encode(states, np.full(len(states), player))
        p = np.asarray(session.run(None, {name: batch})[0], dtype=np.float64).reshape(-1)
        loop = loop_values(game, states, player, weights)
        worst = max(worst, float(np.abs(loop - np.clip(2 * p - 1, -1, 1)).max()))
    return worst


def leaf(game: Game, path: str | Path):
    """(compiled leaf, packed weights) for the core's NETWORK mode, or None where the file is
    not a dense chain over `game`'s planes or does not match onnxruntime on sample positions.
    Read and checked once per file and thread: a match makes a fresh agent per game."""
    from agents.base import file_identity, loaded_once

    def read() -> np.ndarray | None:
        weights = read_chain(path, game)
        if weights is None or parity(game, path, weights, sample_states(game)) > PARITY_TOLERANCE:
            return None
        return weights

    weights = loaded_once("value-leaf", (*file_identity(path), game.spec()), read)
    return None if weights is None else (compiled_leaf(game), weights)
