"""NEAT neuroevolution on territory (study 003): the family `neat`, registered as `territory-neat`.

This module holds what a run is made of: the study's parameter table (§4) as defaults, turned
into a neat-python config file at run time (no hand-edited file), the training parameters, and
genomes and whole populations as JSON (never neat-python's pickled checkpoints). Training is
models.neat_train, fitness evaluation models.neat_eval, MLflow and export models.neat_track.

Seeding: neat-python draws from Python's `random` functions, which a run points at a generator of
its own seeded once per run (`neat_draws`: a cluster worker's or a flow's other threads draw
from the process-wide one too); evaluation draws only from its own seeded generators, so a run is
reproducible in any process, and a checkpoint stores the generator's state so that a resumed
run continues exactly as if never stopped.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import tempfile
from collections.abc import Iterator
from itertools import count
from typing import Any

from agents.neat.codec import DECODINGS
from agents.neat.network import GENOME_FORMAT
from engine import load_game
from engine.files import write_json  # noqa: F401 (neat_track imports it from here)
from engine.protocol import Game, GameError

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

#: models.base's contract: NEAT learns by playing, its networks read the board's tiles
ENCODINGS: tuple[str, ...] = ()
ENCODING = "tiles"
GAMES = ("territory",)  # the training cases are its presets, the decodings its tile moves

#: every training parameter (params.yaml territory.neat overrides any of them)
DEFAULTS: dict[str, Any] = {
    "generations": 10,
    "seed": 0,
    "size": 6,
    "rounds": 0,  # 0: the preset's limit (study: 5,000 / 500 / 5,000 / 500; duel: 100)
    "decoding": "guided",  # "masked": argmax over legal moves of a wider output; "scored": a
    # network scoring each legal move from its features; "afterstate": a network valuing the
    # position each legal move leads to (agents.neat.codec)
    "stale_limit": 3,  # the study stops a game once a position repeats more than 3 times
    "red_seed": 0,  # seed of the scripted red (against-red): the same red for every genome
    "payoff": [10.0, 1.0, -10.0, -1.5],  # coevolution per move: own tiles, own troops, enemy
    "win_bonus": 0.0,  # ... tiles, enemy troops gained; plus win_bonus x the game's result
    "margin_bonus": 0.0,  # ... plus margin_bonus x (own - enemy tiles) / tiles at the end
    "opponents": 1,  # coevolution: games per genome per generation (study: 1)
    "sparring": 0,  # coevolution: games per genome against the scripted red and against a
    # random player each (study: 0)
    "playoff": 0,  # coevolution: choose the champion among each generation's best two of each
    # population by this many games against each fixed opponent (0: neat's best genome, study)
    "sparring_red": "study",  # coevolution: the red of sparring and playoff games: the study's
    # scripted red, or "greedy" (territory's greedy_action, which beats mcts:sims=200)
    "sparring_seats": "blue",  # coevolution: "blue" plays the fixed red's games in the blue
    # seat of its preset; "both" plays them on the duel itself, the network in either seat
    # against the game's sparring_action (greedy), so it also learns to move second
    "sparring_opening": 0,  # coevolution: random first moves of blue (red answering) before
    # each game against the fixed red, so a deterministic red does not replay one game
    "playoff_opening": 4,  # coevolution playoff: seeded random first moves before each game
    # against the fixed red (a deterministic red from one start replays one game)
    "playoff_agents": [],  # coevolution playoff, final round: agent specs (e.g. "mcts:sims=50")
    # the first round's best `playoff_shortlist` meet, `playoff_games` games each (seeded
    # openings, sides swapped); the best there is the champion ([]: the first round decides)
    "playoff_shortlist": 8,
    "playoff_games": 10,
    "workers": 2,
    "config": {},  # overrides of STUDY_CONFIG, e.g. {"NEAT": {"pop_size": 50}}
}


#: the duel preset of each `sparring_red`: red played by the study's policy or the greedy one
SPARRING_PRESETS = {"study": "duel-vs-red", "greedy": "duel-vs-greedy"}


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


#: neat-python's functions that draw, bound from `random` when its modules were imported
NEAT_DRAWS = {
    "attributes": ("choice", "gauss", "random", "uniform", "randint"),
    "genes": ("random",),
    "genome": ("choice", "random", "shuffle"),
}


@contextlib.contextmanager
def neat_draws(rng: random.Random) -> Iterator[random.Random]:
    """neat-python draws from `rng` inside the block, not from `random`'s process-wide
    generator, which other threads of the process (a Dask worker's, Prefect's clients) may draw
    from between two of a run's draws: a seeded run breeds the same genomes in any process (a
    plain one gets exactly the draws it got before). Its modules' functions are swapped back
    afterwards, so neat-python used elsewhere is untouched."""
    import importlib

    saved = []
    try:
        for name, functions in NEAT_DRAWS.items():
            module = importlib.import_module(f"neat.{name}")
            for function in functions:
                saved.append((module, function, getattr(module, function)))
                setattr(module, function, getattr(rng, function))
        for name in ("population", "reproduction"):  # these call random.seed / random.choice
            module = importlib.import_module(f"neat.{name}")
            saved.append((module, "random", module.random))
            module.random = rng
        yield rng
    finally:
        for module, function, original in reversed(saved):
            setattr(module, function, original)


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


def reproduction_class():
    """neat-python's DefaultReproduction, able to shrink a generation back to pop_size.

    neat-python 2.0 trims an oversized spawn one genome per species in one pass over the
    species (largest first), then gives up with "could not match pop_size": a generation where
    a few large species must lose more genomes than there are species above the minimum crashed
    a run (beat-red-easy, masked decoding, seed 1, generation 10). Here the passes go on while
    one removes something, in the same order, so every run the library could finish is
    unchanged.
    """
    import neat

    class DefaultReproduction(neat.DefaultReproduction):  # the config section's name
        def _adjust_spawn_exact(self, spawn_amounts, pop_size, min_species_size):
            amounts = list(spawn_amounts)
            excess = sum(amounts) - pop_size
            if excess <= 0 or len(amounts) * min_species_size > pop_size:
                return super()._adjust_spawn_exact(amounts, pop_size, min_species_size)
            order = sorted(range(len(amounts)), key=lambda k: amounts[k], reverse=True)
            while excess > 0:
                trimmed = 0
                for k in order:
                    if excess == 0:
                        break
                    if amounts[k] > min_species_size:
                        amounts[k] -= 1
                        excess -= 1
                        trimmed += 1
                if not trimmed:  # unreachable while the minima fit in pop_size
                    return super()._adjust_spawn_exact(amounts, pop_size, min_species_size)
            return amounts

    return DefaultReproduction


def make_config(sections: dict[str, dict[str, Any]]):
    """A neat.Config from the sections (written to a temporary file neat-python reads)."""
    import neat

    handle, path = tempfile.mkstemp(suffix=".ini", prefix="neat-")
    try:
        with os.fdopen(handle, "w") as f:
            f.write(config_text(sections))
        return neat.Config(
            genome_class(),
            reproduction_class(),
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
    wanted = config.genome_config.num_inputs
    if any(int(g.get("num_inputs", wanted)) != wanted for g in data["genomes"]):
        raise NeatError(  # e.g. scored genomes of an older feature count (agents.neat.codec)
            f"the checkpoint's networks read another number of inputs than {wanted}; "
            "remove it to start afresh"
        )
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


# ---- training ------------------------------------------------------------------------------
def checked(params: dict[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS updated by `params`; unknown keys refused with their names."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise NeatError(f"neat: unknown parameter(s) {unknown}; known: {', '.join(DEFAULTS)}")
    merged = {**DEFAULTS, **params}
    if merged["decoding"] not in DECODINGS:
        wanted = ", ".join(DECODINGS)
        raise NeatError(f"neat: decoding must be one of {wanted}, got {merged['decoding']!r}")
    if merged["sparring_red"] not in SPARRING_PRESETS:
        red = merged["sparring_red"]
        raise NeatError(f"neat: sparring_red must be study or greedy, got {red!r}")
    if merged["sparring_seats"] not in ("blue", "both"):
        raise NeatError(f"neat: sparring_seats is blue or both, got {merged['sparring_seats']!r}")
    if merged["sparring_seats"] == "both" and merged["sparring_red"] != "greedy":
        raise NeatError(
            "neat: sparring_seats both seats the game's greedy player: set sparring_red: greedy"
        )
    if int(merged["generations"]) < 1 or int(merged["opponents"]) < 1:
        raise NeatError("neat: generations and opponents must be >= 1")
    agents = merged["playoff_agents"]
    if not isinstance(agents, list | tuple) or not all(isinstance(a, str) for a in agents):
        raise NeatError(f"neat: playoff_agents is a list of agent specs, got {agents!r}")
    if int(merged["playoff_shortlist"]) < 1 or int(merged["playoff_games"]) < 2:
        raise NeatError("neat: playoff_shortlist must be >= 1 and playoff_games >= 2")
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


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(params, default=str))


#: parameters a checkpoint may be resumed with different values of (how far, how many threads,
#: how the champion is chosen once evolution is over)
RESUMABLE = (
    "generations",
    "workers",
    "playoff_opening",
    "playoff_agents",
    "playoff_shortlist",
    "playoff_games",
)


def lineage_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """The parameters that make a run's evolution what it is."""
    return {k: v for k, v in jsonable(params or {}).items() if k not in RESUMABLE}


# ---- what a run records of a network evolved by playing (models.base's contract) ------------
def source(game: str, params: dict[str, Any]) -> dict[str, str]:
    """What stands for the dataset of an evolved champion: its training case (`params["case"]`)."""
    return {
        "game": game,
        "dataset.path": f"neuroevolution:{params.get('case', '?')}",
        "dataset.sha256": "-",
        "dataset.manifest_hash": "-",
        "dataset.encoding": ENCODING,
    }


def inputs(game: str, params: dict[str, Any]) -> list[Any]:
    """The MLflow input of a seed's run: what it evolved against (its case: a preset or
    coevolution, and the rivals its parameters name); `params` carries `case`."""
    from models.run_inputs import played_input

    case = params.get("case", "?")
    trained = {k: v for k, v in params.items() if k != "case"}
    setting = {"game": game, "case": case, "seed": params.get("seed"), "params": trained}
    return [played_input(f"territory {case} evolution", "evolution", setting)]


def curves(history: list[dict[str, float]]) -> dict[str, list[tuple[int, float]]]:
    """Per-generation rows as (generation, value) points."""
    out: dict[str, list[tuple[int, float]]] = {}
    for row in history:
        for key, value in row.items():
            if key != "generation":
                out.setdefault(key, []).append((int(row["generation"]), float(value)))
    return out
