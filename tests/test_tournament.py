"""Tournament statistics against hand-worked values; scenarios; Parquet/JSON/PNG outputs."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from agents import make
from engine import GameError, load_game
from engine.tournament import (
    MatchConfig,
    elo,
    make_scenarios,
    play_pairing,
    run_tournament,
    score_summary,
    summarize_pairing,
    wilson_interval,
)
from flows.reports.tournament import write_outputs


def make_seat(spec, game, seed):
    return make(spec, game, seed=seed)


def test_score_and_wilson_interval_by_hand():
    # W/D/L 6/2/2: s = (6 + 2/2) / 10 = 0.7. Wilson, z = 1.96, z^2 = 3.8416, z^2/n = 0.38416:
    # centre = (0.7 + 0.19208) / 1.38416 = 0.64449
    # half   = 1.96 / 1.38416 * sqrt(0.7 * 0.3 / 10 + 3.8416 / 400) = 1.41602 * 0.17494 = 0.24772
    summary = score_summary(6, 2, 2)
    assert summary["score"] == pytest.approx(0.7)
    assert summary["score_low"] == pytest.approx(0.64449 - 0.24772, abs=2e-4)
    assert summary["score_high"] == pytest.approx(0.64449 + 0.24772, abs=2e-4)
    # all wins in 4: centre = (1 + 0.4802) / 1.9604 = 0.75505, half = 1.96 / 1.9604 * sqrt(
    # 0 + 3.8416 / 64) = 0.24495, so the interval is [0.51010, 1]
    low, high = wilson_interval(1.0, 4)
    assert high == pytest.approx(1.0) and low == pytest.approx(0.51010, abs=2e-4)


def test_the_interval_holds_the_score_where_rounding_would_step_past_it(tmp_path):
    """10 wins in 10 computed 1 - 1.1e-16 as the upper bound, below the score, and the
    tournament chart's error bar came out negative: matplotlib refused it and a full-profile
    evaluate stage failed after all its games. Every score of up to 300 games is inside."""
    from flows.reports.tournament import plot_scores

    assert wilson_interval(1.0, 10)[1] == 1.0 and wilson_interval(0.0, 100)[0] == 0.0
    for games in range(1, 301):
        for half_points in range(2 * games + 1):
            score = half_points / (2 * games)
            low, high = wilson_interval(score, games)
            assert 0.0 <= low <= score <= high <= 1.0, (score, games)
    perfect = {"pairing": "a vs b", **score_summary(10, 0, 0)}
    plot_scores([perfect, {"pairing": "c vs d", **score_summary(0, 0, 100)}], tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 0


def test_elo_from_score():
    assert elo(0.75) == pytest.approx(400 * math.log10(3)) and elo(0.75) == pytest.approx(
        190.85, 0.01
    )
    assert elo(0.5) == 0 and elo(0.25) == pytest.approx(-190.85, 0.01)
    assert elo(1.0) == math.inf and elo(0.0) == -math.inf
    summary = score_summary(3, 0, 1)  # 0.75
    assert summary["elo"] == pytest.approx(190.85, 0.01)
    assert summary["elo_low"] < summary["elo"] < summary["elo_high"]
    assert summary["elo_low"] == pytest.approx(elo(summary["score_low"]))
    assert score_summary(4, 0, 0)["elo"] is None  # infinite: null in JSON


def test_each_scenario_is_played_twice_with_sides_swapped():
    connect4 = load_game("connect4")
    config = MatchConfig(games=6, seed=11, opening=3)
    rows = play_pairing(connect4, "mcts:sims=200", "random", config, make_seat)
    assert [row["seats"] for row in rows] == ["AB", "BA"] * 3
    assert [row["scenario_seed"] for row in rows] == [11, 11, 12, 12, 13, 13]
    for first, second in zip(rows[::2], rows[1::2], strict=True):
        assert first["history"][:3] == second["history"][:3]  # the same seeded opening
    summary = summarize_pairing(rows)
    scores = [row["score_a"] for row in rows]
    assert summary["wins"] == scores.count(1.0) and summary["games"] == 6
    assert summary["wins"] >= 5  # a searcher against random
    a, b = summary["bots"]
    assert a["decisions"] == sum(row["a_moves"] for row in rows) > 0
    assert a["time_mean_ms"] > b["time_mean_ms"] and a["time_p95_ms"] > 0


def test_scenarios_per_kind_of_game():
    lazerbike = load_game("lazerbike")
    scenarios = make_scenarios(lazerbike, 3, seed=5)
    assert [s.options for s in scenarios] == [{"start": "random"}] * 3
    starts = {str(lazerbike.new_initial_state(s.seed, **s.options)) for s in scenarios}
    assert len(starts) == 3
    pig = load_game("pig")
    assert make_scenarios(pig, 1, seed=0)[0].options == {}  # the dice are the scenario
    sokoban = load_game("sokoban")
    specs = [s.game_spec for s in make_scenarios(sokoban, 3, 0, levels=["first", "push"])]
    assert specs == ["sokoban:level=first", "sokoban:level=push", "sokoban:level=first"]
    with pytest.raises(GameError, match="unknown level"):
        make_scenarios(sokoban, 1, 0, levels=["nope"])
    with pytest.raises(GameError, match="no levels"):
        make_scenarios(load_game("connect4"), 1, 0, levels=["first"])


def test_puzzle_pairing_compares_attempts_at_the_same_level():
    sokoban = load_game("sokoban")
    config = MatchConfig(games=2, seed=0, levels=("first",))
    rows = play_pairing(sokoban, "random", "random", config, make_seat)
    for row in rows:
        expected = 1.0 if row["return_a"] > row["return_b"] else 0.5
        expected = 0.0 if row["return_a"] < row["return_b"] else expected
        assert row["score_a"] == expected and row["history"].count("|") == 1


def test_tournament_outputs_are_written_and_readable(tmp_path):
    connect4 = load_game("connect4")
    specs = ["random", "mcts:sims=50", "mcts:sims=300"]
    config = MatchConfig(games=4, seed=3)
    rows, summary = run_tournament(connect4, specs, config, "round-robin", make_seat)
    assert [s["pairing"] for s in summary["pairings"]] == [
        "random vs mcts:sims=50",
        "random vs mcts:sims=300",
        "mcts:sims=50 vs mcts:sims=300",
    ]
    standings = {row["spec"]: row for row in summary["standings"]}
    assert sum(row["wins"] for row in standings.values()) == sum(
        row["losses"] for row in standings.values()
    )
    assert standings["random"]["games"] == 8
    files = write_outputs(tmp_path / "out", rows, summary)
    table = pd.read_parquet(files["games"])
    assert len(table) == 12 and set(table["pairing"]) == {s["pairing"] for s in summary["pairings"]}
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["format"] == "round-robin"
    import matplotlib.image

    assert Path(files["plot"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert matplotlib.image.imread(files["plot"]).shape[0] > 100

    _, gauntlet = run_tournament(connect4, specs, MatchConfig(games=2), "gauntlet", make_seat)
    assert [(s["spec_a"], s["spec_b"]) for s in gauntlet["pairings"]] == [
        ("random", "mcts:sims=50"),
        ("random", "mcts:sims=300"),
    ]


def test_a_pipeline_tournament_keeps_clock_and_memory_out_of_its_files(tmp_path):
    """A pipeline stage's tournament files (a DVC output) must be the same bytes for the same
    games: the per-move clock and peak memory go to the stage's metrics file, and the same games
    written again with other timings give the same files."""
    connect4 = load_game("connect4")
    config = MatchConfig(games=2, seed=5)
    specs = ["random", "mcts:sims=20"]
    rows, summary = run_tournament(connect4, specs, config, "round-robin", make_seat)
    out, measured = tmp_path / "out", tmp_path / "metrics" / "evaluate-measured.json"
    write_outputs(out, rows, summary, measured)
    table = pd.read_parquet(out / "games.parquet")
    assert set(table.columns) == set(rows[0]) - {
        f"{side}_{key}" for side in "ab" for key in ("time_mean_ms", "times_ms", "peak_kb")
    }
    written = json.loads((out / "summary.json").read_text())
    figures = json.loads(measured.read_text())
    (pairing,) = summary["pairings"]
    assert figures == {"pairings": [{
        "pairing": pairing["pairing"],
        "bots": [{"spec": b["spec"], "time_mean_ms": b["time_mean_ms"],
                  "time_p95_ms": b["time_p95_ms"], "peak_kb": b["peak_kb"]}
                 for b in pairing["bots"]],
    }]}  # fmt: skip
    for bot, figure in zip(written["pairings"][0]["bots"], figures["pairings"][0]["bots"],
                           strict=True):  # fmt: skip
        assert {**bot, **figure} == json.loads(json.dumps(
            next(b for b in pairing["bots"] if b["spec"] == figure["spec"])))  # fmt: skip
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    for row in rows:  # the same games, another machine's clock
        row["a_times_ms"] = [t + 1.0 for t in row["a_times_ms"]]
        row["a_peak_kb"] += 1
    write_outputs(out, rows, summarize_again(rows, summary), measured)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    assert json.loads(measured.read_text()) != figures


def summarize_again(rows, summary):
    return {**summary, "pairings": [summarize_pairing(rows)]}
