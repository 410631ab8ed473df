"""Every parser a user reaches, fuzzed: any input gives a result or one clear error (GameError
and its kinds: the CLI prints one line and exits 2), never another exception or a traceback.
Sokoban levels, game specs and parameters, agent specs, move histories, params.yaml, and the
`show` / `move` commands end to end."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.base import parse_spec
from engine import load_game, parse_game_spec
from engine.games.sokoban.levels import parse_level
from engine.protocol import GameError, IllegalActionError
from flows.entry import main
from flows.pipeline.params import ParamsError, check, load

REPO = Path(__file__).resolve().parents[1]
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
    name = spec.partition(":")[0].strip()  # the syntax: `name:key=value,…`, spaces ignored
    try:
        game = parse_game_spec(spec)
    except CLEAR as error:
        message = str(error)
        assert message and "\n" not in message
        items = [item for item in spec.partition(":")[2].split(",") if item]
        if any("=" not in item or item.startswith("=") for item in items):  # said first
            assert message.startswith("bad game option "), message
        elif name in GAMES:  # the game's own words about its parameters
            assert message.startswith(f"{name}: "), message
        else:
            assert message.startswith(f"unknown game {name!r}; known: "), message
        return
    assert game.name == name
    assert parse_game_spec(game.spec()).params == game.params  # the spec round-trips
    state = game.new_initial_state(seed=0)
    assert not state.is_terminal() and state.legal_actions(0)


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
        name, _ = parse_spec(spec)
    except CLEAR as error:  # only a `key=value` item without its `=` or its key is refused
        message = str(error)
        assert message.startswith("bad option ") and f"in agent spec {spec!r}" in message
        item = ast.literal_eval(message.removeprefix("bad option ").partition(" in agent spec")[0])
        assert "=" not in item or not item.partition("=")[0].strip()
        return
    assert name == spec.strip().partition(":")[0]


@given(
    name=st.sampled_from(["random", "mcts", "alphabeta", "simab", "heuristic", "seq", "puct"]),
    variant=st.one_of(st.none(), st.sampled_from(["mcts", "random"])),
    options=st.dictionaries(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
            lambda key: key != "variant"
        ),
        st.text(alphabet="abcxyz0123456789.-+:/", max_size=10),  # a value may hold colons
        max_size=4,
    ),
)
def test_agent_specs_written_by_the_grammar_read_back(name, variant, options):
    """`name[:variant][:key=value,…]` (DESIGN.md's agent specs), written here from its parts:
    parsing gives the same parts back."""
    parts = [name, *([variant] if variant else [])]
    if options:
        parts.append(",".join(f"{k}={v}" for k, v in options.items()))
    expected = {**({"variant": variant} if variant else {}), **options}
    assert parse_spec(":".join(parts)) == (name, expected)


#: the options each agent documents (README, DESIGN.md), with the type its value must parse as
#: (None: any text, the agent judges it); written here, apart from the agents' own parsers
DOCUMENTED = {
    "random": {"guards": None},
    "mcts": {"sims": int, "ms": float, "c": float},
    "alphabeta": {"depth": int, "ms": float, "tt": int, "playouts": int, "eval": None},
    "heuristic": {},
    "simab": {"depth": int, "ms": float, "eval": None},
}
#: agents that cannot play Connect 4 at all, whatever their options
NOT_FOR_CONNECT4 = {"heuristic": "ships no heuristic policy", "simab": "is turn-based"}


def _parses(kind: type | None, value: str) -> bool:
    if kind is None:
        return True
    try:
        kind(value)
    except ValueError:
        return False
    return True


@given(
    name=st.sampled_from(sorted(DOCUMENTED)),
    options=st.dictionaries(
        st.sampled_from(["depth", "ms", "sims", "c", "guards", "eval", "tt", "playouts", "x"]),
        st.text(alphabet="0123456789.-+e:abxyz", max_size=8),
        max_size=3,
    ),
)
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_agent_options(name, options, capsys):
    from agents import make

    spec = name + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")
    known = DOCUMENTED[name]
    unknown = sorted(set(options) - set(known))
    unparsed = [k for k, v in options.items() if k in known and not _parses(known[k], v)]
    try:
        agent = make(spec, load_game("connect4"), seed=0)
    except CLEAR as error:
        message = str(error)
        named = [repr(k) for k in unknown] + [f"option {k}={options[k]!r}" for k in unparsed]
        assert (
            any(words in message for words in named)  # names what is wrong
            or message.startswith(f"{name}: ")  # a value out of range, in the agent's words
            or message.startswith("unknown guard ")
        ), (spec, message)
        # and the command line says the same in one line, exit code 2
        try:
            code = main(["move", "connect4", spec, "--moves", ""])
        except SystemExit as leaving:
            code = leaving.code
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and message in err, (code, err)
        return
    assert not unknown and not unparsed and name not in NOT_FOR_CONNECT4, spec
    for key, value in options.items():  # the values reached the agent
        if known[key] in (int, float) and hasattr(agent, key):
            assert getattr(agent, key) == known[key](value), (spec, key)


@pytest.mark.slow
@given(
    st.sampled_from(
        [
            "workers",
            "dask.address",
            "connect4.spec",
            "connect4.datasets.randomized.seed",
            "connect4.datasets.randomized.options",
            "games",
        ]
    ),
    st.one_of(
        st.none(),
        ANY_TEXT,
        st.integers(),
        st.booleans(),
        st.lists(ANY_TEXT, max_size=2),
        st.dictionaries(ANY_TEXT, st.integers(), max_size=2),
    ),
)
@example(key="games", value=1)  # found by CI: the old-TD-keys check iterated a bad `games`
@settings(max_examples=40)
def test_params_files(tmp_path_factory, key, value):
    """The real params.yaml with one key the generate stage reads replaced (None: removed): it
    passes exactly when the new value has the documented type, else one line names that key."""
    params = load(REPO / "params.yaml")
    *parents, last = key.split(".")
    holder = params
    for part in parents:
        holder = holder[part]
    if value is None:
        del holder[last]
    else:
        holder[last] = value
    path = tmp_path_factory.mktemp("params") / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    documented = {"workers": int, "dask.address": str, "connect4.spec": str,
                  "connect4.datasets.randomized.seed": int,
                  "connect4.datasets.randomized.options": dict}  # fmt: skip
    if key == "games":
        fine = isinstance(value, list) and "connect4" in value
    else:
        fine = isinstance(value, documented[key]) and not isinstance(value, bool)
    try:
        check(load(path), "generate", "connect4", "randomized")
    except ParamsError as error:
        message = str(error)
        assert not fine, message
        assert message.startswith("stage generate-connect4@randomized: key "), message
        assert (last if value is None else key) in message and "\n" not in message
        return
    assert fine, (key, value)


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
