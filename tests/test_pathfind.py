"""Dijkstra on flat grids: brute-force BFS on random grids, hand-worked weighted cases, paths."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from engine.pathfind import (
    DOWN,
    LEFT,
    RIGHT,
    UP,
    distances_from,
    path_moves,
    path_to,
    shortest_path,
    walk,
)


def bfs(blocked: np.ndarray, width: int, height: int, source: int) -> np.ndarray:
    """Plain BFS over unblocked tiles (the start always usable): the independent truth."""
    dist = np.full(width * height, -1.0)
    dist[source] = 0
    queue = deque([source])
    while queue:
        t = queue.popleft()
        r, c = divmod(t, width)
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < height and 0 <= nc < width:
                n = nr * width + nc
                if not blocked[n] and dist[n] < 0:
                    dist[n] = dist[t] + 1
                    queue.append(n)
    return dist


def grid(rows: list[str]) -> tuple[np.ndarray, int, int]:
    """'#' blocked, '.' and 'S' (the start) cost 1, digits their cost."""
    width, height = len(rows[0]), len(rows)
    cost = np.array(
        [-1.0 if ch == "#" else (1.0 if ch in ".S" else float(ch)) for line in rows for ch in line]
    )
    return cost, width, height


@pytest.mark.parametrize("seed", range(6))
def test_unit_costs_match_bfs(seed):
    rng = np.random.default_rng(seed)
    width, height = int(rng.integers(3, 20)), int(rng.integers(3, 20))
    blocked = rng.random(width * height) < 0.3
    cost = np.where(blocked, -1.0, 1.0)
    for source in rng.choice(width * height, size=5, replace=False):
        truth = bfs(blocked, width, height, int(source))
        dist, pred = distances_from(cost, width, height, int(source))
        np.testing.assert_array_equal(dist, truth)
        for target in np.flatnonzero(truth >= 0):
            path = path_to(pred, int(source), int(target))
            assert len(path) == truth[target] + 1 and path[0] == source and path[-1] == target
            assert not blocked[path[1:]].any()
            assert (walk(path_moves(path, width), int(source), width, height) == path).all()
            d, p = shortest_path(cost, width, height, int(source), int(target))
            assert d == truth[target] and len(p) == len(path)
        for cap in (0, 2, 5):
            capped, _ = distances_from(cost, width, height, int(source), float(cap))
            expected = np.where(truth <= cap, truth, -1.0)
            np.testing.assert_array_equal(capped, expected)


def test_weighted_detour_beats_expensive_shortcut():
    # straight along the top costs 1 + 9 + 1 = 11; around the bottom 6 steps of 1 = 6
    cost, w, h = grid(["S9.", "...", "..."])
    d, path = shortest_path(cost, w, h, 0, 2)
    assert d == 4.0 and list(path) == [0, 3, 4, 5, 2]
    cost, w, h = grid(["S9.", "#.#", "..."])
    d, path = shortest_path(cost, w, h, 0, 2)
    assert d == 10.0 and list(path) == [0, 1, 2]
    cost, w, h = grid(["S5.", "1#1", "1.1"])
    dist, _ = distances_from(cost, w, h, 0)
    # (1,0)=1, (2,0)=2, (2,1)=3, (2,2)=4, (1,2)=5, (0,2)=min(5+1, 5+1)=6
    assert list(dist) == [0, 5, 6, 1, -1, 5, 2, 3, 4]


def test_blocked_target_and_walled_off_region():
    cost, w, h = grid(["..#.", "..#.", "..#."])
    assert shortest_path(cost, w, h, 0, 3)[0] == -1 and len(shortest_path(cost, w, h, 0, 3)[1]) == 0
    assert shortest_path(cost, w, h, 0, 2)[0] == -1  # a blocked target is never entered
    d, path = shortest_path(cost, w, h, 5, 5)
    assert d == 0 and list(path) == [5]


def test_start_on_blocked_tile_and_moves():
    cost, w, h = grid(["#..", "...", "..."])
    dist, pred = distances_from(cost, w, h, 0)
    assert dist[0] == 0 and dist[8] == 4
    path = path_to(pred, 0, 8)
    moves = path_moves(path, w)
    assert len(moves) == 4 and set(moves) <= {DOWN, RIGHT}
    assert list(walk(np.array([RIGHT, DOWN, LEFT, UP]), 4, w, h)) == [4, 5, 8, 7, 4]
