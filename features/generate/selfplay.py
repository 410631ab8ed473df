"""Self-play data generation: one search agent plays every seat and records its root policies.

Each move searches the position with the agent named by `agent` (default `mcts:sims=100`; any
agent with `policy(state)`, such as a later PUCT agent driven by the newest model, plugs in) and
stores the root's visit-count policy (visit shares over all `num_actions`, zero on illegal
actions) in `positions.policy`, the per-action mean search values (when the agent offers
`root_values()`) in `action_scores`, and the game's final return of the side to move in
`outcome`. The move played is drawn from the policy sharpened by `temperature` for the first
`temperature_plies` decisions, then the most visited action (greedy).

Root noise: AlphaZero mixes Dirichlet(alpha) noise into the root's prior. Plain UCT has no prior,
so here the noise is mixed with weight `eps` into the move-selection distribution instead (both
phases: it perturbs the sampled and the greedy choice), which keeps self-play games diverse
without touching the stored visit policy.

Agents that can play many games at once (`self_play`, e.g. `puct:model=…`) get the whole shard:
`parallel` games step together so that one network call evaluates one leaf of each, the noise
goes into the root priors as in AlphaZero, and with `fast_sims` > 0 only a `full_share` of the
moves get the full search and are recorded (playout-cap randomisation, KataGo); the others get
`fast_sims` simulations and no record. With `gumbel` = M > 0 such agents spend each search's
simulations by sequential halving over M root moves drawn by Gumbel noise on the network's
logits, play the best of them and record the improved policy, softmax(logit + sigma(q)), as the
target (Gumbel AlphaZero, agents.puct.gumbel; `gumbel_mix` completes the values of the moves
the halving never visited by the paper's v_mix instead of their siblings' mean, so it changes
nothing where every legal move is a candidate and the budget visits each); that noise
replaces the Dirichlet noise and the temperature, which are then unused. Starting conditions
are randomized by a seeded scenario per game plus `opening` random plies that never end the
game (not recorded as positions); with `opening_max` above `opening` each game draws its number
of random plies uniformly from [opening, opening_max], so the recorded positions include some
far from what the agent's own play reaches while other games still start at the beginning.
Chance outcomes are sampled and are not positions. Simultaneous games are refused: the search
is turn-based.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from agents.base import make
from engine.protocol import CHANCE, Game, GameError, State
from features.errors import DataError
from features.generate import shard_units
from features.generate.tables import (
    GameTable,
    PositionTable,
    checked_number,
    game_seeds,
    merge_params,
    shard_tables,
)

DEFAULT_AGENT = "mcts:sims=100"

PARAMS: dict[str, Any] = {
    "x": 10,  # games (the dataset's X; split into shards of shard_size games)
    "games": None,  # another name for x
    "shard_size": 20,  # games per shard
    "agent": None,  # search agent with policy(state) playing every seat (DEFAULT_AGENT)
    "agents": None,  # the generic --agents option: one spec, another name for agent
    "temperature_plies": 10,  # decisions sampled from the policy before greedy play
    "temperature": 1.0,  # sampling temperature of those decisions
    "alpha": 0.3,  # Dirichlet concentration of the root noise
    "eps": 0.25,  # weight of the noise in the move-selection distribution (0: none)
    "opening": 0,  # random plies played before self-play starts
    "opening_max": 0,  # > opening: each game's random plies drawn from [opening, opening_max]
    "parallel": 64,  # games in flight for agents that batch them (puct)
    "fast_sims": 0,  # playout-cap randomisation for such agents: cheap search of most moves
    "full_share": 0.25,  # share of fully searched (recorded) moves when fast_sims > 0
    "gumbel": 0,  # > 0: root candidates of a Gumbel sequential-halving root (batching agents)
    "gumbel_mix": False,  # its unvisited moves' values completed by v_mix, not siblings' mean
    "scenario": {},  # scenario options of every game
}


def validate_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    p = merge_params("selfplay", PARAMS, params, DataError)
    agents = p.pop("agents", None)
    if agents and p.get("agent") is None:
        specs = [agents] if isinstance(agents, str) else list(agents)
        if len(specs) != 1:
            raise DataError("selfplay: one agent plays every seat; give a single spec")
        p["agent"] = specs[0]
    p["agent"] = str(p.get("agent") or DEFAULT_AGENT)
    if game.simultaneous:
        raise DataError(f"selfplay: {game.name} is simultaneous; the search is turn-based")
    p["x"] = checked_number("selfplay", p, "x", int, 0, None, DataError)
    p["shard_size"] = checked_number("selfplay", p, "shard_size", int, 1, None, DataError)
    p["temperature_plies"] = checked_number(
        "selfplay", p, "temperature_plies", int, 0, None, DataError
    )
    p["temperature"] = checked_number("selfplay", p, "temperature", float, 1e-6, None, DataError)
    p["alpha"] = checked_number("selfplay", p, "alpha", float, 1e-6, None, DataError)
    p["eps"] = checked_number("selfplay", p, "eps", float, 0.0, 1.0, DataError)
    p["opening"] = checked_number("selfplay", p, "opening", int, 0, None, DataError)
    p["opening_max"] = checked_number("selfplay", p, "opening_max", int, 0, None, DataError)
    if p["opening_max"] and p["opening_max"] < p["opening"]:
        raise DataError(f"selfplay: opening_max={p['opening_max']} is below "
                        f"opening={p['opening']}")  # fmt: skip
    p["parallel"] = checked_number("selfplay", p, "parallel", int, 1, None, DataError)
    p["fast_sims"] = checked_number("selfplay", p, "fast_sims", int, 0, None, DataError)
    p["full_share"] = checked_number("selfplay", p, "full_share", float, 0.0, 1.0, DataError)
    p["gumbel"] = checked_number("selfplay", p, "gumbel", int, 0, None, DataError)
    if not isinstance(p["gumbel_mix"], bool):
        raise DataError(f"selfplay: gumbel_mix is true or false, not {p['gumbel_mix']!r}")
    if p["gumbel_mix"] and not p["gumbel"]:
        raise DataError("selfplay: gumbel_mix completes a Gumbel root's values; set gumbel too")
    if not isinstance(p["scenario"], dict):
        raise DataError("selfplay: scenario must be a dict of scenario options")
    p["scenario"] = dict(p["scenario"])
    if p["opening"]:
        p["scenario"]["opening"] = p["opening"]
    try:
        game.new_initial_state(seed=0, **p["scenario"])
        if p["opening_max"]:
            game.new_initial_state(seed=0, **{**p["scenario"], "opening": p["opening_max"]})
        agent = make(p["agent"], game, seed=0)
    except GameError as error:  # AgentError included
        raise DataError(f"selfplay: {error}") from None
    if not callable(getattr(agent, "policy", None)):
        raise DataError(f"selfplay: agent {p['agent']!r} has no search policy (try mcts)")
    if p["gumbel"] and not callable(getattr(agent, "self_play", None)):
        raise DataError(f"selfplay: gumbel needs an agent that plays games in batches (puct), "
                        f"not {p['agent']!r}")  # fmt: skip
    return p


def scenario_of(p: dict[str, Any], scenario_seed: int) -> dict[str, Any]:
    """One game's scenario options: its own number of opening plies when `opening_max` asks for
    a range (drawn from the game's scenario seed, so the game replays from its row)."""
    if p["opening_max"] <= p["opening"]:
        return p["scenario"]
    rng = np.random.default_rng([scenario_seed, 1])  # apart from the opening's own moves
    plies = int(rng.integers(p["opening"], p["opening_max"] + 1))
    scenario = {k: v for k, v in p["scenario"].items() if k != "opening"}
    return {**scenario, "opening": plies} if plies else scenario


def select(
    policy: np.ndarray,
    legal: np.ndarray,
    sample: bool,
    temperature: float,
    alpha: float,
    eps: float,
    rng: np.random.Generator,
) -> int:
    """The move played: the (sharpened) policy mixed with Dirichlet noise on the legal actions,
    then sampled or, after the temperature plies, its most likely action."""
    dist = np.zeros_like(policy)
    if sample:
        dist[legal] = policy[legal] ** (1.0 / temperature)
    else:
        dist[legal] = policy[legal]
    dist /= dist.sum() if dist.sum() > 0 else 1.0
    if dist.sum() == 0:
        dist[legal] = 1.0 / len(legal)
    noise = rng.dirichlet(np.full(len(legal), alpha))
    dist[legal] = (1.0 - eps) * dist[legal] + eps * noise
    if sample:
        return int(rng.choice(len(dist), p=dist / dist.sum()))
    return int(np.argmax(dist))


def play(
    game: Game,
    agent: Any,
    state: State,
    p: dict[str, Any],
    rng: np.random.Generator,
) -> tuple[State, list[tuple]]:
    """One self-play game from `state`: the final state and its pending position records."""
    records: list[tuple] = []
    step = decisions = 0
    values_of = getattr(agent, "root_values", None)
    while not state.is_terminal():
        mover = state.current_player()
        if mover == CHANCE:
            state.apply_action(state.random_action(rng))
            step += 1
            continue
        policy = np.asarray(agent.policy(state), dtype=np.float64)
        legal = np.asarray(state.legal_actions(), dtype=np.int64)
        values = values_of() if callable(values_of) else np.full(game.num_actions, np.nan)
        sample = decisions < p["temperature_plies"]
        action = select(policy, legal, sample, p["temperature"], p["alpha"], p["eps"], rng)
        records.append((step, mover, state.array.copy(), action, policy, values))
        state.apply_action(action)
        step += 1
        decisions += 1
    return state, records


def generate_shard(
    game: Game, params: dict[str, Any], seed: int, shard: int, first_game_id: int
) -> dict[str, pa.Table]:
    """X self-play games of one shard, deterministic in (params, seed, shard)."""
    p = validate_params(game, params)
    games = GameTable(game, "selfplay", first_game_id)
    positions = PositionTable(game)
    specs = [p["agent"]] * game.num_players
    first, count = shard_units(p, shard)
    batched = getattr(make(p["agent"], game, seed=seed), "self_play", None)
    if callable(batched):
        _batched_shard(game, batched, p, seed, range(first, first + count), games, positions)
        return shard_tables(games, positions)
    for unit in range(first, first + count):
        scenario_seed, agent_seed, play_seed = game_seeds(seed, unit, 3)
        scenario = scenario_of(p, scenario_seed)
        start = game.new_initial_state(seed=scenario_seed, **scenario)
        agent = make(p["agent"], game, seed=agent_seed)
        opening = len(start.history())
        final, records = play(game, agent, start, p, np.random.default_rng(play_seed))
        outcome = final.returns()
        game_id = games.add(final.history(), outcome, scenario_seed, scenario, specs)
        for step, mover, array, action, policy, values in records:
            positions.add(
                game_id,
                opening + step,
                mover,
                array,
                action,
                outcome[mover],
                values,
                policy.astype(np.float32),
            )
    return shard_tables(games, positions)


def _batched_shard(game, self_play, p, seed, units, games, positions) -> None:
    """All games of a shard played together; rows added in unit order (deterministic ids)."""
    from agents.puct.agent import SelfPlaySettings

    settings = SelfPlaySettings(
        sims=0, fast_sims=p["fast_sims"], full_share=p["full_share"], parallel=p["parallel"],
        temperature=p["temperature"], temperature_plies=p["temperature_plies"],
        alpha=p["alpha"], eps=p["eps"], gumbel=p["gumbel"], gumbel_mix=p["gumbel_mix"],
    )  # fmt: skip
    seeds = [game_seeds(seed, unit, 3) for unit in units]
    scenarios = [scenario_of(p, s[0]) for s in seeds]
    starts = [game.new_initial_state(seed=s[0], **scenarios[i]) for i, s in enumerate(seeds)]
    rngs = [np.random.default_rng(s[2]) for s in seeds]
    finished = dict((i, (final, decisions)) for i, final, decisions in
                    self_play(starts, rngs, settings))  # fmt: skip
    specs = [p["agent"]] * game.num_players
    for i, (scenario_seed, _, _) in enumerate(seeds):
        final, decisions = finished[i]
        outcome = final.returns()
        game_id = games.add(final.history(), outcome, scenario_seed, scenarios[i], specs)
        for d in decisions:
            positions.add(game_id, d.step, d.mover, d.state, d.action, outcome[d.mover],
                          d.values, d.policy)  # fmt: skip
