"""Games and matches: one game loop for in-process seats and for isolated ones.

`run_game` drives any `ask(state, players) -> {player: action}`: in-process seats are asked
through `InProcessPlayers` (trusted agents, timed, illegal answers still rejected), isolated
ones through engine.isolation. The engine never imports an agent: seats are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from engine.isolation import SeatStats
from engine.protocol import CHANCE, SIMULTANEOUS, Game, State, describe_illegal

Ask = Callable[[State, Sequence[int]], dict[int, int]]


class Seat(Protocol):
    def step(self, state: State, player: int | None = None) -> int: ...


def random_states(game: Game, seed: int) -> Iterator[State]:
    """Every non-terminal state (chance nodes included) along seeded random games, one game
    after another without end: probe positions where two evaluators of the same network are
    compared. The state is advanced after the caller's turn: copy what you keep."""
    rng = np.random.default_rng(seed)
    while True:
        state = game.new_initial_state(seed=int(rng.integers(1 << 30)))
        while not state.is_terminal():
            yield state
            if state.current_player() == SIMULTANEOUS:
                state.apply_actions([state.random_action(rng, p) for p in range(game.num_players)])
            else:
                state.apply_action(state.random_action(rng))


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


def run_game(
    game: Game, ask: Ask, seed: int | None, chance_seed: int = 0, **scenario: Any
) -> State:
    """Plays one game to the end: turn-based games ask the player to move, simultaneous games
    every player who can act (the others play the neutral action); chance is seeded."""
    state = game.new_initial_state(seed=seed, **scenario)
    chance_rng = np.random.default_rng(chance_seed)
    while not state.is_terminal():
        player = state.current_player()
        if player == SIMULTANEOUS:
            living = [p for p in range(game.num_players) if state.legal_actions(p)]
            chosen = ask(state, living)
            state.apply_actions(
                [chosen.get(p, game.neutral_action) for p in range(game.num_players)]
            )
        elif player == CHANCE:
            state.apply_action(state.random_action(chance_rng))
        else:
            state.apply_action(ask(state, [player])[player])
    return state


class InProcessPlayers:
    """Asks trusted seats in turn, on copies of the state, and keeps per-seat statistics.

    Peak memory in-process is how far a seat's decisions raised the process's peak resident
    size (ru_maxrss delta, KiB): 0 when it stayed under an earlier peak. Rough, but free.
    """

    def __init__(self, seats: Sequence[Seat], rng: np.random.Generator | None = None):
        self.seats = list(seats)
        self.stats = [SeatStats() for _ in self.seats]
        self.rng = rng or np.random.default_rng(0)

    def __call__(self, state: State, players: Sequence[int]) -> dict[int, int]:
        import resource
        import time

        actions = {}
        for p in players:
            stats = self.stats[p]
            legal = state.legal_actions(p)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            start = time.perf_counter()
            action = self.seats[p].step(state.clone(), p)
            stats.times.append(time.perf_counter() - start)
            grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
            stats.peak_kb = max(stats.peak_kb, grown)
            if isinstance(action, int | np.integer) and int(action) in legal:
                stats.moves += 1
                actions[p] = int(action)
            else:
                stats.illegal += 1
                stats.note(describe_illegal(state, action, p, legal))
                actions[p] = legal[int(self.rng.integers(len(legal)))]
        return actions


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
