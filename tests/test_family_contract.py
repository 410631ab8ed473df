"""models.base's family contract (issue 68): TD and NEAT are families like the others, a family
that learns by playing says how its runs are recorded, and a stage refuses, with one line and
exit 2, a game its family cannot train on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from models.base import FAMILIES, ModelError, check_game, family


def test_td_and_neat_are_families_that_learn_by_playing():
    for name in ("td", "neat"):
        module = family(name)
        assert name in FAMILIES and module.ENCODINGS == ()
        assert isinstance(module.DEFAULTS, dict) and module.DEFAULTS
        source = module.source("othello" if name == "td" else "territory", {"case": "duel"})
        assert set(source) >= {"game", "dataset.path", "dataset.sha256", "dataset.encoding"}


def test_td_curves_put_chunk_reports_at_games_and_curve_points_at_curve_games():
    from models.td import curves

    history = {
        "games": [1000.0, 2000.0],
        "seat1_mean_return": [0.1, 0.25],
        "curve_games": [2000.0],
        "score_vs_alphabeta:depth=3": [0.625],
    }
    assert curves(history) == {
        "seat1_mean_return": [(1000.0, 0.1), (2000.0, 0.25)],
        "score_vs_alphabeta:depth=3": [(2000.0, 0.625)],
    }


def test_neat_curves_are_per_generation():
    from models.neat import curves

    rows = [{"generation": 0, "best_fitness": 3.0}, {"generation": 1, "best_fitness": 4.5}]
    assert curves(rows) == {"best_fitness": [(0, 3.0), (1, 4.5)]}


def test_a_family_refuses_a_game_it_cannot_train_on():
    check_game("neat", "territory:size=5")  # a map size is still territory
    check_game("td", "connect4")  # any two-player game: td names no games
    with pytest.raises(ModelError, match="neat trains on territory only, not connect4"):
        check_game("neat", "connect4")


def test_a_played_family_is_not_trained_on_a_dataset(tmp_path):
    from models.tracking import train

    with pytest.raises(ModelError, match="td learns by playing, not from an encoded dataset"):
        train(tmp_path / "none.npz", "td", {})


def _params(tmp_path, models: dict) -> str:
    params = {
        "games": ["connect4", "territory"],
        "workers": 1,
        "mlflow": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
        "connect4": {"spec": "connect4", "models": models},
    }
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return str(path)


@pytest.mark.parametrize(
    ("argv", "model", "why"),
    [
        (["train"], {"family": "neat", "params": {"case": "duel"}},
         "neat trains on territory only, not connect4"),
        (["train"], {"family": "lstm", "params": {}},
         "connect4.models.m: lstm trains on a dataset: name its encoding"),
        (["train"], {"family": "td", "encoding": "board", "params": {}},
         "connect4.models.m: td learns by playing; it takes no encoding"),
        (["neat"], {"family": "neat", "case": "duel", "seeds": [0], "params": {}},
         "gridbots stage neat connect4 m is now gridbots stage train connect4 m"),
    ],
)  # fmt: skip
def test_stage_train_honours_its_game_and_its_family(tmp_path, monkeypatch, capsys, argv, model,
                                                     why):  # fmt: skip
    """Every family trains through `stage train GAME KEY`; a game its family cannot train on,
    an entry that lacks what its family needs, and the old `stage neat` get one line, exit 2."""
    from flows.entry import main

    monkeypatch.chdir(tmp_path)
    path = _params(tmp_path, {"m": model})
    code = main(["stage", *argv, "connect4", "m", "--params", path])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and why in err[0]
    assert not (tmp_path / "trained").exists()


def test_stage_study_honours_its_game(tmp_path, monkeypatch, capsys):
    from flows.entry import main

    monkeypatch.chdir(tmp_path)
    code = main(["stage", "study", "connect4", "--params", _params(tmp_path, {})])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "no study comparison for connect4; studies exist for: territory, othello" in err[0]
    assert not (tmp_path / "studies").exists()


def test_runs_and_versions_are_written_by_models_tracking_alone():
    """Every MLflow run is opened, and every version made, in models/tracking.py (the registry
    reopens a run only inside a registration): a family's parallel logging path shows up here."""
    root = Path(__file__).resolve().parents[1]
    writes = re.compile(r"\b(start_run|create_run|create_model_version|register_run)\(")
    found = {
        path.relative_to(root).as_posix()
        for package in ("engine", "agents", "features", "models", "flows")
        for path in (root / package).rglob("*.py")
        if writes.search(path.read_text())
    }
    assert found == {"models/tracking.py", "models/registry.py"}


@pytest.mark.parametrize("profile", ["params.yaml", "params-full.yaml", "params-study.yaml"])
def test_every_model_of_every_profile_makes_its_configurations(profile):
    """What `stage train GAME KEY` builds before it trains: the entry (models.training_inputs
    .model_entry), its sweep's grid and each configuration's parameters (no key both a
    parameter and a sweep axis, every value of the family's type), for every family."""
    from flows.pipeline.stages.train import sweep_items
    from models.training_inputs import coerce, model_entry, sweep_grid

    params = yaml.safe_load((Path(__file__).resolve().parents[1] / profile).read_text())
    for game in params["games"]:
        for name, entry in (params[game].get("models") or {}).items():
            settings = model_entry(game, name, entry)
            module = family(settings["family"])
            grid = sweep_grid(sweep_items(settings["sweep"])) if settings["sweep"] else [{}]
            assert not set(settings["params"]) & set(grid[0]), (game, name)
            for config in grid:
                coerce(settings["family"], module.DEFAULTS, {**settings["params"], **config})
