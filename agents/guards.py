"""Guards for random play (`random:guards=win+block+safe`), generic over the kernels.

A guard narrows the legal moves by looking one move (and, for `block`, one reply) ahead:
  win    take a move after which the game is over and the mover strictly beats every opponent;
  block  avoid moves after which the opponent to move has an immediately winning reply; in a
         simultaneous game, among the actions `safe` keeps, avoid those that kill the player
         for some joint choice of the others (a tile another bike may enter too) when one
         kills it for none: the lap's version of a reply that wins at once.
  safe   avoid moves that lose at once; in a simultaneous game an action that kills the player
         (no legal action after the lap, or the game over without it winning) for every joint
         choice of the other living players, so a bike never drives into a wall when it has a
         way out.
A filter that would leave nothing is skipped; the choice among the survivors is uniform.
Everything runs in a per-game compiled loop, so guarded random play is cheap enough to generate
data with.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.base import AgentError
from engine.bits import new_rng, rand_below
from engine.loops import sample_chance
from engine.protocol import CHANCE, SIMULTANEOUS, TERMINAL, Game
from engine.specialise import (
    apply_action,
    apply_joint,
    bind,
    current_player,
    generic,
    legal_actions,
    returns,
)

WIN, BLOCK, SAFE = 1, 2, 4
GUARDS = {"win": WIN, "block": BLOCK, "safe": SAFE}


def parse_guards(text: str) -> int:
    """`win+block` -> bit flags; an unknown name is an AgentError."""
    flags = 0
    for name in filter(None, (part.strip() for part in text.split("+"))):
        if name not in GUARDS:
            raise AgentError(f"unknown guard {name!r}; known: {', '.join(GUARDS)} (joined by '+')")
        flags |= GUARDS[name]
    return flags


@njit(cache=True, inline="always")
def wins(outcome, player, teams, num_players):
    """`player` strictly beats every player of another team (alone: a positive return)."""
    rivals = False
    for q in range(num_players):
        if teams[q] != teams[player]:
            rivals = True
            if outcome[q] >= outcome[player]:
                return False
    return rivals or outcome[player] > 0


@njit(cache=True, inline="always")
def loses(outcome, player, teams, num_players):
    """Some player of another team does strictly better (alone: a negative return)."""
    rivals = False
    for q in range(num_players):
        if teams[q] != teams[player]:
            rivals = True
            if outcome[q] > outcome[player]:
                return True
    return not rivals and outcome[player] < 0


@generic(inline=True)
def turn_filter(s, player, flags, teams, num_players, moves, n, keep, child, grand, replies, out):
    """The guarded subset of moves[:n] of a turn-based position, written to keep; its size."""
    m = 0
    if flags & WIN:
        for i in range(n):
            child[:] = s
            apply_action(child, moves[i])
            if current_player(child) == TERMINAL:
                returns(child, out)
                if wins(out, player, teams, num_players):
                    keep[m] = moves[i]
                    m += 1
        if m > 0:
            return m
    m = n
    keep[:n] = moves[:n]
    if flags & SAFE:
        k = 0
        for i in range(m):
            child[:] = s
            apply_action(child, keep[i])
            lost = False
            if current_player(child) == TERMINAL:
                returns(child, out)
                lost = loses(out, player, teams, num_players)
            if not lost:
                keep[k] = keep[i]
                k += 1
        if k > 0:
            m = k
    if flags & BLOCK:
        k = 0
        for i in range(m):
            child[:] = s
            apply_action(child, keep[i])
            opponent = current_player(child)
            threat = False
            if opponent >= 0 and teams[opponent] != teams[player]:
                count = legal_actions(child, opponent, replies)
                for j in range(count):
                    grand[:] = child
                    apply_action(grand, replies[j])
                    if current_player(grand) == TERMINAL:
                        returns(grand, out)
                        if wins(out, opponent, teams, num_players):
                            threat = True
                            break
            if not threat:
                keep[k] = keep[i]
                k += 1
        if k > 0:
            m = k
    return m


@generic(inline=True)
def lap_filter(
    s,
    player,
    flags,
    teams,
    num_players,
    neutral,
    moves,
    n,
    keep,
    child,
    verdict,
    legal,
    counts,
    joint,
    out,
):
    """The guarded subset of `player`'s actions at a simultaneous node, against every joint
    choice of the other players (mixed-radix enumeration); written to keep, returns its size."""
    total = 1
    for q in range(num_players):
        counts[q] = 1
        if q != player:
            c = legal_actions(s, q, legal[q])
            if c == 0:
                legal[q, 0] = neutral
                c = 1
            counts[q] = c
            total *= c
    any_win = False
    any_sure = False
    for i in range(n):
        always_win = True
        always_dead = True
        ever_dead = False
        for index in range(total):
            rest = index
            for q in range(num_players):
                if q == player:
                    joint[q] = moves[i]
                else:
                    joint[q] = legal[q, rest % counts[q]]
                    rest //= counts[q]
            child[:] = s
            apply_joint(child, joint)
            if current_player(child) == TERMINAL:
                returns(child, out)
                won = wins(out, player, teams, num_players)
                dead = not won
            else:
                won = False
                dead = legal_actions(child, player, legal[player]) == 0
            always_win = always_win and won
            always_dead = always_dead and dead
            ever_dead = ever_dead or dead
            if not always_win and not always_dead and (ever_dead or not flags & BLOCK):
                break
        verdict[i] = WIN if always_win else (SAFE if always_dead else (BLOCK if ever_dead else 0))
        any_win = any_win or always_win
        any_sure = any_sure or not ever_dead
    m = 0
    if flags & WIN and any_win:
        for i in range(n):
            if verdict[i] == WIN:
                keep[m] = moves[i]
                m += 1
        return m
    if flags & BLOCK and any_sure:  # the actions no joint choice kills (none is SAFE)
        for i in range(n):
            if verdict[i] != SAFE and verdict[i] != BLOCK:
                keep[m] = moves[i]
                m += 1
        return m
    if flags & SAFE:
        for i in range(n):
            if verdict[i] != SAFE:
                keep[m] = moves[i]
                m += 1
    if m == 0:
        keep[:n] = moves[:n]
        m = n
    return m


# ---- immediate wins: the one definition (datasets, value features, the `win` guard) --------
@njit(cache=True)
def win_buffers(size, num_players, num_actions):
    """The scratch arrays of `immediate_wins` for one game: (lists (3, width), child state,
    legal (players, width), counts (2, players), returns (players))."""
    width = max(num_actions, 64)
    return (
        np.empty((3, width), np.int64),
        np.empty(size, np.int64),
        np.empty((num_players, width), np.int64),
        np.ones((2, num_players), np.int64),
        np.zeros(num_players, np.float64),
    )


@generic
def immediate_wins(s, player, teams, num_players, neutral, buffers):
    """(n, k): `player`'s n legal actions (left in buffers[0][0][:n]) and how many of them win
    at once, i.e. the moves the `win` guard keeps. An action wins at once when the game is over
    right after it and `player` strictly beats every player of another team (with no other
    team: a positive return); at a simultaneous lap it must do so for every joint choice of the
    other players, all of them enumerated. (0, 0) when `player` is not to move (another
    player's turn, a chance node, the end). Every count of immediate wins uses it: the
    datasets' `immediate_wins` column (randomized, thorough, battle, self-play tables) and the
    value networks' count-onehot input at play time."""
    lists, child, legal, counts, out = buffers
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
                if verdict[i] == WIN:
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


@generic
def guarded_action(
    s, player, flags, teams, num_players, neutral, rng, lists, states, legal, counts, joint, out
):
    """A uniform choice among the guarded moves of `player` (the player to move unless the node
    is simultaneous); chance nodes draw by probability, a player who cannot act gets neutral.
    Buffers: lists (3, width) moves/kept/verdicts, states (2, state size), legal
    (players, width), counts, joint, out (players)."""
    moves, keep = lists[0], lists[1]
    mover = current_player(s)
    if mover == CHANCE:
        return sample_chance(s, moves, rng)
    if mover == SIMULTANEOUS:
        n = legal_actions(s, player, moves)
        if n == 0:
            return neutral
        if flags == 0:
            return moves[rand_below(rng, n)]
        m = lap_filter(
            s,
            player,
            flags,
            teams,
            num_players,
            neutral,
            moves,
            n,
            keep,
            states[0],
            lists[2],
            legal,
            counts,
            joint,
            out,
        )
        return keep[rand_below(rng, m)]
    n = legal_actions(s, mover, moves)
    if n == 0:
        return neutral
    if flags == 0:
        return moves[rand_below(rng, n)]
    m = turn_filter(
        s, mover, flags, teams, num_players, moves, n, keep, states[0], states[1], lists[2], out
    )
    return keep[rand_below(rng, m)]


@generic
def guarded_games(start, seat_flags, teams, num_players, num_actions, neutral, num_games, rng):
    """`num_games` games from `start`, each seat playing guarded random with its own flags:
    (total steps, summed returns per player). The loop data generation and benchmarks use."""
    width = max(num_actions, 64)
    lists = np.empty((3, width), dtype=np.int64)
    states = np.empty((2, start.shape[0]), dtype=np.int64)
    legal = np.empty((num_players, width), dtype=np.int64)
    counts = np.empty(num_players, dtype=np.int64)
    joint = np.empty(num_players, dtype=np.int64)
    out = np.zeros(num_players, dtype=np.float64)
    choice = np.empty(num_players, dtype=np.int64)
    totals = np.zeros(num_players, dtype=np.float64)
    s = start.copy()
    steps = 0
    for _ in range(num_games):
        s[:] = start
        while True:
            mover = current_player(s)
            if mover == TERMINAL:
                break
            if mover == SIMULTANEOUS:
                for p in range(num_players):
                    choice[p] = guarded_action(
                        s,
                        p,
                        seat_flags[p],
                        teams,
                        num_players,
                        neutral,
                        rng,
                        lists,
                        states,
                        legal,
                        counts,
                        joint,
                        out,
                    )
                apply_joint(s, choice)
            else:
                flags = seat_flags[mover] if mover >= 0 else 0
                action = guarded_action(
                    s,
                    mover,
                    flags,
                    teams,
                    num_players,
                    neutral,
                    rng,
                    lists,
                    states,
                    legal,
                    counts,
                    joint,
                    out,
                )
                apply_action(s, action)
            steps += 1
        returns(s, out)
        totals += out
    return steps, totals


class GuardedChooser:
    """Guarded random choices for one game: the compiled loop plus reusable buffers."""

    def __init__(self, game: Game, flags: int, seed: int | None = None):
        self.game = game
        self.flags = flags
        self.rng = new_rng(0 if seed is None else seed)
        self.teams = np.asarray(game.teams, dtype=np.int64)
        self._choose = bind(guarded_action, game.kernels.search())
        width, n = max(game.num_actions, 64), game.num_players
        self._lists = np.empty((3, width), dtype=np.int64)
        self._states = np.empty((2, 0), dtype=np.int64)
        self._per_player = (
            np.empty((n, width), dtype=np.int64),
            np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64),
            np.zeros(n, dtype=np.float64),
        )

    def choose(self, s: np.ndarray, player: int | None = None) -> int:
        """A guarded action for `player` in the kernel state `s` (never modified)."""
        if self._states.shape[1] != s.shape[0]:
            self._states = np.empty((2, s.shape[0]), dtype=np.int64)
        g = self.game
        who = -1 if player is None else int(player)
        args = (self.flags, self.teams, g.num_players, g.neutral_action, self.rng)
        return int(self._choose(s, who, *args, self._lists, self._states, *self._per_player))


def play_guarded_games(game: Game, start: np.ndarray, seat_flags, num_games: int, rng):
    """`num_games` guarded random games from `start`: (total steps, summed returns per player)."""
    entry = bind(guarded_games, game.kernels.search())
    flags = np.asarray(seat_flags, dtype=np.int64)
    teams = np.asarray(game.teams, dtype=np.int64)
    meta = (game.num_players, game.num_actions, game.neutral_action)
    return entry(start, flags, teams, *meta, num_games, rng)
