"""Int8 copies of policy-value networks, for searches that run on CPU cores.

A PUCT search on CPU spends most of its time in the network: on tactics a scale-2 PlayerZero
network (5 blocks x 32 channels over 12 x 12 cells) costs ~0.25 ms a position in float32,
compute-bound, so batching more leaves per call buys nothing. onnxruntime's static quantization
(QDQ format, weights int8 per channel, activations uint8, scales calibrated on positions of the
game) runs the same graph with integer kernels: 1.9-2.35x faster a call over batches of 1-32
on this machine's cores (benchmarks/quantize.py).

The copy is a model like any other: ONNX with the source's metadata (so `puct:model=PATH`,
`policy:model=PATH` and the registry load it unchanged) plus `gridbots.quantized = int8` and the
check it passed: on held-out positions, the share where its policy's argmax equals the float
network's, its policy's largest probability difference, and its value's mean and largest
difference. A copy whose agreement falls below
`min_agreement` is refused, not written.
"""

from __future__ import annotations

import os
import tempfile
from itertools import islice
from pathlib import Path

import numpy as np

from engine.match import random_states
from engine.protocol import Game
from models.base import ModelError

CALIBRATION_SHARE = 0.5  # of the sampled positions; the rest check the copy


def sample_positions(game: Game, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(planes, masks) of `count` decision points along seeded random games (chance outcomes
    drawn as the game draws them): the calibration and check positions."""
    decisions = (s for s in random_states(game, seed) if s.current_player() >= 0)
    rows = [
        (s.observation_tensor(s.current_player()), s.legal_actions_mask())
        for s in islice(decisions, count)
    ]
    planes = np.stack([np.asarray(p, dtype=np.float32) for p, _ in rows])
    masks = np.stack([np.asarray(m, dtype=np.float32) for _, m in rows])
    return planes.reshape(count, *game.observation_shape), masks


def quantize(
    source: str | Path,
    out: str | Path,
    game: Game,
    positions: int = 400,
    seed: int = 0,
    min_agreement: float = 0.9,
) -> dict[str, float]:
    """Writes the int8 copy of policy-value network `source` to `out` (atomically) and returns
    its check: argmax agreement, value mean / max difference, positions used."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from agents.base import AgentError
    from agents.puct.pv_net import PolicyValueNet

    if positions < 20:
        raise ModelError("quantize: positions must be at least 20 (half calibrate, half check)")
    try:
        reference = PolicyValueNet(game, str(source), 1)
    except AgentError as problem:
        raise ModelError(str(problem)) from None
    planes, masks = sample_positions(game, positions, seed)
    cut = int(positions * CALIBRATION_SHARE)

    class Calibration(CalibrationDataReader):
        def __init__(self) -> None:
            self.rows = iter(range(cut))

        def get_next(self) -> dict[str, np.ndarray] | None:
            i = next(self.rows, None)
            return None if i is None else {"planes": planes[i : i + 1], "mask": masks[i : i + 1]}

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".quantize-") as work:
        prepared, written = Path(work) / "prepared.onnx", Path(work) / "int8.onnx"
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        quantize_static(
            str(prepared), str(written), Calibration(), quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
            op_types_to_quantize=["Conv", "MatMul", "Gemm"],
        )  # fmt: skip
        check = _check(reference, PolicyValueNet(game, str(written), 1), planes[cut:], masks[cut:])
        check["positions"] = float(positions)
        if check["agreement"] < min_agreement:
            raise ModelError(
                f"quantize: the int8 copy's policy picks the float network's move on "
                f"{check['agreement']:.1%} of held-out positions, below {min_agreement:.0%}"
            )
        _label(written, check)
        os.replace(written, out)
    return check


def _check(reference, copy, planes: np.ndarray, masks: np.ndarray) -> dict[str, float]:
    policy_a, value_a = reference(planes, masks)
    policy_b, value_b = copy(planes, masks)
    error = np.abs(value_a - value_b)
    return {
        "agreement": float((policy_a.argmax(axis=1) == policy_b.argmax(axis=1)).mean()),
        # a near-tie's argmax may flip under int8 rounding: the drift says by how much
        "policy_error_max": float(np.abs(policy_a - policy_b).max()),
        "value_error_mean": float(error.mean()),
        "value_error_max": float(error.max()),
    }


def _label(path: Path, check: dict[str, float]) -> None:
    """The source's metadata is kept by the quantizer; adds what was done and what it passed."""
    import onnx

    from models.export import write_metadata

    model = onnx.load(str(path))
    props = {p.key: p.value for p in model.metadata_props}
    props["gridbots.quantized"] = "int8"
    props.update({f"gridbots.quantized.{k}": f"{v:.4f}" for k, v in check.items()})
    write_metadata(model, props)
    onnx.save(model, str(path))
