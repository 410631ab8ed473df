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
