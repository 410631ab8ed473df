"""Simultaneous alpha-beta for n-player simultaneous games: `simab:depth=N` or `simab:ms=T`,
with `eval=heuristic` (default), `eval=naive` or `eval=onnx:PATH`.

After the original engine's controller: the seated player's node is MAX over its own actions;
its child MIN node enumerates the joint actions of every other player (team-mates included,
assumed to play their worst for us, so our choice never depends on them) and simulates the whole
lap there, own action plus joint, since nothing can be applied before everybody has chosen.
One lap is one MAX/MIN pair; `depth` counts laps. Both are node kinds of the shared core
(agents.search.core: LAP_MAX, LAP_MIN), which also scores results (return x WIN_SCALE, sooner wins
first, later losses first) and the seated player being out (lost for sure when no team-mate
can act). Leaves use the game's `evaluate(s, player)` heuristic (zero for a game without one);
`eval=naive` scores every unfinished leaf zero, so only wins and losses within the horizon count:
study 000's Lazerbike opponent ("a naive function which rewards in the case of a victory and
punish in the case of a defeat", its §4.4), the fair yardstick for its Table 15.
`eval=onnx:PATH`: a value-mlp over the game's planes (value-planes encoding) run inside the loop
(agents.value.leaf, the core's NETWORK leaf: a simultaneous search cannot pause for batches), so
a learned evaluation replaces the heuristic; a file the loop cannot run is refused.
`ms=T` deepens one lap at a time within the budget, as alphabeta does.
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent, AgentError, builder, option
from agents.search.alphabeta import table_size
from agents.search.core import (  # noqa: F401 (WIN_SCALE re-exported)
    WIN_SCALE,
    AlphaBeta,
    Outcome,
    deepen,
    zero_evaluate,
)
from engine.protocol import SIMULTANEOUS, Game, State

MAX_DEPTH = 64
#: the leaf evaluations `eval=` names: the game's heuristic, zero (results only), a value network
EVALUATIONS = ("heuristic", "naive", "onnx:PATH")


def leaf_kernel(evaluation: str):
    """The evaluation kernel `eval=` names (None: the game's own heuristic)."""
    if evaluation not in EVALUATIONS[:2]:
        raise AgentError(f"simab: eval={evaluation!r}; expected {', '.join(EVALUATIONS)}")
    return zero_evaluate if evaluation == "naive" else None


def network_leaf(game: Game, path: str) -> tuple:
    """(compiled leaf, packed weights) of a value-mlp over `game`'s planes for the NETWORK leaf;
    AgentError where the file is not such a network of this game or the loop cannot run it."""
    from agents.base import model_file
    from agents.onnx.runtime import open_session
    from agents.value.leaf import leaf

    found = model_file(path, "simab")
    _, meta = open_session(found)
    if meta.get("gridbots.kind") != "value" or meta.get("gridbots.encoding") != "value-planes":
        raise AgentError(f"simab: {path} is not a value network over observation planes")
    trained = meta.get("gridbots.game", "")
    if trained and trained != game.spec():
        raise AgentError(f"simab: {path} was trained for {trained}, not {game.spec()}")
    in_loop = leaf(game, found)
    if in_loop is None:
        raise AgentError(f"simab: {path} is not a dense chain the search loop can run")
    return in_loop


def search(game: Game, s: np.ndarray, player: int, depth: int, prune: bool = True,
           first: int = -1, budget: int = 1 << 62,
           evaluation: str = "heuristic") -> tuple[float, int, Outcome]:  # fmt: skip
    """(value, best action, outcome) of one fixed-depth search from a fresh table; with
    `prune` off the windows never close, so every joint move is visited (plain max-min)."""
    core = AlphaBeta(game, "heuristic", table_bits=4, max_depth=depth, pruning=prune,
                     heuristic=leaf_kernel(evaluation))  # fmt: skip
    out = core.search(s, player, depth, budget, root_hint=first)
    return out.value, (game.neutral_action if out.move < 0 else out.move), out


@builder("simab")
class SimABAgent(Agent):
    """Simultaneous alpha-beta with iterative deepening under a lap or time budget."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        evaluation = options.pop("eval", "heuristic")
        network, weights, leaf = None, None, "heuristic"
        if evaluation.startswith("onnx:"):
            network, weights = network_leaf(game, evaluation[len("onnx:") :])
            heuristic, leaf = None, "network"
        else:
            heuristic = leaf_kernel(evaluation)
        if options:
            raise AgentError(f"simab: unknown option(s) {sorted(options)}; known: depth, ms, eval")
        if self.depth < 0 or self.ms < 0 or self.depth > MAX_DEPTH:
            raise AgentError(f"simab: depth in 0..{MAX_DEPTH}, ms >= 0")
        if not game.simultaneous:
            raise AgentError(f"simab: {game.name} is turn-based; use alphabeta")
        if not self.depth and not self.ms:
            self.depth = 3
        bits = min(18, table_size(game.num_actions**game.num_players, 0 if self.ms else self.depth))
        self.core = AlphaBeta(game, leaf, table_bits=bits, heuristic=heuristic, network=network,
                              weights=weights, max_depth=self.depth or MAX_DEPTH)  # fmt: skip
        self.last: tuple[float, int, int] | None = None  # value, action, depth reached

    def step(self, state: State, player: int | None = None) -> int:
        if player is None:
            if self.game.num_players != 1:
                raise AgentError("simab: a simultaneous game needs the seated player")
            player = 0
        if state.current_player() != SIMULTANEOUS or not state.legal_actions(player):
            return self.game.neutral_action
        self.core.new_move()
        out = deepen(self.core, state.array, player, self.depth, self.ms)
        action = self.game.neutral_action if out.move < 0 else out.move
        self.last = (out.value, action, out.depth)
        return action
