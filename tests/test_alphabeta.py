"""alphabeta against a plain minimax, hand-worked forced wins, limits; the games' heuristics."""

from __future__ import annotations

import numpy as np
import pytest

from agents import AgentError, make
from agents.search.alphabeta import WIN_SCALE
from engine import load_game
from engine.conformance import check_game
from engine.games.connect4 import Connect4
from engine.games.lazerbike import SIZE, state_from_setup
from engine.games.othello import state_from_diagram
from engine.match import play_match
from engine.protocol import TERMINAL


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def othello():
    return load_game("othello")


def minimax(game, s: np.ndarray, depth: int, ply: int = 0, view: int | None = None) -> float:
    """Plain negamax, no pruning, no table: the value for `view` (the player to move)."""
    k = game.kernels
    player = int(k.current_player(s))
    view = player if view is None else view
    if player == TERMINAL:
        out = np.zeros(game.num_players)
        k.returns(s, out)
        r = out[view]
        return r * WIN_SCALE - ply if r > 0 else (r * WIN_SCALE + ply if r < 0 else 0.0)
    if depth == 0:
        return float(game.evaluate(s, view))
    moves = np.empty(80, dtype=np.int64)
    best = -np.inf
    for a in moves[: k.legal_actions(s, player, moves)]:
        child = s.copy()
        k.apply_action(child, a)
        nxt = int(k.current_player(child))
        child_view = nxt if nxt >= 0 else view
        value = minimax(game, child, depth - 1, ply + 1, child_view)
        best = max(best, value if child_view == view else -value)
    return best


def test_forced_win_connect4(connect4):
    # X: d1 e1 to move; c1 or f1 makes two threats at once: a win on the third ply
    state = connect4.state_from_history(connect4.parse_moves("4455"))
    shallow = make("alphabeta:depth=2", connect4).search(state)
    assert abs(shallow.value) < 2
    deep = make("alphabeta:depth=6", connect4).search(state)
    assert deep.move in (2, 5) and deep.value == WIN_SCALE - 3 and deep.exact
    # the other side of it: O to move against the double threat loses on the second ply
    state = connect4.state_from_history(connect4.parse_moves("44553"))
    assert make("alphabeta:depth=4", connect4).search(state).value == -(WIN_SCALE - 2)


def root_values(game, state, depth: int) -> list[tuple[int, float]]:
    """Every root move with its plain-minimax value for the player to move, in legal order."""
    root, values = state.current_player(), []
    for a in state.legal_actions():
        child = state.clone()
        child.apply_action(a)
        nxt = child.current_player()
        child_view = nxt if nxt >= 0 else root
        value = minimax(game, child.array, depth - 1, 1, child_view)
        values.append((a, value if child_view == root else -value))
    return values


@pytest.mark.parametrize(
    "name,depth,plies",
    [("connect4", 4, (4, 14)), ("connect4", 1, (0, 10)), ("othello", 3, (4, 30))],
)
def test_fixed_depth_is_plain_minimax_value_and_move(name, depth, plies):
    """`depth=N` plays exactly what plain minimax to N plies plays: its value and its first
    best move in legal order, however the table and move ordering have been primed."""
    game = load_game(name)
    agent = make(f"alphabeta:depth={depth}", game, seed=0)
    rng = np.random.default_rng(7)
    for i in range(8):
        state = game.new_initial_state(seed=i, opening=int(rng.integers(*plies)))
        if state.is_terminal():
            continue
        values = root_values(game, state, depth)
        expected = max(v for _, v in values)
        first_best = next(a for a, v in values if v == expected)
        result = agent.search(state)
        assert result.depth == depth
        assert result.value == expected, (state.history(), result, expected)
        assert result.move == first_best, (state.history(), result, values)


def test_table_is_sized_to_the_search_and_never_changes_a_fixed_depth_move(connect4):
    """A fresh agent per game clears its whole table: a 2-ply search gets 2**10 entries, not
    2**20; a tiny table (heavy collisions) still plays the moves of the full one."""
    from agents.search.alphabeta import table_size

    assert [table_size(7, d) for d in (0, 2, 4, 6, 9)] == [20, 10, 14, 19, 20]
    assert make("alphabeta:depth=2", connect4).core.tt[0].shape == (1 << 10,)
    assert make("alphabeta:ms=5", connect4).core.tt[0].shape == (1 << 20,)
    small = make("alphabeta:depth=5,tt=4", connect4)
    full = make("alphabeta:depth=5,tt=20", connect4)
    for seed in range(6):
        state = connect4.new_initial_state(seed=seed, opening=4)
        while not state.is_terminal():
            move = small.step(state)
            assert move == full.step(state), state.history()
            state.apply_action(move)


class SteppingClock:
    """The search's own clock, made to advance `step` seconds at every reading: the deadline
    logic runs exactly as on a machine of that speed, whatever this machine's load."""

    def __init__(self, step: float, jump_after: int = 0):
        self.now, self.step, self.readings, self.jump_after = 100.0, step, 0, jump_after

    def perf_counter(self) -> float:
        self.readings += 1
        if self.readings == self.jump_after:
            self.now += 3600.0  # the process was descheduled for an hour
        self.now += self.step
        return self.now


def test_respects_time_and_node_budget(connect4, monkeypatch):
    import agents.search.core

    agent = make("alphabeta:ms=30", connect4)
    state = connect4.new_initial_state()
    clock = SteppingClock(0.0005)
    monkeypatch.setattr(agents.search.core, "time", clock)
    began = clock.now
    result = agent.search(state)
    # it deepened while the next depth fitted, and returned inside its 30 ms by its own clock
    assert 2 <= result.depth < connect4.max_game_length
    assert clock.now - began <= 0.030 + 1e-9  # its last reading may fall on the deadline
    # past the deadline after the first depth: that depth's move, nothing deeper
    late = SteppingClock(0.0005, jump_after=3)
    monkeypatch.setattr(agents.search.core, "time", late)
    result = agent.search(state)
    assert result.depth == 1 and result.move in state.legal_actions()
    stopped = agent.core.search(state.array, 0, 12, budget=50)  # a node budget stops it
    assert stopped.aborted and stopped.nodes == 51 and not stopped.exact


def test_deterministic_for_a_seed(connect4):
    state = connect4.new_initial_state(seed=2, opening=6)
    spec = "alphabeta:depth=3,eval=playout,playouts=4"
    first = [make(spec, connect4, seed=11).search(state) for _ in range(2)]
    assert first[0] == first[1]
    moves = [make("alphabeta:depth=5", connect4, seed=s).step(state.clone()) for s in (1, 2)]
    assert moves[0] == moves[1]


def test_beats_random_quickly(connect4):
    result = play_match(
        connect4,
        lambda s: make("alphabeta:depth=3", connect4, seed=s),
        lambda s: make("random", connect4, seed=s),
        10,
        seed=1,
        opening=2,
    )
    assert result.score >= 0.9, result


class NoHeuristic(Connect4):
    evaluate = None


@pytest.mark.parametrize(
    "game,spec,message",
    [
        ("connect4", "alphabeta:eval=magic", "expected heuristic"),
        ("connect4", "alphabeta:depth=-1", "depth"),
        ("connect4", "alphabeta:depth=x", "expected int"),
        ("connect4", "alphabeta:width=3", "unknown option"),
        ("connect4", "alphabeta:tt=30", "tt"),
        ("lazerbike", "alphabeta", "simab"),
        ("pig", "alphabeta", "chance"),
    ],
)
def test_bad_specs(game, spec, message):
    with pytest.raises(AgentError, match=message):
        make(spec, load_game(game))


def test_onnx_evaluation_needs_a_model_file(connect4, tmp_path):
    # the onnx evaluation itself is tested in tests/test_onnx_eval.py
    missing = tmp_path / "model.onnx"
    with pytest.raises(AgentError, match="not found"):
        make(f"alphabeta:eval=onnx:{missing}", connect4)


def test_no_heuristic_needs_playouts():
    game = NoHeuristic()
    with pytest.raises(AgentError, match="no heuristic"):
        make("alphabeta", game)
    state = game.state_from_history(game.parse_moves("4455"))
    result = make("alphabeta:depth=4,eval=playout,playouts=2", game).search(state)
    assert result.value == WIN_SCALE - 3


def test_connect4_heuristic_hand_worked(connect4):
    # X: d1 d2 (one open 2-window: d1-d4), O: a1 (none); O to move
    s = connect4.state_from_history(connect4.parse_moves("414")).array
    assert connect4.evaluate(s, 0) == pytest.approx(np.tanh(0.25 / 6))
    assert connect4.evaluate(s, 1) == pytest.approx(-np.tanh(0.25 / 6))
    # X: d1 d2 d3 (open 3: d1-d4, open 2: d2-d5), O: a1 b1 (blocked by d1)
    s = connect4.state_from_history(connect4.parse_moves("41424")).array
    assert connect4.evaluate(s, 0) == pytest.approx(np.tanh(1.25 / 6))
    assert connect4.evaluate(connect4.new_initial_state().array, 0) == 0.0


START = """
........
........
........
...OX...
...XO...
........
........
........
"""


def with_disc(square: str) -> np.ndarray:
    rows = [list(row) for row in START.strip().splitlines()]
    rows[int(square[1]) - 1]["abcdefgh".index(square[0])] = "X"
    return state_from_diagram("\n".join("".join(r) for r in rows), to_move=0)


def test_othello_heuristic_hand_worked(othello):
    assert othello.evaluate(state_from_diagram(START), 0) == 0.0  # symmetric start
    # a1 corner: +4 corner, +0.5 disc, -0.2 x 3 new empty neighbours; mobility unchanged
    corner = with_disc("a1")
    assert othello.evaluate(corner, 0) == pytest.approx(np.tanh(3.9 / 20))
    assert othello.evaluate(corner, 1) == pytest.approx(-np.tanh(3.9 / 20))
    # b2 next to the empty a1: -2, +0.5 disc, -0.2 x 8 new empty neighbours
    x_square = with_disc("b2")
    assert othello.evaluate(x_square, 0) == pytest.approx(np.tanh(-3.1 / 20))
    # an edge square away from corners: +1 edge, +0.5 disc, -0.2 x 5 neighbours
    assert othello.evaluate(with_disc("a4"), 0) == pytest.approx(np.tanh(0.5 / 20))


def test_lazerbike_territory_hand_worked():
    game = load_game("lazerbike")
    state = state_from_setup(game, [(7, 2, "E"), (7, 12, "W")])
    assert game.evaluate(state.array, 0) == 0.0  # mirror image: equal territories
    # a full trail wall on column 5: A keeps columns 0-4 (74 free), B columns 6-14 (134 free)
    state = state_from_setup(game, [(7, 2, "E"), (7, 6, "E")])
    for row in range(SIZE):
        state.array[row * SIZE + 5] = 2
    assert game.evaluate(state.array, 0) == pytest.approx(-60 / 208)
    assert game.evaluate(state.array, 1) == pytest.approx(60 / 208)


def test_othello_conforms(othello):
    check_game(othello, 2)
