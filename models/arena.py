"""The arena: does a new network beat the best one? Seeded openings, sides swapped, sequential test.

Games are played in pairs (one seeded opening, each side once, engine.tournament.play_pairing).
After every pair the generalised sequential probability ratio test (the normal approximation
chess engine testing uses) weighs H1 "the candidate is elo1 Elo better" against H0 "it is elo0
better" with error rates alpha and beta: it accepts as soon as the log-likelihood ratio reaches
log((1 - beta) / alpha), rejects at log(beta / (1 - alpha)), and otherwise plays on. When the
game budget runs out first, the candidate is accepted only if the lower end of its score's 95%
Wilson interval is above 0.5. Every decision comes with its evidence (W/D/L, score, interval,
LLR, bounds, games).

On a cluster (`mapper`, flows.stage_io.fan_out) the pairs are cluster tasks (`play_job`), sent
`wave` at a time ahead of the test; the test still reads them in pair order and stops at the
same pair, so pairs played past the decision are discarded and the evidence is the one of a
run in one process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from engine.tournament import MatchConfig, play_pairing, wilson_interval

#: runs `work(job)` for each job elsewhere (a cluster), results in job order
Mapper = Callable[[Callable[[dict[str, Any]], Any], list[dict[str, Any]]], Iterable[Any]]


def play_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    """One pairing's games from plain arguments (game and agent specs, games, seed, opening;
    models by path inside the specs): a tournament pairing or an arena pair as a cluster task,
    the same rows in any process."""
    from agents import make
    from engine import parse_game_spec

    game = parse_game_spec(job["game"])
    config = MatchConfig(
        games=int(job["games"]), seed=int(job["seed"]), opening=int(job["opening"])
    )
    return play_pairing(game, job["a"], job["b"], config, make_seat=make)


def attempts_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    """One bot's attempts at a puzzle level from plain arguments (game and agent spec,
    attempts, seed, opening laps): engine.puzzles' rows, the same in any process."""
    from agents import make
    from engine import parse_game_spec
    from engine.puzzles import attempt_rows

    game = parse_game_spec(job["game"])
    return attempt_rows(
        game, job["spec"], int(job["attempts"]), int(job["seed"]), int(job["opening"]), make
    )


def expected_score(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def sprt_llr(scores: list[float], elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio of per-game scores (1, 0.5, 0) for H1: elo1 vs H0: elo0."""
    n = len(scores)
    if n < 2:
        return 0.0
    mean = float(np.mean(scores))
    var = float(np.mean((np.asarray(scores) - mean) ** 2))
    if var <= 0:
        var = 1.0 / (4.0 * n)  # every game the same result: the variance of one flip in n
    s0, s1 = expected_score(elo0), expected_score(elo1)
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)


@dataclass
class ArenaResult:
    candidate: str
    best: str
    accepted: bool
    reason: str
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    low: float
    high: float
    llr: float
    bounds: tuple[float, float]
    rows: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def evidence(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("rows")
        return data


def play_arena(
    game: Any,
    candidate: str,
    best: str,
    max_games: int,
    seed: int = 0,
    opening: int = 2,
    elo0: float = 0.0,
    elo1: float = 40.0,
    alpha: float = 0.05,
    beta: float = 0.05,
    min_games: int = 6,
    make_seat: Callable[..., Any] | None = None,
    on_pair: Callable[[int, int], None] | None = None,
    mapper: Mapper | None = None,
    wave: int = 8,
) -> ArenaResult:
    """Candidate vs best, pair by pair, until the sequential test decides or `max_games`."""
    lower, upper = math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)
    rows: list[dict[str, Any]] = []
    llr, reason = 0.0, ""
    pairs = max(1, max_games // 2)
    played = _pairs(game, candidate, best, pairs, seed, opening, make_seat, mapper, wave)
    for pair, pair_rows in enumerate(played):
        rows += pair_rows
        if on_pair:
            on_pair(pair + 1, pairs)
        llr = sprt_llr([r["score_a"] for r in rows], elo0, elo1)
        if len(rows) >= min_games and llr >= upper:
            reason = "sprt: accepted"
            break
        if len(rows) >= min_games and llr <= lower:
            reason = "sprt: rejected"
            break
    scores = [r["score_a"] for r in rows]
    wins, draws = scores.count(1.0), scores.count(0.5)
    score = float(np.mean(scores))
    low, high = wilson_interval(score, len(scores))
    if not reason:
        reason = f"budget spent: 95% lower bound {low:.3f} {'>' if low > 0.5 else '<='} 0.5"
        accepted = low > 0.5
    else:
        accepted = reason.endswith("accepted")
    return ArenaResult(
        candidate, best, accepted, reason, len(scores), wins, draws, len(scores) - wins - draws,
        score, low, high, llr, (lower, upper), rows,
    )  # fmt: skip


def _pairs(game: Any, candidate: str, best: str, pairs: int, seed: int, opening: int,
           make_seat: Callable[..., Any] | None, mapper: Mapper | None,
           wave: int) -> Iterator[list[dict[str, Any]]]:  # fmt: skip
    """Each pair's two games in pair order: played here, or `wave` pairs at a time by
    `mapper` (which builds its agents with agents.make)."""
    if mapper is None:
        from agents import make

        for pair in range(pairs):
            config = MatchConfig(games=2, seed=seed + pair, opening=opening)
            yield play_pairing(game, candidate, best, config, make_seat=make_seat or make)
        return
    if make_seat is not None:
        raise ValueError("play_arena: a mapper plays with agents.make, not make_seat")
    for start in range(0, pairs, max(1, wave)):
        jobs = [
            {"game": game.spec(), "a": candidate, "b": best, "games": 2, "seed": seed + pair,
             "opening": opening}
            for pair in range(start, min(pairs, start + max(1, wave)))
        ]  # fmt: skip
        yield from mapper(play_job, jobs)
