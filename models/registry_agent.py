"""`registry:NAME@ALIAS` / `registry:NAME/VERSION` (default `@production`): a registered bot.

It lives in models/ because it reads the MLflow registry; agents.make finds it through the
`gridbots.agents` entry point declared in pyproject.toml, so the agents layer stays below.

The version's raw artifact is fetched from MLflow into a local cache (models.registry.download;
never a pickle, never TensorFlow) and played by the spec the version carries (tag `play.spec`,
models.play_spec: an imported zoo bot plays its card's spec on the version's files), else by the
agent its kind calls for: ONNX files through `onnx:PATH` (which reads sequence / value from the
file's metadata), HMM JSON and CRFsuite files through `seq:model=PATH`. Options after the
reference go to that agent after the version's own, so they win
(`registry:connect4-lstm@production:guards=win`, `registry:connect4-playerzero@production:ms=200`).
The alias is looked up every time an agent is built, so a promotion shows at the next game; a
version's file is downloaded once.
"""

from __future__ import annotations

import functools
from pathlib import Path

from agents.analysis import Analysis
from agents.base import Agent, AgentError, builder, make
from engine.protocol import Game, State
from models import play_spec
from models.play_spec import INNER_SPECS  # noqa: F401  (tests stub a kind's agent here)


@functools.cache
def _checked_onnx(path: str, stamp: float) -> None:
    """Refuses a corrupt ONNX file with one clear line (cached per file and mtime)."""
    from models.base import ModelError
    from models.mlflow_store import read_onnx

    try:
        read_onnx(Path(path))
    except ModelError as error:
        raise AgentError(f"registry: {error}") from None


#: (tracking URI, name, version) → fetched version: a version never changes, an alias may
_FETCHED: dict[tuple[str, str, str], tuple[Path, str, dict[str, str]]] = {}


def fetch(reference: str) -> tuple[Path, str, dict[str, str]]:
    """(local artifact file, kind, version tags) of `NAME@ALIAS` or `NAME/VERSION`."""
    from models.base import ModelError
    from models.mlflow_store import tracking_uri
    from models.registry import download, resolve, split_ref

    try:
        name, alias, version = split_ref(reference)
        key = (tracking_uri(), name, version or "")
        if version is not None and key in _FETCHED and _FETCHED[key][0].is_file():
            return _FETCHED[key]
        found = resolve(name, alias=alias, version=version)
        path, kind = download(found)
    except ModelError as error:
        raise AgentError(f"registry: {error}") from None
    fetched = (path, kind, dict(found.tags or {}))
    _FETCHED[(key[0], name, str(found.version))] = fetched
    return fetched


@builder("registry")
class RegistryAgent(Agent):
    """Delegates every move to the agent built from the downloaded artifact."""

    def __init__(self, game: Game, spec: str, seed: int | None = None, **options: str):
        super().__init__(game, spec, seed)
        reference = options.pop("variant", "")
        if not reference:
            raise AgentError(f"{spec!r}: name a model, e.g. registry:{game.name}-lstm@production")
        path, kind, tags = fetch(reference)
        trained_for = tags.get("game", "").split(":", 1)[0]
        if trained_for and trained_for != game.name:
            raise AgentError(f"registry: {reference} is a {trained_for} model, not {game.name}")
        if kind == "onnx":
            _checked_onnx(str(path), path.stat().st_mtime)
        template = play_spec.version_spec(kind, tags)
        inner = play_spec.with_options(play_spec.resolve(template, path), options)
        self.source = path
        self.reference = f"{reference} ({kind})"
        self.inner = make(inner, game, seed)

    def step(self, state: State, player: int | None = None) -> int:
        return self.inner.step(state, player)

    def analyse(self, state: State) -> Analysis:
        found = self.inner.analyse(state)
        found.extra["model"] = self.reference
        return found
