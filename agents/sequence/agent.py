"""`seq:model=PATH`: next-action prediction from the whole history (LSTM, HMM or CRF).

The framing every sequence family shares (the study's, Part IV §1.1, plus a start symbol): a
history is folded into rounds exactly as `features.encode` folds a dataset's sequences (both use
agents.sequence.codec), and the model reads the rounds *before* the one in which the player
will act. Position k of a sequence observes round k - 1 (position 0 a begin-of-game symbol) and
is labelled with the player's action in round k. Training takes every position of a game;
playing predicts the label of the last one. In a turn-based game the player acts in the last
round when it has not acted in it yet (that round is then not observed: the folding puts the
player's action into it, so the opponent's latest move of the same round is the guards'
business, exactly as it is unseen in training); otherwise in a new round. A model trained on
one-move rounds (`gridbots encode --plies`, recorded as `gridbots.plies` in its metadata) sees
every move before its own: its history is folded the same way and the next move is always a new
round.

Agents never import TensorFlow: ONNX models run on onnxruntime, HMMs are JSON parameters
decoded by hmmlearn, CRFs are CRFsuite files tagged by pycrfsuite. The guards of `random`
(win, block, safe) narrow the legal moves first; the model's best-ranked survivor is played.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.analysis import Analysis
from agents.base import Agent, AgentError, builder, file_identity, loaded_once, model_file
from agents.guards import lap_filter, parse_guards, turn_filter
from agents.sequence.codec import (
    decode_one_hot_actions,
    one_hot_actions,
    rounds_from_steps,
    step_boards,
    step_history,
)
from agents.sequence.predictor import CRF_MAGIC, Predictor, crf_sidecar, read_json
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game, State
from engine.specialise import bind, current_player, generic, legal_actions

DEFAULT_GUARDS = "win+block+safe"


# ---- the shared framing -----------------------------------------------------------------------
def step_matrix(game: Game, state: State) -> np.ndarray:
    """The step-major [steps, num_players] actions of the history (neutral for players who did
    not act, chance steps left out): the `sequences.actions` layout of a dataset row."""
    return history_steps(game, state)[0]


def history_steps(game: Game, state: State) -> tuple[np.ndarray, np.ndarray]:
    """(step_matrix, the state after each of its steps) of a state's history."""
    initial = game.kernels.init(state.config)
    return step_history(game.kernels, initial, state.history(), game.num_players,
                        game.neutral_action)  # fmt: skip


def history_rounds(game: Game, state: State, plies: bool = False) -> np.ndarray:
    """[rounds, num_players] of the history, folded as the dataset encoders fold sequences
    (`plies`: one round per move, as `gridbots encode --plies`)."""
    return steps_to_rounds(game, step_matrix(game, state), plies)


def steps_to_rounds(game: Game, steps: np.ndarray, plies: bool) -> np.ndarray:
    """[rounds, num_players] of a step matrix, folded as `history_rounds` folds it."""
    offsets = np.array([0, steps.size], dtype=np.int64)
    fold = False if plies else None
    rounds, counts = rounds_from_steps(steps.ravel(), offsets, game, max(len(steps), 1), fold)
    return rounds[0, : int(counts[0])].astype(np.int64)


def decision_context(
    rounds: np.ndarray, player: int, simultaneous: bool, neutral: int, plies: bool = False
):
    """The rounds a model observes before `player`'s next action (see the module docstring);
    with `plies` every move is a round, so the next move is always a new one."""
    if not plies and not simultaneous and len(rounds) and rounds[-1, player] == neutral:
        return rounds[:-1]
    return rounds


def rounds_from_arrays(
    arrays: dict[str, np.ndarray], encoding: str, num_players: int, num_actions: int, neutral: int
) -> tuple[np.ndarray, np.ndarray]:
    """Encoded sequence arrays → ([n, T + 1, P] rounds, [n] rounds per row within the window)."""
    inputs, targets = arrays["inputs"], arrays["targets"]
    if encoding == "qualitative":
        inputs = decode_one_hot_actions(inputs, num_players, num_actions, neutral)
        targets = decode_one_hot_actions(targets, num_players, num_actions, neutral)
    full = np.concatenate([inputs[:, :1], targets], axis=1).astype(np.int64)
    counts = np.minimum(np.asarray(arrays["rounds"], dtype=np.int64), full.shape[1])
    return full, counts


def labelled_positions(rounds: np.ndarray, count: int, player: int):
    """(observed rounds [count - 1, P] after the start symbol, labels [count]) of one game."""
    return rounds[: max(count - 1, 0)], rounds[:count, player]


# ---- predictors -------------------------------------------------------------------------------
class OnnxSequencePredictor(Predictor):
    """An exported recurrent model (models.lstm): input [batch, T, features] of rounds
    (quantitative: one number per player; qualitative: one-hot blocks), output per step the
    learning seat's action in the next round: num_actions + 1 scores (class 0 the neutral
    value, a + 1 action a), such a block per seat (a model of every seat: the block of the
    seat asked for) or one number (an mse model: the action itself)."""

    def __init__(self, path: Path, game: Game, session: Any = None, meta: dict | None = None):
        from agents.onnx.runtime import open_session

        self.session, meta = (session, meta) if session is not None else open_session(path)
        self.game_spec = meta.get("gridbots.game", "")
        self.plies = meta.get("gridbots.plies") == "1"
        self.boards = meta.get("gridbots.boards") == "1"
        self.encoding = meta.get("gridbots.encoding", "qualitative")
        if self.encoding not in ("quantitative", "qualitative"):
            raise AgentError(f"seq: {path}: encoding {self.encoding!r} is not a sequence encoding")
        self.input = self.session.get_inputs()[0]
        self.output = self.session.get_outputs()[0].name
        self.game = game
        length = self.input.shape[1] if len(self.input.shape) == 3 else None
        # a fixed time axis is padded to; a free one (`lstm` exports since 2026-12-06) is fed
        # only the rounds played, up to the length the model was trained on
        self.padded = isinstance(length, int) and length > 0
        trained = str(meta.get("gridbots.length", ""))
        self.window = length if self.padded else int(trained) if trained.isdigit() else None
        self.probabilities = self.session.get_outputs()[0].shape[-1] != 1  # mse: the action

    def _encode(self, rounds: np.ndarray, boards: np.ndarray | None) -> np.ndarray:
        g = self.game
        if self.encoding == "qualitative":
            x = one_hot_actions(rounds, g.num_actions, g.neutral_action).astype(np.float32)
        else:
            x = rounds.astype(np.float32)
        if boards is None:
            return x
        return np.concatenate([x, boards.astype(np.float32)], axis=-1)

    def scores(
        self, context: np.ndarray, player: int, boards: np.ndarray | None = None
    ) -> np.ndarray:
        g = self.game
        if len(context) == 0:  # trained on inputs from round 0 on: no opinion on round 0
            return np.zeros(g.num_actions)
        if self.boards and (boards is None or len(boards) != len(context)):
            raise AgentError("seq: this model reads the board after every round; none given")
        if self.window and len(context) > self.window:
            context = context[-self.window :]
            boards = boards[-self.window :] if boards is not None else None
        last = len(context) - 1
        size = self.window if self.padded else len(context)
        padded = np.full((size, g.num_players), g.neutral_action, dtype=np.int64)
        padded[: len(context)] = context
        board_rows = None
        if self.boards:
            board_rows = np.zeros((size, boards.shape[1]), dtype=np.int8)
            board_rows[: len(boards)] = boards
        try:
            x = self._encode(padded, board_rows)[None]
            out = self.session.run([self.output], {self.input.name: x})[0]
            step = np.asarray(out, dtype=np.float64).reshape(size, -1)[last]
        except Exception as problem:  # onnxruntime raises its own exception types
            raise AgentError(f"seq: the ONNX sequence model does not run: {problem}") from None
        classes = g.num_actions + 1
        if step.size == g.num_players * classes and g.num_players > 1:  # a block per seat
            step = step[player * classes : (player + 1) * classes]
        if step.size == classes:
            return neutral_scores(step, g.neutral_action)
        if step.size == 1:
            return -np.abs(step[0] - np.arange(g.num_actions))
        raise AgentError(f"seq: the ONNX model gives {step.size} values per step, expected "
                         f"{classes} (scores), {classes} per seat or 1 (an action)")  # fmt: skip


def neutral_scores(step: np.ndarray, neutral: int) -> np.ndarray:
    """Per-action scores from [neutral class, action 0..A-1] scores. Where the neutral value is
    itself an action (Sokoban's `stay`: a player who waits for a team-mate) the encoding folds
    it into class 0, so class 0 is its score; elsewhere (-1, -2) class 0 means "no action"."""
    scores = np.array(step[1:], dtype=np.float64)
    if 0 <= neutral < len(scores):
        scores[neutral] = step[0]
    return scores


class MeanPredictor(Predictor):
    """`model=A+B+…`: the mean of several models' probabilities of each action. Models trained
    alike but from different seeds err in different places, so their mean ranks the moves
    better than any one of them (measured on Lazerbike: reports/sequence-models.md)."""

    def __init__(self, members: list[Predictor]):
        if len({member.plies for member in members}) > 1:
            raise AgentError("seq: the averaged models fold the history differently (--plies)")
        for member in members:
            if not member.probabilities:
                raise AgentError("seq: only models that give probabilities can be averaged "
                                 "(an mse LSTM gives the action itself)")  # fmt: skip
        self.members, self.plies = members, members[0].plies
        self.boards = any(member.boards for member in members)
        self.game_spec = members[0].game_spec

    def scores(
        self, context: np.ndarray, player: int, boards: np.ndarray | None = None
    ) -> np.ndarray:
        total = 0.0
        for member in self.members:
            if member.boards:
                raw = member.scores(context, player, boards=boards)
            else:
                raw = member.scores(context, player)
            raw = np.asarray(raw, dtype=np.float64)
            total = total + (np.exp(raw) if member.log_scores else raw)
        return total / len(self.members)


def load_predictor(path: str | Path, game: Game) -> Predictor:
    """The predictor of a model file, its kind told by the file's content; read once per thread
    (its state is per seat and checked on use, so games may share it)."""
    path = model_file(path, "seq")
    key = (*file_identity(path, crf_sidecar(path)), game.spec())
    return loaded_once("predictor", key, lambda: _read_predictor(path, game))


def _read_predictor(path: Path, game: Game) -> Predictor:
    head = path.read_bytes()[:16]
    if head.startswith(CRF_MAGIC):
        from agents.sequence.crf import CrfPredictor

        predictor: Predictor = CrfPredictor(path, game)
    elif head.lstrip()[:1] == b"{":
        data = read_json(path, "model")
        family = data.get("metadata", {}).get("gridbots.family") if isinstance(data, dict) else 0
        if family != "hmm":
            raise AgentError(f"seq: {path} is a JSON file but not an HMM model")
        from agents.sequence.hmm import HmmPredictor

        predictor = HmmPredictor(path, data)
    else:
        predictor = OnnxSequencePredictor(path, game)
    if predictor.game_spec and predictor.game_spec != game.spec():
        raise AgentError(f"seq: {path} was trained for {predictor.game_spec}, not {game.spec()}")
    return predictor


def models_predictor(paths: str, game: Game) -> Predictor:
    """One model file, or the mean of several joined by `+` (a file whose own name holds a `+`
    is taken whole)."""
    if "+" not in paths or Path(paths).is_file():
        return load_predictor(paths, game)
    return MeanPredictor([load_predictor(path, game) for path in paths.split("+")])


# ---- the agent --------------------------------------------------------------------------------
@generic
def guarded_moves(s, player, flags, teams, num_players, neutral, lists, states, legal, counts,
                  joint, out):  # fmt: skip
    """The moves the guards keep for `player` (the mover unless simultaneous), in lists[1]."""
    moves, keep = lists[0], lists[1]
    mover = current_player(s)
    if mover == SIMULTANEOUS:
        n = legal_actions(s, player, moves)
        if n == 0 or flags == 0:
            keep[:n] = moves[:n]
            return n
        return lap_filter(s, player, flags, teams, num_players, neutral, moves, n, keep,
                          states[0], lists[2], legal, counts, joint, out)  # fmt: skip
    n = legal_actions(s, mover, moves)
    if n == 0 or flags == 0:
        keep[:n] = moves[:n]
        return n
    return turn_filter(s, mover, flags, teams, num_players, moves, n, keep, states[0], states[1],
                       lists[2], out)  # fmt: skip


@builder("seq")
class SeqAgent(Agent):
    """Guards first, then the model's best-ranked surviving move (ties broken at random)."""

    def __init__(
        self,
        game: Game,
        spec: str,
        seed: int | None = None,
        predictor: Predictor | None = None,
        **options: str,
    ):
        super().__init__(game, spec, seed)
        path = options.pop("model", None) or options.pop("variant", None)
        guards = options.pop("guards", DEFAULT_GUARDS)
        if options:
            raise AgentError(f"seq: unknown option(s) {sorted(options)}; known: model, guards")
        if predictor is None and not path:
            raise AgentError("seq: name the model file: seq:model=PATH")
        self.flags = parse_guards("" if guards == "none" else guards)
        self.predictor = predictor or models_predictor(str(path), game)
        self.teams = np.asarray(game.teams, dtype=np.int64)
        self._guarded = bind(guarded_moves, game.kernels.search())
        width, n = max(game.num_actions, 64), game.num_players
        self._lists = np.empty((3, width), dtype=np.int64)
        self._buffers = (
            np.empty((n, width), dtype=np.int64),
            np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64),
            np.zeros(n, dtype=np.float64),
        )

    def candidates(self, state: State, player: int) -> np.ndarray:
        """The legal moves the guards keep (all legal moves when a guard would keep none)."""
        s = state.array
        states = np.empty((2, s.shape[0]), dtype=np.int64)
        g = self.game
        args = (self.flags, self.teams, g.num_players, g.neutral_action)
        m = self._guarded(s, player, *args, self._lists, states, *self._buffers)
        return self._lists[1, :m].copy()

    def step(self, state: State, player: int | None = None) -> int:
        mover = state.current_player()
        if mover in (CHANCE, TERMINAL):
            return state.random_action(self.rng, player)
        player = mover if player is None else int(player)
        moves = self.candidates(state, player)
        if len(moves) == 0:
            return self.game.neutral_action
        if len(moves) == 1:
            return int(moves[0])
        scores = self.scores(state, player, moves)
        best = np.flatnonzero(scores == scores.max())
        return int(moves[best[int(self.rng.integers(len(best)))]])

    def scores(self, state: State, player: int, moves: np.ndarray) -> np.ndarray:
        """The model's score of each of `moves` (NaN read as -inf)."""
        plies, g = self.predictor.plies, self.game
        steps, after = history_steps(g, state)  # the history replayed once
        rounds = steps_to_rounds(g, steps, plies)
        context = decision_context(rounds, player, g.simultaneous, g.neutral_action, plies)
        if self.predictor.boards:  # one round per step (plies or laps): step k's board
            boards = step_boards(g, after)[: len(context)]
            raw = self.predictor.scores(context, player, boards=boards)
        else:
            raw = self.predictor.scores(context, player)
        scores = np.asarray(raw, dtype=np.float64)[moves]
        return np.nan_to_num(scores, nan=-np.inf)

    def analyse(self, state: State) -> Analysis:
        """The choice, and the model's weights of the moves the guards keep: its probabilities
        renormalised over them (log-probabilities exponentiated first), or a softmax of
        scores that are not probabilities (an mse model's closeness)."""
        found = super().analyse(state)
        player = state.current_player()
        moves = self.candidates(state, player)
        scores = self.scores(state, player, moves)
        finite = np.isfinite(scores)
        if finite.any():
            if self.predictor.log_scores or (scores[finite] < 0).any():
                weights = np.where(finite, np.exp(scores - scores[finite].max()), 0.0)
            else:
                weights = np.where(finite, scores, 0.0)
            if weights.sum() > 0:
                shares = weights / weights.sum()
                found.policy = {int(a): float(v) for a, v in zip(moves, shares, strict=True)}
        found.extra["guarded_moves"] = len(moves)
        return found
