"""The tactics portfolio scripts (HPS's partial-turn policies): hand-worked choices, and every
script finishes its turns with legal actions over whole games."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make
from engine import load_game
from engine.games.tactics.scripts import SCRIPT_NAMES, scratch_buffers, script_action
from engine.match import play_game
from tests.tactics_positions import L, act_as, position


def choice(state, name: str) -> str:
    k = SCRIPT_NAMES.index(name)
    action = script_action(state.array, k, *scratch_buffers(len(state.array)))
    assert action in state.legal_actions()
    return state.action_to_string(int(action))


def test_attack_takes_the_kill_over_a_bigger_hit():
    # Sword on e4 kills the 2-health mage (10 + 2 for the life); the bow on the healthy knight
    # far away would do 1 + 3 + 1 - 1 = 4
    state = position(
        [(0, "K", "e5"), (1, "M", "e4"), (1, "K", "e11")], hands={0: (L.SWORD, L.BOW, L.MOVE)}
    )
    act_as(state, 0)
    state.array[L.unit_base(1) + L.HP] = 2
    assert choice(state, "attack") == "sword@e4"


def test_attack_closes_in_on_the_weakest_enemy_when_nothing_is_in_reach():
    state = position([(0, "K", "a1"), (1, "K", "l12"), (1, "M", "a12")], hands={0: (L.MOVE,)})
    act_as(state, 0)
    state.array[L.unit_base(2) + L.HP] = 3
    assert choice(state, "attack") == "move@a6"  # five rows down column a toward a12


def test_heal_tends_the_most_hurt_ally_then_falls_back():
    state = position(
        [(0, "M", "e5"), (0, "K", "c3"), (1, "K", "e9")], hands={0: (L.SLOW_HEAL, L.MOVE)}
    )
    act_as(state, 0)
    state.array[L.unit_base(1) + L.HP] = 5
    assert choice(state, "heal") == "slowheal@c3"
    state.apply_action(_parse("slowheal@c3"))
    assert choice(state, "heal").startswith("move@") and _farther(state, choice(state, "heal"))


def test_guard_raises_a_wall_toward_the_nearest_enemy_and_never_moves():
    state = position([(0, "K", "e5"), (1, "K", "e9")], hands={0: (L.GROUND, L.MOVE)})
    assert choice(state, "guard") == "ground@e6"
    state.apply_action(_parse("ground@e6"))
    assert choice(state, "guard") == "end@e5"


def test_combo_combines_when_it_opens_a_stronger_attack():
    # Spark alone: 3 on the mage; Move + Spark -> Spark Dive onto c4 sparks both neighbours
    state = position([(0, "M", "a1"), (1, "R", "c3"), (1, "R", "d4")], hands={0: (L.MOVE, L.SPARK)})
    act_as(state, 0)
    assert choice(state, "combo") == "combine:move+spark"
    assert choice(state, "attack") == "spark@c3"


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_script_plays_whole_games(name):
    game = load_game("tactics", units=2)
    for seed in range(2):
        seats = [make(f"heuristic:script={name}", game, seed=seed), make("random", game, seed=seed)]
        final = play_game(game, seats, seed=seed)
        assert final.is_terminal()


def _parse(token: str) -> int:
    from engine.games.tactics.notation import parse_action

    return parse_action(token)


def _farther(state, move: str) -> bool:
    from engine.games.tactics.scenarios import cell_of

    s = state.array
    me = int(s[L.CUR])
    here = int(s[L.unit_base(me) + L.CELL])
    enemy = int(s[L.unit_base(2) + L.CELL])
    target = cell_of(move.split("@")[1])

    def d2(a, b):
        return (a // 12 - b // 12) ** 2 + (a % 12 - b % 12) ** 2

    return d2(target, enemy) > d2(here, enemy)


def test_scripts_are_deterministic():
    state = load_game("tactics").new_initial_state(seed=4)
    rng = np.random.default_rng(0)
    while state.is_chance_node():
        state.apply_action(state.random_action(rng))
    assert len({choice(state.clone(), "kite") for _ in range(3)}) == 1


# ---- the portfolio as turn-level moves ---------------------------------------------------------
def _started(seed: int, units: int = 2):
    state = load_game("tactics", units=units).new_initial_state(seed=seed)
    rng = np.random.default_rng(seed)
    while state.is_chance_node():
        state.apply_action(state.random_action(rng))
    return state


def _by_steps(state, script: int, whole_game: bool):
    """The same scripted play through the State API, one action at a time."""
    from engine.games.tactics.scripts import seeded_draw

    state = state.clone()
    buffers = scratch_buffers(len(state.array))
    turn = int(state.array[L.TURN])
    while not state.is_terminal() and (whole_game or int(state.array[L.TURN]) == turn):
        if state.is_chance_node():
            state.apply_action(int(seeded_draw(state.array, buffers[0])))
        else:
            state.apply_action(int(script_action(state.array, script, *buffers)))
    return state


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_scripted_turn_is_the_scripts_actions_until_the_turn_ends(seed):
    from engine.games.tactics.scripts import play_script_turn

    state = _started(seed)
    for k in range(len(SCRIPT_NAMES)):
        s = state.array.copy()
        play_script_turn(s, k)
        expected = _by_steps(state, k, whole_game=False)
        assert np.array_equal(s, expected.array)
        assert s[L.TURN] == state.array[L.TURN] + 1 or expected.is_terminal()


def test_portfolio_moves_drop_scripts_that_repeat_a_turn():
    from engine.games.tactics.scripts import play_script_turn, portfolio_moves

    for seed in range(6):
        state = _started(seed)
        out = np.empty(8, dtype=np.int64)
        n = portfolio_moves(state.array, state.current_player(), out)
        ends = []
        for k in range(len(SCRIPT_NAMES)):
            s = state.array.copy()
            play_script_turn(s, k)
            ends.append(s.tobytes())
        assert n == len(set(ends)) and out[0] == 0
        assert len({ends[k] for k in out[:n]}) == n  # the kept ones all differ
        assert portfolio_moves(state.array, 1 - state.current_player(), out) == 0


@pytest.mark.parametrize("seed", [0, 3])
def test_scripted_playout_is_the_attack_script_on_both_sides(seed):
    from engine.games.tactics.scripts import scripted_playout

    state = _started(seed, units=3)
    final = _by_steps(state, SCRIPT_NAMES.index("attack"), whole_game=True)
    for q in (0, 1):
        assert scripted_playout(state.array, q) == final.returns()[q]


def test_material_evaluation_follows_health():
    state = position([(0, "K", "a1"), (1, "K", "l12")])
    game = state.game
    assert game.evaluate(state.array, 0) == pytest.approx(0.0)
    state.array[L.unit_base(1) + L.HP] = 4
    assert game.evaluate(state.array, 0) > 0.3 and game.evaluate(state.array, 1) < -0.3
