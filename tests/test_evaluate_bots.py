"""A tournament's labelled extra bots (GAME.evaluate.bots): Othello's tournament plays study
002's base network as the study stage writes it, every file an extra bot's spec names is a dep
of its evaluate stage, and a changed file replays the pairings a killed tournament kept."""

from __future__ import annotations

import json

import pytest
import yaml

from flows.pipeline.dependencies import ROOT, stages
from flows.pipeline.stages.evaluate import NAMED_FILE, named_files_digest

PROFILES = ("params.yaml", "params-full.yaml", "params-study.yaml")


@pytest.mark.parametrize("profile", PROFILES)
def test_othello_s_tournament_plays_the_base_network_its_study_writes(profile):
    """The study writes each configuration to studies/GAME/models/LABEL (stages/td.py), its
    base first; the tournament's `td-study` is that base's file."""
    from models.td_sweep import study_design

    othello = yaml.safe_load((ROOT / profile).read_text())["othello"]
    configs, _rows = study_design(othello["study"]["base"], othello["study"]["vary"])
    base = next(iter(configs))
    assert base == "q-sigmoid-egreedy-h40-lr0.2-rf0.3"  # the study's §4.2 best, by its label
    path = f"studies/othello/models/{base}/model.onnx"
    assert othello["evaluate"]["bots"]["td-study"] == f"td:model={path}"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_file_an_extra_bot_names_is_a_dep_of_its_tournament(profile):
    """DVC reruns a tournament when a network one of its extra bots plays changes, and runs
    the stage that writes it first (studies/othello before evaluate-othello)."""
    params = yaml.safe_load((ROOT / profile).read_text())
    rendered = stages(params_file=profile)
    named = 0
    for game in params["games"]:
        bots = (params[game].get("evaluate") or {}).get("bots") or {}
        deps = rendered[f"evaluate-{game}"]["deps"]
        for spec in bots.values():
            for path in NAMED_FILE.findall(spec):
                named += 1
                assert any(path == d or path.startswith(f"{d}/") for d in deps), (game, path)
    assert named >= 2  # the n-tuple network inside a search and the study's base network


def test_a_changed_network_of_an_extra_bot_changes_its_digest(tmp_path):
    """The digest that names a kept pairing (evaluate's checkpoints) covers the files an extra
    bot's spec names, `model=` and `eval=onnx:` alike, relative to the root or absolute."""
    network = tmp_path / "studies/othello/models/base/model.onnx"
    network.parent.mkdir(parents=True)
    network.write_bytes(b"first network")
    relative = "td:model=studies/othello/models/base/model.onnx"
    searched = f"alphabeta:depth=2,eval=onnx:{network}"
    before = {spec: named_files_digest(tmp_path, spec) for spec in (relative, searched)}
    assert named_files_digest(tmp_path, relative) == before[relative]  # stable
    assert named_files_digest(tmp_path, "random") != before[relative]  # names no file
    network.write_bytes(b"second network")
    for spec, digest in before.items():
        assert named_files_digest(tmp_path, spec) != digest, spec


@pytest.fixture()
def harness(prefect_api):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_api}):
        yield


@pytest.mark.slow
def test_the_tournament_plays_a_network_under_studies(tmp_path, monkeypatch, harness):
    """The evaluate stage with no export but the study's base network (a really trained one)
    as an extra bot: it plays its games against the baseline under its label."""
    from flows.pipeline.stages.evaluate import evaluate_flow
    from models import td

    monkeypatch.chdir(tmp_path)  # a stage runs in the repository root: specs name paths there
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    base = tmp_path / "studies/othello/models/base"
    td.train("othello", {"games": 200, "hidden": 8, "seed": 1}, base)
    (tmp_path / "exports/othello").mkdir(parents=True)
    (tmp_path / "exports/othello/exports.json").write_text("[]")
    spec = "td:model=studies/othello/models/base/model.onnx"
    settings = {"games": 4, "seed": 0, "opening": 4, "baselines": ["random"],
                "bots": {"td-study": spec}}  # fmt: skip
    params = {"workers": 1, "mlflow": {"tracking_uri": "sqlite:///mlflow.db"},
              "othello": {"spec": "othello", "evaluate": settings}}  # fmt: skip
    summary = evaluate_flow(tmp_path, params, "othello")
    assert summary["bots"] == ["td-study"]
    [pairing] = summary["pairings"]
    assert (pairing["spec_a"], pairing["spec_b"], pairing["games"]) == ("td-study", "random", 4)
    kept = json.loads((tmp_path / "evaluation/othello/summary.json").read_text())
    assert {s["spec"] for s in kept["standings"]} == {"td-study", "random"}
