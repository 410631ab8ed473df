"""`gridbots match`, `tournament` and `move` as users and driving programs see them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
GREEDY = "file:examples/bots/greedy_bot.py"


def gridbots(*args: str, stdin: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_match_json_in_process():
    done = gridbots("match", "connect4", "mcts:sims=200", "random", "--games", "4", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["wins"] + summary["draws"] + summary["losses"] == 4
    assert summary["wins"] >= 3 and summary["score_low"] <= summary["score"] <= 1
    assert [bot["spec"] for bot in summary["bots"]] == ["mcts:sims=200", "random"]


@pytest.mark.slow
def test_isolated_match_with_a_file_bot(tmp_path):
    done = gridbots(
        "match", "connect4", GREEDY, "random", "--games", "4", "--isolated", "--move-ms", "2000",
        "--memory-mb", "1500", "--json", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    greedy, rand = summary["bots"]
    assert summary["wins"] >= 3  # it takes wins and avoids handing them over
    for bot in (greedy, rand):
        assert bot["crashes"] == bot["illegal"] == bot["late"] == 0
        assert 20_000 < bot["peak_kb"] < 1_500_000  # the child's own resident peak
    rows = pd.read_parquet(tmp_path / "games.parquet")
    assert len(rows) == 4 and rows["isolated"].all() and (tmp_path / "scores.png").exists()


@pytest.mark.slow
def test_tournament_prints_a_table_and_writes_files(tmp_path):
    done = gridbots(
        "tournament", "connect4", "random", "mcts:sims=50", "mcts:sims=200",
        "--games", "2", "--format", "gauntlet", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "W/D/L" in done.stdout and "mcts:sims=200" in done.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [p["spec_b"] for p in summary["pairings"]] == ["mcts:sims=50", "mcts:sims=200"]
    assert len(pd.read_parquet(tmp_path / "games.parquet")) == 4


def test_move_answers_each_line_as_soon_as_it_is_read():
    bot = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "move", "connect4", "mcts:sims=1000"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        bot.stdin.write("121212\n")  # column 1 wins at once
        bot.stdin.flush()
        assert bot.stdout.readline().strip() == "1"  # answered while stdin is still open
        bot.stdin.write("4444444\n")  # illegal: column 4 holds six stones
        bot.stdin.write("1213\n")  # X threatens nothing; any legal column
        bot.stdin.flush()
        assert bot.stdout.readline().strip() in list("1234567")
        bot.stdin.close()
        assert bot.wait(timeout=60) == 2
        errors = bot.stderr.read().strip().splitlines()
        assert errors == [
            'gridbots: error: line 2: illegal move 4 for X after "444444": column 4 is full; '
            "legal: 1 2 3 5 6 7"
        ]
    finally:
        bot.kill()


def test_move_on_a_simultaneous_game():
    both = gridbots("move", "lazerbike", "random", "--moves", "forward forward")
    one = gridbots("move", "lazerbike", "random", "--moves", "1 1", "--player", "1")
    assert both.returncode == one.returncode == 0, both.stderr + one.stderr
    assert len(both.stdout.split()) == 2 and set(both.stdout.split()) <= {
        "left",
        "forward",
        "right",
    }
    assert one.stdout.strip() in {"left", "forward", "right"}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["match", "connect4", "wizard", "random"], "unknown agent 'wizard'"),
        (["match", "connect4", "mcts:sims=lots", "random"], "sims='lots'"),
        (["match", "connect4", GREEDY, "random"], "only in isolated mode"),
        (["match", "connect4", "file:nope/missing.py", "random", "--isolated"], "cannot read"),
        (["match", "connect4", f"{GREEDY}:Nope", "random", "--isolated"], "no class 'Nope'"),
        (["match", "connect4", "random", "random", "--games", "0"], "--games"),
        (["match", "connect4", "random", "random", "--move-ms", "fast"], "--move-ms"),
        (["tournament", "connect4", "random", "mcts", "--format", "swiss"], "format 'swiss'"),
        (["tournament", "connect4", "random"], "at least two"),
        (["match", "sokoban", "random", "random", "--levels", "nope"], "unknown level"),
        (["move", "connect4", "random", "--moves", "4444444"], "column 4 is full"),
        (
            ["move", "othello", "random", "--moves", "d3 a1"],
            'a1 for white after "d3": it flips nothing',
        ),
        (["match", "connect4", "human", "random"], "a person plays at a terminal"),
        (["match", "connect4", "human", "random", "--isolated"], "an isolated seat is a bot"),
        (["tournament", "pig", "human", "random", "--isolated"], "an isolated seat is a bot"),
        (["play", "connect4", "random"], "run it in a terminal"),
        (["move", "connect4", "random", "--moves", "9"], "digits 1-7"),
        (["move", "connect4", "random", "--moves", "1212121"], "game is over"),
        (["move", "chess", "random"], "unknown game"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys):
    from flows.entry import main  # in-process: the `gridbots` entry point, without a new Python

    try:
        code = main(args)
    except SystemExit as leaving:  # `move` leaves with status 2 after answering what it could
        code = leaving.code
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in captured.err


def test_syntax_error_in_a_bot_file(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("class Bot:\n    def step(self, state, player)\n        return 0\n")
    done = gridbots("match", "connect4", f"file:{broken}", "random", "--isolated")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "syntax error" in done.stderr and "line 2" in done.stderr
