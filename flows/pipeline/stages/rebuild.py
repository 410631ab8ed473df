"""`gridbots stage rebuild GAME NAME`: a zoo entry rebuilt from its chain's training (issue 66).

Glue, not a trainer. The chain in rebuild/dvc.yaml trains with the pipeline's own stages (the
PlayerZero loop, a NEAT case) under the zoo profile (params-zoo.yaml); this stage takes the
network that training chose (the loop's production network: the one its promotion gate kept;
a NEAT case's champion), copies it (with the int8 copy an entry plays, models.quantize),
measures every figure by the card's own command on the new files (a `gridbots` process running
exactly the line a reader reruns, `{dir}` the new entry), and writes the card
(models.zoo.write_card) with how it was made: profile, params, commit, dvc.lock hash, MLflow run
id, training hours, machine. The output `zoo/GAME/NAME` (under the chain's folder) is a zoo
entry; `python -m models.zoo --install` copies it into the repository's zoo/ once every floor
holds.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from prefect import flow

from flows.pipeline.stage_io import StageError, atomic_dir, lineage, trained_run, write_json

#: what the card's commands run (in a process of their own): the command line, whose modules are
#: this stage's deps through this name (flows.pipeline.dependencies reads module names in strings)
CARD_COMMANDS = "flows.cli.app"
#: the environment every measurement runs in: one thread, as the cards' figures were measured
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def entry_key(game: str, name: str) -> str:
    return f"{game}-{name}"


def entry_settings(params: dict, game: str, name: str) -> dict[str, Any]:
    """params zoo.GAME-NAME; StageError (exit 2) naming the profile's entries otherwise."""
    entries = params.get("zoo") or {}
    key = entry_key(game, name)
    if key not in entries:
        raise StageError(f"no zoo.{key} in the profile; its entries: {', '.join(entries)}")
    return entries[key]


# ---- what the chain's training chose --------------------------------------------------------
def chosen_playerzero(root: Path, key: str) -> dict[str, Any]:
    """The network the loop's promotion gate last put in production (playerzero/KEY/state.json),
    with its generation's run id and the loop's seconds up to it and in all."""
    from models import playerzero_loop as loop

    home = Path(root) / "playerzero" / key
    state = loop.load(home, home / "state.json")  # with its ids and clocks (its run record)
    promoted = [
        row
        for row in state["history"]
        if ((row.get("registry") or {}).get("promotion") or {}).get("promoted")
    ]
    if promoted:
        row = promoted[-1]
        why = (
            f"registry {row['registry']['name']} version {row['registry']['version']}: the last "
            "network the loop's promotion gate put in production"
        )
    else:  # no network passed the gate (a tiny profile's few games): the loop's own best
        best = (state.get("best") or {}).get("path")
        rows = [row for row in state["history"] if row["network"] == best]
        if not rows:
            raise StageError(f"{home}: the loop has no network to take (no generation yet)")
        row = rows[-1]
        why = "the loop's best network by its arena (no generation passed the promotion gate)"
    return {
        "file": home / row["network"],
        "run_id": row["run_id"],
        "parent_run_id": state.get("parent_run_id"),
        "chosen": f"generation {row['generation']} ({row['network']}), {why}",
        "seconds": float(row["hours"]) * 3600.0,
        "seconds_all": float(state["seconds"]),
    }


def run_seconds(run_id: str) -> float:
    """An MLflow run's wall clock, start to end (the chain's own store)."""
    from models.tracking import client

    info = client().get_run(run_id).info
    return max(0.0, ((info.end_time or info.start_time) - info.start_time) / 1000.0)


def chosen_trained(root: Path, params: dict, game: str, key: str) -> dict[str, Any]:
    """What the generic train stage kept as GAME.models.KEY (trained/GAME/KEY: a NEAT case's
    champion, its seeds a sweep; a TD network), timed by its MLflow run (the sweep's parent when
    it has one); `seconds_all` adds the profile's other trainings of GAME, which the chain ran
    first (a run that starts from another's network counts both)."""
    from flows.pipeline.stage_io import use_tracking

    use_tracking(params, root)

    def seconds_of(name: str) -> float:
        run = trained_run(root, game, name)
        return run_seconds(run.get("parent_run_id") or run["run_id"])

    run = trained_run(root, game, key)
    objective = (run.get("objective") or {}).get("metric", "its objective")
    count = len(run.get("sweep") or []) or 1
    return {
        "file": Path(root) / "trained" / game / key / run["artifact"],
        "run_id": run["run_id"],
        "parent_run_id": run.get("parent_run_id"),
        "chosen": f"configuration {run.get('best')!r} of {count}, ranked by {objective} "
        f"(trained/{game}/{key}/run.json)",
        "seconds": seconds_of(key),
        "seconds_all": sum(seconds_of(name) for name in params[game]["models"]),
    }


def chosen(root: Path, params: dict, settings: dict) -> dict[str, Any]:
    source = settings["source"]
    if source["stage"] == "playerzero":
        return chosen_playerzero(root, source["key"])
    if source["stage"] == "train":
        return chosen_trained(root, params, settings["game"], source["key"])
    raise StageError(f"zoo source stage {source['stage']!r}: playerzero or train")


# ---- the card's figures ---------------------------------------------------------------------
def program(argv: list[str]) -> list[str]:
    """What runs a card's command: `gridbots ARGV` (the program beside this interpreter, the
    venv's), or `python SCRIPT ARGS` (a script of the repository, `benchmarks/…`)."""
    if argv[0] == "python":
        code_root = Path(__file__).resolve().parents[3]
        return [sys.executable, str(code_root / argv[1]), *argv[2:]]
    beside = Path(sys.executable).with_name("gridbots")
    runs = [str(beside)] if beside.is_file() else [sys.executable, "-m", "flows.entry"]
    return [*runs, *argv]


def card_command(argv: list[str], shown_dir: str = "{dir}") -> str:
    """The line the card prints: run from the repository root, one thread, niced."""
    words = [word.replace("{dir}", shown_dir) for word in argv]
    env = " ".join(f"{k}={v}" for k, v in ONE_THREAD.items())
    if words[0] == "python":
        return f"{env} nice -n 10 .venv/bin/python {shlex.join(words[1:])}"
    return f"{env} nice -n 10 .venv/bin/gridbots {shlex.join(words)}"


def run_card_command(argv: list[str], folder: Path) -> tuple[Any, float]:
    """Runs one figure's command on the entry in `folder`; its JSON and its seconds."""
    words = [word.replace("{dir}", str(folder)) for word in argv]
    started = time.monotonic()
    done = subprocess.run(
        program(words),
        capture_output=True,
        text=True,
        env={**os.environ, **ONE_THREAD},
        check=False,
    )
    if done.returncode != 0:
        raise StageError(f"{shlex.join(words)}: {done.stderr.strip()[-400:]}")
    # the folder as the card names it, so the kept JSON reads the same wherever it was measured
    return json.loads(done.stdout.replace(str(folder), "{dir}")), time.monotonic() - started


def played(argv: list[str]) -> str:
    """The spec a figure's command plays: its word naming the entry's files (`{dir}`)."""
    return next(word for word in argv if "{dir}" in word and ":" in word)


def level_line(row: dict[str, Any]) -> str:
    """One level of `gridbots puzzle rate` as the card shows it: solved, laps, time."""
    laps = "no laps to compare"
    if row["both_solved"]:
        laps = (f"laps {row['laps_both']:.2f} vs {row['reference_laps_both']:.2f} on the "
                f"{row['both_solved']} both solved")  # fmt: skip
    return (
        f"{row['solved']}/{row['attempts']} solved (the reference {row['reference_solved']}/"
        f"{row['attempts']}), {laps}, {row['seconds_per_attempt'] * 1000:.0f} ms vs "
        f"{row['reference_seconds_per_attempt'] * 1000:.0f} ms an attempt"
    )


def figure(item: dict[str, Any], result: Any) -> dict[str, Any]:
    """The evidence row of one figure from its command's JSON (a match, a solved-set rate or a
    puzzle's levels beside its reference)."""
    from engine.tournament import wilson_interval

    if isinstance(result, list):  # gridbots solved rate: one row per spec
        rate = result[0]
        value, count = float(rate["optimal_rate"]), int(rate["positions"])
        measured = {
            "value": value,
            "interval": list(wilson_interval(value, count)),
            "positions": count,
            "games": "none (one move per position)",
            "outcome kept": rate["outcome_rate"],
            "ms per move": f"{rate['ms_per_move_mean']:.1f} mean, "
            f"{rate['ms_per_move_p95']:.1f} p95",
        }
    elif "levels" in result:  # gridbots puzzle rate: per level, beside the reference
        value, count = float(result["success_rate"]), int(result["attempts"])
        measured = {
            "value": value,
            "interval": [result["success_low"], result["success_high"]],
            "attempts": count,
            "games": f"none ({result['attempts_per_level']} attempts on each of "
            f"{len(result['levels'])} levels)",
            "solved": f"{result['solved']} of {count} "
            f"(the reference: {result['reference_solved']})",
            "levels": {row["level"]: level_line(row) for row in result["levels"]},
        }
    else:  # gridbots match: the pairing's summary (a benchmark's: its `ci95`)
        value, count = float(result["score"]), int(result["games"])
        interval = (
            result["ci95"] if "ci95" in result else [result["score_low"], result["score_high"]]
        )
        measured = {
            "value": value,
            "interval": list(interval),
            "games": count,
            "wins-draws-losses": f"{result['wins']}-{result['draws']}-{result['losses']}",
        }
    floor = item["floor"]
    if floor["bound"] == "levels":  # every level solved at least as often as the reference
        bound = float(result["levels_at_reference_rate"])
        met = bool(result["at_reference_rate"])
    else:
        bound = measured["interval"][0] if floor["bound"] == "low" else measured["value"]
        met = bound > floor["above"] if "above" in floor else bound >= floor["at_least"]
    return {
        "figure": item["figure"],
        **measured,
        "opponent": item["opponent"],
        "seeded_openings": item["seeded_openings"],
        "sides_swapped": item["sides_swapped"],
        "floor": f"{floor['text']}: {'met' if met else 'NOT met'} ({bound:.4g})",
        "floor_met": met,
        "status": "measured",
    }


def onnx_values(path: Path) -> int:
    """How many numbers a network file holds (its initializers): its size in parameters."""
    import math

    import onnx

    graph = onnx.load(str(path)).graph
    return sum(math.prod(init.dims) for init in graph.initializer)


def machine() -> str:
    """The CPU, cores, memory and load this rebuild ran on."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB; load average {load} at the card"


# ---- the stage ------------------------------------------------------------------------------
def rebuild_stage(root: Path, params: dict, game: str, name: str, params_file: Path) -> Path:
    """`zoo/GAME/NAME` under `root`: the chain's network, measured, with its card."""
    return rebuild_flow(root, params, game, name, str(params_file))


@flow(name="rebuild")
def rebuild_flow(root: Path, params: dict, game: str, name: str, params_file: str) -> Path:
    from models import zoo

    settings = entry_settings(params, game, name)
    picked = chosen(root, params, settings)
    final = Path(root) / "zoo" / game / name
    started = time.monotonic()
    with atomic_dir(final) as scratch:
        target = scratch / settings["model"]
        quantized = settings.get("quantize")
        if quantized:  # the int8 copy the spec plays, checked against the float network
            from engine import parse_game_spec
            from models.quantize import quantize

            check = quantize(picked["file"], target, parse_game_spec(game),
                             int(quantized["positions"]), int(quantized["seed"]),
                             float(quantized["min_agreement"]))  # fmt: skip
        else:
            target.write_bytes(picked["file"].read_bytes())
            check = None
        (scratch / "evidence").mkdir()
        evidence, seconds = [], {}
        for item in settings["evidence"]:
            result, took = run_card_command(item["argv"], scratch)
            write_json(scratch / "evidence" / item["file"], result)
            evidence.append({**figure(item, result), "file": f"evidence/{item['file']}",
                             "spec": played(item["argv"]),
                             "command": card_command(item["argv"])})  # fmt: skip
            seconds[item["file"]] = round(took, 1)
        files = [zoo.file_entry(scratch, settings["model"], settings["role"])]
        files += [
            zoo.file_entry(scratch, f"evidence/{item['file']}", "evidence")
            for item in settings["evidence"]
        ]
        tags = lineage(root)
        source = settings["source"]
        if source["stage"] == "playerzero":
            recipe, section = params["playerzero"][source["key"]], f"playerzero.{source['key']}"
        else:  # every training of the game's chain (a warm start counts its source's too)
            recipe, section = params[game]["models"], f"{game}.models"
        what = {**settings["what"], "file": f"ONNX, {files[0]['bytes']:,} bytes, "
                f"{onnx_values(target):,} values in its initializers"}  # fmt: skip
        if check is not None:
            what["int8 check"] = {k: round(float(v), 4) for k, v in check.items()}
        made = {
            "profile": f"{params.get('profile', 'zoo')} ({params_file}), {section}",
            "params": recipe,
            "commit": tags["git.commit"],
            "dvc_lock": f"sha256 {tags['dvc.lock_sha256']} (the chain's dvc.lock when the "
            "card was written)",
            "mlflow_run_id": f"{picked['run_id']} (the chain's own store, rebuild/mlflow.db)",
            "training_hours": round(picked["seconds"] / 3600.0, 4),
            "training_hours_all": round(picked["seconds_all"] / 3600.0, 4),
            "evidence_seconds": seconds,
            "rebuild_seconds": round(picked["seconds_all"] + time.monotonic() - started, 1),
            "machine": machine(),
            "chosen": picked["chosen"],
            "command": f"cd rebuild && dvc repro rebuild-{game}",
        }
        card = {
            "schema": zoo.SCHEMA,
            "game": game,
            "name": name,
            "title": settings["title"],
            "spec": settings["spec"],
            "model": settings["model"],
            "what": what,
            "made": made,
            "files": files,
            "evidence": evidence,
        }
        zoo.write_card(scratch, card, f"rebuild/zoo/{game}/{name}")
    zoo.load(final)  # every file as its card says
    write_json(Path(root) / "metrics" / "zoo" / f"{game}-{name}.json",
               {"training_hours": made["training_hours"],
                "rebuild_seconds": made["rebuild_seconds"],
                **{e["figure"]: e["value"] for e in evidence}})  # fmt: skip
    return final
