"""The tiny profile's `dvc repro` on a copy of a worktree, as tests/test_dvc_repro.py's `repo`
fixture runs it (its tiny_profile() params, its environment, one Prefect server, a warm stage
host), with the worktree's own code: run it with PYTHONPATH=WORKTREE from WORKTREE.

    cd WORKTREE && PYTHONPATH=$PWD NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 \\
        /work/main/.venv/bin/python repro_tiny.py WORKTREE OUT

OUT/repo is the copy, OUT/dvc.lock its lock, OUT/repro.log dvc's output. For code older than
flows/entry.py (7f7600d), SHIM names a folder with a `gridbots` script that runs flows.cli:main
(the installed script runs flows.entry:main since issue 68).
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml

worktree, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
assert os.environ.get("PYTHONPATH") == str(worktree)
sys.path[:0] = [str(worktree), str(worktree / "tests")]
t = importlib.import_module("test_dvc_repro")
assert Path(t.__file__).resolve().parent.parent == worktree, t.__file__
stage_host = importlib.import_module(t.start_host.__module__)
assert Path(stage_host.__file__).resolve().is_relative_to(worktree), stage_host.__file__
noise = importlib.import_module("engine.noise")
server_module = importlib.import_module("prefect.server.api.server")
settings = importlib.import_module("prefect.settings")

out.mkdir(parents=True, exist_ok=True)
root = out / "repo"
root.mkdir()
t.copy_repo(root, source=worktree)
(root / "params.yaml").write_text(yaml.safe_dump(t.tiny_profile(), sort_keys=False))
t.git(root, "init", "-q")
t.git(root, "config", "user.email", "test@example.invalid")
t.git(root, "config", "user.name", "test")
if not (root / ".dvc").is_dir():
    subprocess.run([t.BIN / "dvc", "init", "-q"], cwd=root, check=True)
t.git(root, "add", "-A")
t.git(root, "commit", "-q", "-m", "tiny profile")
env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_", "DVC_"))}
path = os.pathsep.join(filter(None, [os.environ.get("SHIM"), str(t.BIN), env.get("PATH", "")]))
env.update(noise.TELEMETRY_OFF, PATH=path, GRIDBOTS_MODEL_CACHE=str(out / "model-cache"))
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
store = f"sqlite+aiosqlite:///{out / 'prefect.db'}"
with settings.temporary_settings(updates={settings.PREFECT_SERVER_DATABASE_CONNECTION_URL: store}):
    server = server_module.SubprocessASGIServer(port=port)
    server.start(timeout=300)
try:
    env["PREFECT_API_URL"] = server.api_url
    host, env = t.start_host(env)
    try:
        assert t.wait_ready(host, env, timeout=600)
        with (out / "repro.log").open("w") as log:
            code = subprocess.run([str(t.BIN / "dvc"), "repro"], cwd=root, env=env, stdout=log,
                                  stderr=subprocess.STDOUT).returncode  # fmt: skip
        print("dvc repro rc", code, flush=True)
    finally:
        host.terminate()
        host.wait(timeout=60)
finally:
    server.stop()
(out / "dvc.lock").write_text((root / "dvc.lock").read_text())
