"""Every gridbots game as an OpenSpiel Python game: `pyspiel.load_game("gridbots_pig(target=20)")`.

Importing this module registers `gridbots_<name>` for each registered game, the way importing
`open_spiel.python.games` registers OpenSpiel's own Python games; nothing else in gridbots
imports it, so pyspiel stays unloaded unless asked for (needs the `peers` extra).

Mapping (a pyspiel state wraps the gridbots kernel array and history; `twin` is that position
as a gridbots `State`):
- player ids, CHANCE, SIMULTANEOUS and TERMINAL are the same numbers in both;
- player actions keep their ids (`num_distinct_actions` = the game's `num_actions`); chance
  outcomes numbered after them (tactics' draws, `num_actions + k`) become `k`, pig's dice keep
  theirs;
- a game whose start depends on the seed (`Game.seeded_start`: tactics' random line-ups,
  territory's scripted red, Lazerbike's `start=random`) begins with a chance node over the
  `seeds` first seeds, uniform: outcome k is `new_initial_state(seed=k)`;
- a multi-action turn is a run of moves by the same player, ended by its End Turn action;
- a player that cannot act in a simultaneous lap (a crashed bike) has no legal actions, and
  whatever OpenSpiel passes for it (0, or `INVALID_ACTION` from evaluate_bots) plays the
  game's neutral action;
- utility: duels zero-sum, puzzles identical (the team wins or loses together), wars zero-sum
  with two teams of equal size and general-sum otherwise; results lie in [-1, 1], given at the
  end (terminal rewards);
- `max_game_length` counts decisions (a simultaneous lap is one), never chance nodes.

Bad parameter values raise `pyspiel.SpielError` with the game's own one-line message; unknown
names, parameters and parameter types are refused by OpenSpiel itself. OpenSpiel serializes a
Python game's state by pickling its attributes (here the kernel arrays, the history and the
game spec): `deserialize_state` only strings you made yourself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyspiel
from open_spiel.python.observation import IIGObserverForPublicInfoGame

from engine.protocol import CHANCE, Game, GameError, State
from engine.registry import game_names, load_game

PREFIX = "gridbots_"
#: start seeds a seeded game draws from by default (its `seeds` parameter)
DEFAULT_SEEDS = 1000
#: scenario options that become OpenSpiel parameters where the game takes them, with defaults
SCENARIO_PARAMS = {"start": "symmetric"}
_Type = pyspiel.GameType


def _takes(game: Game, option: str, value: Any) -> bool:
    try:
        game.initial_config(np.random.default_rng(0), **{option: value})
    except (GameError, TypeError):
        return False
    return True


def _scenario_params(game: Game) -> dict[str, Any]:
    """The scenario options of SCENARIO_PARAMS that this game accepts."""
    return {k: v for k, v in SCENARIO_PARAMS.items() if _takes(game, k, v)}


def _spec_params(game: Game) -> dict[str, Any]:
    """OpenSpiel's parameter specification: the game's parameters, its scenario options and
    `seeds`. A text parameter whose default is empty (Lazerbike's `teams`) is an integer there,
    0 standing for empty: OpenSpiel reads `teams=0101` in a game string as the integer 101, and
    the game reads it back as "0101"."""
    return {**_os_values(game), **_scenario_params(game), "seeds": DEFAULT_SEEDS}


def _gridbots_params(game: Game, params: dict[str, Any]) -> dict[str, Any]:
    return {k: "" if game.default_params.get(k) == "" and v == 0 else v for k, v in params.items()}


def _utility(game: Game) -> tuple[Any, float | None]:
    if game.kind == "puzzle":
        return _Type.Utility.IDENTICAL, None
    sizes = [game.teams.count(t) for t in sorted(set(game.teams))]
    if game.kind == "duel" or (len(sizes) == 2 and sizes[0] == sizes[1]):
        return _Type.Utility.ZERO_SUM, 0.0
    return _Type.Utility.GENERAL_SUM, None


def game_type(game: Game, stochastic: bool) -> pyspiel.GameType:
    """The OpenSpiel type of one gridbots game instance."""
    utility, _ = _utility(game)
    low, high = game.player_counts
    return pyspiel.GameType(
        short_name=PREFIX + game.name,
        long_name=f"gridbots {game.name}",
        dynamics=_Type.Dynamics.SIMULTANEOUS if game.simultaneous else _Type.Dynamics.SEQUENTIAL,
        chance_mode=(
            _Type.ChanceMode.EXPLICIT_STOCHASTIC if stochastic else _Type.ChanceMode.DETERMINISTIC
        ),
        # a lap's choices are hidden from each other until it is played
        information=(
            _Type.Information.IMPERFECT_INFORMATION
            if game.simultaneous
            else _Type.Information.PERFECT_INFORMATION
        ),
        utility=utility,
        reward_model=_Type.RewardModel.TERMINAL,
        max_num_players=high,
        min_num_players=low,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=_spec_params(game),
    )


class _GameRef:
    """The gridbots game behind a state: shared by clones, pickled as its name and parameters."""

    __slots__ = ("game",)

    def __init__(self, game: Game):
        self.game = game

    def __deepcopy__(self, memo: dict) -> _GameRef:
        return self

    def __reduce__(self) -> tuple:
        return (_ref_from_params, (self.game.name, dict(self.game.params)))


def _ref_from_params(name: str, params: dict[str, Any]) -> _GameRef:
    return _GameRef(load_game(name, **params))


class GridbotsGame(pyspiel.Game):
    """One gridbots game with its parameters (subclassed per game name by `register`)."""

    gridbots_name = ""

    def __init__(self, params: dict[str, Any] | None = None):
        given = dict(params or {})
        params = dict(given)
        self.seeds = int(params.pop("seeds", DEFAULT_SEEDS))
        try:
            base = load_game(self.gridbots_name)
            self.scenario = {k: params.pop(k) for k in _scenario_params(base) if k in params}
            game = load_game(self.gridbots_name, **_gridbots_params(base, params))
            game.initial_config(np.random.default_rng(0), **self.scenario)
        except GameError as error:
            raise pyspiel.SpielError(str(error)) from None
        if self.seeds < 1:
            raise pyspiel.SpielError(f"{PREFIX}{game.name}: seeds must be >= 1, got {self.seeds}")
        self.gridbots = game
        self.seeded = game.seeded_start(**self.scenario)
        # OpenSpiel makes an initial state for every observation tensor (to learn its shape):
        # copying one is cheaper than a new gridbots start
        self.initial = None if self.seeded else game.new_initial_state(seed=0, **self.scenario)
        self.chance_offset = game.num_actions if game.chance_ids else 0
        chance = game.chance_ids or (game.num_actions if game.has_chance else 0)
        if self.seeded:
            chance = max(chance, self.seeds)
        _, utility_sum = _utility(game)
        info = pyspiel.GameInfo(
            num_distinct_actions=game.num_actions,
            max_chance_outcomes=chance,
            num_players=game.num_players,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=utility_sum,
            max_game_length=game.max_game_length,
        )
        super().__init__(game_type(game, bool(chance)), info, given)
        self._ref = _GameRef(game)

    def new_initial_state(self) -> GridbotsState:
        return GridbotsState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        """The game's observation planes; perfect-recall information states are the public
        history, as in OpenSpiel's own public-information Python games."""
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return BoardObserver(self.gridbots, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class GridbotsState(pyspiel.State):
    """A gridbots position inside OpenSpiel: the kernel array, its config and history."""

    def __init__(self, game: GridbotsGame):
        super().__init__(game)
        self._ref = game._ref
        self._offset = game.chance_offset
        self._seeds = game.seeds if game.seeded else 0
        self._array: np.ndarray | None = None
        self._config: np.ndarray | None = None
        self._history: list[int] = []
        if game.initial is not None:
            self._start(game.initial.clone())
        self._scenario = dict(game.scenario)

    def _start(self, state: State) -> None:
        self._array, self._config, self._history = state.array, state.config, state.history()

    @property
    def twin(self) -> State:
        """This position as a gridbots State (sharing its arrays: moves on either show in both);
        before a seeded start is drawn there is none."""
        if self._array is None:
            raise GameError("the start seed is not drawn yet (a chance node)")
        state = State(self._ref.game, self._array, self._config)
        state._history = self._history
        return state

    def current_player(self) -> int:
        if self._array is None:
            return CHANCE
        return int(self._ref.game.kernels.current_player(self._array))

    def _legal_actions(self, player: int) -> list[int]:
        return sorted(self.twin.legal_actions(player))

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._array is None:
            return [(k, 1.0 / self._seeds) for k in range(self._seeds)]
        return [(a - self._offset, p) for a, p in self.twin.chance_outcomes()]

    def _apply_action(self, action: int) -> None:
        if self._array is None:
            seed = int(action)
            if not 0 <= seed < self._seeds:
                raise GameError(f"start seed {seed} is not in 0..{self._seeds - 1}")
            self._start(self._ref.game.new_initial_state(seed=seed, **self._scenario))
            return
        twin = self.twin
        if twin.is_chance_node():
            action = int(action) + self._offset
        twin.apply_action(int(action))

    def _apply_actions(self, actions: list[int]) -> None:
        twin = self.twin
        neutral = self._ref.game.neutral_action
        twin.apply_actions([a if twin.legal_actions(p) else neutral for p, a in enumerate(actions)])

    def _action_to_string(self, player: int, action: int) -> str:
        if self._array is None:
            return f"start seed {action}"
        if player == CHANCE:
            return f"chance {self._ref.game.action_to_string(CHANCE, action + self._offset)}"
        return self._ref.game.action_to_string(player, action)

    def is_terminal(self) -> bool:
        return self._array is not None and self.twin.is_terminal()

    def returns(self) -> list[float]:
        if self._array is None:
            return [0.0] * self._ref.game.num_players
        return self.twin.returns()

    def __str__(self) -> str:
        if self._array is None:
            return f"{self._ref.game.name}: start seed not drawn yet"
        return self._ref.game.render(self._array)


class BoardObserver:
    """The gridbots observation tensor (`observation_shape`) and the rendered board."""

    def __init__(self, game: Game, params: dict | None):
        if params:
            raise ValueError(f"observation parameters not supported; passed {params}")
        self.game = game
        self.tensor = np.zeros(int(np.prod(game.observation_shape)), np.float32)
        self.dict = {"observation": self.tensor.reshape(game.observation_shape)}

    def set_from(self, state: GridbotsState, player: int) -> None:
        self.tensor.fill(0.0)
        if state._array is not None:  # before a seeded start: all zeros
            self.game.kernels.observation(state._array, player, self.tensor)

    def string_from(self, state: GridbotsState, player: int) -> str:
        return str(state)


def load(game: Game) -> GridbotsGame:
    """`gridbots_<name>` with the parameters of the gridbots game `game`."""
    return pyspiel.load_game(PREFIX + game.name, _os_values(game))


def _os_values(game: Game) -> dict[str, Any]:
    """The game's parameters as OpenSpiel types (an empty-default text parameter an integer)."""
    return {
        k: (int(v or 0) if game.default_params.get(k) == "" else v) for k, v in game.params.items()
    }


def from_gridbots(peer: GridbotsGame, state: State) -> GridbotsState:
    """A `peer` state holding a copy of the gridbots position `state` (its kernel array and
    history); OpenSpiel's own action history stays empty, so replay it from `state.history()`
    where one is needed (serialization)."""
    twin = peer.new_initial_state()
    twin._start(state.clone())
    return twin


def register(name: str) -> None:
    """Registers `gridbots_<name>` with OpenSpiel (its type from the default parameters)."""
    game = load_game(name)
    cls = type(f"Gridbots_{name}", (GridbotsGame,), {"gridbots_name": name})
    stochastic = game.has_chance or game.seeded_start()
    pyspiel.register_game(game_type(game, stochastic), cls)


def registered_names() -> list[str]:
    return [PREFIX + name for name in game_names()]


for _name in game_names():
    register(_name)
