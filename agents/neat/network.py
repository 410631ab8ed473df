"""NEAT genomes as JSON, their feed-forward networks as flat arrays (numba) and as ONNX graphs.

A genome file is plain JSON (never neat-python's pickled checkpoints):

    {"format": "gridbots-neat-genome/1", "key": 7, "fitness": 93.9,
     "num_inputs": 36, "num_outputs": 4,
     "nodes": [{"id": 0, "bias": .., "response": .., "activation": "sigmoid",
                "aggregation": "sum"}, ...],                  # outputs 0..O-1, then hidden
     "connections": [{"from": -1, "to": 0, "weight": .., "enabled": true, "innovation": 1}, ...]}

Inputs are the keys -1..-I and outputs 0..O-1, as in neat-python. The network is what
neat-python's FeedForwardNetwork.create builds: enabled connections, only the nodes an output
needs, each node's links summed in the genome's connection order. This module reads genomes
without importing neat-python, so agents can play them; models/neat.py writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.neat.codec import ACTIVATIONS, activate_scaled

GENOME_FORMAT = "gridbots-neat-genome/1"


class GenomeError(ValueError):
    """A genome file that is not a readable feed-forward NEAT genome."""


@dataclass
class Network:
    """One phenotype: nodes in evaluation order, each with (bias, response, activation, links)."""

    num_inputs: int
    num_outputs: int
    order: list[int]  # node ids, each after every node it reads
    bias: dict[int, float]
    response: dict[int, float]
    activation: dict[int, str]
    links: dict[int, list[tuple[int, float]]]  # node -> [(source id, weight)]

    @property
    def hidden(self) -> int:
        return sum(1 for node in self.order if node >= self.num_outputs)

    @property
    def connections(self) -> int:
        return sum(len(v) for v in self.links.values())

    def slots(self) -> dict[int, int]:
        """Value slot per node id: inputs first (-1 -> 0, -2 -> 1, ...), then evaluation order."""
        slot = {-(i + 1): i for i in range(self.num_inputs)}
        for k, node in enumerate(self.order):
            slot[node] = self.num_inputs + k
        return slot


def read_genome(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GenomeError(f"cannot read genome {path}: {error}") from None
    if not isinstance(data, dict) or data.get("format") != GENOME_FORMAT:
        raise GenomeError(f"{path} is not a {GENOME_FORMAT} file")
    return data


def network(genome: dict[str, Any]) -> Network:
    """The phenotype neat-python's FeedForwardNetwork.create builds from this genome."""
    try:
        n_in, n_out = int(genome["num_inputs"]), int(genome["num_outputs"])
        nodes = {int(n["id"]): n for n in genome["nodes"]}
        enabled = [
            (int(c["from"]), int(c["to"]), float(c["weight"]))
            for c in genome["connections"]
            if c["enabled"]
        ]
    except (KeyError, TypeError, ValueError) as error:
        raise GenomeError(f"malformed genome: {error!r}") from None
    inputs = set(range(-n_in, 0))
    outputs = list(range(n_out))
    if any(o not in nodes for o in outputs):
        raise GenomeError("genome lacks an output node")
    for node in nodes.values():
        if node.get("aggregation", "sum") != "sum" or node.get("activation") not in ACTIVATIONS:
            raise GenomeError(f"node {node['id']}: only sum aggregation and {list(ACTIVATIONS)}")
    required = set(outputs)  # neat.graphs.required_for_output
    frontier = set(outputs)
    while True:
        feeding = {a for a, b, _ in enabled if b in frontier and a not in frontier}
        new = {a for a in feeding if a not in inputs}
        if not new:
            break
        required |= new
        frontier |= feeding
    links: dict[int, list[tuple[int, float]]] = {node: [] for node in required}
    for a, b, w in enabled:
        if b in required and (a in required or a in inputs):
            links[b].append((a, w))
    order, placed = [], set(inputs)
    remaining = sorted(required)
    while remaining:
        ready = [n for n in remaining if all(a in placed for a, _ in links[n])]
        if not ready:
            raise GenomeError("the genome's enabled connections form a cycle")
        order += ready
        placed |= set(ready)
        remaining = [n for n in remaining if n not in placed]
    return Network(
        n_in,
        n_out,
        order,
        {n: float(nodes[n]["bias"]) for n in order},
        {n: float(nodes[n]["response"]) for n in order},
        {n: str(nodes[n]["activation"]) for n in order},
        links,
    )


@dataclass
class Packed:
    """A batch of networks in the flat arrays agents.neat.codec.forward reads."""

    nodes: np.ndarray  # (rows, 3) int64: value slot, first link, end link
    bias: np.ndarray
    response: np.ndarray
    kind: np.ndarray
    links: np.ndarray  # value slot read by each link
    weight: np.ndarray
    net_rows: np.ndarray  # (nets, outputs + 2): output slots, first row, end row
    width: int  # value slots the widest network needs
    num_inputs: int  # values every network reads (the first slots)

    def arrays(self) -> tuple:
        return (
            self.nodes,
            self.bias,
            self.response,
            self.kind,
            self.links,
            self.weight,
            self.net_rows,
        )


def pack(networks: Sequence[Network]) -> Packed:
    rows: list[tuple[int, int, int]] = []
    bias, response, kind, links, weight = [], [], [], [], []
    n_out, n_in = networks[0].num_outputs, networks[0].num_inputs
    if any(net.num_inputs != n_in or net.num_outputs != n_out for net in networks):
        raise ValueError("pack: the networks of one batch read and write the same number of values")
    net_rows = np.zeros((len(networks), n_out + 2), dtype=np.int64)
    width = 0
    for i, net in enumerate(networks):
        slot = net.slots()
        width = max(width, net.num_inputs + len(net.order))
        net_rows[i, -2] = len(rows)
        for node in net.order:
            start = len(links)
            for source, w in net.links[node]:
                links.append(slot[source])
                weight.append(w)
            rows.append((slot[node], start, len(links)))
            bias.append(net.bias[node])
            response.append(net.response[node])
            kind.append(ACTIVATIONS[net.activation[node]])
        net_rows[i, -1] = len(rows)
        net_rows[i, :n_out] = [slot[o] for o in range(n_out)]
    return Packed(
        np.array(rows, dtype=np.int64).reshape(-1, 3),
        np.array(bias, dtype=np.float64),
        np.array(response, dtype=np.float64),
        np.array(kind, dtype=np.int64),
        np.array(links, dtype=np.int64),
        np.array(weight, dtype=np.float64),
        net_rows,
        width,
        n_in,
    )


# ---- ONNX ---------------------------------------------------------------------------------------
#: neat-python's activations as (pre-scale, ONNX op)
ONNX_ACTIVATIONS = {
    "sigmoid": (5.0, "Sigmoid"),
    "tanh": (2.5, "Tanh"),
    "relu": (1.0, "Relu"),
    "identity": (1.0, "Identity"),
}


#: metadata key of an exported graph: its output nodes' activations, comma-separated, so an agent
#: can apply them to `logits` in float64 as the fitness games do (`activations_from_logits`)
OUTPUT_ACTIVATIONS = "gridbots.output_activations"


def activations_from_logits(logits: np.ndarray, kinds: list[str]) -> np.ndarray:
    """The outputs in float64 from the graph's float32 `logits`, as `forward` computes them
    (agents.neat.codec.activate_scaled): onnxruntime's float32 sigmoid reaches 1.0 at a fifth of
    the input where numba's float64 one does, which moved guided tiles and tied masked scores."""
    z = np.atleast_2d(np.asarray(logits, dtype=np.float64))
    out = np.empty_like(z)
    activate_scaled(np.array([ACTIVATIONS[k] for k in kinds], dtype=np.int64), z, out)
    return out


def _depths(net: Network) -> dict[int, int]:
    depth = {-(i + 1): 0 for i in range(net.num_inputs)}
    for node in net.order:
        depth[node] = 1 + max((depth[a] for a, _ in net.links[node]), default=0)
    return depth


def to_onnx(net: Network, metadata: dict[str, str] | None = None) -> bytes:
    """An ONNX graph computing the network for a batch: `inputs` [batch, I] -> `outputs` [batch, O]
    and `logits` [batch, O], the output nodes before their activation (scaled as neat-python
    scales). Decodings that rank moves by one output read the logits: onnxruntime's float32
    sigmoid flattens to a few values near 0 and 1, where numba's float64 one still ranks.

    Nodes of equal depth (and activation) form one dense layer: MatMul over every value computed
    so far, times response, plus bias, scaled as neat-python scales, the activation, Concat.
    """
    from onnx import TensorProto, helper, numpy_helper

    depth = _depths(net)
    groups: dict[tuple[int, str], list[int]] = {}
    for node in net.order:
        groups.setdefault((depth[node], net.activation[node]), []).append(node)
    slot = {-(i + 1): i for i in range(net.num_inputs)}
    ops, weights = [], []
    values = zvalues = "inputs"  # zvalues: the same slots before activation
    for index, ((_, act), members) in enumerate(sorted(groups.items())):
        matrix = np.zeros((len(slot), len(members)), dtype=np.float32)
        for j, node in enumerate(members):
            for source, w in net.links[node]:
                matrix[slot[source], j] += w
        scale, op = ONNX_ACTIVATIONS[act]
        resp = np.array([net.response[n] * scale for n in members], dtype=np.float32)
        bias = np.array([net.bias[n] * scale for n in members], dtype=np.float32)
        names = [f"w{index}", f"r{index}", f"b{index}"]
        weights += [
            numpy_helper.from_array(a, n) for a, n in zip((matrix, resp, bias), names, strict=True)
        ]
        ops += [
            helper.make_node("MatMul", [values, names[0]], [f"sum{index}"]),
            helper.make_node("Mul", [f"sum{index}", names[1]], [f"scaled{index}"]),
            helper.make_node("Add", [f"scaled{index}", names[2]], [f"z{index}"]),
            helper.make_node(op, [f"z{index}"], [f"act{index}"]),
            helper.make_node("Concat", [values, f"act{index}"], [f"values{index}"], axis=1),
            helper.make_node("Concat", [zvalues, f"z{index}"], [f"zvalues{index}"], axis=1),
        ]
        values, zvalues = f"values{index}", f"zvalues{index}"
        for node in members:
            slot[node] = len(slot)
    picks = np.array([slot[o] for o in range(net.num_outputs)], dtype=np.int64)
    weights.append(numpy_helper.from_array(picks, "output_slots"))
    ops.append(helper.make_node("Gather", [values, "output_slots"], ["outputs"], axis=1))
    ops.append(helper.make_node("Gather", [zvalues, "output_slots"], ["logits"], axis=1))
    shape = ["batch", net.num_outputs]
    graph = helper.make_graph(
        ops,
        "neat",
        [helper.make_tensor_value_info("inputs", TensorProto.FLOAT, ["batch", net.num_inputs])],
        [
            helper.make_tensor_value_info("outputs", TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, shape),
        ],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    kinds = ",".join(net.activation[o] for o in range(net.num_outputs))
    for key, value in {**(metadata or {}), OUTPUT_ACTIVATIONS: kinds}.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, str(value)
    return model.SerializeToString()
