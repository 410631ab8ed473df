"""`agents.search.core.prove` (a complete alpha-beta search under a time cap) and PUCT's `exact=`
option that plays what it proves, checked against the exact Connect 4 solver."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make
from agents.base import AgentError
from agents.puct.pv_net import write_uniform_network
from agents.search.core import AlphaBeta, Prover, prove
from engine import parse_game_spec
from engine.games.connect4.solver import Connect4Solver

GAME = parse_game_spec("connect4")
GENEROUS_MS = 60_000.0  # returns as soon as it proves: the cap only keeps a slow machine green


def endgames(count: int, stones: int, seed: int) -> list[list[int]]:
    """Random legal histories of `stones` stones that have not ended."""
    rng, found = np.random.default_rng(seed), []
    while len(found) < count:
        state, moves = GAME.new_initial_state(), []
        while len(moves) < stones and not state.is_terminal():
            moves.append(int(rng.choice(state.legal_actions())))
            state.apply_action(moves[-1])
        if len(moves) == stones and not state.is_terminal():
            found.append(moves)
    return found


@pytest.fixture(scope="module")
def solver():
    return Connect4Solver()


@pytest.fixture(scope="module")
def core():
    return AlphaBeta(GAME, "heuristic", table_bits=16)


def test_proven_values_and_moves_agree_with_the_solver(solver, core):
    """30 positions with 28 to 32 stones: the sign of the proven value is the solver's, and the
    move proven keeps that result by the solver's analysis of every column."""
    signs = []
    for moves in endgames(10, 28, seed=1) + endgames(10, 30, seed=2) + endgames(10, 32, seed=3):
        state = GAME.state_from_history(moves)
        out, _ = prove(core, state.array, state.current_player(), GENEROUS_MS)
        assert out is not None, moves
        scores = solver.analyze(moves)
        best = max(s for s in scores if s is not None)
        assert np.sign(out.value) == np.sign(best), (moves, out.value, scores)
        assert np.sign(scores[out.move]) == np.sign(best), (moves, out.move, scores)
        signs.append(int(np.sign(best)))
    assert {-1, 1} <= set(signs)  # wins and losses both among them


def test_far_from_the_end_it_proves_nothing_and_says_how_deep_it_got(core):
    state = GAME.new_initial_state()  # 42 plies to go: no complete search in 5 ms
    out, reached = prove(core, state.array, state.current_player(), 5.0)
    assert out is None and 1 <= reached < 42


def test_puct_plays_the_proven_move_where_its_search_cannot_see(solver, tmp_path):
    """A network that knows nothing and one simulation: `exact=` alone finds moves that keep
    each won position won (the solver's analysis), on positions where some column loses it."""
    net = write_uniform_network(GAME, tmp_path / "uniform.onnx")
    agent = make(f"puct:model={net},sims=1,exact={GENEROUS_MS}", GAME, seed=0)
    tried = 0
    for moves in endgames(40, 30, seed=4):
        scores = solver.analyze(moves)
        legal = [s for s in scores if s is not None]
        if max(legal) <= 0 or min(legal) > 0:
            continue  # not won, or won by any move
        tried += 1
        state = GAME.state_from_history(moves)
        assert scores[agent.step(state)] > 0, (moves, scores)
        analysis = agent.analyse(state)  # says what it plays: a proven win and its distance
        assert scores[analysis.move] > 0 and analysis.value == 1.0
        assert analysis.ends[analysis.move] > 0 and analysis.extra["proven"]
    assert tried >= 5


def test_the_exact_search_keeps_within_the_moves_time(tmp_path):
    """exact=T above ms=M spends M at most: a capped budget (the web's) caps the solver too."""
    net = write_uniform_network(GAME, tmp_path / "uniform.onnx")
    assert make(f"puct:model={net},ms=5,exact=17", GAME).prover.ms == 5.0
    assert make(f"puct:model={net},ms=19,exact=17", GAME).prover.ms == 17.0
    assert make(f"puct:model={net},sims=4,exact=17", GAME).prover.ms == 17.0


@pytest.mark.parametrize(
    "game, spec, words",
    [("connect4", "exact=-1", "exact"), ("pig", "exact=50", "without chance nodes")],
)
def test_bad_exact_settings_are_one_clear_error(tmp_path, game, spec, words):
    g = parse_game_spec(game)
    net = write_uniform_network(g, tmp_path / "uniform.onnx")
    with pytest.raises(AgentError, match=words):
        make(f"puct:model={net},sims=4,{spec}", g)


def test_the_prover_tries_only_near_the_end_once_an_attempt_failed():
    prover = Prover(GAME, ms=5.0, own_solver=False)  # the alpha-beta, not Connect 4's solver
    start = GAME.new_initial_state()
    assert prover.attempt(start.array, start.current_player()) is None  # failed: calibrated
    assert 1 <= prover.reached < 42
    prover.reached = 2  # as on a slow machine: the gate then opens 6 plies from the end
    search = prover.core.search

    def refused(*args, **kwargs):
        raise AssertionError("searched far from the end")

    prover.core.search = refused
    early = GAME.state_from_history(endgames(1, 20, seed=5)[0])  # random games: ~10 more
    assert prover.attempt(early.array, early.current_player()) is None  # no search at all
    prover.core.search, prover.ms = search, GENEROUS_MS  # the gate, not the clock, decides
    late = GAME.state_from_history(endgames(1, 38, seed=6)[0])  # 4 plies left at most
    assert prover.attempt(late.array, late.current_player()) is not None


def test_with_the_games_own_solver_puct_plays_optimal_moves(solver, tmp_path):
    """Connect 4 has its own exact solver (`Game.exact_solver`): `exact=` then plays a move of
    the best exact score (the quickest win, the slowest loss, not just one that keeps the
    result) on 24-30-stone positions where some move keeps the result with a worse score; its
    analysis gives the result and the plies to the end that the score implies."""
    net = write_uniform_network(GAME, tmp_path / "uniform.onnx")
    agent = make(f"puct:model={net},sims=1,exact={GENEROUS_MS}", GAME, seed=0)
    assert agent.prover.solver is not None and agent.prover.core is None
    tried = 0
    for moves in endgames(30, 24, seed=7) + endgames(30, 30, seed=8):
        scores = solver.analyze(moves)
        legal = [s for s in scores if s is not None]
        best = max(legal)
        if best == (43 - len(moves)) // 2 or not any(
            s != best and np.sign(s) == np.sign(best) for s in legal
        ):
            continue  # a win at once, or no slower win / quicker loss to fall for
        tried += 1
        state = GAME.state_from_history(moves)
        assert scores[agent.step(state)] == best, (moves, scores)
        analysis = agent.analyse(state)
        assert scores[analysis.move] == best and analysis.value == np.sign(best)
        if best:  # a win scoring 22 - k ends with the winner's k-th stone
            k, n = 22 - abs(best), len(moves)
            plies = 2 * (k - n // 2) - 1 if best > 0 else 2 * (k - (n - n // 2))
            assert abs(analysis.ends[analysis.move]) == plies, (moves, analysis.ends)
    assert tried >= 5
