"""`gridbots games | perft | bench | puzzle | show | solve | showcase | new-game`: the engine at a
glance.

Each command is a thin shell over an engine/agents function.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.options import SCENARIO, UserError, parse_game, scenario_options

app = typer.Typer()
bench_app = typer.Typer(help="Speed measurements (JSON with --json).", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
puzzle_app = typer.Typer(help="Puzzles: success rate per level beside a reference.",
                         no_args_is_help=True)  # fmt: skip
app.add_typer(puzzle_app, name="puzzle")


@app.command()
def games(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False):
    """List the registered games and their metadata."""
    from engine import game_names, load_game

    rows = [load_game(name).metadata() for name in game_names()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for column in ("name", "kind", "players", "simultaneous", "chance", "actions", "max length"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(
            row["name"],
            row["kind"],
            str(row["num_players"]),
            "yes" if row["simultaneous"] else "no",
            "yes" if row["has_chance"] else "no",
            str(row["num_actions"]),
            str(row["max_game_length"]),
        )
    Console().print(table)


@app.command()
def perft(
    game: Annotated[str, typer.Argument(help="Game name, optionally with parameters.")],
    depth: Annotated[int, typer.Option(min=0, max=20, help="Deepest level to count.")],
    moves: Annotated[str, typer.Option(help="History to start from.")] = "",
    seed: Annotated[int | None, typer.Option(help="Scenario seed.")] = None,
):
    """Leaf counts of the game tree, one line `d count` per depth."""
    from engine.loops import count_leaves

    g = parse_game(game)
    state = g.state_from_history(g.parse_moves(moves), seed=seed)
    for d in range(1, depth + 1):
        typer.echo(f"{d} {count_leaves(g, state.array, d)}")
        sys.stdout.flush()


@bench_app.command("engine")
def bench_engine(
    game: Annotated[str, typer.Argument(help="Game name, optionally with parameters.")],
    seconds: Annotated[float, typer.Option(min=0.05, help="Measuring time.")] = 2.0,
    seed: Annotated[int, typer.Option(help="Scenario and RNG seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Single-thread random playouts from the initial state."""
    from engine.bench import measure_random_playouts

    result = measure_random_playouts(parse_game(game), seconds=seconds, seed=seed)
    if as_json:
        typer.echo(json.dumps(result))
    else:
        typer.echo(
            f"{result['game']}: {result['games_per_s']:,.0f} games/s, "
            f"{result['moves_per_s']:,.0f} moves/s, mean length {result['mean_length']:.1f}"
        )


@bench_app.command("mcts")
def bench_mcts(
    game: Annotated[str, typer.Argument(help="Game name, optionally with parameters.")],
    sims: Annotated[int, typer.Option(min=1, help="Simulations per move.")] = 1000,
    repeats: Annotated[int, typer.Option(min=1, help="Moves to time (median).")] = 20,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """One MCTS move from the initial state: seconds per move and simulations per second."""
    from agents.search.mcts_bench import measure_mcts

    result = measure_mcts(parse_game(game), sims=sims, repeats=repeats)
    if as_json:
        typer.echo(json.dumps(result))
    else:
        typer.echo(
            f"{result['game']}: {result['seconds_per_move'] * 1000:.2f} ms per {sims}-simulation "
            f"move, {result['sims_per_s']:,.0f} simulations/s"
        )


@puzzle_app.command("rate")
def puzzle_rate(
    game: Annotated[str, typer.Argument(help="A puzzle (its spec names one level).")],
    spec: Annotated[str, typer.Argument(help="Agent spec, seated in every seat.")],
    reference: Annotated[str, typer.Option(help="Reference (default: the game's adviser).")] = "",
    levels: Annotated[str, typer.Option(help="all: every shipped level; else the game's.")] = "",
    attempts: Annotated[int, typer.Option(min=1, help="Seeded attempts per level.")] = 20,
    opening: Annotated[int, typer.Option(min=0, help="Random laps before each attempt.")] = 2,
    seed: Annotated[int, typer.Option(help="First scenario seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable.")] = False,
):
    """Per level: solved attempts (95% interval), laps beside the reference's on the attempts
    both solved, seconds per attempt; the bot and the reference meet the same scenarios."""
    from agents import make
    from engine.puzzles import compare_levels

    g = parse_game(game)
    if g.kind != "puzzle":
        raise UserError(f"{g.name} is a {g.kind}, not a puzzle: play a match")
    if levels not in ("", "all"):
        raise UserError(f"--levels {levels!r}: all, or leave it out for the game's own level")
    chosen = [parse_game(v) for v in g.variants()] if levels == "all" else [g]
    result = compare_levels(chosen, spec, reference or g.default_opponent, attempts, seed,
                            opening, make)  # fmt: skip
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    for r in result["levels"]:
        laps = (f"{r['laps_both']:.1f} vs {r['reference_laps_both']:.1f}"
                if r["both_solved"] else "-")  # fmt: skip
        typer.echo(
            f"{r['level']}: {r['solved']}/{r['attempts']} (reference {r['reference_solved']}), "
            f"laps {laps}, {r['seconds_per_attempt'] * 1000:.0f} ms vs "
            f"{r['reference_seconds_per_attempt'] * 1000:.0f} ms an attempt"
        )


@app.command()
def show(
    game: Annotated[str, typer.Argument(help="Game name, optionally with parameters.")],
    seed: Annotated[int, typer.Option(help="Seed for the scenario and the agents.")] = 0,
    agents: Annotated[
        str, typer.Option(help="Comma-separated agent specs, one per seat (default random).")
    ] = "",
    delay: Annotated[float, typer.Option(min=0, help="Seconds to pause between boards.")] = 0.0,
    moves: Annotated[
        str | None, typer.Option(help="Replay this history (then the agents play on, if named).")
    ] = None,
    scenario: SCENARIO = None,
):
    """Plays one game (or replays a history) and prints the board after every move."""
    from agents import make_seats
    from engine import SIMULTANEOUS

    g = parse_game(game)
    seats = make_seats(agents, g, seed=seed)
    options = scenario_options(scenario)
    state = g.new_initial_state(seed=seed, **options)
    replay = None
    if moves is not None:  # checked whole before anything is shown
        replay = state.history() + g.parse_moves(moves)
        g.state_from_history(replay, seed=seed, **options)
    who = ", ".join(seat.spec for seat in seats) if replay is None or agents else "a replay"
    typer.echo(f"{g!r}, seed {seed}: {who}\n")
    typer.echo(str(state))
    import numpy as np

    chance_rng = np.random.default_rng(seed)
    step = 0
    while not state.is_terminal():
        if replay is not None and len(state.history()) >= len(replay) and not agents:
            break
        step += 1
        player = state.current_player()
        if replay is not None and len(state.history()) < len(replay):
            said = _replay_step(g, state, replay)
            typer.echo(f"\nstep {step}: {said}\n{state}")
            continue
        if player == SIMULTANEOUS:
            actions = [
                seats[p].step(state, p) if state.legal_actions(p) else g.neutral_action
                for p in range(g.num_players)
            ]
            said = ", ".join(
                f"{g.player_name(p)} {g.action_to_string(p, a)}" for p, a in enumerate(actions)
            )
            state.apply_actions(actions)
        elif player < 0:
            action = state.random_action(chance_rng)
            said = f"chance {g.action_to_string(player, action)}"
            state.apply_action(action)
        else:
            action = seats[player].step(state, player)
            said = f"{g.player_name(player)} {g.action_to_string(player, action)}"
            state.apply_action(action)
        typer.echo(f"\nstep {step}: {said}\n{state}")
        if delay:
            time.sleep(delay)
    if state.is_terminal():
        typer.echo(f"\nreturns: {state.returns()}")
    typer.echo(f"history: {g.format_moves(state.history())}")


def _replay_step(g, state, replay: list[int]) -> str:
    """Plays the next move (or simultaneous lap) of a history; what happened, for `show`."""
    from engine import CHANCE, SIMULTANEOUS

    done, player = len(state.history()), state.current_player()
    if player == SIMULTANEOUS:
        lap = replay[done : done + g.num_players]
        state.apply_actions(lap)
        moves = (f"{g.player_name(p)} {g.action_to_string(p, a)}" for p, a in enumerate(lap))
        return ", ".join(moves)
    state.apply_action(replay[done])
    who = "chance" if player == CHANCE else g.player_name(player)
    return f"{who} {g.action_to_string(player, replay[done])}"


@app.command()
def solve(
    game: Annotated[str, typer.Argument(help="connect4 (the only game with an exact solver).")],
    analyze: Annotated[
        bool, typer.Option(help="Score every column instead of the position.")
    ] = False,
):
    """Exact scores of Connect 4 positions read from stdin, one move string per line."""
    if game != "connect4":
        raise UserError(f"solve: no exact solver for {game!r}; only connect4 has one")
    from engine.games.connect4.solver import solve_lines

    status = solve_lines(sys.stdin, analyze, sys.stdout, sys.stderr)
    if status:
        raise typer.Exit(status)


@app.command()
def showcase(
    games: Annotated[int, typer.Option(min=2, help="Games in the MCTS-vs-random match.")] = 20,
):
    """A one-minute tour: a rendered game of each kind and an MCTS-vs-random match."""
    from flows.cli.showcase import main as run_showcase

    run_showcase(match_games=games)


@app.command("new-game")
def new_game(
    name: Annotated[str, typer.Argument(help="Module name of the new game.")],
    kind: Annotated[str, typer.Option(help="duel | war | puzzle")] = "duel",
    root: Annotated[Path, typer.Option(help="Repository root (holds engine/).")] = Path("."),
):
    """Writes a working game module and its test file, with markers where the rules go."""
    from engine.scaffold import write_game

    for path in write_game(name, kind, root):
        typer.echo(f"wrote {path}")
