"""Engine speed measurement shared by `gridbots bench engine` and benchmarks/engine.py."""

from __future__ import annotations

import time

from engine.bits import new_rng
from engine.loops import play_random_games
from engine.protocol import Game


def measure_random_playouts(game: Game, seconds: float = 2.0, seed: int = 0) -> dict:
    """Random games per second on one thread, compile time excluded (a warm-up call first)."""
    start = game.new_initial_state(seed=seed).array
    rng = new_rng(seed)
    play_random_games(game, start, 10, rng)
    batch, played, moves = 64, 0, 0
    began = time.perf_counter()
    while True:
        m, _ = play_random_games(game, start, batch, rng)
        played += batch
        moves += int(m)
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            break
        if elapsed < seconds / 20:
            batch *= 2
    return {
        "game": game.name,
        "games_per_s": played / elapsed,
        "moves_per_s": moves / elapsed,
        "mean_length": moves / played,
        "games": played,
        "seconds": elapsed,
    }
