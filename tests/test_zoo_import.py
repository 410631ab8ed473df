"""The zoo-import stage (`gridbots stage zoo-import`, dvc.yaml's first stage): each zoo entry
registers once as its name's first production version, plays its card's spec from the registry,
and a second run registers nothing; a changed card registers a new version that only the gate
may promote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_tracking import mlflow_sandbox

from agents import make
from engine import parse_game_spec
from flows.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*noload.*")]
ROOT = Path(__file__).resolve().parents[1]
ENTRY = Path("zoo/connect4/playerzero")  # tracked; copied, so the test reads no working state


@pytest.fixture
def harness(prefect_api):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_api}):
        yield


def registered(name: str) -> dict:
    from models.registry import describe

    return describe(name)


def test_each_entry_imports_once_as_first_production_then_only_as_a_candidate(
    tmp_path, tmp_path_factory, harness, capsys
):
    root = tmp_path / "work"
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()):
        shutil.copytree(ROOT / ENTRY, root / ENTRY)
        (root / "params.yaml").write_text("mlflow: {tracking_uri: 'sqlite:///mlflow.db'}\n")
        assert main(["stage", "zoo-import"]) == 0
        card = json.loads((root / ENTRY / "card.json").read_text())
        model = registered("connect4-playerzero")  # the name the PlayerZero stage trains under
        assert model["aliases"] == {"production": "1"}
        assert [v["version"] for v in model["versions"]] == ["1"]
        record = (root / "imports/zoo.json").read_bytes()
        (row,) = json.loads(record)["entries"]
        assert (row["entry"], row["name"], row["version"]) == (
            "connect4/playerzero", "connect4-playerzero", "1"
        )  # fmt: skip
        # the registry plays the card's spec on the version's files
        inner = make("registry:connect4-playerzero@production", parse_game_spec("connect4")).inner
        assert (inner.ms, inner.prior_temp) == (20.0, 3.0)
        printed = capsys.readouterr().out
        assert "zoo:connect4/playerzero: connect4-playerzero/1 (imported)" in printed

        assert main(["stage", "zoo-import"]) == 0  # again: nothing new
        assert "(already registered)" in capsys.readouterr().out
        assert [v["version"] for v in registered("connect4-playerzero")["versions"]] == ["1"]
        assert (root / "imports/zoo.json").read_bytes() == record

        card["title"] += " (retitled)"  # a changed card is a new version, not a new production
        (root / ENTRY / "card.json").write_text(json.dumps(card, indent=2) + "\n")
        assert main(["stage", "zoo-import"]) == 0
        model = registered("connect4-playerzero")
        assert [v["version"] for v in model["versions"]] == ["1", "2"]
        assert model["aliases"] == {"production": "1"}
        assert model["versions"][1]["tags"].get("promotion.decision") is None
