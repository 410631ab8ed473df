"""Linear-chain CRFs (python-crfsuite) predicting the learning player's next action.

Two variants, as in the study (Part IV §3.3): CRF_1 (`variant=1`, the `quantitative`
encoding) reads every player's action of the observed round as a number, CRF_2 (`variant=2`,
`qualitative`) as one indicator per (player, action). The sequence framing is the agents'
(agents.sequence.agent): position k observes round k - 1 (position 0 a start feature), optionally
the `window` - 1 rounds before it too, and is labelled with the player's action in round k
("n" when it does not act); see TRAINING for why every prefix is a training sequence.
Feature names carry the seat, so one model holds every seat's weights; the label transitions
are shared.

Saved in CRFsuite's own format (`model.crfsuite`) with a JSON sidecar (`model.crfsuite.json`:
the artifact metadata, variant, window, seats); an agent can still play a model whose sidecar
was lost, reading the variant, window and seats from the model's feature names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from models.base import OUTCOMES, ModelError, TrainingResult, artifact_metadata, sequence_framing
from models.hmm import accuracy, prepare

ENCODINGS = ("quantitative", "qualitative")
VARIANTS = {1: "quantitative", 2: "qualitative"}
DEFAULTS: dict[str, Any] = {
    "variant": 0,  # 1 (CRF_1, quantitative) or 2 (CRF_2, qualitative); 0: from the encoding
    "window": 1,  # observed rounds per position (1: the round just before the label)
    "training": "prefixes",  # prefixes | positions | sequences (see TRAINING)
    "c1": 0.0,  # L1 regularisation
    "c2": 0.01,  # L2 regularisation
    "max_iterations": 200,  # L-BFGS iterations
    "player": -1,  # the learning seat; -1: every seat
    "outcomes": "wins",  # rows to learn from: wins (the study's), draws+wins, all
    "holdout": 0.2,
    "seed": 0,
}


#: what one training sequence is. A chain trained on whole games learns to lean on the
#: observations *after* a position (round k holds the player's own action k), which a game in
#: progress does not have: its predictions at the end of a prefix fall far behind (0.79 vs
#: 0.93 held-out accuracy on a copying bot). Training on every prefix puts each label at the
#: end of a sequence once, as in play, at O(rounds²) items per game; `positions` trains each
#: position alone (a max-ent classifier over the window, no transitions: fast, as accurate
#: with a window that holds what matters).
TRAINING = ("prefixes", "positions", "sequences")


def _variant(params: dict[str, Any], encoding: str | None) -> int:
    variant = int(params["variant"]) or {v: k for k, v in VARIANTS.items()}.get(encoding or "", 0)
    if variant not in VARIANTS:
        raise ModelError(f"crf: variant={params['variant']}; expected 1 or 2")
    if encoding in ENCODINGS and VARIANTS[variant] != encoding:
        raise ModelError(
            f"crf: variant {variant} (CRF_{variant}) trains on the {VARIANTS[variant]} "
            f"encoding, the dataset is {encoding}"
        )
    return variant


def _check(params: dict[str, Any]) -> None:
    if params["window"] < 1:
        raise ModelError(f"crf: window={params['window']} must be at least 1")
    if params["c1"] < 0 or params["c2"] < 0 or params["max_iterations"] < 1:
        raise ModelError("crf: c1, c2 >= 0 and max_iterations >= 1")
    if params["training"] not in TRAINING:
        raise ModelError(f"crf: training={params['training']!r}; known: {', '.join(TRAINING)}")
    if params["outcomes"] not in OUTCOMES:
        raise ModelError(f"crf: outcomes={params['outcomes']!r}; known: {', '.join(OUTCOMES)}")


def sequence_items(data, i: int, variant: int, window: int):
    """(features per position, labels) of row i in CRFsuite's terms."""
    from agents.sequence.crf import crf_features, crf_label

    neutral = data.game.neutral_action
    features = crf_features(data.observed[i], variant, window, int(data.seats[i]), neutral)
    return features, [crf_label(int(a), neutral) for a in data.labels[i]]


def fit(data, rows: np.ndarray, params: dict[str, Any], variant: int, path: Path, progress=None):
    """Trains on `rows` and writes the CRFsuite file at `path`; the loss per iteration."""
    import pycrfsuite

    losses: list[float] = []

    class Trainer(pycrfsuite.Trainer):
        """Reads the iteration log quietly (the base class prints it when verbose)."""

        def message(self, message: str) -> None:
            if self.logparser.feed(message) == "iteration":
                info = self.logparser.last_iteration
                losses.append(float(info.get("loss", np.nan)))
                if progress is not None:
                    progress(len(losses) - 1, {"loss": losses[-1]})

    trainer = Trainer(verbose=False)
    trainer.select("lbfgs", "crf1d")
    trainer.set_params(
        {
            "c1": float(params["c1"]),
            "c2": float(params["c2"]),
            "max_iterations": int(params["max_iterations"]),
            "feature.possible_transitions": True,
        }
    )
    for i in rows:
        features, labels = sequence_items(data, i, variant, int(params["window"]))
        if params["training"] == "sequences":
            trainer.append(features, labels)
        elif params["training"] == "prefixes":
            for k in range(1, len(labels) + 1):
                trainer.append(features[:k], labels[:k])
        else:
            for k in range(len(labels)):
                trainer.append(features[k : k + 1], labels[k : k + 1])
    path.parent.mkdir(parents=True, exist_ok=True)
    trainer.train(str(path))
    return losses


def predict_all(predictor: Any, data, rows: np.ndarray) -> list[np.ndarray]:
    """The action predicted at each position of each row from its prefix only, as in play."""
    out = []
    for i in rows:
        seat, observed = int(data.seats[i]), data.observed[i]
        picks = [
            int(np.argmax(predictor.scores(observed[:k], seat))) for k in range(len(data.labels[i]))
        ]
        out.append(np.asarray(picks, dtype=np.int64))
    return out


def train(
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    params: dict[str, Any],
    out_dir: str | Path,
    progress: Any = None,
) -> TrainingResult:
    """Trains on the training games, scores the held-out ones, writes model.crfsuite (+ .json)."""
    from agents.sequence.crf import CrfPredictor
    from agents.sequence.predictor import crf_sidecar
    from models.export import checked_params, split_by_game

    params = checked_params("crf", DEFAULTS, params)
    _check(params)
    variant = _variant(params, meta.get("encoding"))
    params["variant"] = variant
    data = prepare("crf", ENCODINGS, arrays, meta, params)
    g = data.game
    train_mask, test_mask = split_by_game(data.game_id, params["holdout"], params["seed"])
    train_rows, test_rows = np.flatnonzero(train_mask), np.flatnonzero(test_mask)
    path = Path(out_dir) / "model.crfsuite"
    losses = fit(data, train_rows, params, variant, path, progress)
    metadata = artifact_metadata(
        meta["game"], "crf", meta["encoding"], "sequence",
        variant=variant, window=params["window"], player=params["player"],
        outcomes=params["outcomes"], **sequence_framing(meta),
    )  # fmt: skip
    sidecar = {
        "format": "gridbots-crf",
        "version": 1,
        "metadata": metadata,
        "variant": variant,
        "window": int(params["window"]),
        "num_players": g.num_players,
        "num_actions": g.num_actions,
        "neutral": g.neutral_action,
        "seats": sorted({int(s) for s in data.seats[train_rows]}),
    }
    crf_sidecar(path).write_text(json.dumps(sidecar, indent=1))
    predictor = CrfPredictor(path, g)
    labels = [data.labels[i] for i in test_rows]
    metrics = {
        "held_out_accuracy": accuracy(
            predict_all(predictor, data, test_rows), labels, g.neutral_action
        ),
        "train_sequences": float(len(train_rows)),
        "held_out_sequences": float(len(test_rows)),
        "iterations": float(len(losses)),
    }
    if losses:
        metrics["final_loss"] = losses[-1]
    return TrainingResult(
        family="crf",
        game=meta["game"],
        encoding=meta["encoding"],
        params=params,
        artifact=path,
        artifact_kind="crfsuite",
        metrics=metrics,
        history={"loss": losses},
        extra_artifacts=[crf_sidecar(path)],
    )
