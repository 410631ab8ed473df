"""Search speed measurement shared by `gridbots bench mcts` and benchmarks/mcts.py."""

from __future__ import annotations

import statistics
import time

from agents.search.mcts import MCTSAgent
from engine.protocol import Game


def measure_mcts(game: Game, sims: int, repeats: int = 20, seed: int = 0) -> dict:
    """Seconds for one `sims`-simulation move from the initial state (median of `repeats`)."""
    agent = MCTSAgent(game, f"mcts:sims={sims}", seed=seed, sims=str(sims))
    state = game.new_initial_state(seed=seed)
    agent.step(state)  # compile or load from the cache first
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        agent.step(state)
        times.append(time.perf_counter() - began)
    seconds = statistics.median(times)
    return {
        "game": game.name,
        "sims": sims,
        "seconds_per_move": seconds,
        "sims_per_s": sims / seconds,
        "repeats": repeats,
    }


def measure_openspiel_mcts(game_name: str, sims: int, repeats: int = 20, seed: int = 0) -> dict:
    """The same measurement for OpenSpiel's C++ MCTS bot with one random rollout per leaf."""
    import pyspiel

    game = pyspiel.load_game(game_name)
    evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
    bot = pyspiel.MCTSBot(game, evaluator, 1.41, sims, 10**7, False, seed, False)
    state = game.new_initial_state()
    bot.step(state)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        bot.step(state)
        times.append(time.perf_counter() - began)
    seconds = statistics.median(times)
    return {
        "game": game_name,
        "sims": sims,
        "seconds_per_move": seconds,
        "sims_per_s": sims / seconds,
    }
