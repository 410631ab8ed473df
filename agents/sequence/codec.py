"""Action sequences ↔ rounds ↔ one-hot blocks: the encoding of histories that sequence models
see, shared by the dataset encoders (features.encode) and the learned agents
(agents.sequence.agent), so that training and play encode a game identically.

A turn-based game's steps fold into rounds (one action per player, the study's layout: the
Connect 4 round [5, -1] is "player 1 played column 6, the game ended before player 2 moved");
simultaneous laps are rounds already.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.protocol import SIMULTANEOUS, GameError


class EncodingError(GameError):
    """Values that do not fit the encoding (an action out of range)."""


@njit(cache=True)
def fold_rounds(values, offsets, num_players, neutral, fold, out, counts):
    """Step-major actions → rounds in `out` [n, width, num_players] (prefilled with neutral).

    With `fold`, a step joins the current round unless one of its acting players has already
    acted in it; otherwise every step is a round. counts[row] = rounds of the row (also those
    beyond the window)."""
    width = out.shape[1]
    acted = np.zeros(num_players, dtype=np.bool_)
    for row in range(offsets.shape[0] - 1):
        start = offsets[row]
        steps = (offsets[row + 1] - start) // num_players
        r = -1
        for t in range(steps):
            base = start + t * num_players
            fresh = r < 0 or not fold
            if not fresh:
                for p in range(num_players):
                    if values[base + p] != neutral and acted[p]:
                        fresh = True
            if fresh:
                r += 1
                acted[:] = False
            for p in range(num_players):
                v = values[base + p]
                if v != neutral:
                    acted[p] = True
                    if r < width:
                        out[row, r, p] = v
        counts[row] = r + 1


def sequence_length(game) -> int:
    """Default window: the game's `sequence_length` hook, else its longest game in rounds."""
    hook = getattr(game, "sequence_length", None)
    if hook:
        return int(hook)
    if game.simultaneous:
        return int(game.max_game_length)
    return -(-int(game.max_game_length) // int(game.num_players))


def rounds_from_steps(
    values: np.ndarray, offsets: np.ndarray, game, width: int, fold: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Flat step-major actions of n games (row i = values[offsets[i]:offsets[i + 1]]) →
    ([n, width, num_players] int16 rounds padded / cut with the neutral value, [n] rounds per
    row). `fold` defaults to True for turn-based games."""
    fold = (not game.simultaneous) if fold is None else fold
    n = len(offsets) - 1
    out = np.full((n, width, game.num_players), game.neutral_action, dtype=np.int16)
    counts = np.zeros(n, dtype=np.int64)
    fold_rounds(
        np.asarray(values, dtype=np.int64),
        np.asarray(offsets, dtype=np.int64),
        game.num_players,
        game.neutral_action,
        fold,
        out,
        counts,
    )
    return out, counts


def one_hot_actions(actions: np.ndarray, num_actions: int, neutral: int) -> np.ndarray:
    """[..., P] actions → [..., P * (num_actions + 1)] bits: per player a block whose bit 0 is
    the neutral value and bit a + 1 action a (Connect 4: 2 x 8 bits for actions -1..6)."""
    actions = np.asarray(actions, dtype=np.int64)
    index = np.where(actions == neutral, 0, actions + 1)
    if (index < 0).any() or (index > num_actions).any():
        raise EncodingError(f"action out of range for one-hot encoding: {actions[(index < 0)][:3]}")
    block = num_actions + 1
    out = np.zeros((*actions.shape, block), dtype=np.int8)
    np.put_along_axis(out, index[..., None], 1, axis=-1)
    return out.reshape(*actions.shape[:-1], actions.shape[-1] * block)


def decode_one_hot_actions(
    bits: np.ndarray, num_players: int, num_actions: int, neutral: int
) -> np.ndarray:
    """The inverse of `one_hot_actions` (argmax per block, so model outputs decode too)."""
    bits = np.asarray(bits)
    blocks = bits.reshape(*bits.shape[:-1], num_players, num_actions + 1)
    index = blocks.argmax(axis=-1).astype(np.int64)
    return np.where(index == 0, neutral, index - 1).astype(np.int16)


def step_history(kernels, initial: np.ndarray, history, num_players: int, neutral: int):
    """(actions [steps, P], states [steps, state_size] after each step) of a history played
    from `initial`: the step-major layout of a dataset's `sequences.actions` (neutral for the
    players who did not act, chance steps left out) and the position each step leaves."""
    s = np.array(initial, dtype=np.int64)
    rows: list[np.ndarray] = []
    after: list[np.ndarray] = []
    i = 0
    while i < len(history):
        mover = int(kernels.current_player(s))
        if mover == SIMULTANEOUS:
            joint = np.asarray(history[i : i + num_players], dtype=np.int64)
            kernels.apply_joint(s, joint)
            rows.append(joint)
            after.append(s.copy())
            i += num_players
            continue
        kernels.apply_action(s, np.int64(history[i]))
        if mover >= 0:
            row = np.full(num_players, neutral, dtype=np.int64)
            row[mover] = history[i]
            rows.append(row)
            after.append(s.copy())
        i += 1
    actions = np.array(rows, dtype=np.int64).reshape(-1, num_players)
    return actions, np.array(after, dtype=np.int64).reshape(len(after), s.shape[0])


def board_one_hot(codes: np.ndarray, player: np.ndarray, num_players: int, deadly: bool,
                  necks: bool = False) -> np.ndarray:  # fmt: skip
    """[n, H, W] board codes → [n, blocks * H * W] int8: one block per player, the row's player
    first then the next seats in order (Othello: 64 own + 64 opponent), a block of deadly tiles
    (every negative code) when `deadly`, then one block of necks per player in the same order
    when `necks` (Game.neck_tiles)."""
    codes = np.asarray(codes)
    n = len(codes)
    flat = codes.reshape(n, -1)
    player = np.asarray(player, dtype=np.int64)
    owners = [((player + k) % num_players + 1)[:, None] for k in range(num_players)]
    blocks = [flat == owner for owner in owners]
    if deadly:
        blocks.append(flat < 0)
    if necks:
        blocks += [flat == -(owner + 1) for owner in owners]
    return np.concatenate(blocks, axis=1).astype(np.int8)


def board_blocks(game) -> tuple[bool, bool]:
    """(deadly, necks): the optional blocks of the game's `board_one_hot`."""
    return bool(getattr(game, "deadly_tiles", False)), bool(getattr(game, "neck_tiles", False))


def step_boards(game, states: np.ndarray) -> np.ndarray:
    """[steps, blocks * cells] int8: the board each step leaves, seat 0's block first, for
    sequence models that read the board beside the moves (`gridbots encode --boards`): where
    a string of column numbers hides a threat, the board shows it."""
    hook = getattr(game, "board_codes", None)
    if hook is None:
        raise EncodingError(f"{game.name} has no board codes (Game.board_codes is not defined)")
    if len(states) == 0:
        return np.zeros((0, board_width(game)), dtype=np.int8)
    codes = np.asarray(hook(states), dtype=np.int8)
    return board_one_hot(codes, np.zeros(len(codes)), game.num_players, *board_blocks(game))


def board_width(game) -> int:
    """Bits per step of `step_boards`."""
    return step_boards(game, game.new_initial_state().array[None]).shape[1]
