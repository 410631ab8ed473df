"""UCT with random rollouts, the whole tree in flat arrays and the search loop in numba.

One simulation: select down the tree by UCB1 (chance nodes: the least visited outcome, so
outcomes are sampled evenly), expand the leaf's children at once, play one random rollout,
back the returns up through parent pointers. Each node stores the value for the player who
chose the move into it, so multi-action turns (the same player moving twice) need nothing
special. Spec: `mcts:sims=N,c=1.41` or `mcts:ms=T`; `per=turn` searches once per turn and plays
the most visited path through it, as study 001 does (default `per=action`: a search per action).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from agents.analysis import Analysis, from_search
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
    """Flat node arrays; `size[0]` nodes are in use.

    Only the root is initialised: the search writes every field of a node when it creates it,
    so a large capacity (sims x num_actions for 4,320-action games) costs no time until used.
    """

    def __init__(self, capacity: int):
        self.parent = np.empty(capacity, dtype=np.int64)
        self.first_child = np.empty(capacity, dtype=np.int64)
        self.num_children = np.empty(capacity, dtype=np.int64)
        self.action = np.empty(capacity, dtype=np.int64)
        self.mover = np.empty(capacity, dtype=np.int64)
        self.visits = np.empty(capacity, dtype=np.int64)
        self.value = np.empty(capacity, dtype=np.float64)
        self.proven = np.empty(capacity, dtype=np.int64)
        for array, root in (
            (self.parent, -1),
            (self.first_child, -1),
            (self.num_children, 0),
            (self.action, 0),
            (self.mover, CHANCE),
            (self.visits, 0),
            (self.value, 0.0),
            (self.proven, 0),
        ):
            array[ROOT] = root
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
            self.proven,
            self.size,
        )

    def root_children(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(actions, visits, mean values) of the root's children."""
        first, count = self.first_child[ROOT], self.num_children[ROOT]
        kids = slice(first, first + count)
        visits = self.visits[kids]
        means = np.where(visits > 0, self.value[kids] / np.maximum(visits, 1), 0.0)
        return self.action[kids].copy(), visits.copy(), means

    def best_child(self, node: int = ROOT) -> int:
        """A proven win if there is one; else the most visited child not proven lost (then the
        better mean)."""
        first, count = self.first_child[node], self.num_children[node]
        kids = np.arange(first, first + count)
        proven = self.proven[kids]
        if (proven == 1).any():
            return int(kids[np.argmax(proven == 1)])
        if (proven == -1).any() and not (proven == -1).all():
            kids = kids[proven != -1]
        visits = self.visits[kids]
        means = self.value[kids] / np.maximum(visits, 1)
        return int(kids[np.lexsort((means, visits))[-1]])


@njit(inline="always")
def _select(node, chance_node, first_child, num_children, visits, value, proven, c, rng):
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
        if proven[child] != 0:  # solver: a proven win first, a proven loss last
            score = 2e9 * proven[child] + rand_unit(rng)
        elif visits[child] == 0:
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
    proven,
    size,
    solve,
):
    """Runs `simulations` more simulations on the tree rooted at state `root`.

    With `solve`, proven results (1 win / -1 loss for the node's mover, two-player zero-sum)
    propagate up the tree, and the search stops once the root's value is known.
    """
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
                proven,
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
                    proven[child] = 0
                first_child[node] = first
                num_children[node] = count
                size[0] += count
                node = first + rand_below(rng, count)
                apply_action(s, action[node])
        leaf_is_terminal = current_player(s) == TERMINAL
        random_playout(s, num_players, neutral, rng, buffer, joint)
        returns(s, outcome)
        if solve and leaf_is_terminal and mover[node] >= 0 and outcome[mover[node]] != 0:
            proven[node] = 1 if outcome[mover[node]] > 0 else -1
            if _propagate_proof(node, parent, first_child, num_children, mover, proven):
                _backup(node, parent, mover, visits, value, outcome)
                return
        _backup(node, parent, mover, visits, value, outcome)


@njit(inline="always")
def _backup(node, parent, mover, visits, value, outcome):
    while node != -1:
        visits[node] += 1
        if mover[node] >= 0:
            value[node] += outcome[mover[node]]
        node = parent[node]


@njit
def _propagate_proof(node, parent, first_child, num_children, mover, proven):
    """Carries a new proof upwards; True once the root's value is proven."""
    while node != ROOT:
        up = parent[node]
        chooser = mover[node]  # the player who picks among `up`'s children
        if chooser < 0:
            return False  # never prove through chance
        if proven[node] == 1:
            result = 1
        else:
            first = first_child[up]
            for child in range(first, first + num_children[up]):
                if proven[child] != -1:
                    return False
            result = -1
        if up == ROOT:
            return True
        if mover[up] < 0:
            return False
        proven[up] = result if mover[up] == chooser else -result
        node = up
    return True


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(text)
    return lowered in ("true", "1", "yes")


@builder("mcts")
class MCTSAgent(Agent):
    """UCT with random rollouts over any turn-based game, chance and multi-action turns included."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.sims = option(options, "sims", int, 1000)
        self.ms = option(options, "ms", float, 0.0)
        self.c = option(options, "c", float, 1.41)
        self.solve = option(options, "solve", _boolean, False)
        self.per = option(options, "per", str, "action")
        if self.per not in ("action", "turn"):
            raise AgentError("mcts: per must be action (search before every action) or turn")
        if options:
            raise AgentError(f"mcts: unknown option(s) {sorted(options)}")
        if self.sims < 1 or self.ms < 0 or self.c < 0:
            raise AgentError("mcts: sims must be >= 1, ms and c >= 0")
        if game.simultaneous:
            raise AgentError(f"mcts: {game.name} is simultaneous; use simab")
        self._rng = new_rng(0 if seed is None else seed)
        self.last_tree: Tree | None = None
        self._root_history: list[int] | None = None

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
                search(*run, 64, self.c, self._rng, *tree.arrays(), self.solve)
        else:
            search(*run, self.sims, self.c, self._rng, *tree.arrays(), self.solve)
        self.last_tree = tree
        return tree

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() in (CHANCE, SIMULTANEOUS, TERMINAL):
            return state.random_action(self.rng, player)
        if self.per == "turn":
            planned = self._follow_plan(state)
            if planned is not None:
                return planned
        tree = self.search(state)
        self._root_history = state.history()
        return int(tree.action[tree.best_child()])

    def analyse(self, state: State) -> Analysis:
        """One search: visit shares, mean values, the move `step` would play."""
        if state.current_player() < 0:
            return super().analyse(state)  # the protocol's error
        start = time.perf_counter()
        tree = self.search(state)
        move = int(tree.action[tree.best_child()])
        return from_search(move, *tree.root_children(), time.perf_counter() - start)

    def _follow_plan(self, state: State) -> int | None:
        """Study 001's turn recovery: one search per turn, then the most visited actions down
        the same tree, through the chance outcomes that really happened, until the turn ends.
        None when the turn's search has not been made (or the tree ends): search again."""
        tree, root = self.last_tree, self._root_history
        history = state.history()
        if tree is None or root is None or history[: len(root)] != root:
            return None
        node = ROOT
        for action in history[len(root) :]:
            if self.game.ends_turn(action):
                return None
            first, count = tree.first_child[node], tree.num_children[node]
            kids = np.flatnonzero(tree.action[first : first + count] == action)
            if len(kids) == 0:
                return None
            node = first + int(kids[0])
        if tree.num_children[node] == 0:
            return None
        best = tree.best_child(node)
        if tree.visits[best] == 0 or tree.mover[best] != state.current_player():
            return None
        return int(tree.action[best])

    def policy(self, state: State) -> np.ndarray:
        """Searches `state` and returns the root's visit shares over all `num_actions` (zero on
        illegal actions): the self-play training target (features.generate.selfplay)."""
        actions, visits, _ = self.search(state).root_children()
        shares = np.zeros(self.game.num_actions, dtype=np.float64)
        np.add.at(shares, actions, visits)
        return shares / max(shares.sum(), 1)

    def root_values(self) -> np.ndarray:
        """Mean simulation value of each root action for the player to move, from the last
        search (NaN for actions not visited or not legal)."""
        values = np.full(self.game.num_actions, np.nan)
        if self.last_tree is not None:
            actions, visits, means = self.last_tree.root_children()
            values[actions[visits > 0]] = means[visits > 0]
        return values

    def plan(self, state: State) -> list[int]:
        """The whole turn: most-visited actions down the tree until the turn ends (END_TURN or
        another player to move), for games with multi-action turns."""
        tree = self.search(state)
        player, node, actions = state.current_player(), ROOT, []
        while tree.num_children[node] > 0:
            node = tree.best_child(node)
            if tree.mover[node] != player:
                break
            actions.append(int(tree.action[node]))
            if self.game.ends_turn(actions[-1]) or tree.visits[node] == 0:
                break
        return actions
