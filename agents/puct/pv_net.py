"""A policy-value network (models/playerzero.py's ONNX export) as onnxruntime sees it.

Inputs `planes` [batch, *observation_shape] and `mask` [batch, num_actions], outputs `policy`
(0 on illegal actions) and `value` (the side to move's expected result in [-1, 1]). Opening a
model checks it against the game before anything plays: its kind, its game, and the shapes of
its inputs, so a model for another board or action count is one clear AgentError. Sessions are
cached per file (path, modification time, threads): tournaments build an agent per game.

`registry:NAME@ALIAS` (or NAME/VERSION) names a registered model instead of a path; the registry
lives in models/, above this layer, so it is reached through the `registry` agent plugin.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import AgentError, model_file
from agents.onnx.runtime import open_session
from engine.protocol import Game

KIND = "policy-value"
INPUTS = ("planes", "mask")
OUTPUTS = ("policy", "value")


def resolve_model(text: str) -> Path:
    """A model file from `PATH` or `registry:NAME@ALIAS` / `registry:NAME/VERSION`."""
    if not text:
        raise AgentError("name the network: model=PATH or model=registry:NAME@ALIAS")
    if not text.startswith("registry:"):
        return Path(text)
    from importlib.metadata import entry_points

    for entry in entry_points(group="gridbots.agents", name="registry"):
        path, kind, _ = importlib.import_module(entry.value).fetch(text.split(":", 1)[1])
        if kind != "onnx":
            raise AgentError(f"{text} holds a {kind} model, not a policy-value network")
        return Path(path)
    raise AgentError("the registry plugin is not installed (pip install -e .)")


def _dims(value_info: Any) -> list[Any]:
    return list(value_info.shape)


class PolicyValueNet:
    """Batched (policy, value) of positions given as observation planes and legal masks."""

    def __init__(self, game: Game, model: str | Path, threads: int = 0):
        self.path = path = model_file(resolve_model(str(model)))
        self.session, self.meta = open_session(path, int(threads))  # read once per thread
        kind = self.meta.get("gridbots.kind")
        if kind != KIND:
            raise AgentError(f"{path} holds a {kind or 'unlabelled'} model, not a {KIND} network")
        trained = self.meta.get("gridbots.game", "")
        if trained and trained.split(":", 1)[0] != game.name:
            raise AgentError(f"{path} was trained for {trained}, not {game.spec()}")
        inputs = {i.name: _dims(i) for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if set(inputs) != set(INPUTS) or outputs != list(OUTPUTS):
            raise AgentError(
                f"{path}: a policy-value network has inputs {list(INPUTS)} and outputs "
                f"{list(OUTPUTS)}, this one {sorted(inputs)} and {outputs}"
            )
        want_planes, want_mask = list(game.observation_shape), [game.num_actions]
        if inputs["planes"][1:] != want_planes:
            raise AgentError(
                f"{path} reads planes {inputs['planes'][1:]}, but {game.spec()} observes "
                f"{want_planes}"
            )
        if inputs["mask"][1:] != want_mask:
            raise AgentError(
                f"{path} plays {inputs['mask'][1:][0]} actions, but {game.spec()} has "
                f"{game.num_actions}"
            )
        self.game = game
        self.observation_shape = tuple(game.observation_shape)
        self.calls = 0
        self.evaluations = 0
        self.batch_histogram: dict[int, int] = {}

    def __call__(self, planes: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(policy [n, num_actions] float64, value [n] float64) of n positions."""
        n = len(planes)
        feed = {
            "planes": np.ascontiguousarray(planes, dtype=np.float32).reshape(
                n, *self.observation_shape
            ),
            "mask": np.ascontiguousarray(mask, dtype=np.float32),
        }
        try:
            policy, value = self.session.run(list(OUTPUTS), feed)
        except Exception as problem:  # onnxruntime's own exception types
            raise AgentError(f"{self.path}: the network does not run: {problem}") from None
        self.calls += 1
        self.evaluations += n
        self.batch_histogram[n] = self.batch_histogram.get(n, 0) + 1
        return policy.astype(np.float64), value.reshape(n).astype(np.float64)

    def play_options(self) -> dict[str, str]:
        """Search settings the trainer recommends (`gridbots.play.*` metadata), as spec options."""
        prefix = "gridbots.play."
        return {k[len(prefix) :]: v for k, v in self.meta.items() if k.startswith(prefix)}


def write_uniform_network(game: Game, path: str | Path) -> Path:
    """A policy-value ONNX file that knows nothing: the uniform policy over the legal actions
    and value 0 everywhere. PUCT driven by it is plain MCTS without rollouts, a baseline, and a
    way to try the search on any game before a network has been trained for it."""
    from onnx import TensorProto, helper

    tensor = helper.make_tensor_value_info
    axes = list(range(1, 1 + len(game.observation_shape)))
    nodes = [
        helper.make_node("ReduceSum", ["mask"], ["total"], keepdims=1),
        helper.make_node("Div", ["mask", "total"], ["policy"]),
        helper.make_node("ReduceSum", ["planes", "axes"], ["plane_sum"], keepdims=1),
        helper.make_node("Mul", ["plane_sum", "zero"], ["zeros"]),
        helper.make_node("Reshape", ["zeros", "shape"], ["value"]),
    ]
    initial = [
        helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes),
        helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
        helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "uniform",
        [tensor("planes", TensorProto.FLOAT, ["batch", *game.observation_shape]),
         tensor("mask", TensorProto.FLOAT, ["batch", game.num_actions])],
        [tensor("policy", TensorProto.FLOAT, ["batch", game.num_actions]),
         tensor("value", TensorProto.FLOAT, ["batch", 1])],
        initializer=initial,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    for key, value in {"gridbots.kind": KIND, "gridbots.game": game.spec(),
                       "gridbots.family": "uniform"}.items():  # fmt: skip
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    path = Path(path)
    path.write_bytes(model.SerializeToString())
    return path
