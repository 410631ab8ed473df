"""The Sokoban planning agent: every shipped level solved, hand-checked optimal plans, re-plans."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.base import AgentError
from agents.search.planner import PlannerAgent, compress, read_grid
from engine import load_game
from engine.conformance import check_game
from engine.games.sokoban.levels import level_names
from engine.games.sokoban.rules import layout
from engine.match import play_game
from engine.pathfind import DOWN, LEFT, RIGHT, UP

SINGLE = [n for n in level_names() if load_game("sokoban", level=n).num_players == 1]
MULTI = [n for n in level_names() if n not in SINGLE]


def solve_level(name: str, spec: str = "sokoban", seed: int = 0):
    g = load_game("sokoban", level=name)
    seats = [agents.make(spec, g, seed=seed + p) for p in range(g.num_players)]
    return g, play_game(g, seats, seed=seed)


def test_single_player_levels_exist():
    assert {"first", "push", "corner", "warehouse"} <= set(SINGLE)


@pytest.mark.parametrize("name", SINGLE)
def test_single_player_level_solved_within_limit(name):
    g, final = solve_level(name)
    assert final.returns() == [1.0], str(final)
    assert len(final.history()) <= g.max_game_length


@pytest.mark.parametrize("name", MULTI)
def test_multi_player_level_solved_cooperatively(name):
    g, final = solve_level(name, "planner")
    assert final.returns() == [1.0] * g.num_players, str(final)


def plan_of(name: str) -> list[tuple[int, int]]:
    g = load_game("sokoban", level=name)
    agent = PlannerAgent(g, "planner")
    agent.plan(g.new_initial_state().array)
    return agent.steps


def replay(name: str, steps) -> tuple[int, list[float]]:
    """(pushes, returns) of a sequential plan played on the game itself."""
    g = load_game("sokoban", level=name)
    state = g.new_initial_state()
    count = 0
    for _, move in steps:
        before = layout(state.array)
        state.apply_actions([int(before["moves"][move])])
        after = layout(state.array)
        if not all(np.array_equal(before[k], after[k]) for k in ("boxes", "holes")):
            count += 1
    return count, state.returns()


def test_plans_are_optimal_on_hand_checked_levels():
    # first: "wp   ew", four steps right
    assert plan_of("first") == [(0, RIGHT)] * 4
    # push: "wp b h  ew": one step, two pushes (the box fills the hole), four steps on: 7 moves
    assert plan_of("push") == [(0, RIGHT)] * 7
    assert replay("push", plan_of("push")) == (2, [1.0])
    # corner: box (2,3) to hole (4,6): reach (2,2) in 2, push right x3, round to (1,6) in 2,
    # push down x2, walk down 2 onto the exit (5,6): 11 moves, 5 pushes; every box route needs
    # 3 right + 2 down pushes and one change of side (2 moves), so none is shorter.
    steps = plan_of("corner")
    assert len(steps) == 11
    moves = [m for _, m in steps]
    assert moves.count(RIGHT) >= 3 and moves.count(DOWN) >= 4
    assert UP in moves and LEFT not in moves
    assert replay("corner", steps) == (5, [1.0])


def test_compress_runs_independent_players_in_parallel():
    g = load_game("sokoban", level="corridors")
    grid, start = read_grid(layout(g.new_initial_state().array))
    walk0 = [(0, RIGHT)] * 3
    walk1 = [(1, RIGHT)] * 3
    laps = compress(grid, start, walk0 + walk1)
    assert laps == [{0: RIGHT, 1: RIGHT}] * 3
    # one player following the other's footsteps waits until the tile is free
    g = load_game("sokoban", level="duo")
    grid, start = read_grid(layout(g.new_initial_state().array))
    laps = compress(grid, start, [(0, RIGHT), (0, RIGHT), (1, RIGHT)])
    assert laps == [{0: RIGHT, 1: RIGHT}, {0: RIGHT}]


def test_replans_after_leaving_the_plan():
    g = load_game("sokoban", level="warehouse")
    agent = agents.make("planner", g, seed=0)
    state = g.new_initial_state()
    assert agent.step(state.clone(), 0) in (0, 1, 2, 3)
    first_plan = agent.laps
    for move in ("down", "left"):  # a detour the plan does not contain: (4,2) to (5,1)
        state.apply_actions([g.parse_moves(move)[0]])
    assert list(layout(state.array)["players"]) == [5 * 14 + 1]
    agent.step(state.clone(), 0)
    assert agent.laps is not first_plan  # planned again from the new position
    while not state.is_terminal():
        state.apply_actions([agent.step(state.clone(), 0)])
    assert state.returns() == [1.0]


def test_errors_and_conformance():
    with pytest.raises(AgentError, match="layout"):
        agents.make("planner", load_game("lazerbike"))
    with pytest.raises(AgentError, match="unknown"):
        agents.make("sokoban:depth=2", load_game("sokoban"))
    for name, seed in (("warehouse", 0), ("duo", 1)):
        check_game(load_game("sokoban", level=name), seed)
