"""`alphabeta:depth=N` / `alphabeta:ms=T` with `eval=heuristic|playout|onnx:PATH`: the agent
over the shared core (agents.search.core).

`results=flat` scores a finished game as its bare return (a win is a win at any distance, as
study 002's minimax scores it: with depth=N that is exactly the study's opponent, checked in
tests/test_study_minimax.py); by default a faster win ranks above a slower one.
`depth=N` alone is plain fixed-depth minimax: the value and move of a full minimax tree to N
plies with the same evaluation (the first best move in the game's legal order), so figures
"against minimax depth N" mean what they say; shallower searches run first only to order
moves (the root keeps its legal order, so they cannot change the choice). `ms=T` deepens one ply
at a time within the budget (to `depth` plies at most when both are given), the previous
depth's best move searched first, each depth with a node budget estimated from the speed so
far, since numba code cannot read the clock. Turn-based games of any number of players (team-
mates maximise together); simultaneous games use simab.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from agents.analysis import Analysis
from agents.base import Agent, AgentError, builder, option
from agents.search.core import (  # noqa: F401  (re-exported: the names callers know)
    RESULT_BOUND,
    WIN_SCALE,
    AlphaBeta,
    Outcome,
    deepen,
    hash_state,
    result_value,
    unit_value,
    zero_evaluate,
)
from engine.protocol import Game, State

ABORTED = 2  # index of the aborted flag in `stats` of older callers: use Outcome.aborted


def table_size(num_actions: int, depth: int) -> int:
    """log2 of the transposition table a search needs: a fixed depth-N search visits at most
    about num_actions**N nodes, so a shallow one gets a small table; a timed or deep search
    the full 2**20. A match makes a fresh agent per game, and clearing 27 MB of table for a
    2-ply search cost more than the search (alphabeta:depth=2 against a random bot: 10 s per
    1,000 Connect 4 games, 6.7 of them in the kernel's page faults)."""
    if depth <= 0:
        return 20
    return int(min(20, max(10, math.ceil(depth * math.log2(max(num_actions, 2))) + 2)))


@dataclass
class SearchResult:
    """The outcome of one `search`: move, value for the player to move, depth, nodes."""

    move: int
    value: float
    depth: int
    nodes: int
    exact: bool


@builder("alphabeta")
class AlphaBetaAgent(Agent):
    """Fixed-depth or time-bounded alpha-beta for turn-based games."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        self.playouts = option(options, "playouts", int, 16)
        table_bits = option(options, "tt", int, 0)  # 0: sized to the search
        evaluation = options.pop("eval", "heuristic")
        results = options.pop("results", "distance")  # flat: a win is a win at any distance
        if options:
            raise AgentError(
                f"alphabeta: unknown option(s) {sorted(options)}; "
                "known: depth, ms, eval, playouts, tt, results"
            )
        if results not in ("distance", "flat"):
            raise AgentError(f"alphabeta: results={results!r}; expected distance or flat")
        bad_table = table_bits != 0 and not 4 <= table_bits <= 24
        if self.depth < 0 or self.ms < 0 or self.playouts < 1 or bad_table:
            raise AgentError("alphabeta: depth, ms >= 0, playouts >= 1, tt (log2 size) in 4..24")
        if not self.depth and not self.ms:
            self.depth = 4
        table_bits = table_bits or table_size(game.num_actions, 0 if self.ms else self.depth)
        if game.simultaneous:
            raise AgentError(f"alphabeta: {game.name} is simultaneous; use simab")
        if game.has_chance:
            raise AgentError(f"alphabeta: {game.name} has chance nodes, not supported yet")
        self.model = None  # agents.value.onnx_eval.OnnxValue for eval=onnx:PATH
        if evaluation == "heuristic":
            if game.evaluate is None:
                raise AgentError(f"alphabeta: {game.name} has no heuristic; use eval=playout")
            leaf = "heuristic"
        elif evaluation == "playout":
            leaf = "playout"
        elif evaluation.startswith("onnx:"):  # batched network leaves, on onnxruntime
            from agents.value.onnx_eval import leaf_evaluator

            leaf = leaf_evaluator(game, evaluation[len("onnx:") :])
            self.model = leaf.model
        else:
            raise AgentError(
                f"alphabeta: eval={evaluation!r}; expected heuristic, playout or onnx:PATH"
            )
        self.max_depth = min(self.depth or game.max_game_length, game.max_game_length)
        self.core = AlphaBeta(
            game, leaf, playouts=self.playouts, table_bits=table_bits,
            max_depth=self.max_depth, seed=0 if seed is None else seed,
            result_scale=1.0 if results == "flat" else None,
        )  # fmt: skip
        self.last: SearchResult | None = None
        if self.model is None:  # compile (or load from the cache) now, not on the first move
            state = game.new_initial_state(seed=0)
            self.core.search(state.array, state.current_player(), 1)
            self.core.forget()

    def search(self, state: State) -> SearchResult:
        """The search the spec names, from the player to move's point of view (values on the
        core's scale: results are +-WIN_SCALE minus their distance)."""
        player = state.current_player()
        if player < 0:
            raise AgentError("alphabeta: nothing to search at this position")
        self.core.new_move()
        out = deepen(self.core, state.array, player, self.depth, self.ms)
        self.last = SearchResult(out.move, out.value, out.depth, out.nodes, out.exact)
        return self.last

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() < 0:
            return state.random_action(self.rng, player)
        return self.search(state).move

    def analyse(self, state: State) -> Analysis:
        """The search, then every root move searched to the depth the search reached: each
        move's minimax value (at depth 1, one ply more), so the scores rank the moves."""
        start = time.perf_counter()
        result = self.search(state)
        player, below = state.current_player(), max(result.depth - 1, 1)
        values, ends, nodes = {}, {}, result.nodes
        for action in state.legal_actions():
            child = state.clone()
            child.apply_action(action)
            if child.is_terminal():
                score = child.returns()[player] * WIN_SCALE  # a result right after the move
            else:
                out = self.core.search(child.array, player, min(below, self.max_depth))
                score, nodes = out.value, nodes + out.nodes
            values[action], end = unit_value(score, 1)
            if end:
                ends[action] = end
        value, end = unit_value(result.value, 0)
        return Analysis(
            move=result.move, value=value, values=values, ends=ends,
            seconds=time.perf_counter() - start,
            extra={"depth": result.depth, "nodes": nodes, "exact": result.exact},
        )  # fmt: skip
