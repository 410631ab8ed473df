"""What every sequence model's predictor answers for `seq:` (the LSTM's ONNX one in
agents.sequence.agent, the CRF's and the HMM's beside it), and the file conventions they share:
the CRFsuite magic and its JSON sidecar, JSON parameters read with one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import AgentError

CRF_MAGIC = b"lCRF"
BOS = "^"  # the begin-of-game symbol / feature name


class Predictor:
    """Scores of every action (higher is better) for `player` after the context rounds; one
    that reads `boards` also takes `boards=` [rounds, bits], the board after each round."""

    game_spec = ""
    log_scores = False  # the scores are log-probabilities
    probabilities = True  # the scores (exponentiated when log) are probabilities
    plies = False  # trained on one round per move (`gridbots encode --plies`)
    boards = False  # reads the board after each round beside it (`gridbots encode --boards`)

    def scores(self, context: np.ndarray, player: int) -> np.ndarray:
        raise NotImplementedError


def read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as problem:
        raise AgentError(f"seq: cannot read {what} {path}: {problem}") from None
    if not isinstance(data, dict):
        raise AgentError(f"seq: {path} is not a {what} (no JSON object)")
    return data


def crf_sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")
