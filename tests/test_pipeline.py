"""The pipeline's flows on a tiny Connect 4 profile, in process, with a test Prefect server.

The whole chain runs once (module fixture) against a temporary MLflow store: validated shards,
encodings, an HMM and a value-MLP (ONNX, parity checked) trained as sweeps and registered, the
export played once, a tournament in Parquet, the promotion gate setting `production`, and a
report naming it. Then bad input: params errors name the key and the stage, a dataset that
fails validation stops the chain with the summary, and a failed stage leaves no output.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from optional import require_module

from flows.pipeline import cycle as pipeline
from flows.pipeline.params import ParamsError, check, load

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]


def tiny_params() -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["games"] = ["connect4"]
    params["promote"].update(games=8, baseline="random")
    chain = params["connect4"]
    chain["datasets"] = {
        "randomized": {"seed": 1, "options": {"x": 40, "y": 3, "shard_size": 30}},
        "battle": {"seed": 2, "options": {"x": 8, "y": 2, "shard_size": 4}},
    }
    chain["validation"] = {"sample": 50, "seed": 0}
    chain["encodings"] = {
        "qualitative": {"encoding": "qualitative", "dataset": "battle", "options": {}},
        "board_onehot": {"encoding": "board-onehot", "dataset": "randomized", "options": {}},
    }
    chain["models"] = {
        "hmm": {"family": "hmm", "encoding": "qualitative", "params": {}, "sweep": {}},
        "value_mlp": {
            "family": "value-mlp",
            "encoding": "board_onehot",
            "params": {"epochs": 2, "width": 16},
            "sweep": {"learning_rate": [0.003, 0.01]},
        },
    }
    chain["evaluate"] = {"games": 4, "seed": 0, "opening": 2, "baselines": ["random"]}
    return params


@pytest.fixture(scope="module")
def harness(prefect_api):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_api}):
        yield


@pytest.fixture(scope="module")
def chain(tmp_path_factory, harness):
    root = tmp_path_factory.mktemp("pipeline")
    # a real repository with a lock, so lineage tags have true values to be checked against
    (root / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    for command in (
        ["init", "-q"],
        ["add", "dvc.lock"],
        ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "lock"],
    ):
        subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)  # fmt: skip
    patch = pytest.MonkeyPatch()
    patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
    patch.setenv("MLFLOW_DISABLE_TELEMETRY", "1")
    patch.setenv("GRIDBOTS_MODEL_CACHE", str(root / "cache"))
    patch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    params = tiny_params()
    results = {"generate": {}, "train": {}}
    for technique in params["connect4"]["datasets"]:
        check(params, "generate", "connect4", technique)
        results["generate"][technique] = pipeline.generate_flow(root, params, "connect4", technique)
        pipeline.validate_flow(root, params, "connect4", technique)
    for name in params["connect4"]["encodings"]:
        pipeline.encode_flow(root, params, "connect4", name)
    for name in params["connect4"]["models"]:
        results["train"][name] = pipeline.train_flow(root, params, "connect4", name)
    results["export"] = pipeline.export_flow(root, params, "connect4")
    results["evaluate"] = pipeline.evaluate_flow(root, params, "connect4")
    results["promote"] = pipeline.promote_flow(root, params, "connect4")
    results["report"] = pipeline.report_flow(root, params)
    yield root, params, results
    patch.undo()


def test_shards_are_validated_and_match_a_plain_generate_run(chain, tmp_path):
    from features.store import generate_dataset, read_manifest

    root, params, results = chain
    for technique, outcome in results["generate"].items():
        verdict = json.loads((root / "validation/connect4" / f"{technique}.json").read_text())
        assert verdict["success"] and verdict["content_hash"] == outcome["content_hash"]
        manifest = read_manifest(root / "data/connect4" / technique)
        assert manifest["complete"] and manifest["planned_shards"] == len(manifest["shards"])
    settings = params["connect4"]["datasets"]["battle"]
    plain = generate_dataset(
        tmp_path / "plain", "connect4", "battle", settings["options"], seed=settings["seed"]
    )  # the fanned-out shards are the rows `gridbots generate` writes
    assert plain["content_hash"] == results["generate"]["battle"]["content_hash"]
    assert not list((root / "data/connect4").glob(".*"))  # no scratch folder left


def test_export_reads_the_trained_files_not_the_mlflow_store(chain, tmp_path, monkeypatch):
    """A fresh clone has trained/ from a DVC remote but no mlflow.db: export still works and
    writes the very files the full run exported."""
    root, params, results = chain
    shutil.copytree(root / "trained", tmp_path / "trained")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'empty.db'}")
    exported = pipeline.export_flow(tmp_path, params, "connect4")
    assert [e["file"] for e in exported] == [e["file"] for e in results["export"]]
    for entry in exported:
        mine = tmp_path / "exports/connect4" / entry["name"] / entry["file"]
        theirs = root / "exports/connect4" / entry["name"] / entry["file"]
        assert mine.read_bytes() == theirs.read_bytes()


def test_training_exports_onnx_with_parity_and_tracks_lineage(chain):
    from models.tracking import client, onnx_signature, read_onnx

    root, _, results = chain
    mlp = results["train"]["value_mlp"]
    assert mlp["configurations"] == 2 and mlp["version"] == "1"
    exported = {e["name"]: e for e in results["export"]}
    assert (
        exported["value_mlp"]["kind"] == "onnx" and float(exported["value_mlp"]["parity"]) <= 1e-4
    )
    proto = read_onnx(root / "exports/connect4/value_mlp" / exported["value_mlp"]["file"])
    assert onnx_signature(proto).inputs.input_names() == ["position"]
    assert exported["hmm"]["kind"] == "hmm-json"
    run = client().get_run(mlp["run_id"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert run.data.tags["git.commit"] == head
    lock_digest = hashlib.sha256((root / "dvc.lock").read_bytes()).hexdigest()
    assert run.data.tags["dvc.lock_sha256"] == lock_digest
    assert run.data.tags["gridbots.stage"] == "train-connect4@value_mlp"
    curve = (root / "plots/connect4/value_mlp.csv").read_text().splitlines()
    assert curve[0].startswith("step,") and len(curve) == 3  # header + 2 epochs


def test_tournament_parquet_promotion_and_report(chain):
    root, _, results = chain
    games = pq.read_table(root / "evaluation/connect4/games.parquet").to_pandas()
    # each bot vs random, then bot vs bot: 3 pairings of 4 games
    assert len(games) == 12 and set(games["pairing"]) == {
        "hmm vs random",
        "value_mlp vs random",
        "hmm vs value_mlp",
    }
    families = results["promote"]["families"]
    from models.registry import describe

    for family, info in families.items():
        aliases = describe(info["model"])["aliases"]
        assert info["production"] == aliases.get("production"), family
    promoted = [f for f, info in families.items() if info["production"]]
    assert promoted, families  # at least one family beat the guarded random baseline
    report = results["report"].read_text()
    for family in promoted:
        assert (
            f"**{families[family]['production']}** (`{families[family]['model']}@production`)"
            in report
        )
    assert (
        "| hmm | `random` |" in report and (root / "reports/pipeline/connect4-random.png").is_file()
    )


def test_a_dataset_that_fails_validation_stops_the_chain(chain, tmp_path):

    root, params, _ = chain
    copy = tmp_path / "root"
    shutil.copytree(root / "data", copy / "data")
    shard = next((copy / "data/connect4/battle/games").glob("part-*.parquet"))
    table = pq.read_table(shard)
    column = table.schema.get_field_index("length")
    field = table.schema.field(column)
    lengths = pa.array([999] * table.num_rows, field.type)  # games longer than the board allows
    pq.write_table(table.set_column(column, field, lengths), shard)
    # as a faulty generator would: the bad rows are in the manifest, so only validation sees them
    manifest_path = copy / "data/connect4/battle/manifest.json"
    manifest = json.loads(manifest_path.read_text())
    shard_key = str(int(shard.stem.split("-")[1]))
    manifest["shards"][shard_key]["sha256"]["games"] = hashlib.sha256(
        shard.read_bytes()
    ).hexdigest()
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(pipeline.StageError) as failure:
        pipeline.validate_flow(copy, params, "connect4", "battle")
    assert "FAILED" in str(failure.value) and "validate-connect4@battle" in str(failure.value)
    assert not (copy / "validation/connect4/battle.json").exists()
    with pytest.raises(pipeline.StageError, match="has not passed validation"):
        pipeline.encode_flow(copy, params, "connect4", "qualitative")
    assert not (copy / "encoded/connect4/qualitative.npz").exists()


def test_a_failed_stage_leaves_no_output(chain, tmp_path):
    from features.errors import DataError

    _, params, _ = chain
    bad = json.loads(json.dumps(params))
    bad["connect4"]["datasets"]["battle"]["options"]["w"] = 3.0
    with pytest.raises(DataError):
        pipeline.generate_flow(tmp_path, bad, "connect4", "battle")
    # refused before anything is written: no dataset folder, or an empty one
    games_dir = tmp_path / "data/connect4"
    assert not games_dir.exists() or list(games_dir.iterdir()) == []


def test_params_errors_name_the_key_and_the_stage(tmp_path, capsys):
    from flows.entry import main

    params = tiny_params()
    del params["connect4"]["models"]["hmm"]["family"]
    with pytest.raises(
        ParamsError, match=r"stage train-connect4@hmm: key connect4\.models\.hmm\.family is missing"
    ):
        check(params, "train", "connect4", "hmm")
    params = tiny_params()
    params["connect4"]["evaluate"]["games"] = "many"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    code = main(["stage", "evaluate", "connect4", "--params", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "stage evaluate-connect4: key connect4.evaluate.games must be an integer" in err[0]
    assert check(load(REPO / "params.yaml"), "train", "connect4", "lstm_mse")
    full = load(REPO / "params-full.yaml")
    for game in full["games"]:
        for technique in full[game].get("datasets", {}):
            check(full, "generate", game, technique)
        for name in full[game].get("models", {}):
            check(full, "train", game, name)
    check(full, "study", "othello")  # study 002 (its TD networks are othello.models entries)
    old = {**full, "othello": {**full["othello"], "td": {"long": {"runs": {}}}}}
    with pytest.raises(ParamsError, match=r"^othello\.td moved: td\.base and td\.study are "):
        check(old, "train", "othello", "td")  # a profile from before issue 68: one line


def test_serve_registers_the_cycle_with_the_cron_of_params():
    from flows.pipeline.cycle import deployment

    built = deployment(load(REPO / "params.yaml"))
    assert built.name == "improvement-cycle"
    assert built.schedules[0].schedule.cron == "0 3 * * *"


def test_dask_cluster_gives_the_rows_of_a_local_run(chain, tmp_path):
    require_module("prefect_dask", "the dask extra: pip install -c constraints.txt -e '.[dask]'")

    from distributed import LocalCluster

    root, params, _ = chain
    shutil.copytree(root / "exports", tmp_path / "exports")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        address = cluster.scheduler_address
        remote = pipeline.generate_flow(tmp_path, params, "connect4", "randomized", dask=address)
        pipeline.evaluate_flow(tmp_path, params, "connect4", dask=address)
    local = json.loads((root / "validation/connect4/randomized.json").read_text())
    assert remote["content_hash"] == local["content_hash"]
    columns = ["pairing", "game", "history", "score_a"]
    here = pq.read_table(root / "evaluation/connect4/games.parquet", columns=columns)
    there = pq.read_table(tmp_path / "evaluation/connect4/games.parquet", columns=columns)
    assert here.to_pylist() == there.to_pylist()


def test_tournament_in_local_processes_gives_the_rows_of_the_threads(chain, tmp_path, monkeypatch):
    """Without a cluster a large tournament plays its pairings in spawned processes (threads
    share the GIL): the same rows as the threaded run of the module's chain."""
    import concurrent.futures

    from flows.pipeline import stage_io

    submitted: list[str] = []

    class Recording(concurrent.futures.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            submitted.append(fn.__name__)
            return super().submit(fn, *args, **kwargs)

    root, params, _ = chain
    shutil.copytree(root / "exports", tmp_path / "exports")
    monkeypatch.setattr(stage_io, "MIN_POOL_GAMES", 1)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Recording)
    pipeline.evaluate_flow(tmp_path, params, "connect4")
    assert submitted and set(submitted) == {"play_job"} and stage_io._LOCAL_POOL is None
    columns = ["pairing", "game", "history", "score_a"]
    here = pq.read_table(root / "evaluation/connect4/games.parquet", columns=columns)
    there = pq.read_table(tmp_path / "evaluation/connect4/games.parquet", columns=columns)
    assert here.to_pylist() == there.to_pylist()


def test_a_failed_tournament_resumes_with_the_pairings_it_finished(chain, tmp_path, monkeypatch):
    """A tournament stopped by a failing pairing keeps the pairings before it; the rerun plays
    only the others and writes the rows and standings of the module's uninterrupted run, then
    drops its checkpoints. A changed model file makes its pairings play again."""
    import models.arena

    root, params, _ = chain
    params = {**params, "workers": 1}  # pairings one after another: the third one fails
    shutil.copytree(root / "exports", tmp_path / "exports")
    real = models.arena.play_pairing
    played: list[str] = []

    def failing_third(game, a, b, config, make_seat):
        if len(set(played)) == 2 and (a, b) not in {tuple(p.split(" | ")) for p in played}:
            raise RuntimeError("killed")
        played.append(f"{a} | {b}")
        return real(game, a, b, config, make_seat=make_seat)

    monkeypatch.setattr(models.arena, "play_pairing", failing_third)
    with pytest.raises(Exception, match="killed"):
        pipeline.evaluate_flow(tmp_path, params, "connect4")
    kept = tmp_path / "checkpoints" / "connect4" / "evaluate"
    assert len(list(kept.glob("*.json"))) == 2 and not (tmp_path / "evaluation").exists()
    finished = set(played)

    played.clear()
    monkeypatch.setattr(models.arena, "play_pairing", lambda *a, make_seat: (
        played.append(f"{a[1]} | {a[2]}") or real(*a, make_seat=make_seat)))  # fmt: skip
    summary = pipeline.evaluate_flow(tmp_path, params, "connect4")
    assert played and not finished & set(played)  # only the pairings the first run left
    assert len(finished) + len(played) == len(summary["pairings"])
    here = pq.read_table(root / "evaluation/connect4/games.parquet")
    there = pq.read_table(tmp_path / "evaluation/connect4/games.parquet")
    assert here.column_names == there.column_names  # every column, in the same order
    assert here.to_pylist() == there.to_pylist()  # the clock's figures are in a metrics file
    ours = json.loads((tmp_path / "evaluation/connect4/summary.json").read_text())
    theirs = json.loads((root / "evaluation/connect4/summary.json").read_text())
    assert [s["score"] for s in ours["standings"]] == [s["score"] for s in theirs["standings"]]
    assert not kept.exists()

    first = min(p for p in (tmp_path / "exports" / "connect4").iterdir() if p.is_dir())
    (first / "changed").write_text("x")
    from flows.pipeline.stages.evaluate import bot_specs, files_digest, pairing_digest

    specs = bot_specs(tmp_path, "connect4")
    job = {"game": "connect4", "a": specs[first.name], "b": "random", "games": 4}

    def digest() -> str:
        return pairing_digest(job, {specs[first.name]: files_digest(first)})

    before = digest()
    (first / "changed").write_text("y")
    assert digest() != before


def test_a_training_stage_and_a_registry_move_print_nothing_on_stderr(chain):
    """Quiet by default (engine.noise): a training stage (TensorFlow on a CPU-only machine,
    Prefect, MLflow) run as dvc runs it, then a move by the model it registered."""
    import os
    import sys

    from prefect.settings import PREFECT_API_URL

    root, params, _ = chain
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "COLUMNS")}
    env.update(PYTHONPATH=str(REPO), PREFECT_API_URL=str(PREFECT_API_URL.value()))

    def gridbots(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *args], cwd=root, env=env,
            capture_output=True, text=True, timeout=1200,
        )  # fmt: skip

    trained = gridbots("stage", "train", "connect4", "value_mlp")
    assert trained.returncode == 0 and trained.stderr == "", trained.stderr[-3000:]
    version = trained.stdout.split("version ")[1].split(",")[0]
    bot = f"registry:connect4-value-mlp/{version}"
    moved = gridbots("move", "connect4", bot, "--moves", "4453")
    assert moved.returncode == 0 and moved.stderr == "", moved.stderr[-3000:]
    assert moved.stdout.strip() in list("1234567")


def test_the_readme_where_and_match_commands_on_the_pipelines_outputs(chain, capsys, monkeypatch):
    """The README's first screen after `make demo` (test_readme.FIRST_SCREEN), on this chain's
    outputs; the match with 2 games instead of 20."""
    from test_readme import FIRST_SCREEN

    from flows.entry import main

    root, params, results = chain
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(root)
    assert main(FIRST_SCREEN[2].split()[1:]) == 0  # gridbots where
    out = capsys.readouterr().out
    assert "connect4 tournament" in out and "reports/pipeline/README.md" in out and "make ui" in out
    assert results["promote"]["families"]["value-mlp"]["production"]
    match = FIRST_SCREEN[4].replace("--games 20", "--games 2").split()[1:]
    assert main(match) == 0
    out = capsys.readouterr().out
    assert "registry:connect4-value-mlp/1" in out and "W/D/L" in out


def test_the_web_leaderboard_reads_the_chains_tournament(chain):
    """`gridbots web`'s leaderboard on this chain's outputs: each registered version the
    evaluate stage played (labelled by export name in evaluation/connect4/summary.json) gets its
    standing, score and Elo with intervals exactly as the tournament wrote them."""
    from fastapi.testclient import TestClient

    from flows.web.app import create_app

    root, _, results = chain
    summary = json.loads((root / "evaluation/connect4/summary.json").read_text())
    with TestClient(create_app(root=root)) as client:
        board = client.get("/api/leaderboard").json()
    (table,) = board["tournaments"]
    assert [row["label"] for row in table["standings"]] == [r["spec"] for r in summary["standings"]]
    exported = {e["name"]: e for e in results["export"]}
    models = {m["name"]: m for m in board["models"]}
    for label, family in (("hmm", "hmm"), ("value_mlp", "value-mlp")):
        versions = {v["version"]: v for v in models[f"connect4-{family}"]["versions"]}
        standing = versions[str(exported[label]["version"])]["tournament"]
        written = next(row for row in summary["standings"] if row["spec"] == label)
        assert standing["label"] == label and standing["of"] == 3
        for key in ("games", "wins", "draws", "losses", "score", "score_low", "score_high"):
            assert standing[key] == written[key], (label, key)
        assert standing["elo"] == written["elo"] and standing["games"] == 8  # 2 pairings x 4
        assert {p["opponent"] for p in standing["pairings"]} == {"random", *exported} - {label}
    random_row = next(row for row in table["standings"] if row["label"] == "random")
    assert random_row["model"] is None
