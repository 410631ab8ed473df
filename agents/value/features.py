"""Per-state inputs of the value MLP, built the way features.encode builds a dataset's rows.

A value network is only usable by a search if the search can encode the positions it reaches
exactly as the training data was encoded. Agents may not import models/ (nor TensorFlow), so
the per-state encoders live here, on the same game hooks features.encode uses:

  board-onehot  the game's `board_codes` of the state; one block of H*W bits per player, the
                side to move's block first, then the next seats in order, then (games with
                deadly tiles) a block of deadly tiles, then (games with neck tiles) one
                block of necks per seat in the same order (agents.sequence.codec.board_one_hot)
  count-onehot  the set-cell count of every observation plane seen by the side to move, its
                number of legal actions and of immediately winning actions, each a one-hot of
                COUNT_LENGTH bits (counts beyond saturate)
  seat-observation  the whole observation seen by seat 0, then a one-hot of the side to move
                (the TD networks of models.td: they read seat 0's pieces and seat 1's, and
                turn their estimate for seat 1 into the mover's inside the graph)
  value-planes  the game's observation planes seen by the given player, flattened

Each returns float32 vectors; tests check them against features.encode on generated datasets.
The count of immediately winning actions is agents.guards.immediate_wins, the one definition
the dataset techniques use too.
"""

from __future__ import annotations

import numpy as np

from agents.guards import immediate_wins, win_buffers
from agents.sequence.codec import board_blocks, board_one_hot
from engine.protocol import Game
from engine.specialise import bind, generic

ENCODINGS = ("board-onehot", "count-onehot", "seat-observation", "value-planes")
COUNT_LENGTH = 40  # the one-hot width of one count (features.encode imports it from here)


def input_size(game: Game, encoding: str) -> int:
    """Length of the encoded vector of one state."""
    if encoding == "board-onehot":
        state = game.new_initial_state(seed=0).array
        cells = int(np.asarray(game.board_codes(state[None])).size)
        deadly, necks = board_blocks(game)
        return cells * (game.num_players * (1 + necks) + deadly)
    if encoding == "count-onehot":
        return (game.observation_shape[0] + 2) * COUNT_LENGTH
    if encoding == "seat-observation":
        return int(np.prod(game.observation_shape)) + game.num_players
    if encoding == "value-planes":
        return int(np.prod(game.observation_shape))
    raise ValueError(f"no per-state encoder for encoding {encoding!r}; known: {ENCODINGS}")


def observation(s, player, out):
    """Placeholder: `bind(..., observation=kernels.observation)` puts the game's kernel here."""
    raise TypeError("observation is only available inside a bound loop")


@generic
def count_rows(states, players, teams, num_players, neutral, buffers, planes, out):
    """out[i] (zeroed, [n, (planes + 2) * COUNT_LENGTH]): the count-onehot of states[i] seen by
    players[i], in one compiled loop: a search evaluates whole batches of leaves, and a Python
    call per state cost Othello's td-promote stage half of its time."""
    n_planes = out.shape[1] // COUNT_LENGTH - 2
    cells = planes.shape[0] // n_planes
    top = COUNT_LENGTH - 1
    for i in range(states.shape[0]):
        player = players[i]
        legal, won = immediate_wins(states[i], player, teams, num_players, neutral, buffers)
        planes[:] = 0
        observation(states[i], player, planes)
        for k in range(n_planes):
            total = 0.0
            for c in range(k * cells, (k + 1) * cells):
                total += planes[c]
            out[i, k * COUNT_LENGTH + min(max(int(np.rint(total)), 0), top)] = 1.0
        out[i, n_planes * COUNT_LENGTH + min(legal, top)] = 1.0
        out[i, (n_planes + 1) * COUNT_LENGTH + min(won, top)] = 1.0


@generic
def observation_rows(states, players, cells, out):
    """out[i, :cells] (zeroed): the observation of states[i] seen by players[i]; where `out` is
    wider (seat-observation), seen by seat 0 and followed by a one-hot of players[i]. One
    compiled loop, as count_rows: a batch of leaves costs no Python call per state."""
    seat_zero = out.shape[1] > cells
    for i in range(states.shape[0]):
        if seat_zero:
            observation(states[i], 0, out[i, :cells])
            out[i, cells + players[i]] = 1.0
        else:
            observation(states[i], players[i], out[i, :cells])


class ValueEncoder:
    """Encodes states of one game for one encoding, reusing its buffers between calls."""

    def __init__(self, game: Game, encoding: str):
        if encoding not in ENCODINGS:
            raise ValueError(f"no per-state encoder for encoding {encoding!r}; known: {ENCODINGS}")
        if encoding == "board-onehot" and game.board_codes is None:
            raise ValueError(f"{game.name} has no board codes, so no board-onehot encoding")
        self.game = game
        self.encoding = encoding
        self.size = input_size(game, encoding)
        if encoding in ("seat-observation", "value-planes"):
            self._cells = int(np.prod(game.observation_shape))
            kernels = game.kernels
            self._observe = bind(
                observation_rows, kernels.search(), observation=kernels.observation
            )
        if encoding == "count-onehot":
            g = game
            size = g.new_initial_state(seed=0).array.shape[0]
            self._rows = bind(count_rows, g.kernels.search(), observation=g.kernels.observation)
            self._teams = np.asarray(g.teams, dtype=np.int64)
            self._buffers = win_buffers(size, g.num_players, g.num_actions)
            self._planes = np.zeros(int(np.prod(g.observation_shape)), dtype=np.float32)

    def __call__(self, s: np.ndarray, player: int) -> np.ndarray:
        """float32 [size]: the encoding of state array `s` seen by `player` (the side to move)."""
        return self.batch(np.asarray(s)[None], np.array([player]))[0]

    def batch(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        """float32 [n, size] for state arrays [n, state_size] and their sides to move [n]."""
        states = np.ascontiguousarray(states, dtype=np.int64)  # the compiled loops' layout
        players = np.asarray(players, dtype=np.int64)
        if self.encoding == "board-onehot":
            return self._board(states, players)
        out = np.zeros((len(states), self.size), dtype=np.float32)
        if self.encoding in ("seat-observation", "value-planes"):
            self._observe(states, players, self._cells, out)
            return out
        g = self.game
        self._rows(states, players, self._teams, g.num_players,
                   g.neutral_action, self._buffers, self._planes, out)  # fmt: skip
        return out

    def _board(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        codes = self.game.board_codes(states)
        bits = board_one_hot(codes, players, self.game.num_players, *board_blocks(self.game))
        return bits.astype(np.float32)


def encode_state(game: Game, state_array: np.ndarray, player: int, encoding: str) -> np.ndarray:
    """One state's value-MLP input (float32 [input_size]); prefer a ValueEncoder in loops."""
    return ValueEncoder(game, encoding)(state_array, player)
