"""Guarded random play: hand-worked Connect 4 and Lazerbike positions, and seeded matches."""

from __future__ import annotations

import numpy as np
import pytest

from agents import AgentError, make
from agents.guards import BLOCK, SAFE, WIN, parse_guards, play_guarded_games
from engine import load_game
from engine.bits import new_rng
from engine.conformance import check_game
from engine.games.lazerbike import SIZE, state_from_setup
from engine.match import play_match


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def lazerbike():
    return load_game("lazerbike")


def choices(game, spec: str, state, draws: int = 60, player=None) -> set[int]:
    """Every action a freshly seeded agent picks, over `draws` seeds."""
    return {make(spec, game, seed=seed).step(state.clone(), player) for seed in range(draws)}


def test_parse_guards_and_bad_specs(connect4):
    assert parse_guards("win+block+safe") == WIN | BLOCK | SAFE
    assert parse_guards("safe") == SAFE
    with pytest.raises(AgentError, match="unknown guard 'fly'"):
        make("random:guards=win+fly", connect4)
    with pytest.raises(AgentError, match="unknown option"):
        make("random:guard=win", connect4)


def test_connect4_takes_the_win(connect4):
    # X: d1 e1 f1, O: d2 e2 f2; X to move wins at c1 (2) or g1 (6)
    state = connect4.state_from_history(connect4.parse_moves("445566"))
    assert choices(connect4, "random:guards=win", state) == {2, 6}
    assert len(choices(connect4, "random", state)) > 2  # unguarded play misses it


def test_connect4_blocks_the_only_threat(connect4):
    # X: a1 a2 a3, O: d1 e1; O to move must play column a (0)
    state = connect4.state_from_history(connect4.parse_moves("14151"))
    assert choices(connect4, "random:guards=block", state) == {0}
    assert choices(connect4, "random:guards=win+block+safe", state) == {0}


def test_connect4_does_not_play_under_a_threat(connect4):
    # X: c1 f1 a2 d2 e2 f2 threatens g2; O: a1 b1 d1 e1 c2 to move. O on g1 lets X win at g2;
    # every other column is harmless.
    state = connect4.state_from_history(connect4.parse_moves("31621445536"))
    assert state.current_player() == 1
    assert choices(connect4, "random:guards=block", state, draws=120) == {0, 1, 2, 3, 4, 5}
    assert 6 in choices(connect4, "random", state, draws=120)


def test_lazerbike_boxed_bike_takes_the_open_way(lazerbike):
    # bike A in the north-west corner heading north: forward and left leave the board
    state = state_from_setup(lazerbike, [(0, 0, "N"), (12, 12, "W")])
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {2}
    # bike A at (5, 5) heading north, trails ahead (4, 5) and to its left (5, 4): only right
    state = state_from_setup(lazerbike, [(5, 5, "N"), (12, 12, "W")])
    state.array[4 * SIZE + 5] = 2
    state.array[5 * SIZE + 4] = 2
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {2}
    assert choices(lazerbike, "random", state, player=0) == {0, 1, 2}
    # boxed on all three sides: nothing is safe, so every action stays possible
    state.array[5 * SIZE + 6] = 2
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {0, 1, 2}


def test_lazerbike_block_keeps_off_a_tile_the_other_bike_may_enter(lazerbike):
    # A at (7, 5) heading E, B at (7, 7) heading W: both may enter (7, 6), so forward kills A
    # (and B) when B goes forward too; turning kills A for no choice of B's
    state = state_from_setup(lazerbike, [(7, 5, "E"), (7, 7, "W")])
    assert choices(lazerbike, "random:guards=safe", state, player=0) == {0, 1, 2}
    assert choices(lazerbike, "random:guards=block+safe", state, player=0) == {0, 2}
    assert choices(lazerbike, "random:guards=win+block+safe", state, player=1) == {0, 2}
    # A's turns lead into trails: forward, the tile B may take, is A's one way out, so block
    # (which would keep nothing) gives way to safe
    state.array[6 * SIZE + 5] = 2
    state.array[8 * SIZE + 5] = 2
    assert choices(lazerbike, "random:guards=block+safe", state, player=0) == {1}
    # A at (6, 6) heading S, B at (7, 7) heading W: B may enter A's forward tile (7, 6) and,
    # turning right (north), A's left tile (6, 7); only A's right turn is sure
    state = state_from_setup(lazerbike, [(6, 6, "S"), (7, 7, "W")])
    assert choices(lazerbike, "random:guards=block+safe", state, player=0) == {2}


def test_guarded_random_scores_higher(connect4, lazerbike):
    result = play_match(
        connect4,
        lambda s: make("random:guards=win+block", connect4, seed=s),
        lambda s: make("random", connect4, seed=s + 1000),
        40,
        seed=3,
    )
    assert result.score >= 0.75, result
    result = play_match(
        lazerbike,
        lambda s: make("random:guards=safe", lazerbike, seed=s),
        lambda s: make("random", lazerbike, seed=s + 1000),
        40,
        seed=3,
        start="random",
    )
    assert result.score >= 0.75, result


def test_compiled_guarded_games(connect4, lazerbike):
    """The data-generation loop: guarded seat 0 beats random seat 1, and seats swap cleanly."""
    start = connect4.new_initial_state().array
    _, totals = play_guarded_games(connect4, start, [WIN | BLOCK, 0], 400, new_rng(5))
    assert totals[0] > 200  # mean return > 0.5 for the guarded side
    _, totals = play_guarded_games(connect4, start, [0, WIN | BLOCK], 400, new_rng(5))
    assert totals[1] > 200
    start = lazerbike.new_initial_state().array
    steps, totals = play_guarded_games(lazerbike, start, [SAFE, SAFE], 200, new_rng(1))
    plain, _ = play_guarded_games(lazerbike, start, [0, 0], 200, new_rng(1))
    assert steps > 2 * plain  # safe bikes survive much longer than random ones
    assert np.all(np.abs(totals) <= 200)


@pytest.mark.parametrize("name,scenario", [("connect4", {}), ("lazerbike", {"start": "random"})])
def test_games_still_conform(name, scenario):
    """The evaluate kernels were added to these modules; the protocol must still hold."""
    check_game(load_game(name), 1, **scenario)


def test_immediate_wins_at_a_team_lap_by_hand():
    """Teams AB v CD: C (north-west corner, heading north, B's head east of it) and D
    (south-east corner, heading south, A's head west of it) die whatever they play, so the lap
    ends the game, and team AB wins iff A or B lives through it. A (heading north at (14, 13))
    lives turning left or going forward, dies turning right into D's head; B (heading east at
    (0, 1)) lives going forward or turning right, dies turning left into the wall. A move that
    keeps its own bike alive wins whatever the others do; one that kills it wins only if the
    team-mate lives, which the team-mate's choice decides: not an immediate win."""
    from agents.guards import immediate_wins, win_buffers
    from engine.specialise import bind

    game = load_game("lazerbike", players=4, teams="0011")
    setup = [(14, 13, "N"), (0, 1, "E"), (0, 0, "N"), (14, 14, "S")]
    state = state_from_setup(game, setup)
    count = bind(immediate_wins, game.kernels.search())
    teams = np.asarray(game.teams, dtype=np.int64)
    buffers = win_buffers(state.array.shape[0], game.num_players, game.num_actions)

    def wins(player: int) -> tuple[int, set[int]]:
        n, won = count(state.array, player, teams, game.num_players, game.neutral_action, buffers)
        return won, {a for a in range(3) if n and _wins_every_lap(game, state, player, a)}

    assert wins(0) == (2, {0, 1})  # A: left, forward
    assert wins(1) == (2, {1, 2})  # B: forward, right
    assert wins(2) == (0, set()) and wins(3) == (0, set())  # C, D: every move dies
    # one of the laps behind the count: A turns right and dies, B lives, team AB still wins
    lap = state.clone()
    lap.apply_actions([2, 1, 1, 1])
    assert lap.returns() == [1.0, 1.0, -1.0, -1.0]


def _wins_every_lap(game, state, player: int, action: int) -> bool:
    """`action` ends the game with `player` strictly above every rival, for every lap."""
    import itertools

    options = [state.legal_actions(p) or [game.neutral_action] for p in range(4)]
    options[player] = [action]
    for joint in itertools.product(*options):
        child = state.clone()
        child.apply_actions(list(joint))
        if not child.is_terminal():
            return False
        out = child.returns()
        rivals = [q for q in range(4) if game.teams[q] != game.teams[player]]
        if not all(out[player] > out[q] for q in rivals):
            return False
    return True
