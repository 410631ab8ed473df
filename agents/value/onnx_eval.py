"""`alphabeta:eval=onnx:PATH`: a value network as the evaluation of alpha-beta, on onnxruntime.

numba code cannot call onnxruntime, so the shared core (agents.search.core) runs in its BATCH mode:
a node one ply above the horizon hands all its children to `leaf_evaluator` in one session
call (no cut-off among leaves could save a batched evaluation). The network outputs p, the win
probability of the side to move; the evaluation is 2p - 1 from that side's point of view,
negated for the searching player when another team is to move. Finished games score as in
every alpha-beta (return x WIN_SCALE minus the distance), so results outrank any evaluation.

The network's inputs are the features the training encoding gives a position (the model's
`gridbots.encoding`), built by agents.value.features as features.encode builds a dataset's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents.base import AgentError
from agents.onnx.runtime import open_session
from engine.protocol import Game

Encoder = Callable[[np.ndarray, np.ndarray], np.ndarray]


def value_encoder(game: Game, encoding: str) -> Encoder:
    """The per-state feature function of a value model's training encoding."""
    from agents.value.features import ValueEncoder

    try:
        return ValueEncoder(game, encoding).batch
    except ValueError as problem:
        raise AgentError(f"onnx: {problem}") from None


class OnnxValue:
    """A value network: a batch of states (and their movers) → values in [-1, 1] for the mover."""

    def __init__(self, game: Game, path: str | Path):
        self.session, self.meta = open_session(path)
        kind = self.meta.get("gridbots.kind")
        if kind != "value":
            raise AgentError(f"onnx: {path} holds a {kind or 'unlabelled'} model, not a value one")
        trained = self.meta.get("gridbots.game")
        if trained and trained != game.spec():
            raise AgentError(f"onnx: {path} was trained for {trained}, not {game.spec()}")
        self.encode = value_encoder(game, self.meta.get("gridbots.encoding", "board-onehot"))
        self.input = self.session.get_inputs()[0].name
        self.output = self.session.get_outputs()[0].name
        self.calls = 0
        self.evaluations = 0

    def __call__(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        features = np.asarray(self.encode(states, players), dtype=np.float32)
        try:
            p = self.session.run([self.output], {self.input: features})[0]
        except Exception as problem:
            raise AgentError(f"onnx: the value model does not run: {problem}") from None
        self.calls += 1
        self.evaluations += len(states)
        p = np.asarray(p, dtype=np.float64).reshape(len(states), -1)[:, 0]
        return np.clip(2.0 * p - 1.0, -1.0, 1.0)


def leaf_evaluator(game: Game, path: str | Path):
    """A value network as the core's batched leaf evaluation (agents.search.core BATCH mode):
    values for the searching player q, the network's view negated where another team moves."""
    model = OnnxValue(game, path)
    teams = np.asarray(game.teams, dtype=np.int64)

    def evaluate(states: np.ndarray, movers: np.ndarray, q: int) -> np.ndarray:
        values = model(states, movers)
        return np.where(teams[movers] == teams[q], values, -values)

    evaluate.model = model  # type: ignore[attr-defined]
    return evaluate
