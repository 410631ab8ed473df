"""Connect 4 strength against exact labels: the solved-position set and the optimal-move rate.

The set: positions from uniform random play, a uniformly drawn number of stones in [lo, hi]
(middle and end game), kept when the side to move has no immediate win and not every legal
move is optimal, each labelled by the project's own solver (engine.games.connect4.solver) with every
column's exact score. The file is `gridbots solve --analyze`'s output, one line per position:
`moves s1 … s7` (common notation, `x` for a full column), so any line can be checked with that
command. It evaluates bots; no label ever trains one.

A move is *optimal* when its exact score equals the best column's (a win as fast as possible,
a loss as slow as possible); it *keeps the outcome* when its score has the best score's sign
(win / draw / loss), the weaker measure some AlphaZero reports use. Both are reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.games.connect4 import HEIGHT, WIDTH
from engine.games.connect4.solver import Connect4Solver, parse_line, position
from engine.protocol import GameError

DEFAULT_FILE = Path(__file__).parent / "data" / "connect4_solved_positions.txt"
DEFAULT_COUNT, DEFAULT_SEED, DEFAULT_LO, DEFAULT_HI = 1000, 2026, 12, 34


@dataclass(frozen=True)
class Labelled:
    moves: tuple[int, ...]  # 0-based columns
    scores: tuple[int | None, ...]  # exact score per column, None when full

    @property
    def best(self) -> int:
        return max(s for s in self.scores if s is not None)

    def optimal(self, column: int) -> bool:
        return self.scores[column] is not None and self.scores[column] == self.best

    def keeps_outcome(self, column: int) -> bool:
        score = self.scores[column]
        return score is not None and np.sign(score) == np.sign(self.best)

    def line(self) -> str:
        text = " ".join("x" if s is None else str(s) for s in self.scores)
        return f"{''.join(str(c + 1) for c in self.moves)} {text}"


def random_history(rng: np.random.Generator, stones: int) -> list[int]:
    """A history of `stones` uniformly random moves (0-based) that leaves the game unfinished."""
    while True:
        heights = [0] * WIDTH
        moves: list[int] = []
        for _ in range(stones):
            c = int(rng.choice([c for c in range(WIDTH) if heights[c] < HEIGHT]))
            heights[c] += 1
            moves.append(c)
        try:
            position(moves)
        except GameError:
            continue
        return moves


def build_positions(
    count: int = DEFAULT_COUNT,
    seed: int = DEFAULT_SEED,
    lo: int = DEFAULT_LO,
    hi: int = DEFAULT_HI,
    progress: Callable[[int, int], None] | None = None,
) -> list[Labelled]:
    """`count` distinct labelled positions, deterministic in (count, seed, lo, hi)."""
    rng = np.random.default_rng(seed)
    solver = Connect4Solver()
    found: dict[tuple[int, ...], Labelled] = {}
    while len(found) < count:
        moves = tuple(random_history(rng, int(rng.integers(lo, hi + 1))))
        if moves in found:
            continue
        scores = tuple(solver.analyze(moves))
        playable = [s for s in scores if s is not None]
        winning_now = (43 - len(moves)) // 2
        if max(playable) == winning_now or len(set(playable)) == 1:
            continue  # an immediate win for the side to move, or every move is optimal
        found[moves] = Labelled(moves, scores)
        if progress:
            progress(len(found), count)
    return list(found.values())


def write_positions(path: Path, rows: Sequence[Labelled]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text("".join(row.line() + "\n" for row in rows))
    temp.replace(path)
    return path


def read_positions(path: Path | str = DEFAULT_FILE, limit: int = 0) -> list[Labelled]:
    """The labelled positions of a file (GameError naming the line when one is malformed)."""
    path = Path(path)
    if not path.is_file():
        raise GameError(f"no solved-position file at {path}")
    rows = []
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        parts = text.split()
        if not parts:
            continue
        try:
            if len(parts) != WIDTH + 1:
                raise GameError(f"expected moves and {WIDTH} scores, got {len(parts)} fields")
            moves = tuple(parse_line(parts[0]))
            scores = tuple(None if p == "x" else int(p) for p in parts[1:])
        except (GameError, ValueError) as error:
            raise GameError(f"{path}:{number}: {error}") from None
        rows.append(Labelled(moves, scores))
        if limit and len(rows) == limit:
            break
    return rows


def _summary(rows: Sequence[Labelled], chosen: Sequence[int], seconds: Sequence[float]) -> dict:
    optimal = np.array([r.optimal(c) for r, c in zip(rows, chosen, strict=True)])
    keeps = np.array([r.keeps_outcome(c) for r, c in zip(rows, chosen, strict=True)])
    stones = np.array([len(r.moves) for r in rows])

    def rates(pick: np.ndarray) -> dict[str, Any]:
        return {"positions": int(pick.sum()), "optimal_rate": float(optimal[pick].mean()),
                "outcome_rate": float(keeps[pick].mean())}  # fmt: skip

    spans = {f"{lo}-{hi}": (stones >= lo) & (stones <= hi)
             for lo, hi in ((0, 19), (20, 27), (28, 42))}  # fmt: skip
    # the position's exact value: in won and lost positions a bot that keeps the outcome can
    # still miss the best score (a slower win, a quicker loss); the split shows which it misses
    value = np.sign([r.best for r in rows])
    values = {name: value == sign for name, sign in (("won", 1), ("drawn", 0), ("lost", -1))}
    times = np.asarray(seconds) * 1000.0
    return {
        "positions": len(rows),
        "optimal_rate": float(optimal.mean()) if len(rows) else 0.0,
        "outcome_rate": float(keeps.mean()) if len(rows) else 0.0,
        "by_stones": {name: rates(pick) for name, pick in spans.items() if pick.any()},
        "by_value": {name: rates(pick) for name, pick in values.items() if pick.any()},
        "ms_per_move_mean": float(times.mean()) if len(times) else 0.0,
        "ms_per_move_p95": float(np.percentile(times, 95)) if len(times) else 0.0,
    }


def agent_rate(
    spec: str,
    rows: Sequence[Labelled],
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    make_agent: Callable[..., Any] | None = None,
    chunk: int = 0,
    mapper: Callable[[Callable, list], Any] | None = None,
) -> dict[str, Any]:
    """The optimal-move rate of the agent `spec`, asked each position in turn. With `chunk`, the
    positions go in chunks of that many, each to a fresh agent seeded `seed + chunk index`
    (`choose_moves`), through `mapper` when given (a cluster's fan-out): the same choices
    either way, so a cluster run reports what one process would."""
    if chunk <= 0:
        from engine import parse_game_spec

        game = parse_game_spec("connect4")
        agent = (make_agent or _make)(spec, game, seed)
        chosen, seconds = _ask(agent, game, [row.moves for row in rows], progress)
        return {"spec": spec, **_summary(rows, chosen, seconds)}
    jobs = [
        {
            "spec": spec,
            "seed": seed + i,
            "histories": [list(r.moves) for r in rows[at : at + chunk]],
        }
        for i, at in enumerate(range(0, len(rows), chunk))
    ]
    chosen, seconds = [], []
    for answer in (mapper or map)(choose_moves, jobs):
        chosen += answer["chosen"]
        seconds += answer["seconds"]
        if progress:
            progress(len(chosen), len(rows))
    return {"spec": spec, **_summary(rows, chosen, seconds)}


def choose_moves(job: dict[str, Any]) -> dict[str, list]:
    """One chunk of `agent_rate` (a cluster task): a fresh agent's move and seconds for each
    history."""
    from engine import parse_game_spec

    game = parse_game_spec("connect4")
    agent = _make(job["spec"], game, int(job["seed"]))
    chosen, seconds = _ask(agent, game, job["histories"])
    return {"chosen": chosen, "seconds": seconds}


def _make(spec: str, game: Any, seed: int) -> Any:
    from agents.base import make

    return make(spec, game, seed)


def _ask(
    agent: Any,
    game: Any,
    histories: Sequence[Sequence[int]],
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[int], list[float]]:
    chosen, seconds = [], []
    for i, moves in enumerate(histories):
        state = game.state_from_history(list(moves))
        started = time.perf_counter()
        chosen.append(int(agent.step(state, state.current_player())))
        seconds.append(time.perf_counter() - started)
        if progress:
            progress(i + 1, len(histories))
    return chosen, seconds


def policy_rate(net: Any, rows: Sequence[Labelled]) -> dict[str, Any]:
    """The raw network's rate (argmax of its masked policy), every position in one batch."""
    from engine import parse_game_spec

    game = parse_game_spec("connect4")
    states = [game.state_from_history(list(row.moves)) for row in rows]
    planes = np.stack([s.observation_tensor() for s in states])
    masks = np.stack([s.legal_actions_mask() for s in states]).astype(np.float32)
    started = time.perf_counter()
    policy, _ = net(planes, masks)
    seconds = (time.perf_counter() - started) / max(len(rows), 1)
    chosen = np.argmax(np.where(masks > 0, policy, -1.0), axis=1)
    return {"spec": "policy", **_summary(rows, chosen.tolist(), [seconds] * len(rows))}
