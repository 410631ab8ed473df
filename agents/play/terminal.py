"""A person against an agent at the terminal, turn by turn: what `gridbots play` runs.

The person (agents.play.human) plays their seats, an agent the others; chance is drawn from a
generator seeded by the game's seed and announced. At their turn the person may also type
`undo` (back to their previous decision: their move and every reply after it are taken back)
or `hint` (the adviser's analysis of the position, agents.analysis: its move, value and
per-move scores; at a simultaneous lap, the moves it would play). Quitting (`quit`, end of
input, Ctrl-C) ends the game cleanly: `play` returns the position reached, whose history
`gridbots show` and `gridbots move` accept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.base import Agent, AgentError
from agents.play.human import HumanAgent, Quit
from engine.protocol import CHANCE, SIMULTANEOUS, Game, State

COMMANDS = ("undo", "hint")


def outcome(state: State, humans: Sequence[int]) -> str:
    """`you win` / `you lose` / `draw` by the best return of each side (a puzzle: `solved`)."""
    returns = state.returns()
    mine = max(returns[p] for p in humans)
    others = [r for p, r in enumerate(returns) if p not in humans]
    if not others:  # a puzzle: the whole team is the person
        return "solved" if mine > 0 else "not solved"
    theirs = max(others)
    return "you win" if mine > theirs else "you lose" if mine < theirs else "draw"


class Session:
    """One game between a person and an agent; `play()` runs it to the end or until quit."""

    def __init__(
        self,
        game: Game,
        human: HumanAgent,
        humans: Sequence[int],
        opponent: Agent | None,
        adviser: Agent | None = None,
        seed: int = 0,
        scenario: dict[str, Any] | None = None,
    ):
        self.game, self.human, self.humans = game, human, set(humans)
        self.opponent, self.adviser = opponent, adviser or opponent
        self.seed, self.scenario = seed, dict(scenario or {})
        self.state = game.new_initial_state(seed=seed, **self.scenario)
        self.decisions: list[int] = []  # history lengths at which the person decided
        self.chance = np.random.default_rng(seed)
        self.stopped = False
        self.say = human.terminal.say

    def play(self) -> State:
        try:
            while not self.state.is_terminal():
                self._turn()
        except (Quit, KeyboardInterrupt):
            self.stopped = True
            self.say("\ngame stopped")
            return self.state
        self.say(f"\n{self.state}")
        self.say(outcome(self.state, self.humans))
        return self.state

    def _turn(self) -> None:
        state, game = self.state, self.game
        player = state.current_player()
        if player == CHANCE:
            outcome = state.random_action(self.chance)
            state.apply_action(outcome)
            self.say(f"chance: {game.action_to_string(CHANCE, outcome)}")
            return
        if player == SIMULTANEOUS:
            movers = [p for p in range(game.num_players) if state.legal_actions(p)]
        else:
            movers = [player]
        mine = [p for p in movers if p in self.humans]
        chosen: dict[int, int] = {}
        if mine:
            answer = self._ask(mine)
            if answer is None:  # undone: a new position, ask again
                return
            chosen.update(zip(mine, answer, strict=True))
        for p in movers:
            if p not in chosen:
                chosen[p] = self._reply(p)
        if player == SIMULTANEOUS:
            joint = [chosen.get(p, game.neutral_action) for p in range(game.num_players)]
            self.state.apply_actions(joint)
        else:
            self.state.apply_action(chosen[player])

    def _ask(self, mine: list[int]) -> list[int] | None:
        show = True
        while True:
            answer = self.human.read(self.state, mine, COMMANDS, show)
            show = False
            if answer == "hint":
                self.hint(mine)
            elif answer == "undo":
                if self.undo():
                    return None
                self.say("nothing to undo yet")
            else:
                self.decisions.append(len(self.state.history()))
                return answer

    def _reply(self, player: int) -> int:
        if self.opponent is None:
            raise AgentError(f"nobody plays {self.game.player_name(player)}")
        start = time.perf_counter()
        action = int(self.opponent.step(self.state.clone(), player))
        seconds = time.perf_counter() - start
        move = self.game.action_to_string(player, action)
        self.say(f"{self.game.player_name(player)} plays {move}  ({seconds:.2f} s)")
        return action

    def undo(self) -> bool:
        """Back to the person's previous decision; False when there is none."""
        if not self.decisions:
            return False
        keep = self.decisions.pop()
        history = self.state.history()
        self.state = self.game.state_from_history(history[:keep], seed=self.seed, **self.scenario)
        self.say(f"took back {self.game.format_moves(history[keep:])}")
        return True

    def hint(self, mine: list[int]) -> None:
        adviser, state = self.adviser, self.state
        if adviser is None:
            self.say("no hint: nobody to ask")
            return
        self.say(f"hint from {adviser.spec}:")
        if state.current_player() == SIMULTANEOUS:
            game = self.game
            moves = [(p, adviser.step(state.clone(), p)) for p in mine]
            shown = [f"{game.player_name(p)} {game.action_to_string(p, a)}" for p, a in moves]
            self.say("  would play " + ", ".join(shown))
            return
        for line in adviser.analyse(state.clone()).describe(state):
            self.say(f"  {line}")
