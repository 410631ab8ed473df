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

from agents.puct_proof import _proven_value

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


def child_values(forest, t: int, kids: slice, discount: float) -> np.ndarray:
    """Mean value of each root child for the player choosing there (a solved child its exact
    value); an unvisited one gets the mean of its visited siblings."""
    visits = forest.visits[t, kids].astype(np.float64)
    q = np.divide(forest.value[t, kids], visits, out=np.zeros_like(visits), where=visits > 0)
    if (visits > 0).any():
        q[visits == 0] = q[visits > 0].mean()
    for i in np.flatnonzero(forest.proof[t, kids]):  # solved: the exact value, as PUCT counts it
        q[i] = _proven_value(int(forest.proof[t, kids.start + i]), float(discount))
    return q


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


def halving_search(search, sims: int, considered: int, batch: int) -> int:
    """Searches tree 0 of `search` (agents.puct.Search) with `sims` simulations, the root's
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
    logits = np.log(np.maximum(f.prior[0, kids], 1e-30))
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
            search.round(walks, chunk)
            np.subtract.at(owed, chunk, 1)
            stalls = stalls + 1 if int(f.visits[0, 0]) == before else 0
            if f.solved(0):  # a proven win, or every move decided: the exact choice
                return f.best_child(0)
        q = child_values(f, 0, kids, search.discount)
        most = float(f.visits[0, kids].max())
        order = np.argsort(-scores(logits[ranked[:k]], q[ranked[:k]], most), kind="stable")
        ranked = ranked[:k][order]
        if int(f.visits[0, 0]) - start >= sims:
            break
    return kids.start + int(ranked[0])
