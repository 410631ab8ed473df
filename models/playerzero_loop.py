"""The PlayerZero loop: generations of self-play that train, test and register policy-value nets.

Generation g, each step resumable (a step whose output exists is skipped, so a killed loop
loses at most the step in flight and raising `generations` continues from the last one done):

  1 self-play  gen-g/data             a features.store dataset (technique `selfplay`): g = 0 plain
                                      MCTS (seed 001 §3.3.4), later PUCT with the coach's newest
                                      network, `parallel` games per worker stepping together
  2 validate   gen-g/validation.json  the dataset's validation suite, or the loop stops
  3 encode     gen-g/encoded.npz      planes, mask, visit policy, outcome, plies left, root
                                      values, one compact copy per position (training draws a
                                      symmetry of the game per row and batch)
  4 train      networks/gG-sS/        every network of the curriculum (the coach and, while
                                      there is one, a larger student; seed 001 §3.3.3) on the
                                      last `window` generations, warm-started from its own
                                      previous weights
  5 arena      gen-g/arena.json       the student against the best network (when it wins it
                                      becomes the coach), else the coach's new weights against
                                      the best; models.arena's sequential test decides which
                                      network is the best (registered, and the arena's yardstick)
  6 evaluate   gen-g/evaluation.json  on a solved-position set (params `solved`): optimal-move
                                      rate of the raw policy and of puct at a fixed budget; and
                                      a match against a fixed yardstick (`evaluate.opponent`)
  7 register   gen-g/summary.json     an accepted network becomes a version of
                                      `<game>-playerzero` with its evidence; the promotion gate
                                      decides `production`; state.json moves on

On a cluster (a `mapper`, flows.stage_io.fan_out) the self-play shards, the arena's pairs and the
evaluation match are cluster tasks: shards are written into gen-g/data (a shared data root) and
committed here, networks travel as paths inside agent specs, and the results equal a run in one
process (same shards, same pairs, the sequential test stopping at the same pair).

A generation starts only while the loop's wall-clock (`hours`, 0: no limit) leaves room for one
more as long as the last one took.

The loop's folder (ROOT/playerzero/GAME, a DVC output) holds what the same inputs make again:
its JSON files keep no MLflow ids, registry versions, seconds, rates of the machine or paths of
the machine (`MEASURED`, `portable`). Those go, at the same relative path, to its run record
ROOT/metrics/playerzero/GAME-run (`run_home`): the parent and generation run ids, each
generation's clock, its registration and the curve and report, which plot wall-clock hours.
`load` reads a file of the folder with its measured fields put back, so resuming and the
`hours` budget work as before. The helpers here are plain functions; flows/stages/playerzero.py
wraps the whole loop as one Prefect flow with MLflow runs (one parent run per loop, one nested
run per generation).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.files import write_json
from models.arena import Mapper
from models.base import ModelError

GEN_BITS = 40  # game ids of generation g are offset by g << GEN_BITS (unique in the window)
TECHNIQUE = "selfplay"
TECHNIQUE_MODULE = "features.generate.selfplay"  # what generation imports by name (DVC deps)
Echo = Callable[[str], None]


class LoopError(ModelError):
    """The loop cannot go on (a dataset failed validation, a parameter is wrong): exit 2."""


# ---- files -------------------------------------------------------------------------------------
def read_json(path: Path, default: Any = None) -> Any:
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else default


#: fields that differ between two runs of the same inputs (MLflow ids, registry state, the clock
#: and rates measured on it): kept in the run record, never in the loop's DVC output
MEASURED = frozenset({
    "seconds", "hours", "run_id", "parent_run_id", "resumed", "registry",
    "positions_per_s", "train_seconds", "ms_per_move_mean", "ms_per_move_p95",
})  # fmt: skip


def run_home(root: Path) -> Path:
    """The run record of the loop whose folder is `root` (ROOT/playerzero/GAME):
    ROOT/metrics/playerzero/GAME-run, outside the DVC output (dvc.yaml keeps it with `persist`,
    so a killed loop finds its ids and clock there)."""
    root = Path(root)
    return root.parent.parent / "metrics" / "playerzero" / f"{root.name}-run"


def split(data: Any) -> tuple[Any, Any]:
    """(data without its MEASURED fields, those fields in the same nesting; None where none)."""
    if isinstance(data, dict):
        kept, measured = {}, {}
        for key, value in data.items():
            if key in MEASURED:
                measured[key] = value
                continue
            kept[key], inner = split(value)
            if inner:
                measured[key] = inner
        return kept, measured or None
    if isinstance(data, list):
        pairs = [split(value) for value in data]
        inner = [m for _, m in pairs]
        return [k for k, _ in pairs], inner if any(m is not None for m in inner) else None
    return data, None


def merge(kept: Any, measured: Any) -> Any:
    """`split`'s inverse: the measured fields put back where they were."""
    if measured is None:
        return kept
    if isinstance(kept, dict) and isinstance(measured, dict):
        out = dict(kept)
        for key, value in measured.items():
            out[key] = merge(out[key], value) if key in out else value
        return out
    if isinstance(kept, list) and isinstance(measured, list):
        return [merge(k, m) for k, m in zip(kept, measured, strict=False)] + kept[len(measured) :]
    return measured


def portable(data: Any, root: Path) -> Any:
    """Agent specs name networks by the machine's absolute path (`resolve()`); recorded, they
    name them by their path in the repository (the folder two levels above the loop's)."""
    prefix = str(Path(root).resolve().parent.parent) + os.sep
    if isinstance(data, str):
        return data.replace(prefix, "")
    if isinstance(data, dict):
        return {key: portable(value, root) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [portable(value, root) for value in data]
    return data


def save(root: Path, path: Path, data: Any) -> Any:
    """Writes `data` at `path` in the loop's folder `root` without its MEASURED fields, and those
    at the same relative path in the run record (first, so a kept file always has its record);
    returns what `load` will read back."""
    data = portable(data, root)
    kept, measured = split(data)
    record = run_home(root) / Path(path).relative_to(root)
    if measured is not None:
        write_json(record, measured)
    elif record.is_file():
        record.unlink()
    write_json(path, kept)
    return load(root, path)


def load(root: Path, path: Path, default: Any = None) -> Any:
    """A file of the loop's folder with its measured fields from the run record put back."""
    kept = read_json(path)
    if kept is None:
        return default
    return merge(kept, read_json(run_home(root) / Path(path).relative_to(root)))


def gen_dir(root: Path, g: int) -> Path:
    return Path(root) / f"gen-{g:03d}"


def network_dir(root: Path, g: int, scale: int) -> Path:
    return Path(root) / "networks" / f"g{g:03d}-s{scale}"


def new_state(params: dict[str, Any]) -> dict[str, Any]:
    scales = [int(s) for s in params["networks"]]
    return {
        "generation": 0,  # generations finished
        "best": None,  # {"path", "scale", "generation"}: the newest accepted network
        "player": None,  # the coach's newest network, which plays self-play; None: MCTS
        "coach": scales[0],
        "students": scales[1:],  # the curriculum still to come, next student first
        "latest": {},  # scale → weights file of its newest network
        "version": None,  # newest registered version
        "seconds": 0.0,  # wall-clock of finished generations
        "history": [],  # one summary per generation
    }


# ---- 1 self-play -------------------------------------------------------------------------------
def self_play_network(state: dict[str, Any]) -> dict[str, Any] | None:
    """The coach's newest network (None before the first one: MCTS plays)."""
    if state.get("player"):
        return state["player"]
    weights = state["latest"].get(str(state["coach"]))  # a loop state from before `player`
    if weights:
        return {"path": str(Path(weights).with_name("model.onnx")), "scale": state["coach"]}
    return state["best"]


def selfplay_options(params: dict[str, Any], state: dict[str, Any], root: Path) -> dict:
    """The selfplay technique's options for the next generation."""
    workers = int(params.get("workers", 1))
    player = self_play_network(state)
    if player is None:
        first = dict(params["first"])
        options = {"x": int(first.pop("games")), "agent": str(first.pop("agent")), **first}
        return options
    sp = dict(params["selfplay"])
    # relative where the loop's folder is (the stage runs in the repository, its process pool
    # too): the dataset's manifest then names no path of this machine; on a cluster the
    # folder is absolute, in the shared data root
    model = Path(root) / player["path"]
    # prior_temp is pinned (default 1): a network's play-time setting must not reshape self-play
    agent = (
        f"puct:model={model},sims={int(sp.pop('sims'))},c={float(sp.pop('c'))},"
        f"fpu={float(sp.pop('fpu'))},prior_temp={float(sp.pop('prior_temp', 1.0))},"
        f"threads={1 if workers > 1 else 0}"
    )
    return {"x": int(sp.pop("games")), "agent": agent, **sp}


def self_play(root: Path, game_spec: str, params: dict, state: dict, g: int,
              progress: Callable[[int, int], None] | None = None,
              mapper: Mapper | None = None) -> dict[str, Any]:  # fmt: skip
    """Generation g's games (resumed shard by shard); summary with positions per second."""
    from features.errors import DataError
    from features.store import generate_dataset, read_manifest

    folder = gen_dir(root, g) / "data"
    options = selfplay_options(params, state, root)
    seed = int(params["seed"]) * 1000 + g
    workers = int(params.get("workers", 1))
    try:
        manifest = generate_dataset(folder, game_spec, TECHNIQUE, options, seed, workers,
                                    progress, mapper)  # fmt: skip
    except DataError as error:
        if "another command" not in str(error) or read_manifest(folder).get("complete"):
            raise
        shutil.rmtree(folder)  # an unfinished generation made with other settings: start over
        manifest = generate_dataset(folder, game_spec, TECHNIQUE, options, seed, workers,
                                    progress, mapper)  # fmt: skip
    seconds = float(manifest["run"]["seconds"])
    positions = int(manifest["counts"]["positions"])
    return {
        "agent": options["agent"],
        "games": int(manifest["counts"]["games"]),
        "positions": positions,
        "seconds": seconds,
        "positions_per_s": positions / seconds if seconds else 0.0,
        "content_hash": manifest["content_hash"],
    }


# ---- 2 validate, 3 encode ----------------------------------------------------------------------
def validate(root: Path, g: int, validation: dict[str, Any]) -> dict[str, Any]:
    from features.validate import validate_dataset

    path = gen_dir(root, g) / "validation.json"
    if path.is_file():
        return load(root, path)
    report = validate_dataset(gen_dir(root, g) / "data", sample=int(validation["sample"]),
                              seed=int(validation["seed"]), docs=False, write=False)  # fmt: skip
    if not report.success:
        raise LoopError(f"generation {g}: self-play data failed validation: {report.summary()}")
    return save(root, path, {"success": True, "summary": report.summary()})


def encode(root: Path, g: int, game: Any) -> Path:
    """gen-g/encoded.npz: the planes encoding plus plies left and each row's root value, one
    copy per position stored compact (planes and policy float16, mask uint8); training draws
    the symmetries per batch. Augmented up front in float32, tactics' first generation (54k
    positions x 4 symmetries x 4,320-action rows) took more than this 24 GB machine."""
    from features.encode import planes, save
    from features.store import load_dataset, read_manifest
    from models.playerzero import root_values

    out = gen_dir(root, g) / "encoded.npz"
    if out.is_file():
        return out
    folder = gen_dir(root, g) / "data"
    games = load_dataset(folder, "games")
    lengths = dict(zip(games.column("game_id").to_pylist(), games.column("length").to_pylist(),
                       strict=True))  # fmt: skip
    positions = load_dataset(folder, "positions")
    ply = positions.column("ply").to_numpy()
    arrays = planes(positions, game)
    del positions
    arrays["root_value"] = root_values(arrays)
    del arrays["action_scores"]
    arrays["planes"] = arrays["planes"].astype(np.float16)
    arrays["policy"] = arrays["policy"].astype(np.float16)
    arrays["mask"] = arrays["mask"].astype(np.uint8)
    arrays["plies_left"] = np.array(
        [lengths[i] - p for i, p in zip(arrays["game_id"].tolist(), ply.tolist(), strict=True)],
        dtype=np.int16,
    )
    arrays["game_id"] = arrays["game_id"] + (np.int64(g) << GEN_BITS)
    meta = {"encoding": "planes", "game": game.spec(), "generation": g,
            "manifest_hash": read_manifest(folder)["content_hash"],
            "rows": len(arrays["planes"])}  # fmt: skip
    save(arrays, meta, out)
    return out


def replay_window(root: Path, g: int, window: int) -> tuple[dict[str, np.ndarray], dict]:
    """The encoded rows of generations max(0, g - window + 1) … g, concatenated."""
    from features.encode import load

    parts, meta = [], {}
    for k in range(max(0, g - window + 1), g + 1):
        arrays, meta = load(gen_dir(root, k) / "encoded.npz")
        parts.append(arrays)
    keys = [k for k in parts[-1] if all(k in p for p in parts)]
    joined = {k: np.concatenate([p[k] for p in parts]) for k in keys}
    return joined, {**meta, "generations": list(range(max(0, g - window + 1), g + 1))}


# ---- 4 train -----------------------------------------------------------------------------------
def train_network(root: Path, g: int, scale: int, params: dict, state: dict,
                  progress: Callable | None = None) -> dict[str, Any]:  # fmt: skip
    """networks/g{g+1}-s{scale}: trained on the window, warm-started from its scale's newest."""
    from models import playerzero

    folder = network_dir(root, g + 1, scale)
    if (folder / "run.json").is_file():
        return load(root, folder / "run.json")
    arrays, meta = replay_window(root, g, int(params["window"]))
    warm = state["latest"].get(str(scale), "")
    settings = {**params["train"], "scale": scale, "seed": int(params["seed"]) + g,
                "warm_start": str(Path(root) / warm) if warm else ""}  # fmt: skip
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        result = playerzero.train(arrays, meta, settings, scratch, progress)
        summary = {
            "generation": g + 1,
            "scale": scale,
            "params": result.params,
            "metrics": result.metrics,
            "history": result.history,
            "rows": len(arrays["planes"]),
            "window": meta["generations"],
            "model": str(folder.relative_to(root) / "model.onnx"),
            "weights": str(folder.relative_to(root) / playerzero.WEIGHTS_FILE),
        }
        summary = portable(summary, root)
        kept, measured = split(summary)  # the training's seconds: in the run record
        write_json(run_home(root) / folder.relative_to(root) / "run.json", measured or {})
        write_json(scratch / "run.json", kept)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(scratch, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return summary


# ---- 5 arena, 6 evaluate -----------------------------------------------------------------------
def puct_spec(root: Path, model: str, sims: int, c: float, fpu: float) -> str:
    return f"puct:model={(Path(root) / model).resolve()},sims={sims},c={c},fpu={fpu}"


def arena(root: Path, g: int, game: Any, candidate: dict, params: dict, state: dict,
          on_pair: Callable | None = None,
          mapper: Mapper | None = None) -> dict[str, Any]:  # fmt: skip
    """Candidate vs best (vs the generation-0 agent while there is no network yet)."""
    from models.arena import play_arena

    path = gen_dir(root, g) / f"arena-s{candidate['scale']}.json"
    if path.is_file():
        return load(root, path)
    a = params["arena"]
    sims, c, fpu = int(a["sims"]), float(params["selfplay"]["c"]), float(params["selfplay"]["fpu"])
    spec = puct_spec(root, candidate["model"], sims, c, fpu)
    if state["best"] is None:
        opponent = str(params["first"]["agent"])
    else:
        opponent = puct_spec(root, state["best"]["path"], sims, c, fpu)
    result = play_arena(
        game, spec, opponent, int(a["games"]), seed=int(a.get("seed", 0)) + 1000 * g,
        opening=int(a["opening"]), elo0=float(a.get("elo0", 0.0)), elo1=float(a["elo1"]),
        min_games=int(a.get("min_games", 6)), on_pair=on_pair, mapper=mapper,
    )  # fmt: skip
    evidence = result.evidence()
    if state["best"] is None:  # the first network always replaces plain MCTS as the player
        evidence.update(accepted=True, reason=f"first network ({evidence['reason']})")
    evidence["scale"] = candidate["scale"]
    return save(root, path, evidence)


#: solved positions per evaluation task (a chunk's agent is fresh: the same rate either way)
EVAL_CHUNK = 50


def evaluate(root: Path, g: int, game: Any, model: str, params: dict,
             mapper: Mapper | None = None) -> dict[str, Any]:  # fmt: skip
    """Optimal-move rates on the solved-position set (empty when params name none; PUCT's in
    chunks, each a cluster task given a `mapper`) and the match against the yardstick (one
    cluster task)."""
    path = gen_dir(root, g) / "evaluation.json"
    if path.is_file():
        return load(root, path)
    solved = params.get("solved") or ""
    result: dict[str, Any] = {"model": model}
    if solved:
        from agents.connect4_bench import agent_rate, policy_rate, read_positions
        from agents.puct.pv_net import PolicyValueNet

        e = params["evaluate"]
        rows = read_positions(Path(solved))
        net = PolicyValueNet(game, (Path(root) / model).resolve())
        result["policy"] = policy_rate(net, rows)
        sp = params["selfplay"]
        spec = puct_spec(root, model, int(e["sims"]), float(sp["c"]), float(sp["fpu"]))
        chunk = int(e.get("chunk", EVAL_CHUNK))
        result["puct"] = agent_rate(spec, rows[: int(e["positions"])], chunk=chunk, mapper=mapper)
    e = params.get("evaluate", {})
    if yardstick(params):
        from engine.tournament import summarize_pairing
        from models.arena import play_job

        sp = params["selfplay"]
        spec = puct_spec(root, model, int(e["sims"]), float(sp["c"]), float(sp["fpu"]))
        job = {"game": game.spec(), "a": spec, "b": str(e["opponent"]), "games": int(e["games"]),
               "seed": 10_000 + g, "opening": int(params["arena"]["opening"])}  # fmt: skip
        rows = next(iter(mapper(play_job, [job]))) if mapper else play_job(job)
        summary = summarize_pairing(rows)
        result["match"] = {k: summary[k] for k in ("spec_b", "games", "wins", "draws", "losses",
                                                   "score", "score_low", "score_high")}  # fmt: skip
    return save(root, path, result)


# ---- one generation ----------------------------------------------------------------------------
def curriculum_step(root: Path, g: int, game: Any, params: dict, state: dict, echo: Echo,
                    progress: Callable | None = None,
                    mapper: Mapper | None = None) -> tuple[dict, dict, dict]:  # fmt: skip
    """Trains coach (and student), plays the arena(s): (trained runs, arena evidence, new state
    fields). The student replaces the coach when it beats the best network."""
    runs = {"coach": train_network(root, g, state["coach"], params, state, progress)}
    echo(f"generation {g}: coach s{state['coach']} trained, {_brief(runs['coach'])}")
    if state["students"]:
        runs["student"] = train_network(root, g, state["students"][0], params, state, progress)
        echo(f"generation {g}: student s{state['students'][0]} trained")
    changes: dict[str, Any] = {"latest": dict(state["latest"])}
    for run in runs.values():
        changes["latest"][str(run["scale"])] = run["weights"]
    fought: dict[str, Any] = {}
    changes["player"] = _best(runs["coach"])  # the newest coach plays, accepted or not
    if "student" in runs and state["best"] is not None:
        fought["student"] = arena(root, g, game, runs["student"], params, state, mapper=mapper)
        echo(f"generation {g}: student arena {_verdict(fought['student'])}")
        if fought["student"]["accepted"]:
            changes.update(coach=state["students"][0], students=state["students"][1:])
            changes["best"] = changes["player"] = _best(runs["student"])
            return runs, fought, changes
    fought["coach"] = arena(root, g, game, runs["coach"], params, state, mapper=mapper)
    echo(f"generation {g}: coach arena {_verdict(fought['coach'])}")
    if fought["coach"]["accepted"]:
        changes["best"] = _best(runs["coach"])
    return runs, fought, changes


def _best(run: dict[str, Any]) -> dict[str, Any]:
    return {"path": run["model"], "scale": run["scale"], "generation": run["generation"]}


def _brief(run: dict[str, Any]) -> str:
    m = run["metrics"]
    return (
        f"policy acc {m.get('held_out_policy_accuracy', float('nan')):.3f}, value loss "
        f"{m.get('held_out_value_loss', float('nan')):.3f} on {run['rows']} rows"
    )


def _verdict(evidence: dict[str, Any]) -> str:
    return (
        f"{'accepted' if evidence['accepted'] else 'rejected'}: {evidence['wins']}-"
        f"{evidence['draws']}-{evidence['losses']}, score {evidence['score']:.3f} "
        f"[{evidence['low']:.3f}, {evidence['high']:.3f}] ({evidence['reason']})"
    )


def load_state(root: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The loop's state.json with its run record's ids and seconds (a new loop's otherwise)."""
    state = load(root, Path(root) / "state.json")
    return state if state is not None else new_state(params)


def save_state(root: Path, state: dict[str, Any]) -> dict[str, Any]:
    return save(root, Path(root) / "state.json", state)


def commit(root: Path, g: int, state: dict, changes: dict, summary: dict) -> dict[str, Any]:
    """Generation g is done: its summary and the loop state, each written atomically."""
    summary = save(root, gen_dir(root, g) / "summary.json", summary)
    state = {**state, **changes}
    state["generation"] = g + 1
    state["seconds"] = float(state["seconds"]) + float(summary["seconds"])
    state["history"] = [*state["history"], summary]
    state = save_state(root, state)
    write_curve(root, state["history"])
    return state


CURVE_KEYS = (
    ("generation", "generation"),
    ("hours", "hours"),
    ("selfplay_positions_per_s", "selfplay.positions_per_s"),
    ("policy_accuracy", "train.held_out_policy_accuracy"),
    ("value_loss", "train.held_out_value_loss"),
    ("arena_score", "arena.score"),
    ("accepted", "arena.accepted"),
    ("optimal_rate_policy", "evaluation.policy.optimal_rate"),
    ("optimal_rate_puct", "evaluation.puct.optimal_rate"),
    ("puct_ms_per_move", "evaluation.puct.ms_per_move_mean"),
    ("match_score", "evaluation.match.score"),
)


def yardstick(params: dict[str, Any]) -> str | None:
    """The fixed opponent every generation plays (`evaluate.opponent`, at least 2 games), or
    None where the profile sets none."""
    e = params.get("evaluate") or {}
    return str(e["opponent"]) if e.get("opponent") and int(e.get("games", 0)) >= 2 else None


def flat_value(summary: dict[str, Any], dotted: str) -> Any:
    value: Any = summary
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return float(value) if isinstance(value, bool | int | float) else value


def write_curve(root: Path, history: list[dict[str, Any]]) -> Path:
    """curve.csv (one row per generation) and metrics.json (the newest row), in the run record
    (`run_home`): they hold hours, positions per second and milliseconds per move."""
    lines = [",".join(name for name, _ in CURVE_KEYS)]
    rows = []
    for summary in history:
        row = {name: flat_value(summary, key) for name, key in CURVE_KEYS}
        rows.append(row)
        lines.append(",".join("" if v is None else f"{v:.6g}" for v in row.values()))
    path = run_home(root) / "curve.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(".curve.csv.tmp")
    temp.write_text("\n".join(lines) + "\n")
    os.replace(temp, path)
    write_json(path.with_name("metrics.json"), {k: v for k, v in rows[-1].items() if v is not None})
    return path


class GenerationClock:
    """A generation's wall-clock over all its attempts: the seconds a killed attempt had spent
    are on disk (rewritten every `beat` seconds by a daemon thread, atomically), and the
    resumed attempt adds its own to them, so the loop's `hours` budget counts the time a
    killed run really cost (a kill loses at most one beat)."""

    def __init__(self, path: Path, beat: float = 30.0, now: Callable[[], float] = time.monotonic):
        self.path, self.beat, self.now = Path(path), beat, now
        self.before = float(read_json(self.path, {}).get("seconds", 0.0))
        self.started = now()
        self.stopped: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def seconds(self) -> float:
        """Earlier attempts' seconds plus this attempt's so far; once stopped, the figure it
        saved, so the generation's summary and clock.json state one number."""
        if self.stopped is not None:
            return self.stopped
        return self.before + self.now() - self.started

    def save(self) -> float:
        seconds = self.seconds()
        write_json(self.path, {"seconds": seconds})
        return seconds

    def __enter__(self) -> GenerationClock:
        def beating() -> None:
            while not self._stop.wait(self.beat):
                self.save()

        self._thread = threading.Thread(target=beating, name="generation-clock", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.stopped = self.save()
