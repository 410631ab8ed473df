"""The game protocol: OpenSpiel-style Game metadata and a thin State over a numba kernel set.

Every game keeps its whole position in one flat int64 array and exposes pure-ish numba kernels
over it (see `KernelSet`). `State` is the only Python object per position; search and data
generation never create one per node, they call the kernels directly.

A refused move is explained here too, in the game's own notation (`describe_illegal`, at the
end): the words IllegalActionError carries and match and tournament logs and the terminal use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from engine.values import coerce_text, is_int

CHANCE = -1
SIMULTANEOUS = -2
TERMINAL = -4

KINDS = ("duel", "war", "puzzle")


class IllegalActionError(ValueError):
    """An action the current position does not allow; the state is left untouched.

    Given the position (`state`), the message speaks the game's notation and says why, through
    the game's own hooks (see `Game.illegal_reason`): `illegal move 4 for X after "444444":
    column 4 is full; legal: 1 2 3 5 6 7`. Without it, it names action ids.
    """

    def __init__(
        self,
        action: Any,
        legal: Sequence[int],
        player: int | None = None,
        state: State | None = None,
    ):
        if state is None:
            who = "" if player is None else f" for player {player}"
            message = f"illegal action {action}{who}; legal: {list(legal)}"
        else:
            message = describe_illegal(state, action, player, legal)
        super().__init__(message)
        self.action = action
        self.legal = list(legal)
        self.player = player


class GameError(ValueError):
    """Bad game parameters or scenario (unknown option, unreadable level, ...)."""


class Portfolio(NamedTuple):
    """A game's scripted partial-turn policies (study 004's portfolio), all numba functions.

    action(s, k, actions, scratch, follow) -> script k's next action for the player to move
        (`actions`, `follow`: int64[num_actions] buffers, `scratch` shaped like s)
    moves(s, player, out) -> count: the turn-level moves of a node (script ids)
    play(s, k): script k plays the rest of the mover's turn, in place
    playout(s, q) -> the result for player q of a scripted playout to the end
    """

    names: tuple[str, ...]
    action: Callable
    moves: Callable
    play: Callable
    playout: Callable


@dataclass(frozen=True)
class KernelSet:
    """The numba functions every game provides over its flat int64 state array `s`.

    init(config int64[:]) -> int64[:]          a fresh state from a scenario config vector
    current_player(s) -> int                   >= 0, CHANCE, SIMULTANEOUS or TERMINAL
    legal_actions(s, player, out) -> int       writes legal action ids into `out`, returns count;
                                               with player=CHANCE the chance outcomes; 0 for a
                                               player that cannot act (a dead bike)
    chance_probability(s, action) -> float     probability of a chance outcome
    apply_action(s, action) -> None            turn-based or chance move, in place
    apply_joint(s, joint int64[:]) -> None     simultaneous move of every player, in place
    returns(s, out float64[:]) -> None         one value per player
    observation(s, player, out float32[:])     flat observation tensor
    """

    init: Callable
    current_player: Callable
    legal_actions: Callable
    chance_probability: Callable
    apply_action: Callable
    apply_joint: Callable
    returns: Callable
    observation: Callable

    @classmethod
    def collect(cls, namespace: dict) -> KernelSet:
        """The kernel set of a game module: `KernelSet.collect(globals())` picks the functions
        named after the fields."""
        return cls(**{name: namespace[name] for name in cls.__dataclass_fields__})

    def search(self) -> tuple:
        """The kernels generic loops take, in their argument order (see engine.loops)."""
        return (self.current_player, self.legal_actions, self.chance_probability,
                self.apply_action, self.apply_joint, self.returns)  # fmt: skip


class Game:
    """Metadata plus the bridge from scenarios to kernel states; one subclass per game."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "duel"
    simultaneous: ClassVar[bool] = False
    has_chance: ClassVar[bool] = False
    #: chance outcomes numbered after the players' actions (`num_actions + k`, k < chance_ids),
    #: so a policy over `num_actions` never sees them; 0: they share the players' ids (pig's dice)
    chance_ids: ClassVar[int] = 0
    #: action id that ends a multi-action turn, or None when every turn is one action
    end_turn_action: ClassVar[int | None] = None
    #: action recorded for a player that cannot act (padding in sequences)
    neutral_action: ClassVar[int] = -1
    # ---- optional hooks (a game provides those that make sense for it) --------------------
    #: numba heuristic `evaluate(s, player) -> float` in [-1, 1] for search agents
    evaluate: ClassVar[Callable | None] = None
    #: `board_codes(states [n, state_size]) -> int8 [n, H, W]`: 0 empty, p + 1 player p's piece,
    #: -1 deadly (features.encode); None when the game has no board picture
    board_codes: ClassVar[Callable | None] = None
    #: default window (steps) for sequence encodings; None: the longest game
    sequence_length: ClassVar[int | None] = None
    #: whether board codes use -1 for deadly tiles (Lazerbike trails)
    deadly_tiles: ClassVar[bool] = False
    #: whether board codes mark the tile each moving piece just left as -(p + 2) (deadly like
    #: -1): one picture then shows every heading, which a move relative to it needs (Lazerbike)
    neck_tiles: ClassVar[bool] = False
    #: `symmetries() -> [(observation_permutation, action_permutation), ...]`, identity first
    symmetries: ClassVar[Callable | None] = None
    #: `heuristic_action(state, player, options) -> action`: the game's hand-written policy
    heuristic_action: ClassVar[Callable | None] = None
    #: scripted partial-turn policies for hierarchical portfolio search (`hps`, see Portfolio)
    portfolio: ClassVar[Portfolio | None] = None
    #: `layout(s) -> {name: array}`: the grid description planners read (Sokoban)
    layout: ClassVar[Callable | None] = None
    #: `walk_grid(s, player) -> (costs, width, height, start)`: path-finding grid (Lazerbike)
    walk_grid: ClassVar[Callable | None] = None
    #: numba `position_key(s) -> int64`: hash of the position without its clock (repetition
    #: tests such as the study-003 stale-game rule); None when the game never needs one
    position_key: ClassVar[Callable | None] = None
    #: numba `sparring_action(s, player) -> action` (-1: cannot move): a fixed scripted player
    #: training loops seat in either chair (territory's greedy spreader, NEAT's coevolution)
    sparring_action: ClassVar[Callable | None] = None
    #: `tile_moves() -> dict`: the layout of "production per tile, tile -> neighbour x count"
    #: action spaces (territory) that tile-move policies (agents.neat.codec) decode into
    tile_moves: ClassVar[Callable | None] = None
    #: `(ids_per_cell, extra)` when action ids lie on the observation's H x W cells: action
    #: `(row * W + col) * ids_per_cell + id`, then `extra` actions after the cells (Othello
    #: (1, 1): 64 squares and the pass; tactics (30, 0)); policy networks then use a per-cell
    #: head. None: a flat action list (Connect 4's columns)
    action_cells: ClassVar[tuple[int, int] | None] = None
    #: `exact_solver()` makes the game's own exact solver (Connect 4's), whose
    #: `best(s, ms) -> (action, result, plies) | None` is an optimal move of ongoing position `s`
    #: for the player to move, its result (1 won, 0 drawn, -1 lost) and the plies to the end with
    #: best play (0 for a draw), or None when `ms` milliseconds were not enough; search agents'
    #: `exact=` use it before their own complete alpha-beta (agents.search.core.Prover)
    exact_solver: ClassVar[Callable[[], Any] | None] = None
    #: the same game in OpenSpiel (same action ids and rules), for the `openspiel:` peer agents
    openspiel_name: ClassVar[str | None] = None
    #: parameters accepted by the constructor, with defaults (OpenSpiel's game parameters)
    default_params: ClassVar[dict[str, Any]] = {}
    #: the fewest and most players any parameters give (OpenSpiel's min/max_num_players)
    player_counts: ClassVar[tuple[int, int]] = (2, 2)

    def variants(self) -> list[str]:
        """Game specs of the variants the game ships (a puzzle's levels): what "every shipped
        level" means to an evaluation or a training across levels; [] when it ships none."""
        return []

    def seeded_start(self, **scenario: Any) -> bool:
        """Whether `new_initial_state`'s seed changes the game (a random line-up, a scripted
        opponent's dice): OpenSpiel then sees a chance node before the first move
        (engine.openspiel_games). False where the seed is drawn but never read."""
        return False

    def __init__(self, **params: Any):
        unknown = set(params) - set(self.default_params)
        if unknown:
            raise GameError(
                f"{self.name}: unknown parameter(s) {sorted(unknown)}; "
                f"known: {sorted(self.default_params) or 'none'}"
            )
        self.params = {**self.default_params}
        for key, value in params.items():
            try:
                self.params[key] = coerce_text(value, self.default_params[key])
            except ValueError as kind:
                message = f"{self.name}: parameter {key}={value!r} must be {kind}"
                raise GameError(message) from None
        self.num_players: int = 2
        self.teams: tuple[int, ...] = (0, 1)
        self.num_actions: int = 0
        self.observation_shape: tuple[int, ...] = ()
        self.max_game_length: int = 0
        self.kernels: KernelSet = self._kernels()
        self._configure()

    # ---- what a game module fills in -------------------------------------------------------
    def _kernels(self) -> KernelSet:
        raise NotImplementedError

    def _configure(self) -> None:
        """Set num_players, teams, num_actions, observation_shape, max_game_length."""
        raise NotImplementedError

    def initial_config(self, rng: np.random.Generator, **scenario: Any) -> np.ndarray:
        """The int64 config vector `init` turns into a state (scenario options live here)."""
        if scenario:
            raise GameError(f"{self.name}: unknown scenario option(s) {sorted(scenario)}")
        return np.zeros(1, dtype=np.int64)

    def render(self, s: np.ndarray) -> str:
        raise NotImplementedError

    def action_to_string(self, player: int, action: int) -> str:
        return str(action)

    def ends_turn(self, action: int) -> bool:
        """Whether `action` ends a multi-action turn (tactics: End Turn on any cell)."""
        return self.end_turn_action is not None and action == self.end_turn_action

    # ---- notation --------------------------------------------------------------------------
    def parse_moves(self, text: str) -> list[int]:
        """A history as text: integers separated by spaces or commas (Connect 4 overrides)."""
        text = text.strip()
        if not text:
            return []
        tokens = [t for t in re.split(r"[\s,]+", text) if t]
        try:
            return [int(t) for t in tokens]
        except ValueError:
            raise GameError(f"{self.name}: moves must be integers, got {text!r}") from None

    def format_moves(self, actions: Iterable[int]) -> str:
        return " ".join(str(a) for a in actions)

    # ---- words for people: the terminal, error messages, hints (issue 17) --------------------
    #: the agent `gridbots play` pits a person against when no bot is in production
    default_opponent: ClassVar[str] = "mcts:ms=1000"
    #: played against the clock (`gridbots play` with the arrow keys) rather than turn by turn
    real_time: ClassVar[bool] = False

    def player_name(self, player: int) -> str:
        """How the board and messages name a player (Connect 4: X and O)."""
        return f"P{player + 1}"

    def illegal_reason(self, s: np.ndarray, action: int, player: int) -> str | None:
        """Why `action` is illegal for `player` in state array `s`, in the game's words
        (Connect 4: "column 4 is full"); None leaves the generic explanation."""
        return None

    # pictures (the web page): `grid` rows of one character per cell, top row first (`.` empty;
    # None: no board), `grid_labels` short text per cell (troops, health), `grid_style` how to
    # draw them ({"cell": round|square|hex (rows shifted half a cell), "background", "empty",
    # "ink", "gap", "pieces": {char: {"color", "disc", "letter", "name"}}}), `move_cells` the
    # cells a click picks an action from (a page asks when one click picks several: tactics'
    # cards on a cell), `move_target` a second cell that narrows them (territory's target tile)
    grid_style: ClassVar[dict[str, Any] | None] = None

    def grid(self, s: np.ndarray) -> list[str] | None:
        return None

    def grid_labels(self, s: np.ndarray) -> list[list[str]] | None:
        return None

    def move_cells(self, action: int) -> tuple[tuple[int, int], ...]:
        return ()

    def move_target(self, action: int) -> tuple[int, int] | None:
        return None

    def arrow_action(self, s: np.ndarray, player: int, arrow: str) -> int | None:
        """The action an arrow key (`up`, `down`, `left`, `right`) asks for in a real-time
        game, or for `""` (no key this lap) the game's default; None ignores the key."""
        return None

    # ---- the public protocol ---------------------------------------------------------------
    def new_initial_state(self, seed: int | None = None, **scenario: Any) -> State:
        """A fresh position; `opening=k` plays k seeded random moves first (turn-based games)."""
        opening = int(scenario.pop("opening", 0))
        rng = np.random.default_rng(seed)
        config = self.initial_config(rng, **scenario)
        state = State(self, self.kernels.init(config), config)
        if opening:
            state.play_random_opening(opening, rng)
        return state

    def state_from_history(
        self, actions: Sequence[int], seed: int | None = None, **scenario: Any
    ) -> State:
        """Replays a flat history; a simultaneous lap is `num_players` consecutive entries.

        The history already holds any random opening, so `opening` is not replayed twice.
        """
        scenario.pop("opening", None)
        state = self.new_initial_state(seed, **scenario)
        state.apply_history(actions)
        return state

    def new_state_array(self, seed: int | None = None, **scenario: Any) -> np.ndarray:
        return self.new_initial_state(seed, **scenario).array

    def spec(self) -> str:
        """The game spec string that rebuilds this game (`lazerbike:players=4,teams=0101`)."""
        changed = {k: v for k, v in self.params.items() if v != self.default_params.get(k)}
        options = ",".join(f"{k}={v}" for k, v in changed.items())
        return f"{self.name}:{options}" if options else self.name

    def metadata(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_players": self.num_players,
            "kind": self.kind,
            "teams": list(self.teams),
            "simultaneous": self.simultaneous,
            "has_chance": self.has_chance,
            "chance_ids": self.chance_ids,
            "num_actions": self.num_actions,
            "observation_shape": list(self.observation_shape),
            "max_game_length": self.max_game_length,
            "neutral_action": self.neutral_action,
            "end_turn_action": self.end_turn_action,
            "params": self.params,
        }

    def __repr__(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.name}({params})"


class State:
    """One position: a flat kernel array, its history and the game it belongs to."""

    __slots__ = ("_history", "array", "config", "game")

    def __init__(self, game: Game, array: np.ndarray, config: np.ndarray):
        self.game = game
        self.array = array
        self.config = config
        self._history: list[int] = []

    # ---- queries ---------------------------------------------------------------------------
    def current_player(self) -> int:
        return int(self.game.kernels.current_player(self.array))

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def is_chance_node(self) -> bool:
        return self.current_player() == CHANCE

    def is_simultaneous_node(self) -> bool:
        return self.current_player() == SIMULTANEOUS

    def legal_actions(self, player: int | None = None) -> list[int]:
        """Legal actions of `player` (default: the player to move, or chance outcomes)."""
        current = self.current_player()
        if current == TERMINAL:
            return []
        if player is None:
            if current == SIMULTANEOUS:
                raise ValueError("simultaneous node: name the player")
            player = current
        elif current != SIMULTANEOUS and player != current:
            return []
        buffer = np.empty(max(self.game.num_actions, 64), dtype=np.int64)
        count = self.game.kernels.legal_actions(self.array, player, buffer)
        return [int(a) for a in buffer[:count]]

    def legal_actions_mask(self, player: int | None = None) -> np.ndarray:
        mask = np.zeros(self.game.num_actions, dtype=np.int8)
        mask[self.legal_actions(player)] = 1
        return mask

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if not self.is_chance_node():
            return []
        return [
            (a, float(self.game.kernels.chance_probability(self.array, a)))
            for a in self.legal_actions(CHANCE)
        ]

    def returns(self) -> list[float]:
        out = np.zeros(self.game.num_players, dtype=np.float64)
        self.game.kernels.returns(self.array, out)
        return [float(x) for x in out]

    def history(self) -> list[int]:
        return list(self._history)

    def observation_tensor(self, player: int | None = None) -> np.ndarray:
        if player is None:
            player = max(self.current_player(), 0)
        out = np.zeros(int(np.prod(self.game.observation_shape)), dtype=np.float32)
        self.game.kernels.observation(self.array, player, out)
        return out.reshape(self.game.observation_shape)

    def action_to_string(self, action: int, player: int | None = None) -> str:
        if player is None:
            player = self.current_player()
        return self.game.action_to_string(player, action)

    def clone(self) -> State:
        twin = State(self.game, self.array.copy(), self.config)
        twin._history = list(self._history)
        return twin

    def __str__(self) -> str:
        return self.game.render(self.array)

    # ---- moves -----------------------------------------------------------------------------
    def apply_action(self, action: int) -> None:
        """Plays one turn-based or chance action; raises IllegalActionError, leaving the state."""
        current = self.current_player()
        if current == SIMULTANEOUS:
            raise IllegalActionError(action, [], None, state=self) from ValueError(
                "simultaneous node: use apply_actions"
            )
        if current == TERMINAL:
            raise IllegalActionError(action, [], None, state=self)
        legal = self.legal_actions()
        if not is_int(action) or int(action) not in legal:
            raise IllegalActionError(action, legal, current, state=self)
        self.game.kernels.apply_action(self.array, int(action))
        self._history.append(int(action))

    def apply_actions(self, actions: Sequence[int]) -> None:
        """Plays one simultaneous lap: one action per player (neutral for those who cannot act)."""
        if self.current_player() != SIMULTANEOUS:
            if len(actions) == 1:
                return self.apply_action(actions[0])
            raise IllegalActionError(list(actions), [], None, state=self)
        n = self.game.num_players
        if len(actions) != n:
            raise IllegalActionError(list(actions), [], None, state=self) from ValueError(
                f"expected {n} actions"
            )
        joint = np.empty(n, dtype=np.int64)
        for player, action in enumerate(actions):
            legal = self.legal_actions(player)
            if not legal:
                joint[player] = self.game.neutral_action
                continue
            if not is_int(action) or int(action) not in legal:
                raise IllegalActionError(action, legal, player, state=self)
            joint[player] = int(action)
        self.game.kernels.apply_joint(self.array, joint)
        self._history.extend(int(a) for a in joint)

    def apply_history(self, actions: Sequence[int]) -> None:
        i = 0
        while i < len(actions):
            if self.current_player() == SIMULTANEOUS:
                lap = list(actions[i : i + self.game.num_players])
                if len(lap) < self.game.num_players:
                    raise IllegalActionError(lap, [], None, state=self)
                self.apply_actions(lap)
                i += self.game.num_players
            else:
                self.apply_action(actions[i])
                i += 1

    def random_action(self, rng: np.random.Generator, player: int | None = None) -> int:
        """A uniform legal action (chance outcomes by their probabilities)."""
        if player is None and self.is_chance_node():
            outcomes = self.chance_outcomes()
            probs = np.array([p for _, p in outcomes])
            return outcomes[int(rng.choice(len(outcomes), p=probs / probs.sum()))][0]
        legal = self.legal_actions(player)
        return legal[int(rng.integers(len(legal)))] if legal else self.game.neutral_action

    def play_random_opening(self, plies: int, rng: np.random.Generator) -> None:
        """Random moves that never end the game (the scenario of seeded openings)."""
        for _ in range(plies):
            if self.is_terminal():
                return
            candidates = []
            for action in self._candidate_moves(rng):
                trial = self.clone()
                trial._apply_any(action)
                if not trial.is_terminal():
                    candidates.append(action)
            if not candidates:
                return
            self._apply_any(candidates[int(rng.integers(len(candidates)))])

    def _candidate_moves(self, rng: np.random.Generator) -> list:
        if self.is_simultaneous_node():
            return [
                [self.random_action(rng, p) for p in range(self.game.num_players)] for _ in range(8)
            ]
        if self.is_chance_node():
            return [self.random_action(rng)]
        return self.legal_actions()

    def _apply_any(self, move) -> None:
        if isinstance(move, list):
            self.apply_actions(move)
        else:
            self.apply_action(move)


# ---- messages about moves in the game's own notation, for people: errors, logs, prompts ---------
# A refused move reads `illegal move 4 for X after "444444": column 4 is full; legal: 1 2 3 5 6
# 7`: the move and the legal ones as the game writes them (`Game.action_to_string`), the player as
# the board names it (`Game.player_name`) and the reason in the game's words
# (`Game.illegal_reason`), with a generic reason for games that give none.

#: legal moves named in a message, at most (a tactics turn can have hundreds)
LEGAL_SHOWN = 40
HISTORY_SHOWN = 48


def describe_illegal(
    state: State, action: Any, player: int | None, legal: Sequence[int] = ()
) -> str:
    """`illegal move MOVE [for WHO] [after "HISTORY"]: REASON[; legal: MOVES]`, in the game's
    notation; the reason comes from `Game.illegal_reason` or a generic explanation."""
    game, current = state.game, state.current_player()
    after = after_history(state)
    if isinstance(action, list | tuple):  # a simultaneous lap
        if current != SIMULTANEOUS:
            return f"illegal lap {list(action)}{after}: not a simultaneous lap, one move at a time"
        return f"illegal lap {list(action)}{after}: a lap takes {game.num_players} moves"
    # whose notation the move is written in (the player to move when none is named)
    mover = current if current not in (TERMINAL, SIMULTANEOUS) else 0
    mover = mover if player is None else player
    known = is_int(action) and 0 <= int(action) < game.num_actions
    if known:
        move = game.action_to_string(mover, int(action))
    else:
        move = f"id {action}" if is_int(action) else repr(action)
    who = f" for {game.player_name(player)}" if player is not None and player >= 0 else ""
    if current == TERMINAL:
        reason = "the game is over"
    elif current == SIMULTANEOUS and player is None:
        reason = "everyone moves at once here: one move per player (apply_actions)"
    elif not is_int(action):
        reason = "not an action id"
    elif not known:
        reason = f"{game.name} action ids run from 0 to {game.num_actions - 1}"
    else:
        reason = game.illegal_reason(state.array, int(action), mover) or "not a legal move here"
    return f"illegal move {move}{who}{after}: {reason}" + legal_clause(game, mover, legal)


def legal_clause(game: Game, player: int, legal: Sequence[int]) -> str:
    """`; legal: c4 d3 e6 f5` in natural order (the first LEGAL_SHOWN), or "" for none."""
    if not legal:
        return ""
    words = sorted((game.action_to_string(player, int(a)) for a in legal), key=_natural)
    more = len(words) - LEGAL_SHOWN
    return "; legal: " + " ".join(words[:LEGAL_SHOWN]) + (f" … ({more} more)" if more > 0 else "")


def after_history(state: State) -> str:
    """` after "4453"`: where a message's position comes from (its last moves), or ""."""
    history = state.history()
    if not history:
        return ""
    shown = state.game.format_moves(history)
    if len(shown) > HISTORY_SHOWN:
        shown = "…" + shown[-HISTORY_SHOWN:]
    return f' after "{shown}"'


def _natural(word: str) -> tuple:
    """Sort key that orders `c4 d3 e6 f5` and `2 10` as people do."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", word))
