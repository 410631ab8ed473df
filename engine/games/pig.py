"""Pig: a two-player dice game with chance nodes and multi-action turns.

On a turn the player to move rolls (action 0) as often as they like, adding the die to a turn
total, or holds (action 1, the END_TURN action) to bank that total. After a roll the die is a
chance node (outcomes 0..5 are faces 1..6, each 1/6); a 1 loses the turn total and passes the
turn. Only banked points count: the first player whose banked score reaches `target` wins.

Random play can roll forever, so every game is capped at `max_steps` steps (decisions and chance
outcomes alike); at the cap the higher banked score wins, equal scores draw.

State array:
  s[0], s[1] banked scores   s[2] turn total   s[3] player to move   s[4] 1 while a die is rolling
  s[5] steps played   s[6] status: -1 ongoing, 0/1 winner, 2 draw   s[7] target   s[8] step cap
  s[9] last die face (0 before the first roll)
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from engine.protocol import CHANCE, TERMINAL, Game, GameError, KernelSet
from engine.registry import register

ROLL, HOLD = 0, 1
FACES = 6
ONGOING, DRAW = -1, 2
SCORE0, SCORE1, TURN_TOTAL, TO_MOVE, ROLLING, STEPS, STATUS, TARGET, CAP, LAST_DIE = range(10)
STATE_SIZE = 10
NEUTRAL = -1
DEFAULT_CAP = 1000


@njit(cache=True)
def init(config):
    """config = [target, step cap]."""
    s = np.zeros(STATE_SIZE, dtype=np.int64)
    s[STATUS] = ONGOING
    s[TARGET] = config[0]
    s[CAP] = config[1]
    return s


@njit(cache=True)
def current_player(s):
    if s[STATUS] != ONGOING:
        return TERMINAL
    if s[ROLLING]:
        return CHANCE
    return s[TO_MOVE]


@njit(cache=True)
def legal_actions(s, player, out):
    if s[STATUS] != ONGOING:
        return 0
    if s[ROLLING]:
        if player != CHANCE:
            return 0
        for face in range(FACES):
            out[face] = face
        return FACES
    if player != s[TO_MOVE]:
        return 0
    out[0] = ROLL
    out[1] = HOLD
    return 2


@njit(cache=True)
def chance_probability(s, action):
    if s[ROLLING] and 0 <= action < FACES:
        return 1.0 / FACES
    return 0.0


@njit(cache=True, inline="always")
def pass_turn(s):
    s[TURN_TOTAL] = 0
    s[TO_MOVE] = 1 - s[TO_MOVE]


@njit(cache=True)
def apply_action(s, action):
    mover = s[TO_MOVE]
    if s[ROLLING]:
        s[ROLLING] = 0
        face = action + 1
        s[LAST_DIE] = face
        if face == 1:
            pass_turn(s)
        else:
            s[TURN_TOTAL] += face
    elif action == ROLL:
        s[ROLLING] = 1
    else:
        s[SCORE0 + mover] += s[TURN_TOTAL]
        pass_turn(s)
        if s[SCORE0 + mover] >= s[TARGET]:
            s[STATUS] = mover
    s[STEPS] += 1
    if s[STATUS] == ONGOING and s[STEPS] >= s[CAP]:
        s[ROLLING] = 0
        if s[SCORE0] > s[SCORE1]:
            s[STATUS] = 0
        elif s[SCORE1] > s[SCORE0]:
            s[STATUS] = 1
        else:
            s[STATUS] = DRAW


@njit(cache=True)
def apply_joint(s, joint):
    apply_action(s, joint[0])


@njit(cache=True)
def returns(s, out):
    out[0] = 0.0
    out[1] = 0.0
    if s[STATUS] == 0 or s[STATUS] == 1:
        out[s[STATUS]] = 1.0
        out[1 - s[STATUS]] = -1.0


@njit(cache=True)
def observation(s, player, out):
    """[own score, opponent score, turn total] / target, then 1.0 if it is `player`'s turn."""
    target = np.float32(s[TARGET])
    out[0] = np.float32(s[SCORE0 + player]) / target
    out[1] = np.float32(s[SCORE0 + 1 - player]) / target
    out[2] = np.float32(s[TURN_TOTAL]) / target
    out[3] = 1.0 if s[TO_MOVE] == player else 0.0


KERNELS = KernelSet.collect(globals())


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise GameError(f"pig: {name} must be a positive integer, got {value!r}")
    return int(value)


@register
class Pig(Game):
    """Roll to grow your turn total, hold to bank it; a 1 loses the turn. First to `target`."""

    name = "pig"
    kind = "duel"
    has_chance = True
    end_turn_action = HOLD
    neutral_action = NEUTRAL
    default_opponent = "heuristic:hold=20"
    default_params: ClassVar[dict[str, Any]] = {"target": 50, "max_steps": DEFAULT_CAP}

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        self.target = _positive_int("target", self.params["target"])
        self.max_steps = _positive_int("max_steps", self.params["max_steps"])
        self.num_players = 2
        self.teams = (0, 1)
        self.num_actions = FACES  # chance outcomes share the id space; players use 0 and 1
        self.observation_shape = (4,)
        self.max_game_length = self.max_steps

    def initial_config(self, rng: np.random.Generator, **scenario: Any) -> np.ndarray:
        if scenario:
            raise GameError(f"pig: unknown scenario option(s) {sorted(scenario)}")
        return np.array([self.target, self.max_steps], dtype=np.int64)

    def render(self, s: np.ndarray) -> str:
        status, to_move = int(s[STATUS]), int(s[TO_MOVE])
        rows = [f"pig to {int(s[TARGET])}   step {int(s[STEPS])}/{int(s[CAP])}"]
        for p in range(2):
            marker = "  <" if status == ONGOING and p == to_move else ""
            rows.append(f"  P{p}: {int(s[SCORE0 + p]):4d}{marker}")
        die = int(s[LAST_DIE])
        rows.append(f"turn total {int(s[TURN_TOTAL])}, last die {die if die else '-'}")
        if status == ONGOING:
            action = "rolling..." if s[ROLLING] else "roll or hold"
            rows.append(f"P{to_move}: {action}")
        else:
            rows.append("draw" if status == DRAW else f"P{status} wins")
        return "\n".join(rows)

    def heuristic_action(self, state, player: int, options: dict[str, str]) -> int:
        """The classic "hold at N" strategy: roll until the turn total reaches `hold` (default
        20) or would win the game, then hold."""
        unknown = set(options) - {"hold"}
        if unknown:
            raise GameError(f"pig heuristic: unknown option(s) {sorted(unknown)}")
        try:
            hold = int(options.get("hold", 20))
        except ValueError:
            raise GameError(
                f"pig heuristic: hold must be an integer, got {options['hold']!r}"
            ) from None
        s = state.array
        turn_total, banked = int(s[TURN_TOTAL]), int(s[SCORE0 + player])
        if turn_total >= hold or banked + turn_total >= int(s[TARGET]):
            return HOLD
        return ROLL

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            return str(action + 1)
        return {ROLL: "roll", HOLD: "hold"}.get(action, str(action))

    def parse_moves(self, text: str) -> list[int]:
        """Integers (action ids, die outcomes 0-5 included) or the words roll and hold."""
        words = {"roll": ROLL, "hold": HOLD}
        actions: list[int] = []
        for token in text.replace(",", " ").split():
            word = token.lower()
            if word in words:
                actions.append(words[word])
            elif word.lstrip("-").isdigit():
                actions.append(int(word))
            else:
                raise GameError(f"pig: moves are roll, hold or action ids, got {token!r}")
        return actions

    def player_name(self, player: int) -> str:
        return f"P{player}"  # as the board shows them
