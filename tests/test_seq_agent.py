"""`seq:model=PATH`: histories encoded exactly as datasets encode them (Connect 4 and
Lazerbike), the decision framing by hand, guards in hand-worked positions, never an illegal
move, and ONNX sequence models built by onnx.helper (a copying net, a fixed-logit net)."""

from __future__ import annotations

import numpy as np
import pytest
from test_hmm import agreement, copycat_games
from test_onnx_eval import linear_model

from agents import AgentError, make
from agents.sequence.agent import (
    MeanPredictor,
    Predictor,
    SeqAgent,
    decision_context,
    history_rounds,
)
from engine import load_game
from engine.games.lazerbike import state_from_setup
from engine.match import play_game
from features import encode as enc
from features.generate.tables import GameTable
from models import hmm
from models.base import artifact_metadata


class Prefer(Predictor):
    """Ranks lower action numbers first (0 best): the guards must overrule it."""

    def scores(self, context, player):
        return -np.arange(7.0)


def bike_games(count: int):
    """(games, sequences) of two guarded random bikes, as a dataset holds them."""
    game = load_game("lazerbike")
    table = GameTable(game, "imitation", 0)
    for i in range(count):
        agents = [make("random:guards=safe", game, seed=2 * i + p) for p in range(2)]
        state = play_game(game, agents, seed=i)
        table.add(state.history(), state.returns(), i, {}, ["random"] * 2)
    return table.tables()


def dataset_rounds(sequences, game) -> list[np.ndarray]:
    rounds, counts = enc.action_rounds(sequences, game, 200)
    return [r[:c] for r, c in zip(rounds, counts, strict=True)]


def test_history_rounds_match_the_dataset_encoding_connect4():
    game = load_game("connect4")
    games, sequences = copycat_games()
    expected = dataset_rounds(sequences.filter(np.asarray(sequences["player"]) == 0), game)
    for row, want in zip(games.to_pylist()[:40], expected[:40], strict=True):
        state = game.state_from_history(row["history"], seed=row["seed"])
        assert history_rounds(game, state).tolist() == want.tolist()
    quantitative = enc.quantitative(sequences, game)
    assert (quantitative["inputs"][0][: len(expected[0])] == expected[0][:20]).all()


def test_history_rounds_match_the_dataset_encoding_lazerbike():
    game = load_game("lazerbike", players=3)
    table = GameTable(game, "imitation", 0)
    for i in range(6):
        agents = [make("random:guards=safe", game, seed=10 * i + p) for p in range(3)]
        state = play_game(game, agents, seed=i)
        table.add(state.history(), state.returns(), i, {}, ["random"] * 3)
    games, sequences = table.tables()
    expected = dataset_rounds(sequences.filter(np.asarray(sequences["player"]) == 0), game)
    dead = False
    for row, want in zip(games.to_pylist(), expected, strict=True):
        state = game.state_from_history(row["history"], seed=row["seed"])
        rounds = history_rounds(game, state)
        assert rounds.tolist() == want.tolist()
        assert len(rounds) == row["length"]  # simultaneous: one round per lap
        dead |= bool((rounds == -2).any())
    assert dead  # dead bikes play the neutral value


def test_decision_context_by_hand():
    rounds = np.array([[3, 5], [2, -1]])
    # turn-based: seat 1 acts in the open round [2, -1], so it sees the rounds before it
    assert decision_context(rounds, 1, False, -1).tolist() == [[3, 5]]
    assert decision_context(rounds[:1], 0, False, -1).tolist() == [[3, 5]]  # a new round
    assert decision_context(rounds[:0], 0, False, -1).shape == (0, 2)
    # simultaneous: every lap is a round already
    laps = np.array([[1, 1], [0, -2]])
    assert decision_context(laps, 0, True, -2).tolist() == laps.tolist()


@pytest.mark.parametrize(
    ("history", "guards", "move"),
    [
        ([], "win+block+safe", 0),  # nothing to guard: the model's favourite
        ([3, 4, 3, 4, 3, 5], "win+block+safe", 3),  # seat 0 wins in column 3
        ([3, 4, 3, 4, 3, 5], "none", 0),  # unguarded, the model's favourite
        ([6, 3, 6, 3, 5, 3], "win+block", 3),  # seat 1 threatens column 3: block
        ([0, 0, 0, 0, 0, 0], "win+block+safe", 1),  # column 0 is full: next best, legal
        ([0, 0, 0, 0, 0, 0], "none", 1),
        ([0, 6, 1, 6, 2, 6], "win+block", 3),  # both threaten: winning beats blocking
    ],
)
def test_guards_then_the_models_ranking(history, guards, move):
    game = load_game("connect4")
    agent = SeqAgent(game, "seq", seed=0, predictor=Prefer(), guards=guards)
    assert agent.step(game.state_from_history(history)) == move


def test_safe_guard_steers_a_bike_away_from_the_wall():
    game = load_game("lazerbike")
    state = state_from_setup(game, [(0, 5, "E"), (10, 10, "W")])  # LEFT leaves the board
    agent = SeqAgent(game, "seq", seed=0, predictor=Prefer())
    assert agent.step(state, 0) == 1
    unguarded = SeqAgent(game, "seq", seed=0, predictor=Prefer(), guards="none")
    assert unguarded.step(state, 0) == 0


def test_onnx_copying_net_reproduces_the_copycat(tmp_path):
    """A linear net whose logits copy the opponent's last column: checks the qualitative input
    layout, the window, and the output's class order end to end."""
    game = load_game("connect4")
    weight = np.zeros((16, 8))
    for a in range(7):
        weight[8 + 1 + a, 1 + a] = 10.0  # seat 1's one-hot bit of action a -> class of a
    meta = artifact_metadata("connect4", "lstm", "qualitative", "sequence", player=0)
    path = linear_model(tmp_path / "copy.onnx", weight, np.zeros(8), 20, meta)
    agent = make(f"seq:model={path},guards=none", game, seed=3)
    assert agreement(agent, range(700, 706), game) > 0.8
    # the mse form: one number per step, the quantitative input's seat-1 action
    meta = artifact_metadata("connect4", "lstm", "quantitative", "sequence", player=0)
    path = linear_model(tmp_path / "mse.onnx", np.array([[0.0], [1.0]]), np.zeros(1), 20, meta)
    agent = make(f"seq:model={path},guards=none", game, seed=3)
    assert agent.step(game.state_from_history([3, 5])) == 5
    # past the window (more than 20 rounds) the latest rounds are kept
    assert agent.predictor.scores(np.array([[1, 1]] * 25 + [[1, 4]]), 0).argmax() == 4


def fixed_net(tmp_path, name: str, probabilities: dict[int, float], **extra) -> str:
    """A Connect 4 sequence net whose every step gives the same probability of each column."""
    bias = np.zeros(8)
    for column, p in probabilities.items():
        bias[1 + column] = p
    meta = artifact_metadata("connect4", "lstm", "qualitative", "sequence", player=0, **extra)
    return str(linear_model(tmp_path / name, np.zeros((16, 8)), bias, 20, meta))


def test_several_models_play_the_mean_of_their_probabilities(tmp_path):
    """Worked by hand: A puts 0.5 / 0.4 / 0.1 on columns 2 / 4 / 5, B 0.1 / 0.4 / 0.5. Each one
    alone plays its own favourite; their mean (0.3 / 0.4 / 0.3) plays column 4, which neither
    ranks first. A member whose scores are log-probabilities joins as probabilities."""
    game = load_game("connect4")
    a = fixed_net(tmp_path, "a.onnx", {2: 0.5, 4: 0.4, 5: 0.1})
    b = fixed_net(tmp_path, "b.onnx", {2: 0.1, 4: 0.4, 5: 0.5})
    state = game.state_from_history([3, 3])
    assert make(f"seq:model={a},guards=none", game, seed=0).step(state) == 2
    assert make(f"seq:model={b},guards=none", game, seed=0).step(state) == 5
    both = make(f"seq:model={a}+{b},guards=none", game, seed=0)
    assert isinstance(both.predictor, MeanPredictor) and both.step(state) == 4
    scores = both.predictor.scores(np.array([[3, 3]]), 0)
    assert np.allclose(scores[[2, 4, 5]], [0.3, 0.4, 0.3]) and np.allclose(scores[[0, 1]], 0)

    class LogColumnSix(Predictor):
        log_scores = True

        def scores(self, context, player):
            return np.log(np.where(np.arange(7) == 6, 0.9, 1e-9))

    mixed = MeanPredictor([both.predictor.members[0], LogColumnSix()])
    assert np.allclose(mixed.scores(np.array([[3, 3]]), 0)[[2, 6]], [0.25, 0.45])
    # a file whose own name holds a `+` is one model, not two
    plus = fixed_net(tmp_path, "c+d.onnx", {1: 1.0})
    assert make(f"seq:model={plus},guards=none", game, seed=0).step(state) == 1


def test_models_that_cannot_be_averaged_are_refused(tmp_path):
    game = load_game("connect4")
    a = fixed_net(tmp_path, "a.onnx", {2: 1.0})
    meta = artifact_metadata("connect4", "lstm", "quantitative", "sequence", player=0)
    mse = linear_model(tmp_path / "mse.onnx", np.array([[0.0], [1.0]]), np.zeros(1), 20, meta)
    with pytest.raises(AgentError, match="only models that give probabilities"):
        make(f"seq:model={a}+{mse}", game)
    plies = fixed_net(tmp_path, "p.onnx", {2: 1.0}, plies=1)
    with pytest.raises(AgentError, match="fold the history differently"):
        make(f"seq:model={a}+{plies}", game)
    with pytest.raises(AgentError, match="not found"):
        make(f"seq:model={a}+{tmp_path / 'none.onnx'}", game)
    bikes = fixed_net(tmp_path, "l.onnx", {2: 1.0})
    with pytest.raises(AgentError, match="trained for connect4"):
        make(f"seq:model={a}+{bikes}", load_game("lazerbike"))


def test_history_and_context_on_one_move_rounds():
    game = load_game("connect4")
    state = game.state_from_history([3, 4, 2])
    rounds = history_rounds(game, state, plies=True)
    assert rounds.tolist() == [[3, -1], [-1, 4], [2, -1]]
    assert history_rounds(game, state).tolist() == [[3, 4], [2, -1]]  # the study's folding
    # seat 1 to move: the folded context hides seat 0's latest move, one-move rounds keep it
    assert decision_context(history_rounds(game, state), 1, False, -1).tolist() == [[3, 4]]
    assert decision_context(rounds, 1, False, -1, plies=True).tolist() == rounds.tolist()


@pytest.mark.slow
def test_trained_lstm_on_one_move_rounds_answers_the_move_just_played(tmp_path):
    """Copycat in the second seat answers the column seat 0 has just played: a move the
    study's folding never shows seat 1 before it acts. An every-seat LSTM trained on one-move
    rounds (`gridbots encode --plies`) sees it and copies it as seat 1."""
    from models import lstm

    game = load_game("connect4")
    arrays = enc.qualitative(copycat_games(300, seat=1)[1], game, plies=True)
    meta = {"encoding": "qualitative", "game": "connect4", "options": {"plies": True}}
    params = {"player": -1, "outcomes": "all", "cells": 32, "dense_units": 32, "batch_size": 32,
              "learning_rate": 0.01, "epochs": 6}  # fmt: skip
    result = lstm.train(arrays, meta, params, tmp_path / "model")
    agent = make(f"seq:model={result.artifact},guards=none", game, seed=3)
    assert agent.predictor.plies
    assert agreement(agent, range(900, 906), game, seat=1) > 0.9


def test_never_an_illegal_move_in_either_game(tmp_path):
    game = load_game("connect4")
    arrays = enc.qualitative(copycat_games()[1], game)
    result = hmm.train(arrays, {"encoding": "qualitative", "game": "connect4"}, {}, tmp_path / "c")
    seats = [make(f"seq:model={result.artifact}", game, seed=1), make("random", game, seed=2)]
    for seed in range(4):  # play_game raises on an illegal move
        assert play_game(game, seats[:: 1 if seed % 2 else -1], seed=seed).is_terminal()
    bikes = load_game("lazerbike")
    arrays = enc.qualitative(bike_games(30)[1], bikes)
    meta = {"encoding": "qualitative", "game": "lazerbike"}
    result = hmm.train(arrays, meta, {"outcomes": "all"}, tmp_path / "l")
    seats = [make(f"seq:model={result.artifact}", bikes, seed=3), make("random", bikes, seed=4)]
    for seed in range(3):
        state = play_game(bikes, seats, seed=seed)
        assert state.is_terminal()


def test_bad_specs(tmp_path):
    game = load_game("connect4")
    with pytest.raises(AgentError, match="name the model file"):
        make("seq", game)
    with pytest.raises(AgentError, match="not found"):
        make(f"seq:model={tmp_path / 'none.json'}", game)
    with pytest.raises(AgentError, match="unknown guard"):
        SeqAgent(game, "seq", predictor=Prefer(), guards="luck")
    with pytest.raises(AgentError, match="unknown option"):
        SeqAgent(game, "seq", predictor=Prefer(), depth="3")
    other = tmp_path / "other.json"
    other.write_text('{"metadata": {"gridbots.family": "lstm"}}')
    with pytest.raises(AgentError, match="not an HMM"):
        make(f"seq:model={other}", game)
