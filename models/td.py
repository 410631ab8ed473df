"""TD learners (study 002): value networks trained by Q-learning or SARSA.

Read top to bottom: DEFAULTS holds every hyperparameter the study varies (learning rule,
activation, move selection, hidden size, learning rate, random factor), the run's own (games,
opponent, seed) and the architecture (`network`: the study's one-hidden-layer network, or an
n-tuple network); `train` builds the network, plays `games` training games in numba chunks
(agents.td.net.self_play: self-play, or against a random player; any other agent spec is
played from Python, one kernel call per move), reports each chunk, checkpoints so a killed
run resumes where it stopped, and exports to ONNX with a parity check (models.td_export).
Any two-player turn-based game works: the network reads the game's observation."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.td.mlp import ACTIVATIONS, MLP
from agents.td.net import EPSILON_GREEDY, SOFTMAX, Workspace, bound, self_play, supports, td_learn
from agents.td.ntuple import NTuple
from engine.bits import new_rng
from models.base import ModelError, TrainingResult
from models.export import checked_params
from models.td_export import ENCODING, export

FAMILY = "td"
ENCODINGS: tuple[str, ...] = ()  # trains by playing, not on an encoded dataset
RULES = ("q", "sarsa")
TRAINING_SELECTIONS = ("egreedy", "softmax")
NETWORKS = ("mlp", "ntuple")
DEFAULTS: dict[str, Any] = {
    "network": "mlp",  # mlp: the study's network; ntuple: an n-tuple network (beyond it)
    "tuples": "lines-corners",  # ntuple shapes: lines-corners | straight-N | rect-RxC | a+b
    "phases": 1,  # ntuple: tables per game stage (occupied cells * phases // (cells + 1))
    "rule": "q",  # q: toward the best successor; sarsa: toward the chosen one
    "activation": "sigmoid",  # mlp: sigmoid | relu | tanh on both layers; ntuple: sigmoid | linear
    "selection": "egreedy",  # egreedy | softmax (exp(p / temperature))
    "hidden": 40,
    "learning_rate": 0.2,
    "lr_final": 1.0,  # the rate decays exponentially to learning_rate * lr_final (1: constant)
    "random_factor": 0.3,  # ε of ε-greedy
    "temperature": 1.0,  # softmax temperature (the study: 1)
    "games": 7000,
    "opponent": "self",  # self | random | counter | any agent spec (played from Python: slower)
    "counter_weights": [],  # opponent=counter: a weighted piece counter, one weight per cell
    "counter_epsilon": 0.1,  # opponent=counter: its random-move probability (the League's ε)
    "counter_share": 1.0,  # opponent=counter: the share of games against it (the rest self-play)
    "heuristic_share": 0.0,  # opponent self|counter: share of games against the game's heuristic
    "heuristic_depth": 2,  # ... searched to this depth (1 or 2), plain minimax
    "heuristic_epsilon": 0.1,  # ... playing a random move with this probability
    "init": "",  # an exported td model (ONNX) of the same network whose weights start the run
    "tcl": False,  # ntuple: temporal coherence learning (each weight's own rate |E| / A)
    "planes": 2,  # observation planes read (seat 0's pieces, seat 1's)
    "init_std": 0.0001,
    "seed": 0,
    # the learning curve `learn` measures (greedy, seeded openings, sides swapped): a point
    # every `curve_every` games (0: at the end only), `curve_games` games against each of
    # `curve_opponents`; the first opponent's last score ranks a sweep (OBJECTIVE)
    "curve_every": 0,
    "curve_games": 0,
    "curve_opponents": [],
}
#: what measures the network rather than trains it: no part of a checkpoint's fingerprint
CURVE = ("curve_every", "curve_games", "curve_opponents")
#: a sweep's best: the last learning-curve score against the first curve opponent
OBJECTIVE = ("score", "max")
#: settings newer than some checkpoints: at their default they stay out of the fingerprint
LATER = (
    "tuples",
    "phases",
    "counter_weights",
    "counter_epsilon",
    "counter_share",
    "heuristic_share",
    "heuristic_depth",
    "heuristic_epsilon",
    "init",
    "tcl",
)
CHUNK = 1000  # games between progress reports
CHECKPOINT_SECONDS = 30.0  # a checkpoint at most this often (and at every curve point, the end)
Progress = Callable[[int, dict[str, float]], None]


def check(params: dict[str, Any]) -> dict[str, Any]:
    """DEFAULTS updated by `params`; ModelError naming the first bad value."""
    p = checked_params(FAMILY, DEFAULTS, params)
    choices = (
        ("rule", RULES),
        ("activation", (*ACTIVATIONS, "linear")),
        ("selection", TRAINING_SELECTIONS),
    )
    for key, known in choices:
        if p[key] not in known:
            raise ModelError(f"td: {key}={p[key]!r}; known: {', '.join(known)}")
    suited = NTuple.OUTPUTS if p["network"] == "ntuple" else tuple(ACTIVATIONS)
    if p["activation"] not in suited:
        raise ModelError(f"td: a {p['network']} takes activation {', '.join(suited)}")
    if p["hidden"] < 1 or p["games"] < 0 or p["planes"] < 1:
        raise ModelError("td: hidden and planes are at least 1, games at least 0")
    if p["learning_rate"] <= 0 or not 0 <= p["random_factor"] <= 1 or p["temperature"] <= 0:
        raise ModelError("td: learning_rate > 0, random_factor in [0, 1], temperature > 0")
    if not 0 < p["lr_final"] <= 1:
        raise ModelError("td: lr_final lies in (0, 1] (1 keeps the rate constant)")
    if p["init_std"] < 0:
        raise ModelError("td: init_std must not be negative")
    if p["tcl"] and p["network"] != "ntuple":
        raise ModelError("td: tcl (temporal coherence learning) is for network=ntuple")
    if p["opponent"] == "counter" and not p["counter_weights"]:
        raise ModelError("td: opponent=counter needs counter_weights (one weight per cell)")
    if not 0 <= p["counter_epsilon"] <= 1 or not 0 <= p["counter_share"] <= 1:
        raise ModelError("td: counter_epsilon and counter_share lie in [0, 1]")
    if not 0 <= p["heuristic_share"] <= 1 or not 0 <= p["heuristic_epsilon"] <= 1:
        raise ModelError("td: heuristic_share and heuristic_epsilon lie in [0, 1]")
    if p["heuristic_depth"] not in (1, 2):
        raise ModelError("td: heuristic_depth is 1 or 2")
    if p["heuristic_share"] and p["opponent"] not in ("self", "counter"):
        raise ModelError("td: heuristic_share mixes into opponent=self or opponent=counter")
    if p["opponent"] == "counter" and p["counter_share"] + p["heuristic_share"] > 1 + 1e-9:
        raise ModelError("td: counter_share + heuristic_share is at most 1")
    return p


def label(params: dict[str, Any]) -> str:
    """A short readable name of a configuration (`q-sigmoid-egreedy-h40-lr0.2-rf0.3`)."""
    p = {**DEFAULTS, **params}
    rf = f"-rf{p['random_factor']:g}" if p["selection"] == "egreedy" else ""
    rf += f"-to{p['lr_final']:g}" if p["lr_final"] != 1 else ""
    if p["network"] == "ntuple":
        out = "-linear" if p["activation"] == "linear" else ""
        out += f"-{p['tuples']}" if p["tuples"] != DEFAULTS["tuples"] else ""
        out += f"-p{p['phases']}" if p["phases"] != 1 else ""
        out += f"-vs-{p['opponent']}" if p["opponent"] in ("random", "counter") else ""
        out += f"-heuristic{p['heuristic_depth']}" if p["heuristic_share"] else ""
        out += "-tcl" if p["tcl"] else ""
        return f"ntuple{out}-{p['rule']}-{p['selection']}-lr{p['learning_rate']:g}{rf}"
    head = f"{p['rule']}-{p['activation']}-{p['selection']}"
    return f"{head}-h{p['hidden']}-lr{p['learning_rate']:g}{rf}"


def initial_network(game, p: dict[str, Any]) -> MLP | NTuple:
    """The untrained network of a checked configuration."""
    if p["network"] == "ntuple":
        shape = (p["activation"], p["tuples"], p["phases"], p["tcl"])
        return NTuple.initial(game, 0.0, p["seed"], *shape)
    return MLP.initial(game, p["hidden"], p["activation"], p["planes"], p["init_std"], p["seed"])


def play_settings(params: dict[str, Any]) -> tuple[int, float, float]:
    """(selection rule, ε, temperature) the network trained with, for the kernels."""
    rule = EPSILON_GREEDY if params["selection"] == "egreedy" else SOFTMAX
    return rule, float(params["random_factor"]), float(params["temperature"])


# ---- training ------------------------------------------------------------------------------------
class Trainer:
    """One network and its training state; `run(games)` plays more training games."""

    def __init__(self, game, params: dict[str, Any]):
        why = supports(game)
        if why:
            raise ModelError(f"td: {why}")
        self.game = game
        self.params = check(params)
        p = self.params
        try:
            self.network = initial_network(game, p)
        except ValueError as problem:
            raise ModelError(f"td: {problem}") from None
        if p["init"]:
            self._start_from(Path(p["init"]))
        self._net = self.network.arrays()
        self.rng = new_rng(p["seed"])
        self.games_done = 0
        self.results: list[float] = []  # seat 1's return of each training game
        self._work = Workspace(game).arrays
        self._start = game.new_initial_state(seed=p["seed"]).array
        self._opponent = None
        self._counter = np.asarray(p["counter_weights"] or [0.0], dtype=np.float64)
        if p["opponent"] == "counter" and self._counter.size != np.prod(game.observation_shape[1:]):
            raise ModelError(f"td: counter_weights needs one weight per cell of {game.name}")
        if p["opponent"] not in ("self", "random", "counter"):
            from agents import make

            self._opponent = make(p["opponent"], game, seed=p["seed"])

    def _start_from(self, path: Path) -> None:
        """Copies the weights of an exported network of the same shape (a warm start)."""
        from agents.base import AgentError
        from agents.td.agent import read_network

        try:
            start, _meta = read_network(path, self.game)
        except AgentError as problem:
            raise ModelError(f"td: init: {problem}") from None
        mine, theirs = self.network.weights(), start.weights()
        if mine.keys() != theirs.keys() or any(mine[k].shape != theirs[k].shape for k in mine):
            raise ModelError(f"td: init: {path} is not a network of this run's shape")
        for key in ("lookup_cells", "offset"):
            if key in mine and not np.array_equal(mine[key], theirs[key]):
                raise ModelError(f"td: init: {path} reads other tuples than this run's")
        for key, array in mine.items():
            array[...] = theirs[key]

    def rate(self) -> float:
        """The learning rate now: decayed by lr_final ** (share of the games already played)."""
        p = self.params
        share = self.games_done / p["games"] if p["games"] else 0.0
        return p["learning_rate"] * p["lr_final"] ** min(share, 1.0)

    def run(self, games: int) -> np.ndarray:
        """Plays `games` more training games; returns their results for seat 1."""
        if self._opponent is not None:
            out = self._against_agent(games)
        else:
            p = self.params
            rule, epsilon, temperature = play_settings(p)
            out = np.zeros(games)
            bound(self.game, self_play, self.network)(
                self._start,
                self._net,
                rule,
                epsilon,
                temperature,
                p["rule"] == "sarsa",
                self.rate(),
                games,
                {"self": 0, "random": 1, "counter": 2}[p["opponent"]],
                self._counter,
                float(p["counter_epsilon"]),
                float(p["counter_share"]),
                int(p["heuristic_depth"]),
                float(p["heuristic_epsilon"]),
                float(p["heuristic_share"]),
                self.rng,
                *self._work,
                out,
            )
        self.games_done += games
        self.results.extend(float(r) for r in out)
        return out

    def _against_agent(self, games: int) -> np.ndarray:
        """Training against an agent spec: the learner sits on seat g % 2 of game g."""
        p, game = self.params, self.game
        turn = bound(game, td_learn, self.network)
        rule, epsilon, temperature = play_settings(p)
        sarsa = p["rule"] == "sarsa"
        out = np.zeros(games)
        for g in range(games):
            state = game.new_initial_state(seed=p["seed"])
            learner = (self.games_done + g) % 2
            while not state.is_terminal():
                forced = -1
                if state.current_player() != learner:
                    forced = int(self._opponent.step(state))
                action = turn(
                    state.array,
                    self._net,
                    rule,
                    epsilon,
                    temperature,
                    sarsa,
                    self.rate(),
                    forced,
                    self.rng,
                    *self._work,
                )
                state.apply_action(int(action))
            out[g] = state.returns()[1]
        return out

    # ---- checkpoints: a killed run resumes where it stopped ---------------------------------
    def fingerprint(self) -> str:
        """Everything but the number of games: a longer run continues a shorter one."""
        kept = {
            k: v
            for k, v in self.params.items()
            if k != "games" and k not in CURVE and not (k in LATER and v == DEFAULTS[k])
        }
        text = json.dumps({**kept, "game": self.game.spec()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def save(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(
            temp,
            rng=self.rng,
            games_done=self.games_done,
            fingerprint=self.fingerprint(),
            results=np.asarray(self.results),
            **self.network.weights(),
            **self._learning_state(),
        )
        os.replace(temp, path)

    def _learning_state(self) -> dict[str, np.ndarray]:
        """The network's training state besides its weights (TCL's sums), if it keeps any."""
        state = getattr(self.network, "learning_state", None)
        return state() if state is not None else {}

    def resume(self, path: Path) -> bool:
        """Loads a checkpoint of this very configuration (False when there is none)."""
        path = Path(path)
        if not path.is_file():
            return False
        with np.load(path, allow_pickle=False) as saved:
            if str(saved["fingerprint"]) != self.fingerprint():
                return False
            if int(saved["games_done"]) > self.params["games"]:
                return False  # trained past what is asked: start afresh
            for name, array in {**self.network.weights(), **self._learning_state()}.items():
                array[...] = saved[name]
            self.rng[:] = saved["rng"]
            self.games_done = int(saved["games_done"])
            self.results = [float(r) for r in saved["results"]]
        return True


def train(
    game_spec: str,
    params: dict[str, Any],
    out_dir: str | Path,
    progress: Progress | None = None,
    curve: Callable[[Any, int], dict[str, float]] | None = None,
    curve_every: int = 0,
    checkpoint: str | Path | None = None,
) -> TrainingResult:
    """Trains one configuration and exports it to OUT_DIR/model.onnx (with parity.json).

    `progress(games, metrics)` is called after every chunk; `curve(network, games)` every
    `curve_every` games (and at the end) adds learning-curve points, e.g. a score against
    minimax. `checkpoint` (an .npz path) makes the run resumable."""
    from engine import parse_game_spec

    game = parse_game_spec(game_spec)
    trainer = Trainer(game, params)
    total = trainer.params["games"]
    history: dict[str, list[float]] = {}
    if checkpoint is not None and trainer.resume(Path(checkpoint)):
        history = _load_history(Path(checkpoint))
    began = saved = time.perf_counter()
    start_games = trainer.games_done
    while trainer.games_done < total:
        step = min(CHUNK, total - trainer.games_done)
        if curve_every:
            step = min(step, curve_every - trainer.games_done % curve_every)
        out = trainer.run(step)
        metrics = {"games": float(trainer.games_done), "seat1_mean_return": float(out.mean())}
        point = curve is not None and curve_every and trainer.games_done % curve_every == 0
        if point:
            metrics.update(curve(trainer.network, trainer.games_done))
        _record(history, metrics, progress, trainer.games_done)
        due = time.perf_counter() - saved >= CHECKPOINT_SECONDS or trainer.games_done == total
        if checkpoint is not None and (point or due):
            trainer.save(Path(checkpoint))
            _save_history(Path(checkpoint), history)
            saved = time.perf_counter()
    seconds = time.perf_counter() - began
    if curve is not None and (not curve_every or total % curve_every or total == 0):
        _record(history, curve(trainer.network, total), progress, total)
    out_dir = Path(out_dir)
    report = export(game, trainer.network, trainer.params, out_dir / "model.onnx")
    played = trainer.games_done - start_games
    metrics = {
        "training_games": float(trainer.games_done),
        "training_seconds": seconds,
        "training_games_per_s": played / seconds if seconds > 0 and played else 0.0,
        "parity_max_abs_diff": report["max_abs_diff"],
    }
    for key, values in history.items():
        if key != "games" and values:
            metrics[f"last_{key}"] = values[-1]
    return TrainingResult(
        family=FAMILY,
        game=game.spec(),
        encoding=ENCODING,
        params=trainer.params,
        artifact=out_dir / "model.onnx",
        artifact_kind="onnx",
        metrics=metrics,
        history=history,
        extra_artifacts=[Path(report["report"])],
    )


def learn(
    game: str,
    params: dict[str, Any],
    out_dir: str | Path,
    work: str | Path | None = None,
    progress: Progress | None = None,
) -> TrainingResult:
    """models.base's contract for a family that learns by playing: `train` with the learning
    curve the params ask for (`curve_*`, models.td_matches.curve_point) and its checkpoint in
    `work`; `score` is the last curve score against the first curve opponent."""
    from engine import parse_game_spec
    from models.td_matches import curve_point

    p = check(params)
    opponents = [str(o) for o in p["curve_opponents"]]
    curve = None
    if opponents and p["curve_games"] > 0:
        curve = curve_point(parse_game_spec(game), opponents, p["curve_games"], p["seed"])
    checkpoint = Path(work) / "checkpoint.npz" if work else None
    result = train(game, p, out_dir, progress, curve, p["curve_every"], checkpoint)
    if curve is not None:
        result.metrics["score"] = result.metrics[f"last_score_vs_{opponents[0]}"]
    return result


def _record(history, metrics, progress, games) -> None:
    for key, value in metrics.items():
        history.setdefault(key, []).append(float(value))
    if progress is not None:
        progress(games, metrics)


def _history_path(checkpoint: Path) -> Path:
    return checkpoint.with_suffix(".history.json")


def _save_history(checkpoint: Path, history: dict[str, list[float]]) -> None:
    path = _history_path(checkpoint)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(history))
    os.replace(temp, path)


def _load_history(checkpoint: Path) -> dict[str, list[float]]:
    path = _history_path(checkpoint)
    return json.loads(path.read_text()) if path.is_file() else {}


# ---- what a run records of a network that learned by playing (models.base's contract) ----------
def source(game: str, params: dict[str, Any]) -> dict[str, str]:
    """What stands for the dataset of a run that learned by playing: the training setting."""
    opponent = params.get("opponent", "self")
    return {
        "game": game,
        "dataset.path": f"{'self-play' if opponent == 'self' else 'play against ' + opponent}",
        "dataset.sha256": "none (trained by playing)",
        "dataset.manifest_hash": "none (trained by playing)",
        "dataset.encoding": ENCODING,
        "dataset.rows": str(params.get("games", "?")),
    }


def inputs(game: str, params: dict[str, Any]) -> list[Any]:
    """The MLflow input of a TD run: its self-play or its opponent, with games and seed."""
    from models.run_inputs import played_input

    opponent = str(params.get("opponent", "self"))
    setting = {"game": game, "opponent": opponent, "games": params.get("games"),
               "seed": params.get("seed"), "encoding": ENCODING}  # fmt: skip
    if opponent == "self":
        return [played_input(f"{game} self-play", "self-play", setting)]
    return [played_input(f"{game} vs {opponent}", "opponent", setting)]


def curves(history: dict[str, list[float]]) -> dict[str, list[tuple[int, float]]]:
    """`train`'s history as (games played, value) points: chunk reports at `games`, learning
    curve points (`score…`) at `curve_games`."""
    chunks, curve = history.get("games", []), history.get("curve_games", [])
    return {
        key: list(zip(curve if key.startswith("score") else chunks, values, strict=False))
        for key, values in history.items()
        if key not in ("games", "curve_games")
    }
