"""Hierarchical portfolio search on tactics: turn-level choices on the shared alpha-beta core."""

from __future__ import annotations

import pytest

from agents import AgentError, make
from engine import load_game, parse_game_spec
from engine.match import play_game
from tests.tactics_positions import L, act_as, position


def test_a_winning_script_is_found_and_played_out():
    # K next to the last enemy, a 2-health mage: a Sword on e4 ends the game
    state = position([(0, "K", "e5"), (1, "M", "e4")], hands={0: (L.SWORD, L.MOVE)})
    act_as(state, 0)
    state.array[L.unit_base(1) + L.HP] = 2
    agent = make("hps:depth=1,eval=heuristic", state.game, seed=0)
    assert state.action_to_string(agent.step(state)) == "sword@e4"
    assert agent.last.value == pytest.approx(1.0) and agent.last.move == 0  # attack


def test_the_script_plays_the_rest_of_its_turn_without_a_new_search():
    game = load_game("tactics", units=2)
    state = game.new_initial_state(seed=5)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    agent = make("hps:depth=2", game, seed=1)
    first = agent.last
    unit = int(state.array[L.CUR])
    while int(state.array[L.CUR]) == unit and not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
            continue
        state.apply_action(agent.step(state))
        first = first or agent.last
        assert agent.last is first  # one search for the whole turn


@pytest.mark.parametrize("evaluation", ["playout", "heuristic"])
def test_plays_whole_games(evaluation):
    game = load_game("tactics", units=1)
    seats = [make(f"hps:depth=2,eval={evaluation}", game, seed=0), make("random", game, seed=1)]
    final = play_game(game, seats, seed=3)
    assert final.is_terminal()


def test_bad_specs_are_refused():
    game = load_game("tactics", units=1)
    for spec in ("hps:eval=magic", "hps:depth=99", "hps:speed=3", "hps:eval=onnx:/nonexistent"):
        with pytest.raises(AgentError):
            make(spec, game)
    with pytest.raises(AgentError):
        make("hps", load_game("connect4"))


def test_learned_leaves_come_from_a_trained_value_network_in_batches(tmp_path):
    """A really trained (tiny) value-planes MLP drives `eval=onnx`; its input encoder equals
    the dataset encoder, and frontier nodes are evaluated a batch at a time."""
    import numpy as np

    from agents.value_features import ValueEncoder
    from features import encode as enc
    from features.store import generate_dataset, load_dataset
    from models import value_mlp

    spec = "tactics:units=1"
    game = parse_game_spec(spec)
    generate_dataset(tmp_path / "data", spec, "randomized", {"x": 6, "y": 2}, seed=1)
    positions = load_dataset(tmp_path / "data", "positions")
    arrays = enc.encoding("value-planes")[1](positions, game)
    states = enc.list_matrix(positions.column("state"), len(positions["state"][0]), np.int64)
    both = np.repeat(states, 2, axis=0)
    sides = np.tile([0, 1], len(states))
    flat = arrays["planes"].reshape(len(both), -1)
    assert np.array_equal(ValueEncoder(game, "value-planes").batch(both, sides), flat)
    assert np.array_equal(arrays["outcome"][0::2], -arrays["outcome"][1::2])
    params = {"layers": 1, "width": 8, "epochs": 1, "cell_encoder": 2, "holdout": 0.3}
    result = value_mlp.train(
        arrays, {"encoding": "value-planes", "game": spec}, params, tmp_path / "model"
    )
    agent = make(f"hps:depth=2,eval=onnx:{result.artifact}", game, seed=0)
    state = game.new_initial_state(seed=2)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    assert agent.step(state) in state.legal_actions()
    value = agent.core.batch
    assert value.evaluations > value.calls >= 1
    from agents.hps import HPSAgent

    played = make(f"onnx:{result.artifact}:depth=1", game, seed=0)  # as the registry plays it
    assert isinstance(played, HPSAgent) and played.step(state) in state.legal_actions()
