"""Every parser a user reaches, fuzzed: any input gives a result or one clear error (GameError
and its kinds: the CLI prints one line and exits 2), never another exception or a traceback.
Sokoban levels, game specs and parameters, agent specs, move histories, params.yaml, and the
`show` / `move` commands end to end."""

from __future__ import annotations

import contextlib

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.base import parse_spec
from engine import load_game, parse_game_spec
from engine.games.sokoban import parse_level
from engine.protocol import GameError, IllegalActionError
from flows.cli import main
from flows.params import ParamsError, check, load

CLEAR = (GameError, IllegalActionError)
GAMES = ["connect4", "othello", "lazerbike", "pig", "sokoban"]
LEVEL_TEXT = st.text(alphabet="w pbhe#\n:limitname0123456789", max_size=400)
ANY_TEXT = st.text(max_size=200)


@given(st.one_of(LEVEL_TEXT, ANY_TEXT, st.integers(60, 90).map(lambda n: "p" + " " * n + "e")))
def test_sokoban_level_text(text):
    try:
        level = parse_level(text, "fuzz.txt")
    except GameError as error:
        assert str(error).startswith("fuzz.txt")
        return
    assert level.players >= 1 and level.width >= 1 and level.height >= 1


@given(st.one_of(ANY_TEXT, st.builds(lambda g, o: f"{g}:{o}", st.sampled_from(GAMES), ANY_TEXT)))
def test_game_specs_and_parameters(spec):
    try:
        game = parse_game_spec(spec)
    except CLEAR:
        return
    assert game.new_initial_state(seed=0) is not None


@given(st.sampled_from(GAMES), st.text(alphabet="0123456789 ,-+x.abcdefgh", max_size=60))
def test_histories(name, text):
    game = load_game(name)
    try:
        moves = game.parse_moves(text)
        state = game.state_from_history(moves, seed=0)
    except CLEAR:
        return
    assert state.history() == moves


@given(
    st.one_of(
        ANY_TEXT,
        st.builds(
            lambda n, o: f"{n}:{o}",
            st.sampled_from(
                ["random", "mcts", "alphabeta", "simab", "heuristic", "seq", "onnx", "file"]
            ),
            ANY_TEXT,
        ),
    )
)
def test_agent_spec_syntax(spec):
    try:
        name, options = parse_spec(spec)
    except CLEAR:
        return
    assert isinstance(name, str) and all(isinstance(v, str) for v in options.values())


@given(
    st.sampled_from(["random", "mcts", "alphabeta", "heuristic", "simab"]),
    st.dictionaries(
        st.sampled_from(["depth", "ms", "sims", "c", "guards", "eval", "tt", "playouts", "x"]),
        st.text(alphabet="0123456789.-+e:abxyz", max_size=8),
        max_size=3,
    ),
)
@settings(max_examples=40)
def test_agent_options(name, options):
    from agents import make

    spec = name + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")
    with contextlib.suppress(*CLEAR):
        make(spec, load_game("connect4"), seed=0)


@given(
    st.one_of(
        ANY_TEXT, st.dictionaries(ANY_TEXT, st.one_of(ANY_TEXT, st.integers())).map(yaml.safe_dump)
    )
)
@settings(max_examples=40)
def test_params_files(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("params") / "params.yaml"
    path.write_text(text)
    try:
        params = load(path)
        check(params, "generate", "connect4", "randomized")
    except ParamsError:
        return


@pytest.mark.parametrize(
    "spec",
    [
        "sokoban:level=/etc/passwd",
        "sokoban:level=/dev/null",
        "sokoban:level=" + "x" * 300,
        "connect4:rows=9",
    ],
)
def test_show_of_a_bad_game_is_one_line(spec, capsys):
    assert main(["show", spec]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


@given(name=st.sampled_from(GAMES), moves=st.text(alphabet="0123456789 ,-x", max_size=30))
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_move_command(name, moves, capsys):
    try:
        code = main(["move", name, "random", "--moves", moves])
    except SystemExit as leaving:  # `move` leaves like the interpreter after a bad line
        code = leaving.code
    _, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and "Traceback" not in err
