"""Messages about moves in each game's own notation, for people: errors, logs, prompts.

A refused move reads `illegal move 4 for X after "444444": column 4 is full; legal: 1 2 3 5 6
7`: the move and the legal ones as the game writes them (`Game.action_to_string`), the player as
the board names it (`Game.player_name`) and the reason in the game's words
(`Game.illegal_reason`), with a generic reason for games that give none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from engine.protocol import SIMULTANEOUS, TERMINAL, Game, State
from engine.values import is_int

#: legal moves named in a message, at most (a tactics turn can have hundreds)
LEGAL_SHOWN = 40
HISTORY_SHOWN = 48


def describe_illegal(
    state: State, action: Any, player: int | None, legal: Sequence[int] = ()
) -> str:
    """`illegal move MOVE [for WHO] [after "HISTORY"]: REASON[; legal: MOVES]`, in the game's
    notation; the reason comes from `Game.illegal_reason` or a generic explanation."""
    game, current = state.game, state.current_player()
    after = after_history(state)
    if isinstance(action, list | tuple):  # a simultaneous lap
        if current != SIMULTANEOUS:
            return f"illegal lap {list(action)}{after}: not a simultaneous lap, one move at a time"
        return f"illegal lap {list(action)}{after}: a lap takes {game.num_players} moves"
    # whose notation the move is written in (the player to move when none is named)
    mover = current if current not in (TERMINAL, SIMULTANEOUS) else 0
    mover = mover if player is None else player
    known = is_int(action) and 0 <= int(action) < game.num_actions
    if known:
        move = game.action_to_string(mover, int(action))
    else:
        move = f"id {action}" if is_int(action) else repr(action)
    who = f" for {game.player_name(player)}" if player is not None and player >= 0 else ""
    if current == TERMINAL:
        reason = "the game is over"
    elif current == SIMULTANEOUS and player is None:
        reason = "everyone moves at once here: one move per player (apply_actions)"
    elif not is_int(action):
        reason = "not an action id"
    elif not known:
        reason = f"{game.name} action ids run from 0 to {game.num_actions - 1}"
    else:
        reason = game.illegal_reason(state.array, int(action), mover) or "not a legal move here"
    return f"illegal move {move}{who}{after}: {reason}" + legal_clause(game, mover, legal)


def legal_clause(game: Game, player: int, legal: Sequence[int]) -> str:
    """`; legal: c4 d3 e6 f5` in natural order (the first LEGAL_SHOWN), or "" for none."""
    if not legal:
        return ""
    words = sorted((game.action_to_string(player, int(a)) for a in legal), key=_natural)
    more = len(words) - LEGAL_SHOWN
    return "; legal: " + " ".join(words[:LEGAL_SHOWN]) + (f" … ({more} more)" if more > 0 else "")


def after_history(state: State) -> str:
    """` after "4453"`: where a message's position comes from (its last moves), or ""."""
    history = state.history()
    if not history:
        return ""
    shown = state.game.format_moves(history)
    if len(shown) > HISTORY_SHOWN:
        shown = "…" + shown[-HISTORY_SHOWN:]
    return f' after "{shown}"'


def _natural(word: str) -> tuple:
    """Sort key that orders `c4 d3 e6 f5` and `2 10` as people do."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", word))
