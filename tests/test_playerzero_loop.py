"""The PlayerZero loop end to end at toy size: killed mid-generation, it loses only that
generation's unfinished step; run again with `generations` raised it resumes that generation
and goes on past the old count; run once more it has nothing to do; the
accepted networks are registered with their evidence and face the promotion gate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def toy_params() -> dict:
    return {
        "mlflow": {"tracking_uri": "sqlite:///mlflow.db"},
        "promote": {"baseline": "random", "games": 16, "seed": 0},  # 12 of 16 wins pass the gate
        "playerzero": {
            "connect4": {
                "spec": "connect4",
                "generations": 2,
                "seed": 0,
                "workers": 1,
                "window": 2,
                "networks": [1, 2],
                "first": {"agent": "mcts:sims=30", "games": 8, "shard_size": 4},
                "selfplay": {"games": 8, "shard_size": 4, "sims": 8, "c": 1.5, "fpu": 0.25,
                             "parallel": 4, "temperature_plies": 4, "alpha": 1.0, "eps": 0.25},
                "train": {"steps": 8, "batch_size": 32, "discount": 0.98},
                "arena": {"games": 2, "sims": 8, "opening": 2, "elo1": 40, "min_games": 2},
                "evaluate": {"sims": 8, "positions": 10, "baselines": ["random"],
                             "opponent": "random", "games": 2},
                "solved": str(REPO / "agents" / "data" / "connect4_solved_positions.txt"),
                "validation": {"sample": 10, "seed": 0},
            }
        },
    }  # fmt: skip


def start(root: Path, generations: int, api: str, game: str = "connect4") -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_"))}
    env.update(PYTHONPATH=str(REPO), GRIDBOTS_MODEL_CACHE=str(root / ".cache"),
               MLFLOW_DISABLE_TELEMETRY="1", DO_NOT_TRACK="1", PREFECT_API_URL=api)  # fmt: skip
    command = [sys.executable, "-m", "flows.cli", "stage", "playerzero", game,
               "--generations", str(generations)]  # fmt: skip
    return subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip


def finish(process: subprocess.Popen) -> str:
    out, _ = process.communicate(timeout=900)
    assert process.returncode == 0, out[-4000:]
    return out


def test_killed_resumed_continued_and_registered(tmp_path, prefect_api):
    from models.playerzero_loop import MEASURED, load_state, run_home

    (tmp_path / "params.yaml").write_text(yaml.safe_dump(toy_params()))
    home = tmp_path / "playerzero" / "connect4"
    first = start(tmp_path, 2, prefect_api)
    deadline = time.time() + 900
    while not (home / "gen-001" / "data").is_dir():  # generation 0 done, 1 in flight
        assert first.poll() is None, first.communicate()[0][-4000:]
        assert time.time() < deadline
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    state = json.loads((home / "state.json").read_text())
    assert state["generation"] == 1 and state["best"]["path"] == "networks/g001-s1/model.onnx"
    kept = {p: p.stat().st_mtime_ns for p in (home / "gen-000").rglob("*") if p.is_file()}
    kept |= {p: p.stat().st_mtime_ns for p in (home / "networks").rglob("*") if p.is_file()}

    # run again with generations raised: it resumes the generation in flight, then goes on
    finish(start(tmp_path, 3, prefect_api))
    record = tmp_path / "metrics" / "playerzero" / "connect4-run"  # ids, clocks, registrations
    assert run_home(home) == record
    state = load_state(home, {})  # state.json with its run record's fields put back
    assert state["generation"] == 3 and len(state["history"]) == 3
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())  # generation 0 untouched
    assert (home / "gen-002" / "summary.json").is_file()
    for g, summary in enumerate(state["history"]):  # each generation's clock, attempts summed
        clock = json.loads((record / f"gen-{g:03d}" / "clock.json").read_text())
        assert clock["seconds"] == summary["seconds"]
        assert (record / f"gen-{g:03d}" / "run_id").read_text() == summary["run_id"]
    assert [s["resumed"] for s in state["history"]] == [False, True, False]
    assert json.loads((record / "state.json").read_text())["parent_run_id"] == (
        state["parent_run_id"]
    )  # fmt: skip
    # the loop's DVC output: no MLflow id, registry version, clock or path of this machine
    for path in home.rglob("*.json"):
        text = path.read_text()
        assert str(tmp_path) not in text, path
        assert not [k for k in MEASURED if f'"{k}"' in text], path
    rows = (record / "curve.csv").read_text().splitlines()
    assert len(rows) == 4 and rows[0].startswith("generation,hours")
    assert (tmp_path / "metrics" / "playerzero" / "connect4.json").is_file()
    report = (record / "report.md").read_text()
    assert "| `random` |" in report and (record / "report.png").is_file()

    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    again = finish(start(tmp_path, 3, prefect_api))  # nothing left to do
    assert "3 generations" in again
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
    assert load_state(home, {})["history"] == state["history"]

    first_summary = state["history"][0]
    assert first_summary["registry"]["version"] == "1"  # the first network is always accepted
    assert first_summary["registry"]["promotion"]["opponent"] == "random"
    evidence = state["history"][0]["evaluation"]
    assert evidence["policy"]["positions"] == 1000 and evidence["puct"]["positions"] == 10
    match = evidence["match"]  # the fixed yardstick every generation plays
    assert match["spec_b"] == "random" and match["games"] == 2
    assert match["wins"] + match["draws"] + match["losses"] == 2

    def move(spec: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        env.update(PYTHONPATH=str(REPO), GRIDBOTS_MODEL_CACHE=str(tmp_path / ".cache"))
        return subprocess.run([sys.executable, "-m", "flows.cli", "move", "connect4", spec,
                               "--moves", "44"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    for spec in ("registry:connect4-playerzero@production:sims=16",
                 "puct:model=registry:connect4-playerzero/1,sims=16"):  # fmt: skip
        played = move(spec)
        assert played.returncode == 0 and played.stdout.strip() in "1234567", played.stderr
    refusals = (
        ("puct:model=registry:connect4-playerzero@staging", "no alias @staging"),
        ("policy:model=registry:connect4-nothing@production", "no registered"),
    )
    for spec, words in refusals:
        refused = move(spec)
        assert refused.returncode == 2 and words in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_a_killed_generations_time_counts_when_it_resumes(tmp_path):
    """The `hours` budget counts every attempt at a generation: a killed attempt's seconds up
    to its last beat stay on disk, the idle time before the rerun does not count."""
    from models.playerzero_loop import GenerationClock, read_json

    t = [0.0]
    path = tmp_path / "gen-001" / "clock.json"
    first = GenerationClock(path, beat=3600, now=lambda: t[0])
    t[0] = 100.0
    first.save()  # its last beat
    t[0] = 5000.0  # killed at 130 s (30 s lost), run again much later
    second = GenerationClock(path, beat=3600, now=lambda: t[0])
    t[0] = 5040.0
    assert second.seconds() == 140.0
    with second:
        t[0] = 5060.0
    assert read_json(path) == {"seconds": 160.0}
    t[0] = 9000.0  # read after the generation: the number it saved, not a still-running clock
    assert second.seconds() == 160.0

    beating = tmp_path / "beating.json"
    with GenerationClock(beating, beat=0.01):  # the daemon thread writes without being asked
        deadline = time.time() + 300  # a hang guard: the beat is every 10 ms
        while not beating.is_file():
            assert time.time() < deadline, "the clock's thread never wrote"
            time.sleep(0.01)
    assert read_json(beating)["seconds"] > 0


def test_the_stage_refuses_missing_parameters_in_one_line(tmp_path):
    params = toy_params()
    del params["playerzero"]["connect4"]["arena"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "stage", "playerzero", "connect4"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "playerzero.connect4.arena" in done.stderr


def test_both_profiles_define_complete_loops():
    from flows.pipeline.params import check, load

    for profile in ("params.yaml", "params-full.yaml"):
        params = load(REPO / profile)
        for game in params["playerzero"]:
            assert check(params, "playerzero", None, game)
    full = load(REPO / "params-full.yaml")["playerzero"]
    # the budget: the strongest bots two cores make in at most two hours each
    assert set(full) >= {"connect4", "othello"}
    assert all(0 < p["hours"] <= 2.0 for p in full.values())


def test_the_loop_runs_on_tactics_chance_draws_and_multi_action_turns(tmp_path, prefect_api):
    """Generation 0 from MCTS per unit turn, generation 1 from PUCT on the network with a Gumbel
    root (selfplay `gumbel`; card draws are chance nodes, a turn is several actions, the policy
    covers 4,320 cell x id actions); the recorded histories (chance outcomes included) pass
    validation and the network is registered."""
    params = toy_params()
    params["playerzero"] = {"tactics": {
        **params["playerzero"]["connect4"],
        "spec": "tactics:units=1",
        "networks": [1],
        "first": {"agent": "mcts:sims=10,per=turn", "games": 2, "shard_size": 2},
        "selfplay": {"games": 2, "shard_size": 2, "sims": 4, "c": 1.5, "fpu": 0.25,
                     "parallel": 2, "temperature_plies": 4, "alpha": 1.0, "eps": 0.25,
                     "gumbel": 2},
        "train": {"steps": 4, "batch_size": 32, "discount": 0.98},
        "arena": {"games": 2, "sims": 4, "opening": 0, "elo1": 40, "min_games": 2},
        "evaluate": {"sims": 4, "opponent": "random", "games": 2},
        "solved": "",
    }}  # fmt: skip
    params["promote"]["games"] = 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    finish(start(tmp_path, 2, prefect_api, game="tactics"))
    from models.playerzero_loop import load_state

    home = tmp_path / "playerzero" / "tactics"
    state = load_state(home, {})  # with its run record's registrations
    assert state["generation"] == 2
    first, second = state["history"]
    assert first["selfplay"]["agent"].startswith("mcts:")
    assert second["selfplay"]["agent"].startswith("puct:")  # the network plays generation 1
    for g in (0, 1):
        verdict = json.loads((home / f"gen-00{g}" / "validation.json").read_text())
        assert verdict["success"], verdict
    assert first["registry"]["name"] == "tactics-playerzero"
    assert first["registry"]["version"] == "1"
    match = second["evaluation"]["match"]
    assert match["spec_b"] == "random" and match["wins"] + match["draws"] + match["losses"] == 2
    # one compact copy per position (4 symmetries x 4,320-action float32 rows did not fit the
    # full profile's first generation in 24 GB); training draws the symmetries per batch
    from features.encode import load
    from features.store import load_dataset

    encoded, _ = load(home / "gen-000" / "encoded.npz")
    positions = load_dataset(home / "gen-000" / "data", "positions").num_rows
    assert len(encoded["planes"]) == positions and "symmetry" not in encoded
    assert encoded["planes"].dtype == np.float16 and encoded["mask"].dtype == np.uint8
    assert "action_scores" not in encoded and len(encoded["root_value"]) == positions
