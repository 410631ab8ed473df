"""Puzzle evaluation: how often a bot solves each level, and in how many laps beside a reference.

A puzzle has no opponent, so strength is not a score against another bot but the success rate:
a bot plays every seat of the team on `attempts` seeded scenarios per level, each the level
after `opening` seeded random laps that do not end the game (Game.new_initial_state's
`opening`, so a deterministic bot meets different positions and the interval means
something). The reference (the game's `default_opponent`: Sokoban's A* planner) attempts the
very same scenarios, so "moves to solve" compares like with like: on the scenarios both solve,
the bot's mean laps beside the reference's. A lap is one move of every player (a turn-based
puzzle's step counts as one); the opening's laps are not counted.

The promotion gate needs nothing of this: engine.tournament already plays a puzzle pairing as
A's attempt against B's at the same scenario (the better return wins), so the gate compares
solve rates against the production version or the baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.protocol import Game, GameError
from engine.tournament import MakeSeat, MatchConfig, Scenario, play_scenario, score_summary


def laps(game: Game, history_length: int) -> int:
    """Laps of a history: one joint move of every player in a simultaneous game."""
    return history_length // game.num_players if game.simultaneous else history_length


def attempt_rows(
    game: Game,
    spec: str,
    attempts: int,
    seed: int,
    opening: int,
    make_seat: MakeSeat,
) -> list[dict[str, Any]]:
    """`spec` in every seat on `attempts` scenarios of `game`: one row per attempt."""
    if game.kind != "puzzle":
        raise GameError(f"{game.name} is a {game.kind}, not a puzzle: play a tournament")
    options = {"opening": int(opening)} if opening else {}
    config = MatchConfig(games=attempts, seed=seed, opening=int(opening))
    rows = []
    for index in range(attempts):
        scenario = Scenario(game.spec(), seed + index, dict(options))
        start = game.new_initial_state(scenario.seed, **options)  # the opening's own laps
        seats = [spec] * game.num_players
        final, _ = play_scenario(game, scenario, seats, config, index, make_seat, None)
        played = len(final.history()) - len(start.history())
        rows.append(
            {
                "level": game.spec(),
                "spec": spec,
                "attempt": index,
                "scenario_seed": scenario.seed,
                "opening_laps": laps(game, len(start.history())),
                "solved": bool(max(final.returns()) > 0),
                "laps": laps(game, played),
                "history": game.format_moves(final.history()),
            }
        )
    return rows


def level_summary(rows: Sequence[dict[str, Any]], reference: str) -> list[dict[str, Any]]:
    """Per level and bot: attempts, solved, success rate with its 95% Wilson interval, mean
    laps of the solved attempts, and beside the reference on the scenarios both solved: the
    bot's mean laps, the reference's and their ratio (None where they share no solved one)."""
    solved_by: dict[tuple[str, str], dict[int, int]] = {}
    for row in rows:
        key = (row["level"], row["spec"])
        solved_by.setdefault(key, {})
        if row["solved"]:
            solved_by[key][int(row["scenario_seed"])] = int(row["laps"])
    table = []
    for (level, spec), solved in solved_by.items():
        tried = sum(1 for r in rows if r["level"] == level and r["spec"] == spec)
        score = score_summary(len(solved), 0, tried - len(solved))
        ref = solved_by.get((level, reference), {})
        both = sorted(set(solved) & set(ref))
        mine = float(np.mean([solved[s] for s in both])) if both else None
        theirs = float(np.mean([ref[s] for s in both])) if both else None
        table.append(
            {
                "level": level,
                "spec": spec,
                "attempts": tried,
                "solved": len(solved),
                "success_rate": score["score"],
                "success_low": score["score_low"],
                "success_high": score["score_high"],
                "mean_laps": float(np.mean(list(solved.values()))) if solved else None,
                "reference": reference,
                "both_solved": len(both),
                "mean_laps_both": mine,
                "reference_laps_both": theirs,
                "laps_ratio": mine / theirs if both and theirs else None,
            }
        )
    return table
