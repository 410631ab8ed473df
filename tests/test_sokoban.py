"""Cooperative Sokoban: parsing, hand-worked moves and conflicts, stored level solutions, and the
deadlock test checked for soundness against an independent pure-Python referee."""

from collections import Counter

import numpy as np
import pytest

from engine import SIMULTANEOUS, TERMINAL, load_game
from engine.conformance import check_game
from engine.games.sokoban import levels
from engine.games.sokoban import rules as sk
from engine.protocol import GameError

U, D, L, R, S = range(5)

# one action string per player (u d l r s), all of a level's strings as long as its solution
SOLUTIONS = {
    "first": ("rrrr",),
    "push": ("rrrrrrr",),
    "corner": ("drrrrurdddd",),
    "twoholes": ("lldrrurddrrululddddd",),
    # found with a throwaway breadth-first solver while designing the level; replayed here
    "warehouse": ("luurrurddulllddrrrrrrrrruullulddldrrrruuldullddrrrrrr",),
    "corridors": ("r" * 9 + "dddd", "r" * 9 + "uuuu"),
    "duo": ("rrssrrrrs", "rrrudrrru"),
    "trio": ("rrrrssrrrrrr", "rrrrrudrrrrr", "rrrrrrrudrrr"),
    "quad": ("rrrrrddddl", "dddddllllu", "uuuuurrrrd", "llllluuuur"),
}


def laps(*per_player: str) -> list[int]:
    """Interleaves per-player action strings into a flat history of laps."""
    return ["udlrs".index(ch) for lap in zip(*per_player, strict=True) for ch in lap]


def make(tmp_path, *rows: str, name: str = "t"):
    path = tmp_path / f"{name}.txt"
    path.write_text("\n".join(rows) + "\n")
    return load_game("sokoban", level=str(path))


def player_tiles(state) -> list[tuple[int, int]]:
    w = int(state.array[sk.W_])
    n = state.game.num_players
    return [divmod(int(x), w) for x in state.array[sk.PLAYERS : sk.PLAYERS + n]]


def tiles(state, plane: int) -> set[tuple[int, int]]:
    s = state.array
    w, h = int(s[sk.W_]), int(s[sk.H_])
    return {(r, c) for r in range(h) for c in range(w) if sk.bit(s, plane, r, c)}


# ---- levels and parsing --------------------------------------------------------------------
def test_shipped_levels_and_defaults():
    names = levels.level_names()
    assert len(names) >= 8 and set(SOLUTIONS) == set(names)
    game = load_game("sokoban")
    assert game.params["level"] == "first" and game.num_players == 1
    assert (game.kind, game.simultaneous, game.num_actions, game.neutral_action) == (
        "puzzle",
        True,
        5,
        S,
    )
    corridors = load_game("sokoban", level="corridors")
    assert corridors.num_players == 2 and corridors.teams == (0, 0)
    assert corridors.observation_shape == (6, 12, 13)
    assert corridors.max_game_length == 40
    assert {load_game("sokoban", level=n).num_players for n in names} == {1, 2, 3, 4}


def test_parse_headers_padding_and_default_limit(tmp_path):
    game = make(tmp_path, "# name: tiny", "# author: me", "wwwwww", "wp  ew", "ww")
    assert game.level.name == "tiny" and (game.level.width, game.level.height) == (6, 3)
    assert game.max_game_length == 4 * 4  # four laps per non-wall tile
    state = game.new_initial_state()
    assert str(state).splitlines()[:3] == ["wwwwww", "w1  ew", "wwwwww"]  # short line padded
    assert str(state).splitlines()[3] == "tiny  lap 0/16  playing"
    assert tiles(state, sk.EXIT) == {(1, 4)}
    # players are numbered in reading order; outside the board is a wall
    two = make(tmp_path, "p e", " p e", name="two")
    assert player_tiles(two.new_initial_state()) == [(0, 0), (1, 1)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("wwww\nwp x\nwe w", r"bad\.txt:2:4: unknown tile 'x'"),
        ("# limit: 5\nwpe\n\tw", r"bad\.txt:3:1: unknown tile '\\t'"),
        ("wpppp\nwppeee", r"bad\.txt:2:2: more than 4 players"),
        ("wwww\nw ew", r"bad\.txt: no player"),
        ("wwww\nwp w", r"bad\.txt: 0 exit\(s\) .* for 1 player"),
        ("wpp e", r"bad\.txt: 1 exit\(s\) .* for 2 player"),
        ("# name: nothing\n\n  \n", r"bad\.txt: empty level"),
        ("# limit: ten\nwpew", r"bad\.txt:1:10: limit must be a positive integer"),
        ("# limit: 0\nwpew", r"bad\.txt:1:10: limit must be a positive integer"),
        ("p" + " " * 31 + "e", r"bad\.txt:1:33: more than 32 columns"),
        ("pe\n" + "w\n" * 32, r"bad\.txt:33:1: more than 32 rows"),
        ("wphew", r"bad\.txt: lost from the start"),  # no box can ever fill the hole
        ("wwwwww\nwp  bw\nwwww w\nwwwwew", r"bad\.txt: lost from the start"),  # box in bend
    ],
)
def test_bad_levels(text, message):
    with pytest.raises(GameError, match=message):
        levels.parse_level(text, "bad.txt")


def test_bad_level_names(tmp_path):
    with pytest.raises(GameError, match=r"unknown level 'nope'.*corridors"):
        load_game("sokoban", level="nope")
    with pytest.raises(GameError, match="cannot read level"):
        load_game("sokoban", level=str(tmp_path / "missing.txt"))
    with pytest.raises(GameError, match="unknown parameter"):
        load_game("sokoban", size=3)
    with pytest.raises(GameError, match="unknown scenario"):
        load_game("sokoban").new_initial_state(level="push")


# ---- single-player moves -------------------------------------------------------------------
def test_push_chain_and_walls(tmp_path):
    game = make(tmp_path, "wwwwwww", "wpb b w", "w    ew", "wwwwwww")
    state = game.new_initial_state()
    state.apply_actions([R])  # push the first box one tile
    assert player_tiles(state) == [(1, 2)] and tiles(state, sk.BOX) == {(1, 3), (1, 4)}
    state.apply_actions([R])  # box against box: the chain is blocked, nothing moves
    assert player_tiles(state) == [(1, 2)] and tiles(state, sk.BOX) == {(1, 3), (1, 4)}
    state.apply_actions([U])  # wall
    assert player_tiles(state) == [(1, 2)]
    state.apply_history(laps("drru"))  # from below: the box (1,4) would land in the wall
    assert player_tiles(state) == [(2, 4)] and tiles(state, sk.BOX) == {(1, 3), (1, 4)}
    assert state.array[sk.STEP] == 7 and not state.is_terminal()


def test_box_fills_hole_and_tile_becomes_floor(tmp_path):
    game = make(tmp_path, "wwwwwww", "wpbh ew", "wwwwwww")
    state = game.new_initial_state()
    state.apply_actions([R])
    assert tiles(state, sk.HOLE) == set() and tiles(state, sk.BOX) == set()
    assert str(state).splitlines()[1] == "w 1  ew"
    state.apply_actions([R])
    assert player_tiles(state) == [(1, 3)]  # standing on the filled hole
    state.apply_actions([R])
    state.apply_actions([R])
    assert state.is_terminal() and state.returns() == [1.0]
    assert str(state).endswith("lap 4/20  won")


def test_unfilled_hole_wall_and_board_edge_stop_players(tmp_path):
    state = make(tmp_path, "whp ew").new_initial_state()
    state.apply_actions([L])  # unfilled hole (dead, but off the way: no loss)
    assert player_tiles(state) == [(0, 2)] and state.current_player() == SIMULTANEOUS
    state.apply_actions([U])  # outside the board counts as wall
    assert player_tiles(state) == [(0, 2)]
    edge = make(tmp_path, "p e", name="edge").new_initial_state()
    edge.apply_actions([L])
    assert player_tiles(edge) == [(0, 0)]
    edge.apply_actions([R])
    edge.apply_actions([R])
    assert edge.returns() == [1.0]


def test_box_cannot_be_pushed_onto_a_player(tmp_path):
    game = make(tmp_path, "wwwwwww", "wpbp  w", "w     w", "wee   w", "wwwwwww")
    state = game.new_initial_state()
    state.apply_actions([R, S])
    assert player_tiles(state) == [(1, 1), (1, 3)] and tiles(state, sk.BOX) == {(1, 2)}


# ---- simultaneous laps ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row1", "row2", "joint", "players", "boxes"),
    [
        ("wp p   w", "w      w", [R, L], [(1, 1), (1, 3)], set()),  # same target: both fail
        ("wpp    w", "w      w", [R, L], [(1, 1), (1, 2)], set()),  # swap: both fail
        ("wpp    w", "w      w", [R, R], [(1, 1), (1, 3)], set()),  # no following
        ("wpp    w", "w      w", [D, R], [(2, 1), (1, 3)], set()),  # independent: both move
        ("w p    w", "wpb    w", [D, R], [(1, 2), (2, 1)], {(2, 2)}),  # two pushes of one box
        ("wpb bp w", "w      w", [R, L], [(1, 1), (1, 5)], {(1, 2), (1, 4)}),  # boxes collide
        ("wpbp   w", "w      w", [R, R], [(1, 1), (1, 4)], {(1, 2)}),  # landing held at start
        ("wpb p  w", "w      w", [R, L], [(1, 1), (1, 4)], {(1, 2)}),  # box meets player
        ("wpb p  w", "w      w", [R, D], [(1, 2), (2, 4)], {(1, 3)}),  # no overlap: both move
    ],
)
def test_simultaneous_conflicts(tmp_path, row1, row2, joint, players, boxes):
    game = make(tmp_path, "wwwwwwww", row1, row2, "wee    w", "wwwwwwww")
    state = game.new_initial_state()
    start = player_tiles(state)
    state.apply_actions(joint)
    assert player_tiles(state) == players and tiles(state, sk.BOX) == boxes
    # the rule is symmetric: the mirrored board, with players renumbered, mirrors the outcome
    rows = ["wwwwwwww", row1[::-1], row2[::-1], "w    eew", "wwwwwwww"]
    mirror = make(tmp_path, *rows, name="mirror").new_initial_state()
    order = player_tiles(mirror)
    flip = {L: R, R: L, U: U, D: D}
    mirrored_joint = [S] * len(joint)
    for p, (r, c) in enumerate(start):
        mirrored_joint[order.index((r, 7 - c))] = flip[joint[p]]
    mirror.apply_actions(mirrored_joint)
    assert sorted(player_tiles(mirror)) == sorted((r, 7 - c) for r, c in players)
    assert tiles(mirror, sk.BOX) == {(r, 7 - c) for r, c in boxes}


def test_team_wins_only_when_all_stand_on_exits(tmp_path):
    game = make(tmp_path, "wwwwww", "wp  ew", "wp  ew", "wwwwww")
    state = game.state_from_history(laps("rrr", "rrs"))
    assert player_tiles(state) == [(1, 4), (2, 3)] and not state.is_terminal()
    assert state.returns() == [0.0, 0.0]
    state.apply_actions([S, R])
    assert state.is_terminal() and state.returns() == [1.0, 1.0]
    assert state.legal_actions(0) == [] and state.current_player() == TERMINAL


def test_loss_at_the_lap_limit(tmp_path):
    game = make(tmp_path, "# limit: 3", "wp  ew")
    state = game.state_from_history(laps("sl"))
    assert not state.is_terminal() and state.legal_actions(0) == [0, 1, 2, 3, 4]
    state.apply_actions([R])
    assert state.is_terminal() and state.returns() == [-1.0]
    assert str(state).endswith("lap 3/3  lost: lap limit")
    # reaching the exit on the last lap still wins
    assert game.state_from_history(laps("rrr")).returns() == [1.0]


def test_loss_when_a_cornered_box_blocks_the_only_way(tmp_path):
    game = make(tmp_path, "wwwwww", "wpb  w", "wwww w", "wwww w", "wwwwew")
    state = game.state_from_history(laps("r"))
    assert not state.is_terminal()
    state.apply_actions([R])  # the box reaches the bend: frozen, and the bend is the only way
    assert tiles(state, sk.FROZEN) == {(1, 4)}
    assert state.is_terminal() and state.returns() == [-1.0]
    assert str(state).endswith("lost: deadlock")


def test_a_cornered_box_off_the_way_is_not_a_loss(tmp_path):
    game = make(tmp_path, "wwwwww", "w    w", "wpb  w", "wewwww")
    state = game.state_from_history(laps("rr"))
    assert tiles(state, sk.FROZEN) == {(2, 4)} and not state.is_terminal()
    state.apply_history(laps("lld"))
    assert state.returns() == [1.0]


def test_corridors_careless_push_loses():
    game = load_game("sokoban", level="corridors")
    # the top player walks round its box and pushes it up into the corridor: it can never
    # reach the hole again, and the bottom box cannot cross the bottom hole to fill it
    top, bottom = "r" * 10 + "ddlu", "s" * 14
    state = game.state_from_history(laps(top[:-1], bottom[:-1]))
    assert not state.is_terminal()
    state.apply_actions([U, S])
    assert state.is_terminal() and state.returns() == [-1.0, -1.0]
    assert tiles(state, sk.DEAD) == {(4, 10)}
    # the careful line pushes from above and wins
    assert game.state_from_history(laps(*SOLUTIONS["corridors"])).returns() == [1.0, 1.0]


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_every_shipped_level_is_solved_by_its_solution(name):
    game = load_game("sokoban", level=name)
    history = laps(*SOLUTIONS[name])
    n = game.num_players
    state = game.new_initial_state()
    for i in range(0, len(history), n):
        assert not state.is_terminal(), f"{name}: ended early at lap {i // n}"
        state.apply_actions(history[i : i + n])
    assert state.returns() == [1.0] * n, f"{name}: not won\n{state}"
    assert len(history) // n <= game.max_game_length


# ---- notation, observation, conformance ----------------------------------------------------
def test_notation():
    game = load_game("sokoban", level="corridors")
    assert game.parse_moves("0 1,2 3 4") == [0, 1, 2, 3, 4]
    assert game.parse_moves("up down Left right stay") == [0, 1, 2, 3, 4]
    assert game.parse_moves("udlrs rr") == [0, 1, 2, 3, 4, 3, 3]
    assert game.parse_moves(game.format_moves([4, 0, 3])) == [4, 0, 3]
    assert [game.action_to_string(0, a) for a in range(5)] == [
        "up",
        "down",
        "left",
        "right",
        "stay",
    ]
    with pytest.raises(GameError, match="bad move 'jump'"):
        game.parse_moves("up jump")


def test_observation_planes(tmp_path):
    game = make(tmp_path, "wpbhe", " p  e")
    state = game.new_initial_state()
    obs = state.observation_tensor(1)
    assert obs.shape == (6, 2, 5)
    expected = {
        0: [(0, 0)],  # walls
        1: [(0, 2)],  # boxes
        2: [(0, 3)],  # holes
        3: [(0, 4), (1, 4)],  # exits
        4: [(1, 1)],  # own position (player 2)
        5: [(0, 1)],  # other players
    }
    for k, cells in expected.items():
        assert sorted(zip(*np.nonzero(obs[k]), strict=True)) == cells, f"plane {k}"


@pytest.mark.parametrize("name", ["corner", "warehouse", "corridors", "trio", "quad"])
def test_conformance(name):
    game = load_game("sokoban", level=name)
    for seed in (0, 1):
        check_game(game, seed)


# ---- an independent referee ----------------------------------------------------------------
STEPS = {U: (-1, 0), D: (1, 0), L: (0, -1), R: (0, 1)}


def read_level(text: str):
    """Size, walls (short lines padded), exits, and the start: players, boxes, holes."""
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    width = max(map(len, rows))
    cells = {}
    for r, line in enumerate(rows):
        for c in range(width):
            cells[(r, c)] = line[c] if c < len(line) else "w"

    def pick(ch: str) -> set:
        return {x for x, v in cells.items() if v == ch}

    start = (tuple(sorted(pick("p"))), frozenset(pick("b")), frozenset(pick("h")))
    return (width, len(rows)), pick("w"), pick("e"), start


def referee_lap(size, walls, position, actions):
    """The lap rule as claims: a move fails if any tile it claims is claimed twice."""
    players, boxes, holes = position
    start = set(players)

    def open_tile(x):
        return 0 <= x[0] < size[1] and 0 <= x[1] < size[0] and x not in walls and x not in start

    plans = []
    for (r, c), a in zip(players, actions, strict=True):
        plan = None
        if a != S:
            dr, dc = STEPS[a]
            t, b = (r + dr, c + dc), (r + 2 * dr, c + 2 * dc)
            if open_tile(t) and t not in holes:
                if t not in boxes:
                    plan = (t,)
                elif open_tile(b) and b not in boxes:
                    plan = (t, b)
        plans.append(plan)
    claims = Counter(x for plan in plans if plan for x in plan)
    players, boxes, holes = list(players), set(boxes), set(holes)
    for p, plan in enumerate(plans):
        if plan and all(claims[x] == 1 for x in plan):
            players[p] = plan[0]
            if len(plan) == 2:
                boxes.discard(plan[0])
                (holes.discard if plan[1] in holes else boxes.add)(plan[1])
    return tuple(players), frozenset(boxes), frozenset(holes)


def kernel_array(game, position):
    """The kernel state of a referee position, analysed as the kernels do after a push."""
    players, boxes, holes = position
    s = game.level.config.copy()
    w, h = int(s[sk.W_]), int(s[sk.H_])
    for k, cells in ((sk.BOX, boxes), (sk.HOLE, holes)):
        s[sk.HEADER + k * h : sk.HEADER + (k + 1) * h] = 0
        for r, c in cells:
            s[sk.HEADER + k * h + r] |= 1 << c
    for p, (r, c) in enumerate(players):
        s[sk.PLAYERS + p] = r * w + c
    s[sk.LIMIT] = 10**9
    lost = bool(sk.is_lost(s))
    return s, lost


SMALL_LEVELS = {
    # one box, either hole opens a way: exercises the "fewer than two live boxes" rule
    "one box, two holes": "wwwwwww\nw  p  w\nw  b  w\nw     w\nwwhwhww\nwwewe" + "ww",
    "shipped corner": None,
    "shipped twoholes": None,
}


@pytest.mark.parametrize("name", sorted(SMALL_LEVELS))
def test_kernels_match_referee_and_deadlock_test_is_sound(tmp_path, name):
    """Every reachable position of small 1-player levels: same moves as the referee, and every
    position the deadlock test calls lost has no winning continuation (exhaustive search)."""
    text = SMALL_LEVELS[name]
    if text is None:
        text = (levels.BOARDS / f"{name.split()[1]}.txt").read_text()
    game = make(tmp_path, *text.splitlines())
    size, walls, exits, start = read_level(text)
    graph: dict = {}
    todo = [start]
    while todo:
        position = todo.pop()
        if position in graph:
            continue
        s, _ = kernel_array(game, position)
        graph[position] = []
        for a in range(5):
            nxt = referee_lap(size, walls, position, [a])
            t = s.copy()
            sk.apply_joint(t, np.array([a], dtype=np.int64))
            assert divmod(int(t[sk.PLAYERS]), size[0]) == nxt[0][0], (position, a)
            assert tiles_of(t, sk.BOX) == nxt[1] and tiles_of(t, sk.HOLE) == nxt[2]
            graph[position].append(nxt)
            if not set(nxt[0]) <= exits:
                todo.append(nxt)
    winning = {p for p in graph if set(p[0]) <= exits}
    winning |= {n for succ in graph.values() for n in succ if set(n[0]) <= exits}
    changed = True
    while changed:  # positions with a path to a win
        changed = False
        for position, succ in graph.items():
            if position not in winning and any(n in winning for n in succ):
                winning.add(position)
                changed = True
    assert start in winning
    flagged = [p for p in graph if kernel_array(game, p)[1]]
    assert not [p for p in flagged if p in winning], "deadlock test called a winnable position lost"
    assert flagged, "the deadlock test never fired: this check would be vacuous"


def tiles_of(s, plane):
    w, h = int(s[sk.W_]), int(s[sk.H_])
    return frozenset((r, c) for r in range(h) for c in range(w) if sk.bit(s, plane, r, c))


def test_multiplayer_laps_match_referee():
    """Random joint moves on the shipped multi-player levels, lap by lap against the referee."""
    rng = np.random.default_rng(7)
    for name in ("corridors", "duo", "trio", "quad"):
        game = load_game("sokoban", level=name)
        text = (levels.BOARDS / f"{name}.txt").read_text()
        size, walls, _, position = read_level(text)
        for _ in range(30):
            state = game.new_initial_state()
            position = read_level(text)[3]
            joint = [S] * game.num_players
            while not state.is_terminal():
                # players repeat their last move half the time, so boxes get pushed along
                joint = [a if rng.random() < 0.5 else int(rng.integers(5)) for a in joint]
                state.apply_actions(joint)
                position = referee_lap(size, walls, position, joint)
                assert player_tiles(state) == list(position[0])
                assert tiles(state, sk.BOX) == position[1] and tiles(state, sk.HOLE) == position[2]
