"""Which pairings a pipeline tournament plays: every bot against every baseline and every pair
of bots, or the pairings a study names (`evaluate.pairings` in params).

Plain functions of names and specs, so the evaluate stage (flows/pipeline/stages/evaluate.py)
only calls them and tests check them without a flow.
"""

from __future__ import annotations

from engine.protocol import GameError


def pairing_list(bots: list[str], baselines: list[str]) -> list[tuple[str, str]]:
    """Every bot against every baseline, then every pair of bots."""
    against = [(b, x) for b in bots for x in baselines]
    return against + [(a, b) for i, a in enumerate(bots) for b in bots[i + 1 :]]


def chosen_pairings(
    chosen: list, bots: dict[str, str], baselines: list[str]
) -> list[tuple[str, str]]:
    """`evaluate.pairings` ([[a, b], …], bot names or baselines): only the pairings a study
    plays (study 000 plays the two best models against alpha-beta, not every model)."""
    known = {**bots, **{b: b for b in baselines}}
    pairs = []
    for pair in chosen:
        if not (isinstance(pair, list) and len(pair) == 2 and all(p in known for p in pair)):
            raise GameError(
                f"evaluate.pairings: {pair!r} must be [a, b] of trained bots or baselines "
                f"({', '.join(known)})"
            )
        pairs.append((known[pair[0]], known[pair[1]]))
    return pairs
