"""Othello: published perft counts, hand-worked positions and a square-walking reference."""

from __future__ import annotations

import numpy as np
import pytest

from engine import TERMINAL, GameError, IllegalActionError, State, load_game
from engine.conformance import check_game
from engine.games import othello
from engine.loops import count_leaves

GAME = load_game("othello")
PASS = 64
DIRECTIONS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


def sq(name: str) -> int:
    return (int(name[1]) - 1) * 8 + "abcdefgh".index(name[0])


def position(diagram: str, to_move: int = 0) -> State:
    """A State over a drawn position (empty history: not for state_from_history)."""
    config = othello.diagram_config(diagram, to_move)
    return State(GAME, othello.state_from_diagram(diagram, to_move), config)


def boards(diagram: str) -> tuple[int, int]:
    config = othello.diagram_config(diagram)
    return int(config[0]), int(config[1])


def assert_board(state: State, diagram: str) -> None:
    assert (int(state.array[0]), int(state.array[1])) == boards(diagram), "\n" + str(state)


# ---- an independent reference: walk each ray square by square -------------------------------
def ref_flips(cells: list[int], square: int, me: int) -> list[int]:
    r0, c0 = divmod(square, 8)
    turned = []
    for dr, dc in DIRECTIONS:
        r, c, run = r0 + dr, c0 + dc, []
        while 0 <= r < 8 and 0 <= c < 8 and cells[r * 8 + c] == 1 - me:
            run.append(r * 8 + c)
            r, c = r + dr, c + dc
        if run and 0 <= r < 8 and 0 <= c < 8 and cells[r * 8 + c] == me:
            turned += run
    return turned


def ref_moves(cells: list[int], me: int) -> list[int]:
    return [i for i in range(64) if cells[i] < 0 and ref_flips(cells, i, me)]


def cells_of(state: State) -> list[int]:
    return [othello.disc_owner(state.array, i) for i in range(64)]


@pytest.mark.parametrize("seed", range(40))
def test_random_games_match_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    state = GAME.new_initial_state()
    cells, me = cells_of(state), 0
    while True:
        mine, theirs = ref_moves(cells, me), ref_moves(cells, 1 - me)
        if not mine and not theirs:
            assert state.is_terminal()
            black, white = cells.count(0), cells.count(1)
            sign = float(np.sign(black - white))
            assert state.returns() == [sign, -sign]
            return
        assert state.current_player() == me
        assert state.legal_actions() == (mine or [PASS])
        action = state.random_action(rng)
        if action != PASS:
            for i in [*ref_flips(cells, action, me), action]:
                cells[i] = me
        state.apply_action(action)
        me = 1 - me
        assert cells_of(state) == cells


# ---- perft: published values ----------------------------------------------------------------
@pytest.mark.parametrize(
    "depth,count",
    [(1, 4), (2, 12), (3, 56), (4, 244), (5, 1396), (6, 8200), (7, 55092), (8, 390216)],
)
def test_perft(depth: int, count: int) -> None:
    assert count_leaves(GAME, GAME.new_initial_state().array, depth) == count


def test_start_and_notation() -> None:
    state = GAME.new_initial_state()
    assert state.legal_actions() == [sq("d3"), sq("c4"), sq("f5"), sq("e6")]
    assert [state.action_to_string(a) for a in state.legal_actions()] == ["d3", "c4", "f5", "e6"]
    assert GAME.parse_moves("d3 c5, F6 pass 19") == [19, 34, 45, 64, 19]
    assert GAME.parse_moves("f5d6c3") == [37, 43, 18]
    assert GAME.format_moves([19, 34, 64]) == "d3 c5 pass"
    for bad in ("i1", "a9", "65", "xx"):
        with pytest.raises(GameError):
            GAME.parse_moves(bad)
    assert GAME.state_from_history(GAME.parse_moves("f5 d6 c3")).array[5] == 3
    with pytest.raises(IllegalActionError):
        state.apply_action(PASS)  # pass is illegal while a placement exists


# ---- hand-worked positions ------------------------------------------------------------------
def test_flips_in_all_eight_directions() -> None:
    state = position(
        """
        . . . . . . . .
        . X . X . X . .
        . . O O O . . .
        . X O . O X . .
        . . O O O . . .
        . X . X . X . .
        . . . . . . O .
        . . . . . . . O
        """
    )
    state.apply_action(sq("d4"))
    assert_board(
        state,
        """
        . . . . . . . .
        . X . X . X . .
        . . X X X . . .
        . X X X X X . .
        . . X X X . . .
        . X . X . X . .
        . . . . . . O .
        . . . . . . . O
        """,
    )
    # white recaptures along the long diagonal from g7 to the empty a1 corner
    assert state.current_player() == 1 and state.legal_actions() == [sq("a1")]


def test_several_lines_gaps_and_edges() -> None:
    # from c3: east turns 3, south 2, north 1; south-east stops at a gap, west and
    # north-east run into the board edge, north-west is an own disc
    state = position(
        """
        . . X . O . . .
        . X O O . . . .
        O O . O O O X .
        . . O O . . . .
        . . O . . . . .
        . . X . . X . .
        . . . . . . . .
        . . . . . . . .
        """
    )
    state.apply_action(sq("c3"))
    assert_board(
        state,
        """
        . . X . O . . .
        . X X O . . . .
        O O X X X X X .
        . . X O . . . .
        . . X . . . . .
        . . X . . X . .
        . . . . . . . .
        . . . . . . . .
        """,
    )


def test_no_wrap_between_columns_h_and_a() -> None:
    # g1-h1-a2 and b2-a2-h1 are consecutive bits but not lines: nobody can move
    state = position(
        """
        . . . . . . . O
        X . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        """
    )
    assert state.is_terminal() and state.returns() == [0.0, 0.0]
    # g1 is legal through g2 only: h1 must stay white (g1-h1-a2 is no line), and a6-h4-g3
    # is no diagonal, so a6 is not a move
    state = position(
        """
        . . . . . . . O
        X . . . . . O .
        . . . . . . X .
        . . . . . . . O
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        """
    )
    assert state.legal_actions() == [sq("g1")]
    state.apply_action(sq("g1"))
    assert_board(
        state,
        """
        . . . . . . X O
        X . . . . . X .
        . . . . . . X .
        . . . . . . . O
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        """,
    )


def test_forced_pass_then_wipe_out() -> None:
    state = position(
        """
        X O . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        """,
        to_move=1,
    )
    assert state.current_player() == 1 and state.legal_actions() == [PASS]
    assert state.observation_tensor(1)[2].sum() == 0
    with pytest.raises(IllegalActionError):
        state.apply_action(sq("c1"))
    state.apply_action(PASS)
    assert state.current_player() == 0 and state.legal_actions() == [sq("c1")]
    state.apply_action(sq("c1"))  # white has no disc left: the game ends with empties left
    assert state.is_terminal() and state.current_player() == TERMINAL
    assert state.legal_actions() == [] and state.returns() == [1.0, -1.0]


def test_game_ends_when_neither_can_move() -> None:
    state = position(
        """
        O X . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . X
        . . . . . . . X
        """,
        to_move=1,
    )
    assert state.legal_actions() == [sq("c1")]
    state.apply_action(sq("c1"))
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]  # white 3, black 2


def test_observation_is_from_the_players_view() -> None:
    state = GAME.new_initial_state()
    black, white = state.observation_tensor(0), state.observation_tensor(1)
    assert black.shape == (3, 8, 8)
    assert black[0, 3, 4] == 1 and black[1, 3, 3] == 1  # e4 own, d4 opponent's
    assert np.array_equal(black[0], white[1]) and np.array_equal(black[1], white[0])
    assert black[2].sum() == 4 and black[2, 2, 3] == 1 and white[2].sum() == 0


def test_render_and_bad_diagram() -> None:
    text = str(GAME.new_initial_state())
    assert "X to move" in text and "4 . . * O X" in text
    with pytest.raises(GameError):
        othello.diagram_config("X O\n. .")


# ---- protocol -------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conformance(seed: int) -> None:
    check_game(GAME, seed)


@pytest.mark.parametrize("seed", [3, 4])
def test_conformance_openings(seed: int) -> None:
    check_game(GAME, seed, opening=6)
