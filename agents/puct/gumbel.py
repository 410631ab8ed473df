"""The root of a small search budget spent by sequential halving (Gumbel AlphaZero's root).

Danihelka, Guez, Schrittwieser and Silver, "Policy improvement by planning with Gumbel" (ICLR
2022): with a few dozen simulations PUCT's root spends most of them on the prior's favourite
and may play a move it hardly looked at. Sequential halving instead takes the `considered` most
probable moves, visits each equally, keeps the better half by `logit + sigma(q)` and repeats
until the budget is spent (never fewer than two), then plays the best survivor by that score;
sigma(q) = (c_visit + the most visits of a root child) * c_scale * (q + 1) / 2 for a mean value
q in [-1, 1], with the paper's c_visit 50 and c_scale 1. In play the Gumbel noise is left out
(it serves exploration in self-play), so the first candidates are the prior's top moves. Below
the root the walks stay PUCT; the root's walks are forced through gather_leaves' `root_child`.
"""

from __future__ import annotations

import math

import numpy as np

from agents.puct.proof import _proven_value

C_VISIT = 50.0
C_SCALE = 1.0


def halving_phases(considered: int, sims: int) -> list[tuple[int, int]]:
    """(candidates, visits each) for each phase of sequential halving within `sims` walks.

    Each of the ceil(log2(considered)) halvings gets an equal share of the budget; the last
    pair keeps the rest (the caller stops when the budget is spent)."""
    if considered <= 1 or sims <= 0:
        return [(1, max(sims, 0))] if considered == 1 else []
    rounds = max(1, math.ceil(math.log2(considered)))
    phases, used, k = [], 0, considered
    while used < sims:
        each = max(1, sims // (rounds * k))
        phases.append((k, each))
        used += k * each
        k = max(2, k // 2)
    return phases


def child_values(forest, t: int, kids: slice, discount: float, mix: bool = False) -> np.ndarray:
    """Mean value of each root child for the player choosing there (a solved child its exact
    value). An unvisited child is completed by the mean of its visited siblings, or with `mix`
    by the paper's v_mix (its eq. 33): the network's value of the root and the prior-weighted
    mean of the visited children, weighted 1 : N for N visits in all, so that a move nobody
    looked at is not credited with the value of the ones the search chose to look at."""
    visits = forest.visits[t, kids].astype(np.float64)
    seen = visits > 0
    q = np.divide(forest.value[t, kids], visits, out=np.zeros_like(visits), where=seen)
    if mix:
        q[~seen] = v_mix(forest.net_value[t, 0], forest.prior[t, kids], visits, q)
    elif seen.any():
        q[~seen] = q[seen].mean()
    for i in np.flatnonzero(forest.proof[t, kids]):  # solved: the exact value, as PUCT counts it
        q[i] = _proven_value(int(forest.proof[t, kids.start + i]), float(discount))
    return q


def v_mix(root_value: float, prior: np.ndarray, visits: np.ndarray, q: np.ndarray) -> float:
    """(root_value + N * sum_visited(prior * q) / sum_visited(prior)) / (1 + N), N the visits
    of all children; the root's value alone while no child has been visited."""
    seen = visits > 0
    total = float(visits.sum())
    if total == 0:
        return float(root_value)
    weight = float(prior[seen].sum())
    visited = float(prior[seen] @ q[seen]) / weight if weight > 0 else float(q[seen].mean())
    return (float(root_value) + total * visited) / (1.0 + total)


def root_logits(forest, t: int, kids: slice) -> np.ndarray:
    """The network's log-priors of tree t's root children (a zero prior kept finite)."""
    return np.log(np.maximum(forest.prior[t, kids], 1e-30))


def scores(logits: np.ndarray, q: np.ndarray, most_visits: float) -> np.ndarray:
    """logit + sigma(q): the ranking of candidates and the final choice."""
    return logits + (C_VISIT + most_visits) * C_SCALE * (q + 1.0) / 2.0


def _next_walks(candidates: np.ndarray, owed: np.ndarray, expanded: np.ndarray, limit: int):
    """Round robin over the candidates still owed walks; an unexpanded one takes a single walk
    (a second would reach its leaf while it waits for the network, and be dropped)."""
    chunk: list[int] = []
    taken = dict.fromkeys(candidates.tolist(), 0)
    while len(chunk) < limit:
        before = len(chunk)
        for c in candidates.tolist():
            if len(chunk) < limit and taken[c] < owed[c] and (taken[c] == 0 or expanded[c]):
                chunk.append(c)
                taken[c] += 1
        if len(chunk) == before:
            break
    return np.asarray(chunk, dtype=np.int64)


def halving_search(search, sims: int, considered: int, batch: int, mix: bool = False) -> int:
    """Searches tree 0 of `search` (agents.puct.agent.Search) with `sims` simulations, the root's
    walks chosen by sequential halving; returns the root child (node index) to play, -1 for no
    move. A simulation is a walk that reached the network or the end of the game."""
    f = search.forest
    walks = np.ones(1, dtype=np.int64)
    start = int(f.visits[0, 0])
    for _ in range(4):  # the root needs its children: one walk evaluates it
        if f.num_children[0, 0] > 0:
            break
        search.round(walks)
    kids = f.children(0)
    count = kids.stop - kids.start
    if count <= 1:
        return kids.start if count == 1 else -1
    logits = root_logits(f, 0, kids)
    ranked = np.argsort(-logits, kind="stable")[: max(1, min(considered, count))]
    owed = np.zeros(count, dtype=np.int64)
    for k, each in halving_phases(len(ranked), sims - (int(f.visits[0, 0]) - start)):
        owed[:] = 0
        owed[ranked[:k]] = each
        stalls = 0
        while owed.any() and stalls < 3:
            left = sims - (int(f.visits[0, 0]) - start)
            if left <= 0:
                break
            expanded = f.num_children[0, kids] > 0
            chunk = _next_walks(ranked[:k], owed, expanded, min(batch, left))
            before = int(f.visits[0, 0])
            walks[0] = len(chunk)
            search.round(walks, chunk[None, :])
            np.subtract.at(owed, chunk, 1)
            stalls = stalls + 1 if int(f.visits[0, 0]) == before else 0
            if f.solved(0):  # a proven win, or every move decided: the exact choice
                return f.best_child(0)
        q = child_values(f, 0, kids, search.discount, mix)
        most = float(f.visits[0, kids].max())
        order = np.argsort(-scores(logits[ranked[:k]], q[ranked[:k]], most), kind="stable")
        ranked = ranked[:k][order]
        if int(f.visits[0, 0]) - start >= sims:
            break
    return kids.start + int(ranked[0])


def improved_policy(logits: np.ndarray, q: np.ndarray, most_visits: float) -> np.ndarray:
    """The paper's policy target, softmax(logit + sigma(completed q)), over the root's children
    (`q` from child_values: an unvisited child completed by its siblings' mean or by v_mix)."""
    z = scores(logits, q, most_visits)
    z = np.exp(z - z.max())
    return z / z.sum()


class GumbelRoots:
    """Sequential halving at the root of every game in flight, for batched self-play: each tree
    takes one walk a round through the child its schedule names (`choice`, Search.round's
    `root_child`). Exploration comes from Gumbel noise on the logits, which picks the
    candidates and enters the final choice (Gumbel-top-k sampling without replacement), in
    place of Dirichlet noise and temperature; `finish` returns the move and the improved policy
    to train on. The bookkeeping per tree is a phase's walk order, advanced by array indexing
    every round and re-ranked in Python once a phase (a few times a move)."""

    def __init__(self, forest, slots: int, considered: int, discount: float, mix: bool = False):
        self.forest, self.considered, self.discount = forest, int(considered), float(discount)
        self.mix = bool(mix)  # unvisited children completed by v_mix, not the siblings' mean
        self.choice = np.full((slots, 1), -1, dtype=np.int64)
        self.planned = np.zeros(slots, dtype=bool)
        self.budget = np.zeros(slots, dtype=np.int64)
        self.base = np.zeros(slots, dtype=np.int64)  # root visits when the move began
        self.order = np.zeros((slots, 1), dtype=np.int64)  # each tree's walk order (children)
        self.cursor = np.zeros(slots, dtype=np.int64)
        self.length = np.zeros(slots, dtype=np.int64)
        self.kept = np.zeros(slots, dtype=np.int64)  # candidates in the current phase
        self.noisy: list[np.ndarray] = [np.empty(0)] * slots  # gumbel + logit per child
        self.ranked: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * slots
        self.phases: list[list[tuple[int, int]]] = [[] for _ in range(slots)]

    def begin(self, t: int, sims: int, rng: np.random.Generator) -> None:
        """A new move of tree t with `sims` walks, planned now if its root has children (a
        reused tree), else after the round that expands it (`plan_expanded`)."""
        self.planned[t], self.budget[t] = False, int(sims)
        self.base[t] = self.forest.visits[t, 0]
        if self.forest.num_children[t, 0] > 0:
            self.plan(t, rng)

    def plan(self, t: int, rng: np.random.Generator) -> None:
        """Draws the Gumbel noise and the candidates: the top `considered` of gumbel + logit."""
        f = self.forest
        kids = f.children(t)
        logits = root_logits(f, t, kids)
        self.noisy[t] = rng.gumbel(size=kids.stop - kids.start) + logits
        top = max(1, min(self.considered, kids.stop - kids.start))
        self.ranked[t] = np.argsort(-self.noisy[t], kind="stable")[:top]
        left = int(self.budget[t] - (f.visits[t, 0] - self.base[t]))  # after the root's walk
        self.phases[t] = halving_phases(top, left)
        self.planned[t] = True
        self._start_phase(t)

    def plan_expanded(self, trees: np.ndarray, rngs) -> None:
        """Plans the trees among `trees` whose root the last round expanded."""
        f = self.forest
        for t in trees[~self.planned[trees] & (f.num_children[trees, 0] > 0)]:
            self.plan(int(t), rngs(int(t)))

    def _start_phase(self, t: int) -> None:
        if self.phases[t]:
            k, each = self.phases[t].pop(0)
        else:  # schedule spent, budget not (dropped walks): the last pair again
            k, each = min(2, len(self.ranked[t])), 1
        walk_order = np.tile(self.ranked[t][:k], each)
        if walk_order.size > self.order.shape[1]:
            grown = np.zeros((self.order.shape[0], walk_order.size), dtype=np.int64)
            grown[:, : self.order.shape[1]] = self.order
            self.order = grown
        self.order[t, : walk_order.size] = walk_order
        self.cursor[t], self.length[t], self.kept[t] = 0, walk_order.size, k

    def _rank(self, t: int) -> np.ndarray:
        """Orders the current phase's candidates by gumbel + logit + sigma(q), best first;
        returns the children's q."""
        f = self.forest
        kids = f.children(t)
        q = child_values(f, t, kids, self.discount, self.mix)
        top = self.ranked[t][: self.kept[t]]
        value = scores(self.noisy[t][top], q[top], float(f.visits[t, kids].max()))
        self.ranked[t] = top[np.argsort(-value, kind="stable")]
        return q

    def next_walks(self, trees: np.ndarray) -> np.ndarray:
        """`choice` for one walk of each of `trees` this round (PUCT's for unplanned trees); a
        tree whose phase ends keeps the better half of its candidates."""
        self.choice[:, 0] = -1
        trees = trees[self.planned[trees]]
        self.choice[trees, 0] = self.order[trees, self.cursor[trees]]
        self.cursor[trees] += 1
        for t in trees[self.cursor[trees] >= self.length[trees]]:
            self._rank(int(t))
            self._start_phase(int(t))
        return self.choice

    def finish(self, t: int, num_actions: int, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        """(root child to play, improved policy over the game's actions) of tree t's move: the
        best candidate of the current phase, or the exact choice once the root is solved."""
        f = self.forest
        if not self.planned[t]:
            self.plan(t, rng)
        kids = f.children(t)
        q = self._rank(t)
        best = f.best_child(t) if f.solved(t) else kids.start + int(self.ranked[t][0])
        logits = root_logits(f, t, kids)
        policy = np.zeros(num_actions, dtype=np.float64)
        policy[f.action[t, kids]] = improved_policy(logits, q, float(f.visits[t, kids].max()))
        return best, policy
