"""NEAT neuroevolution on territory (study 003): the family `neat`, registered as `territory-neat`.

Read top to bottom: the study's parameter table (§4) as defaults, turned into a neat-python
config file at run time; genomes and whole populations as JSON (never neat-python's pickled
checkpoints); one training case = evolve, evaluate every generation on the numba engine
(models.neat_eval), checkpoint, repeat. Cases 1-4 evolve blue against a preset; case 5 coevolves
a blue and a red population on the symmetric duel (one game per genome, as the study pairs them).

Seeding: neat-python draws from Python's `random`, seeded once per run; evaluation draws nothing
(the scripted red's randomness is a hash of the position), so a run is reproducible, and a
checkpoint stores `random`'s state so that a resumed run continues exactly as if never stopped.
"""

from __future__ import annotations

import functools
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np

from agents.neat_codec import num_outputs
from agents.neat_network import GENOME_FORMAT, Network, network, pack
from engine import load_game
from engine.protocol import Game, GameError
from models.neat_eval import Batch, Evaluator, fitness

POPULATION_FORMAT = "gridbots-neat-population/1"

#: study §4, every value as listed (the study's "con_delete_prob" is neat-python's conn_delete_prob)
STUDY_CONFIG: dict[str, dict[str, Any]] = {
    "NEAT": {
        "fitness_criterion": "max",
        "fitness_threshold": 100.0,
        "no_fitness_termination": False,
        "pop_size": 100,
        "reset_on_extinction": True,
    },
    "DefaultStagnation": {
        "species_fitness_func": "mean",
        "max_stagnation": 15,
        "species_elitism": 0,
    },
    "DefaultReproduction": {"elitism": 1, "survival_threshold": 0.2, "min_species_size": 2},
    "DefaultSpeciesSet": {"compatibility_threshold": 3.0},
    "DefaultGenome": {
        "activation_default": "sigmoid",
        "activation_mutate_rate": 0.0,
        "activation_options": "sigmoid",
        "aggregation_default": "sum",
        "aggregation_mutate_rate": 0.0,
        "aggregation_options": "sum",
        "compatibility_disjoint_coefficient": 1.0,
        "compatibility_weight_coefficient": 1.0,
        "enabled_default": True,
        "enabled_mutate_rate": 0.1,
        "feed_forward": True,
        "initial_connection": "full",
        "node_add_prob": 0.3,
        "node_delete_prob": 0.3,
        "conn_add_prob": 0.3,
        "conn_delete_prob": 0.3,
        "num_hidden": 0,
        "bias_init_mean": 0.0,
        "bias_init_stdev": 1.0,
        "bias_init_type": "gaussian",
        "bias_replace_rate": 0.1,
        "bias_mutate_rate": 0.9,
        "bias_mutate_power": 0.5,
        "bias_max_value": 30.0,
        "bias_min_value": -30.0,
        "weight_init_mean": 0.0,
        "weight_init_stdev": 1.0,
        "weight_init_type": "gaussian",
        "weight_replace_rate": 0.1,
        "weight_mutate_rate": 0.9,
        "weight_mutate_power": 0.5,
        "weight_max_value": 30.0,
        "weight_min_value": -30.0,
        "response_init_mean": 1.0,
        "response_init_stdev": 0.0,
        "response_init_type": "gaussian",
        "response_replace_rate": 0.0,
        "response_mutate_rate": 0.0,
        "response_mutate_power": 0.0,
        "response_max_value": 1.0,
        "response_min_value": 1.0,
    },
}

#: the five training cases (§6): the preset each plays and the seat(s) evolved
CASES = {
    "expand-alone": "expand-alone",
    "beat-red-easy": "beat-red-easy",
    "beat-red-hard": "beat-red-hard",
    "against-red": "against-red",
    "coevolution": "duel",
}

#: every training parameter (params.yaml territory.neat overrides any of them)
DEFAULTS: dict[str, Any] = {
    "generations": 10,
    "seed": 0,
    "size": 6,
    "rounds": 0,  # 0: the preset's limit (study: 5,000 / 500 / 5,000 / 500; duel: 100)
    "decoding": "guided",  # or "masked" (argmax over legal moves of a wider output)
    "stale_limit": 3,  # the study stops a game once a position repeats more than 3 times
    "red_seed": 0,  # seed of the scripted red (against-red): the same red for every genome
    "payoff": [10.0, 1.0, -10.0, -1.5],  # coevolution per move: own tiles, own troops, enemy
    "win_bonus": 0.0,  # ... tiles, enemy troops gained; plus win_bonus x the game's result
    "opponents": 1,  # coevolution: games per genome per generation (study: 1)
    "workers": 2,
    "config": {},  # overrides of STUDY_CONFIG, e.g. {"NEAT": {"pop_size": 50}}
}


class NeatError(GameError):
    """Bad NEAT parameters or an unreadable checkpoint: one line, exit code 2."""


# ---- neat-python config, generated from the parameters -------------------------------------
def config_sections(overrides: dict[str, dict[str, Any]], inputs: int, outputs: int) -> dict:
    sections = {name: dict(values) for name, values in STUDY_CONFIG.items()}
    for name, values in (overrides or {}).items():
        if name not in sections or not isinstance(values, dict):
            raise NeatError(f"neat config: unknown section {name!r}; known: {list(sections)}")
        sections[name].update(values)
    sections["DefaultGenome"].update(num_inputs=inputs, num_outputs=outputs)
    return sections


def config_text(sections: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {value}" for key, value in values.items()]
        lines.append("")
    return "\n".join(lines)


@functools.cache
def genome_class():
    """neat-python's DefaultGenome with an O(genes) crossover.

    neat-python 2.0 checks every inherited connection for a cycle (O(genes) each, so O(genes^2)
    per child: minutes per generation for the masked decoding's 3,348-gene genomes). A child
    only inherits connections whose keys are in the fitter parent, which is acyclic, so every
    check passes: skipping them gives the very same genomes and draws the same random numbers.
    """
    import neat

    class DefaultGenome(neat.DefaultGenome):  # the name is the config section neat reads
        def configure_crossover(self, genome1, genome2, config):
            if genome1.fitness > genome2.fitness:
                parent1, parent2 = genome1, genome2
            else:
                parent1, parent2 = genome2, genome1
            by_innovation1 = {cg.innovation: cg for cg in parent1.connections.values()}
            by_innovation2 = {cg.innovation: cg for cg in parent2.connections.values()}
            for innovation in set(by_innovation1) | set(by_innovation2):
                cg1, cg2 = by_innovation1.get(innovation), by_innovation2.get(innovation)
                if cg1 is None:
                    continue  # only in the less fit parent: not inherited
                same = cg2 is not None and cg1.key == cg2.key
                gene = cg1.crossover(cg2) if same else cg1.copy()
                self.connections[gene.key] = gene
            for key, ng1 in parent1.nodes.items():
                ng2 = parent2.nodes.get(key)
                self.nodes[key] = ng1.copy() if ng2 is None else ng1.crossover(ng2)

    return DefaultGenome


def make_config(sections: dict[str, dict[str, Any]]):
    """A neat.Config from the sections (written to a temporary file neat-python reads)."""
    import neat

    handle, path = tempfile.mkstemp(suffix=".ini", prefix="neat-")
    try:
        with os.fdopen(handle, "w") as f:
            f.write(config_text(sections))
        return neat.Config(
            genome_class(),
            neat.DefaultReproduction,
            neat.DefaultSpeciesSet,
            neat.DefaultStagnation,
            path,
        )
    except (ValueError, RuntimeError, KeyError) as error:
        raise NeatError(f"neat config: {error}") from None
    finally:
        os.unlink(path)


# ---- genomes and populations as JSON ---------------------------------------------------------
def genome_to_json(genome, config) -> dict[str, Any]:
    gc = config.genome_config
    return {
        "format": GENOME_FORMAT,
        "key": int(genome.key),
        "fitness": None if genome.fitness is None else float(genome.fitness),
        "num_inputs": gc.num_inputs,
        "num_outputs": gc.num_outputs,
        "nodes": [
            {
                "id": int(k),
                "bias": n.bias,
                "response": n.response,
                "activation": n.activation,
                "aggregation": n.aggregation,
            }
            for k, n in genome.nodes.items()
        ],
        "connections": [
            {
                "from": int(a),
                "to": int(b),
                "weight": c.weight,
                "enabled": bool(c.enabled),
                "innovation": int(c.innovation),
            }
            for (a, b), c in genome.connections.items()
        ],
    }


def genome_from_json(data: dict[str, Any], config):
    from neat.genes import DefaultConnectionGene, DefaultNodeGene

    genome = config.genome_type(int(data["key"]))
    genome.fitness = data.get("fitness")
    for n in data["nodes"]:
        node = DefaultNodeGene(int(n["id"]))
        node.bias, node.response = float(n["bias"]), float(n["response"])
        node.activation, node.aggregation = n["activation"], n["aggregation"]
        node.time_constant = 1.0
        genome.nodes[node.key] = node
    for c in data["connections"]:
        gene = DefaultConnectionGene((int(c["from"]), int(c["to"])), int(c["innovation"]))
        gene.weight, gene.enabled = float(c["weight"]), bool(c["enabled"])
        genome.connections[gene.key] = gene
    return genome


def _next_of(counter) -> int:
    """The value an itertools.count would yield next (it is consumed, so rebuild it after)."""
    return int(next(counter))


def population_to_json(pop) -> dict[str, Any]:
    """Everything neat-python needs to go on exactly: genomes, species, counters, RNG state."""
    config = pop.config
    reproduction, species_set = pop.reproduction, pop.species
    genome_next = _next_of(reproduction.genome_indexer)
    reproduction.genome_indexer = count(genome_next)
    species_next = _next_of(species_set.indexer)
    species_set.indexer = count(species_next)
    node_indexer = config.genome_config.node_indexer
    node_next = None
    if node_indexer is not None:
        node_next = _next_of(node_indexer)
        config.genome_config.node_indexer = count(node_next)
    tracker = reproduction.innovation_tracker
    state = random.getstate()
    return {
        "format": POPULATION_FORMAT,
        "generation": pop.generation,
        "genomes": [genome_to_json(g, config) for g in pop.population.values()],
        "species": [
            {
                "key": s.key,
                "created": s.created,
                "last_improved": s.last_improved,
                "representative": s.representative.key,
                "members": sorted(s.members),
                "fitness": s.fitness,
                "adjusted_fitness": s.adjusted_fitness,
                "fitness_history": list(s.fitness_history),
            }
            for s in species_set.species.values()
        ],
        "genome_to_species": {str(k): v for k, v in species_set.genome_to_species.items()},
        "next_genome": genome_next,
        "next_species": species_next,
        "next_node": node_next,
        "innovation": {
            "global": tracker.global_counter,
            "generation": [[*key, value] for key, value in tracker.generation_innovations.items()],
        },
        "best": None if pop.best_genome is None else genome_to_json(pop.best_genome, config),
        "random_state": [state[0], list(state[1]), state[2]],
    }


def population_from_json(data: dict[str, Any], config):
    """A neat.Population that continues the saved one (and Python's `random` with it)."""
    import neat
    from neat.species import DefaultSpeciesSet, Species

    if data.get("format") != POPULATION_FORMAT:
        raise NeatError(f"not a {POPULATION_FORMAT} checkpoint")
    genomes = {g["key"]: genome_from_json(g, config) for g in data["genomes"]}
    species_set = DefaultSpeciesSet(config.species_set_config, neat.reporting.ReporterSet())
    for s in data["species"]:
        species = Species(s["key"], s["created"])
        species.last_improved = s["last_improved"]
        species.update(genomes[s["representative"]], {k: genomes[k] for k in s["members"]})
        species.fitness, species.adjusted_fitness = s["fitness"], s["adjusted_fitness"]
        species.fitness_history = list(s["fitness_history"])
        species_set.species[s["key"]] = species
    species_set.genome_to_species = {int(k): v for k, v in data["genome_to_species"].items()}
    species_set.indexer = count(data["next_species"])
    pop = neat.Population(config, initial_state=(genomes, species_set, data["generation"]))
    pop.reproduction.genome_indexer = count(data["next_genome"])
    tracker = pop.reproduction.innovation_tracker
    tracker.global_counter = data["innovation"]["global"]
    tracker.generation_innovations = {
        (a, b, kind): value for a, b, kind, value in data["innovation"]["generation"]
    }
    config.genome_config.innovation_tracker = tracker
    if data["next_node"] is not None:
        config.genome_config.node_indexer = count(data["next_node"])
    if data["best"] is not None:
        pop.best_genome = genome_from_json(data["best"], config)
    version, internal, gauss = data["random_state"]
    random.setstate((version, tuple(internal), gauss))
    return pop


def write_json(path: Path, data: Any, compact: bool = False) -> Path:
    """Through a temporary name and a rename: a killed run never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=1)
    temp.write_text(text + "\n")
    os.replace(temp, path)
    return path


# ---- training ------------------------------------------------------------------------------
def checked(params: dict[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS updated by `params`; unknown keys refused with their names."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise NeatError(f"neat: unknown parameter(s) {unknown}; known: {', '.join(DEFAULTS)}")
    merged = {**DEFAULTS, **params}
    if merged["decoding"] not in ("guided", "masked"):
        raise NeatError(f"neat: decoding must be guided or masked, got {merged['decoding']!r}")
    if int(merged["generations"]) < 1 or int(merged["opponents"]) < 1:
        raise NeatError("neat: generations and opponents must be >= 1")
    return merged


def case_game(case: str, params: dict[str, Any]) -> Game:
    if case not in CASES:
        raise NeatError(f"unknown training case {case!r}; known: {', '.join(CASES)}")
    return load_game(
        "territory", size=int(params["size"]), preset=CASES[case], rounds=int(params["rounds"])
    )


def network_game_spec(game: Game) -> str:
    """The game a network plays: the map without the preset (a network plays any preset)."""
    size = game.params["size"]
    return "territory" if size == game.default_params["size"] else f"territory:size={size}"


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
        n_out = num_outputs(self.params["decoding"], self.game.num_tiles, 20)
        self.sections = config_sections(self.params["config"], self.game.num_tiles, n_out)
        if self.coevolve:  # its fitness is no percentage: the study's 100 cannot have applied
            self.sections["NEAT"]["fitness_threshold"] = 1e12
        self.out_dir = Path(out_dir)
        self.checkpoint = self.out_dir / "population.json"
        self.history: list[dict[str, float]] = []
        seats = ("blue", "red") if self.coevolve else ("blue",)
        self.configs = {seat: make_config(self.sections) for seat in seats}
        if self.checkpoint.is_file():
            self._resume()
        else:
            import neat

            random.seed(int(self.params["seed"]))
            self.pops = {seat: neat.Population(c) for seat, c in self.configs.items()}

    # ---- checkpoints -------------------------------------------------------------------------
    def _resume(self) -> None:
        try:
            data = json.loads(self.checkpoint.read_text())
            if data.get("case") != self.case or _lineage(data.get("params")) != _lineage(
                self.params
            ):
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
        state = data["random_state"]  # after every population restored its own view
        random.setstate((state[0], tuple(state[1]), state[2]))

    def save(self) -> None:
        populations = {seat: population_to_json(pop) for seat, pop in self.pops.items()}
        state = random.getstate()
        write_json(
            self.checkpoint,
            {
                "case": self.case,
                "params": _jsonable(self.params),
                "history": self.history,
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
        stats = self.evaluator.play(pack(blue_nets + red_nets), batch)
        bonus = float(self.params["win_bonus"])
        out = {}
        for seat, genomes, column in (("blue", blue, 0), ("red", red, 1)):
            per_game = fitness("duel", stats, self.start, self.game, column, bonus)
            totals = np.bincount(pairs_arr[:, column], per_game, len(genomes))
            games = np.maximum(np.bincount(pairs_arr[:, column], None, len(genomes)), 1)
            scores = totals / games
            for genome, score in zip(genomes, scores, strict=True):
                genome.fitness = float(score)
            first = np.zeros(len(genomes), dtype=np.int64)  # one game per genome for its stats
            first[pairs_arr[::-1, column]] = np.arange(len(pairs_arr))[::-1]
            out[seat] = (genomes, scores, stats[first, column])
        return out

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
        nets = [network(champion)] + ([network(rival)] if rival else [])
        seats = np.array([[0, 1 if rival else -1]], dtype=np.int64)
        stats = self.evaluator.play(pack(nets), Batch(self.start[None, :], seats), trace_game=0)
        names = (
            "moves",
            "productions",
            "attacks",
            "transports",
            "guided",
            "payoff",
            "tiles",
            "troops",
            "opp_tiles",
            "opp_troops",
            "return",
            "stale",
        )
        summary = {name: float(stats[0, 0, i]) for i, name in enumerate(names)}
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


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(params, default=str))


#: parameters a checkpoint may be resumed with different values of (how far, how many threads)
RESUMABLE = ("generations", "workers")


def _lineage(params: dict[str, Any] | None) -> dict[str, Any]:
    """The parameters that make a run's evolution what it is."""
    return {k: v for k, v in _jsonable(params or {}).items() if k not in RESUMABLE}
