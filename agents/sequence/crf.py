"""The CRF family's predictor for `seq:`: a CRFsuite linear chain tagged by pycrfsuite, its
layout checked before CRFsuite reads it. Imported by agents.sequence.agent, which loads it by the
file's content."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import AgentError
from agents.sequence.predictor import BOS, CRF_MAGIC, Predictor, crf_sidecar, read_json
from engine.protocol import Game


def crf_features(
    context: np.ndarray, variant: int, window: int, seat: int, neutral: int
) -> list[dict[str, float]]:
    """Per position the features of the observed rounds (the start symbol first), prefixed by
    the seat so one CRF holds every seat's weights: variant 1 the actions as numbers, variant 2
    one indicator per (player, action)."""
    positions: list[dict[str, float]] = []
    for k in range(len(context) + 1):
        features = {f"s{seat}|bias": 1.0}
        for back in range(window):
            j = k - 1 - back  # the round observed `back` positions earlier
            if j < -1:
                break
            tag = f"s{seat}|{back}"
            if j == -1:
                features[f"{tag}:{BOS}"] = 1.0
                continue
            for q, a in enumerate(context[j]):
                if variant == 1:
                    features[f"{tag}:p{q}"] = float(a)
                    if a == neutral:
                        features[f"{tag}:p{q}=n"] = 1.0
                else:
                    features[f"{tag}:p{q}={'n' if a == neutral else int(a)}"] = 1.0
        positions.append(features)
    return positions


def crf_label(action: int, neutral: int) -> str:
    return "n" if action == neutral else str(int(action))


CRF_CHUNKS = (b"FEAT", b"CQDB", b"CQDB", b"LFRF", b"AFRF")


def crfsuite_problem(data: bytes) -> str | None:
    """What is wrong with a CRFsuite model file's layout, or None. CRFsuite trusts its input
    (a damaged file crashes the process), so the header and chunk table are checked first:
    magic, total size, model type, and each chunk's tag and extent."""
    import struct

    if len(data) < 48 or data[:4] != CRF_MAGIC:
        return "no CRFsuite header"
    size, kind = struct.unpack_from("<I4s", data, 4)
    if size != len(data) or kind != b"FOMC":
        return f"header says {size} bytes of type {kind!r}, the file has {len(data)}"
    for tag, offset in zip(CRF_CHUNKS, struct.unpack_from("<5I", data, 28), strict=True):
        if offset + 8 > len(data) or data[offset : offset + 4] != tag:
            return f"chunk {tag.decode()} missing at offset {offset}"
        (length,) = struct.unpack_from("<I", data, offset + 4)
        if offset + length > len(data):
            return f"chunk {tag.decode()} runs past the end of the file"
    return None


class CrfPredictor(Predictor):
    """A CRFsuite linear chain; the ranking is the marginal of each label at the last position.

    The sidecar JSON gives the game, variant, window and seats; without one (a registry that
    kept only the model file) they are read from the model's feature names."""

    log_scores = True

    def __init__(self, path: Path, game: Game):
        import pycrfsuite

        problem = crfsuite_problem(path.read_bytes())
        if problem:
            raise AgentError(f"seq: {path} is not a CRFsuite model: {problem}")
        self.tagger = pycrfsuite.Tagger()
        try:
            self.tagger.open(str(path))
        except (OSError, ValueError) as problem:
            raise AgentError(f"seq: {path} is not a CRFsuite model: {problem}") from None
        self.labels = set(self.tagger.labels())
        self.num_actions, self.neutral = game.num_actions, game.neutral_action
        side_path = crf_sidecar(path)
        if side_path.is_file():
            side = read_json(side_path, "CRF sidecar")
            try:
                self.game_spec = side["metadata"]["gridbots.game"]
                self.plies = side["metadata"].get("gridbots.plies") == "1"
                self.variant, self.window = int(side["variant"]), int(side["window"])
                self.seats = [int(seat) for seat in side["seats"]]
            except (KeyError, TypeError, ValueError) as problem:
                raise AgentError(f"seq: {side_path} is not a CRF sidecar: {problem}") from None
        else:
            self.variant, self.window, self.seats = self._read_features()
        if self.variant not in (1, 2) or self.window < 1 or not self.seats:
            raise AgentError(f"seq: {path}: unusable CRF settings (variant, window, seats)")

    def _read_features(self) -> tuple[int, int, list[int]]:
        """(variant, window, seats) from attribute names like `s0|1:p1=3` or `s0|0:p1`."""
        names = list(self.tagger.info().attributes)
        seats = sorted({int(n[1 : n.index("|")]) for n in names if n[:1] == "s" and "|" in n})
        backs = [int(n.split("|", 1)[1].split(":", 1)[0]) for n in names if ":" in n]
        numeric = any(n.rsplit("=", 1)[-1].lstrip("-").isdigit() for n in names if "=" in n)
        return (2 if numeric else 1), max(backs, default=0) + 1, seats

    def scores(self, context: np.ndarray, player: int) -> np.ndarray:
        seat = player if player in self.seats else self.seats[0]
        features = crf_features(context, self.variant, self.window, seat, self.neutral)
        self.tagger.set(features)
        last = len(features) - 1
        out = np.full(self.num_actions, -np.inf)
        for a in range(self.num_actions):
            label = crf_label(a, self.neutral)
            if label in self.labels:
                out[a] = np.log(self.tagger.marginal(label, last) + 1e-300)
        return out
