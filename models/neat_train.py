"""NEAT training, one case at a time: evaluate every genome on the numba engine, breed, checkpoint.

Cases 1-4 evolve blue against a preset; case 5 coevolves a blue and a red population on the
symmetric duel (the study pairs them one game per genome; `opponents`, `sparring` and `playoff`
are gridbots' additions, off by default). `Trainer.step()` is one generation; `run()` loops and
checkpoints after each, so a killed run resumes exactly (models.neat holds the JSON formats).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.neat.codec import num_inputs, num_outputs
from agents.neat.network import Network, network, pack
from engine import load_game
from engine.protocol import Game
from models.neat import (
    DEFAULTS,
    SPARRING_PRESETS,
    NeatError,
    case_game,
    checked,
    config_sections,
    genome_to_json,
    jsonable,
    lineage_params,
    make_config,
    neat_draws,
    population_from_json,
    population_to_json,
    write_json,
)
from models.neat_eval import STAT_NAMES, Batch, Evaluator, fitness


@dataclass
class CaseResult:
    case: str
    params: dict[str, Any]
    history: list[dict[str, float]]  # one row per generation
    champion: dict[str, Any]  # genome JSON (blue's, for coevolution)
    champion_stats: dict[str, float]  # its game, seat 0
    trace: list[int]  # the champion's actions in that game (renders replay them)
    rival: dict[str, Any] | None = None  # coevolution: red's champion
    seconds: float = 0.0
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def best_fitness(self) -> float:
        """The run's best (the champion's, for cases 1-4): stagnant species may be dropped with
        the generation's best genome (species_elitism 0), so the last row can be lower."""
        return max(row["best_fitness"] for row in self.history)


def opened(game: Game, seed: int, moves: int) -> np.ndarray:
    """The start of `game` (seeded) after `moves` uniformly random moves, seeded too."""
    state = game.new_initial_state(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        if state.is_terminal():
            break
        legal = state.legal_actions()
        state.apply_action(int(legal[rng.integers(len(legal))]))
    return state.array


class Trainer:
    """One training case: populations, evaluation, checkpoints. `step()` runs one generation."""

    def __init__(self, case: str, params: dict[str, Any], out_dir: Path):
        self.case = case
        self.params = checked(params)
        self.game = case_game(case, self.params)
        self.coevolve = case == "coevolution"
        self.evaluator = Evaluator(
            self.game,
            self.params["decoding"],
            self.params["workers"],
            self.params["stale_limit"],
            tuple(self.params["payoff"]),
        )
        self.start = self.game.new_initial_state(seed=int(self.params["red_seed"])).array
        self.sparring = None
        self.hall: list[dict[str, Any]] = []  # coevolution: each generation's best, per side
        fixed = int(self.params["sparring"]) > 0 or int(self.params["playoff"]) > 0
        if self.coevolve and fixed and self.params["sparring_seats"] == "both":
            self.sparring = self.evaluator  # the duel itself, the scripted player in a seat
        elif self.coevolve and fixed:  # the duel against a fixed red
            spar = load_game(
                "territory",
                size=int(self.params["size"]),
                preset=SPARRING_PRESETS[self.params["sparring_red"]],
                rounds=self.game.rounds,
            )
            self.sparring = Evaluator(
                spar,
                self.params["decoding"],
                self.params["workers"],
                self.params["stale_limit"],
                tuple(self.params["payoff"]),
            )
        decoding, tiles = self.params["decoding"], self.game.num_tiles
        n_in, n_out = num_inputs(decoding, tiles), num_outputs(decoding, tiles, 20)
        self.sections = config_sections(self.params["config"], n_in, n_out)
        if self.coevolve:  # its fitness is no percentage: the study's 100 cannot have applied
            self.sections["NEAT"]["fitness_threshold"] = 1e12
        self.out_dir = Path(out_dir)
        self.checkpoint = self.out_dir / "population.json"
        self.history: list[dict[str, float]] = []
        seats = ("blue", "red") if self.coevolve else ("blue",)
        self.configs = {seat: make_config(self.sections) for seat in seats}
        self.rng = random.Random()  # neat-python's draws (models.neat.neat_draws)
        if self.checkpoint.is_file():
            self._resume()
        else:
            import neat

            self.rng.seed(int(self.params["seed"]))
            with neat_draws(self.rng):
                self.pops = {seat: neat.Population(c) for seat, c in self.configs.items()}

    # ---- checkpoints -------------------------------------------------------------------------
    def _resume(self) -> None:
        try:
            data = json.loads(self.checkpoint.read_text())
            # a parameter added since the checkpoint was written counts as its default (each new
            # parameter's default keeps the behaviour that came before it)
            saved = {**DEFAULTS, **(data.get("params") or {})}
            same = lineage_params(saved) == lineage_params(self.params)
            if data.get("case") != self.case or not same:
                raise NeatError(
                    f"{self.checkpoint} belongs to another run (case or parameters differ); "
                    "remove it to start afresh"
                )
            self.pops = {
                seat: population_from_json(data["populations"][seat], self.configs[seat])
                for seat in self.configs
            }
        except (OSError, json.JSONDecodeError, KeyError) as error:
            raise NeatError(f"cannot resume from {self.checkpoint}: {error}") from None
        self.history = data["history"]
        self.hall = data.get("hall", [])
        state = data["random_state"]  # after every population restored its own view
        self.rng.setstate((state[0], tuple(state[1]), state[2]))

    def save(self) -> None:
        populations = {seat: population_to_json(pop) for seat, pop in self.pops.items()}
        state = self.rng.getstate()
        write_json(
            self.checkpoint,
            {
                "case": self.case,
                "params": jsonable(self.params),
                "history": self.history,
                "hall": self.hall,
                "populations": populations,
                "random_state": [state[0], list(state[1]), state[2]],
            },
            compact=True,
        )

    @property
    def generation(self) -> int:
        return next(iter(self.pops.values())).generation

    # ---- one generation ------------------------------------------------------------------------
    def _networks(self, seat: str) -> tuple[list[Any], list[Network]]:
        genomes = [g for _, g in sorted(self.pops[seat].population.items())]
        config = self.configs[seat]
        return genomes, [network(genome_to_json(g, config)) for g in genomes]

    def evaluate(self) -> dict[str, tuple[list[Any], np.ndarray, np.ndarray]]:
        """Fitness of every genome (assigned to it) and the game statistics behind it."""
        if not self.coevolve:
            genomes, nets = self._networks("blue")
            count_ = len(nets)
            batch = Batch(
                np.tile(self.start, (count_, 1)),
                np.stack([np.arange(count_), np.full(count_, -1)], axis=1),
            )
            stats = self.evaluator.play(pack(nets), batch)
            scores = fitness(
                self.case if self.case != "coevolution" else "duel", stats, self.start, self.game
            )
            for genome, score in zip(genomes, scores, strict=True):
                genome.fitness = float(score)
            return {"blue": (genomes, scores, stats[:, 0])}
        blue, blue_nets = self._networks("blue")
        red, red_nets = self._networks("red")
        rng = np.random.default_rng([int(self.params["seed"]), self.generation])
        pairs = []
        for _ in range(int(self.params["opponents"])):
            reds = rng.permutation(len(red))
            blues = rng.permutation(len(blue))
            width = max(len(blue), len(red))  # the larger side's extras meet random opponents
            pairs += [
                (
                    blues[i % len(blue)] if i >= len(blue) else i,
                    reds[i] if i < len(red) else rng.integers(len(red)),
                )
                for i in range(width)
            ]
        pairs_arr = np.array(pairs, dtype=np.int64)
        seats = np.stack([pairs_arr[:, 0], len(blue) + pairs_arr[:, 1]], axis=1)
        batch = Batch(np.tile(self.start, (len(pairs_arr), 1)), seats)
        packed = pack(blue_nets + red_nets)
        stats = self.evaluator.play(packed, batch)
        bonus = float(self.params["win_bonus"])
        spar = self._spar(packed, len(blue) + len(red), bonus) if self.sparring else None
        out = {}
        for seat, genomes, column in (("blue", blue, 0), ("red", red, 1)):
            per_game = self._per_game(stats, column, bonus, self.game)
            totals = np.bincount(pairs_arr[:, column], per_game, len(genomes))
            games = np.bincount(pairs_arr[:, column], None, len(genomes))
            if spar is not None:
                first = 0 if seat == "blue" else len(blue)
                totals = totals + spar[0][first : first + len(genomes)]
                games = games + spar[1]
            scores = totals / np.maximum(games, 1)
            for genome, score in zip(genomes, scores, strict=True):
                genome.fitness = float(score)
            first = np.zeros(len(genomes), dtype=np.int64)  # one game per genome for its stats
            first[pairs_arr[::-1, column]] = np.arange(len(pairs_arr))[::-1]
            out[seat] = (genomes, scores, stats[first, column])
            if int(self.params["playoff"]) > 0:
                for best in np.argsort(-scores, kind="stable")[:2]:
                    self.hall.append(
                        {
                            "seat": seat,
                            "generation": self.generation,
                            "fitness": float(scores[best]),
                            "genome": genome_to_json(genomes[best], self.configs[seat]),
                        }
                    )
        return out

    def _against_fixed(self, packed, networks: int, rounds: int, base: int, opening: int) -> list:
        """Every network's games against the fixed opponents: `rounds` against the fixed red
        (`sparring_red`, seed base + k, after `opening` random moves; the network in seat 0 of
        the red's preset, or with `sparring_seats: both` in seat k % 2 of the duel against the
        game's sparring_action) and `rounds` against a uniformly random player (seats
        alternating, random moves seeded by base). [(game, stats, network of each game, its
        seat), ...] for the two kinds."""
        from models.neat_eval import RANDOM_SEAT, SCRIPTED_SEAT

        spar = self.sparring.game
        red_starts = np.stack([opened(spar, base + k, opening) for k in range(rounds)])
        index = np.repeat(np.arange(networks), rounds)
        seat = np.tile(np.arange(rounds) % 2, networks)

        def seated(network_seat: np.ndarray, partner: int) -> np.ndarray:
            seats = np.full((len(index), 2), partner, dtype=np.int64)
            seats[np.arange(len(index)), network_seat] = index
            return seats

        if self.params["sparring_seats"] == "both":
            fixed_seat, partner = seat, SCRIPTED_SEAT
        else:  # the preset's red moves inside the kernel; its seat never moves
            fixed_seat, partner = np.zeros_like(seat), -1
        first = Batch(red_starts[np.tile(np.arange(rounds), networks)], seated(fixed_seat, partner))
        second = Batch(
            np.tile(self.start, (len(index), 1)), seated(seat, RANDOM_SEAT), random_seed=base
        )
        return [
            (spar, self.sparring.play(packed, first), index, fixed_seat),
            (self.game, self.evaluator.play(packed, second), index, seat),
        ]

    def _spar(self, packed, networks: int, bonus: float) -> tuple[np.ndarray, int]:
        """(summed fitness per network, games each) against the fixed opponents, seeds varying
        with the generation."""
        rounds = int(self.params["sparring"])
        totals = np.zeros(networks)
        opening = int(self.params["sparring_opening"])
        for game, stats, index, seat in self._against_fixed(
            packed, networks, rounds, self.generation * 7919, opening
        ):
            mine = np.where(
                seat == 0,
                self._per_game(stats, 0, bonus, game),
                self._per_game(stats, 1, bonus, game),
            )
            totals += np.bincount(index, mine, networks)
        return totals, 2 * rounds

    def playoff(self, genomes: list[dict[str, Any]]) -> np.ndarray:
        """First round: score (wins + draws / 2 over games) of each genome against the fixed
        opponents on seeds no generation trained on, after `playoff_opening` random moves."""
        rounds = int(self.params["playoff"])
        opening = int(self.params["playoff_opening"])
        scores = np.zeros(len(genomes))
        packed = pack([network(g) for g in genomes])
        for _, stats, index, seat in self._against_fixed(
            packed, len(genomes), rounds, 10**6, opening
        ):
            result = stats[np.arange(len(index)), seat, 10]  # RETURN of the network's seat
            scores += np.bincount(index, (result + 1) / 2, len(genomes))
        return scores / (2 * rounds)

    def final_round(self, genomes: list[dict[str, Any]]) -> np.ndarray:
        """Score of each genome against every `playoff_agents` spec (search agents the numba
        loop cannot seat): `playoff_games` games each on the duel, seeded openings of
        `playoff_opening` moves on seeds no evaluation uses, sides swapped."""
        import tempfile

        from agents import make
        from engine.match import play_match

        games, opening = int(self.params["playoff_games"]), int(self.params["playoff_opening"])
        scores = np.zeros(len(genomes))
        with tempfile.TemporaryDirectory() as folder:
            for i, genome in enumerate(genomes):
                path = Path(folder) / f"genome-{i}.json"
                path.write_text(json.dumps(genome))
                mine = make(f"neat:genome={path}", self.game, 0)  # deterministic, reusable
                for spec in self.params["playoff_agents"]:
                    match = play_match(
                        self.game,
                        lambda _, mine=mine: mine,
                        lambda seed, spec=spec: make(spec, self.game, seed),
                        games,
                        seed=10**6,
                        opening=opening,
                    )
                    scores[i] += match.score
        return scores / len(self.params["playoff_agents"])

    def choose(self) -> tuple[np.ndarray, dict[str, float]]:
        """The hall of fame ranked best first, and the figures that ranked its head. The first
        round orders every entry (later generations first among equals: the fixed opponents
        often cannot tell them apart); with `playoff_agents`, its best `playoff_shortlist`
        are reordered by the final round."""
        first = self.playoff([entry["genome"] for entry in self.hall])
        generation = np.array([entry["generation"] for entry in self.hall])
        ranked = np.lexsort((-generation, -first))
        figures = {"playoff_score": float(first[ranked[0]])}
        if self.params["playoff_agents"]:
            short = ranked[: int(self.params["playoff_shortlist"])]
            final = self.final_round([self.hall[int(i)]["genome"] for i in short])
            order = np.argsort(-final, kind="stable")
            ranked = np.concatenate([short[order], ranked[len(short) :]])
            figures = {
                "playoff_score": float(first[ranked[0]]),
                "final_score": float(final[order[0]]),
                "final_games": float(
                    int(self.params["playoff_games"]) * len(self.params["playoff_agents"])
                ),
                "final_worst": float(final.min()),
            }
        figures["playoff_generation"] = float(self.hall[int(ranked[0])]["generation"])
        return ranked, figures

    def _per_game(self, stats: np.ndarray, seat: int, bonus: float, game: Game) -> np.ndarray:
        return fitness(
            "duel", stats, self.start, game, seat, bonus, float(self.params["margin_bonus"])
        )

    def step(self) -> dict[str, float]:
        """Evaluates the current generation, records it, then breeds the next one."""
        started = time.perf_counter()
        evaluated = self.evaluate()
        seconds = time.perf_counter() - started
        row: dict[str, float] = {"generation": float(self.generation), "eval_seconds": seconds}
        for seat, (genomes, scores, stats) in evaluated.items():
            best = int(np.argmax(scores))
            net = network(genome_to_json(genomes[best], self.configs[seat]))
            prefix = "" if seat == "blue" else "red_"
            row.update(
                {
                    f"{prefix}best_fitness": float(scores[best]),
                    f"{prefix}mean_fitness": float(np.mean(scores)),
                    f"{prefix}species": float(len(self.pops[seat].species.species)),
                    f"{prefix}hidden": float(net.hidden),
                    f"{prefix}connections": float(net.connections),
                    f"{prefix}rounds": float(stats[best, 0]),
                    f"{prefix}won": float(stats[best, 10] > 0),
                    f"{prefix}guided_share": float(stats[best, 4] / max(stats[best, 0], 1)),
                }
            )
        self.history.append(row)
        with neat_draws(self.rng):
            for pop in self.pops.values():
                pop.run(lambda genomes, config: None, 1)  # fitness is assigned: breed only
        return row

    def reached_threshold(self) -> bool:
        threshold = float(self.sections["NEAT"]["fitness_threshold"])
        return bool(self.history) and self.history[-1]["best_fitness"] >= threshold

    def run(self, progress: Callable[[dict[str, float]], None] | None = None) -> CaseResult:
        started = time.perf_counter()
        while len(self.history) < int(self.params["generations"]):
            row = self.step()
            self.save()
            if progress:
                progress(row)
            if self.reached_threshold():
                break
        return self.result(time.perf_counter() - started)

    def champion(self, seat: str = "blue") -> dict[str, Any]:
        """The best genome ever evaluated (neat-python's best_genome)."""
        return genome_to_json(self.pops[seat].best_genome, self.configs[seat])

    def result(self, seconds: float) -> CaseResult:
        champion = self.champion("blue")
        rival = self.champion("red") if self.coevolve else None
        chosen = None
        if self.hall:  # the hall of fame's best against fixed opponents, either side
            ranked, figures = self.choose()
            chosen = self.hall[int(ranked[0])]
            champion = {**chosen["genome"], "fitness": chosen["fitness"]}
            rival = next(
                (
                    {**self.hall[int(i)]["genome"], "fitness": self.hall[int(i)]["fitness"]}
                    for i in ranked
                    if self.hall[int(i)]["seat"] != chosen["seat"]
                ),
                rival,
            )
            chosen = figures
        nets = [network(champion)] + ([network(rival)] if rival else [])
        seats = np.array([[0, 1 if rival else -1]], dtype=np.int64)
        stats = self.evaluator.play(pack(nets), Batch(self.start[None, :], seats), trace_game=0)
        summary = {name: float(stats[0, 0, i]) for i, name in enumerate(STAT_NAMES)}
        summary.update(chosen or {})
        return CaseResult(
            self.case,
            self.params,
            self.history,
            champion,
            summary,
            [int(a) for a in self.evaluator.last_trace],
            rival,
            seconds,
        )
