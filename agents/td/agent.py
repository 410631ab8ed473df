"""`td:model=PATH[,select=greedy|egreedy|softmax|random,epsilon=E,temperature=T][,depth=N|ms=T]`.

The exported ONNX file is the model (models.td_export writes it): its weights are read back
from the graph's initializers and played by the same numba loops that trained them
(agents.td.net, with the study's network or an n-tuple network),
one ply deep: every legal move's successor is evaluated and the mover takes the best for
itself (greedy, the default) or draws by the study's ε-greedy or softmax-exponential rule.
With `depth=N` or `ms=T` the network is instead the leaf evaluation of the shared alpha-beta
core (agents.td.search: evaluated in numba inside the search, weights passed at run time).
The same file is a value model for search: `alphabeta:eval=onnx:PATH` (its input is the
`seat-observation` encoding, its output the side to move's win estimate).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent, AgentError, builder, model_file, option
from agents.td.mlp import MLP
from agents.td.net import SELECTIONS, Workspace, bound, supports, td_move
from agents.td.ntuple import NTuple
from engine.bits import new_rng
from engine.protocol import Game, State

FAMILY = "td"
Network = MLP | NTuple


def network_from_weights(weights: dict[str, np.ndarray], meta: dict[str, str], cells: int):
    """The network an exported graph holds (models.td_export names its initializers)."""
    if meta.get("gridbots.network", "mlp") == "ntuple":
        powers = weights["powers"]
        lookup_cells = np.where(powers > 0, weights["lookup_cells"], -1)
        offset = weights["offset"].astype(np.int64)
        phases = int(weights["phases"][0]) if "phases" in weights else 1
        activation = meta["gridbots.activation"]
        return NTuple(weights["lut"], lookup_cells, offset, cells, activation, phases)
    return MLP(
        weights["w_in"], weights["w_out"], meta["gridbots.activation"], int(meta["gridbots.planes"])
    )


def read_network(path: str | Path, game: Game) -> tuple[Network, dict[str, str]]:
    """(network, metadata) of an exported TD model; AgentError with one clear line otherwise."""
    import onnx
    from onnx import numpy_helper

    path = model_file(path, "td")
    try:
        proto = onnx.load(str(path))
    except Exception as problem:  # DecodeError, OSError: not an ONNX file
        raise AgentError(f"td: {path} is not a readable ONNX model ({problem})") from None
    meta = {entry.key: entry.value for entry in proto.metadata_props}
    if meta.get("gridbots.family") != FAMILY:
        found = meta.get("gridbots.family", "an unlabelled")
        raise AgentError(f"td: {path} holds {found} model, not a td one")
    trained = meta.get("gridbots.game")
    if trained and trained != game.spec():
        raise AgentError(f"td: {path} was trained for {trained}, not {game.spec()}")
    weights = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    cells = int(np.prod(game.observation_shape[1:]))
    try:
        network = network_from_weights(weights, meta, cells)
    except (KeyError, ValueError) as problem:
        raise AgentError(f"td: {path} lacks a readable network ({problem})") from None
    if network.size != network.planes * cells:
        raise AgentError(f"td: {path} expects {network.size} inputs, {game.name} gives others")
    return network, meta


class TDPlayer:
    """Plays one network through the bound kernels (no learning): tests and matches use it
    with an in-memory network, the `td:` agent with one read from a file."""

    def __init__(
        self,
        game: Game,
        network: Network,
        select: str = "greedy",
        epsilon: float = 0.0,
        temperature: float = 1.0,
        seed: int = 0,
    ):
        why = supports(game)
        if why:
            raise AgentError(f"td: {why}")
        if select not in SELECTIONS:
            raise AgentError(f"td: select={select!r}; known: {', '.join(SELECTIONS)}")
        if not 0.0 <= epsilon <= 1.0 or temperature <= 0.0:
            raise AgentError("td: epsilon lies in [0, 1] and temperature is positive")
        self.network = network
        self.rule = SELECTIONS[select]
        self.epsilon = float(epsilon)
        self.temperature = float(temperature)
        self._turn = bound(game, td_move, network)
        self._net = network.arrays()
        self._work = Workspace(game).arrays
        self._rng = new_rng(seed)

    def action(self, s: np.ndarray) -> int:
        return int(
            self._turn(
                s,
                self._net,
                self.rule,
                self.epsilon,
                self.temperature,
                self._rng,
                *self._work,
            )
        )


@builder("td")
class TDAgent(Agent):
    """A trained TD value network: one ply deep, or the leaf evaluation of the shared
    alpha-beta core with `depth=N` (fixed-depth minimax) or `ms=T` (iterative deepening)."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        path = options.pop("model", None) or options.pop("variant", None)
        select = options.pop("select", "greedy")
        epsilon = option(options, "epsilon", float, 0.3 if select == "egreedy" else 0.0)
        temperature = option(options, "temperature", float, 1.0)
        self.depth = option(options, "depth", int, 0)
        self.ms = option(options, "ms", float, 0.0)
        if options:
            raise AgentError(
                f"td: unknown option(s) {sorted(options)}; known: model, select, epsilon, "
                "temperature, depth, ms"
            )
        if not path:
            raise AgentError("td: name the model file: td:model=PATH")
        if self.depth < 0 or self.ms < 0 or ((self.depth or self.ms) and select != "greedy"):
            raise AgentError("td: depth, ms >= 0; a search (depth or ms) plays greedily")
        network, self.meta = read_network(path, game)
        self.player = TDPlayer(
            game, network, select, epsilon, temperature, seed=0 if seed is None else seed
        )
        self.core = None
        if self.depth or self.ms:
            from agents.search.core import AlphaBeta
            from agents.td.search import leaf, pack

            self.core = AlphaBeta(
                game,
                "network",
                network=leaf(game, network),
                weights=pack(game, network),
                max_depth=self.depth or None,
            )

    def step(self, state: State, player: int | None = None) -> int:
        if state.current_player() < 0:
            return state.random_action(self.rng, player)
        if self.core is None:
            return self.player.action(state.array)
        from agents.search.core import deepen

        self.core.new_move()
        return deepen(self.core, state.array, state.current_player(), self.depth, self.ms).move
