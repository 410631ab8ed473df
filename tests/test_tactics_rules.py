"""Tactics rules, hand-worked: every base action, every combination and every status effect.

Classes (engine/games/tactics/scenarios.py): knight K 14 hp, attack 1, defence 1, speed 2;
ranger R 10 hp, 1/0/4; mage M 9 hp, 0/0/3. Side 0 is upper case in comments, side 1 lower.
Cells are column letter + row from the top (e5 = row 5, column e).
"""

from __future__ import annotations

import pytest

from engine.protocol import CHANCE, IllegalActionError
from tests.tactics_positions import (
    L,
    act_as,
    acting,
    class_deck,
    hp,
    names,
    play,
    position,
    set_field,
    set_hand,
    unit,
    wall_hp,
)


# ---- base actions ------------------------------------------------------------------------------
def test_move_reaches_free_cells_within_radius_5_and_is_used_up():
    state = position([(0, "K", "f6"), (1, "K", "f12")], walls=("f4",))
    moves = {a for a in names(state) if a.startswith("move@")}
    assert len(moves) == 80 - 1  # the whole disc of radius 5 is on the board, less the wall
    assert "move@f4" not in moves and "move@f11" in moves and "move@f12" not in moves
    assert "move@f1" in moves and "move@b3" in moves and "move@b2" not in moves  # 9+16 / 16+16
    play(state, "move@c2")
    assert unit(state, 0, L.CELL) == 1 * 12 + 2
    assert names(state) == {"end@c2"}


def test_sword_hits_a_plus_in_front_enemies_and_walls_never_allies():
    # K on e5 swings north: e4 (front), e3 (beyond), d4 and f4 (flanks)
    state = position(
        [(0, "K", "e5"), (1, "R", "e3"), (1, "M", "d4"), (0, "R", "f4"), (1, "M", "c4")],
        hands={0: (L.SWORD,)},
        walls=("e4",),
    )
    act_as(state, 0)
    assert {a for a in names(state) if a.startswith("sword")} == {
        "sword@e4",
        "sword@f5",
        "sword@e6",
        "sword@d5",
    }
    play(state, "sword@e4")
    assert wall_hp(state, "e4") == 0  # 4 + 1 >= 3: the wall is gone
    assert hp(state, 1) == 10 - (4 + 1 - 0)
    assert hp(state, 2) == 9 - (4 + 1 - 0)
    assert hp(state, 3) == 10 and hp(state, 4) == 9  # the ally and the mage two cells aside


def test_spear_hits_three_cells_in_a_line():
    state = position([(0, "K", "e5"), (1, "M", "e2"), (1, "R", "e1")], hands={0: (L.SPEAR,)})
    act_as(state, 0)
    play(state, "spear@e4")
    assert hp(state, 1) == 9 - 5 and hp(state, 2) == 10


def test_bow_damage_grows_with_distance_and_needs_sight():
    state = position([(0, "R", "a1"), (1, "K", "a7"), (1, "K", "g1")], hands={0: (L.BOW,)})
    assert {"bow@a7", "bow@g1"} <= names(state)
    play(state, "bow@a7")  # distance 6: 1 + 3, + attack 1 - defence 1
    assert hp(state, 1) == 14 - 4
    blocked = position([(0, "R", "a1"), (1, "K", "a7")], hands={0: (L.BOW,)}, walls=("a4",))
    assert "bow@a7" not in names(blocked) and "bow@a4" in names(blocked)
    behind_unit = position([(0, "R", "a1"), (1, "K", "a7"), (0, "M", "a3")], hands={0: (L.BOW,)})
    assert "bow@a7" not in names(behind_unit)


def test_sight_through_a_corner_is_clear():
    state = position([(0, "R", "a1"), (1, "M", "b2")], hands={0: (L.BOW,)}, walls=("b1", "a2"))
    assert "bow@b2" in names(state)
    play(state, "bow@b2")  # distance sqrt 2: no bonus; 1 + 1 - 0
    assert hp(state, 1) == 9 - 2


def test_spark_burns_for_three_of_the_targets_turns():
    state = position([(0, "M", "e5"), (1, "K", "e10"), (1, "K", "e11")], hands={0: (L.SPARK,)})
    assert "spark@e10" in names(state) and "spark@e11" not in names(state)  # radius 5
    play(state, "spark@e10")
    assert hp(state, 1) == 14 - (3 + 0 - 1)
    assert unit(state, 1, L.BURN) == 3
    play(state, "end@e5")  # k on e10 acts next (speed 2, before e11 by index)
    assert acting(state) == 1 and hp(state, 1) == 12 - 2 and unit(state, 1, L.BURN) == 2
    play(state, "end@e10", "end@e11", "end@e5")
    assert hp(state, 1) == 8 and unit(state, 1, L.BURN) == 1
    play(state, "end@e10", "end@e11", "end@e5")
    assert hp(state, 1) == 6 and unit(state, 1, L.BURN) == 0  # three ticks, then over


def test_burn_lowers_defence_while_it_lasts():
    state = position([(0, "M", "e5"), (1, "K", "e6")], hands={0: (L.SPARK, L.WEAK_SPARK)})
    play(state, "spark@e6", "weakspark@e6")
    assert hp(state, 1) == 14 - 2 - (3 + 0 - (1 - 1))


def test_ground_builds_a_wall_that_blocks_sight_and_breaks():
    state = position([(0, "R", "a1"), (1, "K", "a7")], hands={0: (L.GROUND, L.BOW)})
    assert {a for a in names(state) if a.startswith("ground")} == {"ground@b1", "ground@a2"}
    play(state, "ground@a2")
    assert wall_hp(state, "a2") == 3 and "bow@a7" not in names(state)
    assert "bow@a2" in names(state)
    play(state, "bow@a2")  # 1 + 0 + attack 1 = 2 damage: the wall holds at 1
    assert wall_hp(state, "a2") == 1


def test_action_drawing_costs_3_refills_move_and_draws_anything_but_itself():
    state = position(
        [(0, "M", "e5"), (1, "K", "e11")],
        hands={0: (L.MOVE, L.DRAWING, L.SPARK)},
        decks={0: class_deck("M")},
    )
    play(state, "move@e6", "drawing@e6")
    assert hp(state, 0) == 9 - 3
    assert state.current_player() == CHANCE
    outcomes = {state.action_to_string(a): p for a, p in state.chance_outcomes()}
    assert outcomes == pytest.approx(
        {"draw:weakspark": 0.25, "draw:dust": 0.25, "draw:ground": 0.25, "draw:slowheal": 0.25}
    )
    play(state, "draw:dust")
    assert {"move@e7", "dust@e6", "spark@e11"} <= names(state)


def test_action_drawing_can_kill_its_user():
    state = position([(0, "M", "e5"), (0, "M", "a1"), (1, "K", "l12")], hands={0: (L.DRAWING,)})
    set_field(state, 0, L.HP, 3)
    play(state, "drawing@e5")
    assert unit(state, 0, L.ALIVE) == 0 and acting(state) == 1  # the next unit's turn


def test_weaker_spark_needs_radius_4_and_sight():
    state = position(
        [(0, "M", "e5"), (1, "R", "e9"), (1, "R", "f9"), (1, "R", "a5")],
        hands={0: (L.WEAK_SPARK,)},
        walls=("b5",),
    )
    act_as(state, 0)
    available = names(state)
    assert "weakspark@e9" in available  # 16
    assert "weakspark@f9" not in available  # 17 > 16
    assert "weakspark@a5" not in available and "weakspark@b5" in available  # behind the wall
    play(state, "weakspark@e9")
    assert hp(state, 1) == 10 - 3


def test_dust_slows_every_other_unit_within_4_and_reorders_the_next_round():
    state = position(
        [(0, "M", "e5"), (1, "R", "e9"), (0, "R", "e1"), (1, "R", "e10")],
        hands={2: (L.MOVE, L.DUST)},
    )
    # order this round: R e1 (4, side 0), r e9, r e10 (4), then M (3)
    assert acting(state) == 2
    play(state, "move@e2", "dust@e2")  # from e2: e5 at 3, e9 at 7 > 4
    assert unit(state, 0, L.DUSTED) == 2 and unit(state, 1, L.DUSTED) == 0
    state2 = position([(0, "M", "e5"), (1, "R", "e9"), (1, "R", "e12")], hands={0: (L.DUST,)})
    act_as(state2, 0)  # suppose M acts first this round
    play(state2, "dust@e5")
    assert unit(state2, 1, L.DUSTED) == 2 and unit(state2, 2, L.DUSTED) == 0
    order = [int(state2.array[L.ORDER + k]) for k in range(3)]
    assert order == [1, 2, 0]
    play(state2, "end@e5")  # round over: r e9 now has speed 2 < M's 3
    order = [int(state2.array[L.ORDER + k]) for k in range(3)]
    assert order == [2, 0, 1] and acting(state2) == 2


def test_slow_heal_gives_2_on_four_turn_starts_up_to_maximum():
    state = position([(0, "K", "e5"), (1, "K", "e12")], hands={0: (L.SLOW_HEAL,)})
    set_field(state, 0, L.HP, 7)
    play(state, "slowheal@e5", "end@e5", "end@e12")
    assert hp(state, 0) == 9 and unit(state, 0, L.HEALING) == 3
    for expected in (11, 13, 14):
        play(state, "end@e5", "end@e12")
        assert hp(state, 0) == expected
    play(state, "end@e5", "end@e12")
    assert hp(state, 0) == 14 and unit(state, 0, L.HEALING) == 0


def test_damage_is_never_negative():
    state = position([(0, "M", "e5"), (1, "K", "e6")], hands={0: (L.WEAK_SPARK,)})
    set_field(state, 1, L.ARMORED, 3)  # defence 1 + 2 = 3: 3 + 0 - 3 = 0
    play(state, "weakspark@e6")
    assert hp(state, 1) == 14


# ---- combinations -----------------------------------------------------------------------------
def test_combine_needs_both_ingredients_and_not_the_result():
    state = position(
        [(0, "M", "e5"), (1, "K", "e12")], hands={0: (L.MOVE, L.SPARK, L.GROUND, L.SLOW_HEAL)}
    )
    combos = {a for a in names(state) if a.startswith("combine")}
    assert combos == {
        "combine:move+spark",
        "combine:spark+ground",
        "combine:ground+slowheal",
        "combine:move+ground",
        "combine:move+slowheal",
    }
    play(state, "combine:move+spark")
    hand = unit(state, 0, L.HAND)
    assert hand == (1 << L.GROUND) | (1 << L.SLOW_HEAL) | (1 << L.SPARK_DIVE)
    assert {a for a in names(state) if a.startswith("combine")} == {"combine:ground+slowheal"}
    held = position([(0, "M", "e5"), (1, "K", "e12")], hands={0: (L.MOVE, L.SPARK, L.SPARK_DIVE)})
    assert not any(a.startswith("combine") for a in names(held))


def test_damage_chain_passes_attacks_on_the_caster_to_the_target():
    state = position([(0, "M", "e5"), (1, "K", "l12"), (1, "R", "e8")], hands={0: (L.CHAIN,)})
    act_as(state, 0)
    assert {a for a in names(state) if a.startswith("chain")} == {"chain@l12", "chain@e8"}
    play(state, "chain@l12")
    assert unit(state, 1, L.CHAINED) == 3 and unit(state, 1, L.CHAIN_TO) == 0
    act_as(state, 2)
    set_hand(state, 2, L.BOW)
    play(state, "bow@e5")  # distance 3: 1 + 1 + attack 1 = 3 on M, and on k
    assert hp(state, 0) == 9 - 3 and hp(state, 1) == 14 - 3


def test_chain_ends_with_its_caster():
    state = position([(0, "M", "e5"), (1, "K", "l12"), (1, "R", "e8")], hands={0: (L.CHAIN,)})
    act_as(state, 0)
    play(state, "chain@l12")
    set_field(state, 0, L.HP, 1)
    act_as(state, 2)
    set_hand(state, 2, L.BOW)
    play(state, "bow@e5")
    assert unit(state, 0, L.ALIVE) == 0 and unit(state, 1, L.CHAINED) == 0
    assert hp(state, 1) == 14 - 3  # shared once, before the caster fell


def test_position_swap_trades_cells_with_any_other_unit():
    state = position([(0, "M", "e5"), (1, "K", "j10"), (0, "K", "a1")], hands={0: (L.SWAP,)})
    act_as(state, 0)
    assert {a for a in names(state) if a.startswith("swap")} == {"swap@j10", "swap@a1"}
    play(state, "swap@j10")
    assert unit(state, 0, L.CELL) == 9 * 12 + 9 and unit(state, 1, L.CELL) == 4 * 12 + 4


def test_dust_spark_hits_only_dusted_units_allies_included():
    state = position(
        [(0, "M", "e5"), (1, "K", "e8"), (1, "R", "e7"), (0, "R", "e3"), (1, "K", "e10")],
        hands={0: (L.DUST_SPARK,)},
    )
    act_as(state, 0)
    for i in (1, 3, 4):
        set_field(state, i, L.DUSTED, 2)
    play(state, "dustspark@e5")
    assert hp(state, 1) == 14 - (10 - 1)  # dusted, within 4
    assert hp(state, 2) == 10  # not dusted
    assert unit(state, 3, L.ALIVE) == 0  # the dusted ally: 10 - 0 >= 10
    assert hp(state, 4) == 14  # dusted but 5 away


def test_spark_dive_lands_next_to_enemies_and_sparks_every_neighbour():
    state = position([(0, "M", "a1"), (1, "K", "f6"), (1, "R", "g7")], hands={0: (L.SPARK_DIVE,)})
    act_as(state, 0)
    landings = {a for a in names(state) if a.startswith("sparkdive")}
    assert landings == {f"sparkdive@{c}" for c in ("f5", "g6", "e6", "f7", "h7", "g8")}
    play(state, "sparkdive@f7")
    assert unit(state, 0, L.CELL) == 6 * 12 + 5
    assert hp(state, 1) == 14 - 2 and hp(state, 2) == 10 - 3
    assert unit(state, 1, L.BURN) == 3 and unit(state, 2, L.BURN) == 3


def test_shatter_splashes_7_when_it_kills_or_hits_a_wall():
    state = position(
        [
            (0, "M", "c3"),
            (1, "R", "f6"),
            (1, "K", "f8"),
            (0, "R", "h6"),
            (1, "M", "f10"),
            (1, "M", "f9"),
        ],
        hands={0: (L.SHATTER,)},
    )
    act_as(state, 0)
    assert "shatter@f10" not in names(state)  # radius 5
    set_field(state, 1, L.HP, 5)
    play(state, "shatter@f6")
    assert unit(state, 1, L.ALIVE) == 0
    assert hp(state, 2) == 14 - (7 - 1)  # 2 away from the strike
    assert hp(state, 3) == 10 - 7  # the ally too
    assert hp(state, 5) == 9 - 7  # exactly 3 away
    assert hp(state, 4) == 9 and hp(state, 0) == 9  # 4 away; the caster 18 away


def test_shatter_without_a_kill_does_not_splash_but_a_wall_always_does():
    state = position(
        [(0, "M", "a1"), (1, "R", "c3"), (1, "K", "c4")], hands={0: (L.SHATTER,)}, walls=("a3",)
    )
    act_as(state, 0)
    play(state, "shatter@c3")
    assert hp(state, 1) == 10 - 5 and hp(state, 2) == 14
    again = position(
        [(0, "M", "a1"), (1, "R", "c3"), (1, "K", "c4")], hands={0: (L.SHATTER,)}, walls=("a3",)
    )
    act_as(again, 0)
    play(again, "shatter@a3")
    assert wall_hp(again, "a3") == 0
    assert hp(again, 1) == 10 - 7 and hp(again, 2) == 14 - (7 - 1)  # 2 and sqrt 5 away
    assert hp(again, 0) == 9 - 7  # the caster stands 2 from the wall, in its own splash


def test_shield_slows_and_absorbs_one_whole_attack():
    state = position([(0, "K", "e5"), (1, "M", "e7")], hands={0: (L.SHIELD,)})
    act_as(state, 0)
    play(state, "shield@e5")
    assert unit(state, 0, L.SHIELDED) == 3
    from engine.games.tactics.layout import speed_of

    assert speed_of(state.array, 0) == 2 - 1
    play(state, "end@e5")
    set_hand(state, 1, L.SPARK, L.WEAK_SPARK)
    play(state, "spark@e5")
    assert hp(state, 0) == 14 and unit(state, 0, L.BURN) == 0 and unit(state, 0, L.SHIELDED) == 0
    play(state, "weakspark@e5")
    assert hp(state, 0) == 14 - 2


def test_boost_borrows_half_the_health_and_returns_it_after_four_turns():
    state = position([(0, "K", "e5"), (1, "K", "l12")], hands={0: (L.BOOST, L.SWORD)})
    act_as(state, 0)
    play(state, "boost@e5")
    assert hp(state, 0) == 7 and unit(state, 0, L.BORROWED) == 7
    from engine.games.tactics.layout import attack_of, defence_of, speed_of

    s = state.array
    assert (attack_of(s, 0), defence_of(s, 0), speed_of(s, 0)) == (5, 0, 3)
    set_field(state, 0, L.HP, 3)  # hit meanwhile: the 7 come back all the same
    for _ in range(3):
        play(state, "end@e5", "end@l12")
        assert unit(state, 0, L.BOOSTED) > 0
    play(state, "end@e5", "end@l12")
    assert unit(state, 0, L.BOOSTED) == 0 and hp(state, 0) == 3 + 7


def test_boosted_attack_adds_4():
    state = position([(0, "K", "e5"), (1, "M", "e4")], hands={0: (L.BOOST, L.SWORD)})
    act_as(state, 0)
    play(state, "boost@e5", "sword@e4")
    assert hp(state, 1) == 0 or unit(state, 1, L.ALIVE) == 0  # 4 + 5 - 0 = 9


def test_armor_adds_2_defence_for_three_turns():
    state = position([(0, "R", "e5"), (1, "K", "e6")], hands={0: (L.ARMOR, L.BOW)})
    play(state, "armor@e5")
    assert unit(state, 0, L.ARMORED) == 3
    play(state, "end@e5")
    set_hand(state, 1, L.SWORD)
    play(state, "sword@e5")  # 4 + 1 - (0 + 2)
    assert hp(state, 0) == 10 - 3


def test_fast_heal_restores_5_up_to_maximum():
    state = position([(0, "K", "e5"), (1, "K", "l12")], hands={0: (L.FAST_HEAL,)})
    set_field(state, 0, L.HP, 11)
    play(state, "fastheal@e5")
    assert hp(state, 0) == 14


# ---- turns, draws and the end ----------------------------------------------------------------
def test_turn_start_gives_move_back_and_draws_one_card_it_lacks():
    state = position(
        [(0, "K", "e5"), (1, "M", "l12")], hands={1: (L.SPARK, L.DUST)}, decks={1: class_deck("M")}
    )
    act_as(state, 0)
    play(state, "move@e6", "end@e6")
    assert acting(state) == 1 and state.current_player() == CHANCE
    outcomes = {state.action_to_string(a) for a, _ in state.chance_outcomes()}
    assert outcomes == {"draw:weakspark", "draw:ground", "draw:drawing", "draw:slowheal"}
    with pytest.raises(IllegalActionError):
        play(state, "draw:spark")
    play(state, "draw:ground")
    assert unit(state, 1, L.HAND) == sum(1 << c for c in (L.MOVE, L.SPARK, L.DUST, L.GROUND))


def test_no_chance_node_when_the_draw_is_forced_or_empty():
    state = position(
        [(0, "K", "e5"), (1, "M", "l12")], hands={1: (L.SPARK,)}, decks={1: (L.SPARK, L.DUST)}
    )
    act_as(state, 0)
    play(state, "end@e5")
    assert state.current_player() == 1  # only Dust could be drawn
    assert unit(state, 1, L.HAND) == sum(1 << c for c in (L.MOVE, L.SPARK, L.DUST))


def test_speed_ties_go_to_side_0_then_the_lower_index():
    state = position([(1, "K", "a1"), (0, "K", "l12"), (0, "K", "a12"), (1, "R", "f6")])
    order = [int(state.array[L.ORDER + k]) for k in range(4)]
    assert order == [3, 1, 2, 0]


def test_burn_can_kill_a_unit_before_it_acts():
    state = position([(0, "M", "e5"), (1, "M", "e9"), (1, "M", "l12")], hands={0: (L.SPARK,)})
    set_field(state, 1, L.HP, 4)
    play(state, "spark@e9")
    assert hp(state, 1) == 1 and unit(state, 1, L.BURN) == 3
    play(state, "end@e5")
    assert unit(state, 1, L.ALIVE) == 0 and acting(state) == 2
    assert int(state.array[L.TURN]) == 3  # the fallen unit's turn counts


def test_killing_the_last_enemy_wins():
    state = position([(0, "K", "e5"), (1, "M", "e4")], hands={0: (L.SWORD,)})
    act_as(state, 0)
    set_field(state, 1, L.HP, 5)
    play(state, "sword@e4")
    assert state.is_terminal() and state.returns() == [1.0, -1.0]
    assert "side 0 wins" in str(state)


def test_both_sides_wiped_out_is_a_draw():
    state = position([(0, "M", "a1"), (1, "R", "a2")], hands={0: (L.SHATTER,)}, walls=("b1",))
    act_as(state, 0)
    set_field(state, 1, L.HP, 7)
    set_field(state, 0, L.HP, 7)
    play(state, "shatter@b1")
    assert state.is_terminal() and state.returns() == [0.0, 0.0]


def test_the_turn_limit_is_a_draw():
    state = position([(0, "K", "a1"), (1, "K", "l12")], max_turns=3)
    play(state, "end@a1", "end@l12")
    assert not state.is_terminal()
    play(state, "end@a1")
    assert state.is_terminal() and state.returns() == [0.0, 0.0]
