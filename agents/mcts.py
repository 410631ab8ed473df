"""UCT with random rollouts, the whole tree in flat arrays and the search loop in numba.

One simulation: select down the tree by UCB1 (chance nodes: the least visited outcome, so
outcomes are sampled evenly), expand the leaf's children at once, play one random rollout,
back the returns up through parent pointers. Each node stores the value for the player who
chose the move into it, so multi-action turns (the same player moving twice) need nothing
special. Spec: `mcts:sims=N,c=1.41` or `mcts:ms=T`.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from agents.base import Agent, AgentError, builder, option
from engine.bits import new_rng, rand_below, rand_unit
from engine.loops import random_playout
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game, State
from engine.specialise import (
    apply_action,
    bind,
    current_player,
    generic,
    legal_actions,
    returns,
)

ROOT = 0


class Tree:
    """Flat node arrays; `size[0]` nodes are in use."""

    def __init__(self, capacity: int):
        self.parent = np.full(capacity, -1, dtype=np.int64)
        self.first_child = np.full(capacity, -1, dtype=np.int64)
        self.num_children = np.zeros(capacity, dtype=np.int64)
        self.action = np.zeros(capacity, dtype=np.int64)
        self.mover = np.full(capacity, CHANCE, dtype=np.int64)
        self.visits = np.zeros(capacity, dtype=np.int64)
        self.value = np.zeros(capacity, dtype=np.float64)
        self.size = np.ones(1, dtype=np.int64)

    def arrays(self) -> tuple:
        return (
            self.parent,
            self.first_child,
            self.num_children,
            self.action,
            self.mover,
            self.visits,
            self.value,
            self.size,
        )

    def root_children(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(actions, visits, mean values) of the root's children."""
        first, count = self.first_child[ROOT], self.num_children[ROOT]
        kids = slice(first, first + count)
        visits = self.visits[kids]
        means = np.where(visits > 0, self.value[kids] / np.maximum(visits, 1), 0.0)
        return self.action[kids].copy(), visits.copy(), means


@njit(inline="always")
def _select(node, chance_node, first_child, num_children, visits, value, c, rng):
    start = first_child[node]
    end = start + num_children[node]
    best = start
    if chance_node:
        for child in range(start + 1, end):
            if visits[child] < visits[best]:
                best = child
        return best
    log_parent = np.log(max(visits[node], 1))
    best_score = -np.inf
    for child in range(start, end):
        if visits[child] == 0:
            score = 1e9 + rand_unit(rng)  # every move once, in random order
        else:
            score = value[child] / visits[child] + c * np.sqrt(log_parent / visits[child])
        if score > best_score:
            best_score = score
            best = child
    return best


@generic
def uct_search(
    root,
    num_players,
    num_actions,
    neutral,
    simulations,
    c,
    rng,
    parent,
    first_child,
    num_children,
    action,
    mover,
    visits,
    value,
    size,
):
    """Runs `simulations` more simulations on the tree rooted at state `root`."""
    capacity = parent.shape[0]
    buffer = np.empty(max(num_actions, 64), dtype=np.int64)
    joint = np.empty(num_players, dtype=np.int64)
    outcome = np.zeros(num_players, dtype=np.float64)
    s = root.copy()
    for _ in range(simulations):
        s[:] = root
        node = ROOT
        while num_children[node] > 0:
            node = _select(
                node,
                current_player(s) == CHANCE,
                first_child,
                num_children,
                visits,
                value,
                c,
                rng,
            )
            apply_action(s, action[node])
        player = current_player(s)
        if player != TERMINAL:
            count = legal_actions(s, player, buffer)
            if size[0] + count <= capacity:
                first = size[0]
                for i in range(count):
                    child = first + i
                    parent[child] = node
                    first_child[child] = -1
                    num_children[child] = 0
                    action[child] = buffer[i]
                    mover[child] = player
                    visits[child] = 0
                    value[child] = 0.0
                first_child[node] = first
                num_children[node] = count
                size[0] += count
                node = first + rand_below(rng, count)
                apply_action(s, action[node])
        random_playout(s, num_players, neutral, rng, buffer, joint)
        returns(s, outcome)
        while node != -1:
            visits[node] += 1
            if mover[node] >= 0:
                value[node] += outcome[mover[node]]
            node = parent[node]


@builder("mcts")
class MCTSAgent(Agent):
    """UCT with random rollouts over any turn-based game, chance and multi-action turns included."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.sims = option(options, "sims", int, 1000)
        self.ms = option(options, "ms", float, 0.0)
        self.c = option(options, "c", float, 1.41)
        if options:
            raise AgentError(f"mcts: unknown option(s) {sorted(options)}")
        if self.sims < 1 or self.ms < 0 or self.c < 0:
            raise AgentError("mcts: sims must be >= 1, ms and c >= 0")
        if game.simultaneous:
            raise AgentError(f"mcts: {game.name} is simultaneous; use simab")
        self._rng = new_rng(0 if seed is None else seed)
        self.last_tree: Tree | None = None

    def search(self, state: State) -> Tree:
        """Builds the search tree for `state` within the simulation or time budget."""
        g = self.game
        budget_nodes = 200_000 if self.ms else (self.sims + 1) * max(g.num_actions, 6) + 1
        tree = Tree(budget_nodes)
        search = bind(uct_search, g.kernels.search())
        run = (state.array, g.num_players, g.num_actions, g.neutral_action)
        if self.ms:
            deadline = time.perf_counter() + self.ms / 1000
            while time.perf_counter() < deadline:
                search(*run, 64, self.c, self._rng, *tree.arrays())
        else:
            search(*run, self.sims, self.c, self._rng, *tree.arrays())
        self.last_tree = tree
        return tree

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() in (CHANCE, SIMULTANEOUS, TERMINAL):
            return state.random_action(self.rng, player)
        actions, visits, means = self.search(state).root_children()
        best = np.lexsort((means, visits))[-1]  # most visited, then best mean
        return int(actions[best])
