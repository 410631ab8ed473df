"""Solved nodes of the PUCT forest (MCTS-solver with depths) and the exact search of new leaves.

A node's proof is `kind << 16 | depth`: won, drawn or lost for the player who moved into it, in
`depth` plies. `_prove` carries a proof up the tree while it decides the parent; `forced_result`
searches a fresh leaf a few plies deep for forced wins and losses before the network is asked.
"""

from __future__ import annotations

from numba import njit

from engine.protocol import TERMINAL
from engine.specialise import apply_action, current_player, generic, legal_actions, returns

# ---- solved nodes: proof = kind << 16 | depth (plies to the end), kind for the node's mover ----
WIN, DRAW, LOSS = 1, 2, 3
SHIFT = 16
DEPTH = (1 << SHIFT) - 1


@njit(inline="always")
def proof_kind(code):
    return code >> SHIFT


@njit(inline="always")
def proof_depth(code):
    return code & DEPTH


@njit(inline="always")
def _proven_value(code, discount):
    """The exact value of a solved node for its mover: +-discount^depth, or 0 for a draw."""
    kind = code >> SHIFT
    if kind == DRAW:
        return 0.0
    v = discount ** (code & DEPTH)
    return v if kind == WIN else -v


@njit(inline="always")
def _prove(t, node, parent, first_child, num_children, mover, proof):
    """Carries the proof of `node` upwards (MCTS-solver, with depths): a node is solved when a
    child wins for the player choosing there (depth: the quickest win + 1) or when every child
    is solved (a draw if any, else a loss as slow as possible). Never through chance nodes; two
    players (a win for one is a loss for the other)."""
    while True:
        up = parent[t, node]
        chooser = mover[t, node]
        if up == -1 or chooser < 0:
            return
        win, draw, loss, solved = DEPTH, DEPTH, -1, True
        first = first_child[t, up]
        for child in range(first, first + num_children[t, up]):
            code = proof[t, child]
            kind, depth = code >> SHIFT, code & DEPTH
            if kind == WIN:
                win = min(win, depth)
            elif kind == DRAW:
                draw = min(draw, depth)
            elif kind == LOSS:
                loss = max(loss, depth)
            else:
                solved = False
        if win < DEPTH:
            kind, depth = WIN, win + 1
        elif not solved:
            return
        elif draw < DEPTH:
            kind, depth = DRAW, draw + 1
        else:
            kind, depth = LOSS, loss + 1
        if up == 0 or mover[t, up] < 0:  # the root, or a chance outcome: stored for the chooser
            proof[t, up] = (kind << SHIFT) | depth
            return
        if mover[t, up] != chooser and kind != DRAW:
            kind = LOSS if kind == WIN else WIN
        proof[t, up] = (kind << SHIFT) | min(depth, DEPTH - 1)
        node = up


@generic
def forced_result(root, depth, states, moves, counts, index, best, movers, outcome):
    """Wins and losses forced within `depth` plies of `root`, for the player to move there:
    +k a forced win in k plies, -k a forced loss in k plies (the slowest), 0 neither (a draw,
    a chance node or the horizon in the way). Iterative depth-first search over the stacks
    `states` [depth + 1, state size], `moves` [depth + 1, width]; two players."""
    level = 0
    states[0] = root
    movers[0] = current_player(root)
    counts[0] = legal_actions(states[0], movers[0], moves[0])
    index[0] = 0
    best[0] = -(1 << 30)
    while True:
        if index[level] == counts[level]:
            v = best[level]
            if level == 0:
                return v
            level -= 1
            cv = v if movers[level + 1] == movers[level] else -v
            cv = cv + 1 if cv > 0 else (cv - 1 if cv < 0 else 0)
            if _forced_key(cv) > _forced_key(best[level]):
                best[level] = cv
            if best[level] == 1:
                index[level] = counts[level]  # nothing beats winning at once
            continue
        child = states[level + 1]
        child[:] = states[level]
        apply_action(child, moves[level, index[level]])
        index[level] += 1
        p = current_player(child)
        if p == TERMINAL:
            returns(child, outcome)
            r = outcome[movers[level]]
            cv = 1 if r > 0 else (-1 if r < 0 else 0)
        elif p < 0 or level + 1 == depth:
            cv = 0
        else:
            level += 1
            movers[level] = p
            counts[level] = legal_actions(child, p, moves[level])
            index[level] = 0
            best[level] = -(1 << 30)
            continue
        if _forced_key(cv) > _forced_key(best[level]):
            best[level] = cv
        if best[level] == 1:
            index[level] = counts[level]


@njit(inline="always")
def _forced_key(v):
    """Preference of the player to move: quick wins, then unknown, then slow losses."""
    if v == -(1 << 30):
        return -(1 << 31)
    if v > 0:
        return 1000 - v
    if v < 0:
        return -1000 - v
    return 0
