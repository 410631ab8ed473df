"""The solved Connect 4 positions and the optimal-move rate, checked against the exact solver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.base import Agent
from agents.connect4_bench import (
    DEFAULT_FILE,
    Labelled,
    agent_rate,
    build_positions,
    read_positions,
    write_positions,
)
from engine.games.connect4.solver import Connect4Solver
from engine.protocol import GameError

REPO = Path(__file__).resolve().parents[1]


def test_the_shipped_set_has_a_thousand_distinct_labelled_positions():
    rows = read_positions(DEFAULT_FILE)
    assert len(rows) >= 1000 and len({r.moves for r in rows}) == len(rows)
    for row in rows:
        stones = len(row.moves)
        playable = [s for s in row.scores if s is not None]
        assert 12 <= stones <= 34
        assert max(playable) < (43 - stones) // 2  # the side to move has no immediate win
        assert len(set(playable)) > 1  # not every legal move is optimal


def test_labels_agree_with_the_solver_on_a_sample():
    rows = read_positions(DEFAULT_FILE)
    solver = Connect4Solver()
    for i in np.random.default_rng(7).choice(len(rows), 12, replace=False):
        assert tuple(solver.analyze(rows[i].moves)) == rows[i].scores


def test_a_hand_worked_position():
    """Columns 4-7 hold two-stone blocks (no line longer than two), then X: 1, 1, 1 and O: 2, 3;
    O to move: every column but 1 lets X win next move, with its 12th stone (score
    (43 - 22) / 2 = 10); blocking at 1 is the best. (Late in the game, so the solve is instant.)

    . . . O X O X
    X . . O X O X
    X . . X O X O
    X O O X O X O
    """
    blocks = [3, 4, 3, 4, 5, 6, 5, 6, 4, 3, 4, 3, 6, 5, 6, 5]
    moves = [*blocks, 0, 1, 0, 2, 0]
    scores = Connect4Solver().analyze(moves)
    assert scores[0] is not None and scores[0] == max(s for s in scores if s is not None)
    assert scores[1:] == [-10] * 6
    labelled = Labelled(tuple(moves), tuple(scores))
    assert labelled.optimal(0) and not labelled.optimal(3) and not labelled.keeps_outcome(3)


def test_building_is_deterministic_and_round_trips(tmp_path):
    first = build_positions(count=6, seed=3, lo=20, hi=24)
    assert first == build_positions(count=6, seed=3, lo=20, hi=24)
    path = write_positions(tmp_path / "set.txt", first)
    assert read_positions(path) == first
    path.write_text("1234 1 2 3\n")
    with pytest.raises(GameError, match=r"set\.txt:1"):
        read_positions(path)


class Oracle(Agent):
    """Plays the solver's best (or worst) column: the rate's two ends."""

    def __init__(self, game, spec, seed=None, worst=False):
        super().__init__(game, spec, seed)
        self.solver, self.worst = Connect4Solver(), worst

    def step(self, state, player=None):
        scores = self.solver.analyze(state.history())
        legal = [c for c, s in enumerate(scores) if s is not None]
        pick = min if self.worst else max
        return pick(legal, key=lambda c: scores[c])


def test_the_rate_is_one_for_perfect_play_and_zero_for_the_worst():
    rows = read_positions(DEFAULT_FILE, limit=40)
    best = agent_rate("oracle", rows, make_agent=lambda s, g, seed: Oracle(g, s))
    worst = agent_rate("oracle", rows, make_agent=lambda s, g, seed: Oracle(g, s, worst=True))
    assert best["optimal_rate"] == 1.0 and best["outcome_rate"] == 1.0
    assert worst["optimal_rate"] == 0.0
    assert 0.05 < agent_rate("random", rows)["optimal_rate"] < 0.6


def test_the_split_by_value_shows_a_bot_that_keeps_the_outcome_but_not_the_score():
    """An oracle that keeps the outcome with the worst score of its sign (the slowest win, the
    quickest loss) keeps every outcome, is optimal in every drawn position (all score 0), and
    misses won and lost positions whose moves of that sign differ in score."""
    rows = read_positions(DEFAULT_FILE, limit=60)

    class Keeper(Oracle):
        def step(self, state, player=None):
            scores = self.solver.analyze(state.history())
            best = max(s for s in scores if s is not None)
            same = [c for c, s in enumerate(scores) if s is not None and (s > 0) - (s < 0)
                    == (best > 0) - (best < 0)]  # fmt: skip
            return min(same, key=lambda c: scores[c])

    rate = agent_rate("keeper", rows, make_agent=lambda s, g, seed: Keeper(g, s))
    split = rate["by_value"]
    assert sum(v["positions"] for v in split.values()) == len(rows)
    assert rate["outcome_rate"] == 1.0 and all(v["outcome_rate"] == 1.0 for v in split.values())
    assert split["drawn"]["optimal_rate"] == 1.0
    spread = [r for r in rows if r.best != 0 and len({s for s in r.scores if s is not None
                                                      and s * r.best > 0}) > 1]  # fmt: skip
    assert spread and round(rate["optimal_rate"] * len(rows)) == len(rows) - len(spread)


def test_chunks_through_a_mapper_give_the_choices_of_one_agent():
    """The cluster's path (chunks of positions, each a fresh agent, through a mapper) rates a
    deterministic agent exactly as one agent asked every position does; each chunk is a job."""
    rows = read_positions(DEFAULT_FILE, limit=14)
    whole = agent_rate("alphabeta:depth=2", rows)
    jobs = []

    def mapper(work, chunk_jobs):
        jobs.extend(chunk_jobs)
        return map(work, chunk_jobs)

    chunked = agent_rate("alphabeta:depth=2", rows, chunk=4, mapper=mapper)
    timed = ("ms_per_move_mean", "ms_per_move_p95")
    assert {k: v for k, v in chunked.items() if k not in timed} == {
        k: v for k, v in whole.items() if k not in timed
    }
    assert [len(job["histories"]) for job in jobs] == [4, 4, 4, 2]
    assert [job["seed"] for job in jobs] == [0, 1, 2, 3]


@pytest.mark.slow
def test_cli_rates_agents_and_refuses_bad_ones():
    def gridbots(*args):
        return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True,
                              text=True, cwd=REPO, env=dict(os.environ), timeout=300)  # fmt: skip

    done = gridbots("solved", "rate", "random", "alphabeta:depth=2", "--limit", "30", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["positions"] for r in results] == [30, 30]
    assert results[1]["optimal_rate"] > results[0]["optimal_rate"]
    bad = gridbots("solved", "rate", "puct:model=/missing.onnx", "--limit", "3")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "not found" in bad.stderr
