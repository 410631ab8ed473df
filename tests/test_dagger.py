"""benchmarks/dagger.py on Lazerbike from random starts: every student step relabelled with the
teacher's move in the position the game really reached (replayed here from each game's own
seeded start), one row a game as the base was encoded, and the student's seat the only one an
every-seat model imitates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from test_onnx_eval import linear_model

from agents import make
from engine import load_game
from features import encode as enc
from features.store import generate_dataset, load_dataset
from models.base import artifact_metadata
from models.lstm import seat_passes

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
TEACHER = "simab:depth=2"


def student_net(path: Path) -> str:
    """An every-seat Lazerbike net that always prefers going straight (class 2: action 1)."""
    bias = np.zeros(8)
    bias[[2, 6]] = 1.0
    meta = artifact_metadata("lazerbike", "lstm", "qualitative", "sequence", player=-1)
    return str(linear_model(path, np.zeros((8, 8)), bias, 60, meta))


def test_a_dagger_round_relabels_student_steps_from_random_starts(tmp_path, monkeypatch):
    game = load_game("lazerbike")
    student = f"seq:model={student_net(tmp_path / 'straight.onnx')}"
    options = {"x": 6, "y": 1, "w": 0.0, "rotate": True, "scenario": {"start": "random"},
               "agents": [student, "random:guards=safe"]}  # fmt: skip
    generate_dataset(tmp_path / "s", "lazerbike", "imitation", options, seed=4)
    games = load_dataset(tmp_path / "s", "games")
    sequences = load_dataset(tmp_path / "s", "sequences")
    base = enc.qualitative(sequences, game, length=60, boards=True, games=games, seat=0)
    meta = {"encoding": "qualitative", "game": "lazerbike", "table": "sequences",
            "options": {"length": 60, "boards": True, "seat": 0}}  # fmt: skip
    enc.save(base, meta, tmp_path / "base.npz")
    out = tmp_path / "next.npz"
    argv = ["dagger.py", "--game", "lazerbike", "--base", str(tmp_path / "base.npz"),
            "--out", str(out), "--teacher", TEACHER, str(tmp_path / "s")]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import dagger

    dagger.main()
    joined, meta = enc.load(out)
    n = len(base["inputs"])
    assert len(joined["inputs"]) == 2 * n == 2 * games.num_rows  # one row a game, both halves
    assert meta["dagger"][0]["student_games"] == games.num_rows
    assert (joined["player"][n:] == 0).all()
    teacher = make(TEACHER, game, seed=0)  # one teacher across the games, in their order
    width = joined["targets"].shape[2] // 2
    seats = []
    for row, record in enumerate(games.to_pylist()):
        seat = next(i for i, spec in enumerate(record["agents"]) if spec.startswith("seq"))
        seats.append(seat)
        state = game.new_initial_state(seed=record["seed"], **json.loads(record["scenario"]))
        history, labels = record["history"], []
        for lap in range(len(history) // 2):
            labels.append(teacher.step(state, seat))
            state.apply_actions(history[2 * lap : 2 * lap + 2])
        assert state.is_terminal()  # the replay really followed the recorded game
        block = joined["targets"][n + row, :, seat * width : (seat + 1) * width]
        assert (block.argmax(-1)[: len(labels) - 1] - 1).tolist() == labels[1:]
        # the base row of the same game keeps the moves the student played
        played = [history[2 * lap + seat] for lap in range(1, len(history) // 2)]
        own = base["targets"][row, :, seat * width : (seat + 1) * width].argmax(-1) - 1
        assert own[: len(played)].tolist() == played
    assert sorted(set(seats)) == [0, 1]  # rotate seated the student on both sides
    rows = np.arange(n, 2 * n)
    expected = np.eye(2, dtype=bool)[seats]  # the student's seat only, won or lost
    assert (seat_passes(joined, rows, 2, 0.0) == expected).all()
