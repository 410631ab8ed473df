"""Lazerbike rules on hand-worked positions, scenario validation and protocol conformance."""

from __future__ import annotations

import numpy as np
import pytest

from engine import load_game
from engine.bits import new_rng
from engine.conformance import check_game
from engine.games import lazerbike as lb
from engine.games.lazerbike import bikes, state_from_setup
from engine.loops import perft, random_playouts
from engine.protocol import SIMULTANEOUS, TERMINAL, GameError

L, F, R, N = 0, 1, 2, -2  # left, forward, right, neutral


def play(state, *laps):
    for lap in laps:
        state.apply_actions(list(lap))
    return state


def trail(state, bike: int) -> set[tuple[int, int]]:
    cells = np.flatnonzero(state.array[: lb.CELLS] == bike + 1)
    return {(int(c) // 15, int(c) % 15) for c in cells}


def test_forward_moves_leave_trails():
    g = load_game("lazerbike")
    s = play(g.new_initial_state(), (F, F), (F, F), (F, F))
    assert bikes(s) == [(7, 5, "E", True), (7, 9, "W", True)]
    assert trail(s, 0) == {(7, 2), (7, 3), (7, 4), (7, 5)}
    assert trail(s, 1) == {(7, 12), (7, 11), (7, 10), (7, 9)}
    assert s.current_player() == SIMULTANEOUS and s.returns() == [0.0, 0.0]
    assert "lap 3" in str(s)


@pytest.mark.parametrize(
    ("heading", "after_left", "after_forward", "after_right"),
    [
        ("N", (7, 6, "W"), (6, 7, "N"), (7, 8, "E")),
        ("E", (6, 7, "N"), (7, 8, "E"), (8, 7, "S")),
        ("S", (7, 8, "E"), (8, 7, "S"), (7, 6, "W")),
        ("W", (8, 7, "S"), (7, 6, "W"), (6, 7, "N")),
    ],
)
def test_turns_for_every_heading(heading, after_left, after_forward, after_right):
    g = load_game("lazerbike")
    for action, expected in zip((L, F, R), (after_left, after_forward, after_right), strict=True):
        s = play(state_from_setup(g, [(7, 7, heading), (0, 0, "E")]), (action, F))
        assert bikes(s)[0] == (*expected, True)
        assert bikes(s)[1] == (0, 1, "E", True)


def test_wall_kills():
    g = load_game("lazerbike")
    s = play(state_from_setup(g, [(0, 5, "N"), (7, 7, "E")]), (F, F))
    assert s.current_player() == TERMINAL
    assert bikes(s)[0] == (0, 5, "N", False)  # stays on its last tile
    assert s.returns() == [-1.0, 1.0]
    assert "over: B win" in str(s) and "a" in str(s).split("\n")[0]


def test_own_trail_kills():
    g = load_game("lazerbike")
    s = play(state_from_setup(g, [(5, 5, "E"), (12, 12, "W")]), (R, F), (R, F), (R, F))
    assert bikes(s)[0] == (5, 4, "N", True) and not s.is_terminal()
    play(s, (R, F))  # back onto (5, 5), its start tile
    assert s.returns() == [-1.0, 1.0]


def test_other_trail_kills():
    g = load_game("lazerbike")
    s = play(state_from_setup(g, [(7, 2, "E"), (5, 3, "S")]), (F, F))
    assert bikes(s) == [(7, 3, "E", True), (6, 3, "S", True)]
    play(s, (F, F))  # B enters (7, 3), A's trail
    assert s.returns() == [1.0, -1.0]
    assert bikes(s)[0] == (7, 4, "E", True)


def test_head_on_adjacent_both_die():
    g = load_game("lazerbike")
    s = play(state_from_setup(g, [(7, 6, "E"), (7, 7, "W")]), (F, F))
    assert s.is_terminal() and s.returns() == [0.0, 0.0]
    assert "over: draw" in str(s)


def test_entering_a_head_that_turns_away_still_kills():
    g = load_game("lazerbike")
    s = play(state_from_setup(g, [(7, 6, "E"), (7, 7, "W")]), (F, R))
    assert s.returns() == [-1.0, 1.0]
    assert bikes(s)[1] == (6, 7, "N", True)


def test_one_tile_apart_both_enter_middle():
    g = load_game("lazerbike")
    s = play(state_from_setup(g, [(7, 5, "E"), (7, 7, "W")]), (F, F))
    assert s.returns() == [0.0, 0.0]
    assert trail(s, 0) == {(7, 5)} and trail(s, 1) == {(7, 7)}  # (7, 6) stays free
    assert s.array[7 * 15 + 6] == 0


def test_same_tile_four_bikes():
    g = load_game("lazerbike", players=4)
    setup = [(7, 6, "E"), (7, 8, "W"), (6, 7, "S"), (8, 7, "N")]
    assert play(state_from_setup(g, setup), (F, F, F, F)).returns() == [0.0] * 4
    s = play(state_from_setup(g, setup), (F, F, F, L))  # D swerves west: three die
    assert s.returns() == [-1.0, -1.0, -1.0, 1.0]
    assert bikes(s)[3] == (8, 6, "W", True)


def test_symmetric_four_meet_in_the_centre():
    g = load_game("lazerbike", players=4)
    s = g.new_initial_state()
    assert bikes(s) == [
        (7, 2, "E", True),
        (7, 12, "W", True),
        (2, 7, "S", True),
        (12, 7, "N", True),
    ]
    play(s, *[(F, F, F, F)] * 4)
    assert not s.is_terminal()
    play(s, (F, F, F, F))
    assert s.returns() == [0.0] * 4


# A (0,3) hits the north wall in lap 1, B (5,12) the east wall in lap 3, C (10,2) the west
# wall in lap 4, D (12,12) runs north throughout.
ATTRITION = [(0, 3, "N"), (5, 12, "E"), (10, 2, "W"), (12, 12, "N")]


def test_four_bikes_last_standing_wins():
    g = load_game("lazerbike", players=4)
    s = play(state_from_setup(g, ATTRITION), (F, F, F, F))
    assert [b[3] for b in bikes(s)] == [False, True, True, True]
    assert s.current_player() == SIMULTANEOUS
    assert s.legal_actions(0) == [] and s.legal_actions(1) == [0, 1, 2]
    play(s, (N, F, F, F), (N, F, R, F))
    assert [b[3] for b in bikes(s)] == [False, False, True, True] and not s.is_terminal()
    assert bikes(s)[2] == (9, 0, "N", True)
    play(s, (N, N, L, F))
    assert s.returns() == [-1.0, -1.0, -1.0, 1.0]
    assert bikes(s)[3] == (8, 12, "N", True)
    assert s.history()[:4] == [F, F, F, F] and s.history()[-4:] == [N, N, L, F]


def test_teams_two_against_two():
    g = load_game("lazerbike", players=4, teams="0101")
    assert g.teams == (0, 1, 0, 1)
    s = play(state_from_setup(g, ATTRITION), (F, F, F, F), (N, F, F, F))
    assert not s.is_terminal()  # A is dead but team-mate C lives
    play(s, (N, F, R, F))
    assert not s.is_terminal()  # one bike per team left
    play(s, (N, N, L, F))
    assert s.returns() == [-1.0, 1.0, -1.0, 1.0]  # dead B shares D's win
    assert "over: BD win" in str(s)


def test_team_survives_with_both_members():
    g = load_game("lazerbike", players=4, teams="0011")
    # A and B (team 0) both hit the north wall; C and D live on.
    setup = [(0, 3, "N"), (0, 9, "N"), (10, 2, "E"), (12, 12, "N")]
    s = play(state_from_setup(g, setup), (F, F, F, F))
    assert s.returns() == [-1.0, -1.0, 1.0, 1.0]


def test_simultaneous_last_deaths_draw_earlier_dead_lose():
    g = load_game("lazerbike", players=3)
    s = play(state_from_setup(g, [(0, 3, "N"), (7, 4, "E"), (7, 8, "W")]), (F, F, F))
    assert not s.is_terminal()
    play(s, (N, F, F))  # B and C both enter (7, 6)
    assert s.returns() == [-1.0, 0.0, 0.0]


def test_team_loses_when_last_member_dies_in_a_collision():
    g = load_game("lazerbike", players=4, teams="0101")
    setup = [(0, 3, "N"), (7, 4, "E"), (7, 8, "W"), (6, 6, "S")]
    s = play(state_from_setup(g, setup), (F, F, F, L))  # A dies; D turns east to (6, 7)
    assert [b[3] for b in bikes(s)] == [False, True, True, True]
    play(s, (N, F, F, L))  # B and C both enter (7, 6); D turns north to (5, 7)
    assert bikes(s)[3] == (5, 7, "N", True)
    assert s.returns() == [-1.0, 1.0, -1.0, 1.0]


def test_team_draw_when_both_teams_die_together():
    g = load_game("lazerbike", players=4, teams="0101")
    setup = [(0, 3, "N"), (7, 4, "E"), (7, 8, "W"), (0, 10, "N")]
    s = play(state_from_setup(g, setup), (F, F, F, L))  # A dies, D turns west to (0, 9)
    play(s, (N, F, F, R))  # B, C collide; D turns north into the wall
    assert s.returns() == [0.0, 0.0, 0.0, 0.0]  # dead A shares team 0's draw


def test_observation_planes():
    g = load_game("lazerbike", players=3, teams="001")
    s = play(state_from_setup(g, [(7, 2, "E"), (3, 3, "S"), (10, 10, "N")]), (F, F, F))
    obs = s.observation_tensor(0)
    assert obs.shape == (12, 15, 15)
    assert np.argwhere(obs[0]).tolist() == [[7, 3]]
    assert np.argwhere(obs[1]).tolist() == [[7, 2], [7, 3]]
    assert np.argwhere(obs[2]).tolist() == [[3, 3], [4, 3]]
    assert np.argwhere(obs[3]).tolist() == [[9, 10], [10, 10]]
    assert np.argwhere(obs[4]).tolist() == [[4, 3], [9, 10]]
    assert obs[5].sum() == 225 - 6
    assert obs[7].all() and not obs[6].any() and not obs[8].any() and not obs[9].any()
    other = s.observation_tensor(2)
    assert np.argwhere(other[3]).tolist() == [[3, 3], [4, 3], [7, 2], [7, 3]]
    assert other[6].all()  # C heads north
    # planes 10-11: the free tiles the own team reaches strictly first, and another team's,
    # against breadth-first distances worked out here over the free tiles
    free = obs[5].astype(bool)

    def steps(start):
        dist, frontier = {start: 0}, [start]
        while frontier:
            nxt = []
            for r, c in frontier:
                for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if 0 <= rr < 15 and 0 <= cc < 15 and free[rr, cc] and (rr, cc) not in dist:
                        dist[rr, cc] = dist[r, c] + 1
                        nxt.append((rr, cc))
            frontier = nxt
        return dist

    heads = {(7, 3): 0, (4, 3): 0, (9, 10): 1}  # tile: team
    dists = {head: steps(head) for head in heads}
    for seen, team in ((obs, 0), (other, 1)):
        for r, c in np.argwhere(free).tolist():
            reach = {}
            for head, d in dists.items():
                if (r, c) in d:
                    reach[heads[head]] = min(reach.get(heads[head], 99), d[r, c])
            first = [t for t, d in reach.items() if d == min(reach.values())]
            owner = first[0] if len(first) == 1 else None
            assert seen[10, r, c] == (owner == team) and seen[11, r, c] == (owner == 1 - team)
    assert not (obs[10] * obs[11]).any() and not (obs[10] * ~free).any()
    assert obs[10].sum() > 100 and obs[11].sum() > 40  # C holds the south-east
    value = (obs[10].sum() - obs[11].sum()) / free.sum()
    assert g.evaluate(s.array, 0) == pytest.approx(value)


def test_random_start_is_seeded_and_spaced():
    g = load_game("lazerbike", players=4)
    for seed in range(30):
        placed = bikes(g.new_initial_state(seed, start="random"))
        assert placed == bikes(g.new_initial_state(seed, start="random"))
        for i, (r, c, h, alive) in enumerate(placed):
            assert alive and 1 <= r <= 13 and 1 <= c <= 13
            room = {"N": r, "E": 14 - c, "S": 14 - r, "W": c}[h]
            assert room >= 3
            for r2, c2, _, _ in placed[:i]:
                assert max(abs(r - r2), abs(c - c2)) >= 3
    starts = {tuple(bikes(g.new_initial_state(seed, start="random"))) for seed in range(10)}
    assert len(starts) > 1


@pytest.mark.parametrize(
    ("params", "scenario"),
    [
        ({"players": 1}, {}),
        ({"players": 5}, {}),
        ({"players": 4, "teams": "01"}, {}),
        ({"players": 4, "teams": "0000"}, {}),
        ({"players": 2, "teams": "0a"}, {}),
        ({}, {"start": "diagonal"}),
        ({}, {"start": [(7, 2, "E")]}),
        ({}, {"start": [(7, 2, "E"), (7, 15, "W")]}),
        ({}, {"start": [(7, 2, "E"), (7, 2, "W")]}),
        ({}, {"start": [(7, 2, "E"), (7, 5, "X")]}),
        ({}, {"speed": 2}),
    ],
)
def test_bad_options_raise(params, scenario):
    with pytest.raises(GameError):
        load_game("lazerbike", **params).new_initial_state(0, **scenario)


def test_teams_from_a_game_spec_keep_leading_zero():
    assert load_game("lazerbike", players=4, teams=101).teams == (0, 1, 0, 1)


def test_notation():
    g = load_game("lazerbike")
    assert [g.action_to_string(0, a) for a in (L, F, R, N)] == ["left", "forward", "right", "-"]
    assert g.parse_moves("1, 2 0 -2") == [1, 2, 0, -2]
    assert g.parse_moves("left Forward r -") == [0, 1, 2, -2]
    with pytest.raises(GameError):
        g.parse_moves("1 up")
    assert g.parse_moves(g.format_moves([0, 1, -2, 2])) == [0, 1, -2, 2]


def test_kernel_loops_bounds():
    for players in (2, 4):
        g = load_game("lazerbike", players=players)
        s = g.new_initial_state()
        assert perft(*g.kernels.search(), s.array, 1, players, 3, g.neutral_action) == 3**players
        moves, totals = random_playouts(
            *g.kernels.search(), s.array, players, 3, g.neutral_action, 2000, new_rng(5)
        )
        assert 2000 * 1 <= moves <= 2000 * g.max_game_length
        assert np.all(np.abs(totals) <= 2000)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("params", "start"),
    [
        ({"players": 2}, "symmetric"),
        ({"players": 2}, "random"),
        ({"players": 3}, "symmetric"),
        ({"players": 3}, "random"),
        ({"players": 4}, "random"),
        ({"players": 4, "teams": "0101"}, "symmetric"),
        ({"players": 4, "teams": "0101"}, "random"),
    ],
)
def test_conformance(seed, params, start):
    check_game(load_game("lazerbike", **params), seed, start=start)


def test_conformance_explicit_setup():
    g = load_game("lazerbike", players=4)
    check_game(g, 0, start=ATTRITION)
