"""Every table the CLI prints fits an 80-column console: each cell on one line, whole.

Rich never prints past the console's width; it wraps cells instead (what made `bots list`
unreadable). So each check renders at 80 columns and looks for every cell's full text on a
single line of the output. `bots list` is checked in test_model_cli (it needs a registry),
the showcase in test_cli.
"""

from __future__ import annotations

import pytest

from agents import make
from engine import load_game
from engine.tournament import MatchConfig, play_pairing, summarize_pairing
from flows.entry import main
from flows.reports.tournament import pairing_table

WIDTH = 80
LONG = "alphabeta:depth=4,eval=onnx:/home/someone/gridbots/exports/connect4/value_mlp/model.onnx"


def assert_fits(text: str, cells: list[str]) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH, text
    for cell in cells:
        assert any(cell in line for line in lines), (cell, text)


@pytest.fixture
def narrow(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def test_games_table(narrow, capsys):
    assert main(["games"]) == 0
    out = capsys.readouterr().out
    assert_fits(out, ["simultaneous", "max length", "connect4", "lazerbike", "sokoban", "puzzle"])
    assert sum("duel" in line for line in out.splitlines()) >= 3  # one line per game


def test_match_and_tournament_tables(narrow, capsys, tmp_path):
    args = ["--games", "2", "--opening", "2"]
    assert main(["match", "connect4", "random", "random:guards=win+block", *args]) == 0
    out = capsys.readouterr().out
    assert_fits(out, ["random:guards=win+block", "score A [95%]", "Elo A-B [95%]", "peak MiB"])
    specs = ["random", "mcts:sims=20", "random:guards=win+block+safe"]
    assert main(["tournament", "connect4", *specs, *args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert_fits(out, [*specs, "1 vs 2", "1 vs 3", "2 vs 3"])


def test_a_long_spec_is_shortened_in_the_middle_not_wrapped():
    from rich.console import Console

    game = load_game("connect4")
    rows = play_pairing(
        game, "random", "random:guards=win", MatchConfig(games=2),
        make_seat=lambda spec, g, seed: make(spec, g, seed),
    )  # fmt: skip
    summary = summarize_pairing(rows)
    summary["spec_a"] = summary["bots"][0]["spec"] = LONG  # as the evaluate stage labels files
    console = Console(width=WIDTH, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(pairing_table([summary], "connect4: 2 games", WIDTH))
    out = console.export_text()
    shown = next(line for line in out.splitlines() if "alphabeta:depth=4" in line)
    assert "…" in shown and shown.rstrip().endswith("value_mlp/model.onnx")
    assert_fits(out, ["connect4: 2 games", "random:guards=win", "1 vs 2", "W/D/L"])
