"""The PUCT search forest: many trees in flat numba arrays, leaves gathered for batched evaluation.

Row t of every array is tree t (one per self-play game in flight, or the one tree of a playing
agent); node 0 of a row is its root. One round of search is three calls:

  gather_leaves  (numba)        walks each active tree from its root by PUCT, as many walks as
                                the tree is given, and writes every leaf that needs the network
                                (its state, observation and legal mask) into batch rows; leaves
                                that end the game are backed up at once with the real returns,
                                chance nodes are expanded on the way with their outcome
                                probabilities as priors (and walked least-visited-first relative
                                to those probabilities), so the network never sees a chance node
  the network    (onnxruntime)  one call for the whole batch
  expand_backup  (numba)        each leaf gets its legal children with the policy as priors and
                                its value backed up to the root

Values: node n stores the summed result for the player who moved into it (`mover[n]`), like
agents.search.mcts, so multi-action turns (the same player moving again until END_TURN) need nothing
special; the network's value v for the leaf's player to move counts +v for that player and -v
for the other (two-player zero-sum), a terminal leaf counts each mover's own return. Several
walks of one tree in one round spread out by virtual loss: a walk in flight counts as a loss for
every node on its path, and a walk that reaches a leaf already in the batch is dropped.

With `discount` < 1 a result counts discount^k at a node k plies above the leaf that found it.

Solved nodes (MCTS-solver): a walk that ends the game marks that node won, drawn or lost for
its mover (depth 0), and the proof climbs while it decides the parent: any child that wins for
the player choosing there (the quickest one, depth + 1), or every child solved (a draw, else
the slowest loss). A solved child counts its exact value (+-discount^depth) instead of its
running mean, and a won child is always chosen, so near the end the search plays exactly:
quickest wins, slowest losses.

PUCT at a decision node: argmax Q(c) + c_puct * P(c) * sqrt(N) / (1 + n(c)); an unvisited child
scores the mean of its visited siblings minus `fpu` (first-play urgency).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.puct.proof import DEPTH, DRAW, LOSS, SHIFT, WIN, _prove, _proven_value, forced_result
from engine.protocol import CHANCE, TERMINAL
from engine.specialise import (
    apply_action,
    chance_probability,
    current_player,
    generic,
    legal_actions,
    returns,
)


def observation(s, player, out):
    """Placeholder: `bind(..., observation=kernels.observation)` puts the game's kernel here."""
    raise TypeError("observation is only available inside a bound loop")


class Forest:
    """`trees` trees of `capacity` nodes; roots hold `state_size`-long kernel states."""

    def __init__(self, trees: int, capacity: int, state_size: int):
        shape = (trees, capacity)
        self.parent = np.full(shape, -1, dtype=np.int64)
        self.first_child = np.full(shape, -1, dtype=np.int64)
        self.num_children = np.zeros(shape, dtype=np.int64)
        self.action = np.zeros(shape, dtype=np.int64)
        self.mover = np.full(shape, CHANCE, dtype=np.int64)
        self.visits = np.zeros(shape, dtype=np.int64)
        self.virtual = np.zeros(shape, dtype=np.int64)
        self.value = np.zeros(shape, dtype=np.float64)
        self.prior = np.zeros(shape, dtype=np.float64)
        self.pending = np.zeros(shape, dtype=np.int64)
        self.proof = np.zeros(shape, dtype=np.int64)  # solved result for the mover, see prove()
        # the network's value of an expanded decision node for its player to move (Gumbel's
        # v_mix reads the root's); kept apart from arrays(), which the walks never need
        self.net_value = np.zeros(shape, dtype=np.float64)
        self.size = np.ones(trees, dtype=np.int64)
        self.roots = np.zeros((trees, state_size), dtype=np.int64)

    @property
    def capacity(self) -> int:
        return self.parent.shape[1]

    def arrays(self) -> tuple:
        return (
            self.parent,
            self.first_child,
            self.num_children,
            self.action,
            self.mover,
            self.visits,
            self.virtual,
            self.value,
            self.prior,
            self.pending,
            self.proof,
            self.size,
        )

    def reset(self, t: int, root: np.ndarray) -> None:
        """Tree t becomes a lone unexpanded root at kernel state `root`."""
        self.roots[t] = root
        self.size[t] = 1
        self.parent[t, 0] = -1
        self.first_child[t, 0] = -1
        self.num_children[t, 0] = 0
        self.visits[t, 0] = self.virtual[t, 0] = self.pending[t, 0] = self.proof[t, 0] = 0
        self.value[t, 0] = self.net_value[t, 0] = 0.0
        self.mover[t, 0] = CHANCE

    def children(self, t: int, node: int = 0) -> slice:
        first = int(self.first_child[t, node])
        return slice(first, first + int(self.num_children[t, node]))

    def root_stats(self, t: int, num_actions: int) -> tuple[np.ndarray, np.ndarray]:
        """(visits per action, mean value per action for the root's mover; NaN unvisited)."""
        kids = self.children(t)
        actions, visits = self.action[t, kids], self.visits[t, kids]
        counts = np.zeros(num_actions, dtype=np.float64)
        means = np.full(num_actions, np.nan)
        counts[actions] = visits
        seen = visits > 0
        means[actions[seen]] = self.value[t, kids][seen] / visits[seen]
        return counts, means

    def best_child(self, t: int, node: int = 0) -> int:
        """The move to play: the quickest solved win; else the most visited child not solved
        lost (ties: the higher prior); when every child is lost, the slowest loss."""
        kids = self.children(t, node)
        codes = self.proof[t, kids]
        kinds, depths = codes >> SHIFT, codes & DEPTH
        if (kinds == WIN).any():
            return kids.start + int(np.argmin(np.where(kinds == WIN, depths, DEPTH + 1)))
        alive = kinds != LOSS
        if not alive.any():
            return kids.start + int(np.argmax(depths))
        key = self.visits[t, kids] + self.prior[t, kids] * 1e-6
        return kids.start + int(np.argmax(np.where(alive, key, -1.0)))

    def solved(self, t: int, node: int = 0) -> bool:
        """True when the move at `node` is decided: a solved win among its children, or every
        child solved."""
        kinds = self.proof[t, self.children(t, node)] >> SHIFT
        return bool(len(kinds)) and bool((kinds == WIN).any() or (kinds != 0).all())

    def child_with_action(self, t: int, node: int, action: int) -> int:
        """The child of `node` reached by `action`, or -1 (not expanded / not there)."""
        kids = self.children(t, node)
        hits = np.flatnonzero(self.action[t, kids] == action)
        return int(kids.start + hits[0]) if self.num_children[t, node] and len(hits) else -1


@njit(inline="always")
def _pick_child(t, node, chance_node, first_child, num_children, visits, virtual, value, prior,
                proof, c_puct, fpu, discount):  # fmt: skip
    start = first_child[t, node]
    end = start + num_children[t, node]
    best = start
    if chance_node:  # the outcome furthest behind its probability share
        best_ratio = np.inf
        for child in range(start, end):
            ratio = (visits[t, child] + virtual[t, child] + 1.0) / max(prior[t, child], 1e-12)
            if ratio < best_ratio:
                best_ratio = ratio
                best = child
        return best
    seen_value = 0.0
    seen_visits = 0
    total = 0
    quickest = -1
    for child in range(start, end):
        seen_value += value[t, child]
        seen_visits += visits[t, child]
        total += visits[t, child] + virtual[t, child]
        code = proof[t, child]
        if code >> SHIFT == WIN and (quickest < 0 or (code & DEPTH) < (proof[t, quickest] & DEPTH)):
            quickest = child
    if quickest >= 0:  # a solved win for the player choosing here: nothing else matters
        return quickest
    first_play = (seen_value / seen_visits if seen_visits > 0 else 0.0) - fpu
    root_n = np.sqrt(max(total, 1))
    best_score = -np.inf
    for child in range(start, end):
        n = visits[t, child] + virtual[t, child]
        if proof[t, child] != 0:
            q = _proven_value(proof[t, child], discount)
        elif n > 0:
            q = (value[t, child] - virtual[t, child]) / n
        else:
            q = first_play
        score = q + c_puct * prior[t, child] * root_n / (1.0 + n)
        if score > best_score:
            best_score = score
            best = child
    return best


@njit(inline="always")
def _backup(t, node, outcome, discount, parent, mover, visits, virtual, value):
    """Adds one visit and the movers' results from `node` up to the root, taking back the
    walk's virtual loss; each step up multiplies the result by `discount` (1: AlphaZero; < 1
    prefers quicker wins and slower losses, as the network's value was trained to)."""
    scale = 1.0
    while node != -1:
        visits[t, node] += 1
        virtual[t, node] -= 1
        m = mover[t, node]
        if m >= 0:
            value[t, node] += scale * outcome[m]
        scale *= discount
        node = parent[t, node]


@njit(inline="always")
def _retreat(t, node, parent, virtual):
    while node != -1:
        virtual[t, node] -= 1
        node = parent[t, node]


@njit(inline="always")
def _add_children(t, node, player, moves, count, priors, parent, first_child, num_children,
                  action, mover, visits, virtual, value, prior, pending, proof, size):  # fmt: skip
    """Appends `count` children (actions `moves`, priors renormalised); False when full."""
    capacity = parent.shape[1]
    if count <= 0 or size[t] + count > capacity:
        return False
    first = size[t]
    total = 0.0
    for i in range(count):
        total += priors[i]
    for i in range(count):
        child = first + i
        parent[t, child] = node
        first_child[t, child] = -1
        num_children[t, child] = 0
        action[t, child] = moves[i]
        mover[t, child] = player
        visits[t, child] = 0
        virtual[t, child] = 0
        value[t, child] = 0.0
        prior[t, child] = priors[i] / total if total > 0 else 1.0 / count
        pending[t, child] = 0
        proof[t, child] = 0
    first_child[t, node] = first
    num_children[t, node] = count
    size[t] += count
    return True


@generic
def gather_leaves(roots, walks, root_child, num_players, c_puct, fpu, discount, solve, parent,
                  first_child, num_children, action, mover, visits, virtual, value, prior,
                  pending, proof, size, leaf_states, leaf_obs, leaf_mask, leaf_tree, leaf_node,
                  stats):  # fmt: skip
    """Walks tree t `walks[t]` times; returns how many leaves wait in the batch rows.

    `root_child[t, w]` >= 0 sends the w-th walk of tree t out of its (expanded) root through
    child number `root_child[t, w]` instead of the PUCT choice: the root schedules of
    agents.puct.gumbel (trees beyond its rows, walks beyond its columns choose by PUCT).

    With `solve` > 0 a new leaf is first searched exactly `solve` plies deep (forced_result): a
    forced win or loss solves it without the network. stats[0] += walks ended at a terminal or
    a solved node, stats[1] += walks dropped (leaf already queued or no room to expand a chance
    node)."""
    trees = roots.shape[0]
    width = max(leaf_mask.shape[1], 64)
    moves = np.empty(width, dtype=np.int64)
    probs = np.empty(width, dtype=np.float64)
    outcome = np.zeros(num_players, dtype=np.float64)
    s = np.empty(roots.shape[1], dtype=np.int64)
    deep = max(solve, 1) + 1
    f_states = np.empty((deep, roots.shape[1]), dtype=np.int64)
    f_moves = np.empty((deep, width), dtype=np.int64)
    f_counts = np.zeros(deep, dtype=np.int64)
    f_index = np.zeros(deep, dtype=np.int64)
    f_best = np.zeros(deep, dtype=np.int64)
    f_movers = np.zeros(deep, dtype=np.int64)
    batch = 0
    for t in range(trees):
        for w in range(walks[t]):
            s[:] = roots[t]
            node = 0
            virtual[t, 0] += 1
            while True:
                player = current_player(s)
                if player == TERMINAL:
                    returns(s, outcome)
                    m = mover[t, node]
                    if node != 0 and m >= 0 and proof[t, node] == 0:
                        r = outcome[m]
                        proof[t, node] = (WIN if r > 0 else LOSS if r < 0 else DRAW) << SHIFT
                        _prove(t, node, parent, first_child, num_children, mover, proof)
                    _backup(t, node, outcome, discount, parent, mover, visits, virtual, value)
                    stats[0] += 1
                    break
                if num_children[t, node] == 0 and node != 0 and player >= 0:
                    m = mover[t, node]
                    if proof[t, node] == 0 and solve > 0 and m >= 0:
                        forced = forced_result(s, solve, f_states, f_moves, f_counts, f_index,
                                               f_best, f_movers, outcome)  # fmt: skip
                        if forced != 0:  # for `player`; stored for the node's mover
                            kind = WIN if (forced > 0) == (m == player) else LOSS
                            proof[t, node] = (kind << SHIFT) | abs(forced)
                            _prove(t, node, parent, first_child, num_children, mover, proof)
                    if proof[t, node] != 0 and m >= 0:  # solved: its exact value, no network
                        v = _proven_value(proof[t, node], discount)
                        for p in range(num_players):
                            outcome[p] = v if p == m else -v
                        _backup(t, node, outcome, discount, parent, mover, visits, virtual,
                                value)  # fmt: skip
                        stats[0] += 1
                        break
                if num_children[t, node] == 0:
                    if player == CHANCE:
                        count = legal_actions(s, CHANCE, moves)
                        for i in range(count):
                            probs[i] = chance_probability(s, moves[i])
                        if not _add_children(t, node, CHANCE, moves, count, probs, parent,
                                             first_child, num_children, action, mover,
                                             visits, virtual, value, prior, pending, proof,
                                             size):  # fmt: skip
                            _retreat(t, node, parent, virtual)
                            stats[1] += 1
                            break
                    elif pending[t, node] or batch == leaf_states.shape[0]:
                        _retreat(t, node, parent, virtual)
                        stats[1] += 1
                        break
                    else:
                        pending[t, node] = 1
                        leaf_states[batch] = s
                        observation(s, player, leaf_obs[batch])
                        leaf_mask[batch] = 0.0
                        count = legal_actions(s, player, moves)
                        for i in range(count):
                            leaf_mask[batch, moves[i]] = 1.0
                        leaf_tree[batch] = t
                        leaf_node[batch] = node
                        batch += 1
                        break
                if (node == 0 and t < root_child.shape[0] and w < root_child.shape[1]
                        and root_child[t, w] >= 0):  # fmt: skip
                    node = first_child[t, 0] + min(root_child[t, w], num_children[t, 0] - 1)
                else:
                    node = _pick_child(t, node, player == CHANCE, first_child, num_children,
                                       visits, virtual, value, prior, proof, c_puct, fpu,
                                       discount)  # fmt: skip
                apply_action(s, action[t, node])
                virtual[t, node] += 1
    return batch


@generic
def expand_backup(count, leaf_states, leaf_tree, leaf_node, policy, leaf_value, num_players,
                  discount, parent, first_child, num_children, action, mover, visits, virtual,
                  value, prior, pending, proof, size, net_value):  # fmt: skip
    """Expands the first `count` gathered leaves with the network's policy as priors, keeps
    the network's value in `net_value` and backs it up (two players: +v for the leaf's player
    to move, -v for the other)."""
    width = max(policy.shape[1], 64)
    moves = np.empty(width, dtype=np.int64)
    priors = np.empty(width, dtype=np.float64)
    outcome = np.zeros(num_players, dtype=np.float64)
    for i in range(count):
        t = leaf_tree[i]
        node = leaf_node[i]
        s = leaf_states[i]
        player = current_player(s)
        n = legal_actions(s, player, moves)
        for k in range(n):
            priors[k] = policy[i, moves[k]]
        _add_children(t, node, player, moves, n, priors, parent, first_child, num_children,
                      action, mover, visits, virtual, value, prior, pending, proof,
                      size)  # fmt: skip
        pending[t, node] = 0
        v = leaf_value[i]
        net_value[t, node] = v
        for p in range(num_players):
            outcome[p] = v if p == player else -v
        _backup(t, node, outcome, discount, parent, mover, visits, virtual, value)


@njit(cache=True)
def reroot(t, new_root, parent, first_child, num_children, action, mover, visits, virtual,
           value, prior, pending, proof, size, net_value):  # fmt: skip
    """Keeps only the subtree under `new_root`, compacted breadth-first with it as node 0."""
    n = size[t]
    old_first = first_child[t, :n].copy()
    old_count = num_children[t, :n].copy()
    old_action = action[t, :n].copy()
    old_mover = mover[t, :n].copy()
    old_visits = visits[t, :n].copy()
    old_value = value[t, :n].copy()
    old_prior = prior[t, :n].copy()
    old_proof = proof[t, :n].copy()
    old_net_value = net_value[t, :n].copy()
    origin = np.empty(n, dtype=np.int64)
    origin[0] = new_root
    tail = 1
    head = 0
    while head < tail:
        old = origin[head]
        action[t, head] = old_action[old]
        mover[t, head] = old_mover[old]
        visits[t, head] = old_visits[old]
        value[t, head] = old_value[old]
        prior[t, head] = old_prior[old]
        proof[t, head] = old_proof[old]
        net_value[t, head] = old_net_value[old]
        virtual[t, head] = 0
        pending[t, head] = 0
        count = old_count[old]
        num_children[t, head] = count
        first_child[t, head] = tail if count > 0 else -1
        for j in range(count):
            origin[tail] = old_first[old] + j
            parent[t, tail] = head
            tail += 1
        head += 1
    parent[t, 0] = -1
    proof[t, 0] = 0  # it was stored for its mover; the root's is kept for the player to move
    size[t] = tail
