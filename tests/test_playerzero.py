"""The PlayerZero network: shapes from the game, masked policy head, training, ONNX export and
the agents that play the exported file (a really trained model, tiny but real)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from agents import make
from agents.base import AgentError
from agents.puct.pv_net import PolicyValueNet
from engine import parse_game_spec
from features.encode import planes
from features.store import generate_dataset, load_dataset
from features.symmetry import game_symmetries
from models import playerzero
from models.base import ModelError


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A scale-1 network trained on 60 games of MCTS self-play (about 20 s)."""
    folder = tmp_path_factory.mktemp("pz")
    options = {"x": 60, "agent": "mcts:sims=60", "shard_size": 60, "temperature_plies": 6}
    generate_dataset(folder / "data", "connect4", "selfplay", options, seed=5)
    game = parse_game_spec("connect4")
    arrays = planes(load_dataset(folder / "data", "positions"), game, augment=True)
    meta = {"encoding": "planes", "game": "connect4"}
    params = {"scale": 1, "epochs": 6, "batch_size": 64, "learning_rate": 0.003, "seed": 1,
              "play_solve": 2, "play_prior_temp": 1.5}  # fmt: skip
    result = playerzero.train(arrays, meta, params, folder / "net")
    return result, arrays


@pytest.mark.slow
def test_training_exports_a_parity_checked_policy_value_model(trained):
    result, _ = trained
    report = json.loads((result.artifact.parent / "parity.json").read_text())
    assert report["passed"] and report["max_abs_diff"] <= 1e-4
    assert report["input"] == ["planes", "mask"] and report["output"] == ["policy", "value"]
    net = PolicyValueNet(parse_game_spec("connect4"), result.artifact)
    assert net.meta["gridbots.kind"] == "policy-value" and net.meta["gridbots.scale"] == "1"
    assert result.metrics["parameters"] > 0 and "held_out_policy_loss" in result.metrics
    assert net.play_options() == {"discount": "1.0", "solve": "2", "prior_temp": "1.5"}


def test_the_model_s_play_settings_are_defaults_a_spec_overrides(trained):
    result, _ = trained
    game = parse_game_spec("connect4")
    assert make(f"puct:model={result.artifact},sims=8", game).solve == 2
    assert make(f"puct:model={result.artifact},sims=8,solve=0", game).solve == 0
    assert make(f"puct:model={result.artifact},sims=8", game).prior_temp == 1.5


def test_self_play_keeps_the_network_s_own_priors(trained, tmp_path):
    """The play-time prior temperature is for matches; the loop's self-play pins its own (1)."""
    import yaml

    from models.playerzero_loop import selfplay_options

    result, _ = trained
    repo = Path(__file__).resolve().parent.parent
    params = yaml.safe_load((repo / "params.yaml").read_text())["playerzero"]["connect4"]
    state = {"player": {"path": str(result.artifact), "scale": 1}}
    spec = selfplay_options(params, state, tmp_path)["agent"]
    assert make(spec, parse_game_spec("connect4")).prior_temp == 1.0
    params["selfplay"]["prior_temp"] = 2.0
    spec = selfplay_options(params, state, tmp_path)["agent"]
    assert make(spec, parse_game_spec("connect4")).prior_temp == 2.0


def test_the_policy_is_zero_on_illegal_moves_and_the_value_in_range(trained):
    result, _ = trained
    game = parse_game_spec("connect4")
    state = game.state_from_history(game.parse_moves("444444"))  # column 4 full
    net = PolicyValueNet(game, result.artifact)
    mask = state.legal_actions_mask().astype(np.float32)
    policy, value = net(state.observation_tensor()[None], mask[None])
    assert policy[0, 3] == 0.0 and np.isclose(policy[0].sum(), 1.0, atol=1e-5)
    assert -1.0 <= value[0] <= 1.0


def test_it_learned_what_its_teacher_plays(trained):
    """MCTS opens in the centre (the solver's only winning first move); the net learned it, and
    its held-out policy agrees with the search more often than a uniform guess would."""
    result, _ = trained
    game = parse_game_spec("connect4")
    net = PolicyValueNet(game, result.artifact)
    state = game.new_initial_state()
    mask = state.legal_actions_mask().astype(np.float32)[None]
    policy, _ = net(state.observation_tensor()[None], mask)
    assert int(np.argmax(policy[0])) == 3
    assert result.metrics["held_out_policy_accuracy"] > 1.5 / 7


def test_agents_play_the_exported_file(trained):
    """Each agent that reads the file plays whole legal games; `policy` plays exactly the
    network's most likely legal move, and the searches take a win in one that the net alone
    need not see."""
    result, _ = trained
    game = parse_game_spec("connect4")
    net = PolicyValueNet(game, result.artifact)
    for spec in (f"onnx:{result.artifact}:sims=20", f"puct:model={result.artifact},sims=20",
                 f"policy:model={result.artifact}"):  # fmt: skip
        agent, state = make(spec, game, seed=0), game.new_initial_state()
        while not state.is_terminal():
            move = agent.step(state)
            assert move in state.legal_actions(), (spec, state.history())
            if spec.startswith("policy:"):
                mask = state.legal_actions_mask().astype(np.float32)[None]
                policy, _ = net(state.observation_tensor()[None], mask)
                assert move == int(np.argmax(policy[0])), state.history()
            state.apply_action(move)
        assert sorted(state.returns()) in ([-1.0, 1.0], [0.0, 0.0])
    won = game.state_from_history(game.parse_moves("112233"))  # X: 4 completes the bottom row
    for spec in (f"onnx:{result.artifact}:sims=200", f"puct:model={result.artifact},sims=200"):
        assert make(spec, game, seed=0).step(won) == 3, spec


@pytest.mark.slow
def test_warm_start_continues_from_saved_weights(trained, tmp_path):
    result, arrays = trained
    meta = {"encoding": "planes", "game": "connect4"}
    warm = result.artifact.parent / playerzero.WEIGHTS_FILE
    params = {"scale": 1, "steps": 1, "learning_rate": 1e-9, "warm_start": str(warm)}
    again = playerzero.train(arrays, meta, params, tmp_path)
    game = parse_game_spec("connect4")
    state = game.new_initial_state()
    inputs = (state.observation_tensor()[None], state.legal_actions_mask()[None].astype("f4"))
    before = PolicyValueNet(game, result.artifact)(*inputs)[0]
    after = PolicyValueNet(game, again.artifact)(*inputs)[0]
    assert np.allclose(before, after, atol=1e-3)  # a near-zero step keeps what was learned
    with pytest.raises(ModelError, match="warm start"):
        playerzero.train(arrays, meta, {"scale": 2, "steps": 1, "warm_start": str(warm)},
                         tmp_path / "bad")  # fmt: skip


def test_batches_draw_one_symmetry_per_row_moving_planes_mask_and_policy_together(trained):
    """Augmenting per batch gives, row by row, one of the copies augmenting up front makes."""
    _, arrays = trained
    game = parse_game_spec("connect4")
    n = int((arrays["symmetry"] == 0).sum())
    one = {k: arrays[k][:n] for k in ("planes", "mask", "policy")}
    compact = (one["planes"].astype(np.float16), one["mask"].astype(np.uint8),
               one["policy"].astype(np.float16))  # fmt: skip
    symmetries = game_symmetries(game)
    x, m, p = playerzero.symmetric_batch(compact, symmetries, np.random.default_rng(3))
    assert x.dtype == m.dtype == p.dtype == np.float32
    drawn = []
    for i in range(n):
        copies = [k for k in range(len(symmetries))
                  if np.array_equal(x[i], arrays["planes"][k * n + i])
                  and np.array_equal(m[i], arrays["mask"][k * n + i])
                  and np.allclose(p[i], arrays["policy"][k * n + i], atol=1e-3)]  # fmt: skip
        assert copies, f"row {i} is no symmetric copy of its position"
        drawn.append(copies[0])
    assert set(drawn) == {0, 1}  # both the identity and the mirror were drawn
    alone = playerzero.symmetric_batch(compact, symmetries[:1], np.random.default_rng(3))
    assert np.array_equal(alone[0], one["planes"]) and np.array_equal(alone[1], one["mask"])


def test_heads_follow_the_games_action_layout():
    """Othello's squares are cells (a per-cell head and a pass logit); Connect 4's columns are not
    (a dense head). A tactics-like layout of 30 ids per cell gets 30 filters per cell."""
    keras = playerzero.keras_seeded(0)
    params = {**playerzero.DEFAULTS}
    othello = playerzero.describe_game(parse_game_spec("othello"))
    model = playerzero.build(othello, 1, 8, params, keras)
    assert model.get_layer("policy_cells").filters == 1
    assert model.get_layer("policy_extra").units == 1
    tactics_like = {"game": "t", "observation_shape": [4, 12, 12], "num_actions": 4320,
                    "action_cells": [30, 0]}  # fmt: skip
    model = playerzero.build(tactics_like, 1, 8, params, keras)
    assert model.get_layer("policy_cells").filters == 30
    x = np.zeros((2, 4, 12, 12), np.float32)
    mask = np.zeros((2, 4320), np.float32)
    mask[:, [5, (11 * 12 + 4) * 30 + 7]] = 1.0
    logits, _ = model([x, mask], training=False)
    probs = np.asarray(keras.ops.softmax(logits))
    assert probs.shape == (2, 4320) and np.allclose(probs[:, [5, 4087]].sum(axis=1), 1.0)
    c4 = playerzero.describe_game(parse_game_spec("connect4"))
    model = playerzero.build(c4, 1, 8, params, keras)
    assert model.get_layer("policy_dense").units == 7


def test_bad_training_input_is_a_model_error(trained):
    _, arrays = trained
    with pytest.raises(ModelError, match="observation"):
        playerzero.train(arrays, {"encoding": "planes", "game": "othello"}, {"steps": 1}, "/tmp")
    with pytest.raises(ModelError, match="scale"):
        playerzero.train(arrays, {"encoding": "planes", "game": "connect4"}, {"scale": 9}, "/tmp")
    with pytest.raises(ModelError, match="planes encoding"):
        playerzero.train(arrays, {"encoding": "board-onehot", "game": "connect4"}, {}, "/tmp")
    with pytest.raises(ModelError, match="play_prior_temp"):
        meta = {"encoding": "planes", "game": "connect4"}
        playerzero.train(arrays, meta, {"play_prior_temp": 0.0}, "/tmp")


def test_a_corrupt_file_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(AgentError, match="not a readable ONNX model"):
        make(f"puct:model={bad}", parse_game_spec("connect4"))


def test_an_int8_copy_keeps_the_networks_choices_and_plays(trained, tmp_path):
    """models.quantize: the copy carries the source's metadata and its check; on positions of
    its own (not the check's) it still opens in the centre, gives an illegal move nothing, and
    keeps the value within the check's bound; puct plays it."""
    import onnx

    from models.quantize import quantize

    result, _ = trained
    game = parse_game_spec("connect4")
    out = tmp_path / "int8" / "model.onnx"
    check = quantize(result.artifact, out, game, positions=200, seed=3)
    assert check["agreement"] >= 0.9 and check["positions"] == 200
    assert 0 < check["policy_error_max"] <= 0.03  # int8 rounding moves probabilities, not far
    assert sorted(p.name for p in out.parent.iterdir()) == ["model.onnx"]  # no work files left
    float_net, copy = PolicyValueNet(game, result.artifact), PolicyValueNet(game, out)
    assert copy.meta["gridbots.quantized"] == "int8" and copy.meta["gridbots.scale"] == "1"
    assert float(copy.meta["gridbots.quantized.agreement"]) == pytest.approx(check["agreement"])
    drift = float(copy.meta["gridbots.quantized.policy_error_max"])  # written to 4 decimals
    assert drift == pytest.approx(check["policy_error_max"], abs=5e-5)
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "QuantizeLinear" in ops  # really integer kernels, not a copy of the float graph
    for moves in ("", "444444", "4453"):
        state = game.state_from_history(game.parse_moves(moves))
        mask = state.legal_actions_mask().astype(np.float32)[None]
        p_float, v_float = float_net(state.observation_tensor()[None], mask)
        p_copy, v_copy = copy(state.observation_tensor()[None], mask)
        # every move's probability within int8's rounding, here as on the check's positions; the
        # move itself is not compared: this tiny network's policy is nearly flat (after "444444"
        # its two best moves lie 0.014 apart, and int8 swapped them on one CPU), so a near-tie
        # may go either way; agreement over 200 positions is the check's (above), the opening's
        # clear preference is asserted below
        assert np.abs(p_copy[0] - p_float[0]).max() <= 0.03
        assert (p_copy[0][mask[0] == 0] == 0).all() and np.isclose(p_copy[0].sum(), 1, atol=1e-5)
        assert abs(v_copy[0] - v_float[0]) <= max(0.1, check["value_error_max"])
    assert int(np.argmax(copy(game.new_initial_state().observation_tensor()[None],
                              np.ones((1, 7), np.float32))[0][0])) == 3  # fmt: skip
    state = game.new_initial_state()
    while not state.is_terminal():
        state.apply_action(make(f"puct:model={out},sims=16", game, seed=0).step(state))


def test_a_copy_that_disagrees_too_often_is_refused_and_not_written(trained, tmp_path, capsys):
    from flows.cli.app import run
    from models.quantize import quantize

    result, _ = trained
    out = tmp_path / "int8.onnx"
    with pytest.raises(ModelError, match="below 101%"):
        quantize(result.artifact, out, parse_game_spec("connect4"), 40, 0, min_agreement=1.01)
    assert list(tmp_path.iterdir()) == []
    for args in (["connect4", str(tmp_path / "missing.onnx")],  # no such file
                 ["othello", str(result.artifact)]):  # trained for another game  # fmt: skip
        assert run(["quantize", *args, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("gridbots: error:") and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.slow
def test_a_flat_observation_trains_a_network_puct_plays(tmp_path):
    """Pig observes four numbers, not planes: the tower reads them as one cell of four
    channels, the export keeps the game's own input shape and PUCT plays it through the dice."""
    options = {"x": 12, "agent": "mcts:sims=20", "shard_size": 12, "temperature_plies": 0}
    generate_dataset(tmp_path / "data", "pig", "selfplay", options, seed=3)
    game = parse_game_spec("pig")
    arrays = planes(load_dataset(tmp_path / "data", "positions"), game)
    assert arrays["planes"].shape[1:] == (4,)
    params = {"scale": 1, "steps": 4, "batch_size": 32, "seed": 0}
    result = playerzero.train(arrays, {"encoding": "planes", "game": "pig"}, params, tmp_path / "n")
    net = PolicyValueNet(game, result.artifact)
    state = game.new_initial_state()
    policy, value = net(state.observation_tensor()[None], state.legal_actions_mask()[None] * 1.0)
    assert policy.shape == (1, game.num_actions) and np.isclose(policy.sum(), 1.0)
    assert -1.0 <= value[0] <= 1.0
    agent = make(f"puct:model={result.artifact},sims=16", game, seed=0)
    while not state.is_terminal():
        if state.current_player() < 0:
            state.apply_action(state.random_action(np.random.default_rng(len(state.history()))))
            continue
        move = agent.step(state)
        assert move in state.legal_actions(), state.history()
        state.apply_action(move)
    assert sorted(state.returns()) == [-1.0, 1.0]
