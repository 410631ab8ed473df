"""`neat:genome=PATH`: a NEAT network playing a tile-move game (territory) through onnxruntime.

PATH is an exported `.onnx` (its metadata says the decoding) or a genome `.json` (exported to an
ONNX graph in memory: one implementation of the network, agents.neat.network.to_onnx). Each move
encodes the board as the study does, runs the network once and decodes the outputs with move
guiding (agents.neat.codec), so an invalid decoded move becomes the nearest legal one. It
decodes what the fitness games decode: float64 activations of the graph's `logits` (scored
and afterstate rank the logits themselves), since float32 activations saturate earlier.
Option `decoding=guided|masked|scored|afterstate` overrides what the file says (an ONNX file's
metadata; a genome by its input and output counts: tiles in and 4 out are guided, 2 x tiles + 21
out masked, 12 in and 1 out scored, tiles in and 1 out afterstate).
`onnx:PATH` and `registry:territory-neat@production` reach this agent through the file's
`gridbots.kind` = "neat".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent, AgentError, builder
from agents.neat.codec import (
    DECODINGS,
    MOVE_FEATURES,
    afterstate_inputs,
    decode,
    encode,
    move_features,
    num_outputs,
    readable_inputs,
)
from agents.neat.network import (
    OUTPUT_ACTIVATIONS,
    GenomeError,
    activations_from_logits,
    network,
    read_genome,
    to_onnx,
)
from engine.protocol import Game, State
from engine.specialise import bind


def _session(path: Path, decoding: str | None):
    """(onnxruntime session, decoding, the output activations or None) for an .onnx or a genome
    .json; a graph exported before its metadata named them gives None."""
    if path.suffix == ".json":
        from agents.onnx.runtime import session

        try:
            net = network(read_genome(path))
        except GenomeError as error:
            raise AgentError(f"neat: {error}") from None
        kinds = [net.activation[o] for o in range(net.num_outputs)]
        return session(to_onnx(net)), decoding, kinds
    from agents.onnx.runtime import open_session

    runner, meta = open_session(path)
    kind = meta.get("gridbots.kind")
    if kind != "neat":
        raise AgentError(f"neat: {path} holds a {kind!r} model, not a NEAT network")
    kinds = meta[OUTPUT_ACTIVATIONS].split(",") if OUTPUT_ACTIVATIONS in meta else None
    return runner, decoding or meta.get("gridbots.decoding"), kinds


@builder("neat")
class NeatAgent(Agent):
    """Encodes the board, runs the network, decodes with move guiding."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        path = options.pop("genome", None) or options.pop("variant", None)
        decoding = options.pop("decoding", None)
        if options:
            raise AgentError(f"neat: unknown option(s) {sorted(options)}; known: genome, decoding")
        if not path:
            raise AgentError("neat: name the network: neat:genome=PATH.json|PATH.onnx")
        if game.tile_moves is None:
            raise AgentError(f"neat: {game.name} has no tile-move action layout to decode into")
        if decoding is not None and decoding not in DECODINGS:
            raise AgentError(f"neat: decoding must be one of {list(DECODINGS)}")
        path = Path(path)
        if not path.is_file():
            raise AgentError(f"neat: no such file {path}")
        self.session, self.decoding, self.output_kinds = _session(path, decoding)
        layout = game.tile_moves()
        self.neighbours = layout["neighbours"]
        self.ids, self.max_count = layout["ids_per_tile"], layout["max_count"]
        self.turn_tiles = layout["turn_tiles"]
        n = len(self.neighbours)
        shape = self.session.get_inputs()[0].shape
        self.input_name = self.session.get_inputs()[0].name
        outputs = self.session.get_outputs()[0].shape[-1]
        if self.decoding is None:  # a bare genome: its shape says how it decodes
            known = {
                (k, num_outputs(d, n, self.max_count)): d
                for d in DECODINGS
                for k in readable_inputs(d, n)
            }
            self.decoding = known.get((shape[-1], outputs), "guided")
        reads = readable_inputs(self.decoding, n)
        writes = num_outputs(self.decoding, n, self.max_count)
        if shape[-1] not in reads or outputs != writes:
            raise AgentError(
                f"neat: the network reads {shape[-1]} values and writes {outputs}; "
                f"{game.spec()} with {self.decoding} decoding needs "
                f"{' or '.join(map(str, reads))} and {writes}"
            )
        self.num_inputs = int(shape[-1])
        self.inputs = np.zeros(n, dtype=np.float64)
        self.guided_moves = 0
        if self.decoding == "afterstate":
            kernels = game.kernels
            self._afterstates = bind(
                afterstate_inputs, kernels.search(), observation=kernels.observation
            )
            start = game.new_initial_state(seed=0)  # buffers: a state and its observation
            self._child = np.empty_like(start.array)
            self._seen = np.zeros(start.observation_tensor(0).size, dtype=np.float64)

    def step(self, state: State, player: int | None = None) -> int:
        player = state.current_player() if player is None else player
        legal = np.array(state.legal_actions(player), dtype=np.int64)
        obs = state.observation_tensor(player).astype(np.float64).ravel()
        if self.decoding == "scored":  # every legal move in one batch
            feats = np.zeros((len(legal), MOVE_FEATURES), dtype=np.float64)
            move_features(
                obs,
                len(self.neighbours),
                legal,
                len(legal),
                self.neighbours,
                self.ids,
                self.max_count,
                feats,
            )
            rows = feats[:, : self.num_inputs].astype(np.float32)  # an older export reads fewer
            (scores,) = self.session.run(["logits"], {self.input_name: rows})
            return int(legal[int(np.argmax(scores[:, 0]))])
        if self.decoding == "afterstate":  # every position a legal move leads to, one batch
            rows = np.zeros((len(legal), len(self.neighbours)), dtype=np.float64)
            self._afterstates(state.array, player, legal, len(legal), len(self.neighbours),
                              self.turn_tiles, self._child, self._seen, rows)  # fmt: skip
            (values,) = self.session.run(["logits"], {self.input_name: rows.astype(np.float32)})
            return int(legal[int(np.argmax(values[:, 0]))])
        encode(obs, len(self.neighbours), player, self.turn_tiles, self.inputs)
        feed = {self.input_name: self.inputs[None, :].astype(np.float32)}
        if self.output_kinds is None:  # an older export: its float32 activations
            out = self.session.run(["outputs"], feed)[0].astype(np.float64)
        else:  # float64 activations, as the fitness games decode them
            out = activations_from_logits(self.session.run(["logits"], feed)[0], self.output_kinds)
        action, guided = decode(
            DECODINGS[self.decoding],
            out[0],
            player,
            legal,
            len(legal),
            self.neighbours,
            self.ids,
            self.max_count,
            self.turn_tiles,
        )
        self.guided_moves += int(guided)
        return int(action)
