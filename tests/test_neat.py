"""NEAT on territory: networks against neat-python's own, ONNX parity, the study's decoding and
fitness figures, seeded and resumable training, and the `neat:` agent."""

from __future__ import annotations

import collections
import json
import random

import numpy as np
import pytest

from agents import make
from agents.neat.codec import DECODINGS, decode, encode, forward, forward_logit
from agents.neat.network import ONNX_ACTIVATIONS, network, pack, to_onnx
from engine import load_game
from engine.games.territory import HEADER, IDS, MAX_TROOPS
from models.neat import (
    NeatError,
    config_sections,
    genome_from_json,
    genome_to_json,
    make_config,
)
from models.neat_eval import MOVES, OPP_TILES, OPP_TROOPS, RETURN, STAT_NAMES, TILES, fitness
from models.neat_train import Trainer

TINY = {"config": {"NEAT": {"pop_size": 16}}, "workers": 2}


def evolved_genomes(count: int, outputs: int = 4, mutations: int = 40, seed: int = 3):
    """Genomes grown by neat-python's own mutation operators: hidden nodes, disabled links."""
    config = make_config(config_sections({}, 36, outputs))
    random.seed(seed)
    import neat

    pop = neat.Population(config)
    genomes = list(pop.population.values())[:count]
    for genome in genomes:
        for _ in range(mutations):
            genome.mutate(config.genome_config)
    return genomes, config


def neat_outputs(genome, config, inputs: np.ndarray) -> np.ndarray:
    import neat

    net = neat.nn.FeedForwardNetwork.create(genome, config)
    return np.array([net.activate(list(row)) for row in inputs])


def test_numba_and_onnx_networks_match_neat_pythons_own():
    import onnxruntime as ort

    genomes, config = evolved_genomes(6)
    assert max(len(g.nodes) for g in genomes) > 4  # hidden nodes were added
    inputs = np.random.default_rng(0).uniform(-1, 1, (20, 36))
    nets = [network(genome_to_json(g, config)) for g in genomes]
    packed = pack(nets)
    values, out = np.zeros(packed.width), np.zeros(4)
    for index, (genome, net) in enumerate(zip(genomes, nets, strict=True)):
        expected = neat_outputs(genome, config, inputs)
        mine = []
        for row in inputs:
            forward(index, *packed.arrays(), values, row, out)
            mine.append(out.copy())
        assert np.max(np.abs(np.array(mine) - expected)) < 1e-12
        session = ort.InferenceSession(to_onnx(net), providers=["CPUExecutionProvider"])
        onnx_out, onnx_logits = session.run(None, {"inputs": inputs.astype(np.float32)})
        assert np.max(np.abs(onnx_out - expected)) < 1e-5
        # the logits: each output before its activation, neat's scale included, as numba's
        scales = [ONNX_ACTIVATIONS[net.activation[o]][0] for o in range(4)]
        mine = []
        for row in inputs:
            mine.append([scales[o] * forward_logit(index, *packed.arrays(), values, row, o)
                         for o in range(4)])  # fmt: skip
        assert np.allclose(onnx_logits, mine, rtol=1e-4, atol=1e-4)
        assert np.allclose(1 / (1 + np.exp(-np.clip(mine, -60, 60))), expected)  # sigmoid outputs


def test_genome_json_round_trip_keeps_every_gene():
    genomes, config = evolved_genomes(2)
    for genome in genomes:
        data = genome_to_json(genome, config)
        again = genome_to_json(genome_from_json(json.loads(json.dumps(data)), config), config)
        assert again == data


def _state(board: dict[int, int], to_move: int = 0):
    state = load_game("territory").new_initial_state()
    state.array[HEADER:] = 0
    for tile, troops in board.items():
        state.array[HEADER + tile] = troops
    state.array[0] = to_move
    return state


def _decode(state, out: list[float], mode: str = "guided"):
    game = state.game
    layout = game.tile_moves()
    player = state.current_player()
    legal = np.array(state.legal_actions(), dtype=np.int64)
    return decode(
        DECODINGS[mode],
        np.array(out),
        player,
        legal,
        len(legal),
        layout["neighbours"],
        IDS,
        MAX_TROOPS,
        layout["turn_tiles"],
    )


def test_study_decoding_example_production_on_tile_0_1():
    """§5: [0.0, 0.0441, 0.99997, 0.99999...] decodes to production on (0,1)."""
    state = _state({1: 5, 35: -1})
    out = [0.0, 0.04411154570991824, 0.9999687598147949, 0.9999999999980089]
    assert _decode(state, out) == (1 * IDS, False)  # action 0 of tile 1 = production


def test_study_guiding_example_becomes_the_nearest_legal_move():
    """§5: [0.758, 0.0988, 0.9957, 1.0] reads (0,3) -> (5,4) with 20 troops, which is not a
    move; guiding plays the legal move nearest over (source, target, troops), brute-forced."""
    state = _state({2: 19, 3: 4, 35: -1})
    out = [0.7583775969117601, 0.09880653506612425, 0.9956816595680481, 0.9999999999999927]
    parts = (3, 34, 20)  # floor(35 v) tiles and floor(20 v) + 1 troops: (0,3), (5,4), 20
    action, guided = _decode(state, out)
    assert guided

    def distance(a: int) -> float:
        tile, idx = divmod(a, IDS)
        if idx == 0:
            move = (tile, tile, 1)
        else:
            d, k = divmod(idx - 1, MAX_TROOPS)
            move = (tile, state.game.tile_moves()["neighbours"][tile, d], k + 1)
        return sum((x - y) ** 2 for x, y in zip(move, parts, strict=True))

    assert distance(action) == min(distance(a) for a in state.legal_actions())
    assert action // IDS == 2  # from the 19-troop stack: the nearest source to (0,3) that moves


def test_masked_decoding_is_the_argmax_over_legal_moves():
    state = _state({7: 6, 8: 2, 35: -1})
    n = 36
    out = np.random.default_rng(1).uniform(0, 1, 2 * n + MAX_TROOPS + 1)
    action, _ = _decode(state, list(out), "masked")
    layout = state.game.tile_moves()

    def score(a: int) -> float:
        tile, idx = divmod(a, IDS)
        if idx == 0:
            return out[tile] + out[n + tile] + out[2 * n + MAX_TROOPS]
        d, k = divmod(idx - 1, MAX_TROOPS)
        return out[tile] + out[n + layout["neighbours"][tile, d]] + out[2 * n + k]

    assert score(action) == max(score(a) for a in state.legal_actions())


def test_red_sees_the_board_turned_as_if_it_were_blue():
    state = _state({0: 2, 35: -6, 34: -1}, to_move=1)
    layout = state.game.tile_moves()
    inputs = np.zeros(36)
    obs = state.observation_tensor(1).astype(np.float64).ravel()
    encode(obs, 36, 1, layout["turn_tiles"], inputs)
    assert inputs[[0, 1, 35]].tolist() == pytest.approx([6 / 20, 1 / 20, -2 / 20])


def test_fitness_functions_reproduce_the_studys_figures():
    """Case 1: 79.7% (map in 1,140 rounds), 18.6% (22 tiles, not won); cases 2 and 3: 93.8% in
    102 / 1,020 rounds; case 4: 65.1% with 18 tiles in 99 rounds (figures truncated, §6)."""

    def stats(moves, tiles, won, opp_tiles=0, opp_troops=0):
        row = np.zeros((1, 2, 12))
        row[0, 0, [MOVES, TILES, RETURN, OPP_TILES, OPP_TROOPS]] = [
            moves,
            tiles,
            won,
            opp_tiles,
            opp_troops,
        ]
        return row

    def study(case, row):
        game = load_game("territory", preset=case)
        start = game.new_initial_state(seed=0).array
        return float(fitness(case, row, start, game)[0])

    assert study("expand-alone", stats(1140, 36, 1)) == pytest.approx(79.80, abs=0.01)
    assert study("expand-alone", stats(1140, 22, 0)) == pytest.approx(18.67, abs=0.01)
    assert study("beat-red-easy", stats(102, 20, 1)) == pytest.approx(93.88, abs=0.01)
    assert study("beat-red-hard", stats(1020, 30, 1)) == pytest.approx(93.88, abs=0.01)
    assert study("against-red", stats(99, 18, 1)) == pytest.approx(65.10, abs=0.01)
    half = study("beat-red-easy", stats(500, 10, 0, opp_tiles=3, opp_troops=20))
    assert half == pytest.approx(30 * 3 / 6 + 20 * 20 / 40)


def test_training_is_seeded_independent_of_threads_and_resumes_exactly(tmp_path):
    straight = Trainer("against-red", {**TINY, "generations": 4}, tmp_path / "a").run()
    one_thread = Trainer("against-red", {**TINY, "generations": 4, "workers": 1}, tmp_path / "b")
    assert one_thread.run().history[-1]["best_fitness"] == straight.history[-1]["best_fitness"]
    first = Trainer("against-red", {**TINY, "generations": 2}, tmp_path / "c")
    first.run()
    checkpoint = json.loads((tmp_path / "c" / "population.json").read_text())
    assert checkpoint["populations"]["blue"]["genomes"]  # JSON, not a pickle
    random.seed(12345)  # a resumed run must not depend on the caller's random state
    resumed = Trainer("against-red", {**TINY, "generations": 4}, tmp_path / "c").run()
    strip = [{k: v for k, v in row.items() if k != "eval_seconds"} for row in straight.history]
    again = [{k: v for k, v in row.items() if k != "eval_seconds"} for row in resumed.history]
    assert again == strip and resumed.champion == straight.champion
    # a checkpoint written before a parameter existed resumes with that parameter's default
    saved = json.loads((tmp_path / "c" / "population.json").read_text())
    del saved["params"]["sparring_opening"]
    (tmp_path / "c" / "population.json").write_text(json.dumps(saved))
    assert Trainer("against-red", {**TINY, "generations": 4}, tmp_path / "c").generation == 4
    with pytest.raises(NeatError, match="another run"):
        Trainer("against-red", {**TINY, "generations": 4, "seed": 9}, tmp_path / "c")
    # networks of another input count (a scored run of an older feature count) are refused
    for genome in saved["populations"]["blue"]["genomes"]:
        genome["num_inputs"] = 35
    (tmp_path / "c" / "population.json").write_text(json.dumps(saved))
    with pytest.raises(NeatError, match="another number of inputs than 36"):
        Trainer("against-red", {**TINY, "generations": 4}, tmp_path / "c")


@pytest.mark.parametrize("decoding", ["guided", "scored", "afterstate"])
def test_training_improves_on_the_first_generation_and_the_agent_replays_its_game(
    tmp_path, decoding
):
    params = {**TINY, "generations": 6 if decoding == "guided" else 3, "decoding": decoding}
    trainer = Trainer("beat-red-easy", params, tmp_path)
    result = trainer.run()
    curve = [row["best_fitness"] for row in result.history]
    assert curve[-1] >= curve[0] and result.champion_stats["moves"] == len(result.trace)
    # the champion is the run's best genome: its replayed game scores the run's best fitness
    replay = np.zeros((1, 2, len(STAT_NAMES)))
    replay[0, 0] = [result.champion_stats[name] for name in STAT_NAMES]
    champion = fitness("beat-red-easy", replay, trainer.start, trainer.game)[0]
    assert champion == pytest.approx(result.best_fitness) and result.best_fitness >= curve[-1]
    genome = tmp_path / "champion.json"
    genome.write_text(json.dumps(result.champion))
    game = load_game("territory", preset="beat-red-easy")
    agent = make(f"neat:genome={genome}", game)
    state = game.new_initial_state(seed=0)
    agreed = []  # the agent's choice at every position of the trained game (which goes on
    for action in result.trace:  # with the trained move, so one near-tie costs one position)
        agreed.append(agent.step(state) == action)
        state.apply_action(int(action))
    # the game ended by the rules, or at a position repeated past the stale limit (an evolved
    # value network may shuttle troops back and forth)
    assert state.is_terminal() or result.champion_stats["stale"] == 1.0
    assert np.mean(agreed) > 0.95  # float32 ONNX vs float64 numba may differ at a near-tie


def test_coevolution_trains_two_populations_with_sparring_games_and_a_playoff(tmp_path):
    params = {**TINY, "generations": 2, "rounds": 20, "opponents": 2, "sparring": 1, "playoff": 2}
    trainer = Trainer("coevolution", params, tmp_path)
    result = trainer.run()
    assert result.rival is not None and "red_best_fitness" in result.history[-1]
    assert len(trainer.hall) == 2 * 2 * 2  # generations x sides x the best two
    scores = trainer.playoff([entry["genome"] for entry in trainer.hall])
    assert result.champion_stats["playoff_score"] == pytest.approx(scores.max())
    assert scores.min() >= 0.0 and scores.max() <= 1.0


def test_sparring_against_the_greedy_red_starts_from_seeded_random_openings(tmp_path):
    from models.neat import NeatError
    from models.neat_train import opened

    params = {**TINY, "generations": 1, "rounds": 20, "sparring": 2, "playoff": 1}
    greedy = {**params, "sparring_red": "greedy", "sparring_opening": 3}
    trainer = Trainer("coevolution", greedy, tmp_path)
    assert trainer.sparring.game.params["preset"] == "duel-vs-greedy"
    trainer.run()
    game = trainer.sparring.game
    first, again, other = opened(game, 5, 3), opened(game, 5, 3), opened(game, 6, 3)
    assert (first == again).all() and (first != other).any()
    assert first[1] == 3  # three rounds played: blue's random moves, each answered by red
    # red answered with greedy_action: produce on (5,5) (2), send one troop west, the first
    # direction on the map, to (5,4) (1 + 1), produce on the first of the smallest: (5,4)
    assert (first[HEADER:] < 0).sum() == 2 and list(first[HEADER + 34 :]) == [-2, -1]
    with pytest.raises(NeatError, match="sparring_red"):
        Trainer("coevolution", {**params, "sparring_red": "mcts"}, tmp_path / "x")


def test_sparring_in_both_seats_plays_the_greedy_spreader_against_the_network_in_each(
    tmp_path, monkeypatch
):
    from engine.games.territory.rules import greedy_action
    from models.neat_eval import SCRIPTED_SEAT, Batch

    params = {**TINY, "generations": 1, "rounds": 20, "sparring": 2, "playoff": 1,
              "sparring_red": "greedy", "sparring_seats": "both",
              "sparring_opening": 1}  # fmt: skip
    trainer = Trainer("coevolution", params, tmp_path)
    assert trainer.sparring.game.params["preset"] == "duel"  # the duel itself, no scripted red
    result = trainer.run()
    nets = [network(result.champion)]
    games = trainer._against_fixed(pack(nets), 1, 2, 10**6, 1)
    stats, index, seats = games[0][1], games[0][2], games[0][3]
    assert list(index) == [0, 0] and list(seats) == [0, 1]  # the network moves first, then second
    assert stats[0, 0, MOVES] > 0 and stats[1, 1, MOVES] > 0  # ... and does move in each
    # the scripted seat is territory's greedy spreader, move for move: replay a traced game
    game = trainer.game
    start = game.new_initial_state(seed=0).array
    batch = Batch(start[None, :], np.array([[SCRIPTED_SEAT, 0]], dtype=np.int64))
    trainer.evaluator.play(pack(nets), batch, trace_game=0)
    trace = trainer.evaluator.last_trace
    state = game.new_initial_state(seed=0)
    scripted = 0
    for action in trace:
        if state.current_player() == 0:
            assert action == greedy_action(state.array, 0)
            scripted += 1
        state.apply_action(int(action))
    assert scripted == len(trace) - len(trace) // 2 > 5
    for bad, match in (({"sparring_seats": "red"}, "blue or both"),
                       ({"sparring_red": "study"}, "sparring_red: greedy")):  # fmt: skip
        with pytest.raises(NeatError, match=match):
            Trainer("coevolution", {**params, **bad}, tmp_path / "bad")
    monkeypatch.setattr(type(game), "sparring_action", None)
    with pytest.raises(ValueError, match="no sparring_action"):
        trainer.evaluator.play(pack(nets), batch)


def test_move_features_by_hand():
    """Blue sends 4 of 5 from (0,0) east onto red's 3: an attack that wins."""
    from agents.neat.codec import MOVE_FEATURES, move_features

    state = _state({0: 5, 1: -3, 35: -1})
    layout = state.game.tile_moves()
    legal = np.array([IDS * 0 + 1 + 0 * MAX_TROOPS + 3, 0], dtype=np.int64)  # E x4, produce
    feats = np.zeros((2, MOVE_FEATURES))
    obs = state.observation_tensor(0).astype(np.float64).ravel()
    move_features(obs, 36, legal, 2, layout["neighbours"], IDS, MAX_TROOPS, feats)
    expected = [0, 5 / 20, 4 / 20, 1 / 20, 0, 3 / 20, 0, 1, 1 / 36, 2 / 36, 0, 0, 1, 1]
    assert feats[0].tolist() == pytest.approx(expected)
    assert feats[1, [0, 1, 2, 3, 7, 12, 13]].tolist() == pytest.approx(
        [1, 5 / 20, 0, 6 / 20, 0, 0, 0]
    )


def _send(tile: int, direction: int, troops: int) -> int:
    return tile * IDS + 1 + direction * MAX_TROOPS + troops - 1


@pytest.mark.parametrize(
    ("board", "action", "gained", "removed", "case"),
    [
        ({0: 5}, 0, 0, 0, "production"),
        ({0: 5}, _send(0, 0, 1), 1, 0, "nature taken, a troop left"),
        ({0: 5}, _send(0, 0, 5), 0, 0, "nature taken by every troop: the origin abandoned"),
        ({0: 5, 1: 2}, _send(0, 0, 3), 0, 0, "transport"),
        ({0: 5, 1: 2}, _send(0, 0, 5), -1, 0, "transport of every troop: the origin emptied"),
        ({0: 5, 1: -3}, _send(0, 0, 4), 1, 1, "attack wins"),
        ({0: 5, 1: -3}, _send(0, 0, 5), 0, 1, "attack wins with every troop"),
        ({0: 5, 1: -3}, _send(0, 0, 3), -1, 1, "even fight: both tiles to nature"),
        ({0: 5, 1: -3}, _send(0, 0, 2), 0, 0, "attack fails"),
        ({0: 2, 1: -3}, _send(0, 0, 2), -1, 0, "attack fails with every troop"),
    ],
)
def test_move_features_count_the_tiles_a_move_wins_and_removes(
    board, action, gained, removed, case
):
    """Study §2.2's attack rules worked by hand (feature 12: own tiles gained, 13: enemy tiles
    removed), then checked against the rules themselves: the move applied."""
    from agents.neat.codec import MOVE_FEATURES, move_features

    state = _state({**board, 35: -1})
    assert action in state.legal_actions(), case
    layout = state.game.tile_moves()
    feats = np.zeros((1, MOVE_FEATURES))
    obs = state.observation_tensor(0).astype(np.float64).ravel()
    move_features(obs, 36, np.array([action]), 1, layout["neighbours"], IDS, MAX_TROOPS, feats)
    assert feats[0, 12:].tolist() == [gained, removed], case
    before = state.array[HEADER:].copy()
    state.apply_action(action)
    after = state.array[HEADER:]
    assert (after > 0).sum() - (before > 0).sum() == gained, case
    assert (before < 0).sum() - (after < 0).sum() == removed, case


def test_tile_features_match_the_rules_on_every_legal_move_of_random_games():
    """Every legal move of 80 random duel positions: features 12 and 13 equal the change in tile
    counts the move makes, for blue and for red (the float32 observation the agent reads)."""
    from agents.neat.codec import MOVE_FEATURES, move_features

    game = load_game("territory")
    layout = game.tile_moves()
    rng = np.random.default_rng(7)
    seen = collections.Counter()
    for start in range(80):
        state = game.new_initial_state(seed=start)
        for _ in range(int(rng.integers(20, 120))):
            if state.is_terminal():
                break
            legal = state.legal_actions()
            state.apply_action(int(legal[rng.integers(len(legal))]))
        if state.is_terminal():
            continue
        player = state.current_player()
        legal = np.array(state.legal_actions(), dtype=np.int64)
        obs = state.observation_tensor(player).astype(np.float64).ravel()
        feats = np.zeros((len(legal), MOVE_FEATURES))
        move_features(obs, 36, legal, len(legal), layout["neighbours"], IDS, MAX_TROOPS, feats)
        sign = 1 if player == 0 else -1
        before = state.array[HEADER:] * sign
        for i, action in enumerate(legal):
            child = state.clone()
            child.apply_action(int(action))
            after = child.array[HEADER:] * sign
            assert feats[i, 12] == (after > 0).sum() - (before > 0).sum()
            assert feats[i, 13] == (before < 0).sum() - (after < 0).sum()
            seen[feats[i, 12], feats[i, 13]] += 1
    assert set(seen) == {(-1, 0), (0, 0), (1, 0), (-1, 1), (0, 1), (1, 1)}, seen


def test_neat_agent_refuses_bad_files_with_one_line(tmp_path):
    from agents.base import AgentError

    game = load_game("territory")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    for spec in (f"neat:genome={broken}", f"neat:genome={tmp_path / 'missing.onnx'}", "neat"):
        with pytest.raises(AgentError):
            make(spec, game)


def test_fast_crossover_breeds_exactly_what_neat_python_breeds():
    import neat

    from models.neat import genome_class

    genomes, config = evolved_genomes(20, mutations=30, seed=5)
    for index, genome in enumerate(genomes):
        genome.fitness = float(index % 7)
    for i in range(8):
        state = random.getstate()
        fast = genome_class()(1000 + i)
        fast.configure_crossover(genomes[i], genomes[i + 10], config.genome_config)
        after = random.getstate()
        random.setstate(state)
        slow = neat.DefaultGenome(1000 + i)
        neat.DefaultGenome.configure_crossover(
            slow, genomes[i], genomes[i + 10], config.genome_config
        )
        assert random.getstate() == after
        assert genome_to_json(fast, config) == genome_to_json(slow, config)


@pytest.mark.parametrize("profile", ["params.yaml", "params-full.yaml"])
def test_every_territory_model_of_both_profiles_is_a_valid_training_case(profile):
    from pathlib import Path

    import yaml

    from flows.pipeline.stages.train import sweep_items
    from models.neat import case_game, checked
    from models.neat_track import DEFAULTS
    from models.tracking import sweep_grid
    from models.training_inputs import coerce, model_entry

    params = yaml.safe_load((Path(__file__).parents[1] / profile).read_text())
    for name, model in params["territory"]["models"].items():
        entry = model_entry("territory", name, model)  # what `stage train territory NAME` reads
        assert entry["family"] == "neat" and entry["encoding"] is None
        for config in sweep_grid(sweep_items(entry["sweep"])) or [{}]:
            given = coerce("neat", DEFAULTS, {**entry["params"], **config})
            case = given.pop("case")
            assert case_game(case, checked(given)).name == "territory", name


def _node(key: int, bias: float, activation: str) -> dict:
    return {"id": key, "bias": bias, "response": 1.0, "activation": activation,
            "aggregation": "sum"}  # fmt: skip


def _scored_genome(nodes: list[dict], links: list[tuple[int, int, float]]) -> dict:
    """A hand-made scored-decoding network (input -1 - i reads move feature i)."""
    from models.neat import GENOME_FORMAT

    connections = [
        {"from": a, "to": b, "weight": w, "enabled": True, "innovation": k}
        for k, (a, b, w) in enumerate(links, 1)
    ]
    return {"format": GENOME_FORMAT, "key": 1, "fitness": 0.0, "num_inputs": 12,
            "num_outputs": 1, "nodes": nodes, "connections": connections}  # fmt: skip


#: takes a winning attack, else claims nature while leaving a troop behind (the relu node: sent
#: to nature, troops left >= 1), else produces; it beats random and mcts:sims=20 on the duel
EXPANDER = _scored_genome(
    [_node(0, 0.0, "identity"), _node(1, -100.5, "relu")],
    [(-7, 1, 100.0), (-4, 1, 20.0), (-1, 1, -100.0), (1, 0, 1.0), (-8, 0, 3.0), (-1, 0, 0.4)],
)
PRODUCER = _scored_genome([_node(0, 0.0, "identity")], [(-1, 0, 1.0)])  # never leaves its tile


def test_the_playoff_varies_its_openings_and_its_final_round_picks_the_stronger_genome(tmp_path):
    from engine.match import play_match

    params = {**TINY, "generations": 1, "rounds": 30, "sparring": 1, "playoff": 3,
              "sparring_red": "greedy", "decoding": "scored", "playoff_agents": ["random"],
              "playoff_shortlist": 3, "playoff_games": 4}  # fmt: skip
    trainer = Trainer("coevolution", params, tmp_path)
    trainer.step()  # one generation: populations with a best genome, a hall of fame
    # the first round's greedy red is deterministic: one start replays one game, openings vary
    packed = pack([network(EXPANDER)])
    same = trainer._against_fixed(packed, 1, 3, 10**6, 0)[0][1]
    varied = trainer._against_fixed(packed, 1, 3, 10**6, 4)[0][1]
    assert (same == same[0]).all() and not (varied == varied[0]).all()

    def hall(*entries):
        return [{"seat": s, "generation": g, "fitness": 0.0, "genome": x} for s, g, x in entries]

    # among equal first-round scores the later generation leads (identical genomes here)
    trainer.params["playoff_agents"] = []
    trainer.hall = hall(("blue", 1, PRODUCER), ("red", 2, PRODUCER))
    ranked, figures = trainer.choose()
    assert list(ranked) == [1, 0] and figures["playoff_generation"] == 2.0
    # the final round: every shortlisted genome against `random`, seeded openings, sides swapped
    trainer.params["playoff_agents"] = ["random"]
    trainer.hall = hall(("red", 3, PRODUCER), ("blue", 0, EXPANDER), ("blue", 4, PRODUCER))
    result = trainer.result(0.0)
    game = trainer.game

    def score(genome: dict) -> float:
        path = tmp_path / "genome.json"
        path.write_text(json.dumps(genome))
        mine = make(f"neat:genome={path}", game, 0)
        seat = lambda seed: make("random", game, seed)  # noqa: E731
        return play_match(game, lambda _: mine, seat, 4, seed=10**6, opening=4).score

    assert result.champion["connections"] == EXPANDER["connections"]
    assert result.rival["connections"] == PRODUCER["connections"]  # red's best
    assert result.champion_stats["final_score"] == pytest.approx(score(EXPANDER))
    assert result.champion_stats["final_worst"] == pytest.approx(score(PRODUCER))
    assert score(EXPANDER) > score(PRODUCER) and result.champion_stats["final_games"] == 4.0
    with pytest.raises(NeatError, match="playoff_agents"):
        Trainer("coevolution", {**params, "playoff_agents": "mcts"}, tmp_path / "x")


def test_scored_moves_rank_by_logit_in_training_and_in_play_where_the_sigmoid_saturates(
    tmp_path,
):
    """Blue's 20 troops next to nature: a network scoring 10 x troops sent / 20 through a
    sigmoid. sigmoid(5z) is 1.0 from 5z ≈ 17 in onnxruntime's float32 and ≈ 37 in numba's
    float64, so ranking activations ties most of the sends, and differently in each; by the
    logit, sending all 20 troops is best, and both pick the first such move in legal order."""
    from models.neat_eval import Batch, Evaluator

    genome = _scored_genome([_node(0, 0.0, "sigmoid")], [(-3, 0, 10.0)])
    state = _state({0: 20, 35: -1})
    sent = {a: (a % IDS - 1) % MAX_TROOPS + 1 if a % IDS else 0 for a in state.legal_actions()}
    best = max(sent, key=sent.get)  # the first of the largest sends, in legal order
    assert sent[best] == 20 and list(sent.values()).count(20) == 2  # (0,0) has two neighbours
    path = tmp_path / "sender.json"
    path.write_text(json.dumps(genome))
    agent = make(f"neat:genome={path}", state.game)
    assert agent.step(state) == best
    evaluator = Evaluator(state.game, "scored", workers=1)
    batch = Batch(state.array[None, :].copy(), np.array([[0, -1]], dtype=np.int64))
    evaluator.play(pack([network(genome)]), batch, trace_game=0)
    assert evaluator.last_trace[0] == best


def test_scored_networks_of_both_feature_counts_play_the_same_moves_in_training_and_in_play(
    tmp_path,
):
    """A network of today's 14 move features scoring tiles gained (feature 12) minus troops sent
    claims nature with one troop; one of the 12 features of earlier exports reads the first
    12 only and, scoring troops sent, sends everything. The agent and the fitness games
    agree on both; a network of 13 inputs fits neither and is refused in one line."""
    from agents.base import AgentError
    from models.neat_eval import Batch, Evaluator

    state = _state({0: 6, 35: -1})
    evaluator = Evaluator(state.game, "scored", workers=1)
    batch = Batch(state.array[None, :].copy(), np.array([[0, -1]], dtype=np.int64))
    claim = _scored_genome([_node(0, 0.0, "identity")], [(-13, 0, 1.0), (-3, 0, -0.5)])
    claim["num_inputs"] = 14
    sender = _scored_genome([_node(0, 0.0, "identity")], [(-3, 0, 1.0)])
    for genome, troops in ((claim, 1), (sender, 6)):
        # (0,0) with 6 troops: E x1 keeps the origin and takes a tile; x6 would abandon it
        evaluator.play(pack([network(genome)]), batch, trace_game=0)
        path = tmp_path / f"scored{genome['num_inputs']}.onnx"
        path.write_bytes(to_onnx(network(genome), {"gridbots.kind": "neat"}))
        agent = make(f"neat:genome={path}", state.game)
        assert agent.decoding == "scored"
        played = {evaluator.last_trace[0], agent.step(state)}
        assert len(played) == 1
        sent = (played.pop() % IDS - 1) % MAX_TROOPS + 1
        assert sent == troops
    with pytest.raises(ValueError, match="same number of values"):  # one batch, one input count
        pack([network(claim), network(sender)])
    odd = {**sender, "num_inputs": 13}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(odd))
    with pytest.raises(AgentError, match="needs 12 or 14"):
        make(f"neat:genome={path},decoding=scored", state.game)


def test_a_case_keeps_the_seed_whose_champion_won_its_playoff_not_the_highest_fitness():
    """Coevolved fitness is earned against a seed's own rival population: seed 1's higher
    number says nothing across seeds, its champion's playoff against fixed opponents does."""
    from models.neat_track import seed_rank
    from models.neat_train import CaseResult

    def result(best: float, final: float | None) -> CaseResult:
        stats = {} if final is None else {"final_score": final, "playoff_score": 0.5}
        return CaseResult("coevolution", {}, [{"best_fitness": best}], {}, stats, [])

    seeds = {0: result(9.0, 0.7), 1: result(12.0, 0.4), 2: result(10.0, 0.55)}
    assert max(seeds, key=lambda s: seed_rank(seeds[s])) == 0
    plain = {0: result(9.0, None), 1: result(12.0, None)}  # no playoff: the best fitness
    assert max(plain, key=lambda s: seed_rank(plain[s])) == 1


def test_reproduction_trims_an_oversized_spawn_where_neat_python_gives_up():
    """neat-python 2.0 trims one genome per species in one pass, then raises: 60 + 40 + 3 x 2
    is 6 over a population of 100, and only two species are above the minimum of 2. Every
    spawn the library can trim comes out as the library's."""
    import neat

    from models.neat import reproduction_class

    config = make_config(config_sections({}, 36, 4))
    ours = reproduction_class()(config.reproduction_config, neat.reporting.ReporterSet(), None)
    library = neat.DefaultReproduction(
        config.reproduction_config, neat.reporting.ReporterSet(), None
    )
    with pytest.raises(RuntimeError, match="could not match pop_size"):
        library._adjust_spawn_exact([60, 40, 2, 2, 2], 100, 2)
    assert ours._adjust_spawn_exact([60, 40, 2, 2, 2], 100, 2) == [57, 37, 2, 2, 2]
    rng = np.random.default_rng(0)
    trimmed = failed = 0  # spawns over the population that the library trims, or gives up on
    for _ in range(500):  # spawns as compute_spawn leaves them: shares of 100, rounded up or down
        shares = rng.dirichlet(np.ones(rng.integers(2, 20)))
        amounts = [max(2, round(100 * s) + int(rng.integers(-1, 4))) for s in shares]
        ours_amounts = ours._adjust_spawn_exact(list(amounts), 100, 2)
        assert sum(ours_amounts) == 100 and min(ours_amounts) >= 2
        try:
            expected = library._adjust_spawn_exact(list(amounts), 100, 2)
        except RuntimeError:
            failed += 1
            continue
        assert ours_amounts == expected
        trimmed += sum(amounts) > 100
    assert trimmed > 100 and failed > 100


@pytest.mark.parametrize("decoding", ["guided", "masked"])
def test_the_agent_decodes_float64_activations_as_the_fitness_games_do(tmp_path, decoding):
    """Biases of 5 and a little more put every output near sigmoid(25): exactly 1.0 in
    onnxruntime's float32, 1 - 1.4e-11 in float64. Guided, floor(35 v) then names tile 35 in
    one and 34 in the other (two legal sends to tile 29); masked, the saturated scores tie in
    float32 (the first legal move) and rank in float64. The agent must play the fitness games'
    move."""
    from models.neat import GENOME_FORMAT
    from models.neat_eval import Batch, Evaluator

    outputs = 4 if decoding == "guided" else 2 * 36 + 21
    # guided: the flag and the source saturated, the target tile (4,5) = 29 (a neighbour of
    # both 34 and 35) and 3 troops; masked: later outputs a little higher, so float64 ranks them
    bias = (
        [5.0, 5.0, 0.3361, -0.389]
        if decoding == "guided"
        else [5.0 + 0.01 * o for o in range(outputs)]
    )
    genome = {"format": GENOME_FORMAT, "key": 1, "fitness": 0.0, "num_inputs": 36,
              "num_outputs": outputs, "connections": [],
              "nodes": [_node(o, bias[o], "sigmoid") for o in range(outputs)]}  # fmt: skip
    state = _state({34: 6, 35: 6, 28: 3, 0: -4})
    path = tmp_path / "saturated.json"
    path.write_text(json.dumps(genome))
    evaluator = Evaluator(state.game, decoding, workers=1)
    batch = Batch(state.array[None, :].copy(), np.array([[0, -1]], dtype=np.int64))
    evaluator.play(pack([network(genome)]), batch, trace_game=0)
    for source in (path, tmp_path / "saturated.onnx"):  # the genome, and its export
        if source.suffix == ".onnx":
            source.write_bytes(to_onnx(network(genome), {"gridbots.kind": "neat"}))
        agent = make(f"neat:genome={source},decoding={decoding}", state.game)
        assert agent.step(state) == evaluator.last_trace[0]
