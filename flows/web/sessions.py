"""Play-page games kept in server memory: a person against a bot, turn-based games.

The server owns the dice (chance nodes are rolled with the session's seeded generator) and the
bot's replies, so the page only sends the person's moves. At most `Limits.sessions` games are
kept; starting one more forgets the least recently used.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.terminal_play import outcome
from engine.protocol import CHANCE, Game, GameError, IllegalActionError, State
from flows.web.bots import BotPools, WebError, answer


@dataclass
class Session:
    id: str
    game: Game
    spec: str
    humans: list[int]
    seed: int
    scenario: dict[str, Any]
    state: State
    rng: np.random.Generator
    #: per ply of the history: who played it ("you", "bot", "chance") and the bot's analysis
    plies: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Sessions:
    def __init__(self, pools: BotPools):
        self.pools = pools
        self._games: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def start(
        self, game: Game, spec: str, side: int, seed: int, scenario: dict, history: str = ""
    ) -> Session:
        """A new game against `spec`, from the scenario's start or from a given history."""
        if game.simultaneous or game.real_time:
            raise WebError(400, f"{game.name} is a real-time game; the page plays turn-based ones")
        if game.kind == "puzzle":
            raise WebError(400, f"{game.name} is a puzzle; the page plays duels for now")
        if not 0 <= side < game.num_players:
            raise WebError(400, f"side {side}: {game.name} has seats 0-{game.num_players - 1}")
        try:
            state = game.new_initial_state(seed=seed, **scenario)
        except (GameError, ValueError, TypeError) as error:
            raise WebError(400, f"scenario: {error}") from None
        if history:
            try:
                moves = state.history() + game.parse_moves(history)
                state = game.state_from_history(moves, seed=seed, **scenario)
            except (GameError, IllegalActionError, ValueError) as error:
                raise WebError(422, str(error)) from None
        session = Session(
            secrets.token_hex(8), game, spec, [side], seed, scenario, state,
            np.random.default_rng(seed),
        )  # fmt: skip
        session.plies = [{"by": "given"} for _ in state.history()]
        with self._lock:
            self._games[session.id] = session
            while len(self._games) > self.pools.limits.sessions:
                self._games.popitem(last=False)
        with session.lock:
            self._advance(session)
        return session

    def get(self, session_id: str) -> Session:
        with self._lock:
            session = self._games.get(session_id)
            if session is None:
                raise WebError(404, f"no game {session_id!r} (finished long ago or never started)")
            self._games.move_to_end(session_id)
            return session

    def play(self, session: Session, move: str) -> None:
        """The person's move (in the game's notation), then the dice and the bot until the
        person is to move again or the game is over."""
        with session.lock:
            state, game = session.state, session.game
            if state.is_terminal():
                raise WebError(409, "the game is over; start a new one")
            if state.current_player() not in session.humans:
                raise WebError(409, "it is not your move")
            try:
                actions = game.parse_moves(move)
            except (GameError, ValueError) as error:
                raise WebError(400, str(error)) from None
            if len(actions) != 1:
                raise WebError(400, f"send one move, not {move!r}")
            try:
                state.apply_action(actions[0])
            except IllegalActionError as error:
                raise WebError(400, str(error)) from None
            session.plies.append({"by": "you"})
            self._advance(session)

    def undo(self, session: Session) -> None:
        """Back to the person's previous move (the bot's reply and the dice after it go too)."""
        with session.lock:
            mine = [i for i, ply in enumerate(session.plies) if ply["by"] == "you"]
            if not mine:
                raise WebError(409, "nothing to undo")
            keep = mine[-1]
            history = session.state.history()[:keep]
            session.state = session.game.state_from_history(
                history, seed=session.seed, **session.scenario
            )
            del session.plies[keep:]

    def _advance(self, session: Session) -> None:
        state = session.state
        while not state.is_terminal() and state.current_player() not in session.humans:
            player = state.current_player()
            if player == CHANCE:
                state.apply_action(state.random_action(session.rng))
                session.plies.append({"by": "chance"})
                continue
            with self.pools.agent(session.game, session.spec) as agent:
                reply = answer(session.game, state, agent)
            state.apply_action(reply["action"])
            session.plies.append({"by": "bot", "analysis": reply["analysis"], "player": player})


def view(session: Session) -> dict[str, Any]:
    """What the page draws: the board, the legal moves (with the cells that play them), the
    history, the bot's last analysis and, at the end, the result."""
    game, state = session.game, session.state
    player = state.current_player()
    history = state.history()
    legal = []
    if not state.is_terminal() and player in session.humans:
        legal = [
            {
                "action": int(a),
                "move": game.action_to_string(player, int(a)),
                "cells": [list(c) for c in game.move_cells(int(a))],
            }
            for a in state.legal_actions()
        ]
    plies = []
    for action, ply, before in zip(history, session.plies, _players(session), strict=False):
        plies.append({"move": game.action_to_string(before, int(action)), "by": ply["by"]})
    last_bot = next((p for p in reversed(session.plies) if p["by"] == "bot"), None)
    return {
        "id": session.id,
        "game": game.spec(),
        "spec": session.spec,
        "you": [game.player_name(p) for p in session.humans],
        "seat": session.humans[0],
        "seed": session.seed,
        "board": str(state),
        "grid": game.grid(state.array),
        "to_move": game.player_name(player) if player >= 0 else None,
        "your_move": bool(legal),
        "legal": legal,
        "history": game.format_moves(history),
        "plies": plies,
        "analysis": last_bot["analysis"] if last_bot else None,
        "can_undo": any(p["by"] == "you" for p in session.plies),
        "result": outcome(state, session.humans) if state.is_terminal() else None,
        "returns": state.returns() if state.is_terminal() else None,
    }


def _players(session: Session) -> list[int]:
    """Who played each ply of the history (replayed from the start)."""
    game = session.game
    state = game.state_from_history([], seed=session.seed, **session.scenario)
    players = []
    for action in session.state.history():
        players.append(state.current_player())
        state.apply_action(action)
    return players
