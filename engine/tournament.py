"""Matches and tournaments over seeded scenarios, with statistics, tables, Parquet, JSON and a PNG.

A pairing A vs B plays each scenario twice with sides swapped (A on the even seats, then on the
odd ones); the side whose best seat has the higher return wins the game. Puzzles (kind `puzzle`)
have no sides: a "game" is A's attempt and B's attempt at the same scenario, and the better
return wins. Scenarios: random openings of `opening` plies for turn-based games without chance,
`start=random` where the game takes it (Lazerbike), `levels` cycled for puzzles, and the seed
(dice, starts) everywhere.

Statistics: score = (wins + draws / 2) / games with a 95% Wilson score interval that treats a
draw as half a win (conservative when there are draws); Elo difference = -400 log10(1/s - 1),
its interval the Elo of the score's interval bounds (infinite at 0 or 1: null in JSON).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.isolation import DEFAULT_MEMORY_MB, BotProcess, IsolatedPlayers, SeatStats
from engine.match import InProcessPlayers, Seat, run_game
from engine.protocol import Game, GameError, State
from engine.registry import parse_game_spec

Z95 = 1.959963984540054
SHOWN_FAULTS = 5  # fault messages per bot in a pairing's summary (all in games.parquet)
SIDES = ("a", "b")


# ---- statistics -------------------------------------------------------------------------------
def wilson_interval(score: float, games: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (a draw counts as half a win). It always holds
    the score; rounding can put a bound a few ulps past it (1 - 1e-16 for 10 wins in 10), so the
    bounds are clamped to it (a chart's error bar would otherwise be negative)."""
    if games <= 0:
        return 0.0, 1.0
    z2n = z * z / games
    centre = (score + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(score * (1 - score) / games + z2n / (4 * games))
    return min(score, max(0.0, centre - half)), max(score, min(1.0, centre + half))


def elo(score: float) -> float:
    """Elo difference that predicts `score` (infinite at 0 and 1)."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


# ---- scenarios --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    game_spec: str
    seed: int
    options: dict[str, Any] = field(default_factory=dict)


def _takes_random_start(game: Game) -> bool:
    try:
        game.initial_config(np.random.default_rng(0), start="random")
    except (GameError, TypeError):
        return False
    return True


def make_scenarios(
    game: Game, count: int, seed: int, opening: int = 4, levels: Sequence[str] = ()
) -> list[Scenario]:
    """`count` seeded starting conditions suited to the game."""
    options: dict[str, Any] = {}
    if game.simultaneous and _takes_random_start(game):
        options = {"start": "random"}
    elif not game.simultaneous and not game.has_chance and game.kind != "puzzle" and opening:
        options = {"opening": int(opening)}
    specs = [game.spec()]
    if levels:
        if "level" not in game.params:
            raise GameError(f"{game.name} has no levels (only puzzles such as sokoban do)")
        base = {k: v for k, v in game.params.items() if k != "level"}
        extra = "".join(f",{k}={v}" for k, v in base.items() if v != game.default_params.get(k))
        specs = [f"{game.name}:level={level}{extra}" for level in levels]
        for spec in specs:
            parse_game_spec(spec)  # an unknown level fails before any game is played
    return [Scenario(specs[i % len(specs)], seed + i, dict(options)) for i in range(count)]


# ---- playing ----------------------------------------------------------------------------------
@dataclass
class MatchConfig:
    games: int = 10
    seed: int = 0
    isolated: bool = False
    move_ms: float = 1000.0
    memory_mb: int = DEFAULT_MEMORY_MB
    opening: int = 4
    levels: tuple[str, ...] = ()


MakeSeat = Callable[[str, Game, int], Seat]


class _Pool:
    """Bot processes per side, reused across the games of a pairing."""

    def __init__(self, host: Sequence[str], memory_mb: int):
        self.host, self.memory_mb = list(host), memory_mb
        self.procs: dict[str, list[BotProcess]] = {}

    def take(self, spec: str, count: int) -> list[BotProcess]:
        procs = self.procs.setdefault(spec, [])
        while len(procs) < count:
            procs.append(BotProcess(self.host, spec, self.memory_mb))
        return procs[:count]

    def close(self) -> None:
        for procs in self.procs.values():
            for proc in procs:
                proc.close()


def play_scenario(
    game: Game,
    scenario: Scenario,
    seat_specs: Sequence[str],
    config: MatchConfig,
    agent_seed: int,
    make_seat: MakeSeat | None,
    pool: _Pool | None,
) -> tuple[State, list[SeatStats]]:
    """One game of `scenario` with `seat_specs`: public because a puzzle's attempts
    (engine.puzzles) are single games of the same kind."""
    rng = np.random.default_rng(agent_seed)
    seeds = [agent_seed * 16 + p for p in range(len(seat_specs))]
    if pool is None:
        assert make_seat is not None, "in-process play needs make_seat"
        players = InProcessPlayers(
            [make_seat(spec, game, s) for spec, s in zip(seat_specs, seeds, strict=True)], rng
        )
        state = run_game(game, players, scenario.seed, scenario.seed, **scenario.options)
        return state, players.stats
    bots, used = [], {}
    for spec in seat_specs:
        used[spec] = used.get(spec, 0) + 1
        bots.append(pool.take(spec, used[spec])[-1])
    isolated = IsolatedPlayers(bots, config.move_ms, rng)
    try:
        isolated.begin(scenario.game_spec, scenario.seed, scenario.options, seeds)
        state = run_game(game, isolated.ask, scenario.seed, scenario.seed, **scenario.options)
        return state, isolated.finish()
    finally:
        isolated.close()


def _merge(stats: Sequence[SeatStats]) -> SeatStats:
    total = SeatStats()
    for item in stats:
        total.merge(item)
    return total


def _side_columns(side: str, stats: SeatStats) -> dict[str, Any]:
    times = np.array(stats.times, dtype=np.float64)
    return {
        f"{side}_moves": stats.moves,
        f"{side}_illegal": stats.illegal,
        f"{side}_late": stats.late,
        f"{side}_crashes": stats.crashes,
        f"{side}_discarded_bytes": stats.discarded_bytes,
        f"{side}_peak_kb": stats.peak_kb,
        f"{side}_time_mean_ms": float(times.mean() * 1000) if times.size else 0.0,
        f"{side}_times_ms": [float(t * 1000) for t in times],
        f"{side}_faults": list(stats.faults),
    }


def play_pairing(
    game: Game,
    spec_a: str,
    spec_b: str,
    config: MatchConfig,
    make_seat: MakeSeat | None = None,
    host: Sequence[str] | None = None,
    on_game: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Plays `config.games` games of A vs B; one row per game (see module docstring)."""
    if config.isolated and not host:
        raise GameError("isolated play needs a bot host command")
    scenarios = make_scenarios(
        game, (config.games + 1) // 2, config.seed, config.opening, config.levels
    )
    games = {spec: parse_game_spec(spec) for spec in {s.game_spec for s in scenarios}}
    pool = _Pool(host, config.memory_mb) if config.isolated else None
    rows: list[dict[str, Any]] = []
    try:
        for index in range(config.games):
            scenario = scenarios[index // 2]
            g = games[scenario.game_spec]
            swapped = bool(index % 2)
            row: dict[str, Any] = {
                "pairing": f"{spec_a} vs {spec_b}",
                "spec_a": spec_a,
                "spec_b": spec_b,
                "game": index,
                "game_spec": scenario.game_spec,
                "scenario_seed": scenario.seed,
                "scenario": json.dumps(scenario.options),
                "isolated": config.isolated,
            }
            if g.kind == "puzzle":  # A's attempt, then B's, at the same scenario
                finals, stats = [], []
                for spec in (spec_a, spec_b):
                    final, seat_stats = play_scenario(
                        g, scenario, [spec] * g.num_players, config, index, make_seat, pool
                    )
                    finals.append(final)
                    stats.append(_merge(seat_stats))
                ret_a, ret_b = (max(f.returns()) for f in finals)
                row.update(swapped=False, seats="", length=sum(len(f.history()) for f in finals))
                row["history"] = " | ".join(g.format_moves(f.history()) for f in finals)
            else:
                sides = [(p % 2 == 0) != swapped for p in range(g.num_players)]  # True: A
                final, seat_stats = play_scenario(
                    g,
                    scenario,
                    [spec_a if is_a else spec_b for is_a in sides],
                    config,
                    index,
                    make_seat,
                    pool,
                )
                returns = final.returns()
                ret_a = max(r for r, is_a in zip(returns, sides, strict=True) if is_a)
                ret_b = max(r for r, is_a in zip(returns, sides, strict=True) if not is_a)
                stats = [
                    _merge([s for s, is_a in zip(seat_stats, sides, strict=True) if is_a == want])
                    for want in (True, False)
                ]
                row.update(
                    swapped=swapped,
                    seats="".join("A" if is_a else "B" for is_a in sides),
                    length=len(final.history()),
                    history=g.format_moves(final.history()),
                )
            row.update(return_a=float(ret_a), return_b=float(ret_b))
            row["score_a"] = 1.0 if ret_a > ret_b else 0.0 if ret_a < ret_b else 0.5
            for side, side_stats in zip(SIDES, stats, strict=True):
                row.update(_side_columns(side, side_stats))
            rows.append(row)
            if on_game:
                on_game(row)
    finally:
        if pool is not None:
            pool.close()
    return rows


# ---- summaries --------------------------------------------------------------------------------
def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def score_summary(wins: int, draws: int, losses: int) -> dict[str, Any]:
    """W/D/L -> score, its 95% Wilson interval and the Elo difference with its interval."""
    games = wins + draws + losses
    score = (wins + draws / 2) / games if games else 0.5
    low, high = wilson_interval(score, games)
    return {
        "games": games,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "score": score,
        "score_low": low,
        "score_high": high,
        "elo": _finite(elo(score)),
        "elo_low": _finite(elo(low)),
        "elo_high": _finite(elo(high)),
    }


def _bot_summary(spec: str, rows: Sequence[dict[str, Any]], side: str) -> dict[str, Any]:
    times = np.array([t for row in rows for t in row[f"{side}_times_ms"]], dtype=np.float64)
    total = {key: sum(int(row[f"{side}_{key}"]) for row in rows) for key in _COUNTERS}
    return {
        "spec": spec,
        "decisions": int(times.size),
        "time_mean_ms": float(times.mean()) if times.size else 0.0,
        "time_p95_ms": float(np.percentile(times, 95)) if times.size else 0.0,
        "peak_kb": max(int(row[f"{side}_peak_kb"]) for row in rows),
        **total,
        # the first few faults, each with its game, in the game's words
        "faults": [f"game {row['game']}: {f}" for row in rows for f in row[f"{side}_faults"]][
            :SHOWN_FAULTS
        ],
    }


_COUNTERS = ("illegal", "late", "crashes", "discarded_bytes")


def summarize_pairing(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per pairing: W/D/L from A's side, score and Elo with intervals, per-bot figures."""
    scores = [row["score_a"] for row in rows]
    wins, draws = scores.count(1.0), scores.count(0.5)
    summary = {
        "pairing": rows[0]["pairing"],
        "spec_a": rows[0]["spec_a"],
        "spec_b": rows[0]["spec_b"],
        **score_summary(wins, draws, len(scores) - wins - draws),
        "interval": "95% Wilson score interval, a draw counting as half a win",
    }
    summary["bots"] = [_bot_summary(rows[0][f"spec_{side}"], rows, side) for side in SIDES]
    return summary


def pairings(specs: Sequence[str], form: str) -> list[tuple[int, int]]:
    if form == "round-robin":
        return [(i, j) for i in range(len(specs)) for j in range(i + 1, len(specs))]
    if form == "gauntlet":
        return [(0, j) for j in range(1, len(specs))]
    raise GameError(f"unknown tournament format {form!r}; known: round-robin, gauntlet")


def standings(specs: Sequence[str], summaries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each spec's W/D/L over every pairing it played, with score and Elo; best first."""
    table = []
    for spec in specs:
        wins = draws = losses = 0
        for s in summaries:
            w, d, ls = s["wins"], s["draws"], s["losses"]
            if s["spec_a"] == spec:
                wins, draws, losses = wins + w, draws + d, losses + ls
            elif s["spec_b"] == spec:
                wins, draws, losses = wins + ls, draws + d, losses + w
        table.append({"spec": spec, **score_summary(wins, draws, losses)})
    return sorted(table, key=lambda row: -row["score"])


def run_tournament(
    game: Game,
    specs: Sequence[str],
    config: MatchConfig,
    form: str = "round-robin",
    make_seat: MakeSeat | None = None,
    host: Sequence[str] | None = None,
    on_game: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every pairing of the format; returns the per-game rows and the summary."""
    if len(specs) < 2:
        raise GameError("a tournament needs at least two agent specs")
    if len(set(specs)) != len(specs):
        raise GameError("each agent spec may appear only once in a tournament")
    rows: list[dict[str, Any]] = []
    summaries = []
    for i, j in pairings(specs, form):
        pairing_rows = play_pairing(game, specs[i], specs[j], config, make_seat, host, on_game)
        rows.extend(pairing_rows)
        summaries.append(summarize_pairing(pairing_rows))
    table = standings(specs, summaries)
    summary = {
        "game": game.spec(),
        "format": form,
        "games_per_pairing": config.games,
        "seed": config.seed,
        "isolated": config.isolated,
        "move_ms": config.move_ms if config.isolated else None,
        "interval": "95% Wilson score interval, a draw counting as half a win",
        "peak_memory": (
            "isolated: peak resident KiB of the bot's process (VmHWM)"
            if config.isolated
            else "in-process: KiB by which the bot's decisions raised the peak RSS (ru_maxrss)"
        ),
        "pairings": summaries,
        "standings": table,
    }
    return rows, summary
