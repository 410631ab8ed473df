"""A registered bot as an MLflow pyfunc model that plays, so MLflow's own tools deploy it
(`mlflow models serve`, `mlflow models predict`, `build-docker`).

Input: a table of positions, one a row: `game` (a game spec), `history` (the moves so far in the
game's notation, as `gridbots move` reads them), optional `ms` (a time budget for a bot that
searches by time; others ignore it) and `seed` (scenario and agent seed, default 0, as
`gridbots move --seed`). Output, one row each: `move` (the game's notation), `action` (its id),
`analysis` (`agent.analyse` as JSON, the bot API's). At a simultaneous node every living
player answers, as `gridbots move` does: `move` lists their moves, `action` is -1 and
`analysis` holds each player's action.

The model is the bot, not its tensor: it carries the network file (and its sidecars) as an
artifact, its play spec (the version's `play.spec`: `onnx:{path}`, `seq:model={path}`, an
imported zoo card's `puct:model={dir}/FILE,…`; what `registry:` plays) in its model config,
and gridbots' packages below the CLI (engine, agents, features, models) as code
paths, so an environment MLflow builds from its pip requirements (gridbots' runtime packages,
not gridbots from an index) loads it. It is logged as "models from code" (MLflow's own advice
for custom models): loading runs the small entry script written here, nothing is unpickled.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import mlflow
from mlflow.pyfunc import PythonModel

#: the packages a bot needs at play time, and MLflow's pip requirement names for them
PACKAGES = ("engine", "agents", "features", "models")
REQUIREMENTS = ("mlflow", "numpy", "numba", "pandas", "pyarrow", "onnx", "onnxruntime-gpu",
                "pyyaml", "scipy", "hmmlearn", "python-crfsuite")  # fmt: skip
#: the entry script MLflow runs to build the model (models from code)
ENTRY = '''"""gridbots bot (MLflow models from code): builds the model, unpickles nothing."""
from mlflow.models import set_model

from models.pyfunc_bot import BotModel

set_model(BotModel())
'''


def _user_error(message: str) -> Exception:
    """An error MLflow's scoring server answers with 400 and this message."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    return MlflowException(message, error_code=INVALID_PARAMETER_VALUE)


#: MLflow's warning that `predict` has no type hints (on purpose: see BotModel.predict); it
#: comes coloured, so the pattern allows the colour code before it
TYPE_HINT_WARNING = r".*Add type hints to the `predict` method"

# MLflow checks predict's hints when the class is defined, under its own "once" filter (which
# outranks an "ignore"): the warning is recorded here and dropped, any other one passed on
with warnings.catch_warnings(record=True) as _caught:

    class BotModel(PythonModel):
        """Plays each posted position with the bot its play spec builds (one agent per game, time
        budget and seed, kept between calls as `gridbots move` keeps its agent between lines)."""

        def load_context(self, context) -> None:
            config = context.model_config or {}
            self.spec = str(config["spec"])
            self.game_name = str(config["game"]).split(":", 1)[0]
            self.label = str(config.get("label", "gridbots bot"))
            self.network = Path(context.artifacts["network"]) / str(config["file"])
            self.agents: dict[tuple[str, float | None, int], Any] = {}

        def _agent(self, game: Any, ms: float | None, seed: int) -> Any:
            from agents.base import make

            key = (game.spec(), ms, seed)
            if key not in self.agents:
                from models.play_spec import resolve

                spec = resolve(self.spec, self.network)
                agent = make(spec, game, seed=seed)
                if ms is not None and hasattr(agent, "ms"):  # only a timed search takes a budget
                    from models.play_spec import with_options

                    agent = make(with_options(spec, {"ms": f"{ms:g}"}), game, seed=seed)
                self.agents[key] = agent
            return self.agents[key]

        def _answer(self, row: dict[str, Any]) -> dict[str, Any]:
            from engine import parse_game_spec
            from engine.protocol import SIMULTANEOUS

            game = parse_game_spec(str(row["game"]))
            if game.name != self.game_name:
                raise _user_error(f"this bot plays {self.game_name}, not {game.name}")
            ms = _number(row.get("ms"))
            seed = int(_number(row.get("seed")) or 0)
            history = str(row.get("history") or "")
            state = game.state_from_history(game.parse_moves(history), seed=seed)
            current = state.current_player()
            if state.is_terminal():
                raise _user_error(f"the game is over after {history!r}; nothing to answer")
            agent = self._agent(game, ms, seed)
            if current == SIMULTANEOUS:
                living = [p for p in range(game.num_players) if state.legal_actions(p)]
                actions = {p: int(agent.step(state.clone(), p)) for p in living}
                moves = {p: game.action_to_string(p, a) for p, a in actions.items()}
                analysis = {"actions": {str(p): a for p, a in actions.items()},
                            "moves": {str(p): m for p, m in moves.items()}}  # fmt: skip
                return {"move": " ".join(moves.values()), "action": -1,
                        "analysis": json.dumps(analysis)}  # fmt: skip
            if current < 0:
                raise _user_error(f"a chance outcome comes next after {history!r}, not a move")
            found = agent.analyse(state.clone())
            found.extra["model"] = self.label
            analysis = found.to_json(state)
            return {"move": analysis["move"], "action": int(analysis["action"]),
                    "analysis": json.dumps(analysis)}  # fmt: skip

        # no type hints on purpose: MLflow 3 reads predict's hints as the model's schema
        def predict(self, context, model_input, params=None):
            import pandas as pd

            from engine.protocol import GameError

            records = hasattr(model_input, "to_dict")
            rows = model_input.to_dict("records") if records else model_input
            answers = []
            for number, row in enumerate(rows):
                try:
                    answers.append(self._answer(row))
                except GameError as error:  # a bad game, history or move: the caller's mistake
                    raise _user_error(f"row {number}: {error}") from None
            return pd.DataFrame(answers, columns=["move", "action", "analysis"])


for _warning in _caught:
    if not re.match(TYPE_HINT_WARNING, str(_warning.message)):
        warnings.warn_explicit(
            _warning.message, _warning.category, _warning.filename, _warning.lineno
        )


def _number(value: Any) -> float | None:
    """A cell's number, None when absent (pandas gives NaN for a missing optional column)."""
    if value is None:
        return None
    number = float(value)
    return None if number != number else number


def signature() -> Any:
    """Positions in, moves out (MLflow checks a request against it before `predict`)."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, DataType, Schema

    inputs = Schema([
        ColSpec(DataType.string, "game"),
        ColSpec(DataType.string, "history"),
        ColSpec(DataType.double, "ms", required=False),
        ColSpec(DataType.long, "seed", required=False),
    ])  # fmt: skip
    outputs = Schema([
        ColSpec(DataType.string, "move"),
        ColSpec(DataType.long, "action"),
        ColSpec(DataType.string, "analysis"),
    ])  # fmt: skip
    return ModelSignature(inputs=inputs, outputs=outputs)


def requirements() -> list[str]:
    """Pinned pip requirements of a bot: gridbots' runtime packages as installed here."""
    found = []
    for name in REQUIREMENTS:
        try:
            found.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            continue
    return found


def _package_copy(scratch: Path) -> list[str]:
    """engine/agents/features/models as they are imported here, without caches: the code the
    bot plays with wherever it is loaded."""
    import importlib

    paths = []
    for name in PACKAGES:
        source = Path(importlib.import_module(name).__file__).parent
        target = scratch / "code" / name
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        paths.append(str(target))
    return paths


def first_decision(game: Any) -> str:
    """The history of the first position where a player moves: a game that opens with a chance
    node (tactics deals first) has no move to answer at "", and MLflow checks the example."""
    state = game.new_initial_state(seed=0)
    while state.is_chance_node():
        state.apply_action(max(state.chance_outcomes(), key=lambda outcome: outcome[1])[0])
    return game.format_moves(state.history())


def log_bot(files: list[Path], spec: str, game: str, label: str, input_example: bool = True) -> Any:
    """Logs the bot into the active run as pyfunc model `bot`; its ModelInfo. `files`: the model
    file first, then its sidecars; `spec`: the play spec, `{path}` the model file, `{dir}` its
    folder."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gridbots-pyfunc-") as scratch_name:
        scratch = Path(scratch_name)
        network = scratch / "network"
        network.mkdir()
        for path in files:
            shutil.copyfile(path, network / Path(path).name)
        entry = scratch / "bot.py"
        entry.write_text(ENTRY)
        config = {"spec": spec, "game": game, "file": Path(files[0]).name, "label": label}
        # the bot is built here first: a file no agent plays is refused before it is logged, and
        # the agent's modules come from gridbots itself, not from the code copy MLflow loads
        # when it checks the input example (MLflow also leaves that copy on sys.path: undone)
        from agents.base import make
        from engine import parse_game_spec
        from models.play_spec import resolve

        loaded = parse_game_spec(game)
        make(resolve(spec, network / Path(files[0]).name), loaded, seed=0)
        example = None
        if input_example:
            import pandas as pd

            example = pd.DataFrame([{"game": game, "history": first_decision(loaded)}])
        # MLflow imports the code copy to check the input example: written bytecode would be
        # logged with it (a `__pycache__` of this interpreter in every version)
        saved, writes_bytecode = list(sys.path), sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            with warnings.catch_warnings():  # "add type hints to predict": see BotModel.predict
                warnings.filterwarnings("ignore", TYPE_HINT_WARNING, UserWarning)
                return mlflow.pyfunc.log_model(
                    name="bot",
                    python_model=str(entry),
                    artifacts={"network": str(network)},
                    code_paths=_package_copy(scratch),
                    model_config=config,
                    signature=signature(),
                    input_example=example,
                    pip_requirements=requirements(),
                )
        finally:
            sys.path[:] = saved
            sys.dont_write_bytecode = writes_bytecode
