"""Protocol checks every game must pass; the test suite and `new-game` test files call these.

Each check plays seeded random games through the public `State` API and raises AssertionError
with a readable message on the first violation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.bits import new_rng
from engine.loops import count_leaves, play_random_games
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game, IllegalActionError, State


def random_game(game: Game, seed: int, **scenario: Any) -> State:
    """Plays one seeded random game to the end, checking each step; returns the final state."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed=seed, **scenario)
    steps = 0
    while not state.is_terminal():
        player = state.current_player()
        if player == SIMULTANEOUS:
            state.apply_actions([state.random_action(rng, p) for p in range(game.num_players)])
        else:
            assert player == CHANCE or 0 <= player < game.num_players, f"bad player {player}"
            state.apply_action(state.random_action(rng))
        steps += 1
        assert steps <= game.max_game_length, (
            f"{game.name}: game longer than max_game_length={game.max_game_length}"
        )
    return state


def check_random_play_ends(game: Game, seed: int, **scenario: Any) -> None:
    final = random_game(game, seed, **scenario)
    assert final.current_player() == TERMINAL
    assert final.legal_actions() == []
    check_returns(game, final)


def check_returns(game: Game, final: State) -> None:
    """Zero-sum for duels, shared by team-mates, one shared value for puzzles."""
    values = final.returns()
    assert len(values) == game.num_players
    assert all(np.isfinite(values))
    if game.kind == "duel":
        assert abs(sum(values)) < 1e-9, f"duel returns not zero-sum: {values}"
    for a in range(game.num_players):
        for b in range(game.num_players):
            if game.teams[a] == game.teams[b]:
                assert values[a] == values[b], f"team-mates {a},{b} differ: {values}"
    if game.kind == "puzzle":
        assert len(set(values)) == 1


def _some_states(game: Game, seed: int, **scenario: Any) -> list[State]:
    """Every position along one seeded random game."""
    rng = np.random.default_rng(seed + 1)
    state = game.new_initial_state(seed=seed, **scenario)
    states = [state.clone()]
    while not state.is_terminal():
        if state.is_simultaneous_node():
            state.apply_actions([state.random_action(rng, p) for p in range(game.num_players)])
        else:
            state.apply_action(state.random_action(rng))
        states.append(state.clone())
    return states


def check_clone_independent(game: Game, seed: int, **scenario: Any) -> None:
    rng = np.random.default_rng(seed)
    for state in _some_states(game, seed, **scenario)[:-1]:
        before = (state.array.copy(), state.history(), str(state))
        twin = state.clone()
        if twin.is_simultaneous_node():
            twin.apply_actions([twin.random_action(rng, p) for p in range(game.num_players)])
        else:
            twin.apply_action(twin.random_action(rng))
        assert np.array_equal(state.array, before[0]), "clone shares its array"
        assert state.history() == before[1] and str(state) == before[2]


def check_history_round_trip(game: Game, seed: int, **scenario: Any) -> None:
    """Rebuilding replays the whole history, so checking every position is quadratic in the
    game's length (seconds per example on long tactics games): the first, the last and up to
    ten seeded positions between them."""
    states = _some_states(game, seed, **scenario)
    inner = np.random.default_rng(seed + 2).permutation(np.arange(1, len(states) - 1))[:10]
    for state in [states[i] for i in sorted({0, len(states) - 1, *inner.tolist()})]:
        rebuilt = game.state_from_history(state.history(), seed=seed, **scenario)
        assert np.array_equal(rebuilt.array, state.array), "state_from_history differs"
        assert rebuilt.history() == state.history()
        text = game.format_moves(state.history())
        assert game.parse_moves(text) == state.history(), "format/parse of moves differ"


def check_illegal_actions_rejected(game: Game, seed: int, **scenario: Any) -> None:
    for state in _some_states(game, seed, **scenario):
        before = (state.array.copy(), state.history())
        player = state.current_player()
        if player == SIMULTANEOUS:
            legal = [state.legal_actions(p) for p in range(game.num_players)]
            acting = next(p for p, actions in enumerate(legal) if actions)
            joint = [actions[0] if actions else game.neutral_action for actions in legal]
            joint[acting] = _not_in(legal[acting], game)
            _expect_illegal(state.apply_actions, joint)
        else:
            _expect_illegal(state.apply_action, _not_in(state.legal_actions(), game))
            _expect_illegal(state.apply_action, -7)
        assert np.array_equal(state.array, before[0]) and state.history() == before[1], (
            "an illegal action changed the state"
        )


def _not_in(legal: list[int], game: Game) -> int:
    for action in range(game.num_actions + 1):
        if action not in legal:
            return action
    raise AssertionError("every action is legal")


def _expect_illegal(play, move) -> None:
    try:
        play(move)
    except IllegalActionError:
        return
    raise AssertionError("an illegal action was accepted")


def check_masks_and_observations(game: Game, seed: int, **scenario: Any) -> None:
    for state in _some_states(game, seed, **scenario):
        player = state.current_player()
        players = range(game.num_players) if player == SIMULTANEOUS else [player]
        for p in players:
            if p < 0:
                continue
            mask = state.legal_actions_mask(p)
            assert mask.shape == (game.num_actions,)
            assert sorted(np.flatnonzero(mask).tolist()) == sorted(state.legal_actions(p))
            obs = state.observation_tensor(p)
            assert obs.shape == tuple(game.observation_shape)
            assert np.all(np.isfinite(obs))
        if player == CHANCE:
            outcomes = state.chance_outcomes()
            total = sum(p for _, p in outcomes)
            bound = game.num_actions + game.chance_ids
            assert all(0 <= a < bound for a, _ in outcomes), "a chance outcome outside its ids"
            assert abs(total - 1.0) < 1e-9, f"chance probabilities sum to {total}"
        assert str(state)


def check_kernel_loops(game: Game, seed: int, **scenario: Any) -> None:
    """The generic numba loops run on this game and agree with the State API at depth 1."""
    state = game.new_initial_state(seed=seed, **scenario)
    moves, totals = play_random_games(game, state.array, 20, new_rng(seed))
    assert moves > 0 and totals.shape == (game.num_players,)
    player = state.current_player()
    if player == SIMULTANEOUS:
        expected = int(
            np.prod([max(1, len(state.legal_actions(p))) for p in range(game.num_players)])
        )
    else:
        expected = len(state.legal_actions())
    assert count_leaves(game, state.array, 1) == expected


ALL_CHECKS = (
    check_random_play_ends,
    check_clone_independent,
    check_history_round_trip,
    check_illegal_actions_rejected,
    check_masks_and_observations,
    check_kernel_loops,
)


def check_game(game: Game, seed: int, **scenario: Any) -> None:
    """Runs every protocol check for one seed."""
    for check in ALL_CHECKS:
        check(game, seed, **scenario)
