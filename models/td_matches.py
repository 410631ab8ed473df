"""Matches of TD networks: the study's 200-game comparison matrices and scores against agents.

Two protocols, both seeded:

- the study's (§4.1): the row agent plays black (seat 0) against the column agent for 200
  games from the initial position, each side moving by the rule it trained with (ε-greedy at
  its random factor, or softmax), since greedy networks would replay one game 200 times; the
  cell is the row agent's share of wins (draws count for neither, as in the study's tables).
  Networks against networks run wholly in numba (agents.td.net.duel).
- gridbots' (DESIGN.md, "Measuring strength"): greedy play against a named agent over seeded
  random openings, each played twice with sides swapped; the score counts a draw as half a
  win and comes with its 95% Wilson interval (engine.tournament).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.td.net import GREEDY, RANDOM, Workspace, bound, duel
from engine.bits import new_rng
from engine.tournament import MatchConfig, play_pairing, score_summary, summarize_pairing

LEARNER = "td:learner"  # the label of an in-memory network in a pairing


@dataclass
class Side:
    """A network and how it picks moves in a match (network None: the uniform random player)."""

    network: Any
    rule: int = GREEDY
    epsilon: float = 0.0
    temperature: float = 1.0

    def args(self, fallback: Any) -> tuple:
        n = self.network or fallback
        rule = RANDOM if self.network is None else self.rule
        return (n.arrays(), rule, self.epsilon, self.temperature)


def duel_returns(
    game, a: Side, b: Side, games: int, seed: int, a_seat: int | None = None, opening: int = 0
) -> np.ndarray:
    """A's return in each of `games` games against B (numba; both networks of one
    architecture). `a_seat` fixes A's seat (the study: 0, black); None alternates seats game
    by game. Openings: `opening` seeded random plies first (0: the initial position)."""
    fallback = a.network or b.network
    if fallback is None:
        raise ValueError("duel: at least one side must be a network")
    if a.network and b.network and a.network.architecture != b.network.architecture:
        raise ValueError("duel: both networks must share an architecture (use versus_agent)")
    starts = np.array(
        [game.new_initial_state(seed=seed + i, opening=opening).array for i in range(games)]
    )
    seats = np.array([a_seat if a_seat is not None else i % 2 for i in range(games)])
    results = np.zeros(games)
    bound(game, duel, fallback)(
        starts,
        seats,
        *a.args(fallback),
        *b.args(fallback),
        new_rng(seed),
        *Workspace(game).arrays,
        results,
    )
    return results


def study_cell(game, row: Side, column: Side, games: int, seed: int) -> dict[str, Any]:
    """One cell of a study matrix: the row agent as black, its wins in percent."""
    results = duel_returns(game, row, column, games, seed, a_seat=0)
    wins, draws = int((results > 0).sum()), int((results == 0).sum())
    return {
        "win_percent": 100.0 * wins / games,
        "wins": wins,
        "draws": draws,
        "losses": games - wins - draws,
        "games": games,
    }


def study_matrix(game, sides: dict[str, Side], games: int, seed: int) -> dict[str, Any]:
    """Every ordered pair (row as black) and each row against the random player, as the study's
    tables lay them out: {"labels", "cells": {row: {column: cell}}}."""
    labels = list(sides)
    cells: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(labels):
        cells[row] = {}
        for j, column in enumerate(labels):
            if i != j:
                cells[row][column] = study_cell(
                    game, sides[row], sides[column], games, seed + 1000 * (i * len(labels) + j)
                )
        cells[row]["random"] = study_cell(game, sides[row], Side(None), games, seed + 7 + i)
    return {"labels": labels, "cells": cells, "games": games, "protocol": "row plays black"}


def score_vs_random(game, network: Any, games: int, seed: int, opening: int = 4) -> dict:
    """Greedy network against the uniform random player, seats alternating (numba)."""
    results = duel_returns(game, Side(network), Side(None), games, seed, opening=opening)
    return _summary(results)


def _summary(results: np.ndarray) -> dict[str, Any]:
    wins, draws = int((results > 0).sum()), int((results == 0).sum())
    return score_summary(wins, draws, len(results) - wins - draws)


def versus_agent(
    game,
    network: Any,
    spec: str,
    games: int,
    seed: int,
    opening: int = 4,
    select: str = "greedy",
    epsilon: float = 0.0,
) -> dict[str, Any]:
    """The network (`select` rule) against an agent spec over seeded openings with sides
    swapped: W/D/L, score with its 95% interval, mean move times (engine.tournament)."""
    from agents import make
    from agents.td.agent import TDPlayer

    def make_seat(spec_: str, game_, seat_seed: int):
        if spec_ == LEARNER:
            return _PlayerSeat(TDPlayer(game_, network, select, epsilon, seed=seat_seed))
        return make(spec_, game_, seed=seat_seed)

    began = time.perf_counter()
    rows = play_pairing(
        game,
        LEARNER,
        spec,
        MatchConfig(games=games, seed=seed, opening=opening),
        make_seat=make_seat,
    )
    summary = summarize_pairing(rows)
    summary["seconds"] = time.perf_counter() - began
    summary["opening"] = opening
    summary["select"] = select
    return summary


class _PlayerSeat:
    """A TDPlayer as a match seat."""

    def __init__(self, player):
        self.player = player

    def step(self, state, player=None) -> int:
        return self.player.action(state.array)


def curve_point(game, opponents: Sequence[str], games: int, seed: int, opening: int = 4):
    """A learning-curve callback for models.td.train: the greedy score against each spec."""

    def point(network: Any, played: int) -> dict[str, float]:
        scores = {"curve_games": float(played)}
        for spec in opponents:
            found = versus_agent(game, network, spec, games, seed, opening)
            scores[f"score_vs_{spec}"] = found["score"]
            scores[f"score_low_vs_{spec}"] = found["score_low"]
            scores[f"score_high_vs_{spec}"] = found["score_high"]
        return scores

    return point
