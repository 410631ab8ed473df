"""dvc.yaml against the code: every stage depends on every source file its command executes,
and every output, metric and plot is ignored by git before any run (`make demo` leaves
`git status` clean)."""

from __future__ import annotations

import subprocess

import pytest

from flows import dependencies
from flows.dependencies import ROOT, closure, missing_deps, stage_roots, stages

STAGES = stages()


def test_every_stage_of_both_profiles_is_known():
    names = set(STAGES) | set(stages(params_file="params-full.yaml"))
    assert {"report", "export-connect4", "generate-connect4@randomized"} <= names
    for name in names:
        for module in stage_roots(name):
            assert dependencies.module_file(module) is not None, (name, module)


@pytest.mark.parametrize("name", sorted(STAGES))
def test_deps_cover_every_executed_source_file(name):
    assert missing_deps(name, STAGES[name]) == []


@pytest.mark.parametrize("name", sorted(STAGES))
def test_deps_that_are_source_exist(name):
    for dep in STAGES[name]["deps"]:
        if dep.split("/")[0] in dependencies.PACKAGES:
            assert (ROOT / dep).exists(), (name, dep)


def test_the_closure_follows_lazy_and_named_imports():
    files = {p.relative_to(ROOT).as_posix() for p in closure(["flows.stages.generate"])}
    # store and techniques are imported inside functions; agents by name in agents.base;
    # games by engine.registry's discovery of its package
    assert "features/store.py" in files
    battle = {p.relative_to(ROOT).as_posix() for p in closure(["features.generate.battle"])}
    assert {"agents/mcts.py", "agents/search.py", "engine/games/othello.py"} <= battle
    assert not any(f.startswith("models/") for f in files)  # generation trains nothing


def test_a_missing_dep_is_caught():
    stage = dict(STAGES["encode-connect4@qualitative"])
    stage["deps"] = [d for d in stage["deps"] if d != "agents"]
    assert "agents/sequence_codec.py" in missing_deps("encode-connect4@qualitative", stage)


def test_outputs_are_ignored_before_any_run():
    outputs = {out for stage in STAGES.values() for out in stage["outs"]}
    outputs |= {out for stage in stages(params_file="params-full.yaml").values()
                for out in stage["outs"]}  # fmt: skip
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=ROOT, input="\n".join(sorted(outputs)), capture_output=True, text=True,
    )  # fmt: skip
    ignored = set(checked.stdout.split())
    assert sorted(outputs - ignored) == []
