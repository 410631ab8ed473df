"""Each DVC stage depends on exactly the source files its command runs (issue 68): no whole
folder, no command-line module, and every module the stage's command imports.

A stage's source dep is the stamp of its set, sources/KEY.json, which the stamp stage `sources`
writes (each file's sha256) and which changes exactly when one of the set's files does; a
`foreach` item names its own set (a training its family's, a generation its dataset's). Three
checks, each against something other than flows.pipeline.dependencies' own answer:
- DVC's own reading of dvc.yaml (its rendered stages) and the stamps the stamp stage wrote name
  only files, none of flows/cli;
- a fresh interpreter that imports what a stage's command imports (the program's entry, the
  stage commands, the stage's module, a training's family) holds no repository module outside
  that stage's stamp;
- `dvc status` itself, over a lock recorded for every stage: editing the terminal's `human`
  agent or a command-line module leaves every stage, the stamp stage too, up to date (no stage
  runs them); editing a file lists the stamp stage alone, and once the stamps are reproduced
  exactly the stages that run the file are stale: a stage's own module, one family's module (an
  LSTM's, not the HMM's trainings) or one technique's (battle data, not randomized), and the
  stage commands, which every stage runs, flag them all.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from flows.pipeline.dependencies import (
    COMMON,
    ENTRY,
    PACKAGES,
    STAMPS,
    is_stamp,
    source_set,
    stages,
)
from tests.test_dvc_repro import BIN, copy_repo

pytestmark = pytest.mark.slow
#: files no stage runs: the terminal's agent, the command line's modules and help texts
NEVER_RUN = ("agents/play/human.py", "flows/cli/app.py", "flows/cli/play.py", "flows/cli/games.py")
#: files one stage kind or some items of a `foreach` run: a stage's own module (validation's,
#: the report's), a family's (the LSTM's, not the HMM's or the CRF's trainings; the HMM's, which
#: the CRF reads its data with), a technique's (battle data's, imitation's too: it plays battle's
#: games; imitation's, Sokoban's `planner` dataset too, not battle's)
EDITED = (
    "flows/pipeline/stages/validate.py",
    "flows/pipeline/stages/report.py",
    "models/lstm.py",
    "models/hmm.py",
    "features/generate/battle.py",
    "features/generate/imitation.py",
)
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("DVC_", "PYTHONPATH"))}
ENV.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", DVC_NO_ANALYTICS="1")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The tracked files in a DVC repository of their own: the stamp stage really run, a lock
    recorded for every other stage of the default profile over placeholder outputs (`dvc
    commit`: no pipeline stage runs)."""
    root = tmp_path_factory.mktemp("deps")
    copy_repo(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    if not (root / ".dvc").is_dir():
        subprocess.run([BIN / "dvc", "init", "-q"], cwd=root, check=True)
    reproduce_stamps(root)
    for name, stage in stages(root).items():
        for out in [] if is_stamp(name) else stage["outs"]:
            path = root / out
            if path.suffix:  # a file output (JSON, CSV, npz): a placeholder file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("placeholder\n")
            else:
                path.mkdir(parents=True, exist_ok=True)
                (path / "placeholder.txt").write_text("placeholder\n")
    done = dvc(root, "commit", "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    assert changed(root) == set()
    return root


def dvc(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dvc"), *args], cwd=root, capture_output=True, text=True,
                          env=ENV, timeout=600)  # fmt: skip


def changed(root: Path) -> set[str]:
    """The stages `dvc status` lists (DVC's own status, in this process: no start-up per call)."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(str(root)) as project:  # DVC's paths are the cwd's
        return set(project.status())


def reproduce_stamps(root: Path) -> None:
    """`dvc repro` of the stamp stage alone (its command really runs, found on ENV's PATH)."""
    from dvc.repo import Repo

    path = os.environ.get("PATH", "")
    os.environ["PATH"] = ENV["PATH"]
    try:
        with contextlib.chdir(root), Repo(str(root)) as project:  # it runs commands in the cwd
            project.reproduce(STAMPS, single_item=True)
    finally:
        os.environ["PATH"] = path


def dvc_deps(root: Path) -> dict[str, list[str]]:
    """Every stage's deps as DVC itself renders dvc.yaml."""
    from dvc.repo import Repo

    with Repo(str(root)) as project:
        return {
            stage.name: [Path(dep.fs_path).relative_to(root).as_posix() for dep in stage.deps]
            for stage in project.index.stages
        }


def stamped(root: Path) -> dict[str, list[str]]:
    """sources/KEY.json → the files that stamp hashes (as the stamp stage wrote it)."""
    return {
        path.relative_to(root).as_posix(): sorted(json.loads(path.read_text())["files"])
        for path in (root / STAMPS).glob("*.json")
    }


def source_deps(deps: list[str]) -> list[str]:
    return [d for d in deps if d.split("/")[0] in (*PACKAGES, STAMPS)]


def test_deps_name_files_only_and_no_command_line(repo):
    rendered = dvc_deps(repo)
    files = stamped(repo)
    assert set(rendered) == set(stages(repo))
    for name, deps in rendered.items():
        if is_stamp(name):  # it depends on every file it hashes, and runs this module
            hashed = {f for listed in files.values() for f in listed}
            assert hashed <= set(deps) <= hashed | {"flows/pipeline/dependencies.py"}, name
            continue
        stamp = source_deps(deps)
        assert len(stamp) == 1 and stamp[0] in files, name  # one stamp, no file of its own
        source = files[stamp[0]]
        assert source, name
        assert [d for d in source if not (repo / d).is_file()] == [], name  # no folder
        assert [d for d in source if d.startswith("flows/cli/")] == [], name
        assert "agents/play/human.py" not in source, name


ORACLE = """
import importlib, json, os, sys
for name in json.loads(sys.argv[1]):  # what every stage imports, once
    importlib.import_module(name)
for name in ("numpy", "numba", "pyarrow", "prefect", "mlflow", "onnxruntime"):
    importlib.import_module(name)  # no repository module: each fork below finds them loaded
for key, roots in json.loads(sys.argv[2]).items():  # each set in a fork of that interpreter
    pid = os.fork()
    if pid == 0:
        for name in roots:
            importlib.import_module(name)
        files = sorted(getattr(m, "__file__", None) or "" for m in list(sys.modules.values()))
        with open(os.path.join(sys.argv[3], key + ".json"), "w") as out:
            json.dump(files, out)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0, key
"""


def test_every_module_a_stage_imports_is_among_its_deps(repo, tmp_path):
    """The oracle: what an interpreter holds after importing what the stage's command imports
    (its lazy imports come on top; those the static closure reads)."""
    rendered = dvc_deps(repo)
    files = stamped(repo)
    sets: dict[str, list[str]] = {}
    names: dict[str, list[str]] = defaultdict(list)
    for name, stage in stages(repo).items():
        if not is_stamp(name):
            key, roots = source_set(name, stage)
            sets[key] = roots
            names[key].append(name)
    done = subprocess.run([sys.executable, "-c", ORACLE, json.dumps([*ENTRY, *COMMON]),
                           json.dumps(sets), str(tmp_path)], cwd=repo, capture_output=True,
                          text=True, timeout=600, env={**ENV, "PYTHONPATH": str(repo)})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for key, roots in sets.items():
        loaded = {
            Path(f).relative_to(repo).as_posix()
            for f in json.loads((tmp_path / f"{key}.json").read_text())
            if f and Path(f).is_relative_to(repo)
        }
        assert any(f.startswith("flows/pipeline/stages/") for f in loaded), roots
        assert sorted(loaded - set(rendered[STAMPS])) == [], key  # DVC watches them all
        for name in names[key]:
            stamp = source_deps(rendered[name])[0]
            assert sorted(loaded - set(files[stamp])) == [], name


def touch(path: Path) -> str:
    """Edits a source file (a comment more); returns its text before, to put back."""
    text = path.read_text()
    path.write_text(text + "\n# edited\n")
    return text


def test_an_edit_flags_exactly_the_stages_that_run_the_file(repo):
    kept = {never: touch(repo / never) for never in NEVER_RUN}
    assert changed(repo) == set()  # not even the stamp stage
    for never, text in kept.items():
        (repo / never).write_text(text)
    known = {name: stage for name, stage in stages(repo).items() if not is_stamp(name)}
    rendered = dvc_deps(repo)
    files = stamped(repo)
    runs = {name: set(files[source_deps(rendered[name])[0]]) for name in known}
    params = yaml.safe_load((repo / "params.yaml").read_text())
    # by hand: each stage's own module flags the stages it is the module of; a family's module
    # its trainings (the CRF reads the HMM's data); a technique's module its datasets
    expected: dict[str, set[str]] = defaultdict(set)
    for name, stage in known.items():
        expected[source_set(name, stage)[1][0].replace(".", "/") + ".py"].add(name)
        group, _, item = name.partition("@")
        if group.startswith("train-"):
            family = params[group[len("train-") :]]["models"][item]["family"]
            for module in {"lstm": ["lstm"], "hmm": ["hmm"], "crf": ["crf", "hmm"]}.get(family, []):
                expected[f"models/{module}.py"].add(name)
        if group.startswith("generate-"):
            dataset = params[group[len("generate-") :]]["datasets"][item]
            technique = dataset.get("technique", item)
            for module in {"imitation": ["imitation", "battle"]}.get(technique, [technique]):
                expected[f"features/generate/{module}.py"].add(name)  # imitation runs battle's
    edits = {path: expected[path] for path in EDITED}
    first = True
    for path, names in sorted(edits.items()):
        text = touch(repo / path)
        if first:  # dvc status lists the stamp stage, not yet what depends on a stamp
            assert changed(repo) == {STAMPS}, path
            first = False
        reproduce_stamps(repo)
        flagged = changed(repo)
        (repo / path).write_text(text)  # as it was: the next reproduction puts its stamps back
        assert names <= flagged, path
        assert flagged == {name for name in known if path in runs[name]}, path
        group = path.split("/")[0]
        if group != "flows":  # among trainings (generations), exactly those of that family
            kind = "train-" if group == "models" else "generate-"
            assert {n for n in flagged if n.startswith(kind)} == names, path
    reproduce_stamps(repo)
    assert changed(repo) == set()
    # a file every stage runs (the stage commands) flags them all
    text = touch(repo / "flows/pipeline/commands.py")
    reproduce_stamps(repo)
    assert changed(repo) == set(known)
    (repo / "flows/pipeline/commands.py").write_text(text)
    reproduce_stamps(repo)
    assert changed(repo) == set()
