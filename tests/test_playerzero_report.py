"""The PlayerZero loop's report table: what a generation did not measure reads "-", not "nan",
and the yardstick column names the opponent the profile sets (or says there is none)."""

from __future__ import annotations

import json

from flows.reports.playerzero import write_loop_report
from models.playerzero_loop import run_home, write_curve


def summary(generation: int, match: float | None) -> dict:
    done = {
        "generation": generation, "hours": 0.5 * (generation + 1),
        "selfplay": {"positions_per_s": 812.0}, "train": {"held_out_policy_accuracy": 0.41},
        "arena": {"score": 0.625, "accepted": True},
        "evaluation": {"puct": {"optimal_rate": 0.9, "ms_per_move_mean": 14.25}},
    }  # fmt: skip
    if match is not None:
        done["evaluation"]["match"] = {"score": match}
    return done


def table_rows(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("| ")]


def test_unmeasured_cells_read_dash_and_the_yardstick_is_named(tmp_path):
    home = tmp_path / "playerzero" / "connect4"  # the report and curve: in its run record
    home.mkdir(parents=True)
    write_curve(home, [summary(0, None), summary(1, 0.75)])
    (home / "state.json").write_text(json.dumps({"generation": 2}))
    (run_home(home) / "state.json").write_text(json.dumps({"seconds": 3600}))
    settings = {"evaluate": {"opponent": "alphabeta:ms=10", "games": 20}, "solved": ""}
    path = write_loop_report(home, "connect4", settings)
    assert path == tmp_path / "metrics" / "playerzero" / "connect4-run" / "report.md"
    report = path.read_text()
    assert "2 generations, 1.00 h;" in report  # the seconds from the run record
    header, first, second = table_rows(report)
    assert header.endswith("| vs `alphabeta:ms=10` |")
    # no solved set: the policy's optimal rate is "-"; generation 1 played no match
    assert first == "| 1 | 0.50 | 812 | 0.410 | 0.625 | yes | - | 0.900 | 14.2 | - |"
    assert second.endswith("| 0.900 | 14.2 | 0.750 |")
    assert "nan" not in report and path.with_name("report.png").is_file()
    assert sorted(p.name for p in home.iterdir()) == ["state.json"]  # nothing measured there


def test_a_profile_without_a_yardstick_says_so(tmp_path):
    home = tmp_path / "playerzero" / "othello"
    write_curve(home, [summary(0, None)])
    report = write_loop_report(home, "othello", {"evaluate": {"sims": 8}}).read_text()
    assert table_rows(report)[0].endswith("| vs yardstick (none set) |")
    assert table_rows(report)[1].endswith("| - |")


def test_a_game_without_solved_positions_plots_only_its_scores(tmp_path):
    """Tactics has no exact solver: its plot is the one panel of scores and throughput, not
    two empty optimal-rate panels beside it (a solved game keeps all three)."""
    import matplotlib.image

    unsolved = summary(0, 0.6)
    unsolved["evaluation"].pop("puct")
    homes = {game: tmp_path / "playerzero" / game for game in ("tactics", "connect4")}
    write_curve(homes["tactics"], [unsolved])
    plot = write_loop_report(homes["tactics"], "tactics", {}).with_suffix(".png")
    write_curve(homes["connect4"], [summary(0, 0.6)])
    solved = write_loop_report(homes["connect4"], "connect4", {}).with_suffix(".png")
    one, three = (matplotlib.image.imread(p).shape[1] for p in (plot, solved))
    assert three == 3 * one
