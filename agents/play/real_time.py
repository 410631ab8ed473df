"""Real-time play at the terminal (Lazerbike): the arrow keys steer, laps run at a set pace.

Each lap the board is redrawn, the agents choose their moves, and the person has the rest of
the lap to press keys; the last arrow pressed in a lap becomes their move through the game's
`arrow_action` hook (Lazerbike: arrows are compass headings, turned into left / forward /
right), no key keeps the game's default (`arrow_action(s, p, "")`). `q` or Ctrl-C stops the
game. The terminal is put in cbreak mode (keys arrive at once, unechoed) and always restored.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import time
import tty
from collections.abc import Iterator
from typing import Any, TextIO

from agents.base import Agent, AgentError
from agents.play.human import Quit
from engine.protocol import Game, State

#: escape sequences of the arrow keys (normal and application cursor modes), and letters
KEYS = {
    b"\x1b[A": "up", b"\x1b[B": "down", b"\x1b[C": "right", b"\x1b[D": "left",
    b"\x1bOA": "up", b"\x1bOB": "down", b"\x1bOC": "right", b"\x1bOD": "left",
    b"w": "up", b"s": "down", b"d": "right", b"a": "left",
}  # fmt: skip
CLEAR = "\x1b[H\x1b[2J"


@contextlib.contextmanager
def cbreak(fd: int) -> Iterator[None]:
    """Keys without Enter and without echo, for the duration; the old settings come back."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        raise AgentError("real-time play needs a terminal (stdin is not one)") from None
    try:
        tty.setcbreak(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def arrows(data: bytes) -> list[str]:
    """The arrows (and `quit`) in a chunk of key bytes, in order; other keys are ignored."""
    found, i = [], 0
    while i < len(data):
        if data[i : i + 1] in (b"q", b"Q", b"\x03"):
            found.append("quit")
            i += 1
            continue
        for length in (3, 1):
            name = KEYS.get(data[i : i + length])
            if name:
                found.append(name)
                i += length
                break
        else:
            i += 1
    return found


def play_real_time(
    game: Game,
    seat: int,
    opponents: dict[int, Agent],
    laps_per_s: float,
    seed: int = 0,
    scenario: dict[str, Any] | None = None,
    fd: int | None = None,
    out: TextIO | None = None,
) -> tuple[State, bool]:
    """Plays one game with the person on `seat`; (final or last position, stopped early)."""
    fd = sys.stdin.fileno() if fd is None else fd
    out = out or sys.stdout
    state = game.new_initial_state(seed=seed, **(scenario or {}))
    lap_s = 1.0 / laps_per_s
    me = game.player_name(seat)

    def draw(note: str) -> None:
        out.write(f"{CLEAR}{state}\nyou are {me}; {note}\n")
        out.flush()

    for p, agent in opponents.items():  # compiled and warm before the clock starts
        if state.legal_actions(p):
            agent.step(state.clone(), p)
    with cbreak(fd):
        draw(f"arrows steer, q quits, {laps_per_s:g} laps/s: press a key to start")
        if "quit" in arrows(os.read(fd, 16)):
            return state, True
        try:
            while not state.is_terminal():
                start = time.perf_counter()
                draw("arrows steer, q quits")
                living = [p for p in range(game.num_players) if state.legal_actions(p)]
                joint = [game.neutral_action] * game.num_players
                for p in living:
                    if p != seat:
                        joint[p] = int(opponents[p].step(state.clone(), p))
                if seat in living:
                    joint[seat] = _steer(game, state, seat, fd, start + lap_s)
                else:
                    time.sleep(max(0.0, start + lap_s - time.perf_counter()))
                state.apply_actions(joint)
        except (Quit, KeyboardInterrupt):
            return state, True
    draw("game over")
    return state, False


def _steer(game: Game, state: State, seat: int, fd: int, deadline: float) -> int:
    """The person's move for this lap: the last arrow pressed before `deadline`."""
    legal = state.legal_actions(seat)
    chosen = game.arrow_action(state.array, seat, "")
    chosen = chosen if chosen in legal else legal[0]
    while True:  # keys already waiting count even when the lap is late
        left = max(0.0, deadline - time.perf_counter())
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        for key in arrows(os.read(fd, 64)):
            if key == "quit":
                raise Quit
            action = game.arrow_action(state.array, seat, key)
            if action is not None and action in legal:
                chosen = action
    return chosen
