"""OpenSpiel learns, gridbots judges: tabular Q-learning on `gridbots_pig`, then a tournament.

    .venv/bin/python examples/openspiel_qlearning_pig.py            # a few minutes
    .venv/bin/python examples/openspiel_qlearning_pig.py --episodes 500 --games 20 --out /tmp/q

Needs the `peers` extra. Two of OpenSpiel's tabular Q-learners (`QLearner`, one per seat, as in
OpenSpiel's independent_tabular_qlearning example) learn Pig to a small target by self-play in
OpenSpiel's `rl_environment`, on the gridbots game loaded as `gridbots_pig(target=N)`
(engine.openspiel_games). Every `--eval-every` episodes OpenSpiel's `evaluate_bots` plays the
greedy policy against a uniform random bot: the learning curve. Then the greedy policy, wrapped
as OpenSpiel does it (`RLAgentPolicy` in a `PolicyBot`), takes a seat in a gridbots round-robin
(engine.tournament) against `random` and the classic hold-at-N strategy (`heuristic:hold=N`),
each pairing over seeded dice with sides swapped.

Writes under `--out` (default reports/openspiel-qlearning-pig/): summary.json (the tournament,
the training settings and the learning curve), games.parquet, scores.png and learning.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python import rl_environment
from open_spiel.python.algorithms import tabular_qlearner
from open_spiel.python.algorithms.evaluate_bots import evaluate_bots
from open_spiel.python.bots.policy import PolicyBot
from open_spiel.python.bots.uniform_random import UniformRandomBot
from open_spiel.python.rl_agent_policy import JointRLAgentPolicy
from rich.progress import Progress

import engine.openspiel_games  # noqa: F401  (registers gridbots_pig)
from agents import make
from agents.openspiel.agent import BotAgent
from engine.files import write_json
from engine.tournament import MatchConfig, run_tournament
from flows.reports.tournament import pairing_table, write_outputs

LEARNED = "qlearning"  # the learned policy's name in the tournament


def train_episode(env: Any, learners: list[Any]) -> None:
    """One self-play game; each learner sees the end only if it moved (OpenSpiel's QLearner
    would otherwise learn from a game it never played: Pig can end inside the first turn)."""
    step = env.reset()
    moved = set()
    while not step.last():
        player = step.observations["current_player"]
        moved.add(player)
        step = env.step([learners[player].step(step).action])
    for player in moved:
        learners[player].step(step)


def greedy_bots(game: Any, learners: list[Any], seed: int) -> list[PolicyBot]:
    policy = JointRLAgentPolicy(game, dict(enumerate(learners)), use_observation=True)
    return [PolicyBot(p, np.random.RandomState(seed + p), policy) for p in range(2)]


def win_rate_vs_random(game: Any, learners: list[Any], games: int, seed: int) -> float:
    """The greedy policy's score against OpenSpiel's uniform random bot, seats alternating."""
    rng = np.random.RandomState(seed)
    score = 0.0
    for index in range(games):
        seat = index % 2
        bots: list[Any] = [UniformRandomBot(p, rng) for p in range(2)]
        bots[seat] = greedy_bots(game, learners, seed + index)[seat]
        returns = evaluate_bots(game.new_initial_state(), bots, rng)
        score += (returns[seat] + 1) / 2
    return score / games


def plot_curve(curve: list[dict[str, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.plot([c["episodes"] for c in curve], [c["score_vs_random"] for c in curve], marker="o")
    axes.axhline(0.5, color="grey", linewidth=1, linestyle="--")
    axes.set_ylim(0, 1)
    axes.set_xlabel("self-play episodes")
    axes.set_ylabel("greedy score vs uniform random")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=int, default=15, help="Pig's winning score")
    parser.add_argument("--episodes", type=int, default=20000, help="self-play games")
    parser.add_argument("--eval-every", type=int, default=2000)
    parser.add_argument("--eval-games", type=int, default=200)
    parser.add_argument("--games", type=int, default=200, help="tournament games per pairing")
    parser.add_argument("--hold", type=int, default=0, help="hold-at-N baseline (0: target/3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("reports/openspiel-qlearning-pig"))
    args = parser.parse_args(argv)
    if args.target < 2 or args.episodes < 1 or args.games < 2:
        print("openspiel_qlearning_pig: need --target >= 2, --episodes >= 1, --games >= 2",
              file=sys.stderr)  # fmt: skip
        return 2

    name = f"gridbots_pig(target={args.target})"
    game = pyspiel.load_game(name)
    env = rl_environment.Environment(game, seed=args.seed)
    actions = env.action_spec()["num_actions"]
    learners = [tabular_qlearner.QLearner(player_id=p, num_actions=actions) for p in range(2)]
    curve: list[dict[str, float]] = []
    with Progress() as progress:
        task = progress.add_task(f"Q-learning on {name}", total=args.episodes)
        for episode in range(1, args.episodes + 1):
            train_episode(env, learners)
            progress.advance(task)
            if episode % args.eval_every == 0 or episode == args.episodes:
                rate = win_rate_vs_random(game, learners, args.eval_games, args.seed + episode)
                curve.append({"episodes": episode, "score_vs_random": rate})

    ours = game.gridbots  # the gridbots Pig behind the OpenSpiel game
    hold = args.hold or max(1, args.target // 3)
    specs = [LEARNED, "random", f"heuristic:hold={hold}"]

    def make_seat(spec: str, seat_game: Any, seed: int) -> Any:
        if spec == LEARNED:
            return BotAgent(seat_game, greedy_bots(game, learners, seed), game)
        return make(spec, seat_game, seed=seed)

    config = MatchConfig(games=args.games, seed=args.seed)
    rows, summary = run_tournament(ours, specs, config, make_seat=make_seat)
    summary["training"] = {
        "openspiel_game": name,
        "algorithm": "open_spiel.python.algorithms.tabular_qlearner.QLearner x2, self-play",
        "episodes": args.episodes,
        "states_seen": [len(learner._q_values) for learner in learners],
        "learning_curve": curve,
        "command": " ".join(["examples/openspiel_qlearning_pig.py", *(argv or sys.argv[1:])]),
    }
    paths = write_outputs(args.out, rows, summary)
    write_json(paths["summary"], summary)
    plot_curve(curve, args.out / "learning.png", f"tabular Q-learning, {name}")
    from rich.console import Console

    Console().print(pairing_table(summary["pairings"], f"{ours.spec()} tournament"))
    for row in summary["standings"]:
        print(f"{row['spec']:>16}  score {row['score']:.3f}  W/D/L "
              f"{row['wins']}/{row['draws']}/{row['losses']}")  # fmt: skip
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
