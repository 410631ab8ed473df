"""CRF family: both variants learn a deterministic mapping on toy sequences perfectly and a
copying bot far above chance; CRFsuite + sidecar round trips; bad inputs and files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_hmm import agreement, copycat_arrays

from agents import AgentError, make
from agents.sequence.agent import load_predictor
from agents.sequence.crf import CrfPredictor
from agents.sequence.predictor import crf_sidecar
from engine import load_game
from features.encode import one_hot_actions
from models import crf
from models.base import ModelError, family

FAST = {"player": 0, "outcomes": "all", "max_iterations": 60}


def toy_arrays(encoding: str, rows: int = 60, length: int = 8) -> tuple[dict, dict]:
    """Seat 0 always plays (6 - the opponent's last column): a deterministic, non-copying map."""
    rng = np.random.default_rng(3)
    rounds = np.empty((rows, length + 1, 2), dtype=np.int16)
    rounds[:, :, 1] = rng.integers(0, 7, size=(rows, length + 1))
    rounds[:, 0, 0] = 2
    rounds[:, 1:, 0] = 6 - rounds[:, :-1, 1]
    arrays = {
        "inputs": rounds[:, :-1],
        "targets": rounds[:, 1:],
        "rounds": np.full(rows, length + 1),
        "game_id": np.arange(rows),
        "player": np.zeros(rows, dtype=np.int8),
        "outcome": np.ones(rows, dtype=np.float32),
    }
    if encoding == "qualitative":
        for key in ("inputs", "targets"):
            arrays[key] = one_hot_actions(arrays[key], 7, -1)
    return arrays, {"encoding": encoding, "game": "connect4"}


@pytest.mark.parametrize("encoding", ["quantitative", "qualitative"])
def test_deterministic_toy_mapping_is_learnt_perfectly(encoding, tmp_path):
    arrays, meta = toy_arrays(encoding)
    result = crf.train(arrays, meta, {"c2": 0.001}, tmp_path)
    assert result.params["variant"] == (1 if encoding == "quantitative" else 2)
    assert result.metrics["held_out_accuracy"] == 1.0
    predictor = CrfPredictor(result.artifact, load_game("connect4"))
    for last in range(7):  # the map itself, also on rounds after a long history
        context = np.array([[2, 0], [6, 4], [2, last]])
        assert int(np.argmax(predictor.scores(context, 0))) == 6 - last
    assert int(np.argmax(predictor.scores(np.zeros((0, 2), int), 0))) == 2  # the opening


@pytest.mark.parametrize("encoding", ["quantitative", "qualitative"])
def test_reproduces_the_copying_bot_far_above_chance(encoding, tmp_path):
    arrays, meta = copycat_arrays(encoding)
    progress: list[int] = []
    result = crf.train(arrays, meta, FAST, tmp_path, progress=lambda e, m: progress.append(e))
    assert result.metrics["held_out_accuracy"] > 0.8  # chance: about 1/7
    assert progress and result.history["loss"][-1] <= result.history["loss"][0]
    game = load_game("connect4")
    agent = make(f"seq:model={result.artifact},guards=none", game, seed=2)
    assert agreement(agent, range(600, 606), game) > 0.8


def test_crfsuite_and_sidecar_round_trip(tmp_path):
    arrays, meta = copycat_arrays("qualitative", 60)
    result = crf.train(arrays, meta, dict(FAST, window=2, training="positions"), tmp_path)
    assert result.artifact.read_bytes()[:4] == b"lCRF"
    side = json.loads(crf_sidecar(result.artifact).read_text())
    assert side["metadata"]["gridbots.family"] == "crf"
    assert side["metadata"]["gridbots.variant"] == "2"
    assert (side["variant"], side["window"], side["seats"]) == (2, 2, [0])
    assert result.extra_artifacts == [crf_sidecar(result.artifact)]
    game = load_game("connect4")
    with_sidecar = load_predictor(result.artifact, game)
    context = np.array([[3, 5], [5, 1]])
    scores = with_sidecar.scores(context, 0)
    assert int(np.argmax(scores)) == 1
    assert np.exp(scores).sum() == pytest.approx(1.0, abs=1e-6)  # marginals of the 7 actions
    # a registry may keep the model file alone: variant, window and seats come from features
    lone = tmp_path / "lone" / "model.crfsuite"
    lone.parent.mkdir()
    lone.write_bytes(result.artifact.read_bytes())
    alone = load_predictor(lone, game)
    assert (alone.variant, alone.window, alone.seats) == (2, 2, [0])
    assert alone.scores(context, 0) == pytest.approx(scores)
    assert alone.scores(context, 1) == pytest.approx(scores)  # an untrained seat borrows one


def test_family_registry_and_bad_inputs(tmp_path):
    assert family("crf") is crf
    arrays, meta = toy_arrays("quantitative", rows=10)
    with pytest.raises(ModelError, match=r"variant 2 .* qualitative"):
        crf.train(arrays, meta, {"variant": 2}, tmp_path)
    with pytest.raises(ModelError, match="expected 1 or 2"):
        crf.train(arrays, meta, {"variant": 3}, tmp_path)
    with pytest.raises(ModelError, match="training="):
        crf.train(arrays, meta, {"training": "all"}, tmp_path)
    with pytest.raises(ModelError, match="quantitative or qualitative"):
        crf.train(arrays, dict(meta, encoding="board-onehot"), {"variant": 1}, tmp_path)
    game = load_game("connect4")
    good = crf.train(*toy_arrays("qualitative", rows=10), {"max_iterations": 5}, tmp_path)
    data = good.artifact.read_bytes()
    # CRFsuite crashes the process on damaged files: they must be refused before it reads them
    size_patched = bytearray(data[:600])
    size_patched[4:8] = (600).to_bytes(4, "little")
    for damaged in (b"lCRF" + bytes(range(60)), data[:-7], bytes(size_patched)):
        corrupt = tmp_path / "corrupt.crfsuite"
        corrupt.write_bytes(damaged)
        with pytest.raises(AgentError, match="not a CRFsuite model"):
            make(f"seq:model={corrupt}", game)
    crf_sidecar(good.artifact).write_text("{not json")
    with pytest.raises(AgentError, match="cannot read CRF sidecar"):
        make(f"seq:model={good.artifact}", game)
    crf_sidecar(good.artifact).write_text(
        json.dumps(
            {"metadata": {"gridbots.game": "othello"}, "variant": 2, "window": 1, "seats": [0]}
        )
    )
    with pytest.raises(AgentError, match="trained for othello"):
        make(f"seq:model={good.artifact}", game)
