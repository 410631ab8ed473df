"""Lazerbike: the game (parameters, scenarios, notation, the board for people) over its kernels
(`rules`), with its pictures for data, models and path-finding (`pictures`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from engine.games.lazerbike import pictures
from engine.games.lazerbike.rules import (
    ACTION_NAMES,
    ALIVE,
    CELLS,
    CONFIG_SIZE,
    FORWARD,
    HEAD,
    HEADINGS,
    KERNELS,
    LAP,
    LEFT,
    MAX_BIKES,
    NEUTRAL,
    NUM_PLAYERS,
    OVER,
    PLANES,
    POS,
    RET,
    RIGHT,
    SIZE,
    STATUS,
    SYMMETRIC,
    evaluate,
)
from engine.protocol import Game, GameError, KernelSet, State
from engine.registry import register


def _heading(value: Any) -> int:
    if isinstance(value, str) and value.upper() in HEADINGS and len(value) == 1:
        return HEADINGS.index(value.upper())
    if isinstance(value, int | np.integer) and 0 <= int(value) < 4:
        return int(value)
    raise GameError(f"lazerbike: heading must be N/E/S/W or 0-3, got {value!r}")


BIKE_COLOURS = ("#d1242f", "#1f6feb", "#1a7f37", "#d4a72c")  # the page's bikes A-D


@register
class Lazerbike(Game):
    """Light-cycles: simultaneous relative turns; the last team with a living bike wins."""

    name = "lazerbike"
    kind = "war"
    simultaneous = True
    neutral_action = NEUTRAL
    real_time = True
    default_opponent = "simab:ms=100"
    grid_style: ClassVar[dict[str, Any]] = {
        "cell": "square", "background": "#111", "empty": "#1b1f27", "ink": "#fff", "gap": 0,
        "pieces": {
            **{str(p + 1): {"color": f"{c}8c", "name": f"trail {p + 1}"}
               for p, c in enumerate(BIKE_COLOURS)},
            **{"ABCD"[p]: {"color": c, "letter": True, "name": f"bike {'ABCD'[p]}"}
               for p, c in enumerate(BIKE_COLOURS)},
            **{"abcd"[p]: {"color": c, "letter": True, "name": f"crashed {'ABCD'[p]}"}
               for p, c in enumerate(BIKE_COLOURS)},
        },
    }  # fmt: skip
    evaluate = staticmethod(evaluate)  # numba dispatchers bind as methods otherwise
    default_params: ClassVar[dict[str, Any]] = {"players": 2, "teams": ""}
    player_counts = (2, MAX_BIKES)
    # the pictures data, models and path-finding read (engine.games.lazerbike.pictures)
    deadly_tiles = True
    neck_tiles = True
    sequence_length = 112  # the study's window
    walk_grid = staticmethod(pictures.walk_grid)

    def board_codes(self, states: np.ndarray) -> np.ndarray:
        return pictures.board_codes(states)

    def symmetries(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return pictures.symmetries()

    def seeded_start(self, **scenario: Any) -> bool:
        return scenario.get("start") == "random"

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        players = self.params["players"]
        if not isinstance(players, int | np.integer) or not 2 <= int(players) <= MAX_BIKES:
            raise GameError(f"lazerbike: players must be 2, 3 or 4, got {players!r}")
        self.num_players = int(players)
        teams = self.params["teams"]
        if isinstance(teams, int | np.integer):  # "0101" arrives as 101 from a game spec
            teams = str(int(teams)).zfill(self.num_players)
        if teams in ("", None):
            self.teams = tuple(range(self.num_players))
        else:
            if not isinstance(teams, str) or len(teams) != self.num_players or not teams.isdigit():
                raise GameError(
                    f"lazerbike: teams must be {self.num_players} digits (one team per bike, "
                    f"e.g. '0101'), got {teams!r}"
                )
            self.teams = tuple(int(ch) for ch in teams)
            if len(set(self.teams)) < 2:
                raise GameError(f"lazerbike: teams {teams!r} put every bike in one team")
        self.num_actions = 3
        self.observation_shape = (PLANES, SIZE, SIZE)
        self.max_game_length = CELLS

    def initial_config(self, rng: np.random.Generator, **scenario: Any) -> np.ndarray:
        """`start`: "symmetric" (default), "random", or explicit [(row, col, heading), ...]."""
        start = scenario.pop("start", "symmetric")
        if scenario:
            raise GameError(f"lazerbike: unknown scenario option(s) {sorted(scenario)}")
        if isinstance(start, str):
            if start == "symmetric":
                setup = list(SYMMETRIC[: self.num_players])
            elif start == "random":
                setup = self._random_setup(rng)
            else:
                raise GameError(
                    f"lazerbike: start must be 'symmetric', 'random' or a list of "
                    f"(row, col, heading), got {start!r}"
                )
        else:
            setup = self._check_setup(start)
        config = np.zeros(CONFIG_SIZE, dtype=np.int64)
        config[0] = self.num_players
        for p, (r, c, h) in enumerate(setup):
            config[1 + p] = self.teams[p]
            config[1 + MAX_BIKES + p] = r * SIZE + c
            config[1 + 2 * MAX_BIKES + p] = h
        return config

    def _check_setup(self, start: Any) -> list[tuple[int, int, int]]:
        try:
            setup = [(int(r), int(c), _heading(h)) for r, c, h in start]
        except GameError:
            raise
        except (TypeError, ValueError) as error:
            message = f"lazerbike: start must be (row, col, heading) triples: {error}"
            raise GameError(message) from None
        if len(setup) != self.num_players:
            raise GameError(f"lazerbike: start needs {self.num_players} bikes, got {len(setup)}")
        for r, c, _ in setup:
            if not (0 <= r < SIZE and 0 <= c < SIZE):
                raise GameError(f"lazerbike: start tile ({r}, {c}) is off the 15x15 board")
        if len({(r, c) for r, c, _ in setup}) != len(setup):
            raise GameError("lazerbike: two bikes start on the same tile")
        return setup

    def _random_setup(self, rng: np.random.Generator) -> list[tuple[int, int, int]]:
        """Tiles one step off the walls, 3+ apart (Chebyshev); headings with 3+ free tiles ahead."""
        setup: list[tuple[int, int, int]] = []
        while len(setup) < self.num_players:
            r, c = (int(x) for x in rng.integers(1, SIZE - 1, size=2))
            if any(max(abs(r - r2), abs(c - c2)) < 3 for r2, c2, _ in setup):
                continue
            room = (r, SIZE - 1 - c, SIZE - 1 - r, c)  # free steps ahead for N, E, S, W
            headings = [h for h in range(4) if room[h] >= 3]
            setup.append((r, c, headings[int(rng.integers(len(headings)))]))
        return setup

    def grid(self, s: np.ndarray) -> list[str]:
        """Trails by the number of their bike, bikes A-D (a-d once crashed), `.` free."""
        rows = [
            ["." if v == 0 else str(int(v)) for v in s[r * SIZE : (r + 1) * SIZE]]
            for r in range(SIZE)
        ]
        for p in range(int(s[NUM_PLAYERS])):
            r, c = divmod(int(s[POS + p]), SIZE)
            rows[r][c] = "ABCD"[p] if s[ALIVE + p] else "abcd"[p]
        return ["".join(row) for row in rows]

    def render(self, s: np.ndarray) -> str:
        n = int(s[NUM_PLAYERS])
        lines = [" ".join(row) for row in self.grid(s)]
        status = f"lap {int(s[LAP])}  " + " ".join(
            f"{'ABCD'[p]}({r},{c}){heading}" if alive else f"{'abcd'[p]}({r},{c})dead"
            for p, (r, c, heading, alive) in enumerate(bikes(s))
        )
        if len(set(self.teams)) < n:
            status += "  teams " + "".join(str(t) for t in self.teams)
        if s[STATUS] == OVER:
            values = [int(s[RET + p]) for p in range(n)]
            winners = "".join("ABCD"[p] for p in range(n) if values[p] > 0)
            status += f"  over: {winners} win" if winners else "  over: draw"
        lines.append(status)
        return "\n".join(lines)

    def action_to_string(self, player: int, action: int) -> str:
        if action == NEUTRAL:
            return "-"
        return ACTION_NAMES[action] if 0 <= action < 3 else str(action)

    def player_name(self, player: int) -> str:
        return "ABCD"[player] if 0 <= player < MAX_BIKES else super().player_name(player)

    def arrow_action(self, s: np.ndarray, player: int, arrow: str) -> int | None:
        """Arrows name compass headings (up = north); a bike can turn left or right or keep
        going, so the arrow behind it is ignored; no key keeps going."""
        if arrow == "":
            return FORWARD
        wanted = {"up": 0, "right": 1, "down": 2, "left": 3}.get(arrow)
        if wanted is None or not s[ALIVE + player]:
            return None
        turn = (wanted - int(s[HEAD + player])) % 4
        return {0: FORWARD, 1: RIGHT, 3: LEFT}.get(turn)

    def parse_moves(self, text: str) -> list[int]:
        """Integers (neutral -2) or words left/forward/right (or l/f/r, '-'), space/comma split."""
        words = {"left": 0, "l": 0, "forward": 1, "f": 1, "right": 2, "r": 2, "-": NEUTRAL}
        moves = []
        for token in filter(None, text.replace(",", " ").split()):
            if token.lower() in words:
                moves.append(words[token.lower()])
                continue
            try:
                moves.append(int(token))
            except ValueError:
                raise GameError(
                    f"lazerbike: moves are integers or left/forward/right, got {token!r}"
                ) from None
        return moves


def state_from_setup(game: Game, setup: Sequence[tuple[int, int, Any]]) -> State:
    """A position with bikes at explicit (row, col, heading) tiles, heading N/E/S/W or 0-3.

    Same as `game.new_initial_state(start=setup)`, so histories replay with that scenario.
    """
    return game.new_initial_state(start=list(setup))


def bikes(state: State | np.ndarray) -> list[tuple[int, int, str, bool]]:
    """Each bike as (row, col, heading N/E/S/W, alive): what scenario scripts and tests read."""
    s = state.array if isinstance(state, State) else state
    return [
        (*divmod(int(s[POS + p]), SIZE), HEADINGS[int(s[HEAD + p])], bool(s[ALIVE + p]))
        for p in range(int(s[NUM_PLAYERS]))
    ]
