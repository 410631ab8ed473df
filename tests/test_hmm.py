"""HMM family: counted estimates on a hand-worked toy set, filtering against hmmlearn, the
sequence framing on a hand-made game, a copying bot reproduced from its own games, JSON round
trips and bad files. `copycat_arrays` is shared with test_crf and test_seq_agent."""

from __future__ import annotations

import functools
import json

import numpy as np
import pyarrow as pa
import pytest
from hmmlearn.hmm import CategoricalHMM

from agents import AgentError, make
from agents.base import Agent
from agents.sequence.hmm import HmmPredictor, forward_filter
from engine import load_game
from engine.match import play_game
from features import encode as enc
from features.generate.tables import GameTable
from features.schema import SEQUENCES
from models import hmm
from models.base import ModelError


class Copycat(Agent):
    """Deterministic: answers in the column the opponent just played, else the lowest legal
    column; opens in the middle. Its next move is a function of the round just played."""

    def step(self, state, player=None):
        legal = state.legal_actions()
        history = state.history()
        want = history[-1] if history else 3
        return want if want in legal else legal[0]


def copycat_moves(state) -> int:
    return Copycat(state.game, "copycat").step(state)


@functools.cache
def copycat_games(count: int = 160, seat: int = 0) -> tuple[pa.Table, pa.Table]:
    """(games, sequences) of Copycat (in `seat`) against seeded random play, as a dataset
    holds them."""
    game = load_game("connect4")
    table = GameTable(game, "imitation", 0)
    for i in range(count):
        seats = [Copycat(game, "copycat"), make("random", game, seed=i)][:: 1 - 2 * seat]
        state = play_game(game, seats, seed=i)
        table.add(state.history(), state.returns(), i, {}, [a.spec for a in seats])
    return table.tables()


def copycat_arrays(encoding: str, count: int = 160) -> tuple[dict, dict]:
    game = load_game("connect4")
    arrays = getattr(enc, encoding)(copycat_games(count)[1], game)
    return arrays, {"encoding": encoding, "game": game.spec()}


def agreement(agent, seeds, game, seat: int = 0) -> float:
    """Share of the agent's moves in `seat` (against random) that Copycat would have played."""
    same = total = 0
    for seed in seeds:
        state = game.new_initial_state(seed=seed)
        opponent = make("random", game, seed=seed)
        while not state.is_terminal():
            if state.current_player() == seat:
                move = agent.step(state)
                same += move == copycat_moves(state)
                total += 1
            else:
                move = opponent.step(state)
            state.apply_action(move)
    return same / total


def test_counts_with_smoothing_match_the_hand_worked_toy_set():
    observations = [np.array([0, 1, 1]), np.array([2, 1]), np.array([0])]
    states = [np.array([0, 0, 1]), np.array([1, 1]), np.array([0])]
    start, trans, emit = hmm.count_estimates(observations, states, 2, 3, alpha=1.0)
    # starts: state 0 twice, state 1 once -> (2+1)/(3+2), (1+1)/(3+2)
    assert start == pytest.approx([3 / 5, 2 / 5])
    # transitions: 0->0, 0->1 (first sequence), 1->1 (second)
    assert trans == pytest.approx(np.array([[2 / 4, 2 / 4], [1 / 3, 2 / 3]]))
    # state 0 emits 0, 1, 0; state 1 emits 1, 2, 1
    assert emit == pytest.approx(np.array([[3 / 6, 2 / 6, 1 / 6], [1 / 6, 3 / 6, 2 / 6]]))
    start, trans, emit = hmm.count_estimates(observations, states, 2, 3, alpha=0.5)
    assert start == pytest.approx([2.5 / 4, 1.5 / 4])
    assert emit[1] == pytest.approx([0.5 / 4.5, 2.5 / 4.5, 1.5 / 4.5])


def test_filtering_equals_hmmlearn_on_every_prefix():
    rng = np.random.default_rng(0)
    start = rng.dirichlet(np.ones(4))
    trans = rng.dirichlet(np.ones(4), size=4)
    emit = rng.dirichlet(np.ones(6), size=4)
    model = CategoricalHMM(n_components=4, n_features=6, init_params="")
    model.startprob_, model.transmat_, model.emissionprob_ = start, trans, emit
    obs = rng.integers(0, 6, size=9)
    ours = forward_filter(start, trans, emit, obs)
    for t in range(len(obs)):
        assert ours[t] == pytest.approx(model.predict_proba(obs[: t + 1, None])[-1], abs=1e-9)


def test_predictor_resumes_its_filter_and_agrees_with_hmmlearn(tmp_path, monkeypatch):
    """The seat's kept forward vector: a context that extends the last one costs only its new
    rounds, any other (a new game, a shorter prefix) starts afresh; every score is hmmlearn's
    posterior at the last position; an impossible sequence gives zeros."""
    import agents.sequence.hmm

    arrays, meta = copycat_arrays("qualitative")
    result = hmm.train(arrays, meta, {"player": 0, "outcomes": "all"}, tmp_path)
    predictor = hmm.load(result.artifact)["predictor"]
    model = predictor.models[0]
    filtered_lengths: list[int] = []
    real = agents.sequence.hmm.forward_filter

    def counting(start, trans, emit, obs, belief=None):
        filtered_lengths.append(len(obs))
        return real(start, trans, emit, obs, belief)

    monkeypatch.setattr(agents.sequence.hmm, "forward_filter", counting)
    rng = np.random.default_rng(3)
    rounds = rng.integers(-1, 7, size=(12, 2))
    contexts = [rounds[:k] for k in (0, 1, 2, 3, 6, 7, 2, 9, 12)]
    contexts.insert(5, rng.integers(-1, 7, size=(4, 2)))  # another game's context in between
    for context in contexts:
        expected = model.predict_proba(predictor.encode(context))[-1]
        ours = np.exp(predictor.scores(context, 0))
        assert ours == pytest.approx(expected[:7], abs=1e-9)
        assert np.array_equal(predictor._filters[0][0], predictor.encode(context)[:, 0])
    # symbols are context + 1 (the start): fresh 1, then +1, +1, +1, +3; the other game fresh
    # (5); back to this game fresh (8); a shorter prefix fresh (3); then +7 and +3
    assert filtered_lengths == [1, 1, 1, 1, 3, 5, 8, 3, 7, 3]
    zero = forward_filter(np.array([1.0, 0.0]), np.eye(2), np.array([[1.0, 0.0], [0.0, 1.0]]),
                          np.array([1]))  # fmt: skip
    assert np.array_equal(zero, [[0.0, 0.0]])


def test_framing_of_a_hand_made_connect4_game():
    game = load_game("connect4")
    # plies 3,3,4,4,5,5,6: seat 0 wins with four in the bottom row in round 3
    rows = [(0, p, 7, [3, -1, -1, 3, 4, -1, -1, 4, 5, -1, -1, 5, 6, -1], [1.0, -1.0][p])
            for p in (0, 1)]  # fmt: skip
    table = pa.Table.from_pylist(
        [dict(zip(("game_id", "player", "length", "actions", "outcome"), r, strict=True))
         | {"num_players": 2} for r in rows],
        schema=SEQUENCES,
    )  # fmt: skip
    arrays = enc.qualitative(table, game)
    meta = {"encoding": "qualitative", "game": "connect4"}
    data = hmm.prepare("hmm", ("qualitative",), arrays, meta, dict(hmm.DEFAULTS, outcomes="all"))
    # seat 0: after the start symbol it played 3, after [3,3] 4, after [4,4] 5, after [5,5] 6
    assert data.observed[0].tolist() == [[3, 3], [4, 4], [5, 5]]
    assert data.labels[0].tolist() == [3, 4, 5, 6]
    # seat 1 acts in the same rounds; it had no move left in round 3
    assert data.labels[1].tolist() == [3, 4, 5, -1]
    assert data.seats.tolist() == [0, 1]
    with pytest.raises(ModelError, match="only 1 sequence"):  # the default: winners only
        hmm.prepare("hmm", ("qualitative",), arrays, meta, hmm.DEFAULTS)


def test_reproduces_the_copying_bot_far_above_chance(tmp_path):
    arrays, meta = copycat_arrays("qualitative")
    result = hmm.train(arrays, meta, {"player": 0, "outcomes": "all"}, tmp_path)
    assert result.artifact_kind == "hmm-json" and result.artifact == tmp_path / "model.json"
    assert result.metrics["held_out_accuracy"] > 0.8  # chance: about 1/7
    game = load_game("connect4")
    agent = make(f"seq:model={result.artifact},guards=none", game, seed=1)
    assert agreement(agent, range(500, 510), game) > 0.8


def test_second_seat_copier_is_learned_from_one_move_rounds(tmp_path):
    """Copycat as seat 1 answers the move seat 0 has just played, which the study's folding
    shows only after seat 1 acts: on one-move rounds the HMM sees it, and says so in its
    metadata so that `seq:` folds histories the same way."""
    game = load_game("connect4")
    arrays = enc.qualitative(copycat_games(seat=1)[1], game, plies=True)
    meta = {"encoding": "qualitative", "game": "connect4", "options": {"plies": True}}
    result = hmm.train(arrays, meta, {"player": 1, "outcomes": "all"}, tmp_path)
    document = json.loads(result.artifact.read_text())
    assert document["metadata"]["gridbots.plies"] == "1"
    agent = make(f"seq:model={result.artifact},guards=none", game, seed=1)
    assert agent.predictor.plies
    assert agreement(agent, range(500, 506), game, seat=1) > 0.8


def test_json_round_trip_and_decoding(tmp_path):
    arrays, meta = copycat_arrays("qualitative")
    result = hmm.train(arrays, meta, {"player": 0, "outcomes": "all", "alpha": 0.5}, tmp_path)
    document = json.loads(result.artifact.read_text())
    assert document["metadata"]["gridbots.family"] == "hmm"
    assert document["metadata"]["gridbots.kind"] == "sequence"
    assert document["metadata"]["gridbots.game"] == "connect4"
    assert document["metadata"]["gridbots.plies"] == "0"  # the study's folding
    assert document["symbols"][:2] == ["<unknown>", "<start>"]
    loaded = hmm.load(result.artifact)
    predictor = loaded["predictor"]
    assert isinstance(predictor, HmmPredictor) and set(predictor.models) == {0}
    seat = document["seats"]["0"]
    model = predictor.models[0]
    assert model.transmat_ == pytest.approx(np.array(seat["transmat"]))
    # the opponent answered 5 to the opening 3: the copier's next move is 5
    context = np.array([[3, 5]])
    scores = predictor.scores(context, 0)
    assert int(np.argmax(scores)) == 5 == predictor.viterbi_next(context, 0)
    start, trans, emit = (np.array(seat[k]) for k in ("startprob", "transmat", "emissionprob"))
    expected = forward_filter(start, trans, emit, predictor.encode(context)[:, 0])[-1]
    assert np.exp(scores) == pytest.approx(expected[:7])


def test_bad_inputs(tmp_path):
    arrays, meta = copycat_arrays("quantitative", 20)
    with pytest.raises(ModelError, match="qualitative"):
        hmm.train(arrays, meta, {}, tmp_path)
    with pytest.raises(ModelError, match="unknown parameter"):
        hmm.train(arrays, dict(meta, encoding="qualitative"), {"smoothing": 1}, tmp_path)
    game = load_game("connect4")
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "gridbots-hmm", "metadata": {"gridbots.family": "hmm"')
    with pytest.raises(AgentError, match="cannot read"):
        make(f"seq:model={broken}", game)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "gridbots-hmm", "metadata": {
        "gridbots.family": "hmm", "gridbots.game": "connect4"}, "seats": {}}))  # fmt: skip
    with pytest.raises(AgentError, match="not a valid gridbots HMM"):
        make(f"seq:model={wrong}", game)
    with pytest.raises(ModelError, match="not a valid gridbots HMM"):
        hmm.load(wrong)
