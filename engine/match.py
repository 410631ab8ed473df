"""In-process games and matches between trusted agents (anything with `step(state, player)`).

Process isolation, deadlines and tournaments build on these (agents issue); the engine never
imports an agent: seats are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from engine.protocol import CHANCE, SIMULTANEOUS, Game, State


class Seat(Protocol):
    def step(self, state: State, player: int | None = None) -> int: ...


def play_game(game: Game, seats: Sequence[Seat], seed: int = 0, **scenario: Any) -> State:
    """Plays one game to the end; chance moves are drawn from a generator seeded by `seed`."""
    state = game.new_initial_state(seed=seed, **scenario)
    chance_rng = np.random.default_rng(seed)
    while not state.is_terminal():
        player = state.current_player()
        if player == SIMULTANEOUS:
            state.apply_actions([_ask(seats[p], state, p) for p in range(game.num_players)])
        elif player == CHANCE:
            state.apply_action(state.random_action(chance_rng))
        else:
            state.apply_action(_ask(seats[player], state, player))
    return state


def _ask(seat: Seat, state: State, player: int) -> int:
    """A seat's action on a copy of the state (the neutral action when it cannot act)."""
    if not state.legal_actions(player):
        return state.game.neutral_action
    return seat.step(state.clone(), player)


@dataclass
class MatchResult:
    """Results from the first agent's point of view."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    histories: list[list[int]] = field(default_factory=list)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + self.draws / 2) / max(self.games, 1)


def play_match(
    game: Game,
    make_a: Callable[[int], Seat],
    make_b: Callable[[int], Seat],
    games: int,
    seed: int = 0,
    on_game: Callable[[int], None] | None = None,
    **scenario: Any,
) -> MatchResult:
    """A two-sided match: each seeded scenario is played twice, with sides swapped."""
    result = MatchResult()
    for index in range(games):
        scenario_seed = seed + index // 2
        a_seat = index % 2
        seats = [make_b(scenario_seed), make_b(scenario_seed)]
        seats[a_seat] = make_a(scenario_seed)
        final = play_game(game, seats, seed=scenario_seed, **scenario)
        returns = final.returns()
        mine, theirs = returns[a_seat], max(r for p, r in enumerate(returns) if p != a_seat)
        if mine > theirs:
            result.wins += 1
        elif mine < theirs:
            result.losses += 1
        else:
            result.draws += 1
        result.histories.append(final.history())
        if on_game:
            on_game(index)
    return result
