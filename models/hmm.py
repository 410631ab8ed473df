"""Supervised HMM: counted start, transition and emission probabilities, decoded by hmmlearn.

The framing is the sequence agents' (agents.sequence.agent): position k of a game observes round
k - 1 (position 0 a start symbol) and its hidden state is the learning player's action in
round k (or "none" when it does not act). So the hidden states are the player's actions, as in
the study (Part IV §3.3: an HMM on one-hot rounds), but each one is the action *following* its
observation: the state of the last position of a history is the action to predict, and no extra
step through the transition matrix is needed. Its ranking is the filtered posterior of that
state (forward-backward's posterior at the prefix's end, whose backward message is uniform: the
normalised forward vector, which the agent carries from move to move); the Viterbi path's last
state is the same choice almost always and is offered too.

Observations are discrete symbols, one per distinct round of the training set (a round is
the tuple of every player's action, read from the qualitative one-hot encoding), plus a start
symbol and an "unknown round" symbol that only smoothing gives mass. Parameters are counts with
additive smoothing `alpha`:
  start[s]     = (#sequences starting in s + alpha) / (#sequences + alpha * S)
  trans[s, t]  = (#s followed by t + alpha) / (#s followed by anything + alpha * S)
  emit[s, o]   = (#s observing o + alpha) / (#s + alpha * V)
One parameter set per learning seat (a seat's habits are its own), saved as JSON with the
artifact metadata and the symbol table: never a pickle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.sequence.hmm import forward_filter
from models.base import OUTCOMES, ModelError, TrainingResult, artifact_metadata, sequence_framing

ENCODINGS = ("qualitative",)
DEFAULTS: dict[str, Any] = {
    "alpha": 1.0,  # additive smoothing of every count
    "player": -1,  # the learning seat; -1: every seat (one parameter set each)
    "outcomes": "wins",  # rows to learn from: wins (the study's), draws+wins, all
    "holdout": 0.2,  # share of games held out for the accuracy
    "seed": 0,
}
UNKNOWN, START = 0, 1


# ---- the data, shared with models.crf ------------------------------------------------------------
@dataclass
class Sequences:
    """Labelled games of the selected rows: per row its seat, observed rounds and labels."""

    game: Any
    seats: np.ndarray  # [n] learning seat of each row
    game_id: np.ndarray  # [n]
    observed: list[np.ndarray]  # [k - 1, P] rounds after the start symbol
    labels: list[np.ndarray]  # [k] the seat's action per position (neutral: none)


def prepare(
    family: str, encodings: tuple[str, ...], arrays: dict[str, np.ndarray], meta: dict[str, Any],
    params: dict[str, Any],
) -> Sequences:  # fmt: skip
    """The labelled sequences of the rows `params` selects (player, outcomes)."""
    from agents.sequence.agent import labelled_positions, rounds_from_arrays
    from engine import parse_game_spec

    encoding = meta.get("encoding")
    if encoding not in encodings:
        raise ModelError(
            f"{family} trains on {' or '.join(encodings)} sequences, not {encoding!r} "
            f"(gridbots encode DIR --encoding {encodings[0]})"
        )
    if sequence_framing(meta)["boards"]:
        raise ModelError(f"{family} reads the moves alone: encode the dataset without --boards")
    game = parse_game_spec(meta["game"])
    if params["outcomes"] not in OUTCOMES:
        raise ModelError(f"{family}: outcomes={params['outcomes']!r}; known: {', '.join(OUTCOMES)}")
    player = int(params["player"])
    if not -1 <= player < game.num_players:
        raise ModelError(f"{family}: player={player}: seats 0..{game.num_players - 1}, or -1: all")
    rounds, counts = rounds_from_arrays(
        arrays, encoding, game.num_players, game.num_actions, game.neutral_action
    )
    rows = np.asarray(arrays["outcome"]) > OUTCOMES[params["outcomes"]]
    if player >= 0:
        rows &= np.asarray(arrays["player"]) == player
    rows &= counts > 0
    index = np.flatnonzero(rows)
    if len(index) < 2:
        raise ModelError(f"{family}: only {len(index)} sequence(s) match player and outcomes")
    seats = np.asarray(arrays["player"], dtype=np.int64)[index]
    observed, labels = [], []
    for row, seat in zip(index, seats, strict=True):
        seen, label = labelled_positions(rounds[row], int(counts[row]), int(seat))
        observed.append(seen)
        labels.append(label)
    return Sequences(game, seats, np.asarray(arrays["game_id"])[index], observed, labels)


def state_codes(labels: np.ndarray, neutral: int, num_actions: int) -> np.ndarray:
    """Actions → hidden states: action a is state a, "none" (neutral) is state num_actions."""
    labels = np.asarray(labels, dtype=np.int64)
    return np.where(labels == neutral, num_actions, labels)


def accuracy(predicted: list[np.ndarray], labels: list[np.ndarray], neutral: int) -> float:
    """Share of the real actions (not "none") predicted."""
    if not labels:
        return 0.0
    p, y = np.concatenate(predicted), np.concatenate(labels)
    counted = y != neutral
    return float((p[counted] == y[counted]).mean()) if counted.any() else 0.0


# ---- estimation and filtering -------------------------------------------------------------------
def count_estimates(
    observations: list[np.ndarray], states: list[np.ndarray], n_states: int, n_symbols: int,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(start [S], transitions [S, S], emissions [S, V]) from labelled symbol sequences."""
    start = np.zeros(n_states)
    trans = np.zeros((n_states, n_states))
    emit = np.zeros((n_states, n_symbols))
    for obs, z in zip(observations, states, strict=True):
        if len(z) == 0:
            continue
        start[z[0]] += 1
        np.add.at(trans, (z[:-1], z[1:]), 1)
        np.add.at(emit, (z, obs), 1)
    start = (start + alpha) / (start.sum() + alpha * n_states)
    trans = (trans + alpha) / (trans.sum(axis=1, keepdims=True) + alpha * n_states)
    emit = (emit + alpha) / (emit.sum(axis=1, keepdims=True) + alpha * n_symbols)
    return start, trans, emit


def symbol_table(observed: list[np.ndarray]) -> dict[tuple[int, ...], int]:
    """Every distinct observed round → its symbol (2, 3, …; 0 unknown, 1 start)."""
    seen = {tuple(int(a) for a in r) for rounds in observed for r in rounds}
    return {r: i + 2 for i, r in enumerate(sorted(seen))}


def encode(observed: np.ndarray, table: dict[tuple[int, ...], int]) -> np.ndarray:
    return np.asarray(
        [START] + [table.get(tuple(int(a) for a in r), UNKNOWN) for r in observed], np.int64
    )


# ---- training -----------------------------------------------------------------------------------
def fit(data: Sequences, rows: np.ndarray, alpha: float) -> dict[str, Any]:
    """The JSON body (symbols, per-seat parameters) estimated from `data`'s rows `rows`."""
    g = data.game
    table = symbol_table([data.observed[i] for i in rows])
    n_states, n_symbols = g.num_actions + 1, len(table) + 2
    seats = {}
    for seat in sorted({int(data.seats[i]) for i in rows}):
        mine = [i for i in rows if data.seats[i] == seat]
        obs = [encode(data.observed[i], table) for i in mine]
        z = [state_codes(data.labels[i], g.neutral_action, g.num_actions) for i in mine]
        start, trans, emit = count_estimates(obs, z, n_states, n_symbols, alpha)
        seats[str(seat)] = {
            "startprob": start.tolist(),
            "transmat": trans.tolist(),
            "emissionprob": emit.tolist(),
        }
    symbols: list[Any] = ["<unknown>", "<start>"] + [list(r) for r in table]
    return {
        "num_players": g.num_players,
        "num_actions": g.num_actions,
        "neutral": g.neutral_action,
        "states": [*range(g.num_actions), "none"],
        "symbols": symbols,
        "seats": seats,
    }


def predict_all(body: dict[str, Any], data: Sequences, rows: np.ndarray) -> list[np.ndarray]:
    """The predicted action at every position of `rows` (argmax of the filtered posterior)."""
    table = {tuple(r): i for i, r in enumerate(body["symbols"]) if isinstance(r, list)}
    first = next(iter(body["seats"].values()))
    out = []
    for i in rows:
        params = body["seats"].get(str(int(data.seats[i])), first)
        start, trans, emit = (
            np.asarray(params[k]) for k in ("startprob", "transmat", "emissionprob")
        )
        post = forward_filter(start, trans, emit, encode(data.observed[i], table))
        out.append(post[:, : body["num_actions"]].argmax(axis=1))
    return out


def save(body: dict[str, Any], metadata: dict[str, str], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": "gridbots-hmm", "version": 1, "metadata": metadata, **body}
    path.write_text(json.dumps(document, indent=1))
    return path


def load(path: str | Path) -> dict[str, Any]:
    """The JSON document of a saved HMM, checked by building its predictor (ModelError)."""
    from agents.base import AgentError
    from agents.sequence.hmm import HmmPredictor

    try:
        predictor = HmmPredictor(Path(path))
    except AgentError as problem:
        raise ModelError(str(problem).replace("seq: ", "hmm: ", 1)) from None
    return {"predictor": predictor, **json.loads(Path(path).read_text())}


def train(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    params: dict[str, Any],
    out_dir: str | Path,
    progress: Any = None,
) -> TrainingResult:
    """Counts on the training games, accuracy on the held-out ones, model.json in out_dir."""
    from models.export import checked_params, split_by_game

    params = checked_params("hmm", DEFAULTS, params)
    if params["alpha"] <= 0:
        raise ModelError(f"hmm: alpha={params['alpha']} must be positive (smoothing)")
    data = prepare("hmm", ENCODINGS, arrays, meta, params)
    g = data.game
    train_mask, test_mask = split_by_game(data.game_id, params["holdout"], params["seed"])
    train_rows, test_rows = np.flatnonzero(train_mask), np.flatnonzero(test_mask)
    body = fit(data, train_rows, params["alpha"])

    def score(rows: np.ndarray) -> float:
        labels = [data.labels[i] for i in rows]
        return accuracy(predict_all(body, data, rows), labels, g.neutral_action)

    metrics = {
        "train_accuracy": score(train_rows),
        "held_out_accuracy": score(test_rows),
        "symbols": float(len(body["symbols"])),
        "train_sequences": float(len(train_rows)),
        "held_out_sequences": float(len(test_rows)),
    }
    if progress is not None:
        progress(0, dict(metrics))
    metadata = artifact_metadata(
        meta["game"], "hmm", meta["encoding"], "sequence",
        player=params["player"], alpha=params["alpha"], outcomes=params["outcomes"],
        **sequence_framing(meta),
    )  # fmt: skip
    path = save(body, metadata, Path(out_dir) / "model.json")
    return TrainingResult(
        family="hmm",
        game=meta["game"],
        encoding=meta["encoding"],
        params=params,
        artifact=path,
        artifact_kind="hmm-json",
        metrics=metrics,
    )
