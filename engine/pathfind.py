"""Dijkstra path finding on grids given as flat per-tile cost arrays (no game knowledge).

A grid is `width * height` tiles, row-major (tile = row * width + col), 4-neighbourhood. The
walkability predicate is the cost array itself: `cost[t]` is what entering tile t costs, and a
negative cost means t is blocked, so a game builds it from its state (walls -1, floor 1, a risky
tile 5, ...). The start tile is always usable (a bike's head or a player's tile is occupied).

Two searches, as in the original engine: from one tile to every tile within a maximum distance
(`distances_from`), and between two tiles, stopping as soon as the target is settled
(`shortest_path`). Both use a binary heap in flat numba arrays with lazy deletion; ties break
on the lower tile index, so paths are deterministic. Moves are 0 up, 1 down, 2 left, 3 right.
"""

from __future__ import annotations

import numpy as np
from numba import njit

UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3
UNREACHABLE = -1.0
NO_TILE = -1


@njit(cache=True, inline="always")
def _less(keys, items, i, j):
    return keys[i] < keys[j] or (keys[i] == keys[j] and items[i] < items[j])


@njit(cache=True, inline="always")
def _swap(keys, items, i, j):
    keys[i], keys[j] = keys[j], keys[i]
    items[i], items[j] = items[j], items[i]


@njit(cache=True, inline="always")
def heap_push(keys, items, size, key, item):
    """Adds (key, item) to the heap of `size` entries; returns the new size."""
    i = size
    keys[i] = key
    items[i] = item
    while i > 0:
        parent = (i - 1) >> 1
        if not _less(keys, items, i, parent):
            break
        _swap(keys, items, i, parent)
        i = parent
    return size + 1


@njit(cache=True, inline="always")
def heap_pop(keys, items, size):
    """Removes the smallest entry (it is left at index `size - 1`); returns the new size."""
    last = size - 1
    _swap(keys, items, 0, last)
    i = 0
    while True:
        left = 2 * i + 1
        if left >= last:
            break
        child = left
        if left + 1 < last and _less(keys, items, left + 1, left):
            child = left + 1
        if not _less(keys, items, child, i):
            break
        _swap(keys, items, i, child)
        i = child
    return last


@njit(cache=True, inline="always")
def neighbour(tile, move, width, height):
    """The tile one step away, or NO_TILE off the grid."""
    r = tile // width
    c = tile - r * width
    if move == UP:
        return NO_TILE if r == 0 else tile - width
    if move == DOWN:
        return NO_TILE if r == height - 1 else tile + width
    if move == LEFT:
        return NO_TILE if c == 0 else tile - 1
    return NO_TILE if c == width - 1 else tile + 1


@njit(cache=True)
def dijkstra(cost, width, height, source, target, max_dist, dist, pred, keys, items):
    """Fills dist (UNREACHABLE where not settled) and pred (NO_TILE at the source and unreached
    tiles) from `source`; stops once `target` (>= 0) is settled. Tiles farther than `max_dist`
    (< 0: no limit) stay unreached. keys/items are heap buffers of >= 4 * tiles + 1 entries.
    Returns the number of tiles settled."""
    n = width * height
    for t in range(n):
        dist[t] = UNREACHABLE
        pred[t] = NO_TILE
    settled = np.zeros(n, dtype=np.bool_)
    dist[source] = 0.0
    size = heap_push(keys, items, 0, 0.0, source)
    count = 0
    while size > 0:
        size = heap_pop(keys, items, size)
        d = keys[size]
        tile = items[size]
        if settled[tile]:
            continue
        settled[tile] = True
        count += 1
        if tile == target:
            break
        for move in range(4):
            nxt = neighbour(tile, move, width, height)
            if nxt == NO_TILE or settled[nxt] or cost[nxt] < 0:
                continue
            nd = d + cost[nxt]
            if max_dist >= 0 and nd > max_dist:
                continue
            if dist[nxt] < 0 or nd < dist[nxt]:
                dist[nxt] = nd
                pred[nxt] = tile
                size = heap_push(keys, items, size, nd, nxt)
    for t in range(n):  # tentative distances of unsettled tiles are not final
        if not settled[t]:
            dist[t] = UNREACHABLE
            pred[t] = NO_TILE
    return count


@njit(cache=True)
def distances_from(cost, width, height, source, max_dist=-1.0):
    """(dist, pred) from `source` to every tile within `max_dist` (dist -1 when unreachable)."""
    n = width * height
    dist = np.empty(n, dtype=np.float64)
    pred = np.empty(n, dtype=np.int64)
    keys = np.empty(4 * n + 1, dtype=np.float64)
    items = np.empty(4 * n + 1, dtype=np.int64)
    dijkstra(cost, width, height, source, NO_TILE, max_dist, dist, pred, keys, items)
    return dist, pred


@njit(cache=True)
def path_to(pred, source, target):
    """The tiles from `source` to `target` (both included) along `pred`; empty if unreached."""
    length = 1
    tile = target
    while tile != source:
        tile = pred[tile]
        if tile == NO_TILE:
            return np.empty(0, dtype=np.int64)
        length += 1
    path = np.empty(length, dtype=np.int64)
    tile = target
    for i in range(length - 1, -1, -1):
        path[i] = tile
        tile = pred[tile]
    return path


@njit(cache=True)
def shortest_path(cost, width, height, source, target):
    """(distance, tiles from source to target) or (-1, empty) when the target is unreachable."""
    n = width * height
    dist = np.empty(n, dtype=np.float64)
    pred = np.empty(n, dtype=np.int64)
    keys = np.empty(4 * n + 1, dtype=np.float64)
    items = np.empty(4 * n + 1, dtype=np.int64)
    dijkstra(cost, width, height, source, target, -1.0, dist, pred, keys, items)
    if dist[target] < 0:
        return UNREACHABLE, np.empty(0, dtype=np.int64)
    return dist[target], path_to(pred, source, target)


@njit(cache=True)
def path_moves(path, width):
    """The moves (UP, DOWN, LEFT, RIGHT) that walk a path of adjacent tiles."""
    moves = np.empty(max(path.shape[0] - 1, 0), dtype=np.int64)
    for i in range(moves.shape[0]):
        step = path[i + 1] - path[i]
        if step == -width:
            moves[i] = UP
        elif step == width:
            moves[i] = DOWN
        elif step == -1:
            moves[i] = LEFT
        else:
            moves[i] = RIGHT
    return moves


@njit(cache=True)
def walk(moves, source, width, height):
    """The tiles a sequence of moves visits from `source` (inverse of path_moves)."""
    path = np.empty(moves.shape[0] + 1, dtype=np.int64)
    path[0] = source
    for i in range(moves.shape[0]):
        path[i + 1] = neighbour(path[i], moves[i], width, height)
    return path
