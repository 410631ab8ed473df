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

from agents.play.terminal import outcome
from engine.protocol import CHANCE, SIMULTANEOUS, Game, GameError, IllegalActionError, State
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

    def play(self, session: Session, move: str, action: int | None = None) -> None:
        """The person's move (in the game's notation, or its action id), then the dice and the
        bot until the person is to move again or the game is over."""
        with session.lock:
            state, game = session.state, session.game
            if state.is_terminal():
                raise WebError(409, "the game is over; start a new one")
            if _waiting_for(session) is None:
                raise WebError(409, "it is not your move")
            if action is not None and move:
                raise WebError(400, "send a move or an action id, not both")
            try:
                actions = [action] if action is not None else game.parse_moves(move)
            except (GameError, ValueError) as error:
                raise WebError(400, str(error)) from None
            if len(actions) != 1:
                raise WebError(400, f"send one move, not {move!r}")
            if state.current_player() == SIMULTANEOUS:
                self._lap(session, actions[0])
            else:
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
            if session.game.simultaneous:  # back to the start of that lap
                keep -= keep % session.game.num_players
            history = session.state.history()[:keep]
            session.state = session.game.state_from_history(
                history, seed=session.seed, **session.scenario
            )
            del session.plies[keep:]

    def lap(self, session: Session, arrow: str) -> None:
        """One lap of a real-time game: the person's arrow key (or none) and the bots' moves;
        the page calls it at the pace the person chose."""
        with session.lock:
            game, state = session.game, session.state
            if not game.real_time:
                raise WebError(400, f"{game.name} is not played in real time; send moves")
            if state.is_terminal():
                raise WebError(409, "the game is over; start a new one")
            if arrow not in ("", "up", "down", "left", "right"):
                raise WebError(400, f"arrow {arrow!r}: expected up, down, left, right or none")
            seat = session.humans[0]
            mine = None
            if state.legal_actions(seat):
                mine = game.arrow_action(state.array, seat, arrow)
                if mine is None:  # an arrow the bike cannot take: it keeps going
                    mine = game.arrow_action(state.array, seat, "")
            self._lap(session, mine)

    def _lap(self, session: Session, mine: int | None) -> None:
        """A simultaneous lap: the person's action and the bot team-mates' (or rivals')."""
        game, state = session.game, session.state
        actions = []
        for p in range(game.num_players):
            legal = state.legal_actions(p)
            if p in session.humans:
                action = game.neutral_action if mine is None or not legal else mine
                if legal and action not in legal:
                    names = " ".join(game.action_to_string(p, a) for a in legal)
                    raise WebError(400, f"illegal move {game.action_to_string(p, action)} for "
                                        f"{game.player_name(p)}; legal: {names}")  # fmt: skip
            elif not legal:
                action = game.neutral_action
            else:
                with self.pools.agent(game, session.spec) as agent:
                    action = int(agent.step(state.clone(), p))
            actions.append(int(action))
        try:
            state.apply_actions(actions)
        except IllegalActionError as error:
            raise WebError(400, str(error)) from None
        session.plies.extend(
            {"by": "you" if p in session.humans else "bot"} for p in range(len(actions))
        )

    def _advance(self, session: Session) -> None:
        state = session.state
        while not state.is_terminal() and _waiting_for(session) is None:
            player = state.current_player()
            if player == SIMULTANEOUS:  # the person has nothing to do this lap
                if session.game.real_time:
                    break  # the page's clock asks for each lap
                self._lap(session, None)
                continue
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
    player = _waiting_for(session)
    history = state.history()
    legal = []
    if player is not None:
        legal = [
            {
                "action": int(a),
                "move": game.action_to_string(player, int(a)),
                "cells": [list(c) for c in game.move_cells(int(a))],
                "target": list(target) if (target := game.move_target(int(a))) else None,
                "ends_turn": game.ends_turn(int(a)),
            }
            for a in state.legal_actions(player)
        ]
    plies = []
    for action, ply, before in zip(history, session.plies, _players(session), strict=False):
        plies.append({"move": game.action_to_string(before, int(action)), "by": ply["by"]})
    last_bot = next((p for p in reversed(session.plies) if "analysis" in p), None)
    return {
        "id": session.id,
        "game": game.spec(),
        "spec": session.spec,
        "you": [game.player_name(p) for p in session.humans],
        "seat": session.humans[0],
        "seed": session.seed,
        "board": str(state),
        "grid": game.grid(state.array),
        "grid_labels": game.grid_labels(state.array),
        "grid_style": game.grid_style,
        "to_move": game.player_name(player) if player is not None else None,
        "your_move": bool(legal),
        "real_time": game.real_time and not state.is_terminal(),
        "legal": legal,
        "history": game.format_moves(history),
        "plies": plies,
        "analysis": last_bot.get("analysis") if last_bot else None,
        "can_undo": any(p["by"] == "you" for p in session.plies),
        "result": _result(session) if state.is_terminal() else None,
        "returns": state.returns() if state.is_terminal() else None,
    }


def _waiting_for(session: Session) -> int | None:
    """The person's seat when the game waits for their move, else None."""
    state = session.state
    if state.is_terminal():
        return None
    player = state.current_player()
    if player == SIMULTANEOUS:
        return next((p for p in session.humans if state.legal_actions(p)), None)
    return player if player in session.humans else None


def _result(session: Session) -> str:
    if session.game.kind == "puzzle":  # the person and the bots are one team
        return "solved" if max(session.state.returns()) > 0 else "not solved"
    return outcome(session.state, session.humans)


def _players(session: Session) -> list[int]:
    """Who played each ply of the history (replayed from the start)."""
    game = session.game
    if game.simultaneous:  # a lap is one entry per player, in seat order
        return [i % game.num_players for i in range(len(session.state.history()))]
    state = game.state_from_history([], seed=session.seed, **session.scenario)
    players = []
    for action in session.state.history():
        players.append(state.current_player())
        state.apply_action(action)
    return players
