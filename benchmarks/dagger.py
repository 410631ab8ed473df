"""One round of dataset aggregation (DAgger) for a sequence bot that reads the board.

    .venv/bin/python benchmarks/dagger.py --game connect4 --base mix.npz --out next.npz \
        --teacher alphabeta:depth=4 [--solve-from 12] STUDENT_DIR [STUDENT_DIR ...]

Each STUDENT_DIR is a `gridbots generate GAME imitation` dataset in which a `seq:` bot (the
student) played. Every step of the student's seat (random opening plies included) is relabelled
with the teacher's move (in a simultaneous game, its move for the student's seat in that lap),
replayed from each game's own seeded start (scenario included).
For Connect 4, `--solve-from N` labels positions from ply N on, in games the student did not
win, with the exact solver's best move instead (where the position is not already lost): the
depth-4 teacher itself makes a third of the student's fatal moves (reports/sequence-models.md).
The student's games are encoded as `gridbots encode --plies --boards` does (one-move rounds for
turn-based games) in the base encoding's window, weighted on the student's steps only, and
appended to the base encoding, whose metadata records the round (`dagger`). A base encoded
with `--seat` gets one row a game, whose `seat_outcomes` count the student's seat as the winner
and the others as losers, so an every-seat model (`lstm player=-1` with `outcomes=wins`)
imitates the teacher's labels in the student's seat, lost games included, and never the
opponent's moves. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pyarrow as pa

from agents import make
from engine import load_game
from engine.games.connect4.solver import Connect4Solver
from engine.protocol import SIMULTANEOUS
from features import encode
from features.store import load_dataset

GAME_ID_STRIDE = 10_000_000  # keeps the student datasets' game ids apart when joined


def joined_tables(dirs: list[str]) -> tuple[pa.Table, pa.Table]:
    games, sequences = [], []
    for k, folder in enumerate(dirs):
        for tables, name in ((games, "games"), (sequences, "sequences")):
            table = load_dataset(folder, name)
            ids = pa.array(np.asarray(table["game_id"]) + GAME_ID_STRIDE * k)
            tables.append(table.set_column(table.schema.get_field_index("game_id"), "game_id", ids))
    return pa.concat_tables(games), pa.concat_tables(sequences)


def solver_label(solver: Connect4Solver | None, prefix: list[int]) -> int | None:
    """The solver's best move, unless there is no solver or every move loses."""
    if solver is None or max(v for v in solver.analyze(prefix) if v is not None) < 0:
        return None
    return solver.best_move(prefix)


def relabel(arrays: dict, games: pa.Table, game, teacher_spec: str, solve_from: int) -> dict:
    """Overwrites the student's targets in place (step k's target is the move of step k + 1,
    as the encoder lays them out); returns counts."""
    teacher = make(teacher_spec, game, seed=0)
    solver = Connect4Solver() if solve_from else None
    players, window = game.num_players, arrays["targets"].shape[1]
    width = arrays["targets"].shape[2] // players
    rows_of: dict[int, list[int]] = {}
    for row, game_id in enumerate(arrays["game_id"].tolist()):
        rows_of.setdefault(game_id, []).append(row)
    counts = {"labelled": 0, "differ": 0, "solver_labels": 0}
    columns = ["game_id", "agents", "history", "returns", "seed", "scenario"]
    for record in games.select(columns).to_pylist():
        seat = next(i for i, spec in enumerate(record["agents"]) if spec.startswith("seq"))
        failed = record["returns"][seat] <= 0
        rows, history = rows_of[record["game_id"]], record["history"]
        # the game's own start (a Lazerbike dataset may begin at random starts)
        state = game.new_initial_state(seed=record["seed"], **json.loads(record["scenario"]))
        step = i = 0
        while i < len(history):
            mover = state.current_player()
            joint = mover == SIMULTANEOUS
            played = history[i + seat] if joint else history[i]
            if (joint or mover == seat) and 1 <= step <= window:
                label = teacher.step(state, seat)
                exact = solver_label(solver, history[:i]) if failed and i >= solve_from else None
                if exact is not None:
                    label = exact
                    counts["solver_labels"] += 1
                counts["labelled"] += 1
                counts["differ"] += int(label != played)
                arrays["targets"][rows, step - 1, seat * width : (seat + 1) * width] = 0
                arrays["targets"][rows, step - 1, seat * width + label + 1] = 1
            if joint:
                state.apply_actions(history[i : i + players])
                i += players
            else:
                state.apply_action(history[i])
                i += 1
            step += mover >= 0 or joint  # chance steps are not in the sequences
        arrays["outcome"][rows] = np.where(arrays["player"][rows] == seat, 1.0, -1.0)
        if "seat_outcomes" in arrays:  # an every-seat model learns the student's seat only
            arrays["seat_outcomes"][rows] = np.where(np.arange(players) == seat, 1.0, -1.0)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="connect4")
    parser.add_argument("--base", required=True, help="encoding to extend (.npz)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--teacher", default="alphabeta:depth=4")
    parser.add_argument("--solve-from", type=int, default=0, help="Connect 4 only; 0: teacher only")
    parser.add_argument("students", nargs="+")
    args = parser.parse_args()
    if args.solve_from and args.game != "connect4":
        parser.error("--solve-from needs the Connect 4 solver")
    start = time.perf_counter()
    games, sequences = joined_tables(args.students)
    game = load_game(args.game)
    base, meta = encode.load(args.base)
    arrays = encode.qualitative(
        sequences,
        game,
        length=base["inputs"].shape[1],
        plies=not game.simultaneous,
        boards=True,
        games=games,
        seat=meta.get("options", {}).get("seat"),  # one row a game, as the base was encoded
    )
    counts = relabel(arrays, games, game, args.teacher, args.solve_from)
    arrays["game_id"] = arrays["game_id"] + base["game_id"].max() + 1
    joined = {k: np.concatenate([base[k], arrays[k].astype(base[k].dtype)]) for k in base}
    shapes = {k: list(v.shape) for k, v in joined.items()}
    round_ = {"base": args.base, "students": args.students, "teacher": args.teacher,
              "solve_from": args.solve_from, "student_games": games.num_rows, **counts}  # fmt: skip
    rounds = [*meta.get("dagger", []), round_]
    meta = dict(meta, rows=len(joined["inputs"]), shapes=shapes, dagger=rounds)
    encode.save(joined, meta, args.out)
    seconds = round(time.perf_counter() - start, 1)
    print(json.dumps({**round_, "rows": meta["rows"], "seconds": seconds}))


if __name__ == "__main__":
    main()
