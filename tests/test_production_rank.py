"""Which production bot a game offers first (`gridbots play`, the web, the bot API): ranked by
recorded evidence (models.registry.strength), hand-built registry descriptions as the truth."""

from __future__ import annotations

import json

from models.registry import production_summary, rank_key


def model(name: str, versions: dict[str, dict[str, str]], production: str) -> dict:
    """A described model (models.registry.describe's shape) with these versions' tags."""
    return {
        "name": name,
        "aliases": {"production": production},
        "versions": [{"version": v, "tags": tags} for v, tags in versions.items()],
    }


def gate(decision: str, interval: str, opponent: str) -> dict[str, str]:
    return {"promotion.decision": decision, "promotion.interval": interval,
            "promotion.score": "0.7", "promotion.opponent": opponent}  # fmt: skip


CARD = {
    "card.sha256": "ab" * 32,
    "bundle.source": json.dumps({"from": "zoo", "entry": "connect4/playerzero"}),
    "promotion.decision": "imported",
    "evidence.0": json.dumps(
        {"figure": "vs alphabeta", "interval": [0.7636, 0.87], "opponent": "alphabeta:ms=100"}
    ),
    "evidence.1": json.dumps(
        {"figure": "optimal moves", "interval": [0.9258, 0.95], "opponent": "none"}
    ),
    "evidence.2": json.dumps({"figure": "not measured", "status": "pending"}),
}
BASELINE = "random:guards=win+block"


def test_a_zoo_bot_and_the_bot_that_beat_it_outrank_a_high_score_against_the_baseline():
    hmm = model("connect4-hmm", {"1": gate("promoted", "[0.9500, 0.99]", BASELINE)}, "1")
    zoo = model("connect4-playerzero", {"1": CARD}, "1")
    beaten = model(
        "connect4-other",
        {"1": CARD, "2": gate("promoted", "[0.5200, 0.70]", "registry:connect4-other/1")},
        "2",
    )
    summaries = {m["name"]: production_summary(m) for m in (hmm, zoo, beaten)}
    assert summaries["connect4-playerzero"]["floor"] == 0.9258  # the card's highest lower bound
    assert summaries["connect4-playerzero"]["card"] == "connect4/playerzero"
    assert "optimal moves" in summaries["connect4-playerzero"]["floor_evidence"]
    assert (
        summaries["connect4-other"]["rests_on_card"]
        and summaries["connect4-other"]["floor"] == 0.52
    )
    assert not summaries["connect4-hmm"]["rests_on_card"]
    ranked = [b["name"] for b in sorted(summaries.values(), key=rank_key)]
    assert ranked == ["connect4-playerzero", "connect4-other", "connect4-hmm"]


def test_without_cards_the_higher_gate_floor_wins_not_the_name():
    a = model("connect4-aaa", {"1": gate("promoted", "[0.5100, 0.80]", BASELINE)}, "1")
    z = model("connect4-zzz", {"1": gate("promoted", "[0.6400, 0.90]", BASELINE)}, "1")
    # a rejected version that named a card bot as its opponent does not lend it the card
    r = model("connect4-rrr", {"1": CARD | {"card.sha256": ""},
                               "2": gate("rejected", "[0.1, 0.4]", "registry:connect4-rrr/1")},
              "1")  # fmt: skip
    ranked = [b["name"] for b in sorted(map(production_summary, (a, z, r)), key=rank_key)]
    assert ranked == ["connect4-zzz", "connect4-aaa", "connect4-rrr"]
