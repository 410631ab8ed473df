"""The pipeline at its smallest, run beside a first `gridbots repro` on the core it leaves idle.

A first run on a fresh checkout compiles each game's numba kernels as its stages reach them:
`make demo`'s `dvc repro` took 800 s with a cold cache and 558 s with every kernel cached, and
kept 1.1 of the 2 cores busy. So `gridbots repro` starts this rehearsal beside dvc: every stage
of dvc.yaml, in the order dvc runs them, on the profile scaled to nothing
(`flows.pipeline.params.scaled_profile` at scale 0: each count at its smallest; one
configuration per sweep, one epoch), one niced process running the stages one after another in
a scratch folder.
Its stages are tiny, so it reaches a stage's kernels before the real stage does and leaves them
in numba's on-disk cache, from which the real stage loads them; it skips what dvc has reached
(dvc.lock), so where dvc catches up it moves on instead of compiling the same kernels beside it.

Nothing of it is kept. Its outputs, MLflow store and Prefect database live in the scratch folder
(`.dvc/tmp/rehearsal/`, removed when it ends, and by the next rehearsal if it was killed); the
only thing it writes elsewhere is the caches beside the sources (numba's and Python's), which are
keyed on the source's name, mtime and size, so they can save work but never change a result. A
stage that fails here costs the real stage nothing but the compilation it pays anyway.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SCRATCH = Path(".dvc") / "tmp" / "rehearsal"
LOG = Path(".dvc") / "tmp" / "rehearsal.log"
#: a rehearsal dataset's games at most (one shard): the fewest every model family trains on
DATASET_GAMES = 12
#: what the rehearsal must not share with the real run (its own store, server, cluster, cache;
#: and it runs its stages itself, never through the real run's stage host)
PRIVATE_ENV = ("MLFLOW_", "PREFECT_", "GRIDBOTS_DASK_ADDRESS", "GRIDBOTS_MODEL_CACHE",
               "GRIDBOTS_STAGE_HOST")  # fmt: skip


def needed(root: Path) -> bool:
    """A first run: no kernel of this checkout is in numba's cache yet (engine/ holds no index),
    and the machine has a core to spare."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    compiled = any((Path(root) / "engine").rglob("__pycache__/*.nbi"))
    return (cores or 1) >= 2 and (Path(root) / "dvc.yaml").is_file() and not compiled


def start(root: Path, env: dict[str, str]) -> subprocess.Popen:
    """The rehearsal of the checkout at `root`, in a process group of its own (so the caller's
    stop_groups ends it with whatever it started), its output in .dvc/tmp/rehearsal.log."""
    root = Path(root).resolve()
    (root / LOG).parent.mkdir(parents=True, exist_ok=True)
    own = {k: v for k, v in env.items() if not k.startswith(PRIVATE_ENV)}
    own["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    with open(root / LOG, "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "flows.pipeline.rehearsal", str(root)],
            cwd=root, env=own, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


def rehearsal_profile(params: dict[str, Any]) -> dict[str, Any]:
    """`params` at scale 0, one configuration per sweep and one epoch per training."""
    from flows.pipeline.params import scaled_profile

    tiny = scaled_profile(params, 0.0, thorough_depth=2)
    for game in tiny.get("games", []):
        for name, dataset in (tiny[game].get("datasets") or {}).items():
            if dataset.get("technique", name) != "thorough":  # enough games for every model
                games = min(int(params[game]["datasets"][name]["options"]["x"]), DATASET_GAMES)
                dataset["options"].update(x=games, shard_size=games)
        for model in (tiny[game].get("models") or {}).values():
            model["sweep"] = {axis: list(v)[:1] for axis, v in (model.get("sweep") or {}).items()}
            if "epochs" in (model.get("params") or {}):
                model["params"]["epochs"] = 1
    for loop in (tiny.get("playerzero") or {}).values():
        loop["train"]["epochs"] = 1
    return tiny


def stage_order(stages: dict[str, dict[str, Any]]) -> list[str]:
    """dvc.yaml's stages, each after the stages that make its deps (dvc's own order: file
    order, upstream first)."""
    makers = {out.rstrip("/"): name for name, stage in stages.items() for out in stage["outs"]}

    def upstream(dep: str) -> list[str]:
        dep = dep.rstrip("/")
        return [m for out, m in makers.items() if out == dep or out.startswith(f"{dep}/")
                or dep.startswith(f"{out}/")]  # fmt: skip

    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for dep in stages[name]["deps"]:
            for maker in upstream(dep):
                if maker != name:
                    visit(maker)
        order.append(name)

    for name in stages:
        visit(name)
    return order


def real_position(root: Path, order: list[str]) -> int:
    """Where the real run is in `order`: the first stage dvc.lock does not record yet (dvc
    records each stage as it ends). The rehearsal never runs that stage or one before it: it
    would compile what the real stage compiles at the same moment, on the other core."""
    lock = Path(root) / "dvc.lock"
    text = lock.read_text(errors="replace") if lock.is_file() else ""
    done = set(re.findall(r"^  (\S[^:\n]*):[ \t]*$", text, flags=re.MULTILINE))
    return next((i for i, name in enumerate(order) if name not in done), len(order))


def mirror(root: Path, scratch: Path, stages: dict[str, dict[str, Any]]) -> None:
    """Links into `scratch` what the stages read from the checkout (the top-level entries their
    deps name, and dvc.yaml), never an output: the user's data, stores and results stay out."""
    outs = {Path(out).parts for stage in stages.values() for out in stage["outs"]}
    tops = {Path(dep).parts[0] for stage in stages.values() for dep in stage["deps"]}

    def place(relative: Path) -> None:
        parts = relative.parts
        if parts in outs or not (root / relative).exists():
            return
        if any(out[: len(parts)] == parts for out in outs):  # holds an output: a real folder
            (scratch / relative).mkdir(parents=True, exist_ok=True)
            for child in (root / relative).iterdir():
                place(relative / child.name)
        else:
            (scratch / relative).parent.mkdir(parents=True, exist_ok=True)
            (scratch / relative).symlink_to(root / relative)

    for top in sorted(tops | {"dvc.yaml"}):
        place(Path(top))


def rehearse(root: Path) -> int:
    """Every stage at its smallest in `root`/.dvc/tmp/rehearsal; one line per stage on stdout."""
    # its private Prefect server starts niced beside the real run on a busy machine: Prefect's
    # 60 s default ran out there. Set before Prefect is imported, which reads settings once.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
    import yaml

    from flows.pipeline.commands import run
    from flows.pipeline.dependencies import is_stamp
    from flows.pipeline.dependencies import stages as dvc_stages

    root = Path(root).resolve()
    scratch = root / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)  # a killed rehearsal's folder
    scratch.mkdir(parents=True)

    def stop(signum: int, _frame: object) -> None:  # repro's stop_groups: leave no folder
        shutil.rmtree(scratch, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        params = yaml.safe_load((root / "params.yaml").read_text())
        tiny = yaml.safe_dump(rehearsal_profile(params), sort_keys=False)
        (scratch / "params.yaml").write_text(tiny)
        (scratch / "prefect").mkdir()
        os.environ.update(
            PREFECT_HOME=str(scratch / "prefect"),  # a temporary Prefect server of its own
            GRIDBOTS_MODEL_CACHE=str(scratch / "model-cache"),
        )
        real = dvc_stages(root)
        mirror(root, scratch, real)
        small = dvc_stages(scratch)
        os.chdir(scratch)
        order = [name for name in stage_order(small) if not is_stamp(name)]  # compiles nothing
        for index, name in enumerate(order):
            if index <= real_position(root, order):  # what dvc runs now has its kernels
                print(f"rehearsal: {name} skipped (dvc is there)", flush=True)
                continue
            began = time.perf_counter()
            argv = shlex.split(small[name]["cmd"])
            try:  # a stage that fails here costs the real one nothing: go on with the next
                code = run(argv[2:]) if argv[:2] == ["gridbots", "stage"] else 2
            except Exception as error:  # the log says which
                code = f"{type(error).__name__}: {error}"
            print(f"rehearsal: {name} rc={code} {time.perf_counter() - began:.1f} s", flush=True)
    finally:
        os.chdir(root)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def yield_to_the_stages() -> None:
    """The idle core only: the real stages come first. Linux shares the CPU between sessions
    (autogroups) before it looks at a process's nice value, and each stage runs in a session
    of its own, so the rehearsal's own session is niced too (with only os.nice the stages ran
    as if on one core: a cold make demo's dvc repro 722 s with the rehearsal, 800 s without)."""
    os.nice(19)
    if os.getsid(0) == os.getpid():  # its own session (`start`), never its caller's
        with contextlib.suppress(OSError):
            Path("/proc/self/autogroup").write_text("19")


if __name__ == "__main__":  # what `start` runs: python -m flows.pipeline.rehearsal ROOT
    yield_to_the_stages()
    sys.exit(rehearse(Path(sys.argv[1])))
