"""Territory (study 003): every attack case, production and transport on hand-worked positions,
hand-counted perft, the presets, the scripted red policy, end of game, rendering, and the
search agents playing it unchanged."""

from __future__ import annotations

import re

import pytest

from agents import make
from engine import load_game
from engine.games.territory import (
    HEADER,
    IDS,
    MAX_TROOPS,
    ROUND,
    greedy_action,
    scripted_action,
)
from engine.loops import count_leaves
from engine.match import play_match
from engine.protocol import GameError, IllegalActionError, State

E, SE, SW, W, NW, NE = range(6)


def tile(r: int, c: int, size: int = 6) -> int:
    return r * size + c


def produce(t: int) -> int:
    return t * IDS


def send(t: int, direction: int, troops: int) -> int:
    return t * IDS + 1 + direction * MAX_TROOPS + troops - 1


def position(board: dict[tuple[int, int], int], preset: str = "duel", to_move: int = 0) -> State:
    """A state with the given signed troops (+ blue, - red) and every other tile nature."""
    game = load_game("territory", preset=preset)
    state = game.new_initial_state(seed=0)
    state.array[HEADER:] = 0
    for (r, c), troops in board.items():
        state.array[HEADER + tile(r, c)] = troops
    state.array[0] = to_move
    return state


def troops_at(state: State, r: int, c: int) -> int:
    return int(state.array[HEADER + tile(r, c)])


def test_study_attack_example_more_attackers_conquer_and_abandon_the_origin():
    """Study §2.2: blue attacks (2,3) -> (3,3) with all 19 troops against 5 red defenders."""
    state = position({(2, 3): 19, (3, 3): -5, (0, 0): 1, (5, 5): -1})
    state.apply_action(send(tile(2, 3), SE, 19))
    assert troops_at(state, 2, 3) == 0  # all troops left: the origin is nature
    assert troops_at(state, 3, 3) == 14  # blue holds it with 19 - 5


def test_fewer_attackers_lose_the_difference_and_the_owner_keeps_the_tile():
    state = position({(2, 2): 9, (2, 3): -7, (5, 5): -1})
    state.apply_action(send(tile(2, 2), E, 3))
    assert troops_at(state, 2, 2) == 6
    assert troops_at(state, 2, 3) == -4  # still red, 7 - 3


def test_equal_numbers_leave_both_tiles_to_nature():
    state = position({(2, 2): 8, (3, 2): -5, (0, 0): 1, (5, 5): -1})
    state.apply_action(send(tile(2, 2), SE, 5))
    assert troops_at(state, 3, 2) == 0
    assert troops_at(state, 2, 2) == 0  # the 3 troops left behind go too (study §2.2)


def test_an_empty_tile_is_taken_undefended_by_every_attacker():
    state = position({(1, 1): 6, (5, 5): -1})
    state.apply_action(send(tile(1, 1), NE, 4))
    assert troops_at(state, 0, 2) == 4 and troops_at(state, 1, 1) == 2


def test_tile_hopping_moves_the_whole_stack_and_leaves_nature_behind():
    state = position({(1, 1): 6, (5, 5): -1})
    state.apply_action(send(tile(1, 1), SW, 6))
    assert troops_at(state, 2, 0) == 6 and troops_at(state, 1, 1) == 0


def test_study_transport_example_empties_the_origin():
    """Study §2.3: blue transports from (4,5) to (5,4); (4,5) becomes nature."""
    state = position({(4, 5): 7, (5, 4): 3, (0, 0): -1})
    state.apply_action(send(tile(4, 5), SW, 7))
    assert troops_at(state, 4, 5) == 0 and troops_at(state, 5, 4) == 10


def test_transport_respects_the_twenty_troop_cap_and_attacks_never_target_own_tiles():
    state = position({(2, 2): 10, (2, 3): 15, (5, 5): -1})
    east = [a for a in state.legal_actions() if a // IDS == tile(2, 2) and a % IDS > 0]
    to_east = [a for a in east if (a % IDS - 1) // MAX_TROOPS == E]
    assert to_east == [send(tile(2, 2), E, k) for k in range(1, 6)]  # 15 + 5 = 20
    with pytest.raises(IllegalActionError):
        state.apply_action(send(tile(2, 2), E, 6))
    assert troops_at(state, 2, 2) == 10  # an illegal action leaves the state untouched


def test_production_adds_one_troop_below_twenty_only():
    state = position({(0, 0): 19, (5, 5): -1})
    state.apply_action(produce(0))
    assert troops_at(state, 0, 0) == 20
    state.apply_action(produce(tile(5, 5)))  # red's turn
    assert produce(0) not in state.legal_actions()


def test_a_player_without_tiles_is_out():
    state = position({(0, 0): 4, (0, 1): -3})
    state.apply_action(send(0, E, 4))
    assert state.is_terminal() and state.returns() == [1.0, -1.0]
    tie = position({(0, 0): 4, (0, 1): -3, (5, 5): 2}, to_move=1)
    tie.apply_action(send(tile(0, 1), W, 3))  # red's last tile against 4 blue: red is out
    assert tie.returns() == [1.0, -1.0]


def test_perft_counts_by_hand():
    """Blue (0,0) and red (5,5) hold 1 troop each in the acute corners (two neighbours): 3 moves
    each (produce, hop E, hop SE). Blue's second move: after producing, produce + 2 directions x
    2 counts = 5; after hopping to (0,1), produce + hops to its 4 neighbours on the map = 5;
    after hopping to (1,0), likewise 5. So 3, 3 x 3, 3 x 3 x 5."""
    game = load_game("territory")
    start = game.new_initial_state().array
    assert [count_leaves(game, start, d) for d in (1, 2, 3)] == [3, 9, 45]


def test_duel_round_limit_goes_to_the_player_with_more_tiles():
    game = load_game("territory", rounds=1)
    state = game.new_initial_state()
    state.apply_action(send(0, E, 1))  # blue hops: still one tile each
    state.apply_action(produce(35))  # red produces: 1 tile 2 troops beats 1 tile 1 troop
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]
    assert int(state.array[ROUND]) == 1


def test_study_presets_match_the_reported_starting_counts():
    counts = {}
    presets = (
        "expand-alone",
        "beat-red-easy",
        "beat-red-hard",
        "against-red",
        "duel",
        "duel-vs-red",
    )
    for preset in presets:
        board = load_game("territory", preset=preset).new_initial_state(seed=0).array[HEADER:]
        counts[preset] = (int((board < 0).sum()), int(-board[board < 0].sum()), int(board[0]))
    assert counts["beat-red-easy"] == (6, 40, 1)  # study §6.2
    assert counts["beat-red-hard"] == (19, 222, 1)  # study §6.3
    assert counts["expand-alone"] == (0, 0, 1)
    assert counts["against-red"] == counts["duel"] == counts["duel-vs-red"] == (1, 1, 1)


def test_static_red_never_moves_and_expand_alone_is_won_by_owning_every_tile():
    state = position({(0, 0): 5}, preset="beat-red-easy")
    state.array[HEADER + 35] = -3
    before = state.array[HEADER:].copy()
    state.apply_action(produce(0))
    assert state.current_player() == 0 and int(state.array[ROUND]) == 1
    assert (state.array[HEADER:] - before).tolist() == [1] + [0] * 35
    alone = load_game("territory", preset="expand-alone", size=2).new_initial_state()
    for action in (produce(0), produce(0), produce(0), send(0, E, 2), send(0, SE, 1)):
        alone.apply_action(action)
    assert not alone.is_terminal()  # 3 of 4 tiles
    alone.apply_action(send(1, SE, 1))  # (0,1) -> (1,1), keeping 1 on (0,1): all 4 tiles
    assert alone.is_terminal() and alone.returns() == [1.0, -1.0]


def test_scripted_red_attacks_when_behind_on_tiles_else_produces_when_short():
    state = position({(0, 0): 3, (0, 1): 3, (1, 1): -2}, preset="against-red")
    # blue has 2 tiles, red 1: red attacks (any direction, 1 or 2 troops, not into nature only)
    reply = scripted_action(state.array, 1, 7)
    assert reply % IDS != 0
    short = position({(0, 0): 1, (1, 1): -2, (3, 3): -2}, preset="against-red")
    assert scripted_action(short.array, 1, 7) in (produce(tile(1, 1)), produce(tile(3, 3)))
    # the same position always gets the same answer; the game applies it after blue's move
    assert scripted_action(state.array, 1, 7) == reply
    state.apply_action(produce(0))
    assert state.current_player() == 0 and int(state.array[ROUND]) == 1
    assert (state.array[HEADER:] < 0).sum() >= 1


def test_greedy_red_captures_then_claims_then_produces():
    # an enemy stack it can beat keeping a troop: one troop more than the defenders
    capture = position({(0, 0): 5, (0, 1): -3, (5, 5): -1})
    assert greedy_action(capture.array, 0) == send(tile(0, 0), E, 4)
    # no capture: one troop into nature from the largest stack (first direction on the map)
    claim = position({(0, 0): 5, (3, 3): 3, (5, 5): -1})
    assert greedy_action(claim.array, 0) == send(tile(0, 0), E, 1)
    # a lone troop can neither capture nor claim: it produces
    lone = position({(0, 0): 1, (5, 5): -1})
    assert greedy_action(lone.array, 0) == produce(tile(0, 0))
    # the duel-vs-greedy preset answers blue's move with red's greedy reply
    duel = load_game("territory", preset="duel-vs-greedy").new_initial_state()
    duel.apply_action(produce(0))
    assert duel.current_player() == 0 and duel.array[HEADER + tile(5, 5)] == -2
    with pytest.raises(GameError, match="policy"):
        load_game("territory").heuristic_action(lone, 0, {"policy": "best"})


def test_bad_parameters_are_one_clear_error():
    with pytest.raises(GameError, match="unknown preset"):
        load_game("territory", preset="nope")
    with pytest.raises(GameError, match="size"):
        load_game("territory", size=1)


def test_text_board_draws_hex_rows_shifted_half_a_tile():
    text = str(load_game("territory").new_initial_state())
    lines = text.splitlines()
    assert "round 0/100" in lines[0] and "blue to move" in lines[0]
    rows = lines[3:]
    assert rows[0].index("B 1") + 2 * 5 + 4 * 5 == rows[5].index("R 1")  # 5 rows x 2 + 5 cells
    assert load_game("territory").action_to_string(0, send(0, SE, 3)) == "(0,0)->(1,0) x3"


@pytest.mark.parametrize(("size", "seed"), [(6, 0), (6, 1), (4, 2)])
def test_move_names_read_back_for_every_legal_move_of_seeded_games(size, seed):
    """Property: parse(name(a)) == [a] for each legal move of every position of a seeded random
    game, and a whole history written by format_moves reads back as itself."""
    import numpy as np

    game = load_game("territory", size=size, rounds=40)
    state, rng, checked = game.new_initial_state(seed=seed), np.random.default_rng(seed), 0
    while not state.is_terminal():
        player = state.current_player()
        for action in state.legal_actions():
            assert game.parse_moves(game.action_to_string(player, action)) == [action]
            checked += 1
        state.apply_action(state.random_action(rng))
    assert checked > 500
    history = state.history()
    assert game.parse_moves(game.format_moves(history)) == history
    ids = list(range(game.num_actions))  # off-map ids too: never legal, still named
    assert game.parse_moves(game.format_moves(ids)) == ids


def test_typed_moves_mix_names_and_ids_and_bad_text_is_one_clear_error():
    game = load_game("territory")
    typed = "produce(0,0), (0,0)->(1,0)x2; 7  PRODUCE ( 1 , 2 )"
    assert game.parse_moves(typed) == [produce(0), send(0, SE, 2), 7, produce(tile(1, 2))]
    for bad, why in [
        ("hello", "cannot read 'hello'"),
        ("produce (6,0)", "off the 6x6 map"),
        ("(0,0)->(2,2) x1", "not neighbours"),
        ("(0,0)->(0,1) x21", "sends 21 troops"),
        ("4356", "not below 4356"),
        ("produce (0,0) (0,0)->", "cannot read '(0,0)->'"),
    ]:
        with pytest.raises(GameError, match=re.escape(why)):
            game.parse_moves(bad)


def test_png_render_draws_a_picture(tmp_path):
    from models.territory_render import render_png

    state = load_game("territory", preset="beat-red-hard").new_initial_state()
    path = render_png(state.array, tmp_path / "start.png", "Game overview")
    image = __import__("matplotlib.image", fromlist=["imread"]).imread(path)
    reds = ((image[..., 0] > 0.7) & (image[..., 1] < 0.35) & (image[..., 2] < 0.35)).sum()
    assert image.shape[0] > 200 and reds > 1000  # red's 19 tiles are on it


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", ["mcts:sims=30", "alphabeta:depth=1", "heuristic", "heuristic:policy=greedy"]
)
def test_search_agents_play_it_unchanged_and_beat_random(spec):
    game = load_game("territory", rounds=30)
    result = play_match(
        game, lambda seed: make(spec, game, seed), lambda seed: make("random", game, seed), 4
    )
    assert result.games == 4 and result.score >= 0.5


@pytest.mark.slow
def test_gridbots_show_draws_territory_hexes_and_refuses_bad_presets():
    import subprocess
    import sys
    from pathlib import Path

    def gridbots(*args):
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *args],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            timeout=300,
        )

    done = gridbots("show", "territory:rounds=3", "--seed", "0")
    assert done.returncode == 0, done.stderr
    assert "round 3/3" in done.stdout and "  5             " in done.stdout
    bad = gridbots("show", "territory:preset=nope")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown preset" in bad.stderr
    named = gridbots("show", "territory", "--moves", "produce (0,0); (5,5)->(4,5) x1")
    assert named.returncode == 0, named.stderr
    assert "step 2: red (5,5)->(4,5) x1" in named.stdout, named.stdout
    typo = gridbots("show", "territory", "--moves", "produce (0,0); (5,5)->(4,4) x1")
    assert typo.returncode == 2 and typo.stderr.count("\n") == 1 and "neighbours" in typo.stderr
