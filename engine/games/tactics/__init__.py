"""Tactics: study 001's turn-based tactics game (Appendix 3): chance draws, multi-action turns.

Two sides (player 0 = the study's Faction 1) each command 1-6 units on a 12 x 12 grid. Units act
one at a time, faster first, ties to side 0; a unit's turn is a multi-action turn that ends only
with its End Turn. At the start of its turn a unit gets Move back and draws one random card from
its deck that it does not hold (a chance node; none when it holds them all). Damage is
`max(0, card damage + attack - defence)`. The game ends when at most one side has units (none:
a draw); a game that would start its 65th unit turn is a draw (`max_turns`).

Actions are `(row * 12 + col) * 30 + id` (4,320; ids as in the study, Combine Actions = 14 as in
its code, End Turn = 13): the cell is the card's target. Chance outcomes are `4320 + card`.

Choices where the study is silent (also in DESIGN.md):
- Distance is Euclidean between cell centres (a radius r covers dr^2 + dc^2 <= r^2).
  "Neighbour" and "adjacent" mean the four orthogonal cells.
- Line of sight: no unit or wall on any cell whose interior the segment between the two cell
  centres crosses (a corner touch does not block); symmetric under swaps and board flips.
- Move: any free cell within radius 5 (80 cells), no path needed. Restored every turn start.
- Sword / Spear name a direction (the adjacent cell). Sword: a plus centred on that cell (it, the
  cell beyond, the two at its sides); Spear: three cells in a line. Both hit enemy units and
  walls in the area, never allies.
- Bow: any range, needs sight; 1 + floor(distance / 2). Spark: radius 5, no sight; Weaker Spark:
  radius 4, sight. Shatter: radius 5, no sight. Single-target attacks aim at enemy units or walls.
- Walls have 3 health and defence 0 (the study's self-play example shows a wall at 3); every
  attack damages them; Ground builds one on a free adjacent cell.
- Action Drawing costs 3 health (direct loss, it may kill), gives Move back and draws a card
  that is not Action Drawing. Burn's 2 and Boost's half are direct losses too; only attacks go
  through the formula, Shield and Damage Chain.
- Statuses tick at the start of the bearer's own turns: Burn (3 turns: -1 defence, -2 health per
  tick), Dusted (2: -2 speed), Slow Healing (4: +2 per tick), Chain (3), Shield (3: -1 speed,
  absorbs the next attack whole, Burn included, then ends), Boost (4: +1 speed, +4 attack,
  -1 defence), Armor (3: +2 defence). Re-applying refreshes the duration.
- Dust / Dust Spark affect every other unit within radius 4, allies included (the study says
  "all units"); Dust Spark hits only Dusted ones (10 through the formula).
- Damage Chain targets an enemy unit: while it lasts (its 3 turns), the enemy loses whatever
  damage attacks deal to the caster (not passed on further). It ends if either unit dies.
- Spark Dive targets a free cell next to an enemy unit; the caster lands there and every enemy
  unit next to it takes a Spark. Position Swap: any other unit, any range.
- Shatter: 5 damage; when that kills the unit or the target is a wall, 7 damage to every unit
  (either side, the caster included) and wall within radius 3 of the target.
- Boost takes floor(health / 2) (never kills) and gives exactly that back when it ends (capped at
  maximum health, nothing if the unit died), however much damage it took meanwhile; a second
  Boost adds to the amount owed. Healing never exceeds maximum health.
- Support cards (Slow Heal, Shield, Boost, Armor) target any allied unit, the caster included,
  at any range; Fast Heal and Dust Spark the caster.
- Turn order is fixed per round at its start (by current speed); units killed drop out; Burn can
  kill a unit at its turn start, which then does not act.
- Unit classes, decks and line-ups: see `scenarios` (three classes; random mirrored line-ups or
  the presets duel, trio, fort).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from engine.kernel_cache import stamp_package

stamp_package(__path__[0])  # before any kernel module compiles: one cache stamp for all

from engine.games.tactics import notation, rules, scenarios, scripts  # noqa: E402
from engine.games.tactics.layout import (  # noqa: E402
    CELLS,
    COMBINE,
    DEFAULT_MAX_TURNS,
    END_TURN,
    IDS,
    MAX_ACTIONS_PER_TURN,
    MAX_PER_SIDE,
    NUM_ACTIONS,
    PLANES,
    SIZE,
)
from engine.protocol import Game, GameError, KernelSet, Portfolio  # noqa: E402
from engine.registry import register  # noqa: E402

KERNELS = KernelSet.collect(vars(rules))


@register
class Tactics(Game):
    """Units with cards on a 12 x 12 grid; chance draws, multi-action turns, 4,320 actions."""

    name = "tactics"
    kind = "duel"
    has_chance = True
    chance_ids = IDS  # "draw card k" is DRAW_BASE + k, after the 4,320 unit actions
    end_turn_action = END_TURN  # the id; the action is END_TURN at the acting unit's cell
    neutral_action = -1
    default_params: ClassVar[dict[str, Any]] = {
        "units": 3,
        "preset": "random",
        "max_turns": DEFAULT_MAX_TURNS,
    }

    def _kernels(self) -> KernelSet:
        return KERNELS

    def _configure(self) -> None:
        units, turns = self.params["units"], self.params["max_turns"]
        if not isinstance(units, int) or not 1 <= units <= MAX_PER_SIDE:
            raise GameError(f"tactics: units must be 1..{MAX_PER_SIDE}, got {units!r}")
        if not isinstance(turns, int) or turns < 1:
            raise GameError(f"tactics: max_turns must be a positive integer, got {turns!r}")
        preset = self.params["preset"]
        if preset != "random" and preset not in scenarios.PRESETS:
            raise GameError(
                f"tactics: unknown preset {preset!r}; known: random, {', '.join(scenarios.PRESETS)}"
            )
        self.num_players = 2
        self.teams = (0, 1)
        self.num_actions = NUM_ACTIONS
        self.observation_shape = (PLANES, SIZE, SIZE)
        self.max_game_length = turns * MAX_ACTIONS_PER_TURN

    def seeded_start(self, **scenario: Any) -> bool:
        return self.params["preset"] == "random"

    def initial_config(self, rng: np.random.Generator, **scenario: Any) -> np.ndarray:
        if scenario:
            raise GameError(f"tactics: unknown scenario option(s) {sorted(scenario)}")
        turns = self.params["max_turns"]
        if self.params["preset"] != "random":
            return scenarios.preset_lineup(self.params["preset"], turns)
        return scenarios.random_lineup(rng, self.params["units"], turns)

    def render(self, s: np.ndarray) -> str:
        return notation.render(s)

    def action_to_string(self, player: int, action: int) -> str:
        return notation.action_name(action)

    def grid(self, s: np.ndarray) -> list[str]:
        return notation.grid(s)

    def grid_labels(self, s: np.ndarray) -> list[list[str]]:
        return notation.grid_labels(s)

    def move_cells(self, action: int) -> tuple[tuple[int, int], ...]:
        """A card's target cell (End Turn: the acting unit's); a combination has no cell."""
        cell, card = divmod(int(action), IDS)
        if not 0 <= cell < CELLS or card == COMBINE:
            return ()
        return (divmod(cell, SIZE),)

    def heuristic_action(self, state, player: int, options: dict[str, str]) -> int:
        """`heuristic:script=NAME`: one of the HPS portfolio's scripts plays every turn
        (attack by default; see engine/games/tactics/scripts.py)."""
        unknown = set(options) - {"script"}
        if unknown:
            raise GameError(f"tactics heuristic: unknown option(s) {sorted(unknown)}")
        name = options.get("script", "attack")
        if name not in scripts.SCRIPT_NAMES:
            raise GameError(
                f"tactics heuristic: script={name!r}; known: {', '.join(scripts.SCRIPT_NAMES)}"
            )
        buffers = scripts.scratch_buffers(len(state.array))
        k = scripts.SCRIPT_NAMES.index(name)
        return int(scripts.script_action(state.array, k, *buffers))

    def ends_turn(self, action: int) -> bool:
        return action < NUM_ACTIONS and action % IDS == END_TURN

    def parse_moves(self, text: str) -> list[int]:
        return notation.parse_moves(text)

    def format_moves(self, actions) -> str:
        return notation.format_moves(actions)

    def symmetries(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Identity, left-right, up-down and both flips as (observation, action) gathers; a
        combination's "cell" holds its ingredients, so it stays put."""
        grid = np.arange(CELLS).reshape(SIZE, SIZE)
        found = []
        for cells in (grid, grid[:, ::-1], grid[::-1, :], grid[::-1, ::-1]):
            flat = cells.ravel()
            observation = np.concatenate([flat + k * CELLS for k in range(PLANES)])
            actions = (flat[:, None] * IDS + np.arange(IDS)[None, :]).ravel()
            combine = np.arange(CELLS) * IDS + COMBINE
            actions[combine] = combine
            found.append((observation, actions))
        return found


#: action ids lie on the board's cells, IDS per cell and nothing after (a per-cell policy head)
Tactics.action_cells = (IDS, 0)
Tactics.grid_style = {
    "cell": "square", "background": "#6b6b6b", "empty": "#ece6d6", "ink": "#111",
    "pieces": {
        "#": {"color": "#8a8172", "name": "wall"},
        **{c.letter: {"color": "#6ea8fe", "disc": True, "letter": True, "name": f"side 0 {c.name}"}
           for c in scenarios.CLASSES},
        **{c.letter.lower(): {"color": "#f28b82", "disc": True, "letter": True,
                              "name": f"side 1 {c.name}"} for c in scenarios.CLASSES},
    },
}  # fmt: skip
Tactics.portfolio = Portfolio(
    scripts.SCRIPT_NAMES,
    scripts.script_action,
    scripts.portfolio_moves,
    scripts.play_script_turn,
    scripts.scripted_playout,
)
Tactics.evaluate = staticmethod(scripts.evaluate)
