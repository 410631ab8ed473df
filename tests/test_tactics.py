"""Tactics as a game of the protocol: conformance, notation, perft counts worked by hand,
line-ups, observations and symmetries. The rules themselves: test_tactics_rules.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine import load_game, parse_game_spec
from engine.conformance import check_game
from engine.games.tactics import layout as L
from engine.games.tactics.notation import action_name, parse_action
from engine.games.tactics.scenarios import CLASSES, cell_of, custom_config, mirror
from engine.loops import count_leaves
from engine.protocol import CHANCE, GameError, State
from tests.tactics_positions import act_as, class_deck, names, play, position


@pytest.mark.parametrize("spec", ["tactics:units=1", "tactics:preset=duel"])
@pytest.mark.parametrize("seed", [0, 1])
def test_protocol_conformance(spec, seed):
    check_game(parse_game_spec(spec), seed)


def test_metadata():
    game = load_game("tactics")
    meta = game.metadata()
    assert meta["kind"] == "duel" and meta["has_chance"] and meta["num_players"] == 2
    assert meta["num_actions"] == 4320 and meta["observation_shape"] == [78, 12, 12]
    assert game.action_cells == (30, 0)
    assert game.max_game_length == 64 * L.MAX_ACTIONS_PER_TURN
    assert game.ends_turn(5 * 30 + 13) and not game.ends_turn(13 * 30 + 5)


def test_every_action_id_writes_and_reads_back():
    ids = list(range(L.NUM_ACTIONS)) + [L.DRAW_BASE + k for k in range(L.IDS)]
    text = load_game("tactics").format_moves(ids)
    assert load_game("tactics").parse_moves(text) == ids
    assert action_name((cell_of("f3") * 30) + 1) == "sword@f3"
    assert parse_action("combine:move+spark") == (0 * 12 + 4) * 30 + 14
    assert parse_action("draw:spark") == 4320 + 4
    for bad in ("sword@m1", "sword@a13", "blade@a1", "combine:move", "4350", "end"):
        with pytest.raises(GameError):
            parse_action(bad)


def test_a_history_replays_from_its_text():
    game = load_game("tactics", units=2)
    rng = np.random.default_rng(3)
    state = game.new_initial_state(seed=7)
    for _ in range(60):
        if state.is_terminal():
            break
        state.apply_action(state.random_action(rng))
    text = game.format_moves(state.history())
    again = game.state_from_history(game.parse_moves(text), seed=7)
    assert np.array_equal(again.array, state.array) and str(again) == str(state)


# ---- perft: legal action counts worked by hand ----------------------------------------------
def corner_position() -> State:
    """K on a1 holding Move and Sword; an enemy knight on l12 that has only Move."""
    return position([(0, "K", "a1"), (1, "K", "l12")], hands={0: (L.MOVE, L.SWORD)})


def test_perft_1_corner():
    # Move: the quarter disc of radius 5 without the centre: rows 0..5 hold 5, 5, 5, 5, 4, 1
    # cells (dc <= 5, 4, 4, 4, 3, 0 and dc >= 0, minus the corner itself) = 25
    # Sword: east and south = 2; End Turn = 1
    state = corner_position()
    assert len(state.legal_actions()) == 25 + 2 + 1
    assert count_leaves(state.game, state.array, 1) == 28


def test_perft_2_corner():
    # after a Move (25): Sword towards the neighbours on the board (5 top-edge and 5 left-edge
    # cells have 3, the other 15 have 4: 90) + End = 115;
    # after a Sword (2): Move 25 + End = 26 each = 52;
    # after End: the enemy's turn on l12, Move only, no draw: 25 + 1 = 26
    state = corner_position()
    assert count_leaves(state.game, state.array, 2) == 115 + 52 + 26


def test_perft_duel_preset_draw_then_act():
    # K on f2 begins with Move and a draw from its five cards: 5 chance outcomes.
    # Move from f2: the disc's 80 cells less the 9 + 9 + 7 + 1 above row 1 = 54.
    # Then per drawn card (+ End 1): sword 4 directions; spear 4; ground 4 free neighbours and
    # combine move+ground; drawing 1 and combine move+drawing; slow heal on itself 1 and
    # combine move+slowheal.
    game = load_game("tactics", preset="duel")
    state = game.new_initial_state()
    assert state.current_player() == CHANCE and len(state.chance_outcomes()) == 5
    assert count_leaves(game, state.array, 1) == 5
    per_card = [54 + 4 + 1, 54 + 4 + 1, 54 + 4 + 1 + 1, 54 + 1 + 1 + 1, 54 + 1 + 1 + 1]
    assert count_leaves(game, state.array, 2) == sum(per_card)


def test_perft_of_a_wall_and_combinations():
    # Move, Ground, Slow Heal on a1 with a wall on b1: Move 25 - 1; Ground: a2 only; Slow Heal:
    # itself; combinations move+ground, ground+slowheal, move+slowheal; End
    state = position(
        [(0, "K", "a1"), (1, "K", "l12")], hands={0: (L.MOVE, L.GROUND, L.SLOW_HEAL)}, walls=("b1",)
    )
    assert len(state.legal_actions()) == 24 + 1 + 1 + 3 + 1


# ---- line-ups --------------------------------------------------------------------------------
def test_random_lineups_are_seeded_and_mirrored():
    game = load_game("tactics", units=3)
    a = game.new_initial_state(seed=11)
    b = game.new_initial_state(seed=11)
    assert np.array_equal(a.array, b.array)
    assert not np.array_equal(a.array, game.new_initial_state(seed=12).array)
    s = a.array
    units = [L.unit_base(i) for i in range(6)]
    side0 = [(int(s[u + L.CELL]), int(s[u + L.CLASS])) for u in units if s[u + L.FACTION] == 0]
    side1 = [(int(s[u + L.CELL]), int(s[u + L.CLASS])) for u in units if s[u + L.FACTION] == 1]
    assert sorted((mirror(c), k) for c, k in side0) == sorted(side1)
    assert all(c < 3 * 12 for c, _ in side0)
    board = s[L.BOARD : L.BOARD + L.CELLS]
    walls = set(np.flatnonzero(board < 0).tolist())
    assert walls == {mirror(c) for c in walls} and int(s[L.WALLS]) == len(walls)


def test_presets_and_bad_parameters():
    fort = load_game("tactics", preset="fort").new_initial_state()
    assert "#" in str(fort) and int(fort.array[L.NUM_UNITS]) == 6
    for bad in ({"units": 7}, {"units": 0}, {"preset": "castle"}, {"max_turns": 0}):
        with pytest.raises(GameError):
            load_game("tactics", **bad)


def test_first_turn_goes_to_the_fastest_unit():
    state = load_game("tactics", preset="trio").new_initial_state()
    s = state.array
    acting = int(s[L.CUR])
    assert CLASSES[int(s[L.unit_base(acting) + L.CLASS])].name == "ranger"
    assert int(s[L.unit_base(acting) + L.FACTION]) == 0  # ties go to side 0


# ---- observation and symmetries --------------------------------------------------------------
def test_observation_planes_are_relative_to_the_player():
    state = position([(0, "K", "b3"), (1, "M", "k10")], hands={0: (L.MOVE, L.SWORD)}, walls=("e6",))
    act_as(state, 0)
    obs0, obs1 = state.observation_tensor(0), state.observation_tensor(1)
    assert obs0.shape == (78, 12, 12)
    b3, k10, e6 = (2, 1), (9, 10), (5, 4)
    assert obs0[L.P_OWN][b3] == 1 and obs0[L.P_ENEMY][k10] == 1
    assert obs1[L.P_OWN][k10] == 1 and obs1[L.P_ENEMY][b3] == 1
    assert obs0[L.P_CONTROLLED][b3] == 1 and obs0[L.P_CONTROLLED].sum() == 1
    assert obs0[L.P_WALL][e6] == 1 and obs0[L.P_HP][e6] == pytest.approx(3 / 20)
    assert obs0[L.P_HP][b3] == pytest.approx(14 / 20)
    assert obs0[L.P_HAND + L.SWORD][b3] == 1 and obs0[L.P_HAND + L.SPEAR][b3] == 0
    assert obs0[L.P_DECK + L.MOVE][k10] == 1
    assert obs0[L.P_DEFENCE][b3] == pytest.approx(1 / 5)


def _flipped_position(flip) -> State:
    units = [(0, "M", "c3"), (1, "R", "g7"), (1, "K", "d8"), (0, "K", "c4")]
    walls = ("e5", "d6")
    hands = {0: (L.MOVE, L.BOW, L.SPARK, L.WEAK_SPARK, L.GROUND, L.SPARK_DIVE, L.SHATTER)}

    def f(cell: str) -> str:
        r, c = divmod(cell_of(cell), 12)
        r, c = flip(r, c)
        return f"{'abcdefghijkl'[c]}{r + 1}"

    return position(
        [(side, k, f(c)) for side, k, c in units], hands=hands, walls=tuple(f(w) for w in walls)
    )


@pytest.mark.parametrize("which", [1, 2, 3])
def test_flips_map_legal_actions_and_observations(which):
    flips = [
        lambda r, c: (r, c),
        lambda r, c: (r, 11 - c),
        lambda r, c: (11 - r, c),
        lambda r, c: (11 - r, 11 - c),
    ]
    game = load_game("tactics")
    obs_perm, action_perm = game.symmetries()[which]
    original, flipped = _flipped_position(flips[0]), _flipped_position(flips[which])
    assert np.array_equal(original.legal_actions_mask()[action_perm], flipped.legal_actions_mask())
    observation = original.observation_tensor(0).ravel()[obs_perm].reshape(78, 12, 12)
    assert np.array_equal(observation, flipped.observation_tensor(0))


def test_custom_positions_place_what_they_name():
    config = custom_config([(0, "R", "a1"), (1, "M", "l12")], walls=("f6",), decks={1: ()})
    s = load_game("tactics").kernels.init(config)
    assert int(s[L.BOARD + cell_of("f6")]) == -3
    assert int(s[L.unit_base(1) + L.DECK]) == 1  # Move only
    assert int(s[L.unit_base(0) + L.DECK]) == sum(1 << c for c in (L.MOVE, *class_deck("R")))


def test_render_shows_board_units_and_turn():
    state = position([(0, "K", "a1"), (1, "M", "l12")], hands={0: (L.MOVE, L.SWORD)})
    act_as(state, 0)
    text = str(state)
    assert text.splitlines()[1].startswith("  1 K") and "m" in text.splitlines()[12]
    assert "hand: move sword" in text and "side 0 (K) to act" in text
    play(state, "end@a1")
    assert "side 1 (m) to act" in str(state)
    assert "end@l12" in names(state)
