"""The learned A* heuristic (models.cost_to_go, `planner:eval=onnx:PATH`) and the per-level
puzzle comparison (`gridbots puzzle rate`): hand-worked planes and targets, a heuristic network
of zeros (A* as uniform cost: every plan as short as the admissible planner's), and a really
trained tiny network guiding the planner on the small levels."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import agents
from agents.base import AgentError
from agents.search.planner import PLANES, PlannerAgent, planes, read_grid
from engine import parse_game_spec
from engine.match import play_game
from engine.puzzles import compare_levels
from models import cost_to_go


def zeros_network(path, canvas: int = 16, kind: str = "cost-to-go") -> str:
    """An ONNX file whose estimate is 0 for every position (a heuristic that adds nothing)."""
    shape = [None, canvas, canvas, len(PLANES)]
    x = helper.make_tensor_value_info("planes", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("moves_to_go", TensorProto.FLOAT, [None, 1])
    axes = helper.make_tensor("axes", TensorProto.INT64, [3], [1, 2, 3])
    nodes = [
        helper.make_node("ReduceSum", ["planes", "axes"], ["total"], keepdims=0),
        helper.make_node("Mul", ["total", "zero"], ["scaled"]),
        helper.make_node("Unsqueeze", ["scaled", "one"], ["moves_to_go"]),
    ]
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(nodes, "zeros", [x], [y], [axes, zero, one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    entry = model.metadata_props.add()
    entry.key, entry.value = "gridbots.kind", kind
    onnx.save(model, str(path))
    return str(path)


def test_planes_of_the_first_level_by_hand():
    game = parse_game_spec("sokoban:level=first")  # wwwwwww / wp   ew / wwwwwww
    grid, key = read_grid(game.layout(game.new_initial_state().array))
    x = planes(grid, [key], 8, 8)[0]
    assert x.shape == (8, 8, len(PLANES))
    walls = x[..., PLANES.index("walls")]
    assert walls[1, 1:6].sum() == 0 and walls[0].all() and walls[:, 7].all() and walls[7].all()
    assert x[1, 1, PLANES.index("players")] == 1 and x[..., PLANES.index("players")].sum() == 1
    assert x[1, 5, PLANES.index("exits")] == 1 and x[..., PLANES.index("exits")].sum() == 1
    assert x[..., PLANES.index("boxes")].sum() == 0 and x[..., PLANES.index("holes")].sum() == 0
    distance = x[1, 1:6, PLANES.index("exit_distance")] * 32
    assert np.allclose(distance, [4, 3, 2, 1, 0])
    with pytest.raises(AgentError, match="larger than the network's 2x2 canvas"):
        planes(grid, [key], 2, 2)


def test_targets_are_the_moves_left_in_the_planners_plan():
    p = cost_to_go.check({"opening": 0, "children": 0, "canvas": 8})
    rows = cost_to_go.solve_rows("sokoban:level=first", p, 0)
    assert [y for _, y in rows] == [4.0, 3.0, 2.0, 1.0, 0.0]
    players = [np.argwhere(x[..., PLANES.index("players")])[0].tolist() for x, _ in rows]
    assert players == [[1, 1], [1, 2], [1, 3], [1, 4], [1, 5]]


def test_a_zero_heuristic_plans_as_short_as_the_admissible_planner(tmp_path):
    """h = 0 is uniform-cost search: its plans are optimal under the planner's cost model, so
    exactly as long as A*'s with the admissible distance heuristic; it expands more nodes."""
    path = zeros_network(tmp_path / "zeros.onnx")
    for spec in ("sokoban:level=push", "sokoban:level=duo", "sokoban:level=twoholes"):
        game = parse_game_spec(spec)
        start = game.new_initial_state().array
        plain, zero = PlannerAgent(game, "planner"), PlannerAgent(game, "p", eval=f"onnx:{path}")
        plain.plan(start)
        zero.plan(start)
        assert len(zero.steps) == len(plain.steps), spec
        assert zero.stats["expanded"] >= plain.stats["expanded"], spec


def test_the_onnx_agent_plays_a_cost_to_go_file_as_the_planner(tmp_path):
    path = zeros_network(tmp_path / "zeros.onnx")
    game = parse_game_spec("sokoban:level=duo")
    seats = [agents.make(f"onnx:{path}", game, seed=p) for p in range(game.num_players)]
    assert all(isinstance(s, PlannerAgent) and s.heuristic is not None for s in seats)
    assert play_game(game, seats, seed=0).returns() == [1.0, 1.0]
    with pytest.raises(AgentError, match="eval='nope'"):
        PlannerAgent(game, "planner", eval="nope")


def test_compare_levels_counts_laps_and_the_reference_on_the_same_scenarios():
    levels = [parse_game_spec("sokoban:level=first"), parse_game_spec("sokoban:level=push")]
    ticks = iter(range(1000))
    result = compare_levels(levels, "random", "planner", 3, 0, 0, agents.make,
                            clock=lambda: float(next(ticks)))  # fmt: skip
    first, push = result["levels"]
    assert first["reference_solved"] == push["reference_solved"] == 3
    assert first["reference_laps_both"] in (None, 4.0)  # `first` is 4 moves right
    assert result["attempts"] == 6 and result["reference_solved"] == 6
    assert result["at_reference_rate"] == (first["solved"] == 3 and push["solved"] == 3)
    assert first["seconds_per_attempt"] == round(1 / 3, 4)  # one tick for 3 attempts
    same = compare_levels(levels, "planner", "planner", 2, 5, 1, agents.make)
    assert same["at_reference_rate"] and same["levels_at_reference_rate"] == 2
    assert all(r["laps_ratio"] == 1.0 for r in same["levels"])


def test_puzzle_rate_refuses_a_duel_with_one_line():
    done = subprocess.run([sys.executable, "-m", "flows.entry", "puzzle", "rate", "connect4",
                           "random"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == "gridbots: error: connect4 is a duel, not a puzzle: play a match"


@pytest.mark.slow
def test_a_trained_tiny_network_guides_the_planner_to_a_solution(tmp_path):
    """A really trained (tiny) cost-to-go network: the file the family exports, checked by
    parity, guiding the planner on the small levels from their start (a barely trained
    network leaves quad's four players to a long search: the zoo's figures cover it)."""
    params = {"games": ["sokoban:level=first", "sokoban:level=push", "sokoban:level=duo"],
              "starts": 3, "opening": 1, "children": 1, "child_nodes": 50, "filters": 4,
              "layers": 2, "dense": 8, "epochs": 2, "holdout": 3}  # fmt: skip
    result = cost_to_go.learn("sokoban", params, tmp_path / "out", tmp_path / "work")
    assert result.artifact.is_file() and result.metrics["rows"] > 0
    assert (tmp_path / "work" / "rows.npz").is_file()  # the checkpoint a rerun resumes from
    report = json.loads((tmp_path / "out" / "model.parity.json").read_text())
    assert report["passed"]
    spec = f"planner:eval=onnx:{result.artifact}"
    for level in ("first", "push", "duo", "corner", "trio"):
        game = parse_game_spec(f"sokoban:level={level}")
        seats = [agents.make(spec, game, seed=p) for p in range(game.num_players)]
        assert max(play_game(game, seats, seed=0).returns()) > 0, level
