"""A planning agent for box-pushing puzzles: `planner` (alias `sokoban`), options `nodes=N` and
`eval=onnx:PATH` (a learned cost-to-go as the A* heuristic, models.cost_to_go).

The game supplies the grid through a `layout(state_array) -> dict` hook (walls, boxes, unfilled
holes, exits as (H, W) boolean planes, player tiles, the action ids of up/down/left/right and
of staying), so nothing here decodes a state array. Rules assumed: a player walks on floor and
exits, pushes one box one tile onto floor, an exit or a hole (a box in a hole fills it: both
vanish), and the team wins once every player stands on its own exit.

Search: A* over push states, moves as the cost. A macro move is one player walking (the
shortest path from engine.pathfind, boxes, holes and the other players as obstacles) to the
tile behind a box and pushing it once; the visited set is keyed on (boxes, holes, players),
exact player tiles since the cost counts moves. The heuristic, each player's wall-only distance
to its nearest exit, is admissible. A first pass prunes pushes onto dead tiles (tiles from which
no box can ever reach a hole); if it finds nothing, a second pass searches without pruning.
The goal test walks the players to distinct exits one after the other (every order tried).

With `eval=onnx:PATH` the heuristic is a learned estimate of the moves still to play, read by
a network from the position's planes (`planes`: walls, boxes, holes, exits, players, dead
tiles and the exit distance on a fixed canvas, the network's input size); every new child of an
expansion is scored in one batch. The estimate may overshoot, so plans may be longer than the
admissible search's; the search stays complete within its node budget.

With several players the plan is sequential (one player moves, the others wait); it is then
compressed into laps: a step runs in the lap after the last earlier step of its player or
touching one of its tiles, so every lap's moves touch disjoint tiles and play out as they
would one by one. The agent follows the plan lap by lap and re-plans whenever the position is
not one the plan passes through (each seat's agent computes the same plan, so they cooperate).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from agents.base import Agent, AgentError, builder, option
from engine.pathfind import distances_from, path_moves, path_to
from engine.protocol import SIMULTANEOUS, Game, State

Key = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # boxes, holes, players


@dataclass(frozen=True)
class Grid:
    """The static part of a level: size, walls, exits and the dead tiles for boxes."""

    width: int
    height: int
    walls: np.ndarray  # flat bool
    exits: frozenset[int]
    dead: frozenset[int]
    exit_dist: np.ndarray  # wall-only distance of each tile to the nearest exit

    def step(self, tile: int, move: int) -> int:
        """The tile one move away (pathfind's 0 up, 1 down, 2 left, 3 right), -1 off the grid."""
        r, c = divmod(tile, self.width)
        dr, dc = ((-1, 0), (1, 0), (0, -1), (0, 1))[move]
        r, c = r + dr, c + dc
        if 0 <= r < self.height and 0 <= c < self.width:
            return r * self.width + c
        return -1


def read_grid(layout: dict) -> tuple[Grid, Key]:
    """The static grid and the dynamic key of a position from the game's layout hook."""
    w, h = int(layout["width"]), int(layout["height"])
    walls = np.asarray(layout["walls"], dtype=bool).reshape(-1)
    holes = tuple(int(t) for t in np.flatnonzero(layout["holes"]))
    boxes = tuple(int(t) for t in np.flatnonzero(layout["boxes"]))
    players = tuple(int(t) for t in layout["players"])
    exits = frozenset(int(t) for t in np.flatnonzero(layout["exits"]))
    open_cost = np.where(walls, -1.0, 1.0)
    exit_dist = np.full(w * h, np.inf)
    for e in exits:
        dist, _ = distances_from(open_cost, w, h, e)
        exit_dist = np.where(dist >= 0, np.minimum(exit_dist, dist), exit_dist)
    grid = Grid(w, h, walls, exits, frozenset(), exit_dist)
    object.__setattr__(grid, "dead", _dead_tiles(grid, set(holes)))
    return grid, (boxes, holes, players)


def _dead_tiles(grid: Grid, holes: set[int]) -> frozenset[int]:
    """Tiles from which no push sequence on an empty board brings a box to any hole."""
    live, frontier = set(holes), list(holes)
    while frontier:
        tile = frontier.pop()
        for move in range(4):
            back = grid.step(tile, move ^ 1)  # the box came from here, pushed by `move`
            pusher = grid.step(back, move ^ 1) if back >= 0 else -1
            if back < 0 or pusher < 0 or grid.walls[back] or grid.walls[pusher] or back in live:
                continue
            live.add(back)
            frontier.append(back)
    return frozenset(t for t in range(grid.width * grid.height) if not grid.walls[t]) - live


#: the input planes of a learned cost-to-go, in order (`planes`)
PLANES = ("walls", "boxes", "holes", "exits", "players", "dead", "exit_distance")
#: a scale that brings move counts near 1 for a network (its target is moves / SCALE)
SCALE = 32.0
#: scores positions (keys of one grid) by their estimated moves to go
Heuristic = Callable[[Grid, list[Key]], np.ndarray]


def planes(grid: Grid, keys: Sequence[Key], height: int, width: int) -> np.ndarray:
    """(N, height, width, len(PLANES)) float32 planes of positions on a canvas at least the
    grid's size (the rest wall): what a learned cost-to-go reads."""
    if grid.height > height or grid.width > width:
        raise AgentError(
            f"planner: a {grid.height}x{grid.width} level is larger than the network's "
            f"{height}x{width} canvas"
        )
    base = np.zeros((height, width, len(PLANES)), dtype=np.float32)
    base[..., 0] = 1.0
    base[: grid.height, : grid.width, 0] = grid.walls.reshape(grid.height, grid.width)
    for tile in grid.exits:
        base[tile // grid.width, tile % grid.width, 3] = 1.0
    for tile in grid.dead:
        base[tile // grid.width, tile % grid.width, 5] = 1.0
    distance = np.where(np.isfinite(grid.exit_dist), grid.exit_dist, 0.0) / SCALE
    base[: grid.height, : grid.width, 6] = distance.reshape(grid.height, grid.width)
    out = np.repeat(base[None], len(keys), axis=0)
    for n, (boxes, holes, players) in enumerate(keys):
        for channel, tiles in ((1, boxes), (2, holes), (4, players)):
            for tile in tiles:
                out[n, tile // grid.width, tile % grid.width, channel] += 1.0
    return out


def onnx_heuristic(path: str) -> Heuristic:
    """A learned cost-to-go file as a heuristic: moves to go, never below zero."""
    from agents.onnx.runtime import open_session

    runner, _ = open_session(path)
    feed = runner.get_inputs()[0]
    height, width = (int(d) for d in feed.shape[1:3])

    def estimate(grid: Grid, keys: list[Key]) -> np.ndarray:
        out = runner.run(None, {feed.name: planes(grid, keys, height, width)})[0]
        return np.maximum(np.asarray(out, dtype=np.float64).reshape(-1), 0.0) * SCALE

    return estimate


def _costs(grid: Grid, key: Key, mover: int) -> np.ndarray:
    """Walking costs for player `mover`: walls, boxes, holes and the other players blocked."""
    boxes, holes, players = key
    cost = np.where(grid.walls, -1.0, 1.0)
    cost[list(boxes) + list(holes)] = -1.0
    for i, tile in enumerate(players):
        if i != mover:
            cost[tile] = -1.0
    return cost


def _walk(grid: Grid, pred: np.ndarray, source: int, target: int) -> list[int]:
    return [int(m) for m in path_moves(path_to(pred, source, target), grid.width)]


def _finish(grid: Grid, key: Key) -> tuple[float, list[tuple[int, int]]] | None:
    """Cheapest way found to walk every player onto a distinct exit, one after the other."""
    best: tuple[float, list[tuple[int, int]]] | None = None
    n = len(key[2])
    for i, tile in enumerate(key[2]):  # cheap test first: each can reach some exit
        dist, _ = distances_from(_costs(grid, key, i), grid.width, grid.height, tile)
        if not any(dist[e] >= 0 for e in grid.exits):
            return None
    for order in itertools.permutations(range(n)):
        players, total, steps = list(key[2]), 0.0, []
        for i in order:
            dist, pred = distances_from(_costs(grid, (key[0], key[1], tuple(players)), i),
                                        grid.width, grid.height, players[i])  # fmt: skip
            taken = {players[j] for j in range(n) if j != i}
            reachable = [(dist[e], e) for e in grid.exits if dist[e] >= 0 and e not in taken]
            if not reachable:
                break
            d, exit_tile = min(reachable)
            steps += [(i, m) for m in _walk(grid, pred, players[i], exit_tile)]
            total += d
            players[i] = exit_tile
        else:
            if best is None or total < best[0]:
                best = (total, steps)
        if n == 1:
            break
    return best


def solve(
    grid: Grid,
    start: Key,
    max_nodes: int = 200_000,
    heuristic: Heuristic | None = None,
    stats: dict | None = None,
    exhaustive: bool = True,
) -> list[tuple[int, int]] | None:
    """The sequential plan [(player, move)] of fewest moves found, or None; `stats` (when
    given) gets the nodes expanded; without `exhaustive` only the pass that prunes dead tiles."""
    expanded = [0]
    try:
        for prune in (True, False) if exhaustive else (True,):
            plan = _astar(grid, start, max_nodes, prune, heuristic, expanded)
            if plan is not None:
                return plan
        return None
    finally:
        if stats is not None:
            stats["expanded"] = stats.get("expanded", 0) + expanded[0]


def _heuristic(grid: Grid, key: Key) -> float:
    return float(sum(grid.exit_dist[p] for p in key[2]))


def _astar(
    grid: Grid,
    start: Key,
    max_nodes: int,
    prune: bool,
    heuristic: Heuristic | None = None,
    counter: list[int] | None = None,
) -> list[tuple[int, int]] | None:
    def scores(keys: list[Key]) -> list[float]:
        if heuristic is None:
            return [_heuristic(grid, key) for key in keys]
        return [float(h) for h in heuristic(grid, keys)] if keys else []

    parents: dict[Key, tuple[Key | None, tuple[int, int, int]]] = {start: (None, (0, 0, 0))}
    best_g = {start: 0.0}
    tie = itertools.count()
    heap: list = [(scores([start])[0], next(tie), 0.0, start, None)]
    expanded = 0
    counter = [0] if counter is None else counter
    while heap and expanded < max_nodes:
        _, _, g, key, finish = heapq.heappop(heap)
        if finish is not None:  # a goal entry: the cheapest plan
            steps: list[tuple[int, int]] = list(finish)
            node: Key | None = key
            while node is not None:
                parent, push = parents[node]
                if parent is not None:
                    steps = _macro(grid, parent, *push) + steps
                node = parent
            return steps
        if g > best_g.get(key, np.inf):
            continue
        expanded += 1
        counter[0] += 1
        done = _finish(grid, key)
        if done is not None:
            heapq.heappush(heap, (g + done[0], next(tie), g + done[0], key, done[1]))
        fresh: dict[Key, float] = {}
        for child, cost, push in pushes(grid, key, prune):
            ng = g + cost
            if ng < best_g.get(child, np.inf):
                best_g[child] = ng
                parents[child] = (key, push)
                fresh[child] = ng
        children = list(fresh)
        for child, h in zip(children, scores(children), strict=True):  # one batch
            heapq.heappush(heap, (fresh[child] + h, next(tie), fresh[child], child, None))
    return None


def pushes(grid: Grid, key: Key, prune: bool):
    """(child key, moves, (player, pusher tile, push move)) of every push a player can make."""
    boxes, holes, players = key
    box_set, hole_set = set(boxes), set(holes)
    for i, pos in enumerate(players):
        dist, _ = distances_from(_costs(grid, key, i), grid.width, grid.height, pos)
        others = {p for j, p in enumerate(players) if j != i}
        for box in boxes:
            for move in range(4):
                pusher = grid.step(box, move ^ 1)
                landing = grid.step(box, move)
                if pusher < 0 or landing < 0 or dist[pusher] < 0:
                    continue
                if grid.walls[landing] or landing in box_set or landing in others:
                    continue
                filled = landing in hole_set
                if prune and not filled and landing in grid.dead:
                    continue
                new_boxes = tuple(sorted((box_set - {box}) | (set() if filled else {landing})))
                new_holes = tuple(h for h in holes if h != landing)
                new_players = (*players[:i], box, *players[i + 1 :])
                yield (new_boxes, new_holes, new_players), dist[pusher] + 1, (i, pusher, move)


def _macro(grid: Grid, key: Key, player: int, pusher: int, move: int) -> list[tuple[int, int]]:
    """The steps of one push macro from position `key`: the walk, then the push."""
    pos = key[2][player]
    _, pred = distances_from(_costs(grid, key, player), grid.width, grid.height, pos)
    return [(player, m) for m in _walk(grid, pred, pos, pusher)] + [(player, move)]


def compress(grid: Grid, start: Key, steps: Sequence[tuple[int, int]]) -> list[dict[int, int]]:
    """Laps {player: move} from a sequential plan: each step right after the last earlier step
    of its player or touching one of its tiles (see the module docstring)."""
    boxes = set(start[0])
    players = list(start[2])
    last_touch: dict[int, int] = {}
    last_player: dict[int, int] = {}
    laps: list[dict[int, int]] = []
    for player, move in steps:
        source = players[player]
        target = grid.step(source, move)
        touched = [source, target]
        if target in boxes:
            landing = grid.step(target, move)
            touched.append(landing)
            boxes.discard(target)
            boxes.add(landing)  # a filled hole holds no box, but keeping it changes nothing
        players[player] = target
        lap = max([last_player.get(player, -1)] + [last_touch.get(t, -1) for t in touched]) + 1
        for t in touched:
            last_touch[t] = lap
        last_player[player] = lap
        while len(laps) <= lap:
            laps.append({})
        laps[lap][player] = move
    return laps


def replay(grid: Grid, start: Key, laps: list[dict[int, int]]) -> list[Key]:
    """The position key before each lap, by the planner's own model of the rules."""
    boxes, holes, players = set(start[0]), set(start[1]), list(start[2])
    keys = []
    for lap in laps:
        keys.append((tuple(sorted(boxes)), tuple(sorted(holes)), tuple(players)))
        for player, move in lap.items():
            target = grid.step(players[player], move)
            if target in boxes:
                landing = grid.step(target, move)
                boxes.discard(target)
                if landing in holes:
                    holes.discard(landing)
                else:
                    boxes.add(landing)
            players[player] = target
    return keys


def _key(layout: dict) -> Key:
    return (
        tuple(int(t) for t in np.flatnonzero(layout["boxes"])),
        tuple(int(t) for t in np.flatnonzero(layout["holes"])),
        tuple(int(t) for t in layout["players"]),
    )


@builder("planner")
@builder("sokoban")
class PlannerAgent(Agent):
    """Plans the whole puzzle, then plays the plan lap by lap, re-planning off the plan."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        self.max_nodes = option(options, "nodes", int, 200_000)
        evaluation = option(options, "eval", str, "distance")
        if options:
            raise AgentError(f"planner: unknown option(s) {sorted(options)}; known: nodes, eval")
        self.heuristic: Heuristic | None = None
        if evaluation.startswith("onnx:"):
            self.heuristic = onnx_heuristic(evaluation[len("onnx:") :])
        elif evaluation != "distance":
            raise AgentError(f"planner: eval={evaluation!r}; expected distance or onnx:PATH")
        self.stats: dict[str, int] = {}  # nodes expanded by every plan so far
        if getattr(game, "layout", None) is None:
            raise AgentError(f"planner: {game.name} has no `layout` hook to plan over")
        self._lap_of: dict[Key, dict[int, int]] = {}
        self.steps: list[tuple[int, int]] | None = None  # the last sequential plan
        self.laps: list[dict[int, int]] = []

    def plan(self, s: np.ndarray) -> list[dict[int, int]]:
        """Plans from state array `s`; the laps as {player: move}, pathfind move numbers."""
        layout = self.game.layout(s)
        grid, start = read_grid(layout)
        self.steps = solve(grid, start, self.max_nodes, self.heuristic, self.stats)
        self.laps = [] if self.steps is None else compress(grid, start, self.steps)
        self._lap_of = dict(zip(replay(grid, start, self.laps), self.laps, strict=True))
        return self.laps

    def step(self, state: State, player: int | None = None) -> int:
        layout = self.game.layout(state.array)
        player = 0 if player is None else player
        if state.current_player() != SIMULTANEOUS:
            return int(layout["stay"])
        key = _key(layout)
        if key not in self._lap_of:
            self.plan(state.array)
        lap = self._lap_of.get(key)
        if lap is None or player not in lap:
            return int(layout["stay"])
        return int(layout["moves"][lap[player]])
