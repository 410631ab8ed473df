"""A real cluster of separate processes (Prefect server, MLflow server, Dask scheduler, two
workers; loopback, free ports) started by `gridbots cluster up` once for the module and torn
down by PID: generation on it matches a one-process run shard for shard, its tasks are in the
one Prefect server, a worker killed with SIGKILL mid-stage costs nothing, a late worker gets
work, a sweep's configurations, a PlayerZero generation's self-play shards and arena pairs, a
TD grid's configurations and a NEAT case's seeds are cluster tasks with the results of a
one-process run, and `down` leaves no process behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cluster import local as cluster

pytestmark = pytest.mark.slow  # a real cluster of processes
REPO = Path(__file__).resolve().parents[1]
#: slow enough per shard (MCTS self-play, one game a shard) that a kill lands mid-task
SELFPLAY = {"x": 6, "shard_size": 1, "agent": "mcts:sims=30000"}
#: one dataset per test (the stage's output is data/connect4/selfplay; seeds tell them apart)
DATASETS = {
    "calm": {"seed": 11, "options": SELFPLAY},
    "killed": {"seed": 12, "options": SELFPLAY},
    "late": {"seed": 13, "options": {**SELFPLAY, "agent": "mcts:sims=2000"}},
}


def _params(root: Path, name: str) -> str:
    """A params file whose connect4 `selfplay` dataset is DATASETS[name] (JSON is YAML)."""
    params = {
        "games": ["connect4"],
        "workers": 1,
        "dask": {"address": ""},
        "connect4": {"spec": "connect4", "datasets": {"selfplay": DATASETS[name]}},
    }
    path = root / f"params-{name}.yaml"
    path.write_text(json.dumps(params))
    return str(path)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in cluster.CLIENT_ENV_KEYS}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return {**env, **(extra or {})}


def _gridbots(*args: str, cwd: Path, env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _run(*args: str, cwd: Path, env: dict[str, str], timeout: float = 300):
    process = _gridbots(*args, cwd=cwd, env=env)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def _reference(root: Path, name: str) -> str:
    """The dataset's content hash from one process (no Prefect, no Dask)."""
    from features import store

    settings = DATASETS[name]
    manifest = store.generate_dataset(
        root / "reference" / name, "connect4", "selfplay", settings["options"], settings["seed"]
    )
    return manifest["content_hash"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster-root")
    state_dir = root / ".cluster"
    code, _out, err = _run(
        "cluster", "up", "--workers", "2", "--state-dir", str(state_dir), "--data-root",
        str(root), "--no-nanny", cwd=root, env=_env(), timeout=400,
    )  # fmt: skip
    try:
        assert code == 0, err
        state = cluster.read_state(state_dir)
        yield root, state_dir, state
    finally:
        if cluster.state_path(state_dir).is_file():
            cluster.down(state_dir)


def _stage_env(state: dict) -> dict[str, str]:
    return _env(cluster.client_env(state))


def _task_runs(api: str, name: str) -> list[dict]:
    import urllib.request

    request = urllib.request.Request(
        f"{api}/task_runs/filter",
        data=json.dumps({"task_runs": {"name": {"like_": name}}, "limit": 200}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _generate(root: Path, profile: str, state: dict, wait: bool = True):
    """`gridbots stage generate connect4 selfplay` with a profile's params, on the cluster:
    (code, stdout, stderr) when `wait`, else the running process."""
    args = ("stage", "generate", "connect4", "selfplay", "--params", _params(root, profile))
    if not wait:
        return _gridbots(*args, cwd=root, env=_stage_env(state))
    return _run(*args, cwd=root, env=_stage_env(state))


def _manifest(root: Path, name: str) -> dict:
    return json.loads((root / "data" / "connect4" / name / "manifest.json").read_text())


def _makers(root: Path, name: str) -> set[int]:
    """The pids that made the stage's shards (its metrics file: the dataset holds none)."""
    run = json.loads((root / "metrics" / "connect4" / f"generate-{name}.json").read_text())
    return {int(s["worker"].rpartition(":")[2]) for s in run["shards"].values()}


def test_generation_on_the_cluster_matches_one_process(live):
    root, _state_dir, state = live
    code, _out, err = _generate(root, "calm", state)
    assert code == 0, err
    manifest = _manifest(root, "selfplay")
    assert manifest["content_hash"] == _reference(root, "calm")
    pids = {e["name"]: e["pgid"] for e in state["processes"] if e["role"] == "worker"}
    makers = _makers(root, "selfplay")
    assert {_group(pid) for pid in makers} <= set(pids.values())  # made by the workers
    # every shard's task run is in the cluster's one Prefect server, completed
    runs = _task_runs(state["prefect_api_url"], "run_shard")
    assert len(runs) == manifest["planned_shards"]
    assert {r["state_type"] for r in runs} == {"COMPLETED"}
    # no worker started a Prefect server of its own
    for entry in state["processes"]:
        if entry["role"] == "worker":
            log = Path(entry["log"]).read_text()
            assert "database is locked" not in log
            for pid in cluster.group_members(entry["pgid"]):
                import psutil

                assert "server" not in " ".join(psutil.Process(pid).cmdline())


def test_stage_refuses_a_dask_address_without_prefect(live):
    root, _state_dir, state = live
    code, _out, err = _run(
        "stage", "generate", "connect4", "selfplay", "--params", _params(root, "calm"),
        "--dask-address", state["scheduler"],
        cwd=root, env=_env({"PREFECT_API_URL": ""}),
    )  # fmt: skip
    assert code == 2
    assert err.strip().count("\n") == 0 and "gridbots cluster up" in err


def test_a_worker_killed_mid_stage_costs_nothing_and_a_late_worker_gets_work(live):
    root, state_dir, state = live
    from distributed import Client

    stage = _generate(root, "killed", state, wait=False)
    victim = next(e for e in state["processes"] if e["name"] == "worker-0")
    with Client(state["scheduler"], timeout=10, set_as_default=False) as client:
        address = cluster.scheduler_workers(state["scheduler"])["worker-0"]
        deadline = time.time() + 240
        while not client.processing().get(address) and time.time() < deadline:
            assert stage.poll() is None, stage.stderr.read()
            time.sleep(0.1)
        assert client.processing().get(address), "worker-0 never got a shard"
        os.killpg(victim["pgid"], signal.SIGKILL)  # a machine lost mid-task
    _out, err = stage.communicate(timeout=300)
    assert stage.returncode == 0, err
    manifest = _manifest(root, "selfplay")
    assert manifest["complete"]
    assert sorted(manifest["shards"], key=int) == [str(k) for k in range(6)]
    assert manifest["content_hash"] == _reference(root, "killed")
    folder = root / "data" / "connect4" / "selfplay"
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]  # no half shard
    for table in ("games", "sequences", "positions"):
        assert len(list((folder / table).glob("*.parquet"))) == 6
    report = cluster.status(state_dir)
    assert {r["name"]: r["alive"] for r in report["processes"]}["worker-0"] is False
    # a worker that joins late takes its share of the next stage
    code, _out, err = _run("cluster", "add", "--state-dir", str(state_dir), cwd=root, env=_env())
    assert code == 0, err
    late = cluster.read_state(state_dir)["processes"][-1]
    code, _out, err = _generate(root, "late", state)
    assert code == 0, err
    makers = _makers(root, "selfplay")
    assert late["pgid"] in {_group(pid) for pid in makers}


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:  # the killed worker's
        return None


ALPHAS = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]  # six HMM configurations


def _sweep_params(root: Path) -> str:
    params = {
        "games": ["connect4"],
        "mlflow": {"tracking_uri": "sqlite:///unused.db"},  # the cluster's server wins
        "connect4": {
            "spec": "connect4",
            "models": {
                "hmm": {"family": "hmm", "encoding": "qualitative", "params": {},
                        "sweep": {"alpha": ALPHAS}},
            },
        },
    }  # fmt: skip
    path = root / "params-sweep.yaml"
    path.write_text(json.dumps(params))
    return str(path)


def test_a_sweep_is_cluster_tasks_and_a_worker_killed_mid_run_leaves_no_run_running(live):
    root, _state_dir, state = live
    from mlflow import MlflowClient

    from flows.entry import main

    battle, encoded = root / "battle", root / "encoded/connect4/qualitative.npz"
    assert main(["generate", "connect4", "battle", "--out", str(battle), "--games", "30",
                 "--agents", "random:guards=win+block,random", "--seed", "3"]) == 0  # fmt: skip
    assert main(["encode", str(battle), "--encoding", "qualitative", "--out", str(encoded)]) == 0
    stage = _gridbots(
        "stage", "train", "connect4", "hmm", "--params", _sweep_params(root),
        cwd=root, env=_stage_env(state),
    )  # fmt: skip
    client = MlflowClient(state["mlflow_uri"])
    victim = None
    deadline = time.time() + 300
    while victim is None and time.time() < deadline:
        assert stage.poll() is None, stage.stderr.read()
        experiment = client.get_experiment_by_name("connect4")
        running = experiment and client.search_runs(
            [experiment.experiment_id],
            "attributes.status = 'RUNNING' and tags.`gridbots.worker` LIKE '%'",
        )
        for run in running or []:
            pid = int(run.data.tags["gridbots.worker"].rpartition(":")[2])
            if _group(pid) is not None:
                os.killpg(_group(pid), signal.SIGKILL)  # its worker, mid-run
                victim = run.info.run_id
                break
        time.sleep(0.05)
    assert victim, "no configuration was seen running"
    _out, err = stage.communicate(timeout=300)
    assert stage.returncode == 0, err
    runs = client.search_runs([client.get_experiment_by_name("connect4").experiment_id])
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    finished = [r for r in children if r.info.status == "FINISHED"]
    assert sorted(float(r.data.params["alpha"]) for r in finished) == ALPHAS  # each once
    assert not [r for r in runs if r.info.status == "RUNNING"]
    assert client.get_run(victim).info.status == "KILLED"  # closed by the retry
    assert len({r.data.tags["mlflow.parentRunId"] for r in children}) == 1
    run_json = json.loads((root / "trained/connect4/hmm/run.json").read_text())
    assert run_json["configurations"] == len(ALPHAS)


#: generation 1 of a toy PlayerZero loop: PUCT self-play with a network given by path (one
#: that knows nothing, agents.puct.pv_net.write_uniform_network) and its arena against plain MCTS
PLAYERZERO = {
    "spec": "connect4", "seed": 0, "workers": 1, "networks": [1],
    "first": {"agent": "mcts:sims=30", "games": 8, "shard_size": 4},
    "selfplay": {"games": 8, "shard_size": 4, "sims": 8, "c": 1.5, "fpu": 0.25, "parallel": 4,
                 "temperature_plies": 4, "alpha": 1.0, "eps": 0.25},
    "arena": {"games": 6, "sims": 8, "opening": 2, "elo1": 40, "min_games": 2},
    "solved": str(REPO / "agents" / "data" / "connect4_solved_positions.txt"),
    "evaluate": {"sims": 8, "positions": 24, "chunk": 10},  # PUCT's rate: three cluster tasks
}  # fmt: skip
#: the stage's own steps (pipeline/stages/playerzero.py, models/playerzero_loop.py) in a flow run
#: like the stage's: on the cluster's task runner when the environment names the cluster
PLAYERZERO_FLOW = """
import json, sys
from pathlib import Path
from prefect import flow
from engine import parse_game_spec
from flows.pipeline.stage_io import fan_out, run_flow
from flows.pipeline.stages.playerzero import self_play_task
from features import store
from models import playerzero_loop as loop

made = []  # the runs' records (workers): the dataset folder holds none
generate_dataset = store.generate_dataset
store.generate_dataset = lambda *args, **kw: made.append(generate_dataset(*args, **kw)) or made[-1]

@flow(name="playerzero-generation")
def generation(home, settings, state, candidate, on_cluster=False):
    selfplay = self_play_task(Path(home), settings["spec"], settings, state, 1, on_cluster)
    fought = loop.arena(Path(home), 1, parse_game_spec(settings["spec"]), candidate, settings,
                        state, mapper=fan_out if on_cluster else None)
    rates = loop.evaluate(Path(home), 1, parse_game_spec(settings["spec"]), candidate["model"],
                          settings, mapper=fan_out if on_cluster else None)
    return {"selfplay": selfplay, "arena": fought, "evaluation": rates}

result = run_flow(generation, {}, None, *json.loads(sys.argv[1]))
result["shards"] = made[0]["run"]["shards"] if made else {}
print(json.dumps(result))
"""


def test_a_playerzero_generation_is_cluster_tasks_with_the_results_of_one_process(live):
    root, state_dir, state = live
    from agents.puct.pv_net import write_uniform_network
    from engine import parse_game_spec
    from models import playerzero_loop as loop

    home = root / "playerzero" / "connect4"
    home.mkdir(parents=True)
    write_uniform_network(parse_game_spec("connect4"), home / "uniform.onnx")
    pz = loop.new_state(PLAYERZERO)
    pz["player"] = {"path": "uniform.onnx", "scale": 1}  # by path: in the shared data root
    candidate = {"model": "uniform.onnx", "scale": 1}  # vs first.agent: no best network yet
    here = {  # one process, no Prefect, no Dask
        "selfplay": loop.self_play(home, "connect4", PLAYERZERO, pz, 1),
        "arena": loop.arena(home, 1, parse_game_spec("connect4"), candidate, PLAYERZERO, pz),
        "evaluation": loop.evaluate(
            home, 1, parse_game_spec("connect4"), "uniform.onnx", PLAYERZERO
        ),
    }
    shutil.rmtree(loop.gen_dir(home, 1))  # the same folder again: the same agent specs
    names = ("run_shard", "play_job", "choose_moves")
    before = {n: len(_task_runs(state["prefect_api_url"], n)) for n in names}
    code, out, err = _run_python(PLAYERZERO_FLOW, json.dumps([str(home), PLAYERZERO, pz,
                                 candidate]), cwd=root, env=_stage_env(state))  # fmt: skip
    assert code == 0, err
    there = json.loads(out.strip().splitlines()[-1])
    for key in ("games", "positions", "content_hash", "agent"):
        assert there["selfplay"][key] == here["selfplay"][key]
    assert there["arena"] == here["arena"]  # the sequential test stopped at the same pair
    for rate in ("policy", "puct"):  # the solved-position rates, PUCT's from three tasks
        assert _timeless(there["evaluation"][rate]) == _timeless(here["evaluation"][rate])
    assert there["evaluation"]["puct"]["positions"] == 24
    manifest = json.loads((loop.gen_dir(home, 1) / "data" / "manifest.json").read_text())
    workers = {e["pgid"] for e in cluster.read_state(state_dir)["processes"]
               if e["role"] == "worker"}  # fmt: skip
    assert len(there["shards"]) == manifest["planned_shards"]
    makers = {_group(int(s["worker"].rpartition(":")[2])) for s in there["shards"].values()}
    assert makers <= workers  # the shards were made by the cluster's workers
    after = {n: _task_runs(state["prefect_api_url"], n) for n in names}
    assert len(after["run_shard"]) - before["run_shard"] == manifest["planned_shards"] == 2
    assert len(after["play_job"]) > before["play_job"]  # arena pairs, in the one server
    assert len(after["choose_moves"]) - before["choose_moves"] == 3
    assert {r["state_type"] for n in names for r in after[n]} == {"COMPLETED"}


#: a TD grid of two configurations at toy size (othello, study 002): a td model's sweep
TD_PARAMS = {
    "rule": "q",
    "activation": "sigmoid",
    "selection": "egreedy",
    "hidden": 4,
    "learning_rate": 0.2,
    "random_factor": 0.3,
    "games": 20,
    "seed": 5,
    "curve_games": 2,
    "curve_opponents": ["alphabeta:depth=1,results=flat", "random"],
}
TD_SWEEP = {"hidden": [4, 6]}  # fmt: skip


def _timeless(row: dict) -> dict:
    timed = ("seconds" in k or "ms_per_move" in k or k.endswith("per_s") for k in row)
    return {k: v for (k, v), drop in zip(row.items(), timed, strict=True) if not drop}


def test_td_configurations_are_cluster_tasks_with_the_results_of_one_process(live):
    """A td model's sweep (the grid the study skipped) through the generic train stage: each
    configuration a cluster task (models.tracking.train_config) with what one process trains."""
    root, _state_dir, state = live
    from mlflow import MlflowClient

    from models.td import learn
    from models.tracking import finite

    here = {}  # each configuration trained and measured in this process (no Prefect, no Dask)
    for hidden in TD_SWEEP["hidden"]:
        result = learn(
            "othello", {**TD_PARAMS, "hidden": hidden}, root / "td-reference" / str(hidden)
        )
        here[f"hidden={hidden}"] = (_timeless(result.metrics), result.artifact.read_bytes())
    fixed = {k: v for k, v in TD_PARAMS.items() if k not in TD_SWEEP}  # the sweep sets hidden
    params = {"games": ["othello"], "workers": 1, "mlflow": {"tracking_uri": "sqlite:///x.db"},
              "othello": {"spec": "othello", "models": {"td": {
                  "family": "td", "sweep": TD_SWEEP, "params": fixed}}}}  # fmt: skip
    (root / "params-td.yaml").write_text(json.dumps(params))
    before = {r["id"] for r in _task_runs(state["prefect_api_url"], "train_config")}
    args = ("stage", "train", "othello", "td", "--params", str(root / "params-td.yaml"))
    code, _out, err = _run(*args, cwd=root, env=_stage_env(state))
    assert code == 0, err
    run = json.loads((root / "trained" / "othello" / "td" / "run.json").read_text())
    there = {c["label"]: c["metrics"] for c in run["sweep"]}
    assert there == {label: finite(metrics) for label, (metrics, _) in here.items()}
    kept = (root / "trained" / "othello" / "td" / "model.onnx").read_bytes()
    assert kept == here[run["best"]][1]
    runs = [r for r in _task_runs(state["prefect_api_url"], "train_config")
            if r["id"] not in before]  # fmt: skip
    assert len(runs) == len(here) and {r["state_type"] for r in runs} == {"COMPLETED"}
    client = MlflowClient(state["mlflow_uri"])
    found = client.search_runs([client.get_experiment_by_name("othello").experiment_id])
    assert sorted(r.info.run_name for r in found) == ["hidden=4", "hidden=6", "othello-td-sweep"]
    assert {r.info.status for r in found} == {"FINISHED"}


#: a NEAT training case of two seeds at toy size (the territory chain, study 003)
NEAT_CASE = {"case": "against-red", "seeds": [0, 1],
             "params": {"generations": 2, "config": {"NEAT": {"pop_size": 16}}}}  # fmt: skip


def test_neat_seeds_are_cluster_tasks_with_the_results_of_one_process(live):
    """A NEAT case trains through the generic train stage: its seeds are a sweep, each seed a
    cluster task (models.tracking.train_config) with what one process trains."""
    root, _state_dir, state = live
    from mlflow import MlflowClient

    from models.neat_track import timeless
    from models.neat_train import Trainer

    here = {}  # each seed trained in this process first (no Prefect, no Dask)
    for seed in NEAT_CASE["seeds"]:
        settings = {"workers": 1, **NEAT_CASE["params"], "seed": seed}
        here[seed] = Trainer(NEAT_CASE["case"], settings, root / "neat-reference" / str(seed)).run()
    params = {"games": ["territory"], "workers": 1, "mlflow": {"tracking_uri": "sqlite:///x.db"},
              "territory": {"spec": "territory",
                            "models": {"tiny": {"family": "neat", **NEAT_CASE}}}}  # fmt: skip
    (root / "params-neat.yaml").write_text(json.dumps(params))
    before = {r["id"] for r in _task_runs(state["prefect_api_url"], "train_config")}
    args = ("stage", "train", "territory", "tiny", "--params", str(root / "params-neat.yaml"))
    code, _out, err = _run(*args, cwd=root, env=_stage_env(state))
    assert code == 0, err
    trained = root / "trained" / "territory" / "tiny"
    run = json.loads((trained / "run.json").read_text())
    assert sorted(c["params"]["seed"] for c in run["sweep"]) == sorted(here)
    for config in run["sweep"]:
        rows = timeless(here[config["params"]["seed"]].history)
        assert config["history"] == {k: [float(r[k]) for r in rows] for k in rows[0]}
    champion = json.loads((trained / "champion.json").read_text())
    assert champion == json.loads(json.dumps(here[run["params"]["seed"]].champion))
    runs = [r for r in _task_runs(state["prefect_api_url"], "train_config")
            if r["id"] not in before]  # fmt: skip
    assert len(runs) == 2 and {r["state_type"] for r in runs} == {"COMPLETED"}
    client = MlflowClient(state["mlflow_uri"])
    found = client.search_runs([client.get_experiment_by_name("territory").experiment_id])
    assert sorted(r.info.run_name for r in found) == ["seed=0", "seed=1", "territory-neat-sweep"]
    assert {r.info.status for r in found} == {"FINISHED"}


def test_repro_cluster_runs_a_dvc_stage_with_its_fan_out_on_the_workers(live):
    """`gridbots repro --cluster TARGET` in a repository whose root is the cluster's data root:
    dvc runs the stage with the cluster's addresses, so its shards are the workers' tasks in the
    one Prefect server, and dvc.lock records the stage."""
    from tests.test_dvc_repro import BIN, copy_repo, git, tiny_profile

    root, state_dir, state = live
    copy_repo(root)
    (root / "params.yaml").write_text(json.dumps(tiny_profile()))
    for args in (
        ["init", "-q"],
        ["config", "user.email", "t@example.invalid"],
        ["config", "user.name", "t"],
        ["add", "-A"],
        ["commit", "-q", "-m", "tiny"],
    ):
        git(root, *args)
    before = len(_task_runs(state["prefect_api_url"], "run_shard"))
    env = _env({"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "DVC_NO_ANALYTICS": "1"})
    target = "generate-connect4@randomized"
    code, out, err = _run("repro", "--cluster", "--state-dir", str(state_dir), target,
                          cwd=root, env=env, timeout=600)  # fmt: skip
    assert code == 0, out[-3000:] + err[-3000:]
    assert f"Running stage '{target}'" in out
    manifest = _manifest(root, "randomized")
    assert manifest["complete"] and manifest["planned_shards"] >= 1
    workers = {
        e["pgid"] for e in cluster.read_state(state_dir)["processes"] if e["role"] == "worker"
    }
    assert {_group(pid) for pid in _makers(root, "randomized")} <= workers
    assert (
        len(_task_runs(state["prefect_api_url"], "run_shard")) - before
        == manifest["planned_shards"]
    )
    lock = (root / "dvc.lock").read_text()
    assert target in lock and "validate-connect4" not in lock
    # the same stage forced to run again on threads (no cluster): the same bytes, so the same
    # DVC hash (the folder holds no worker ids or timings; issue 68)
    made_there = _data_hash(root, target)
    shutil.rmtree(root / "data" / "connect4" / "randomized")  # all of it again, not a resume
    local = {**env, "PREFECT_API_URL": state["prefect_api_url"]}  # its server, not its workers
    done = subprocess.run([str(BIN / "dvc"), "repro", "--force", "--single-item", target],
                          cwd=root, env=local, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"Running stage '{target}'" in done.stdout
    assert _data_hash(root, target) == made_there
    here = _makers(root, "randomized")  # this time made in the stage's own process
    assert here and not {_group(pid) for pid in here} & workers


def _data_hash(root: Path, stage: str) -> str:
    import yaml

    outs = yaml.safe_load((root / "dvc.lock").read_text())["stages"][stage]["outs"]
    return next(o["md5"] for o in outs if o["path"].startswith("data/"))


def _run_python(script: str, *args: str, cwd: Path, env: dict[str, str]):
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_down_leaves_no_process(live):
    root, state_dir, state = live
    groups = [e["pgid"] for e in cluster.read_state(state_dir)["processes"]]
    code, _out, err = _run("cluster", "down", "--state-dir", str(state_dir), cwd=root, env=_env())
    assert code == 0, err
    assert not [g for g in groups if cluster.group_members(g)]
    assert not cluster.state_path(state_dir).exists()
    for address in (state["scheduler"], state["mlflow_uri"], state["prefect_api_url"]):
        port = address.rsplit(":", 1)[1].split("/")[0]
        assert not cluster.tcp_ok(f"tcp://127.0.0.1:{port}", timeout=1)
