"""`gridbots match`, `gridbots tournament` and `gridbots move`: bots playing, over the CLI.

Thin shells: engine.tournament plays and summarises, engine.isolation runs bot processes
(agents.isolated.host is the program in each), agents.isolated.file_agent builds seats (and reads
`file:` specs).
Bad input (unknown spec, bad option, unreadable bot file, illegal history) raises GameError /
AgentError, which cli.main prints as one line with exit code 2.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from flows.cli.options import SCENARIO, scenario_options

app = typer.Typer()

GAME = Annotated[str, typer.Argument(help="Game name, optionally with parameters.")]
GAMES = Annotated[int, typer.Option("--games", min=1, help="Games per pairing (sides swapped).")]
ISOLATED = Annotated[
    bool, typer.Option("--isolated", help="Each bot in its own process, with deadlines.")
]
MOVE_MS = Annotated[
    float, typer.Option("--move-ms", min=1, help="Per-move deadline in isolated mode (the lap).")
]
MEMORY_MB = Annotated[
    int, typer.Option("--memory-mb", min=64, help="Memory cap (RLIMIT_AS) per bot process.")
]
SEED = Annotated[int, typer.Option("--seed", help="First scenario seed.")]
OPENING = Annotated[
    int, typer.Option("--opening", min=0, help="Random opening plies (turn-based duels).")
]
LEVELS = Annotated[str, typer.Option("--levels", help="Comma-separated puzzle levels to cycle.")]


def _setup(game_spec: str, specs: list[str], isolated: bool, **settings: Any):
    """Game, config and seat builders, every spec checked before a game starts."""
    from agents.isolated.file_agent import check_spec, make_agent
    from agents.isolated.host import command
    from engine import parse_game_spec
    from engine.tournament import MatchConfig

    game = parse_game_spec(game_spec)
    for spec in specs:
        check_spec(spec, game, isolated)
    levels = tuple(x.strip() for x in settings.pop("levels").split(",") if x.strip())
    config = MatchConfig(isolated=isolated, levels=levels, **settings)
    return game, config, make_agent, command()


def _progress(total: int, label: str, specs: Sequence[str] = ()):
    """A rich progress bar on stderr (silent when stderr is not a terminal, and when a person
    plays a seat: the board and the prompt own the screen then, and each game's end is told)."""
    from agents.base import is_interactive

    if any(is_interactive(spec) for spec in specs):
        return contextlib.nullcontext(), _tell_result

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console(stderr=True)
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = progress.add_task(label, total=total)
    return progress, lambda _row: progress.advance(task)


def _tell_result(row: dict) -> None:
    """A finished game, for the person playing in a match."""
    outcome = {1.0: "A wins", 0.5: "draw", 0.0: "B wins"}[row["score_a"]]
    typer.echo(f"\ngame {row['game'] + 1} ({row['seats']}): {outcome}; history {row['history']}")


@app.command()
def match(
    game: GAME,
    spec_a: Annotated[str, typer.Argument(help="First agent spec.")],
    spec_b: Annotated[str, typer.Argument(help="Second agent spec.")],
    games: GAMES = 10,
    isolated: ISOLATED = False,
    move_ms: MOVE_MS = 1000.0,
    memory_mb: MEMORY_MB = 2048,
    seed: SEED = 0,
    opening: OPENING = 4,
    levels: LEVELS = "",
    out: Annotated[Path | None, typer.Option(help="Also write Parquet/JSON/PNG here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
):
    """Two agents over seeded scenarios, each played twice with sides swapped."""
    from engine.tournament import play_pairing, summarize_pairing
    from flows.reports.tournament import write_outputs

    g, config, make_seat, host = _setup(
        game,
        [spec_a, spec_b],
        isolated,
        games=games,
        move_ms=move_ms,
        memory_mb=memory_mb,
        seed=seed,
        opening=opening,
        levels=levels,
    )
    progress, advance = _progress(games, f"{spec_a} vs {spec_b}", [spec_a, spec_b])
    with progress:
        rows = play_pairing(g, spec_a, spec_b, config, make_seat, host, advance)
    summary = {"game": g.spec(), **summarize_pairing(rows)}
    if out is not None:
        summary["files"] = write_outputs(out, rows, {**summary, "pairings": [summary]})
    _report(summary, [summary], as_json, f"{g.spec()}: {games} games")


@app.command()
def tournament(
    game: GAME,
    specs: Annotated[list[str], typer.Argument(help="Agent specs (two or more).")],
    games: GAMES = 10,
    form: Annotated[
        str, typer.Option("--format", help="round-robin, or gauntlet (the first vs the rest).")
    ] = "round-robin",
    out: Annotated[
        Path, typer.Option(help="Folder for games.parquet, summary.json, scores.png.")
    ] = (Path("reports/tournament")),
    isolated: ISOLATED = False,
    move_ms: MOVE_MS = 1000.0,
    memory_mb: MEMORY_MB = 2048,
    seed: SEED = 0,
    opening: OPENING = 4,
    levels: LEVELS = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
):
    """A round robin or gauntlet; writes Parquet (one row per game), JSON and a PNG."""
    from engine.tournament import pairings, run_tournament
    from flows.reports.tournament import write_outputs

    g, config, make_seat, host = _setup(
        game,
        specs,
        isolated,
        games=games,
        move_ms=move_ms,
        memory_mb=memory_mb,
        seed=seed,
        opening=opening,
        levels=levels,
    )
    total = games * len(pairings(specs, form))
    progress, advance = _progress(total, f"{form} on {g.spec()}", specs)
    with progress:
        rows, summary = run_tournament(g, specs, config, form, make_seat, host, advance)
    summary["files"] = write_outputs(out, rows, summary)
    _report(summary, summary["pairings"], as_json, f"{g.spec()}: {form}, {games} games each")


def _report(summary: dict, pairing_summaries: list, as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    from rich.console import Console

    from flows.reports.tournament import pairing_table

    console = Console()
    console.print(pairing_table(pairing_summaries, title, console.width))
    if "standings" in summary:
        for rank, row in enumerate(summary["standings"], start=1):
            console.print(
                f"{rank}. {row['spec']}: {row['score']:.3f} "
                f"[{row['score_low']:.3f}, {row['score_high']:.3f}] over {row['games']} games"
            )
    for s in pairing_summaries:  # what went wrong, in the game's words
        for bot in s["bots"]:
            for fault in bot.get("faults", []):
                typer.echo(f"{bot['spec']}, {fault}")
    if "files" in summary:
        console.print("wrote " + ", ".join(summary["files"].values()))


@app.command()
def move(
    game: GAME,
    spec: Annotated[str, typer.Argument(help="Agent spec.")],
    moves: Annotated[
        str | None, typer.Option("--moves", help="One history (else: one per stdin line).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Scenario and agent seed.")] = 0,
    player: Annotated[
        int | None, typer.Option(help="Who answers at a simultaneous node (default: everyone).")
    ] = None,
):
    """Answers each history with the agent's action, one line each, flushed at once."""
    from agents.isolated.file_agent import make_agent
    from engine import parse_game_spec
    from engine.protocol import GameError, IllegalActionError

    g = parse_game_spec(game)
    agent = make_agent(spec, g, seed)
    failed = False
    lines = [moves] if moves is not None else iter(sys.stdin.readline, "")
    for number, line in enumerate(lines, start=1):
        try:
            answer = _answer(g, agent, line.strip(), seed, player)
        except (GameError, IllegalActionError) as problem:
            where = "" if moves is not None else f"line {number}: "
            print(f"gridbots: error: {where}{problem}", file=sys.stderr, flush=True)
            failed = True
            continue
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    if failed:
        # cli.main drops the code a typer.Exit carries (click returns it in non-standalone
        # mode), so leave the way the interpreter does: exit status 2, no further output
        sys.exit(2)


def _answer(game, agent, line: str, seed: int, player: int | None) -> str:
    from engine.protocol import SIMULTANEOUS, GameError

    state = game.state_from_history(game.parse_moves(line), seed=seed)
    current = state.current_player()
    if state.is_terminal():
        raise GameError(f"the game is over after {line!r}; nothing to answer")
    if current == SIMULTANEOUS:
        living = [p for p in range(game.num_players) if state.legal_actions(p)]
        if player is not None:
            if player not in living:
                raise GameError(f"player {player} cannot act after {line!r}")
            living = [player]
        return " ".join(game.action_to_string(p, int(agent.step(state.clone(), p))) for p in living)
    if current < 0:
        raise GameError(f"a chance outcome comes next after {line!r}, not a player's move")
    if player is not None and player != current:
        raise GameError(f"player {current} is to move after {line!r}, not {player}")
    return game.action_to_string(current, int(agent.step(state.clone(), current)))


# ---- a person at the terminal ------------------------------------------------------------------


def replay_command(game, state, seed: int, scenario: dict[str, Any]) -> str:
    """The `gridbots show` line that replays a game (seed and scenario only where they matter)."""
    import shlex

    parts = ["gridbots", "show", game.spec()]
    extra = {k: v for k, v in scenario.items() if k != "opening"}  # the history holds it
    if extra:
        parts += ["--seed", str(seed)]
        for key, value in extra.items():
            parts += ["--scenario", f"{key}={value}"]
    return " ".join(shlex.quote(p) for p in [*parts, "--moves", game.format_moves(state.history())])


def opponent_for(game, spec: str | None) -> tuple[str, str]:
    """(spec, what it is): the one asked for, else the game's strongest bot in production by
    recorded evidence (models.registry.production_bots), else the game's strong built-in."""
    if spec:
        return spec, spec
    from models.registry import production_bots

    bots = production_bots(game.name)
    if not bots:
        return game.default_opponent, f"{game.default_opponent} (built in; nothing in production)"
    best = bots[0]
    evidence = f", floor {best['floor']:.3f}: {best['floor_evidence']}" if best["floor"] else ""
    return best["spec"], f"{best['name']}/{best['version']} (the production bot{evidence})"


@app.command()
def play(
    game: GAME,
    opponent: Annotated[
        str | None,
        typer.Argument(
            help="Agent spec (default: the game's production bot, else a strong built-in).",
            show_default=False,
        ),
    ] = None,
    first: Annotated[bool, typer.Option("--first/--second", help="Move first or second.")] = True,
    seed: Annotated[
        int | None, typer.Option(help="Scenario, dice and agent seed (default: a new one).")
    ] = None,
    scenario: SCENARIO = None,
    laps_per_s: Annotated[
        float, typer.Option("--laps-per-s", min=0.2, max=20, help="Pace of real-time games.")
    ] = 2.0,
):
    """Play a bot yourself: moves in the game's notation, `undo`, `hint`, `history`, `quit`."""
    import random

    from agents import make
    from agents.play.human import NO_TERMINAL, HumanAgent, has_terminal
    from agents.play.terminal import Session, outcome
    from engine import parse_game_spec
    from engine.protocol import GameError

    g = parse_game_spec(game)
    if not has_terminal():
        raise GameError(f"play: {NO_TERMINAL}; run it in a terminal (match/move serve pipes)")
    options = scenario_options(scenario)
    seed = random.randrange(10_000) if seed is None else seed
    spec, about = opponent_for(g, opponent)
    puzzle = g.kind == "puzzle"
    humans = list(range(g.num_players)) if puzzle else [0 if first else 1]
    bots = {p: make(spec, g, seed=seed + p) for p in range(g.num_players) if p not in humans}
    adviser = make(spec, g, seed=seed) if puzzle else None
    g.new_initial_state(seed=seed, **options)  # a bad scenario fails before the greeting
    you = " and ".join(g.player_name(p) for p in humans)
    against = f"the game itself, hints from {about}" if puzzle else about
    typer.echo(f"{g.spec()}, seed {seed}: you are {you}, against {against}")
    if g.real_time:
        from agents.play.real_time import play_real_time

        state, stopped = play_real_time(g, humans[0], bots, laps_per_s, seed, options)
        typer.echo("game stopped" if stopped else outcome(state, humans))
    else:
        human = HumanAgent(g, "human", seed)
        typer.echo("type a move as listed, or: undo, hint, history, help, quit")
        session = Session(g, human, humans, next(iter(bots.values()), None), adviser, seed, options)
        state = session.play()
    if state.history():
        typer.echo(f"history: {g.format_moves(state.history())}")
        typer.echo(f"replay: {replay_command(g, state, seed, options)}")
