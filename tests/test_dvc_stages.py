"""dvc.yaml against the code: every stage depends on every source file its command executes,
through the stamp of its source set (the stamp stage `sources` depends on the files and writes
sources/KEY.json), and every output, metric and plot is ignored by git before any run (`make
demo` leaves `git status` clean)."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from flows.pipeline import dependencies
from flows.pipeline.dependencies import (
    ROOT,
    STAMPS,
    closure,
    is_stamp,
    missing_deps,
    source_set,
    stages,
)

STAGES = stages()


def test_every_stage_of_both_profiles_is_known():
    known = {**stages(params_file="params-full.yaml"), **STAGES}
    assert {"report", "export-connect4", "generate-connect4@randomized"} <= set(known)
    for name, stage in known.items():
        for module in source_set(name, stage)[1]:
            assert dependencies.module_file(module) is not None, (name, module)


@pytest.mark.parametrize("name", sorted(STAGES))
def test_deps_cover_every_executed_source_file(name):
    assert missing_deps(name, STAGES[name], known=STAGES) == []


#: techniques whose module imports another's (imitation plays battle's games with detours,
#: thorough starts from randomized's openings)
REUSES = {"imitation": {"battle"}, "thorough": {"randomized"}}


@pytest.mark.parametrize("profile", dependencies.PROFILES)
def test_each_stage_names_the_stamp_of_exactly_what_it_runs(profile):
    """One source dep per stage, its own set's stamp, which the stamp stage writes from that
    set's modules; a training's set holds its family's module and no other family's, a
    generation's its dataset's technique and no other's (DVC templates the path per item)."""
    known = stages(params_file=profile)
    hashed = dependencies.stamp_sets(known[STAMPS]["cmd"])
    assert set(known[STAMPS]["outs"]) == {f"{STAMPS}/{key}.json" for key in hashed}
    params = yaml.safe_load((ROOT / profile).read_text())
    families = {
        name: m.replace(".", "/") + ".py" for name, m in dependencies.family_modules().items()
    }
    datasets = {game: params[game].get("datasets") or {} for game in params["games"]}
    techniques = {d.get("technique", key) for sets in datasets.values() for key, d in sets.items()}
    for name, stage in known.items():
        if is_stamp(name):
            continue
        source = [d for d in stage["deps"] if dependencies.is_source(d) or d.startswith("sources/")]
        key, roots = source_set(name, stage)
        assert source == [f"{STAMPS}/{key}.json"], name
        assert sorted(hashed[key]) == sorted(roots), name
        files = {p.relative_to(ROOT).as_posix() for p in closure(roots)}
        group, _, item = name.partition("@")
        if group.startswith("train-"):  # the family its params name, read here by hand
            family = params[group[len("train-") :]]["models"][item]["family"]
            allowed = {families["hmm"]} if family == "crf" else set()  # models/crf.py imports it
            assert families[family] in files, name
            assert (set(families.values()) - {families[family]}) & files <= allowed, name
        if group.startswith("generate-"):
            technique = datasets[group[len("generate-") :]][item].get("technique", item)
            assert f"features/generate/{technique}.py" in files, name
            reused = REUSES.get(technique, set())  # by hand, from the modules' imports
            others = {f"features/generate/{t}.py" for t in techniques - {technique} - reused}
            assert not others & files, name


@pytest.mark.parametrize("profile", ["params.yaml", "params-full.yaml", "params-study.yaml"])
def test_every_parameter_a_stage_reads_is_in_the_profile(profile):
    """dvc refuses a stage whose params name a missing key, at the end of a long run: the full
    profile once lacked `<game>.study000` and failed at its last stage, the report."""
    params = yaml.safe_load((ROOT / profile).read_text())
    missing = []
    for name, stage in stages(params_file=profile).items():
        for key in stage["params"]:
            node = params
            for part in str(key).split("."):
                if not isinstance(node, dict) or part not in node:
                    missing.append(f"{name}: {key}")
                    break
                node = node[part]
    assert missing == []


@pytest.mark.parametrize("name", sorted(STAGES))
def test_deps_that_are_source_exist(name):
    for dep in STAGES[name]["deps"]:
        if dep.split("/")[0] in dependencies.PACKAGES:
            assert (ROOT / dep).exists(), (name, dep)


def test_the_closure_follows_lazy_and_named_imports():
    files = {p.relative_to(ROOT).as_posix() for p in closure(["flows.pipeline.stages.generate"])}
    # store and techniques are imported inside functions; agents by name in agents.base;
    # games by engine.registry's discovery of its package
    assert "features/store.py" in files
    battle = {p.relative_to(ROOT).as_posix() for p in closure(["features.generate.battle"])}
    assert {"agents/search/mcts.py", "agents/search/core.py", "engine/games/othello.py"} <= battle
    assert not any(f.startswith("models/") for f in files)  # generation trains nothing


@pytest.mark.parametrize("profile", dependencies.PROFILES)
def test_promote_depends_on_the_run_record_of_every_model_it_gates(profile):
    """The gate reads each model's registry version from its training's run record (stage_io
    .trained_run), registry state that is no part of trained/: a forced train rerun registers a
    new version, and promote must then be stale, in every profile's list of models."""
    from pathlib import Path

    from flows.pipeline.stage_io import run_record_path

    params = yaml.safe_load((ROOT / profile).read_text())
    known = stages(params_file=profile)
    written = {out for stage in known.values() for out in stage["outs"]}
    gates = {name: stage for name, stage in known.items()
             if stage["cmd"].split()[:3] in (["gridbots", "stage", "promote"],
                                             ["gridbots", "stage", "td-promote"])}  # fmt: skip
    assert {"promote-connect4", "promote-territory"} <= set(gates)
    for name, stage in gates.items():
        game = stage["cmd"].split()[3]
        for model in params[game]["models"]:
            record = run_record_path(Path(), game, model).as_posix()
            assert record in written, (name, record)  # a train stage declares it
            covered = [d for d in stage["deps"] if record == d or record.startswith(d + "/")]
            assert covered, (name, record)


def test_a_missing_dep_is_caught():
    """A file the stamp stage does not depend on, or a stage naming another set's stamp."""
    known = dict(STAGES)
    stamp = dict(known[STAMPS])
    stamp["deps"] = [d for d in stamp["deps"] if d != "agents/sequence/codec.py"]
    known[STAMPS] = stamp
    name = "encode-connect4@qualitative"
    assert missing_deps(name, STAGES[name], known=known) == ["agents/sequence/codec.py"]
    assert missing_deps(STAMPS, stamp) == ["agents/sequence/codec.py"]
    wrong = dict(STAGES[name])
    wrong["deps"] = [d.replace("encode.json", "validate.json") for d in wrong["deps"]]
    assert "flows/pipeline/stages/encode.py" in missing_deps(name, wrong, known=STAGES)


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


def test_reports_beside_the_pipeline_report_are_neither_outputs_nor_ignored():
    """Study comparisons kept in git under reports/ survive `dvc repro`: DVC deletes a stage's
    outputs before running it, so no output may be `reports` itself or hold those files."""
    outputs = {out for stage in STAGES.values() for out in stage["outs"]}
    assert "reports/pipeline" in outputs
    assert not {out for out in outputs if out == "reports" or "reports".startswith(out + "/")}
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", "reports/study-001.md", "reports/pipeline/x.png"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert checked.stdout.split() == ["reports/pipeline/x.png"]


def test_the_report_stage_leaves_the_rest_of_reports_alone(tmp_path):
    from flows.pipeline.stages.report import report_flow

    kept = tmp_path / "reports" / "study-001.md"
    kept.parent.mkdir()
    kept.write_text("the study's Table 3 beside ours\n")
    (tmp_path / "reports" / "pipeline").mkdir()
    (tmp_path / "reports" / "pipeline" / "stale.png").write_bytes(b"old")
    readme = report_flow.fn(tmp_path, {"games": ["connect4"]})  # the flow's body, no server
    assert readme == tmp_path / "reports" / "pipeline" / "README.md"
    assert "No tournament results yet." in readme.read_text()
    assert kept.read_text() == "the study's Table 3 beside ours\n"
    assert not (tmp_path / "reports" / "pipeline" / "stale.png").exists()  # its own: replaced


def test_source_deps_are_exactly_what_the_commands_run():
    """No stale extra dep either (issue 68): a file a stage stopped importing still marked it
    stale. `python -m flows.pipeline.dependencies --write` brings dvc.yaml back in line."""
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    stamp, stamp_of = dependencies.source_sets()
    assert {**spec[STAMPS], "cmd": " ".join(spec[STAMPS]["cmd"].split())} == stamp
    for name, stage in spec.items():
        if is_stamp(name):
            continue
        deps = (stage["do"] if "foreach" in stage else stage).get("deps", [])
        source = [d for d in deps if dependencies.is_source(d) or d.startswith(f"{STAMPS}/")]
        assert source == [stamp_of[name]], name


@pytest.mark.parametrize("profile", ["params.yaml", "params-full.yaml", "params-study.yaml"])
def test_a_training_depends_on_the_files_it_reads(profile):
    """A dataset family reads its encoding, a TD run the network it starts from (`init`): each
    is a dep of its train stage (DVC templates one list for a foreach, so a game's whole
    encoded folder stands for its encodings)."""
    params = yaml.safe_load((ROOT / profile).read_text())
    for name, stage in stages(params_file=profile).items():
        if not name.startswith("train-"):
            continue
        game, key = name[len("train-") :].split("@")
        model = params[game]["models"][key]
        reads = [f"encoded/{game}/{model['encoding']}.npz"] if model.get("encoding") else []
        reads += [model["params"]["init"]] if (model.get("params") or {}).get("init") else []
        for path in reads:
            assert any(path == dep or path.startswith(f"{dep}/") for dep in stage["deps"]), (
                name, path)  # fmt: skip
