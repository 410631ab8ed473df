"""The HMM family's predictor for `seq:`: a per-seat CategoricalHMM (JSON parameters, never a
pickle) whose forward filter runs on as the game goes on. Imported by agents.sequence.agent, which
loads it by the file's content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.base import AgentError
from agents.sequence.predictor import Predictor, read_json


def forward_filter(
    start: np.ndarray,
    trans: np.ndarray,
    emit: np.ndarray,
    obs: np.ndarray,
    belief: np.ndarray | None = None,
) -> np.ndarray:
    """P(state_t | obs_0..t) for every t [T, S]: the forward pass normalised at each step, from
    `start` or continuing a previous step's `belief`. The same numbers as hmmlearn's
    predict_proba on each prefix (at a sequence's last position forward-backward's posterior is
    the normalised forward vector), without T calls; an impossible sequence gives zeros where
    hmmlearn gives NaN, and both rank every action alike."""
    out = np.empty((len(obs), len(start)))
    for t, symbol in enumerate(obs):
        prior = start if belief is None else belief @ trans
        belief = prior * emit[:, symbol]
        total = belief.sum()
        belief = out[t] = belief / total if total > 0 else belief
    return out


class HmmPredictor(Predictor):
    """A per-seat CategoricalHMM whose hidden state is the player's next action; the ranking is
    the filtered posterior of the last state. The forward filter keeps its vector per seat: a
    game's next decision extends the last context, so only the new rounds cost work (hmmlearn's
    predict_proba over the whole prefix at every move made a 10,000-game match take minutes)."""

    def __init__(self, path: Path, data: dict[str, Any] | None = None):
        from hmmlearn.hmm import CategoricalHMM

        data = read_json(path, "HMM model") if data is None else data
        try:
            if data.get("format") != "gridbots-hmm":
                raise ValueError("format is not gridbots-hmm")
            self.game_spec = data["metadata"]["gridbots.game"]
            self.plies = data["metadata"].get("gridbots.plies") == "1"
            self.num_actions = int(data["num_actions"])
            self.symbols = {  # entries 0 and 1 name the unknown and start symbols
                tuple(int(a) for a in r): i
                for i, r in enumerate(data["symbols"])
                if isinstance(r, list)
            }
            n_symbols = len(data["symbols"])
            self.models = {}
            for seat, params in data["seats"].items():
                start = np.asarray(params["startprob"], dtype=np.float64)
                trans = np.asarray(params["transmat"], dtype=np.float64)
                emit = np.asarray(params["emissionprob"], dtype=np.float64)
                n = len(start)
                if trans.shape != (n, n) or emit.shape != (n, n_symbols) or n <= self.num_actions:
                    raise ValueError(f"seat {seat}: parameter shapes do not agree")
                model = CategoricalHMM(n_components=n, n_features=n_symbols, init_params="")
                model.startprob_, model.transmat_, model.emissionprob_ = start, trans, emit
                model._check()
                self.models[int(seat)] = model
            if not self.models:
                raise ValueError("no seat parameters")
            self._filters: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        except (KeyError, TypeError, ValueError, AttributeError) as problem:
            raise AgentError(f"seq: {path} is not a valid gridbots HMM: {problem}") from None

    def encode(self, context: np.ndarray) -> np.ndarray:
        """Symbols of [start, rounds...]: 1 = start, 0 = a round never seen in training."""
        codes = [1] + [self.symbols.get(tuple(int(a) for a in r), 0) for r in context]
        return np.asarray(codes, dtype=np.int64)[:, None]

    def model(self, player: int):
        return self.models.get(player, next(iter(self.models.values())))

    log_scores = True

    def scores(self, context: np.ndarray, player: int) -> np.ndarray:
        posterior = self.filtered(self.encode(context)[:, 0], player)
        return np.log(posterior[: self.num_actions] + 1e-300)

    def filtered(self, symbols: np.ndarray, player: int) -> np.ndarray:
        """P(last hidden state | symbols), resumed from the seat's previous call when `symbols`
        extends it."""
        model = self.model(player)
        done, belief = self._filters.get(player, (symbols[:0], None))
        if (
            belief is None
            or len(done) > len(symbols)
            or not np.array_equal(symbols[: len(done)], done)
        ):
            done, belief = symbols[:0], None
        params = (model.startprob_, model.transmat_, model.emissionprob_)
        if len(symbols) > len(done):
            belief = forward_filter(*params, symbols[len(done) :], belief)[-1]
        self._filters[player] = (symbols.copy(), belief)
        return belief

    def viterbi_next(self, context: np.ndarray, player: int) -> int:
        """The Viterbi path's last state: the most likely next action (or num_actions: none)."""
        _, path = self.model(player).decode(self.encode(context), algorithm="viterbi")
        return int(path[-1])
