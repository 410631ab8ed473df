"""Symmetry augmentation through the optional `Game.symmetries()` hook.

A game that has symmetries returns them as `(observation_perm, action_perm)` pairs of index
arrays with gather semantics: the transformed observation is `features[observation_perm]`
(flat, all planes, so a game can move whole planes, e.g. Lazerbike's heading planes) and the
transformed mask / policy / scores are `x[action_perm]`. The identity comes first. Data code
never names a game: a game without the hook has only the identity.
"""

from __future__ import annotations

import numpy as np

from features.errors import DataError

Symmetry = tuple[np.ndarray, np.ndarray]


def game_symmetries(game) -> list[Symmetry]:
    """The game's symmetries, checked to be permutations of the right sizes, identity first."""
    hook = getattr(game, "symmetries", None)
    size = int(np.prod(game.observation_shape))
    identity = (np.arange(size), np.arange(game.num_actions))
    if hook is None:
        return [identity]
    found = [(np.asarray(o, dtype=np.int64), np.asarray(a, dtype=np.int64)) for o, a in hook()]
    for obs, act in found:
        if sorted(obs.tolist()) != list(range(size)) or sorted(act.tolist()) != list(
            range(game.num_actions)
        ):
            raise DataError(f"{game.name}: symmetries() must return permutations")
    if not found or not (
        np.array_equal(found[0][0], identity[0]) and np.array_equal(found[0][1], identity[1])
    ):
        raise DataError(f"{game.name}: symmetries() must list the identity first")
    return found


def map_actions(actions: np.ndarray, action_perm: np.ndarray, neutral: int) -> np.ndarray:
    """Where each played action goes: the a' with action_perm[a'] == a (neutral stays)."""
    inverse = np.argsort(action_perm)
    actions = np.asarray(actions, dtype=np.int64)
    out = actions.copy()
    real = actions != neutral
    out[real] = inverse[actions[real]]
    return out


def augment(arrays: dict[str, np.ndarray], game) -> dict[str, np.ndarray]:
    """Every row under every symmetry, symmetry-major: row i of symmetry k is at k * n + i.

    `planes` ([n, *observation_shape]) move by the observation permutation; `mask`, `policy`
    and `action_scores` ([n, num_actions]) by the action permutation; `action` ([n]) to its
    image; any other array (outcome, player, ids) is repeated unchanged. A `symmetry` column
    says which transform made each row.
    """
    symmetries = game_symmetries(game)
    n = len(next(iter(arrays.values()))) if arrays else 0
    out: dict[str, list[np.ndarray]] = {name: [] for name in arrays}
    for symmetry in symmetries:
        for name, values in arrays.items():
            out[name].append(moved(name, values, symmetry, game.neutral_action))
    result = {name: np.concatenate(parts) for name, parts in out.items()}
    result["symmetry"] = np.repeat(np.arange(len(symmetries), dtype=np.int8), n)
    return result


def round_gathers(game, symmetry: Symmetry, board_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(feature gather, class gather) of sequence rounds under one symmetry: each seat's
    one-hot block [neutral, actions…] (agents.sequence.codec.one_hot_actions) by the action
    permutation, then `board_blocks` board pictures of H*W cells each by the observation
    permutation's first plane, which a game lays out like its board codes. The class gather
    moves a softmax target [neutral, actions…] alike."""
    obs_perm, act_perm = symmetry
    classes = np.concatenate([[0], 1 + np.asarray(act_perm, dtype=np.int64)])
    width = len(classes)
    parts = [p * width + classes for p in range(game.num_players)]
    if board_blocks:
        cells = int(np.asarray(game.board_codes(game.new_initial_state().array[None])).size)
        plane = np.asarray(obs_perm[:cells], dtype=np.int64)
        if sorted(plane.tolist()) != list(range(cells)):
            raise DataError(f"{game.name}: its symmetries do not move a board picture's cells")
        base = game.num_players * width
        parts += [base + b * cells + plane for b in range(board_blocks)]
    return np.concatenate(parts), classes


def moved(name: str, values: np.ndarray, symmetry: Symmetry, neutral: int = -1) -> np.ndarray:
    """Column `name` of some rows under one symmetry: `planes` by the observation
    permutation, `mask` / `policy` / `action_scores` by the action permutation, `action` to its
    image, anything else unchanged. Training applies it per batch where augmenting every row
    up front would not fit in memory (tactics: 4 symmetries of 4,320-action rows)."""
    obs_perm, act_perm = symmetry
    if name == "planes":
        n = len(values)
        return values.reshape(n, -1)[:, obs_perm].reshape(values.shape)
    if name in ("mask", "policy", "action_scores"):
        return values[:, act_perm]
    if name == "action":
        return map_actions(values, act_perm, neutral).astype(values.dtype)
    return values
