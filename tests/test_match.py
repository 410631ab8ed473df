"""Isolated seats: misbehaving bots (late, illegal, crashing, memory hog, spammer, flooder) are
counted, never trusted, and the game always completes with only legal actions applied."""

import textwrap

import numpy as np
import pytest

from agents import AgentError, make
from agents.isolated.file_agent import check_file, make_agent
from agents.isolated.host import command
from engine import load_game
from engine.isolation import MAX_LINE, BotProcess, IsolatedPlayers
from engine.match import InProcessPlayers, play_match, random_states, run_game

HEADER = "import os, random, sys, threading, time\n\n"


def bot_file(tmp_path, body: str, name: str = "bot.py"):
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def play_isolated(path, game, move_ms=2000.0, memory_mb=2048, seed=0, **scenario):
    """Seat 0 is the isolated file bot, the other seats in-process random agents."""
    bot = BotProcess(command(), f"file:{path}", memory_mb)
    others = InProcessPlayers([make("random", game, seed=p) for p in range(game.num_players)])
    isolated = IsolatedPlayers([bot], move_ms, np.random.default_rng(seed))

    def ask(state, players):
        chosen = isolated.ask(state, [p for p in players if p == 0]) if 0 in players else {}
        chosen.update(others(state, [p for p in players if p != 0]))
        return chosen

    try:
        isolated.begin(game.spec(), seed, scenario, [seed])
        final = run_game(game, ask, seed, seed, **scenario)
        stats = isolated.finish()[0]
        tail = bot.stderr_tail
        partial = bot.partial
    finally:
        isolated.close()
        bot.close()
    # only legal actions were ever applied: the history replays from the same scenario
    replay = game.state_from_history(final.history(), seed, **scenario)
    assert replay.is_terminal() and replay.returns() == final.returns()
    return final, stats, tail, partial


@pytest.fixture(scope="module")
def connect4():
    return load_game("connect4")


@pytest.fixture(scope="module")
def lazerbike():
    return load_game("lazerbike")


def test_well_behaved_bot_plays_its_own_moves(tmp_path, connect4):
    path = bot_file(
        tmp_path,
        """
        class Bot:
            def step(self, state, player):
                print("debug output goes to stderr, not the protocol")
                return state.legal_actions(player)[0]
        """,
    )
    final, stats, tail, _ = play_isolated(path, connect4, opening=2)
    assert stats.moves == len(stats.times) > 0
    assert stats.illegal == stats.late == stats.crashes == 0
    assert b"debug output" in tail and stats.peak_kb > 10_000
    # seat 0 always took the lowest legal column: check it against the replayed positions
    state = connect4.state_from_history(final.history()[:2])
    for action in final.history()[2:]:
        if state.current_player() == 0:
            assert action == state.legal_actions()[0]
        state.apply_action(action)


def test_a_late_bot_is_killed_and_plays_random_for_the_rest_of_the_game(tmp_path, connect4):
    path = bot_file(
        tmp_path,
        """
        class Bot:
            def __init__(self):
                self.calls = 0
            def step(self, state, player):
                self.calls += 1
                if self.calls == 2:
                    time.sleep(0.35)
                return state.legal_actions(player)[0]
        """,
    )
    final, stats, _, _ = play_isolated(path, connect4, move_ms=100)
    # one good move, one 350 ms think: late, killed, random legal moves to the end
    assert (stats.moves, stats.late, stats.crashes, stats.illegal) == (1, 1, 1, 0)
    assert stats.late + stats.moves == len(stats.times) and final.is_terminal()


def test_illegal_actions_are_rejected_and_counted(tmp_path, connect4):
    path = bot_file(
        tmp_path,
        """
        class Bot:
            def step(self, state, player):
                return 99 if random.random() < 2 else 0
        """,
    )
    final, stats, _, _ = play_isolated(path, connect4)
    assert stats.moves == 0 and stats.illegal == len(stats.times) > 0
    assert all(0 <= a < 7 for a in final.history())


def test_crashed_bot_plays_random_moves_for_the_rest_of_the_game(tmp_path, connect4):
    path = bot_file(
        tmp_path,
        """
        class Bot:
            def __init__(self):
                self.calls = 0
            def step(self, state, player):
                self.calls += 1
                if self.calls == 3:
                    raise RuntimeError("bot exploded on purpose")
                return state.legal_actions(player)[0]
        """,
    )
    final, stats, tail, _ = play_isolated(path, connect4)
    assert stats.crashes == 1 and stats.moves == 2 and stats.late == 0
    assert b"bot exploded on purpose" in tail
    assert final.is_terminal() and len(final.history()) >= 7


def test_memory_hog_dies_alone(tmp_path, connect4):
    path = bot_file(
        tmp_path,
        """
        class Bot:
            def step(self, state, player):
                hoard = bytearray(1500 * 1024 * 1024)  # past the 700 MB cap
                return len(hoard) % 7
        """,
    )
    final, stats, tail, _ = play_isolated(path, connect4, memory_mb=700)
    assert stats.crashes == 1 and stats.moves == 0
    assert b"MemoryError" in tail and final.is_terminal()


def test_spammer_every_illegal_line_is_rejected_and_counted(tmp_path, lazerbike):
    path = bot_file(
        tmp_path,
        """
        class Bot:
            def step(self, state, player):
                os.write(1, b"99\\n" * 1000)  # straight into the protocol pipe
                return state.legal_actions(player)[0]
        """,
    )
    final, stats, _, _ = play_isolated(path, lazerbike, start="random")
    # per request 1001 lines: 1000 spam lines and the real answer. The first line after a
    # request is its answer; a spam line is rejected, and every line nobody asked for is
    # rejected too (only a real answer from the previous burst can be taken, as a legal move).
    asks = len(stats.times)
    assert asks > 0 and stats.late == 0 and stats.crashes == 0
    assert stats.illegal + stats.moves == 1001 * asks and stats.moves < asks
    assert all(a in (0, 1, 2, lazerbike.neutral_action) for a in final.history())


def test_flooder_output_is_discarded_with_bounded_memory(tmp_path, lazerbike):
    path = bot_file(
        tmp_path,
        """
        def flood():
            while True:
                os.write(1, b"x" * 65536)

        class Bot:
            def __init__(self):
                threading.Thread(target=flood, daemon=True).start()
            def step(self, state, player):
                return state.legal_actions(player)[0]
        """,
    )
    final, stats, _, partial = play_isolated(path, lazerbike, move_ms=50, start="random")
    assert stats.discarded_bytes > 1_000_000 and len(partial) <= MAX_LINE
    assert stats.moves + stats.illegal + stats.late == len(stats.times)
    assert final.is_terminal()


def test_file_specs_are_checked_without_running_them(tmp_path, connect4):
    good = bot_file(
        tmp_path,
        "class Helper:\n    pass\n\nclass Mine:\n    def step(self, s, p):\n        return 0\n",
    )
    assert check_file(f"file:{good}")[1] == "Mine"
    assert check_file(f"file:{good}:Helper")[1] == "Helper"
    broken = bot_file(tmp_path, "def oops(:\n", name="broken.py")
    with pytest.raises(AgentError, match="syntax error"):
        check_file(f"file:{broken}")
    with pytest.raises(AgentError, match="no class 'Nope'"):
        check_file(f"file:{good}:Nope")
    with pytest.raises(AgentError, match="cannot read"):
        check_file(f"file:{tmp_path}/missing.py")
    with pytest.raises(AgentError, match="only in isolated mode"):
        make_agent(f"file:{good}", connect4)
    with pytest.raises(AgentError, match="only in isolated mode"):
        make(f"file:path={good}", connect4)


def test_in_process_match_still_counts_from_the_first_agent(connect4):
    result = play_match(
        connect4,
        lambda seed: make("mcts:sims=100", connect4, seed=seed),
        lambda seed: make("random", connect4, seed=seed),
        games=4,
    )
    assert result.games == 4 and result.wins >= 3 and len(result.histories) == 4


def test_isolated_pairing_reuses_processes_and_respawns_after_a_crash(tmp_path, connect4):
    from engine.tournament import MatchConfig, play_pairing

    path = bot_file(
        tmp_path,
        """
        class Bot:
            def __init__(self):
                self.calls = 0
            def step(self, state, player):
                self.calls += 1
                if self.calls == 2:
                    os._exit(3)
                return state.legal_actions(player)[-1]
        """,
    )
    config = MatchConfig(games=2, isolated=True, move_ms=2000, opening=0)
    rows = play_pairing(connect4, f"file:{path}", "random", config, host=command())
    # a fresh process each game after the crash: one good move, then random moves to the end
    assert [(row["a_crashes"], row["a_moves"]) for row in rows] == [(1, 1), (1, 1)]
    assert [row["b_crashes"] for row in rows] == [0, 0] and rows[0]["b_peak_kb"] > 10_000
    assert rows[0]["history"][0] == "7" and rows[1]["history"][1] == "7"


@pytest.mark.parametrize("name", ["pig", "lazerbike", "connect4"])
def test_random_states_walk_seeded_games_through_chance_and_joint_moves(name):
    """The probe positions of the network checks: never terminal, chance nodes included (pig),
    joint moves played (Lazerbike), several games in a row, the same for the same seed."""
    from itertools import islice

    from engine.protocol import CHANCE

    game = load_game(name)
    walk = [(s.array.copy(), s.current_player(), s.is_terminal())
            for s in islice(random_states(game, 5), 300)]  # fmt: skip
    assert not any(terminal for _, _, terminal in walk)
    starts = sum(np.array_equal(a, game.new_initial_state(seed=0).array) for a, _, _ in walk)
    assert starts >= 2 or name == "pig"  # one game of pig can outlast 300 states
    assert (CHANCE in {p for _, p, _ in walk}) == (name == "pig")
    again = [s.array.copy() for s in islice(random_states(game, 5), 300)]
    assert all(np.array_equal(a, b) for (a, _, _), b in zip(walk, again, strict=True))
