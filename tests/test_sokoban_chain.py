"""The Sokoban chain's pieces (issue 14): planner data, the puzzle evaluation, a sequence model
of every seat exported and played through the registry. tests/test_dvc_repro.py runs the chain
itself in the tiny profile."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_tracking import mlflow_sandbox

from agents import make
from agents.isolated.file_agent import make_agent
from agents.sequence.agent import history_rounds, neutral_scores
from agents.sequence.codec import one_hot_actions
from engine import parse_game_spec
from engine.puzzles import attempt_rows, level_summary
from features.store import generate_dataset
from features.validate import validate_dataset

pytestmark = pytest.mark.filterwarnings("ignore")
DUO = "sokoban:level=duo"
PLANNER_DATA = {"x": 6, "y": 1, "w": 0.0, "agents": ["planner"], "scenario": {"opening": 2},
                "shard_size": 6}  # fmt: skip


@pytest.fixture(scope="module")
def planner_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sokoban") / "planner"
    generate_dataset(folder, DUO, "imitation", dict(PLANNER_DATA), seed=31)
    return folder


def test_planner_rows_validate_and_replay_to_solved_levels(planner_data):
    report = validate_dataset(planner_data, docs=False)
    assert report.success, report.summary()
    game = parse_game_spec(DUO)
    rows = pq.read_table(planner_data / "games").to_pylist()
    assert len(rows) == 6
    for row in rows:  # the engine, not the dataset, says whether the level was solved
        final = game.state_from_history(row["history"], seed=row["seed"])
        assert final.is_terminal() and final.returns() == [1.0, 1.0]
        opening = game.new_initial_state(seed=row["seed"], opening=2).history()
        assert len(opening) == 4 and row["history"][:4] == opening  # two seeded random laps
    assert len({tuple(r["history"]) for r in rows}) > 1  # the openings vary the games


def test_the_planner_solves_every_attempt_at_its_own_pace_and_random_rarely():
    game = parse_game_spec("sokoban:level=push")
    rows = [
        *attempt_rows(game, "planner", 4, seed=0, opening=1, make_seat=make_agent),
        *attempt_rows(game, "random", 4, seed=0, opening=1, make_seat=make_agent),
    ]
    for row in rows:  # `solved` and `laps` agree with a replay by the engine
        final = game.state_from_history(game.parse_moves(row["history"]))
        assert row["solved"] == (final.returns()[0] > 0)
        assert row["laps"] == len(final.history()) - row["opening_laps"]
    table = {r["spec"]: r for r in level_summary(rows, "planner")}
    planner, rand = table["planner"], table["random"]
    assert planner["success_rate"] == 1.0 and planner["solved"] == planner["attempts"] == 4
    assert planner["laps_ratio"] == 1.0 and planner["both_solved"] == 4
    z = 1.959964  # the Wilson interval of 4 / 4, written out
    assert planner["success_low"] == pytest.approx((1 + z * z / 8) / (1 + z * z / 4) - (
        z / (1 + z * z / 4) * math.sqrt(z * z / 64)), abs=1e-6)  # fmt: skip
    solved = [r for r in rows if r["spec"] == "random" and r["solved"]]
    assert rand["solved"] == len(solved) < 4


def test_a_neutral_action_that_is_a_move_gets_the_neutral_class_score():
    step = np.array([0.7, 0.1, 0.05, 0.05, 0.05, 0.05])  # class 0, then actions 0..4
    stay = neutral_scores(step, neutral=4)  # Sokoban: stay is action 4 and the neutral value
    assert stay.tolist() == [0.1, 0.05, 0.05, 0.05, 0.7]
    assert neutral_scores(step, neutral=-1).tolist() == step[1:].tolist()  # Connect 4


def test_an_every_seat_lstm_exports_with_parity_and_plays_each_seat_by_registry_name(
    planner_data, tmp_path_factory
):
    import onnxruntime

    from features.encode import encode_dataset, save
    from models.tracking import train

    root = tmp_path_factory.mktemp("registry")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        data = root / "planner.npz"
        save(*encode_dataset(planner_data, "qualitative"), data)
        params = {"player": "-1", "epochs": "1", "cells": "4", "dense_units": "4"}
        outcome = train(data, "lstm", params, register=True, out_dir=root / "out")
        assert float(outcome.best.parity) <= 1e-4
        game = parse_game_spec(DUO)
        agent = make(f"registry:sokoban-lstm/{outcome.version}", game, seed=0)
        state = game.new_initial_state(seed=3, opening=2)
        assert all(agent.step(state, p) in state.legal_actions(p) for p in range(2))
        # seat 1's scores are block 1 of the network's output, read here by onnxruntime
        session = onnxruntime.InferenceSession(str(root / "out" / "model.onnx"))
        meta = session.get_modelmeta().custom_metadata_map
        assert (meta["gridbots.seats"], meta["gridbots.player"]) == ("2", "-1")
        rounds = history_rounds(game, state)
        window = int(meta["gridbots.length"])  # trained length; the input's time axis is free
        padded = np.full((window, 2), game.neutral_action, dtype=np.int64)
        padded[: len(rounds)] = rounds
        x = one_hot_actions(padded, game.num_actions, game.neutral_action)[None]
        out = session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})[0]
        block = np.asarray(out).reshape(window, 2, game.num_actions + 1)[len(rounds) - 1, 1]
        got = agent.inner.predictor.scores(rounds, 1)
        assert np.allclose(got, neutral_scores(block, game.neutral_action), atol=1e-5)
        assert json.loads(json.dumps(got.tolist()))  # finite numbers
