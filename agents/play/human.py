"""`human`: a person at this terminal plays a seat, typing moves in the game's notation.

Before each decision the person sees the board (with its coordinates) and the legal moves as
the game writes them (Connect 4 columns `1`-`7`, Othello `d3` / `pass`, pig `roll` / `hold`,
Sokoban `u d l r s`). A line that is not one legal move is answered with one line naming the
problem, in the game's words (engine.protocol), and the question is asked again. `history`
prints the moves so far, `help` the commands, `quit` (or end of input, or Ctrl-C) ends the game
by raising `Quit`. `gridbots play` adds `undo` and `hint` (agents.play.terminal).

A person needs a terminal: the agent refuses to be built without one (a pipe, an isolated bot
process, a web request), with one clear line; `Agent.interactive` lets callers refuse it first.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from agents.base import Agent, AgentError, builder
from engine.protocol import Game, GameError, State, describe_illegal, legal_clause

HELP = "type a move as listed, or: history, help, quit"


class Quit(Exception):
    """The person ended the game (`quit`, end of input or Ctrl-C)."""


class Terminal:
    """A person's line-based terminal: what they read and what they type."""

    def __init__(self, reader: TextIO | None = None, writer: TextIO | None = None):
        self.reader = reader or sys.stdin
        self.writer = writer or sys.stdout

    def say(self, text: str = "") -> None:
        self.writer.write(text + "\n")
        self.writer.flush()

    def ask(self, prompt: str) -> str:
        """One line from the person; Quit at end of input or Ctrl-C."""
        self.writer.write(prompt)
        self.writer.flush()
        try:
            line = self.reader.readline()
        except KeyboardInterrupt:
            raise Quit from None
        if not line:
            raise Quit
        return line.strip()


def has_terminal() -> bool:
    """Whether a person can read and type here (stdin and stdout are a terminal)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


NO_TERMINAL = "human: a person plays at a terminal, and this process has none"


@builder("human")
class HumanAgent(Agent):
    """Asks the person at the terminal for every decision of its seat."""

    interactive = True

    def __init__(
        self, game: Game, spec: str, seed: int | None = None, terminal: Terminal | None = None,
        **options: str,
    ):  # fmt: skip
        super().__init__(game, spec, seed)
        if options:
            raise AgentError(f"human: takes no options, got {sorted(options)}")
        if terminal is None and not has_terminal():
            raise AgentError(f"{NO_TERMINAL} (stdin and stdout must both be a terminal)")
        self.terminal = terminal or Terminal()

    def step(self, state: State, player: int | None = None) -> int:
        player = state.current_player() if player is None else player
        return self.read(state, [player])[0]

    def read(
        self, state: State, players: Sequence[int], commands: Sequence[str] = (), show: bool = True
    ) -> list[int] | str:
        """One decision: a legal action for each of `players` (several at a simultaneous lap,
        e.g. `u r` for two Sokoban players), or the word of one of `commands`."""
        game, say = self.game, self.terminal.say
        if show:
            say(f"\n{state}")
            for p in players:
                who = f"{game.player_name(p)} " if len(players) > 1 else ""
                say(f"{who}{_legal_words(state, p)}")
        label = " ".join(game.player_name(p) for p in players)
        while True:
            line = self.terminal.ask(f"{label}> ")
            word = line.lower()
            if not word:
                continue
            if word in commands:
                return word
            if word == "quit":
                raise Quit
            if word == "help":
                say(HELP + "".join(f", {c}" for c in commands))
                continue
            if word == "history":
                say(f"history: {game.format_moves(state.history()) or '(none yet)'}")
                continue
            problem, actions = _check(state, players, line)
            if problem:
                say(problem)
                continue
            return actions


def _legal_words(state: State, player: int) -> str:
    return legal_clause(state.game, player, state.legal_actions(player)).removeprefix("; ")


def _check(state: State, players: Sequence[int], line: str) -> tuple[str, list[int]]:
    """("", actions) for a line naming one legal move per player, else (the problem, [])."""
    game = state.game
    try:
        actions = game.parse_moves(line)
    except GameError as error:
        return str(error), []
    if len(actions) != len(players):
        wanted = "one move" if len(players) == 1 else f"{len(players)} moves, one per player"
        return f"{line!r} is {len(actions)} moves: type {wanted}", []
    for player, action in zip(players, actions, strict=True):
        legal = state.legal_actions(player)
        if action not in legal:
            return describe_illegal(state, action, player, legal), []
    return "", actions
