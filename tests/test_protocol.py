"""Every registered game passes the protocol checks of engine.conformance, for drawn seeds."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import game_names, parse_game_spec
from engine.conformance import ALL_CHECKS

# extra configurations beyond each game's defaults: (game spec, scenario)
EXTRA = {
    "connect4": [("connect4", {"opening": 6})],
    "othello": [("othello", {"opening": 8})],
    "lazerbike": [
        ("lazerbike:players=3", {"start": "random"}),
        ("lazerbike:players=4,teams=0101", {}),
        ("lazerbike:players=4", {"start": "random"}),
    ],
    "sokoban": [("sokoban:level=corridors", {})],
    "pig": [("pig:target=20", {})],
    "territory": [
        ("territory:preset=against-red,rounds=60", {}),
        ("territory:preset=beat-red-hard,rounds=30", {}),
        ("territory:preset=expand-alone,size=3,rounds=60", {}),
    ],
}

CONFIGS = [(name, {}) for name in game_names()] + [
    config for name in game_names() for config in EXTRA.get(name, [])
]


def test_the_five_games_are_registered():
    assert {"connect4", "othello", "lazerbike", "sokoban", "pig"} <= set(game_names())


@pytest.mark.slow
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize(("spec", "scenario"), CONFIGS, ids=[f"{s}{sc or ''}" for s, sc in CONFIGS])
@given(seed=st.integers(min_value=0, max_value=2**31 - 1))
@settings(max_examples=30)  # ~100 game x check pairs: the CI profile's 100 would cost minutes
def test_protocol(check, spec, scenario, seed):
    check(parse_game_spec(spec), seed, **scenario)


@pytest.mark.parametrize("name", game_names())
def test_metadata_is_complete(name):
    meta = parse_game_spec(name).metadata()
    assert meta["kind"] in ("duel", "war", "puzzle")
    assert meta["num_players"] >= 1 and len(meta["teams"]) == meta["num_players"]
    assert meta["num_actions"] > 0 and meta["max_game_length"] > 0
    assert all(d > 0 for d in meta["observation_shape"])
    if meta["kind"] == "duel":
        assert meta["num_players"] == 2 and len(set(meta["teams"])) == 2
