"""PUCT search guided by a policy-value network (AlphaZero, seed 001's PlayerZero), and the raw net.

`puct:model=PATH|registry:NAME@ALIAS,sims=N,c=1.5,fpu=0.25,batch=8` (or `ms=T` for a time
budget; `prior_temp=T` takes the network's priors to the power 1/T, as Leela Chess Zero's
policy softmax temperature, so a sharp policy leaves the values room to overrule it;
`solve=K` searches each new leaf K plies deep exactly first, so forced wins and losses need no
network; `gumbel=M` spends the root's simulations by sequential halving over the
network's M most probable moves, agents.puct.gumbel, for small budgets (`gumbel_mix=1`: an
unvisited move's value completed by the paper's v_mix, not its siblings' mean); `exact=T` first
spends up to T ms on a complete alpha-beta search once the end looks near
(agents.search.core.Prover) and plays a result it proves, as Othello programs solve their
endgames (`step`, not `plan`); in a game with its own exact solver (`Game.exact_solver`,
Connect 4's) it asks that solver instead, at every move, and plays the optimal move it finds
within T ms (the quickest win, the slowest loss); T never exceeds `ms`; `nodes=` sizes the
tree, `threads=` caps onnxruntime's threads)
searches with the tree of agents.puct.tree: each round walks the tree `batch` times (virtual
loss keeps the walks apart), evaluates the leaves in one onnxruntime call and backs them up.
The tree is kept between moves: the next search starts from the subtree of the moves actually
played, when the position is the one the tree predicted. Chance nodes and multi-action turns
work as in agents.search.mcts; `plan(state)` returns a whole multi-action turn. No root noise
and no move temperature here: those belong to self-play (`play_games`, many games stepping
together so that one network call serves one leaf of every game).

`policy:model=…` plays the network alone: the argmax of its masked policy, no search.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from agents.analysis import Analysis, from_search
from agents.base import Agent, AgentError, builder, option
from agents.puct.gumbel import GumbelRoots, halving_search
from agents.puct.pv_net import PolicyValueNet
from agents.puct.tree import Forest, expand_backup, gather_leaves, reroot
from agents.search.core import Outcome, Prover, unit_value
from engine.protocol import CHANCE, TERMINAL, Game, State
from engine.specialise import bind

DEFAULT_SIMS = 200
NO_ROOT_CHOICE = np.full((1, 1), -1, dtype=np.int64)  # every walk leaves the root by PUCT
BRANCHING = 32  # legal moves per expanded node when sizing a tree (capped by num_actions)


def _check_game(game: Game, name: str) -> None:
    if game.simultaneous or game.num_players != 2:
        raise AgentError(f"{name}: needs a two-player turn-based game, not {game.spec()}")


class Search:
    """A forest, the game's compiled loops and the network: one `round` = gather, evaluate,
    expand and back up."""

    def __init__(self, game: Game, net: PolicyValueNet, trees: int, capacity: int, batch: int,
                 c_puct: float, fpu: float, discount: float = 1.0, solve: int = 0,
                 prior_temp: float = 1.0):  # fmt: skip
        self.game, self.net = game, net
        state_size = game.new_initial_state(seed=0).array.shape[0]
        self.forest = Forest(trees, capacity, state_size)
        kernels = game.kernels
        self._gather = bind(gather_leaves, kernels.search(), observation=kernels.observation)
        self._expand = bind(expand_backup, kernels.search())
        features = int(np.prod(game.observation_shape))
        self.leaf_states = np.zeros((batch, state_size), dtype=np.int64)
        self.leaf_obs = np.zeros((batch, features), dtype=np.float32)
        self.leaf_mask = np.zeros((batch, game.num_actions), dtype=np.float32)
        self.leaf_tree = np.zeros(batch, dtype=np.int64)
        self.leaf_node = np.zeros(batch, dtype=np.int64)
        self.stats = np.zeros(2, dtype=np.int64)  # walks ended at a terminal, walks dropped
        self.c_puct, self.fpu, self.discount = float(c_puct), float(fpu), float(discount)
        self.solve = int(solve)
        self.prior_power = 1.0 / float(prior_temp)

    def round(self, walks: np.ndarray, root_child: np.ndarray = NO_ROOT_CHOICE) -> int:
        """Walks tree t `walks[t]` times (walk w leaving the root through child `root_child[t, w]`
        where that is >= 0); returns the number of leaves evaluated."""
        f = self.forest
        count = self._gather(
            f.roots, walks, root_child, self.game.num_players, self.c_puct, self.fpu, self.discount,
            self.solve, *f.arrays(),
            self.leaf_states, self.leaf_obs, self.leaf_mask, self.leaf_tree, self.leaf_node,
            self.stats,
        )  # fmt: skip
        if count:
            policy, value = self.net(self.leaf_obs[:count], self.leaf_mask[:count])
            if self.prior_power != 1.0:  # a flatter prior: p ** (1 / T), renormalised
                policy = policy**self.prior_power  # the net gives float64
                policy /= np.maximum(policy.sum(axis=1, keepdims=True), 1e-300)
            self._expand(count, self.leaf_states, self.leaf_tree, self.leaf_node, policy, value,
                         self.game.num_players, self.discount, *f.arrays(),
                         f.net_value)  # fmt: skip
        return int(count)

    def descend(self, t: int, old_root: np.ndarray, actions: Sequence[int], now: np.ndarray):
        """Re-roots tree t at the node `actions` lead to from its root, if the tree holds it and
        it is position `now`; else starts a fresh tree at `now`. True when kept."""
        f, k = self.forest, self.game.kernels
        node, s = 0, old_root.copy()
        for a in actions:
            node = f.child_with_action(t, node, int(a)) if node >= 0 else -1
            if node < 0:
                break
            k.apply_action(s, int(a))
        if node < 0 or not np.array_equal(s, now):
            f.reset(t, now)
            return False
        reroot(t, node, *f.arrays(), f.net_value)
        f.roots[t] = now
        if f.size[t] > f.capacity // 2:  # no room for a full search on top: start afresh
            f.reset(t, now)
            return False
        return True

    def add_noise(self, t: int, alpha: float, eps: float, rng: np.random.Generator) -> None:
        """Dirichlet(alpha) noise mixed into the root's priors with weight eps (self-play)."""
        kids = self.forest.children(t)
        if kids.stop > kids.start and eps > 0:
            noise = rng.dirichlet(np.full(kids.stop - kids.start, alpha))
            prior = self.forest.prior[t, kids]
            self.forest.prior[t, kids] = (1.0 - eps) * prior + eps * noise


def tree_capacity(game: Game, sims: int) -> int:
    """Room for a kept subtree (up to half) plus one full search."""
    return 2 * ((sims + 2) * min(game.num_actions, BRANCHING) + game.num_actions + 1)


@builder("puct")
class PUCTAgent(Agent):
    """AlphaZero search with a policy-value network; batched leaves, tree kept between moves."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        _check_game(game, "puct")
        model = options.pop("model", None) or options.pop("variant", "")
        threads = option(options, "threads", int, 0)
        self.net = PolicyValueNet(game, model, threads)
        for key, value in self.net.play_options().items():
            options.setdefault(key, value)  # the trainer's recommended settings, if any
        self.sims = option(options, "sims", int, DEFAULT_SIMS)
        self.ms = option(options, "ms", float, 0.0)
        self.batch = option(options, "batch", int, 8)
        self.reuse = option(options, "reuse", int, 1)
        nodes = option(options, "nodes", int, 0)  # tree capacity (0: sized from sims)
        self.c_puct = option(options, "c", float, 1.5)
        self.fpu = option(options, "fpu", float, 0.25)
        # the discount the network's value was trained with (its metadata says; 1 = none)
        self.discount = option(options, "discount", float, 1.0)
        # the priors as p ** (1 / T): T > 1 flattens a sharp policy so the values can overrule it
        self.prior_temp = option(options, "prior_temp", float, 1.0)
        # exact search of each new leaf this many plies deep (0: none): forced results
        self.solve = option(options, "solve", int, 0)
        # sequential halving at the root over this many candidates (0: PUCT at the root too)
        self.gumbel = option(options, "gumbel", int, 0)
        # unvisited root children's values completed by v_mix (the paper), not siblings' mean
        self.gumbel_mix = option(options, "gumbel_mix", int, 0)
        # ms of complete alpha-beta before the search; a proven result is played (0: none)
        self.exact = option(options, "exact", float, 0.0)
        if options:
            raise AgentError(f"puct: unknown option(s) {sorted(options)}")
        if self.sims < 1 or self.ms < 0 or self.batch < 1 or self.c_puct < 0:
            raise AgentError("puct: sims and batch must be >= 1, ms and c >= 0")
        if not 0.0 < self.prior_temp <= 100.0:
            raise AgentError("puct: prior_temp (the priors' temperature) lies in (0, 100]")
        if not 0.0 < self.discount <= 1.0:
            raise AgentError("puct: discount must lie in (0, 1]")
        if not 0 <= self.solve <= 8:
            raise AgentError("puct: solve (plies of exact search at new leaves) lies in 0-8")
        if self.gumbel < 0:
            raise AgentError("puct: gumbel (root candidates) is >= 0")
        if self.gumbel_mix not in (0, 1) or (self.gumbel_mix and not self.gumbel):
            raise AgentError("puct: gumbel_mix is 0 or 1, and 1 needs gumbel=M")
        if self.gumbel and self.ms:
            raise AgentError("puct: gumbel (root candidates) plans a fixed sims=, not ms=")
        self.prover = None
        if self.exact < 0:
            raise AgentError("puct: exact (ms of complete alpha-beta) is >= 0")
        if self.exact:
            if self.ms:  # the exact search spends the move's time, never more (a capped ms=)
                self.exact = min(self.exact, self.ms)
            try:
                self.prover = Prover(game, self.exact, seed=0 if seed is None else seed)
            except ValueError as error:
                raise AgentError(f"puct: exact: {error}") from None
        capacity = nodes or (400_000 if self.ms else tree_capacity(game, self.sims))
        self.search = Search(game, self.net, 1, capacity, self.batch, self.c_puct, self.fpu,
                             self.discount, self.solve, self.prior_temp)  # fmt: skip
        self._root: np.ndarray | None = None
        self._root_history: list[int] = []
        self._root_pick = -1  # the root child sequential halving chose (gumbel only)

    def self_play(
        self,
        starts: Sequence[State],
        rngs: Sequence[np.random.Generator],
        settings: SelfPlaySettings,
    ) -> Iterator[tuple[int, State, list[Decision]]]:
        """Batched self-play with this agent's network and search settings (see play_games);
        settings.sims 0 means the agent's own `sims`."""
        sims = settings.sims or self.sims
        settings = replace(settings, sims=sims, parallel=min(settings.parallel, len(starts)))
        capacity = tree_capacity(self.game, max(sims, settings.fast_sims))
        trees = max(settings.parallel, 1)
        search = Search(self.game, self.net, trees, capacity, trees, self.c_puct, self.fpu,
                        self.discount, self.solve, self.prior_temp)  # fmt: skip
        self.last_self_play = search
        yield from play_games(search, starts, rngs, settings)

    def _prepare(self, state: State) -> None:
        history = state.history()
        n = len(self._root_history)
        if self.reuse and self._root is not None and history[:n] == self._root_history:
            self.search.descend(0, self._root, history[n:], state.array)
        else:
            self.search.forest.reset(0, state.array)
        self._root, self._root_history = state.array.copy(), history

    def run(self, state: State, ms: float | None = None) -> Forest:
        """Searches `state` within the simulation or time budget (`ms` instead of the agent's
        own); returns the forest."""
        self._prepare(state)
        ms = self.ms if ms is None else ms
        if self.gumbel:
            self._root_pick = halving_search(self.search, self.sims, self.gumbel, self.batch,
                                             bool(self.gumbel_mix))  # fmt: skip
            return self.search.forest
        f, walks = self.search.forest, np.zeros(1, dtype=np.int64)
        start, stalls = int(f.visits[0, 0]), 0
        deadline = time.perf_counter() + ms / 1000 if ms else None
        while True:
            done = int(f.visits[0, 0]) - start
            if deadline is None and done >= self.sims:
                break
            if deadline is not None and done > 0 and time.perf_counter() >= deadline:
                break
            walks[0] = self.batch if deadline else min(self.batch, self.sims - done)
            before = int(f.visits[0, 0])
            self.search.round(walks)
            stalls = stalls + 1 if int(f.visits[0, 0]) == before else 0
            if stalls > 3 or f.solved(0):  # a full tree, or a decided move: play it
                break
        return f

    def _best(self, node: int = 0) -> int:
        if node == 0 and self.gumbel and self._root_pick >= 0:
            return self._root_pick
        return self.search.forest.best_child(0, node)

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() in (CHANCE, TERMINAL) or state.current_player() < 0:
            return state.random_action(self.rng, player)
        proven, ms_left = self._prove(state)
        if proven is not None:
            return proven.move
        f = self.run(state, ms_left)
        if f.num_children[0, 0] == 0:
            return state.random_action(self.rng)
        return int(f.action[0, self._best()])

    def _prove(self, state: State) -> tuple[Outcome | None, float]:
        """`exact=`'s attempt: the proven outcome, or None and the time budget left to PUCT."""
        if self.prover is None:
            return None, self.ms
        start = time.perf_counter()
        proven = self.prover.attempt(state.array, state.current_player())
        spent = (time.perf_counter() - start) * 1000
        return proven, max(self.ms - spent, 1.0) if self.ms else 0.0

    def analyse(self, state: State) -> Analysis:
        """One search: visit shares and mean values of the root's visited actions, the move
        `step` would play."""
        if state.current_player() < 0:
            return super().analyse(state)  # the protocol's error
        start = time.perf_counter()
        proven, ms_left = self._prove(state)
        if proven is not None:  # what step plays: the result, no tree statistics
            value, plies = unit_value(proven.value, 0)
            ends = {proven.move: plies} if plies else {}
            extra = {"proven": True, "depth": proven.depth, "nodes": proven.nodes}
            return Analysis(move=proven.move, value=value, ends=ends,
                            seconds=time.perf_counter() - start, extra=extra)  # fmt: skip
        f = self.run(state, ms_left)
        counts, means = f.root_stats(0, self.game.num_actions)
        visited = np.flatnonzero(counts > 0)
        move = int(f.action[0, self._best()]) if f.num_children[0, 0] else self.step(state)
        seconds = time.perf_counter() - start
        return from_search(move, visited, counts[visited], means[visited], seconds,
                           simulations=int(counts.sum()))  # fmt: skip

    def policy(self, state: State) -> np.ndarray:
        """Visit shares of the root's actions after a search (the self-play target)."""
        counts, _ = self.run(state).root_stats(0, self.game.num_actions)
        return counts / max(counts.sum(), 1.0)

    def root_values(self) -> np.ndarray:
        """Mean value of each root action for the player to move (NaN unvisited / illegal)."""
        return self.search.forest.root_stats(0, self.game.num_actions)[1]

    def plan(self, state: State) -> list[int]:
        """A whole multi-action turn: most visited children while the same player moves, up to
        and including END_TURN."""
        f = self.run(state)
        player, node, actions = state.current_player(), 0, []
        while f.num_children[0, node] > 0:
            node = self._best(node)
            if f.mover[0, node] != player:
                break
            actions.append(int(f.action[0, node]))
            if self.game.ends_turn(actions[-1]) or f.visits[0, node] == 0:
                break
        return actions


@builder("policy")
class PolicyAgent(Agent):
    """The network alone: the most probable legal action of its masked policy."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        _check_game(game, "policy")
        model = options.pop("model", None) or options.pop("variant", "")
        self.net = PolicyValueNet(game, model, option(options, "threads", int, 0))
        if options:
            raise AgentError(f"policy: unknown option(s) {sorted(options)}")

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() < 0:
            return state.random_action(self.rng, player)
        return self.analyse(state).move

    def analyse(self, state: State) -> Analysis:
        """The network's own view, one call: its masked policy and its value for the mover."""
        if state.current_player() < 0:
            return super().analyse(state)  # the protocol's error
        start = time.perf_counter()
        mask = state.legal_actions_mask().astype(np.float32)
        policy, value = self.net(state.observation_tensor()[None], mask[None])
        move = int(np.argmax(np.where(mask > 0, policy[0], -1.0)))
        return Analysis(
            move=move,
            value=float(np.ravel(value)[0]),
            policy={int(a): float(policy[0][a]) for a in np.flatnonzero(mask > 0)},
            seconds=time.perf_counter() - start,
        )


# ---- self-play: many games, one network call per round -----------------------------------------
@dataclass
class SelfPlaySettings:
    sims: int = DEFAULT_SIMS  # simulations of a full search (its position is recorded)
    fast_sims: int = 0  # playout-cap randomisation: other moves get a cheap unrecorded search
    full_share: float = 0.25  # share of moves searched fully when fast_sims > 0
    parallel: int = 64  # games in flight: one leaf of each per network call
    temperature: float = 1.0  # sampling temperature of the first decisions
    temperature_plies: int = 10  # decisions sampled from the visit counts, then the most visited
    alpha: float = 0.3  # Dirichlet noise on the root priors of full searches
    eps: float = 0.25
    reuse: bool = True
    gumbel: int = 0  # > 0: the root by sequential halving over this many Gumbel-drawn moves
    gumbel_mix: bool = False  # its unvisited moves' values completed by v_mix (the paper)


@dataclass
class Decision:
    """One recorded search: where, who, the visit-share policy, the mean values, the move."""

    step: int
    mover: int
    state: np.ndarray
    policy: np.ndarray
    values: np.ndarray
    action: int


def play_games(
    search: Search,
    starts: Sequence[State],
    rngs: Sequence[np.random.Generator],
    settings: SelfPlaySettings,
) -> Iterator[tuple[int, State, list[Decision]]]:
    """Plays every start to the end with all games in flight stepping together; yields
    (index, final state, recorded decisions) as each game ends. Tree t of `search` serves the
    t-th game in flight; chance outcomes are drawn from the game's own generator."""
    f, game, st = search.forest, search.game, settings
    slots = min(f.parent.shape[0], len(starts))
    queue = deque(range(len(starts)))
    index = [-1] * slots
    states: list[State | None] = [None] * slots
    records: list[list[Decision]] = [[] for _ in range(slots)]
    target = np.zeros(slots, dtype=np.int64)
    base = np.zeros(slots, dtype=np.int64)
    full = np.zeros(slots, dtype=bool)
    noise_due = np.zeros(slots, dtype=bool)
    active = np.zeros(slots, dtype=bool)
    decisions = np.zeros(slots, dtype=np.int64)
    roots = (GumbelRoots(f, slots, st.gumbel, search.discount, st.gumbel_mix)
             if st.gumbel > 0 else None)  # fmt: skip

    def settle(t: int) -> list[int]:
        """Plays chance outcomes until a player (or the end) is to move."""
        state, drawn = states[t], []
        while state.current_player() == CHANCE:
            drawn.append(state.random_action(rngs[index[t]]))
            state.apply_action(drawn[-1])
        return drawn

    def begin_move(t: int) -> None:
        rng = rngs[index[t]]
        full[t] = st.fast_sims <= 0 or rng.random() < st.full_share
        target[t] = st.sims if full[t] else st.fast_sims
        base[t] = f.visits[t, 0]
        if roots is not None:  # Gumbel noise explores instead of Dirichlet noise
            roots.begin(t, int(target[t]), rng)
            return
        noise_due[t] = full[t] and st.eps > 0
        if noise_due[t] and f.num_children[t, 0] > 0:
            search.add_noise(t, st.alpha, st.eps, rng)
            noise_due[t] = False

    def start_game(t: int) -> bool:
        if not queue:
            active[t] = False
            return False
        index[t] = queue.popleft()
        states[t], records[t], decisions[t] = starts[index[t]].clone(), [], 0
        settle(t)
        f.reset(t, states[t].array)
        active[t] = True
        if states[t].is_terminal():
            return True  # finished before any decision: reported by the caller's loop
        begin_move(t)
        return False

    def finish_move(t: int) -> bool:
        """Plays the searched move; True when the game is over."""
        state, rng = states[t], rngs[index[t]]
        counts, means = f.root_stats(t, game.num_actions)
        share = counts / max(counts.sum(), 1.0)
        if roots is not None:  # the halving's choice, trained towards the improved policy
            child, share = roots.finish(t, game.num_actions, rng)
            action = int(f.action[t, child])
        elif decisions[t] < st.temperature_plies and not f.solved(t):
            weights = counts ** (1.0 / st.temperature)
            action = int(rng.choice(len(weights), p=weights / weights.sum()))
        else:
            action = int(f.action[t, f.best_child(t)])
        if full[t]:
            records[t].append(Decision(len(state.history()), state.current_player(),
                                       state.array.copy(), share.astype(np.float32), means,
                                       action))  # fmt: skip
        old_root = f.roots[t].copy()
        state.apply_action(action)
        decisions[t] += 1
        path = [action, *settle(t)]
        if state.is_terminal():
            return True
        if st.reuse:
            search.descend(t, old_root, path, state.array)
        else:
            f.reset(t, state.array)
        begin_move(t)
        return False

    ended = [t for t in range(slots) if start_game(t)]
    walks = np.zeros(slots, dtype=np.int64)
    while active.any() or ended:
        for t in ended:
            yield index[t], states[t], records[t]
            if start_game(t):
                ended.append(t)
        ended = []
        walks[:] = active
        if not active.any():
            break
        if roots is None:
            search.round(walks)
        else:
            search.round(walks, roots.next_walks(np.flatnonzero(active)))
            roots.plan_expanded(np.flatnonzero(active), lambda t: rngs[index[t]])
        for t in np.flatnonzero(noise_due & (f.num_children[:slots, 0] > 0)):
            search.add_noise(t, st.alpha, st.eps, rngs[index[t]])
            noise_due[t] = False
        progress = f.visits[:slots, 0] - base
        for t in np.flatnonzero(active & (progress >= target)):
            if finish_move(int(t)):
                ended.append(int(t))
