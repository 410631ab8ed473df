"""`alphabeta:depth=N,results=flat` is study 002's minimax opponent, move for move.

The reference here is written from the study's text alone: Algorithm 3 (plain minimax, depth
counted in plies, a finished game or depth 0 scored by the heuristic) and §3.2's weights
(corners 4, discs next to a free corner -2, edges 1, frontier -0.2, discs 0.5, mobility 2, a
win +infinity, a loss -infinity), each feature counted in pure Python from the bitboards, own
minus opponent's. The chosen move is the first best in the game's legal order. A draw scores 0,
as the heuristic's balanced positions do (the study does not say).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents import make
from engine import load_game
from engine.games.othello import state_from_diagram
from engine.protocol import State

ALL = (1 << 64) - 1
DIRECTIONS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]
CORNERS = {0: (1, 8, 9), 7: (6, 14, 15), 56: (48, 49, 57), 63: (54, 55, 62)}
WEIGHTS = {"corners": 40, "near_free_corner": -20, "edges": 10, "frontier": -2, "discs": 5,
           "mobility": 20}  # tenths, so that sums are exact  # fmt: skip


def squares(bits: int) -> set[int]:
    return {k for k in range(64) if bits >> k & 1}


def placements(own: set[int], opp: set[int]) -> set[int]:
    """Empty squares from which a line of opponent discs ends on an own disc."""
    found = set()
    for k in set(range(64)) - own - opp:
        r, c = divmod(k, 8)
        for dr, dc in DIRECTIONS:
            rr, cc, seen = r + dr, c + dc, 0
            while 0 <= rr < 8 and 0 <= cc < 8 and rr * 8 + cc in opp:
                rr, cc, seen = rr + dr, cc + dc, seen + 1
            if seen and 0 <= rr < 8 and 0 <= cc < 8 and rr * 8 + cc in own:
                found.add(k)
                break
    return found


def features(own: set[int], opp: set[int]) -> dict[str, int]:
    empty = set(range(64)) - own - opp
    border = {k for k in range(64) if k % 8 in (0, 7) or k // 8 in (0, 7)}
    near = {n for corner, ns in CORNERS.items() for n in ns}
    near_free = {n for corner, ns in CORNERS.items() if corner in empty for n in ns}
    frontier = set()
    for k in own:
        r, c = divmod(k, 8)
        for dr, dc in DIRECTIONS:
            if 0 <= r + dr < 8 and 0 <= c + dc < 8 and (r + dr) * 8 + c + dc in empty:
                frontier.add((r + dr) * 8 + c + dc)
    return {
        "corners": len(own & set(CORNERS)),
        "near_free_corner": len(own & near_free),
        "edges": len(own & (border - set(CORNERS) - near)),
        "frontier": len(frontier),
        "discs": len(own),
        "mobility": len(placements(own, opp)),
    }


def heuristic(state: State, me: int) -> float:
    """§3.2 for `me`: +-infinity for a finished game, else the weighted difference (tenths)."""
    if state.is_terminal():
        result = state.returns()[me]
        return math.inf if result > 0 else -math.inf if result < 0 else 0.0
    own, opp = (squares(int(state.array[p]) & ALL) for p in (me, 1 - me))
    mine, theirs = features(own, opp), features(opp, own)
    return float(sum(WEIGHTS[k] * (mine[k] - theirs[k]) for k in WEIGHTS))


def minimax(state: State, depth: int, me: int) -> float:
    """Algorithm 3 without pruning (pruning never changes the value)."""
    if depth == 0 or state.is_terminal():
        return heuristic(state, me)
    values = []
    for move in state.legal_actions():
        child = state.clone()
        child.apply_action(move)
        values.append(minimax(child, depth - 1, me))
    return max(values) if state.current_player() == me else min(values)


def study_move(state: State, depth: int) -> tuple[int, float]:
    """The first move of best value in the legal order, and that value."""
    me = state.current_player()
    best, best_value = None, -math.inf
    for move in state.legal_actions():
        child = state.clone()
        child.apply_action(move)
        value = minimax(child, depth - 1, me)
        if best is None or value > best_value:
            best, best_value = move, value
    return best, best_value


def positions(game, count: int, seed: int) -> list[State]:
    """Seeded random positions from the opening to the last moves (passes included)."""
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < count:
        state = game.new_initial_state()
        stop = int(rng.integers(0, 60))
        while not state.is_terminal() and len(state.history()) < stop:
            state.apply_action(state.random_action(rng))
        if not state.is_terminal():
            found.append(state)
    return found


def test_weights_of_a_hand_worked_position():
    """Black: a1 (corner), b1 (next to a taken corner: no penalty), d1 (edge), g7 (next to the
    free corner h8); white: c1 (edge), h1 (corner), e5. Black to move."""
    game = load_game("othello")
    s = state_from_diagram(
        """
        X X O X . . . O
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . O . . .
        . . . . . . . .
        . . . . . . X .
        . . . . . . . .
        """
    )
    black, white = features({0, 1, 3, 54}, {2, 7, 36}), features({2, 7, 36}, {0, 1, 3, 54})
    # corners 1-1, next to a free corner 1 (g7)-0, edges 1 (d1)-1 (c1): hand-counted
    assert (black["corners"], black["near_free_corner"], black["edges"]) == (1, 1, 1)
    assert (white["corners"], white["near_free_corner"], white["edges"]) == (1, 0, 1)
    total = sum(WEIGHTS[k] * (black[k] - white[k]) for k in WEIGHTS)
    assert game.evaluate(s, 0) == pytest.approx(math.tanh(total / 200), abs=1e-12)
    assert game.evaluate(s, 1) == pytest.approx(-math.tanh(total / 200), abs=1e-12)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_fixed_depth_flat_results_play_the_study_s_minimax(depth):
    game = load_game("othello")
    agent = make(f"alphabeta:depth={depth},results=flat", game)
    for state in positions(game, 30 if depth < 3 else 16, seed=depth):
        move, value = study_move(state, depth)
        assert agent.step(state) == move, state.history()
        found = agent.last.value
        if math.isinf(value):
            assert found == math.copysign(1.0, value)
        else:
            assert found == pytest.approx(math.tanh(value / 200), abs=1e-12)


def test_default_results_differ_only_among_equally_decided_moves():
    """Without results=flat a faster win (or slower loss) is preferred: any other choice
    than the study's must have the same plain-minimax value, a decided result."""
    game = load_game("othello")
    agent = make("alphabeta:depth=3", game)
    for state in positions(game, 16, seed=9):
        move, value = study_move(state, 3)
        chosen = agent.step(state)
        if chosen != move:
            child = state.clone()
            child.apply_action(chosen)
            assert math.isinf(value)
            assert minimax(child, 2, state.current_player()) == value
