"""The `gridbots` command line as users and scripts see it: output formats and bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def gridbots(*args: str, stdin: str | None = None, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


@pytest.mark.slow
def test_games_json_lists_every_game_with_metadata():
    done = gridbots("games", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["connect4"]["num_actions"] == 7
    assert rows["othello"]["num_actions"] == 65
    assert rows["lazerbike"]["simultaneous"] is True
    assert rows["pig"]["has_chance"] is True and rows["pig"]["end_turn_action"] is not None
    assert rows["sokoban"]["kind"] == "puzzle"
    tactics = rows["tactics"]  # card draws are numbered after the 12 x 12 x 30 unit actions
    assert tactics["num_actions"] == 4320 and tactics["chance_ids"] == 30
    assert rows["pig"]["chance_ids"] == 0  # dice faces share the players' ids


def test_encode_help_names_every_encoding():
    from features.encode import ENCODINGS

    shown = " ".join(gridbots("encode", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert all(name in shown for name in ENCODINGS), shown


@pytest.mark.slow
def test_perft_prints_one_line_per_depth():
    done = gridbots("perft", "connect4", "--depth", "5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:5] == ["1 7", "2 49", "3 343", "4 2401", "5 16807"]
    othello = gridbots("perft", "othello", "--depth", "4")
    assert othello.stdout.split() == ["1", "4", "2", "12", "3", "56", "4", "244"]


@pytest.mark.slow
def test_perft_from_a_history():
    done = gridbots("perft", "connect4", "--depth", "1", "--moves", "444444")
    assert done.stdout.strip() == "1 6"


@pytest.mark.slow
def test_bench_engine_json_keys():
    done = gridbots("bench", "engine", "connect4", "--seconds", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"game", "games_per_s", "moves_per_s", "mean_length"} <= set(result)
    assert result["game"] == "connect4" and result["games_per_s"] > 0
    assert 7 <= result["mean_length"] <= 42


@pytest.mark.slow
@pytest.mark.parametrize("game", ["connect4", "lazerbike", "sokoban", "pig", "othello"])
def test_show_prints_boards_until_the_end(game):
    done = gridbots("show", game, "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert "step 1:" in done.stdout and "returns:" in done.stdout


@pytest.mark.slow
def test_show_with_agents_per_seat():
    done = gridbots("show", "connect4", "--agents", "mcts:sims=50;random", "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "mcts:sims=50, random" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["perft", "chess", "--depth", "2"], "unknown game 'chess'"),
        (["perft", "connect4", "--depth", "2", "--moves", "4444444"], "column 4 is full"),
        (["perft", "connect4", "--depth", "2", "--moves", "48"], "digits 1-7"),
        (["perft", "connect4", "--dept", "2"], "No such option"),
        (["perft", "connect4"], "Missing option"),
        (["show", "connect4", "--agents", "wizard"], "unknown agent 'wizard'"),
        (["show", "connect4", "--agents", "mcts:sims=lots"], "sims"),
        (["show", "connect4", "--moves", "4444444"], "column 4 is full"),
        (["show", "connect4", "--scenario", "opening"], "expected key=value"),
        (["show", "lazerbike:players=9"], "players"),
        (["show", "sokoban:level=/nonexistent/level.txt"], "level"),
        (["bench", "engine", "connect4", "--seconds", "-1"], "--seconds"),
        (["new-game", "connect4", "--kind", "duel"], "connect4"),
        (["new-game", "mygame", "--kind", "chess"], "kind"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, fragment):
    done = gridbots(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert fragment in lines[0]


@pytest.mark.slow
def test_second_call_loads_compiled_kernels_from_the_cache():
    gridbots("perft", "othello", "--depth", "2")
    again = gridbots("perft", "othello", "--depth", "2", env={"NUMBA_DEBUG_CACHE": "1"})
    assert again.returncode == 0
    log = again.stdout + again.stderr
    assert "data loaded" in log and "data saved" not in log, log[-2000:]


@pytest.mark.slow
def test_solve_answers_each_line_and_flags_bad_ones():
    lines = (
        "2252576253462244111563365343671351441\n121212\n225257625346224411156336534367135144\n4x4\n"
    )
    done = gridbots("solve", "connect4", "--analyze", stdin=lines)
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        "2252576253462244111563365343671351441 x x x x x -1 -2",
        "121212 18 -3 -18 -18 -18 -18 -18",
        # column 1 leads to the published position above (-1), so it scores +1 here
        "225257625346224411156336534367135144 1 x x x x 3 -3",
    ]
    assert done.stderr.count("\n") == 1 and "line 4" in done.stderr
    plain = gridbots("solve", "connect4", stdin="121212\n")
    assert plain.returncode == 0 and plain.stdout == "121212 18\n"


def test_solve_refuses_other_games():
    done = gridbots("solve", "othello", stdin="1\n")
    assert done.returncode == 2 and "only connect4" in done.stderr


@pytest.mark.slow
def test_showcase_renders_games_and_plays_a_match():
    done = gridbots("showcase", "--games", "2", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    assert "connect4, 2 games, sides swapped" in done.stdout and "lazerbike" in done.stdout
    lines = done.stdout.splitlines()
    row = next(line for line in lines if "mcts:sims=200" in line)  # the table: one line a row
    assert "random" in row and max(len(line) for line in lines) <= 80
