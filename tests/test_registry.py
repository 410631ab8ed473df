"""The registry: versions and their evidence, the promotion gate, `registry:` agent specs.

Models come from test_tracking's stand-in family. Its ONNX file names, in its metadata, the
built-in agent it stands for (`gridbots.stub_agent`); the test-only `stubonnx:` agent reads the
downloaded file and plays as that agent. So the gate really plays seeded games between versions
fetched from the registry, and a version whose file says `mcts:sims=100` is clearly stronger
than one that says `random` (and than the guarded random baseline). The gate and parity with
really trained Keras/ONNX versions: test_promotion_trained.
"""

from __future__ import annotations

import math

import onnx
import pytest
from test_tracking import make_dataset, mlflow_sandbox

from agents import make
from agents.base import _BUILDERS, Agent, AgentError
from engine import load_game
from engine.match import play_game
from engine.tournament import wilson_interval
from models.base import ModelError

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")
STRONG, WEAK = "mcts:sims=100", "random"


class StubOnnxAgent(Agent):
    """Test-only: plays as the agent the ONNX file's metadata names; counts its decisions."""

    decisions = 0

    def __init__(self, game, spec, seed=None, **options):
        super().__init__(game, spec, seed)
        proto = onnx.load(options.pop("variant"))
        self.stands_for = {p.key: p.value for p in proto.metadata_props}["gridbots.stub_agent"]
        self.inner = make(self.stands_for, game, seed)

    def step(self, state, player=None):
        type(self).decisions += 1
        return self.inner.step(state, player)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    from models import registry_agent

    root = tmp_path_factory.mktemp("registry")
    with mlflow_sandbox(root, tmp_path_factory.getbasetemp()) as patch:
        patch.setitem(_BUILDERS, "stubonnx", StubOnnxAgent)
        patch.setitem(registry_agent.INNER_SPECS, "onnx", "stubonnx:{path}")
        yield root


@pytest.fixture(scope="module")
def versions(sandbox):
    """connect4-stub versions 1 (strong) and 2 (weak), registered through training."""
    from models.tracking import train

    data = make_dataset(sandbox / "counts.npz", manifest_hash="abc")
    strong = train(data, "stub", {"agent": STRONG, "width": "3"}, register=True)
    weak = train(data, "stub", {"agent": WEAK}, register=True)
    return strong, weak


def test_registering_creates_game_family_versions_with_evidence_tags(sandbox, versions):
    from models.registry import describe, list_models

    strong, weak = versions
    assert (strong.version, weak.version) == ("1", "2")
    model = describe("connect4-stub")
    assert model["tags"] == {"gridbots.game": "connect4", "gridbots.family": "stub"}
    first = model["versions"][0]
    assert first["run_id"] == strong.best.run_id
    tags = first["tags"]
    assert tags["dataset.sha256"] == strong.best.dataset["dataset.sha256"]
    assert tags["dataset.manifest_hash"] == "abc"
    assert tags["params"] == (
        '{"agent": "mcts:sims=100", "center": false, "corrupt": false, "epochs": 3, "width": 3}'
    )
    # the tag's plumbing only (the stub reports 3e-06); real Keras-vs-ONNX parity of
    # registered versions is checked in test_promotion_trained
    assert tags["export.parity_max_abs_diff"] == "3e-06"
    assert float(tags["eval.val_loss"]) == pytest.approx(1.1 / 9)
    assert tags["artifact.kind"] == "onnx" and tags["game"] == "connect4"
    assert [m["name"] for m in list_models()] == ["connect4-stub"]


def test_gate_promotes_a_clearly_stronger_candidate_over_the_baseline(sandbox, versions):
    from models.registry import describe, promote_if_better

    rows = []
    before = StubOnnxAgent.decisions
    decision = promote_if_better("connect4-stub", "1", games=12, on_game=rows.append)
    assert decision.opponent == "random:guards=win+block" and decision.previous is None
    assert StubOnnxAgent.decisions > before + 12  # the candidate really chose moves
    assert len(rows) == 12 and {r["swapped"] for r in rows} == {False, True}
    wins = sum(r["score_a"] == 1.0 for r in rows)
    assert (decision.wins, decision.games) == (wins, 12) and wins >= 11
    low, high = wilson_interval(decision.score, 12)
    assert (decision.low, decision.high) == (pytest.approx(low), pytest.approx(high))
    assert decision.promoted and low > 0.5
    model = describe("connect4-stub")
    assert model["aliases"] == {"production": "1"}
    tags = model["versions"][0]["tags"]
    assert tags["promotion.decision"] == "promoted" and tags["promotion.games"] == "12"
    assert float(tags["promotion.score"]) == pytest.approx(decision.score, abs=1e-4)
    assert tags["promotion.interval"] == f"[{low:.4f}, {high:.4f}]"


def test_gate_refuses_a_weaker_candidate_and_leaves_production_alone(sandbox, versions):
    from models.registry import describe, promote_if_better

    rows = []
    decision = promote_if_better("connect4-stub", games=8, seed=5, on_game=rows.append)
    assert decision.version == "2"  # the newest by default
    assert decision.opponent == "registry:connect4-stub/1" and decision.previous == "1"
    assert {r["spec_a"] for r in rows} == {"registry:connect4-stub/2"}
    assert not decision.promoted and decision.wins <= 1
    assert decision.low < 0.5 and math.isclose(
        decision.score, (decision.wins + decision.draws / 2) / 8
    )
    model = describe("connect4-stub")
    assert model["aliases"] == {"production": "1"}
    tags = model["versions"][1]["tags"]
    assert tags["promotion.decision"] == "rejected" and tags["promotion.games"] == "8"
    assert tags["promotion.opponent"] == "registry:connect4-stub/1"
    with pytest.raises(ModelError, match="already @production"):
        promote_if_better("connect4-stub", "1", games=2)
    with pytest.raises(ModelError, match="no registered model 'connect4-nope'"):
        promote_if_better("connect4-nope", games=2)
    with pytest.raises(ModelError, match="no version 9"):
        promote_if_better("connect4-stub", "9", games=2)


def test_registry_spec_resolves_downloads_and_plays(sandbox, versions):
    game = load_game("connect4")
    production = make("registry:connect4-stub@production", game, seed=1)
    assert production.inner.stands_for == STRONG
    assert production.source.is_relative_to(sandbox / "cache")
    assert production.source.name == "model.onnx"
    assert make("registry:connect4-stub", game).inner.stands_for == STRONG  # default alias
    assert make("registry:connect4-stub/2", game).inner.stands_for == WEAK
    final = play_game(game, [production, make("random", game, seed=2)], seed=3)
    assert final.is_terminal() and final.returns()[0] == 1.0  # mcts beats random


@pytest.mark.parametrize(
    "spec, game, message",
    [
        ("registry:connect4-nope@production", "connect4", "no registered model 'connect4-nope'"),
        ("registry:connect4-stub@staging", "connect4", "no alias @staging"),
        ("registry:connect4-stub/7", "connect4", "no version 7"),
        ("registry:connect4-stub/x", "connect4", "a version is a number"),
        ("registry:connect4-stub@production", "othello", "connect4 model, not othello"),
    ],
)
def test_bad_registry_specs_are_agent_errors(sandbox, versions, spec, game, message):
    with pytest.raises(AgentError, match=message):
        make(spec, load_game(game))


def test_a_corrupt_onnx_artifact_is_refused(sandbox, versions):
    from models.registry import resolve
    from models.tracking import train

    broken = train(sandbox / "counts.npz", "stub", {"agent": WEAK}, register=True)
    version = resolve("connect4-stub", version=broken.version)
    stored = list((sandbox / "mlruns").rglob(f"{version.source.split('/')[-1]}/**/model.onnx"))
    assert len(stored) == 1
    stored[0].write_bytes(b"\x08garbage")  # damage the store, not the training
    with pytest.raises(AgentError, match="corrupt ONNX file"):
        make(f"registry:connect4-stub/{broken.version}", load_game("connect4"))


def test_a_registered_value_model_plays_through_the_real_onnx_agent(sandbox, versions, monkeypatch):
    """No stub agent here: `onnx:PATH` reads kind=value and searches with alphabeta on it."""
    from agents.search.alphabeta import AlphaBetaAgent
    from models import registry_agent
    from models.tracking import train

    monkeypatch.setitem(registry_agent.INNER_SPECS, "onnx", "onnx:{path}")
    data = make_dataset(sandbox / "boards.npz", encoding="board-onehot")
    center = train(data, "stub", {"center": "true"}, register=True)
    game = load_game("connect4")
    agent = make(f"registry:connect4-stub/{center.version}:depth=2", game, seed=0)
    assert isinstance(agent.inner, AlphaBetaAgent)
    state = game.new_initial_state()
    assert agent.step(state) == 3  # the centre column: what the evaluation rewards
    final = play_game(game, [agent, make("random", game, seed=4)], seed=4)
    assert final.returns()[0] == 1.0
