"""Connect 4 solver against a brute-force referee, a published score and hand-worked positions."""

import io

import numpy as np
import pytest
from numba import njit

from engine.games.connect4.solver import Connect4Solver, ExactSolver, parse_line, solve_lines
from engine.protocol import GameError

NO_MOVE = -99


@njit
def ref_wins(board, c, r, p):
    """Whether the stone of p at column c, row r lies on a line of four or more."""
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            cc, rr = c + sign * dc, r + sign * dr
            while 0 <= cc < 7 and 0 <= rr < 6 and board[cc, rr] == p:
                run += 1
                cc += sign * dc
                rr += sign * dr
        if run >= 4:
            return True
    return False


@njit
def ref_best(board, heights, stones, p, out, root):
    """Plain full-width negamax on a 7x6 array: the score straight from its definition.

    A win scores 22 - (the winner's own stones once its winning stone is down), a full board
    0, and each side maximises its own score (a loss is minus the opponent's score).
    """
    best = NO_MOVE
    for c in range(7):
        if heights[c] == 6:
            if root:
                out[c] = NO_MOVE
            continue
        r = heights[c]
        board[c, r] = p
        heights[c] += 1
        stones[p] += 1
        if ref_wins(board, c, r, p):
            v = 22 - stones[p]
        elif stones[0] + stones[1] == 42:
            v = 0
        else:
            v = -ref_best(board, heights, stones, 1 - p, out, False)
        stones[p] -= 1
        heights[c] -= 1
        board[c, r] = -1
        if root:
            out[c] = v
        best = max(best, v)
    return best


def random_history(rng: np.random.Generator, stones: int) -> list[int]:
    """Random play to `stones` stones with no four on the board (checked by ref_wins)."""
    while True:
        board = np.full((7, 6), -1, dtype=np.int64)
        heights = np.zeros(7, dtype=np.int64)
        moves: list[int] = []
        for ply in range(stones):
            c = int(rng.choice(np.flatnonzero(heights < 6)))
            r = heights[c]
            board[c, r] = ply % 2
            heights[c] += 1
            moves.append(c)
            if ref_wins(board, c, r, ply % 2):
                break
        else:
            return moves


def reference(moves: list[int]) -> tuple[int, list[int | None]]:
    board = np.full((7, 6), -1, dtype=np.int64)
    heights = np.zeros(7, dtype=np.int64)
    stones = np.zeros(2, dtype=np.int64)
    for ply, c in enumerate(moves):
        board[c, heights[c]] = ply % 2
        heights[c] += 1
        stones[ply % 2] += 1
    out = np.zeros(7, dtype=np.int64)
    best = ref_best(board, heights, stones, len(moves) % 2, out, True)
    return int(best), [None if v == NO_MOVE else int(v) for v in out]


@pytest.fixture(scope="module")
def solver():
    return Connect4Solver()


@pytest.mark.slow
def test_matches_brute_force_on_endgames(solver):
    rng = np.random.default_rng(2024)
    checked = 0
    for _ in range(300):
        moves = random_history(rng, int(rng.integers(30, 37)))
        score, scores = reference(moves)
        assert solver.analyze(moves) == scores, moves
        assert solver.solve(moves) == score, moves
        checked += 1
    assert checked == 300
    fresh = Connect4Solver()  # also without a table warmed by other positions
    for _ in range(30):
        moves = random_history(rng, int(rng.integers(30, 37)))
        assert fresh.solve(moves) == reference(moves)[0], moves


def test_published_score(solver):
    # Pascal Pons' Test_L3_R1, first line.
    assert solver.solve(parse_line("2252576253462244111563365343671351441")) == -1


def test_consistency_on_middle_games(solver):
    rng = np.random.default_rng(7)
    for _ in range(30):
        moves = random_history(rng, int(rng.integers(16, 25)))
        scores = solver.analyze(moves)
        assert solver.solve(moves) == max(v for v in scores if v is not None)
        n = len(moves)
        for c, v in enumerate(scores):
            if v is None:
                continue
            try:
                child = -solver.solve([*moves, c])
            except GameError as exc:  # c wins at once: the game is over after it
                assert "wins" in str(exc)
                child = (43 - n) // 2
            assert v == child, (moves, c)
        assert scores[solver.best_move(moves)] == max(v for v in scores if v is not None)


def test_immediate_win_and_forced_loss_by_hand(solver):
    # 121212: X (to move, 6 stones down) holds three in column 1; its 4th stone wins: 22 - 4.
    assert solver.solve(parse_line("121212")) == 18
    assert solver.analyze(parse_line("121212"))[0] == 18
    assert solver.best_move(parse_line("121212")) == 0
    # 44553: X has columns 3-5 on the bottom row with both ends open; whatever O plays, X's
    # 4th stone wins, so every move of O scores -(22 - 4).
    assert solver.analyze(parse_line("44553")) == [-18] * 7
    assert solver.solve(parse_line("44553")) == -18


def test_bad_histories_raise(solver):
    with pytest.raises(GameError, match="outside"):
        solver.solve([7])
    with pytest.raises(GameError, match="full"):
        solver.solve([0] * 7)
    with pytest.raises(GameError, match="already over"):
        solver.solve(parse_line("1212121"))
    with pytest.raises(GameError, match="after the game was won"):
        solver.solve(parse_line("12121213"))


def test_solve_lines_stream():
    stdin = io.StringIO(
        "2252576253462244111563365343671351441\n"
        "12a\n"
        "128\n"
        "1111111\n"
        "  44553  \n"
        "12121213\n"
        "1212121\n"
        "111111222222444444\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert solve_lines(stdin, analyze=True, out=out, err=err) == 2
    answers = out.getvalue().splitlines()
    assert answers[0] == "2252576253462244111563365343671351441 x x x x x -1 -2"
    assert answers[1] == "44553 " + " ".join(["-18"] * 7)
    # columns 1, 2, 4 full; 3 completes X's bottom row with its 10th stone: 22 - 10
    fields = answers[2].split()
    assert fields[:5] == ["111111222222444444", "x", "x", "12", "x"]
    assert len(answers) == 3
    errors = err.getvalue().splitlines()
    assert [e.split(":")[2].strip() for e in errors] == [
        "line 2",
        "line 3",
        "line 4",
        "line 6",
        "line 7",
    ]
    assert all(e.startswith("gridbots: error: line ") for e in errors)

    out, err = io.StringIO(), io.StringIO()
    assert solve_lines(["121212\n", "44553"], analyze=False, out=out, err=err) == 0
    assert out.getvalue() == "121212 18\n44553 -18\n"
    assert err.getvalue() == ""


def optimal_line_plies(moves: list[int]) -> int:
    """Plies until the game ends when both sides keep playing the brute-force referee's best
    move (ref_wins sees the end)."""
    line = list(moves)
    while True:
        _, scores = reference(line)
        column = max((c for c, v in enumerate(scores) if v is not None), key=lambda c: scores[c])
        line.append(column)
        board = np.full((7, 6), -1, dtype=np.int64)
        heights = np.zeros(7, dtype=np.int64)
        for ply, c in enumerate(line):
            board[c, heights[c]] = ply % 2
            heights[c] += 1
        if ref_wins(board, column, heights[column] - 1, (len(line) - 1) % 2) or len(line) == 42:
            return len(line) - len(moves)


def state_of(moves: list[int]) -> np.ndarray:
    from engine import parse_game_spec

    return parse_game_spec("connect4").state_from_history(moves).array


def test_exact_solver_by_hand():
    """`best` (the game's `exact_solver`): its move, result and plies on hand-worked lines."""
    exact = ExactSolver()
    # 121212: X to move holds three in column 1 and wins there at once: 1 ply
    assert exact.best(state_of(parse_line("121212")), 1000.0) == (0, 1, 1)
    # 44553: O to move; whatever it plays X's 4th stone wins next: lost in 2 plies (O's, X's)
    column, result, plies = exact.best(state_of(parse_line("44553")), 1000.0)
    assert (result, plies) == (-1, 2) and 0 <= column < 7


def test_exact_solver_moves_are_optimal_against_brute_force():
    """20 random endgames (30-35 stones): the move scores the referee's best score, the result
    is its sign, and the plies are those of the referee's own best line played out."""
    rng = np.random.default_rng(66)
    exact = ExactSolver()
    results = set()
    for _ in range(20):
        moves = random_history(rng, int(rng.integers(30, 36)))
        best, scores = reference(moves)
        column, result, plies = exact.best(state_of(moves), 60_000.0)
        assert scores[column] == best, (moves, column, scores)
        assert result == int(np.sign(best)), (moves, result, best)
        assert plies == (optimal_line_plies(moves) if best else 0), (moves, plies)
        results.add(result)
    assert {-1, 1} <= results


def test_exact_solver_in_slices_and_out_of_time():
    """Cut into slices of 64 nodes, middle games (18-22 stones) still get a move of the best
    score (the solver's own analysis), and the table the cut searches left behind still gives
    every exact score; with no time at all the empty board gets no answer."""
    rng = np.random.default_rng(5)
    exact = ExactSolver()
    exact.CHUNK = 64
    assert exact.best(state_of([]), 0.0) is None
    checked = 0
    while checked < 6:
        moves = random_history(rng, int(rng.integers(18, 23)))
        truth = Connect4Solver().analyze(moves)
        best = max(v for v in truth if v is not None)
        if best == (43 - len(moves)) // 2:
            continue  # a win at once needs no search
        checked += 1
        column, result, _ = exact.best(state_of(moves), 60_000.0)
        assert truth[column] == best and result == int(np.sign(best)), (moves, column, truth)
        assert exact.solver.analyze(moves) == truth  # the sliced table's bounds are true ones
