"""Each DVC stage depends on exactly the source files its command runs (issue 68): no whole
folder, no command-line module, and every module the stage's command imports.

Three checks, each against something other than flows.pipeline.dependencies' own answer:
- DVC's own reading of dvc.yaml (its rendered stages) names only files, none of flows/cli;
- a fresh interpreter that imports what a stage's command imports (the program's entry, the
  stage commands, the stage's module) holds no repository module outside that stage's deps;
- `dvc status` itself, over a lock recorded for every stage: editing the terminal's `human`
  agent or a command-line module leaves every stage up to date, and editing a stage's own
  module flags exactly the stages that run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from flows.pipeline.dependencies import COMMON, ENTRY, PACKAGES, stage_roots, stages
from tests.test_dvc_repro import BIN, copy_repo

pytestmark = pytest.mark.slow
#: files no stage runs: the terminal's agent, the command line's modules and help texts
NEVER_RUN = ("agents/play/human.py", "flows/cli/app.py", "flows/cli/play.py", "flows/cli/games.py")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The tracked files in a DVC repository of their own, with a lock recorded for every stage
    of the default profile over placeholder outputs (no stage runs: `dvc commit`)."""
    root = tmp_path_factory.mktemp("deps")
    copy_repo(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    if not (root / ".dvc").is_dir():
        subprocess.run([BIN / "dvc", "init", "-q"], cwd=root, check=True)
    for stage in stages(root).values():
        for out in stage["outs"]:
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
                          timeout=600)  # fmt: skip


def changed(root: Path) -> set[str]:
    done = dvc(root, "status", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout or "{}"))


def dvc_deps(root: Path) -> dict[str, list[str]]:
    """Every stage's deps as DVC itself renders dvc.yaml."""
    from dvc.repo import Repo

    with Repo(str(root)) as project:
        return {
            stage.name: [Path(dep.fs_path).relative_to(root).as_posix() for dep in stage.deps]
            for stage in project.index.stages
        }


def test_deps_name_files_only_and_no_command_line(repo):
    rendered = dvc_deps(repo)
    assert set(rendered) == set(stages(repo))
    for name, deps in rendered.items():
        source = [d for d in deps if d.split("/")[0] in PACKAGES]
        assert source, name
        assert [d for d in source if not (repo / d).is_file()] == [], name  # no folder
        assert [d for d in source if d.startswith("flows/cli/")] == [], name
        assert "agents/play/human.py" not in source, name


def test_every_module_a_stage_imports_is_among_its_deps(repo):
    """The oracle: what a fresh interpreter holds after importing what the stage's command
    imports (its lazy imports come on top; those the static closure reads)."""
    rendered = dvc_deps(repo)
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name, stage in stages(repo).items():
        groups[tuple(stage_roots(name, stage.get("technique")))].append(name)
    script = (
        "import importlib, json, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "files = (getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))\n"
        "print(json.dumps(sorted(files)))"
    )
    for roots, names in groups.items():
        modules = [*ENTRY, *COMMON, *roots]
        done = subprocess.run([sys.executable, "-c", script, *modules], cwd=repo,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(repo)})  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        loaded = {
            Path(f).relative_to(repo).as_posix()
            for f in json.loads(done.stdout)
            if f and Path(f).is_relative_to(repo)
        }
        assert any(f.startswith("flows/pipeline/stages/") for f in loaded), roots
        for name in names:
            assert sorted(loaded - set(rendered[name])) == [], name


def touch(path: Path) -> str:
    """Edits a source file (a comment more); returns its text before, to put back."""
    text = path.read_text()
    path.write_text(text + "\n# edited\n")
    return text


def test_an_edit_flags_exactly_the_stages_that_run_the_file(repo):
    kept = {never: touch(repo / never) for never in NEVER_RUN}
    assert changed(repo) == set()
    for never, text in kept.items():
        (repo / never).write_text(text)
    # each stage's own module flags the stages it is the module of, and only stages that run it
    # (the TD chain's stages also run the evaluate and promote stages' helpers)
    rendered = dvc_deps(repo)
    by_module: dict[str, set[str]] = defaultdict(set)
    for name, stage in stages(repo).items():
        by_module[stage_roots(name, stage.get("technique"))[0]].add(name)
    for module, names in sorted(by_module.items()):
        path = module.replace(".", "/") + ".py"
        text = touch(repo / path)
        flagged = changed(repo)
        (repo / path).write_text(text)  # as it was: the recorded hash holds again
        assert names <= flagged, module
        assert flagged == {name for name, deps in rendered.items() if path in deps}, module
    # a file every stage runs (the stage commands) flags them all
    text = touch(repo / "flows/pipeline/commands.py")
    assert changed(repo) == set(stages(repo))
    (repo / "flows/pipeline/commands.py").write_text(text)
