"""The Othello League (Lucas and Runarsson 2006): a candidate against the standard weighted
piece counter at one ply, printed as JSON.

Both players take a uniformly random legal move instead of their own with probability ε = 0.1
on every move, colours alternate from game to game, and the score is (wins + draws / 2) / games
with a 95% Wilson interval. The League's opponent (the Yoshioka et al. 1999 weights) and the
rules it is played by are written here from scratch: a plain 8x8 grid and ray walks, sharing no
code with engine/games/othello.py. Every position's legal moves, every board after a move and
every final result are checked against the engine as the games are played, so an engine bug
cannot hide in the score (a disagreement stops the run with exit code 1).

    .venv/bin/python benchmarks/othello_league.py --candidate SPEC [--games 2000] [--seed 0]

SPEC is any agent spec (`td:model=zoo/othello/td-ntuple/model.onnx`, `alphabeta:depth=3`, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import numpy as np

EMPTY, BLACK, WHITE = 0, 1, 2
SIDE = 8
PASS = 64
DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
EPSILON = 0.1
#: Yoshioka et al. 1999 as the League uses it (rows 1-4; rows 5-8 mirror them)
_TOP = (
    (1.00, -0.25, 0.10, 0.05, 0.05, 0.10, -0.25, 1.00),
    (-0.25, -0.25, 0.01, 0.01, 0.01, 0.01, -0.25, -0.25),
    (0.10, 0.01, 0.05, 0.02, 0.02, 0.05, 0.01, 0.10),
    (0.05, 0.01, 0.02, 0.01, 0.01, 0.02, 0.01, 0.05),
)
WPC = tuple(w for row in (*_TOP, *reversed(_TOP)) for w in row)


class Disagreement(Exception):
    """The engine and this file's rules differ on a position."""


def start_board() -> list[int]:
    """Square 8 * row + column (row 0 = rank 1): white d4 e5, black d5 e4, black to move."""
    board = [EMPTY] * 64
    board[27] = board[36] = WHITE
    board[28] = board[35] = BLACK
    return board


def flips(board: list[int], square: int, colour: int) -> list[int]:
    """The squares `colour` turns over by playing `square` (empty when it is not legal)."""
    if board[square] != EMPTY:
        return []
    other = BLACK + WHITE - colour
    row, col = divmod(square, SIDE)
    turned: list[int] = []
    for dr, dc in DIRECTIONS:
        r, c, run = row + dr, col + dc, []
        while 0 <= r < SIDE and 0 <= c < SIDE and board[r * SIDE + c] == other:
            run.append(r * SIDE + c)
            r, c = r + dr, c + dc
        if run and 0 <= r < SIDE and 0 <= c < SIDE and board[r * SIDE + c] == colour:
            turned += run
    return turned


def legal_moves(board: list[int], colour: int) -> list[int]:
    """Squares where `colour` may place a disc, in increasing order."""
    return [sq for sq in range(64) if board[sq] == EMPTY and flips(board, sq, colour)]


def play(board: list[int], square: int, colour: int) -> list[int]:
    """The board after `colour` places a disc on `square` (a legal move)."""
    after = list(board)
    for sq in flips(board, square, colour):
        after[sq] = colour
    after[square] = colour
    return after


def wpc_value(board: list[int], colour: int) -> float:
    """The weighted piece counter for `colour`: its discs' weights minus the opponent's."""
    total = 0.0
    for sq, disc in enumerate(board):
        if disc == colour:
            total += WPC[sq]
        elif disc != EMPTY:
            total -= WPC[sq]
    return total


def wpc_move(board: list[int], colour: int, moves: list[int], rng: np.random.Generator) -> int:
    """The one-ply WPC player: the move whose result it values most (ties broken at random)."""
    values = [wpc_value(play(board, m, colour), colour) for m in moves]
    best = max(values)
    return int(rng.choice([m for m, v in zip(moves, values, strict=True) if v == best]))


def board_of(array: np.ndarray) -> list[int]:
    """This file's board of an engine state (s[0]: black bitboard, s[1]: white)."""
    black, white = int(array[0]) & (2**64 - 1), int(array[1]) & (2**64 - 1)
    return [BLACK if black >> k & 1 else WHITE if white >> k & 1 else EMPTY for k in range(64)]


def _check(condition: bool, what: str, game_no: int, ply: int) -> None:
    if not condition:
        raise Disagreement(f"game {game_no}, ply {ply}: {what}")


def play_game(
    game, candidate: Callable, candidate_colour: int, rng: np.random.Generator, game_no: int = 0
) -> tuple[float, int]:
    """One League game: (the candidate's score 1 / 0.5 / 0, plies), checked move by move."""
    state = game.new_initial_state(seed=game_no)
    board, colour, ply = start_board(), BLACK, 0
    _check(board_of(state.array) == board, "start positions differ", game_no, ply)
    while True:
        moves = legal_moves(board, colour)
        if not moves and not legal_moves(board, BLACK + WHITE - colour):
            break
        _check(not state.is_terminal(), "the engine ended a game that goes on", game_no, ply)
        engine_moves = sorted(int(a) for a in state.legal_actions())
        _check(engine_moves == (moves or [PASS]), f"legal {engine_moves} vs {moves}", game_no, ply)
        _check(state.current_player() == colour - 1, "the engine's mover differs", game_no, ply)
        if not moves:
            action = PASS
        elif rng.random() < EPSILON:
            action = int(rng.choice(moves))
        elif colour == candidate_colour:
            action = int(candidate(state))
            _check(action in moves, f"the candidate played an illegal {action}", game_no, ply)
        else:
            action = wpc_move(board, colour, moves, rng)
        state.apply_action(action)
        if action != PASS:
            board = play(board, action, colour)
        colour = BLACK + WHITE - colour
        ply += 1
        _check(board_of(state.array) == board, f"boards differ after {action}", game_no, ply)
    _check(state.is_terminal(), "the engine goes on after the game ended", game_no, ply)
    mine, theirs = board.count(candidate_colour), board.count(BLACK + WHITE - candidate_colour)
    score = 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
    engine_score = (state.returns()[candidate_colour - 1] + 1) / 2
    _check(engine_score == score, f"result {engine_score} vs {score}", game_no, ply)
    return score, ply


def league(game, candidate: Callable, games: int, seed: int = 0) -> dict:
    """`games` League games (the candidate is black in even games): W/D/L, score, interval."""
    from engine.tournament import wilson_interval

    rng = np.random.default_rng(seed)
    scores, plies, started = [], 0, time.perf_counter()
    for g in range(games):
        score, n = play_game(game, candidate, BLACK if g % 2 == 0 else WHITE, rng, g)
        scores.append(score)
        plies += n
    score = float(np.mean(scores)) if scores else 0.0
    low, high = wilson_interval(score, games)
    return {
        "games": games,
        "wins": scores.count(1.0),
        "draws": scores.count(0.5),
        "losses": scores.count(0.0),
        "score": score,
        "ci95": [low, high],
        "epsilon": EPSILON,
        "seed": seed,
        "positions_checked": plies,
        "seconds": time.perf_counter() - started,
    }


def spec_player(game, spec: str, seed: int) -> Callable:
    """An agent spec as the League's candidate (errors: one line, exit code 2)."""
    from agents import AgentError, make

    try:
        agent = make(spec, game, seed=seed)
    except AgentError as problem:
        print(f"othello_league: {problem}", file=sys.stderr)
        raise SystemExit(2) from None
    return agent.step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", required=True, help="agent spec of the candidate")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 1:
        print("othello_league: --games must be at least 1", file=sys.stderr)
        return 2
    from engine import load_game

    game = load_game("othello")
    try:
        result = league(game, spec_player(game, args.candidate, args.seed), args.games, args.seed)
    except Disagreement as problem:
        print(f"othello_league: engine and League rules disagree: {problem}", file=sys.stderr)
        return 1
    print(json.dumps({"candidate": args.candidate, **result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
