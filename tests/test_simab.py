"""simab: hand-worked Lazerbike positions, node counts, brute-force max-min, a seeded match."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.base import AgentError
from agents.search.simab import WIN_SCALE, search
from engine import load_game, parse_game_spec
from engine.conformance import check_game
from engine.games import lazerbike as lb
from engine.games.lazerbike import state_from_setup
from engine.match import play_match
from engine.protocol import SIMULTANEOUS, TERMINAL

L, F, R = 0, 1, 2


def maxmin(game, state, me: int, depth: int, laps: int = 0, naive: bool = False,
           leaf=None) -> float:  # fmt: skip
    """Brute force: MAX over own actions, MIN over the joint moves of all the others; `naive`
    scores unfinished leaves zero, `leaf(state, me)` replaces the game's evaluation."""
    if leaf is None:
        leaf = lambda state, me: 0.0 if naive else float(game.evaluate(state.array, me))  # noqa: E731
    if state.current_player() == TERMINAL:
        r = state.returns()[me]
        return r * WIN_SCALE - laps if r > 0 else (r * WIN_SCALE + laps if r < 0 else 0.0)
    own = state.legal_actions(me)
    if not own:  # out while the game goes on: lost unless a team-mate still drives
        mates = [q for q in range(game.num_players) if q != me and game.teams[q] == game.teams[me]]
        if not any(state.legal_actions(q) for q in mates):
            return -WIN_SCALE + laps
        return leaf(state, me)
    if depth == 0:
        return leaf(state, me)
    others = [p for p in range(game.num_players) if p != me]
    options = [state.legal_actions(p) or [game.neutral_action] for p in others]
    best = -np.inf
    for a in own:
        worst = np.inf
        for combo in np.array(np.meshgrid(*options)).T.reshape(-1, len(others)):
            joint = [0] * game.num_players
            joint[me] = a
            for p, b in zip(others, combo, strict=True):
                joint[p] = int(b)
            child = state.clone()
            child.apply_actions(joint)
            worst = min(worst, maxmin(game, child, me, depth - 1, laps + 1, naive, leaf))
        best = max(best, worst)
    return best


def test_turns_to_survive():
    g = load_game("lazerbike")
    # corner (0,0) facing north: forward and left leave the board, right is the only way
    s = state_from_setup(g, [(0, 0, "N"), (10, 10, "W")])
    for depth in (1, 2, 3):
        value, action, _ = search(g, s.array, 0, depth)
        assert action == R and value > -WIN_SCALE / 2
    agent = agents.make("simab:depth=2", g, seed=0)
    assert agent.step(s.clone(), 0) == R


def test_cuts_the_opponent_off():
    """A trail wall down column 10 with one gap at (7,10). A (7,11) facing west and B (7,13)
    share the 4-column east side; A driving through the gap seals B into 60 tiles and takes the
    150-tile west side. Turning north or south keeps A shut in with B."""
    g = load_game("lazerbike")
    s = state_from_setup(g, [(7, 11, "W"), (7, 13, "E")])
    for r in range(15):
        if r != 7:
            s.array[r * 15 + 10] = 2
    for depth in (2, 3):
        value, action, _ = search(g, s.array, 0, depth)
        assert action == F and value > 0.3
    # from B's side the same wall is a loss in territory whatever it does
    value, _, _ = search(g, s.array, 1, 2)
    assert value < -0.3


def test_min_node_enumerates_joint_moves_of_all_others():
    g3 = parse_game_spec("lazerbike:players=3")
    s = g3.new_initial_state()
    # nodes: the lap's MAX node, one MIN node per own action, one child per joint move
    _, _, out = search(g3, s.array, 0, 1, prune=False)
    assert out.nodes == 1 + 3 + 27  # 3 own actions, each against 3 x 3 joint moves
    _, _, pruned = search(g3, s.array, 0, 1)
    assert 1 + 3 + 9 <= pruned.nodes <= 1 + 3 + 27
    s.array[lb.ALIVE + 2] = 0  # a dead bike plays the neutral action only
    _, _, out = search(g3, s.array, 0, 1, prune=False)
    assert out.nodes == 1 + 3 + 9
    g2 = load_game("lazerbike")
    _, _, out = search(g2, g2.new_initial_state().array, 1, 2, prune=False)
    assert out.nodes == 1 + 3 + 9 + 9 * 3 + 9 * 9  # lap 2: 9 MAX nodes, 27 MIN, 81 children


def random_positions(game, count: int, seed: int):
    rng = np.random.default_rng(seed)
    found = 0
    while found < count:
        state = game.new_initial_state(seed=int(rng.integers(1 << 30)), start="random")
        for _ in range(int(rng.integers(0, 25))):
            if state.current_player() != SIMULTANEOUS:
                break
            state.apply_actions([state.random_action(rng, p) for p in range(game.num_players)])
        if state.current_player() == SIMULTANEOUS:
            found += 1
            yield state


@pytest.mark.parametrize(
    "spec", ["lazerbike", "lazerbike:players=3", "lazerbike:players=4,teams=0101"]
)
def test_agrees_with_brute_force(spec):
    g = parse_game_spec(spec)
    for state in random_positions(g, 4, seed=len(spec)):
        for me in range(g.num_players):
            if not state.legal_actions(me):
                continue
            for depth in (1, 2) if g.num_players < 4 else (1,):
                truth = maxmin(g, state, me, depth)
                for prune in (True, False):
                    value, action, _ = search(g, state.array, me, depth, prune=prune)
                    assert value == pytest.approx(truth, abs=1e-12), (spec, me, depth, prune)
                    assert action in state.legal_actions(me)


@pytest.mark.slow
def test_naive_evaluation_sees_only_results_within_the_horizon():
    """`eval=naive` (study 000's Lazerbike opponent) is brute-force max-min with every unfinished
    leaf worth zero: it still dodges the wall it would hit, but the cut-off that wins territory
    two laps on (worth > 0.3 to the heuristic) is worth nothing to it."""
    g = load_game("lazerbike")
    for state in random_positions(g, 4, seed=5):
        for me in range(2):
            for depth in (1, 2):
                truth = maxmin(g, state, me, depth, naive=True)
                value, action, _ = search(g, state.array, me, depth, evaluation="naive")
                assert value == pytest.approx(truth, abs=1e-12) and action in (L, F, R)
    corner = state_from_setup(g, [(0, 0, "N"), (10, 10, "W")])
    assert search(g, corner.array, 0, 2, evaluation="naive")[1] == R
    assert agents.make("simab:depth=2,eval=naive", g, seed=0).step(corner.clone(), 0) == R
    s = state_from_setup(g, [(7, 11, "W"), (7, 13, "E")])
    for r in range(15):
        if r != 7:
            s.array[r * 15 + 10] = 2
    assert search(g, s.array, 0, 2)[0] > 0.3
    assert search(g, s.array, 0, 2, evaluation="naive")[0] == 0.0
    with pytest.raises(AgentError, match="eval='smart'; expected heuristic, naive, onnx:PATH"):
        agents.make("simab:eval=smart", g)


def test_team_mates_are_enumerated_like_opponents_in_a_lap():
    """A lap's MIN node enumerates the team-mate's moves exactly as an opponent's: the same
    joint moves are visited whichever seat is the mate (values differ: returns are shared)."""
    g_team = parse_game_spec("lazerbike:players=3,teams=001")
    g_free = parse_game_spec("lazerbike:players=3")
    s = g_team.new_initial_state(seed=3, start="random")
    t = g_free.new_initial_state(seed=3, start="random")
    _, _, a = search(g_team, s.array, 0, 2, prune=False)
    _, _, b = search(g_free, t.array, 0, 2, prune=False)
    assert a.nodes == b.nodes  # the same joint moves enumerated


def test_beats_guarded_random():
    g = load_game("lazerbike")
    result = play_match(
        g,
        lambda seed: agents.make("simab:depth=2", g, seed=seed),
        lambda seed: agents.make("random:guards=safe", g, seed=seed),
        games=12,
        seed=7,
        start="random",
    )
    assert result.wins >= 9, (result.wins, result.draws, result.losses)


def test_timed_agent_and_errors():
    g = load_game("lazerbike")
    agent = agents.make("simab:ms=30", g, seed=0)
    s = g.new_initial_state()
    assert agent.step(s.clone(), 0) in (L, F, R)
    assert agent.last is not None and agent.last[2] >= 1
    with pytest.raises(AgentError, match="alphabeta"):
        agents.make("simab", load_game("connect4"))
    with pytest.raises(AgentError, match="unknown"):
        agents.make("simab:width=3", g)
    with pytest.raises(AgentError):
        agents.make("simab:depth=x", g)
    check_game(g, 0, start="random")


@pytest.mark.slow
def test_a_learned_evaluation_runs_inside_the_lap_search(tmp_path):
    """`eval=onnx:PATH`: a value-mlp trained on Lazerbike's value-planes is the leaf of the
    simultaneous search, giving brute-force max-min's values with onnxruntime's 2p - 1 at the
    leaves; a file of another kind, or a missing one, is refused with one line."""
    from agents.onnx.runtime import open_session
    from agents.value.features import ValueEncoder
    from features import encode as enc
    from features.store import generate_dataset, load_dataset
    from models import value_mlp

    g = load_game("lazerbike")
    generate_dataset(tmp_path / "data", "lazerbike", "randomized", {"x": 6, "y": 2}, seed=1)
    arrays = enc.value_planes(load_dataset(tmp_path / "data", "positions"), g)
    params = {"layers": 1, "width": 8, "epochs": 1, "holdout": 0.3}
    model = value_mlp.train(arrays, {"encoding": "value-planes", "game": g.spec()}, params,
                            tmp_path / "model").artifact  # fmt: skip
    session, _ = open_session(model)
    encode = ValueEncoder(g, "value-planes").batch

    def network(state, me):
        p = session.run(None, {session.get_inputs()[0].name: encode(state.array[None], [me])})[0]
        return float(np.clip(2 * float(np.ravel(p)[0]) - 1, -1, 1))

    agent = agents.make(f"simab:depth=2,eval=onnx:{model}", g, seed=0)
    values = []
    for state in random_positions(g, 3, seed=5):
        for me in range(2):
            if not state.legal_actions(me):
                continue
            truth = maxmin(g, state, me, 2, leaf=network)
            out = agent.core.search(state.array, me, 2)
            assert out.value == pytest.approx(truth, abs=1e-4)
            values.append(out.value)
    assert len({round(v, 6) for v in values}) > 1  # the network tells the positions apart
    learned = f"simab:depth=1,eval=onnx:{model}"
    result = play_match(g, lambda seed: agents.make(learned, g, seed=seed),
                        lambda seed: agents.make("random", g, seed=seed), games=2, seed=0,
                        start="random")  # fmt: skip
    assert result.wins + result.draws + result.losses == 2
    with pytest.raises(AgentError, match="not found"):
        agents.make(f"simab:eval=onnx:{tmp_path / 'none.onnx'}", g)
    with pytest.raises(AgentError, match="eval="):
        agents.make("simab:eval=magic", g)


def test_space_agent_uses_path_finding():
    g = load_game("lazerbike")
    agent = agents.make("space", g, seed=0)
    assert agent.step(state_from_setup(g, [(0, 0, "N"), (10, 10, "W")]), 0) == R
    s = state_from_setup(g, [(7, 11, "W"), (7, 13, "E")])  # the wall of test_cuts_the_opponent_off
    for r in range(15):
        if r != 7:
            s.array[r * 15 + 10] = 2
    assert agent.step(s.clone(), 0) == F  # through the gap into the 150-tile side
    result = play_match(
        g,
        lambda seed: agents.make("space:dist=20", g, seed=seed),
        lambda seed: agents.make("random:guards=safe", g, seed=seed),
        games=8,
        seed=3,
        start="random",
    )
    assert result.wins >= 6, (result.wins, result.draws, result.losses)
    with pytest.raises(AgentError, match="walk_grid"):
        agents.make("space", load_game("sokoban"))
