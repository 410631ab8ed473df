"""Study 003's network interface for tile-move games (territory), in numba: the board as network
inputs, network outputs as a move, and feed-forward networks of any topology over flat arrays.

Inputs (§5): one value per tile, troops / 20, positive for the player's own tiles, negative for
the opponent's, 0 for nature. The second seat sees the board turned 180 degrees (the game's
`tile_moves()["turn_tiles"]`), so one network plays either side as if it were blue.

Four decodings of the outputs into an action:

* guided (the study's): 4 sigmoid outputs (production flag, source tile, target tile, troops).
  Flag <= 0.5 means production; a tile is floor(35 v) of [0, 1] cut into the map's tiles (the
  study's worked example, 0.99568 -> (5,4), fits floor((n-1) v), not floor(n v)); troops
  floor(20 v) + 1. Production if the flag is set and legal, else the attack or transport named by
  (source, target, troops) if legal, else the move is invalid and is *guided* to the legal move
  nearest in Euclidean distance over (source index, target index, troops) (§5 guide_move; a
  production counts as (tile, tile, 1), as the study's move dictionary writes it).
* masked (for comparison): a wider output, n source scores + n target scores + 20 troop scores +
  1 production score; a move scores source + target + troops (production: source + target of its
  tile + production) and the best legal move is played (argmax under the legal mask).
* scored (gridbots' own, not the study's): the network reads `MOVE_FEATURES` numbers describing
  one legal move (what it sends where, what it meets, the balance of the board, the tiles it
  wins and loses) and writes one score; every legal move is scored (one batch) and the best is
  played. Weights are shared across tiles, so evolution searches a dozen inputs instead of
  thousands of links. Features are only ever appended: a network reads the first
  `num_inputs` of them (`SCORED_INPUTS`: the 12 of exports made before the two tile features,
  or all 14).
* afterstate (gridbots' own): the network reads the study's board inputs of the position each
  legal move leads to and writes one value; the move to the best-valued position is played
  (one-ply lookahead, as value-function players of board games do). The board encoding is the
  study's, so a network learns an evaluation of whole positions instead of a move rule.

Scored and afterstate rank moves by the output node before its activation (`forward_logit`;
the ONNX graph's `logits`): sigmoid(5z) reaches 1.0 at 5z ≈ 17 in onnxruntime's float32 and at
≈ 37 in numba's float64, so ranking activations split ties differently in training and in play
(a scored champion's `neat:` agent played 19% of its trained moves otherwise, session 35).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.specialise import apply_action, generic

GUIDED, MASKED, SCORED, AFTERSTATE = 0, 1, 2, 3
DECODINGS = {"guided": GUIDED, "masked": MASKED, "scored": SCORED, "afterstate": AFTERSTATE}
MOVE_FEATURES = 14
#: how many leading move features a scored network may read (older exports read fewer)
SCORED_INPUTS = (12, MOVE_FEATURES)
SIGMOID, TANH, RELU, IDENTITY = 0, 1, 2, 3
#: neat-python's activation functions (neat/activations.py), by the names genomes carry
ACTIVATIONS = {"sigmoid": SIGMOID, "tanh": TANH, "relu": RELU, "identity": IDENTITY}


def num_inputs(decoding: str, num_tiles: int) -> int:
    """What a network trained now with `decoding` reads (scored: all the move features)."""
    return MOVE_FEATURES if decoding == "scored" else num_tiles


def readable_inputs(decoding: str, num_tiles: int) -> tuple[int, ...]:
    """Every input count a network of `decoding` may have (older scored exports read fewer)."""
    return SCORED_INPUTS if decoding == "scored" else (num_tiles,)


def num_outputs(decoding: str, num_tiles: int, max_count: int) -> int:
    wide = 2 * num_tiles + max_count + 1
    return {"guided": 4, "masked": wide, "scored": 1, "afterstate": 1}[decoding]


@njit(cache=True, inline="always")
def _of_scaled(kind, x):
    """Activation `kind` of x, a pre-activation already scaled as neat-python scales it (5z for
    sigmoid, 2.5z for tanh), clamped as neat clamps, by comparisons: numba's builtin min / max
    made a network's forward pass 4x slower."""
    if kind == SIGMOID or kind == TANH:
        if x > 60.0:
            x = 60.0
        elif x < -60.0:
            x = -60.0
        return 1.0 / (1.0 + np.exp(-x)) if kind == SIGMOID else np.tanh(x)
    if kind == RELU:
        return x if x > 0.0 else 0.0
    return x


@njit(cache=True, inline="always")
def activate(kind, z):
    """neat-python's activations exactly: sigmoid(5z) and tanh(2.5z), clamped as neat clamps."""
    if kind == SIGMOID:
        return _of_scaled(kind, 5.0 * z)
    if kind == TANH:
        return _of_scaled(kind, 2.5 * z)
    return _of_scaled(kind, z)


@njit(cache=True)
def activate_scaled(kinds, scaled, out):
    """out[r, o] = activation kinds[o] of scaled[r, o] (the ONNX graph's `logits`, scaled as neat
    scales): the agent's outputs in float64, as the fitness games compute them."""
    for r in range(scaled.shape[0]):
        for o in range(scaled.shape[1]):
            out[r, o] = _of_scaled(kinds[o], scaled[r, o])


@njit(cache=True, nogil=True, inline="always")
def forward_logit(
    net, nodes, node_bias, node_response, node_kind, links, link_weight, net_rows, values, inputs, o
):
    """Evaluates network `net` of a packed batch (agents.neat.network.Packed) on `inputs`;
    returns output o before its activation (the ONNX graph's `logits`, up to neat's positive
    scale), taken in the same pass: decodings that rank moves by one value read it, since the
    activation flattens. Reading it back after the pass cost three times the pass (loads behind
    its indirect stores).

    Node row k = (value slot, first link, end link), rows in an order where each node follows
    the nodes it reads; links[j] is the value slot a link reads. net_rows[net] = (slot of each
    output..., first node row, end node row). values[:len(inputs)] hold the inputs.
    """
    for i in range(inputs.shape[0]):  # a loop: numba's slice copy cost more than the pass
        values[i] = inputs[i]
    slot, z_out = net_rows[net, o], np.nan
    for k in range(net_rows[net, -2], net_rows[net, -1]):
        total = 0.0
        for j in range(nodes[k, 1], nodes[k, 2]):
            total += values[links[j]] * link_weight[j]
        z = node_bias[k] + node_response[k] * total
        if nodes[k, 0] == slot:
            z_out = z
        values[nodes[k, 0]] = activate(node_kind[k], z)
    return z_out


@njit(cache=True, nogil=True, inline="always")
def forward(
    net,
    nodes,
    node_bias,
    node_response,
    node_kind,
    links,
    link_weight,
    net_rows,
    values,
    inputs,
    out,
):
    """The network's outputs (activations) of `inputs` in `out` (see forward_logit)."""
    forward_logit(
        net, nodes, node_bias, node_response, node_kind, links, link_weight, net_rows, values,
        inputs, 0,
    )  # fmt: skip
    for o in range(out.shape[0]):
        out[o] = values[net_rows[net, o]]


@njit(cache=True, inline="always")
def _frame(tile, player, turn_tiles):
    """A tile index in the player's own frame (the turn is its own inverse)."""
    return turn_tiles[tile] if player == 1 else tile


@njit(cache=True, nogil=True)
def encode(obs, num_tiles, player, turn_tiles, inputs):
    """Network inputs from the game's observation planes (own troops / 20, opponent's / 20)."""
    for k in range(num_tiles):
        t = _frame(k, player, turn_tiles)
        inputs[k] = obs[t] - obs[num_tiles + t]


def observation(s, player, out):
    """Placeholder: `bind(..., observation=kernels.observation)` puts the game's kernel here."""
    raise TypeError("observation is only available inside a bound loop")


@generic(nogil=True)
def afterstate_inputs(s, player, legal, count, num_tiles, turn_tiles, child, seen, rows):
    """rows[i]: the network inputs, for `player`, of the position legal[i] leads to from s
    (child and seen: a state and an observation buffer to work in)."""
    for i in range(count):
        child[:] = s
        apply_action(child, legal[i])
        observation(child, player, seen)
        encode(seen, num_tiles, player, turn_tiles, rows[i])


@njit(cache=True, inline="always")
def _move_parts(action, ids, max_count, neighbours):
    """(source, target, troops) of an action; a production is (tile, tile, 1)."""
    tile = action // ids
    idx = action % ids
    if idx == 0:
        return tile, tile, 1
    d = (idx - 1) // max_count
    return tile, neighbours[tile, d], (idx - 1) % max_count + 1


@njit(cache=True, inline="always")
def _is_legal(action, legal, count):
    for i in range(count):
        if legal[i] == action:
            return True
    return False


@njit(cache=True, nogil=True)
def decode_guided(out, player, legal, count, neighbours, ids, max_count, turn_tiles):
    """(action, guided) from the 4 outputs: the study's decode_state and guide_move."""
    n = neighbours.shape[0]
    produce = out[0] <= 0.5
    src = min(int(out[1] * (n - 1)), n - 1)
    tgt = min(int(out[2] * (n - 1)), n - 1)
    troops = min(int(out[3] * max_count) + 1, max_count)
    source = _frame(src, player, turn_tiles)
    target = _frame(tgt, player, turn_tiles)
    if produce and _is_legal(source * ids, legal, count):
        return source * ids, False
    for d in range(neighbours.shape[1]):
        if neighbours[source, d] == target:
            action = source * ids + 1 + d * max_count + troops - 1
            if _is_legal(action, legal, count):
                return action, False
    best, best_distance = legal[0], np.inf
    for i in range(count):
        a, b, k = _move_parts(legal[i], ids, max_count, neighbours)
        da = _frame(a, player, turn_tiles) - src
        db = _frame(b, player, turn_tiles) - tgt
        distance = da * da + db * db + (k - troops) * (k - troops)
        if distance < best_distance:
            best, best_distance = legal[i], distance
    return best, True


@njit(cache=True, nogil=True)
def decode_masked(out, player, legal, count, neighbours, ids, max_count, turn_tiles):
    """(action, False): the legal move with the best summed source / target / troop scores."""
    n = neighbours.shape[0]
    best, best_score = legal[0], -np.inf
    for i in range(count):
        a, b, k = _move_parts(legal[i], ids, max_count, neighbours)
        fa = _frame(a, player, turn_tiles)
        score = out[fa] + out[n + _frame(b, player, turn_tiles)]
        score += out[2 * n + max_count] if legal[i] % ids == 0 else out[2 * n + k - 1]
        if score > best_score:
            best, best_score = legal[i], score
    return best, False


@njit(cache=True, nogil=True)
def decode(mode, out, player, legal, count, neighbours, ids, max_count, turn_tiles):
    if mode == GUIDED:
        return decode_guided(out, player, legal, count, neighbours, ids, max_count, turn_tiles)
    return decode_masked(out, player, legal, count, neighbours, ids, max_count, turn_tiles)


@njit(cache=True, nogil=True)
def move_features(obs, n, legal, count, neighbours, ids, max_count, feats):
    """feats[i] describes legal[i] for the player whose observation planes `obs` are:
    production?, source troops, troops sent, troops left behind, own troops at the target, enemy
    troops at the target, target is nature?, the attack wins?, own tiles, enemy tiles, share of
    the round limit played, enemy tiles around the target (troops as / 20, tiles as / n), own
    tiles the move gains (-1, 0 or 1), enemy tiles it removes (0 or 1).

    Troops are rounded back to counts: the agent's observation is float32, where k / 20 * 20 is
    not k, and the fitness games' float64, where it is; both must see the same moves."""
    own_tiles, enemy_tiles = 0.0, 0.0
    for t in range(n):
        own_tiles += 1.0 if obs[t] > 0 else 0.0
        enemy_tiles += 1.0 if obs[n + t] > 0 else 0.0
    for i in range(count):
        tile, target, sent = _move_parts(legal[i], ids, max_count, neighbours)
        produce = legal[i] % ids == 0
        source = np.rint(obs[tile] * max_count)
        feats[i, 0] = 1.0 if produce else 0.0
        feats[i, 1] = source / max_count
        feats[i, 2] = 0.0 if produce else sent / max_count
        feats[i, 3] = (source + 1.0 if produce else source - sent) / max_count
        own_there = 0.0 if produce else np.rint(obs[target] * max_count)
        feats[i, 4] = own_there / max_count
        enemy = 0.0 if produce else np.rint(obs[n + target] * max_count)
        feats[i, 5] = enemy / max_count
        feats[i, 6] = 1.0 if not produce and obs[target] == 0 and enemy == 0 else 0.0
        feats[i, 7] = 1.0 if enemy > 0 and sent > enemy else 0.0
        feats[i, 8] = own_tiles / n
        feats[i, 9] = enemy_tiles / n
        feats[i, 10] = obs[2 * n] if obs.shape[0] > 2 * n else 0.0
        around = 0.0
        for d in range(neighbours.shape[1]):
            j = neighbours[target, d]
            if j >= 0 and obs[n + j] > 0:
                around += 1.0
        feats[i, 11] = around / neighbours.shape[1]
        # the tile counts the move changes (the fitness functions count tiles; study §2.2's
        # rules): nature or a beaten enemy tile is won, an emptied origin or an even fight
        # leaves the origin to nature, an enemy tile met by as many troops or more is removed
        gained, removed = 0.0, 0.0
        if not produce:
            if own_there == 0.0 and (enemy == 0.0 or sent > enemy):
                gained = 1.0
            if enemy > 0.0 and sent >= enemy:
                removed = 1.0
            if sent == source or (enemy > 0.0 and sent == enemy):
                gained -= 1.0
        feats[i, 12] = gained
        feats[i, 13] = removed
