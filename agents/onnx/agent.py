"""`onnx:PATH[:key=value,…]`: any exported model, the agent chosen by its `gridbots.kind`.

"sequence" → `seq:model=PATH` (options: guards); "value" → `alphabeta:eval=onnx:PATH`
(options: depth, ms), or `hps:eval=onnx:PATH` where the game has a portfolio of scripted turns
(a value network over observation planes: its multi-action turns are searched a turn at a
time), or `simab:eval=onnx:PATH` on a simultaneous game (its laps), except TD networks
(family `td`) → `td:model=PATH` (options: select,
epsilon, temperature); "neat" → `neat:genome=PATH` (any preset of its map size);
"policy-value" → `puct:model=PATH` (options: sims, ms, c, batch, …); "cost-to-go" →
`planner:eval=onnx:PATH` (a learned A* heuristic, any level of its canvas). The file's metadata, not
its name, says what it is, so a registry artifact plays without the user knowing its family.
"""

from __future__ import annotations

from agents.base import Agent, AgentError, builder
from engine.protocol import Game

KINDS = ("sequence", "value", "neat", "policy-value", "cost-to-go")


@builder("onnx")
def onnx_agent(game: Game, spec: str, seed: int | None = None, **options: str) -> Agent:
    """Builds the agent the model's kind calls for."""
    from agents.onnx.runtime import open_session

    path = options.pop("variant", None) or options.pop("model", None)
    if not path:
        raise AgentError("onnx: name the model file: onnx:PATH")
    session, meta = open_session(path)
    kind = meta.get("gridbots.kind")
    if kind == "neat":  # a network reads the map, whatever the preset: the agent checks sizes
        from agents.neat.agent import NeatAgent

        return NeatAgent(game, spec, seed=seed, genome=path, **options)
    if kind == "cost-to-go":  # learned on many levels: the planner checks the canvas
        from agents.search.planner import PlannerAgent

        return PlannerAgent(game, spec, seed=seed, eval=f"onnx:{path}", **options)
    trained = meta.get("gridbots.game")
    if trained and trained != game.spec():
        raise AgentError(f"onnx: {path} was trained for {trained}, not {game.spec()}")
    if kind == "sequence":
        from agents.sequence.agent import OnnxSequencePredictor, SeqAgent

        predictor = OnnxSequencePredictor(path, game, session=session, meta=meta)
        return SeqAgent(game, spec, seed=seed, predictor=predictor, **options)
    if kind == "value" and meta.get("gridbots.family") == "td":  # a TD network plays 1-ply
        from agents.td.agent import TDAgent

        return TDAgent(game, spec, seed=seed, model=path, **options)
    if kind == "value" and game.portfolio is not None:
        from agents.search.hps import HPSAgent

        return HPSAgent(game, spec, seed=seed, eval=f"onnx:{path}", **options)
    if kind == "value" and game.simultaneous:  # a lap search: own moves against the others'
        from agents.search.simab import SimABAgent

        return SimABAgent(game, spec, seed=seed, eval=f"onnx:{path}", **options)
    if kind == "value":
        from agents.search.alphabeta import AlphaBetaAgent

        return AlphaBetaAgent(game, spec, seed=seed, eval=f"onnx:{path}", **options)
    if kind == "policy-value":
        from agents.puct.agent import PUCTAgent

        return PUCTAgent(game, spec, seed=seed, model=path, **options)
    raise AgentError(
        f"onnx: {path} has gridbots.kind={kind!r}; this agent plays {', '.join(KINDS)} models"
    )
