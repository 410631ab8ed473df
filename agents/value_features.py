"""Per-state inputs of the value MLP, built the way features.encode builds a dataset's rows.

A value network is only usable by a search if the search can encode the positions it reaches
exactly as the training data was encoded. Agents may not import models/ (nor TensorFlow), so
the per-state encoders live here, on the same game hooks features.encode uses:

  board-onehot  the game's `board_codes` of the state; one block of H*W bits per player, the
                side to move's block first, then the next seats in order, then (games with
                deadly tiles) a block of -1 tiles
  count-onehot  the set-cell count of every observation plane seen by the side to move, its
                number of legal actions and of immediately winning actions, each a one-hot of
                COUNT_LENGTH bits (counts beyond saturate)
  seat-observation  the whole observation seen by seat 0, then a one-hot of the side to move
                (the TD networks of models.td: they read seat 0's pieces and seat 1's, and
                turn their estimate for seat 1 into the mover's inside the graph)

Both return float32 vectors; tests check them against features.encode on generated datasets.
Agents never import features/, so the count of immediately winning actions is computed here by
the same rule the dataset techniques use (features.generate.tables.describe_position).
"""

from __future__ import annotations

import numpy as np

from agents.guards import lap_filter, wins
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game
from engine.specialise import apply_action, bind, current_player, generic, legal_actions, returns

ENCODINGS = ("board-onehot", "count-onehot", "seat-observation")
COUNT_LENGTH = 40  # the one-hot width of one count (features.encode imports it from here)


@generic
def legal_and_winning(s, player, teams, num_players, neutral, lists, child, legal, counts, out):
    """(legal actions of `player`, how many of them win at once): turn-based, the game ends
    with `player` ahead of every rival; simultaneous, it does so whatever the others choose.
    Buffers: lists (3, width), child (state size), legal (players, width), counts (2, players),
    out (players) float64."""
    moves, keep, verdict = lists[0], lists[1], lists[2]
    mover = current_player(s)
    if mover == TERMINAL or mover == CHANCE or (mover >= 0 and mover != player):
        return 0, 0
    n = legal_actions(s, player, moves)
    won = 0
    if mover == SIMULTANEOUS:
        if n > 0:
            lap_filter(s, player, 0, teams, num_players, neutral, moves, n, keep, child, verdict,
                       legal, counts[0], counts[1], out)  # fmt: skip
            for i in range(n):
                if verdict[i] == 1:
                    won += 1
        return n, won
    for i in range(n):
        child[:] = s
        apply_action(child, moves[i])
        if current_player(child) == TERMINAL:
            returns(child, out)
            if wins(out, player, teams, num_players):
                won += 1
    return n, won


def input_size(game: Game, encoding: str) -> int:
    """Length of the encoded vector of one state."""
    if encoding == "board-onehot":
        state = game.new_initial_state(seed=0).array
        cells = int(np.asarray(game.board_codes(state[None])).size)
        return cells * (game.num_players + int(bool(game.deadly_tiles)))
    if encoding == "count-onehot":
        return (game.observation_shape[0] + 2) * COUNT_LENGTH
    if encoding == "seat-observation":
        return int(np.prod(game.observation_shape)) + game.num_players
    raise ValueError(f"no per-state encoder for encoding {encoding!r}; known: {ENCODINGS}")


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
        self._deadly = bool(game.deadly_tiles)
        if encoding == "count-onehot":
            g = game
            width = max(g.num_actions, 64)
            self._describe = bind(legal_and_winning, g.kernels.search())
            self._teams = np.asarray(g.teams, dtype=np.int64)
            self._out = np.zeros(g.num_players, dtype=np.float64)
            self._lists = np.empty((3, width), dtype=np.int64)
            self._legal = np.empty((g.num_players, width), dtype=np.int64)
            self._counts = np.empty((2, g.num_players), dtype=np.int64)
            self._planes = np.zeros(int(np.prod(g.observation_shape)), dtype=np.float32)

    def __call__(self, s: np.ndarray, player: int) -> np.ndarray:
        """float32 [size]: the encoding of state array `s` seen by `player` (the side to move)."""
        return self.batch(np.asarray(s)[None], np.array([player]))[0]

    def batch(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        """float32 [n, size] for state arrays [n, state_size] and their sides to move [n]."""
        states = np.asarray(states, dtype=np.int64)
        players = np.asarray(players, dtype=np.int64)
        if self.encoding == "board-onehot":
            return self._board(states, players)
        if self.encoding == "seat-observation":
            return self._seat(states, players)
        return np.stack([self._count(s, int(p)) for s, p in zip(states, players, strict=True)])

    def _board(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        n, num_players = len(states), self.game.num_players
        flat = np.asarray(self.game.board_codes(states)).reshape(n, -1)
        blocks = [flat == ((players + k) % num_players + 1)[:, None] for k in range(num_players)]
        if self._deadly:
            blocks.append(flat == -1)
        return np.concatenate(blocks, axis=1).astype(np.float32)

    def _seat(self, states: np.ndarray, players: np.ndarray) -> np.ndarray:
        g = self.game
        cells = int(np.prod(g.observation_shape))
        out = np.zeros((len(states), self.size), dtype=np.float32)
        for row, (s, p) in enumerate(zip(states, players, strict=True)):
            g.kernels.observation(s, 0, out[row, :cells])
            out[row, cells + int(p)] = 1.0
        return out

    def _count(self, s: np.ndarray, player: int) -> np.ndarray:
        g = self.game
        child = np.empty_like(s)
        legal, won = self._describe(
            s, player, self._teams, g.num_players, g.neutral_action, self._lists, child,
            self._legal, self._counts, self._out,
        )  # fmt: skip
        self._planes[:] = 0
        g.kernels.observation(s, player, self._planes)
        planes = self._planes.reshape(g.observation_shape[0], -1)
        raw = np.concatenate([np.rint(planes.sum(axis=1)).astype(np.int64), [int(legal), int(won)]])
        raw = np.clip(raw, 0, COUNT_LENGTH - 1)
        out = np.zeros((len(raw), COUNT_LENGTH), dtype=np.float32)
        out[np.arange(len(raw)), raw] = 1.0
        return out.ravel()


def encode_state(game: Game, state_array: np.ndarray, player: int, encoding: str) -> np.ndarray:
    """One state's value-MLP input (float32 [input_size]); prefer a ValueEncoder in loops."""
    return ValueEncoder(game, encoding)(state_array, player)
