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


def compare_levels(
    levels: Sequence[Game],
    spec: str,
    reference: str,
    attempts: int,
    seed: int,
    opening: int,
    make_seat: MakeSeat,
    clock: Any = None,
) -> dict[str, Any]:
    """`spec` and `reference` on the same scenarios of every level: per level the bot's solved
    attempts with their 95% interval, the reference's, the laps both took on the scenarios both
    solved, and each side's seconds per attempt (`clock`, time.perf_counter by default);
    `at_reference_rate`: every level solved at least as often as the reference solves it."""
    import time

    clock = clock or time.perf_counter
    table = []
    for game in levels:
        seconds = {}
        rows = []
        for who in dict.fromkeys([spec, reference]):
            began = clock()
            rows += attempt_rows(game, who, attempts, seed, opening, make_seat)
            seconds[who] = (clock() - began) / max(1, attempts)
        summary = {r["spec"]: r for r in level_summary(rows, reference)}
        mine, theirs = summary[spec], summary[reference]
        table.append(
            {
                "level": game.spec(),
                "players": game.num_players,
                "attempts": attempts,
                "solved": mine["solved"],
                "success_rate": mine["success_rate"],
                "success_low": mine["success_low"],
                "success_high": mine["success_high"],
                "reference_solved": theirs["solved"],
                "reference_rate": theirs["success_rate"],
                "at_reference_rate": mine["solved"] >= theirs["solved"],
                "mean_laps": mine["mean_laps"],
                "both_solved": mine["both_solved"],
                "laps_both": mine["mean_laps_both"],
                "reference_laps_both": mine["reference_laps_both"],
                "laps_ratio": mine["laps_ratio"],
                "seconds_per_attempt": round(seconds[spec], 4),
                "reference_seconds_per_attempt": round(seconds[reference], 4),
            }
        )
    solved = sum(r["solved"] for r in table)
    tried = attempts * len(table)
    overall = score_summary(solved, 0, tried - solved)
    return {
        "spec": spec,
        "reference": reference,
        "attempts_per_level": attempts,
        "seed": seed,
        "opening_laps": opening,
        "levels": table,
        "attempts": tried,
        "solved": solved,
        "reference_solved": sum(r["reference_solved"] for r in table),
        "success_rate": overall["score"],
        "success_low": overall["score_low"],
        "success_high": overall["score_high"],
        "levels_at_reference_rate": sum(r["at_reference_rate"] for r in table),
        "at_reference_rate": all(r["at_reference_rate"] for r in table),
    }
