"""MLflow-native registry (issue 71): experiments open on their training runs, runs name their
data as MLflow inputs, and a registered version is the bot itself as a pyfunc model that MLflow's
own loader, `mlflow models predict` and `mlflow models serve` play with.

Fast tests use test_tracking's stand-in family with its real Connect 4 evaluation (`center`:
the ONNX value network alphabeta reads), so the pyfunc's moves are checked against the
`registry:` agent playing the same version. The slow ones train a real HMM on generated,
validated Connect 4 games (the chain `registered_hmm` uses) and compare MLflow's commands with
`gridbots move` in separate processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_tracking import make_dataset, mlflow_sandbox

from engine import load_game
from flows.entry import main

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*", "ignore::UserWarning")
BIN = Path(sys.executable).parent


def positions(count: int, seed: int) -> list[str]:
    """`count` Connect 4 histories of seeded random play (0 to 20 plies), none finished."""
    game, rng = load_game("connect4"), np.random.default_rng(seed)
    found: list[str] = []
    while len(found) < count:
        state = game.new_initial_state()
        for _ in range(int(rng.integers(0, 21))):
            actions = state.legal_actions()
            state.apply_action(int(actions[int(rng.integers(len(actions)))]))
            if state.is_terminal():
                break
        if not state.is_terminal():
            found.append(game.format_moves(state.history()))
    return found


def load_pyfunc(uri: str, monkeypatch):
    """MLflow's loader, with the sys.path entry it prepends for the code paths undone after."""
    import mlflow

    with monkeypatch.context() as patch:
        patch.setattr(sys, "path", list(sys.path))
        return mlflow.pyfunc.load_model(uri)


# ---- the stand-in family's network, registered through training ------------------------------
@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    from models.tracking import train

    root = tmp_path_factory.mktemp("mlflow-native")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        data = make_dataset(root / "counts.npz", encoding="board-onehot", manifest_hash="c0ffee")
        outcome = train(data, "stub", {"center": "true"}, register=True)
        # the version as logged, before any test loads it: a load from this local store may
        # write the loading interpreter's caches beside the code it imports, as Python does
        import mlflow

        logged = Path(mlflow.artifacts.download_artifacts("models:/connect4-stub/1"))
        caches = sorted(p.relative_to(logged) for p in logged.rglob("__pycache__"))
        yield root, data, outcome, caches


@pytest.mark.slow
def test_experiments_are_tagged_to_open_on_training_runs(stub):
    from models.tracking import EXPERIMENT_KIND, client, experiment_id

    mlflow_client = client()
    key, kind = EXPERIMENT_KIND
    assert (key, kind) == ("mlflow.experimentKind", "custom_model_development")
    made = mlflow_client.get_experiment(stub[2].experiment_id)
    assert made.name == "connect4" and made.tags[key] == kind
    older = mlflow_client.create_experiment("made-before-the-tag")  # as earlier versions did
    assert key not in mlflow_client.get_experiment(older).tags
    assert experiment_id(mlflow_client, "made-before-the-tag") == older
    assert mlflow_client.get_experiment(older).tags[key] == kind


def test_gridbots_ui_links_each_experiment_in_the_training_view(stub, tmp_path):
    from models.tracking import experiment_links

    links = dict(experiment_links("http://127.0.0.1:5000/"))
    experiment = stub[2].experiment_id
    assert links["connect4"] == (
        f"http://127.0.0.1:5000/#/experiments/{experiment}?workflowType=machine_learning"
    )
    assert "Default" not in links
    missing = tmp_path / "none.db"
    assert experiment_links("http://x", f"sqlite:///{missing}") == [] and not missing.exists()


def test_a_training_run_logs_its_encoded_file_as_an_input(stub):
    from models.tracking import client, file_hash

    _, data, outcome, _ = stub
    inputs = client().get_run(outcome.best.run_id).inputs.dataset_inputs
    assert len(inputs) == 1  # the stand-in's file names no source folder
    found = inputs[0]
    tags = {t.key: t.value for t in found.tags}
    assert tags["mlflow.data.context"] == "training"
    assert found.dataset.name == "counts.npz"
    assert found.dataset.digest == file_hash(data)[:32]
    assert json.loads(found.dataset.source) == {"uri": str(data.resolve())}
    features = json.loads(json.loads(found.dataset.schema)["mlflow_tensorspec"]["features"])
    shapes = {f["name"]: f["tensor-spec"]["shape"] for f in features}
    assert shapes == {"game_id": [-1], "inputs": [-1, 6], "outcome": [-1]}
    profile = json.loads(found.dataset.profile)
    assert profile["hash"] == file_hash(data) and profile["manifest_hash"] == "c0ffee"


def test_a_source_folders_input_says_whether_its_validation_passed(tmp_path):
    from models.run_inputs import source_inputs

    folder, content = tmp_path / "games", "ab" * 32
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"content_hash": content,
                                                      "technique": "selfplay"}))  # fmt: skip
    meta = {"dataset": str(folder), "manifest_hash": content, "table": "positions"}

    def status(**extra) -> str:
        (found,) = source_inputs({**meta, **extra})
        recorded = extra.get("manifest_hash", content)  # what the encoded file names
        assert found.dataset.digest == recorded[:32] and found.dataset.name == "games"
        return {t.key: t.value for t in found.tags}["gridbots.validation"]

    assert status() == "not run"
    assert status(validation="passed") == "passed"  # the caller validated it (PlayerZero)
    (folder / "validation").mkdir()
    (folder / "validation/result.json").write_text(json.dumps({"success": False}))
    assert status() == "failed"
    (folder / "validation/result.json").write_text(json.dumps({"success": True}))
    assert status() == "passed"
    assert status(manifest_hash="cd" * 32) == "changed since encoding"


def test_the_network_is_logged_with_the_providers_that_work_here(stub):
    import mlflow
    import yaml

    from agents.onnx.runtime import providers
    from models.registry import resolve

    version = resolve("connect4-stub", version="1")
    assert version.tags["bot.flavor"] == "python_function"
    network = version.tags["network.model_uri"]
    folder = Path(mlflow.artifacts.download_artifacts(network))
    flavor = yaml.safe_load((folder / "MLmodel").read_text())["flavors"]["onnx"]
    assert flavor["providers"] == list(providers())


@pytest.mark.slow
def test_mlflows_own_loader_prints_no_cuda_errors(stub):
    """Both the registered bot and the network beside it load in a fresh process quietly."""
    from models.registry import resolve

    network = resolve("connect4-stub", version="1").tags["network.model_uri"]
    script = (
        "import sys, mlflow\n"
        "for uri in sys.argv[1:]:\n"
        "    mlflow.pyfunc.load_model(uri)\n"
        "print('loaded')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "models:/connect4-stub/1", network],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "loaded"
    assert "cuda" not in done.stderr.lower(), done.stderr[-2000:]


def test_a_version_carries_its_network_play_spec_and_code_and_no_pickle(stub):
    import mlflow
    import yaml

    folder = Path(mlflow.artifacts.download_artifacts("models:/connect4-stub/1"))
    assert not list(folder.rglob("*.pkl"))  # models from code: MLflow pickles nothing
    flavor = yaml.safe_load((folder / "MLmodel").read_text())["flavors"]["python_function"]
    assert flavor["loader_module"] == "mlflow.pyfunc.loaders.code_model"
    assert flavor["config"] == {"spec": "onnx:{path}", "game": "connect4", "file": "model.onnx",
                                "label": "connect4-stub (onnx)"}  # fmt: skip
    trained = stub[2].best.model_uri  # the network's own ONNX model, as the run logged it
    network = Path(mlflow.artifacts.download_artifacts(trained)) / "model.onnx"
    assert (folder / "artifacts/network/model.onnx").read_bytes() == network.read_bytes()
    assert {p.name for p in (folder / "code").iterdir()} == {"engine", "agents", "features",
                                                             "models"}  # fmt: skip
    assert stub[3] == []  # no interpreter cache logged with the code
    wanted = (folder / "requirements.txt").read_text().split()
    assert any(r.startswith("numba==") for r in wanted)
    assert any(r.startswith("onnxruntime") for r in wanted)
    assert not any("gridbots" in r for r in wanted)


@pytest.mark.slow
def test_a_version_is_a_pyfunc_bot_that_plays_like_the_registry_agent(stub, monkeypatch):
    from agents import make
    from models.registry import resolve

    version = resolve("connect4-stub", version="1")
    assert version.source.startswith("models:/")
    bot = load_pyfunc("models:/connect4-stub/1", monkeypatch)
    inputs = bot.metadata.get_input_schema().input_names()
    assert inputs == ["game", "history", "ms", "seed"]
    histories = positions(12, seed=1)
    table = bot.predict(pd.DataFrame({"game": "connect4", "history": histories}))
    assert list(table.columns) == ["move", "action", "analysis"] and len(table) == 12
    game = load_game("connect4")
    agent = make("registry:connect4-stub/1", game, seed=0)
    for history, row in zip(histories, table.to_dict("records"), strict=True):
        state = game.state_from_history(game.parse_moves(history))
        expected = agent.step(state.clone(), state.current_player())
        assert row["action"] == expected and row["move"] == game.action_to_string(0, expected)
        analysis = json.loads(row["analysis"])
        assert analysis["action"] == expected and analysis["move"] == row["move"]
        assert set(analysis["values"]) <= {game.action_to_string(0, a) for a in range(7)}


def test_a_rows_ms_is_the_time_budget_of_a_bot_that_searches_by_time(stub, monkeypatch):
    bot = load_pyfunc("models:/connect4-stub/1", monkeypatch)
    rows = pd.DataFrame({"game": "connect4", "history": ["4453", "4453"], "ms": [None, 25.0]})
    table = bot.predict(rows)
    assert table["move"].notna().all()
    kept = bot.unwrap_python_model().agents  # one agent per game, budget and seed
    assert sorted((ms, agent.ms) for (_, ms, _), agent in kept.items() if ms) == [(25.0, 25.0)]
    assert [agent.ms for (_, ms, _), agent in kept.items() if ms is None] == [0.0]


def test_the_pyfunc_bot_refuses_bad_positions_with_a_message(stub, monkeypatch):
    from mlflow.exceptions import MlflowException

    bot = load_pyfunc("models:/connect4-stub/1", monkeypatch)
    cases = [
        ({"game": "othello", "history": ""}, "plays connect4, not othello"),
        ({"game": "connect4", "history": "4 4 9"}, "row 0"),
        ({"game": "connect4", "history": "1212121"}, "the game is over"),
    ]
    for row, message in cases:
        with pytest.raises(MlflowException, match=message):
            bot.predict(pd.DataFrame([row]))


def test_the_logged_input_example_is_a_position_with_a_move_to_answer():
    """MLflow checks a version's input example by predicting it: tactics deals first, so its
    example is the deal (most likely outcomes), not the empty history (a chance node)."""
    from models.pyfunc_bot import first_decision

    assert first_decision(load_game("connect4")) == ""
    tactics = load_game("tactics")
    history = first_decision(tactics)
    state = tactics.state_from_history(tactics.parse_moves(history), seed=0)
    assert history and not state.is_chance_node() and state.legal_actions()
    opening = tactics.new_initial_state(seed=0)
    assert opening.is_chance_node()  # the case the example exists for


# ---- a really trained HMM from generated, validated games: MLflow's own commands ------------
CHAIN = [
    ["generate", "connect4", "battle", "--out", "c4-battle", "--games", "40",
     "--agents", "random:guards=win+block,random", "--seed", "3"],
    ["validate", "c4-battle", "--no-docs"],
    ["encode", "c4-battle", "--encoding", "qualitative", "--out", "c4-q.npz"],
    ["train", "connect4", "hmm", "--data", "c4-q.npz", "--register"],
]  # fmt: skip


@pytest.fixture(scope="module")
def hmm(tmp_path_factory):
    from models.tracking import client

    root = tmp_path_factory.mktemp("mlflow-native-hmm")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        for argv in CHAIN:
            assert main(argv) == 0, argv
        client().set_registered_model_alias("connect4-hmm", "production", "1")
        yield root


@pytest.mark.slow
def test_a_trained_run_names_its_encoded_file_and_the_validated_dataset(hmm):
    from features.store import read_manifest
    from models.registry import resolve
    from models.tracking import client, file_hash

    run = client().get_run(resolve("connect4-hmm", version="1").run_id)
    by_context = {}
    for found in run.inputs.dataset_inputs:
        tags = {t.key: t.value for t in found.tags}
        by_context[tags["mlflow.data.context"]] = (found.dataset, tags)
    encoded, _ = by_context["training"]
    assert encoded.name == "c4-q.npz" and encoded.digest == file_hash(hmm / "c4-q.npz")[:32]
    source, tags = by_context["source"]
    content_hash = read_manifest(hmm / "c4-battle")["content_hash"]
    assert source.name == "c4-battle" and source.digest == content_hash[:32]
    assert tags["gridbots.validation"] == "passed"
    assert json.loads(source.source) == {"uri": str((hmm / "c4-battle").resolve())}
    columns = {c["name"]: c["type"] for c in json.loads(source.schema)["mlflow_colspec"]}
    assert columns["outcome"] == "float" and columns["game_id"] == "long"
    assert json.loads(source.profile)["technique"] == "battle"


@pytest.mark.slow
def test_mlflow_models_predict_plays_the_moves_gridbots_move_plays(hmm):
    histories = positions(100, seed=7)
    table = hmm / "positions.json"
    rows = {"columns": ["game", "history"], "data": [["connect4", h] for h in histories]}
    table.write_text(json.dumps({"dataframe_split": rows}))
    out = hmm / "predicted.json"
    predicted = subprocess.run(
        [str(BIN / "mlflow"), "models", "predict", "-m", "models:/connect4-hmm/1", "-i",
         str(table), "-t", "json", "-o", str(out), "--env-manager", "local"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    rows = json.loads(out.read_text())["predictions"]
    moved = subprocess.run(
        [str(BIN / "gridbots"), "move", "connect4", "registry:connect4-hmm/1"],
        input="\n".join(histories) + "\n", capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr[-3000:]
    expected = moved.stdout.split()
    assert len(rows) == len(expected) == 100
    assert [r["move"] for r in rows] == expected
    game = load_game("connect4")
    named = {game.action_to_string(0, a): a for a in range(game.num_actions)}
    assert [r["action"] for r in rows] == [named[m] for m in expected]
    assert all(json.loads(r["analysis"])["extra"]["model"] == "connect4-hmm (hmm-json)"
               for r in rows)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_mlflow_models_serve_answers_a_move_for_a_posted_position(hmm):
    port = _free_port()
    log = (hmm / "serve.log").open("w")
    # an activated venv's PATH: mlflow starts the `uvicorn` installed beside it
    server = subprocess.Popen(
        [
            str(BIN / "mlflow"),
            "models",
            "serve",
            "-m",
            "models:/connect4-hmm@production",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "--env-manager",
            "local",
            "-w",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300  # a hang guard: loading compiles the game's kernels
        while True:
            assert server.poll() is None, (hmm / "serve.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "mlflow models serve never answered /ping"
                time.sleep(1)
        body = {"dataframe_records": [{"game": "connect4", "history": "4453"}]}
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/invocations",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as reply:
            answer = json.loads(reply.read())["predictions"][0]
        moved = subprocess.run(
            [str(BIN / "gridbots"), "move", "connect4", "registry:connect4-hmm@production",
             "--moves", "4453"], capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert answer["move"] == moved.stdout.strip()
        game = load_game("connect4")
        state = game.state_from_history(game.parse_moves("4453"))
        assert answer["action"] in state.legal_actions()
        bad = urllib.request.Request(
            f"http://127.0.0.1:{port}/invocations",
            data=json.dumps({"dataframe_records": [{"game": "othello", "history": ""}]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=60)
        assert refused.value.code == 400
        assert "plays connect4, not othello" in refused.value.read().decode()
    finally:
        with contextlib.suppress(ProcessLookupError):  # the server and its workers, by our PID
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
        log.close()


@pytest.mark.slow
def test_a_td_run_logs_its_self_play_and_registers_a_bot_that_plays(tmp_path, monkeypatch):
    """A run that learned by playing: its input is the self-play setting, its version a bot."""
    from agents import make
    from models import td
    from models.tracking import client, log_played

    with mlflow_sandbox(tmp_path, tmp_path):
        params = {"games": 20, "seed": 1}
        result = td.train("othello", params, tmp_path / "td")
        entry = {"params": result.params, "metrics": result.metrics, "label": "tiny",
                 "artifact": str(result.artifact), "history": result.history}  # fmt: skip
        done = log_played("othello", "othello-td-tiny", "td", "othello", entry)
        inputs = client().get_run(done["run_id"]).inputs.dataset_inputs
        assert [i.dataset.name for i in inputs] == ["othello self-play"]
        assert {t.key: t.value for t in inputs[0].tags}["mlflow.data.context"] == "self-play"
        setting = json.loads(inputs[0].dataset.profile)
        assert (setting["opponent"], setting["games"], setting["seed"]) == ("self", 20, 1)
        bot = load_pyfunc(f"models:/othello-td/{done['version']}", monkeypatch)
        game = load_game("othello")
        histories = ["", game.format_moves(game.new_initial_state().legal_actions()[:1])]
        table = bot.predict(pd.DataFrame({"game": "othello", "history": histories}))
        agent = make(f"registry:othello-td/{done['version']}", game, seed=0)
        for history, action in zip(histories, table["action"], strict=True):
            state = game.state_from_history(game.parse_moves(history))
            assert action == agent.step(state.clone(), state.current_player())


@pytest.mark.slow
def test_an_imported_zoo_bundle_is_a_pyfunc_bot_that_plays_like_its_registry_spec(
    tmp_path, monkeypatch
):
    """The zoo's Connect 4 entry through `gridbots bots export | import` (models.bundle, which
    registers through models.registry.register_run): MLflow's loader plays it as `registry:`."""
    from agents import make

    zoo = Path(__file__).resolve().parents[1] / "zoo/connect4/playerzero"
    with mlflow_sandbox(tmp_path / "registry", tmp_path):
        assert main(["bots", "export", str(zoo), "--out", str(tmp_path / "bundle")]) == 0
        assert main(["bots", "import", str(tmp_path / "bundle"), "--production"]) == 0
        bot = load_pyfunc("models:/connect4-playerzero@production", monkeypatch)
        loader = bot.metadata.flavors["python_function"]["loader_module"]
        assert loader == "mlflow.pyfunc.loaders.code_model"  # models from code: no pickle
        histories = positions(8, seed=3)
        table = bot.predict(pd.DataFrame({"game": "connect4", "history": histories}))
        game = load_game("connect4")
        agent = make("registry:connect4-playerzero@production", game, seed=0)
        for history, row in zip(histories, table.to_dict("records"), strict=True):
            state = game.state_from_history(game.parse_moves(history))
            assert row["action"] == agent.step(state.clone(), state.current_player())
            analysis = json.loads(row["analysis"])  # the network's search or the solver's proof
            assert analysis["policy"] or analysis["extra"].get("proven"), analysis
