"""Spam resistance of isolated matches: laps played on a fixed clock, passive vs abusive bots.

    .venv/bin/python benchmarks/stress.py [--seconds 10] [--hz 30] [--move-ms 25]

Lazerbike (simultaneous), both seats in their own processes. The referee runs one lap per tick
of a `hz` clock for `seconds` seconds, restarting games as they end; a lap that overruns its
tick loses the ticks it overran. Three runs: two passive bots (answer at once), a spammer (a
thread writing illegal action lines to the protocol pipe as fast as the pipe takes them)
against a passive bot, and a flooder (64 KiB writes without a newline) against a passive bot.
Prints JSON: laps per run, rejected lines, discarded bytes, and the laps lost by the abusive
runs relative to the passive one (the target: at most 1%).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from agents.isolated.host import command
from engine import load_game
from engine.isolation import BotProcess, IsolatedPlayers, SeatStats
from engine.match import run_game

BOTS = {
    "passive": """
class Bot:
    def __init__(self, seed=None):
        self.rng = random.Random(seed)
    def step(self, state, player):
        return self.rng.choice(state.legal_actions(player))
""",
    "spammer": """
def spam():
    lines = b"9\\n" * 2048
    while True:
        os.write(1, lines)

class Bot:
    def __init__(self, seed=None):
        threading.Thread(target=spam, daemon=True).start()
        self.rng = random.Random(seed)
    def step(self, state, player):
        return self.rng.choice(state.legal_actions(player))
""",
    "flooder": """
def flood():
    while True:
        os.write(1, b"x" * 65536)

class Bot:
    def __init__(self, seed=None):
        threading.Thread(target=flood, daemon=True).start()
        self.rng = random.Random(seed)
    def step(self, state, player):
        return self.rng.choice(state.legal_actions(player))
""",
}


class Clock:
    """Wraps `ask`: each lap starts on the next tick; overrun ticks are lost."""

    def __init__(self, ask, hz: float, until: float):
        self.ask, self.period, self.until = ask, 1.0 / hz, until
        self.next_tick = time.perf_counter()
        self.laps = self.lost = 0

    def __call__(self, state, players):
        now = time.perf_counter()
        if now > self.next_tick + self.period:  # the previous lap overran: skip missed ticks
            missed = int((now - self.next_tick) / self.period)
            self.lost += missed
            self.next_tick += missed * self.period
        if now >= self.until:
            raise TimeoutError
        time.sleep(max(0.0, self.next_tick - time.perf_counter()))
        self.next_tick += self.period
        self.laps += 1
        return self.ask(state, players)


def run(kind: str, folder: Path, seconds: float, hz: float, move_ms: float) -> dict:
    game = load_game("lazerbike")
    warm = game.new_initial_state(0, start="random")  # the referee's own first kernel calls
    warm.play_random_opening(3, np.random.default_rng(0))
    paths = []
    for name in (kind, "passive"):
        path = folder / f"{name}.py"
        path.write_text("import os, random, threading\n" + BOTS[name])
        paths.append(path)
    bots = [BotProcess(command(), f"file:{path}") for path in paths]
    totals = [SeatStats(), SeatStats()]
    clock = None
    games = 0
    try:
        start = None
        while True:
            isolated = IsolatedPlayers(bots, move_ms, np.random.default_rng(games))
            isolated.begin(game.spec(), games, {"start": "random"}, [games, games + 1])
            if start is None:  # the clock starts once both bots are up
                start = time.perf_counter()
                clock = Clock(isolated.ask, hz, start + seconds)
            clock.ask = isolated.ask
            try:
                run_game(game, clock, games, games, start="random")
                games += 1
                done = False
            except TimeoutError:
                done = True
            for total, stats in zip(totals, isolated.finish(drain_s=0.0), strict=True):
                total.merge(stats)
            isolated.close()
            if done:
                break
    finally:
        for bot in bots:
            bot.close()
    abuser = totals[0]
    return {
        "laps": clock.laps,
        "lost_ticks": clock.lost,
        "games_finished": games,
        "rejected_lines": abuser.illegal,
        "rejected_per_s": round(abuser.illegal / seconds),
        "discarded_bytes": abuser.discarded_bytes,
        "late": abuser.late,
        "moves_accepted": abuser.moves,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--hz", type=float, default=30.0)
    parser.add_argument("--move-ms", type=float, default=25.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results = {
            kind: run(kind, Path(folder), args.seconds, args.hz, args.move_ms)
            for kind in ("passive", "spammer", "flooder")
        }
    passive = results["passive"]["laps"]
    report = {
        "game": "lazerbike",
        "clock_hz": args.hz,
        "seconds": args.seconds,
        "move_ms": args.move_ms,
        **results,
        "lost_laps_pct": {
            kind: round(100.0 * (passive - results[kind]["laps"]) / passive, 2)
            for kind in ("spammer", "flooder")
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
