"""`gridbots match`, `gridbots tournament` and `gridbots move`: bots playing, over the CLI.

Thin shells: engine.tournament plays and summarises, engine.isolation runs bot processes
(agents.host is the program in each), agents.file_agent builds seats (and reads `file:` specs).
Bad input (unknown spec, bad option, unreadable bot file, illegal history) raises GameError /
AgentError, which cli.main prints as one line with exit code 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

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
    from agents.file_agent import check_spec, make_agent
    from agents.host import command
    from engine import parse_game_spec
    from engine.tournament import MatchConfig

    game = parse_game_spec(game_spec)
    for spec in specs:
        check_spec(spec, game, isolated)
    levels = tuple(x.strip() for x in settings.pop("levels").split(",") if x.strip())
    config = MatchConfig(isolated=isolated, levels=levels, **settings)
    return game, config, make_agent, command()


def _progress(total: int, label: str):
    """A rich progress bar on stderr (silent when stderr is not a terminal)."""
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
    from flows.tournament_output import write_outputs

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
    progress, advance = _progress(games, f"{spec_a} vs {spec_b}")
    with progress:
        rows = play_pairing(g, spec_a, spec_b, config, make_seat, host, advance)
    summary = {"game": g.spec(), **summarize_pairing(rows)}
    if out is not None:
        summary["files"] = write_outputs(out, rows, {**summary, "pairings": [summary]})
    _report(summary, [summary], as_json, f"{g.spec()}: {games} games")


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
    from flows.tournament_output import write_outputs

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
    progress, advance = _progress(total, f"{form} on {g.spec()}")
    with progress:
        rows, summary = run_tournament(g, specs, config, form, make_seat, host, advance)
    summary["files"] = write_outputs(out, rows, summary)
    _report(summary, summary["pairings"], as_json, f"{g.spec()}: {form}, {games} games each")


def _report(summary: dict, pairing_summaries: list, as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    from rich.console import Console

    from flows.tournament_output import pairing_table

    console = Console()
    console.print(pairing_table(pairing_summaries, title))
    if "standings" in summary:
        for rank, row in enumerate(summary["standings"], start=1):
            console.print(
                f"{rank}. {row['spec']}: {row['score']:.3f} "
                f"[{row['score_low']:.3f}, {row['score_high']:.3f}] over {row['games']} games"
            )
    if "files" in summary:
        console.print("wrote " + ", ".join(summary["files"].values()))


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
    from agents.file_agent import make_agent
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


def register(app: typer.Typer) -> None:
    app.command()(match)
    app.command()(tournament)
    app.command()(move)
