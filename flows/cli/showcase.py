"""`gridbots showcase`: rendered games of every kind and an MCTS-vs-random match, in a minute."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.progress import Progress
from rich.table import Table

from agents import make, make_seats
from engine import game_names, load_game
from engine.match import play_game, play_match

SHOWCASE = [
    ("connect4", "mcts:sims=400;random"),
    ("othello", "mcts:sims=200;random"),
    ("lazerbike", "random"),
    ("sokoban", "random"),
    ("pig", "mcts:sims=300;random"),
]


def main(match_games: int = 20) -> None:
    console = Console()
    console.rule("[bold]gridbots demo")
    for name, specs in SHOWCASE:
        if name not in game_names():
            continue
        game = load_game(name)
        seats = make_seats(specs, game, seed=1)
        final = play_game(game, seats, seed=1)
        title = f"{name}: {' vs '.join(seat.spec for seat in seats)} → returns {final.returns()}"
        console.print(Panel(str(final), title=title, expand=False))
        console.print(f"  moves: {game.format_moves(final.history())}\n")

    game = load_game("connect4")
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("mcts:sims=200 vs random on connect4", total=match_games)
        result = play_match(
            game,
            lambda seed: make("mcts:sims=200", game, seed=seed),
            lambda seed: make("random", game, seed=seed),
            games=match_games,
            seed=0,
            on_game=lambda _: progress.advance(task),
        )
    table = Table(title=f"connect4, {match_games} games, sides swapped", box=box.SIMPLE_HEAD)
    for column in ("agent", "vs", "W", "D", "L", "score"):
        table.add_column(column)
    table.add_row(
        "mcts:sims=200",
        "random",
        str(result.wins),
        str(result.draws),
        str(result.losses),
        f"{result.score:.2f}",
    )
    console.print(table)
    console.print(
        "Next: `gridbots games`, `gridbots show lazerbike --seed 3`, "
        "`gridbots perft connect4 --depth 7`, `gridbots bench engine othello`."
    )


if __name__ == "__main__":
    main()
