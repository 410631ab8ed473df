"""The pipeline report's zoo section (flows/report.zoo_lines): the zoo bot the pipeline
registered first and every candidate that faced it at the gate, under its name or another name
of the game (the gate's second match), from the files the stages write (hand-written here: the
decisions are engine-free records)."""

from __future__ import annotations

import json
from pathlib import Path

from flows.reports.pipeline import write_report


def put(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def decision(version: str, opponent: str, promoted: bool, wdl: tuple[int, int, int]) -> dict:
    wins, draws, losses = wdl
    return {"name": "connect4-playerzero", "version": version, "opponent": opponent,
            "promoted": promoted, "score": 0.25, "low": 0.05, "high": 0.7,
            "wins": wins, "draws": draws, "losses": losses}  # fmt: skip


def test_the_report_shows_the_zoo_bot_and_the_candidates_it_refused(tmp_path):
    zoo_ref = "registry:connect4-playerzero/1"
    put(tmp_path / "imports/zoo.json", {"entries": [
        {"entry": "connect4/playerzero", "name": "connect4-playerzero", "version": "1",
         "card.sha256": "ab" * 32},
        {"entry": "othello/td-ntuple", "name": "othello-td-ntuple", "version": "1",
         "card.sha256": "cd" * 32},
    ]})  # fmt: skip
    put(tmp_path / "metrics/playerzero/connect4-run/gen-000/registered.json",
        {"name": "connect4-playerzero", "version": "2",
         "promotion": decision("2", zoo_ref, False, (1, 0, 15))})  # fmt: skip
    put(tmp_path / "metrics/playerzero/connect4-run/gen-001/registered.json",
        {"name": "connect4-playerzero", "version": "3",
         "promotion": decision("3", zoo_ref, False, (2, 1, 13))})  # fmt: skip
    # a decision against another opponent alone is not the zoo bot's; one that cleared it and
    # met the zoo bot as its second match is
    second = {"opponent": zoo_ref, "wins": 0, "draws": 1, "losses": 1, "score": 0.25,
              "score_low": 0.01, "score_high": 0.7, "games": 2, "planned": 16,
              "result": "refused"}  # fmt: skip
    put(tmp_path / "promotion/connect4.json", {"families": {"hmm": {
        "model": "connect4-hmm", "production": None, "decisions": [
            {**decision("1", "random", False, (0, 0, 4)), "name": "connect4-hmm"},
            {**decision("2", "random", False, (4, 0, 0)), "name": "connect4-hmm",
             "zoo": second}]}}})  # fmt: skip
    text = write_report(tmp_path, ["connect4", "othello"], tmp_path / "out").read_text()
    connect4 = text.split("## connect4")[1].split("## othello")[0]
    (row,) = [line for line in connect4.splitlines() if line.startswith("| `zoo:")]
    assert "connect4-playerzero v1 (`registry:connect4-playerzero/1`)" in row
    assert "[card](../../zoo/connect4/playerzero/card.md)" in row
    assert "connect4-playerzero v2: rejected (1/0/15" in row
    assert "connect4-playerzero v3: rejected (2/1/13" in row
    assert "connect4-hmm v2: rejected (0/1/1, score 0.250 [0.010, 0.700])" in row
    assert "v1: rejected" not in row
    othello = text.split("## othello")[1]
    assert "othello-td-ntuple v1" in othello and "none yet" in othello
