"""The bot registry: MLflow registered models `<game>-<family>`, their evidence, the gate.

A version is the bot as an MLflow pyfunc model (models.pyfunc_bot: MLflow's own tools serve it),
made by `register_run` alone; the network's own model stays in the run beside it. A version
carries its evidence as tags: the run, the dataset hashes, every parameter, the export
parity and the held-out metrics (`eval.<name>`). Only `promote_if_better` moves the alias
`production`: the candidate plays the current production version (or, with none yet, a baseline
agent: `params.yaml` promote.baseline, default `random:guards=win+block`) over seeded scenarios
with sides swapped (engine.tournament.play_pairing), and is promoted only when the lower end of
its score's 95% Wilson interval is above 0.5; where the game has a zoo bot (a version imported
from zoo/, under any name of the game), every candidate plays it too, a second match with the
same games, seed and bound (`zoo_bot`, `zoo_match`), and is promoted only when it clears both:
no demo-scale bot takes `production` without beating the zoo's. The decision and its evidence
are written as version tags either way. Registry stages are never used (deprecated in MLflow).

Versions are fetched as raw artifact files into a local cache (keyed by tracking URI, model,
version and source, so a rebuilt database never serves a stale file); nothing is unpickled.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from models.base import ARTIFACT_KINDS, ModelError
from models.mlflow_store import TrainedRun, sidecars, tracking_uri
from models.mlflow_store import client as store_client

PRODUCTION = "production"
DEFAULT_BASELINE = "random:guards=win+block"
DEFAULT_GAMES = 40
PARAMS_FILE = Path("params.yaml")


def model_name(game: str, family_name: str) -> str:
    """`connect4-lstm`: the game's name (parameters dropped) and the family."""
    return f"{game.split(':', 1)[0]}-{family_name}"


def _client():
    return store_client()


def _missing(error: Exception) -> bool:
    code = getattr(error, "error_code", "")
    return code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "NOT_FOUND")


# ---- registration ------------------------------------------------------------------------------
def _network_files(run: TrainedRun, scratch: Path) -> list[Path]:
    """The run's model file, then its sidecars: the trained file where it still is, else the
    copy logged at `run.model_uri` (a training's scratch folder is gone by registration)."""
    import mlflow

    result = run.result
    local = Path(result.artifact)
    if local.is_file():
        return [local, *sidecars(result)]
    folder = Path(mlflow.artifacts.download_artifacts(run.model_uri, dst_path=str(scratch)))
    found = sorted(p for p in folder.rglob(local.name) if p.is_file())
    if not found:
        raise ModelError(f"run {run.run_id} holds no {local.name} at {run.model_uri}")
    return [found[0], *sorted(found[0].parent.glob(f"{found[0].name}.*"))]


def log_bot(run: TrainedRun, client: Any, play_spec: str | None = None) -> Any:
    """Logs the run's bot as an MLflow pyfunc model (models.pyfunc_bot) into the run, which
    keeps its status (a PlayerZero generation stays RUNNING while its loop works on it);
    `play_spec`: how the bot plays (models.play_spec), its artifact kind's default if None."""
    import mlflow

    from models.play_spec import INNER_SPECS
    from models.pyfunc_bot import log_bot as log_pyfunc

    result = run.result
    if result.artifact_kind not in INNER_SPECS:
        raise ModelError(f"no bot plays artifact kind {result.artifact_kind!r}")
    spec = play_spec or INNER_SPECS[result.artifact_kind]
    label = f"{model_name(run.dataset['game'], result.family)} ({result.artifact_kind})"
    status = client.get_run(run.run_id).info.status
    active = mlflow.active_run()
    with tempfile.TemporaryDirectory(prefix="gridbots-register-") as scratch:
        files = _network_files(run, Path(scratch))
        if active is not None and active.info.run_id == run.run_id:
            return log_pyfunc(files, spec, run.dataset["game"], label)
        with mlflow.start_run(run_id=run.run_id, nested=active is not None):
            info = log_pyfunc(files, spec, run.dataset["game"], label)
        if status != "FINISHED":
            client.update_run(run.run_id, status=status)
        return info


def register_run(run: TrainedRun, client: Any = None, play_spec: str | None = None) -> str:
    """Registers a TrainedRun's bot as a new version; returns the version number.

    The version is the bot as an MLflow pyfunc model (positions in, moves out: `mlflow models
    serve` deploys it); the network's own model stays at `run.model_uri`, named by the tag
    `network.model_uri`. The one registration path: trainings, PlayerZero generations, TD and
    NEAT champions and imported bundles all come through here. The version carries how it
    plays as the tag `play.spec` (`play_spec`, e.g. an imported zoo card's spec; else its
    artifact kind's default), which `registry:` and the pyfunc bot both play."""
    from mlflow.exceptions import MlflowException

    from models.play_spec import INNER_SPECS, PLAY_SPEC_TAG

    client = client or _client()
    result = run.result
    name = model_name(run.dataset["game"], result.family)
    try:
        client.get_registered_model(name)
    except MlflowException as error:
        if not _missing(error):
            raise
        client.create_registered_model(
            name,
            tags={
                "gridbots.game": run.dataset["game"].split(":", 1)[0],
                "gridbots.family": result.family,
            },
            description=f"{result.family} bots for {run.dataset['game']} (gridbots)",
        )
    tags = {
        "run_id": run.run_id,
        "game": run.dataset["game"],
        "family": result.family,
        "encoding": result.encoding,
        "artifact.kind": result.artifact_kind,
        "artifact.file": Path(result.artifact).name,
        "network.model_uri": run.model_uri,
        "bot.flavor": "python_function",
        PLAY_SPEC_TAG: play_spec or INNER_SPECS.get(result.artifact_kind, ""),
        "dataset.path": run.dataset["dataset.path"],
        "dataset.sha256": run.dataset["dataset.sha256"],
        "dataset.manifest_hash": run.dataset["dataset.manifest_hash"],
        "params": json.dumps(run.params, sort_keys=True, default=str),
        "export.parity_max_abs_diff": run.parity,
        **{f"eval.{k}": f"{float(v):.10g}" for k, v in result.metrics.items()},
    }
    bot = log_bot(run, client, play_spec)
    version = client.create_model_version(
        name, bot.model_uri, run_id=run.run_id, tags=tags, model_id=bot.model_id
    )
    return str(version.version)


# ---- lookups -----------------------------------------------------------------------------------
def split_ref(text: str) -> tuple[str, str | None, str | None]:
    """`NAME@ALIAS` | `NAME/VERSION` | `NAME` → (name, alias, version); default alias production."""
    if "@" in text:
        name, alias = text.split("@", 1)
        return name, alias or PRODUCTION, None
    if "/" in text:
        name, version = text.rsplit("/", 1)
        if not version.isdigit():
            raise ModelError(f"{text!r}: a version is a number (NAME/3)")
        return name, None, version
    return text, PRODUCTION, None


def _model(client: Any, name: str) -> Any:
    from mlflow.exceptions import MlflowException

    try:
        return client.get_registered_model(name)
    except MlflowException as error:
        if not _missing(error):
            raise
    known = sorted(m.name for m in client.search_registered_models())
    raise ModelError(
        f"no registered model {name!r}; known: {', '.join(known) if known else 'none yet'}"
    )


def resolve(name: str, alias: str | None = None, version: str | None = None, client=None) -> Any:
    """The ModelVersion an alias or a number names; ModelError naming what exists otherwise."""
    from mlflow.exceptions import MlflowException

    client = client or _client()
    model = _model(client, name)
    if version is None:
        alias = alias or PRODUCTION
        if alias not in model.aliases:
            have = ", ".join(f"@{a}" for a in sorted(model.aliases)) or "none"
            raise ModelError(f"{name} has no alias @{alias} (aliases: {have})")
        version = str(model.aliases[alias])
    try:
        return client.get_model_version(name, str(version))
    except MlflowException as error:
        if not _missing(error):
            raise
        raise ModelError(f"{name} has no version {version}") from None


def _versions(client: Any, name: str) -> list[Any]:
    found = client.search_model_versions(f"name='{name}'")
    return sorted(found, key=lambda v: int(v.version))


def cache_root() -> Path:
    return Path(os.environ.get("GRIDBOTS_MODEL_CACHE") or Path.home() / ".cache/gridbots/models")


def download(version: Any) -> tuple[Path, str]:
    """(artifact file, kind) of a version, fetched once into the cache (raw files only)."""
    import mlflow

    key = f"{tracking_uri()}|{version.name}|{version.version}|{version.source}"
    folder = (
        cache_root()
        / version.name
        / f"{version.version}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    )
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".download-", dir=folder.parent))
        try:
            mlflow.artifacts.download_artifacts(
                artifact_uri=f"models:/{version.name}/{version.version}", dst_path=str(staging)
            )
            os.replace(staging, folder)
        except OSError:
            if not folder.is_dir():  # another process won the rename: theirs is as good
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return artifact_file(folder, version)


def artifact_file(folder: Path, version: Any) -> tuple[Path, str]:
    """The model file inside a downloaded version (a pyfunc bot's network, or the files of a
    version registered before bots were; never a pickle: those are not looked at)."""
    kind = (version.tags or {}).get("artifact.kind")
    named = (version.tags or {}).get("artifact.file")
    network = folder / "artifacts" / "network"  # a pyfunc bot's: never its code's files
    folder = network if network.is_dir() else folder
    if kind in ARTIFACT_KINDS and named:
        exact = sorted(p for p in folder.rglob(named) if p.is_file())
        if exact:
            return exact[0], kind
    wanted = {kind: ARTIFACT_KINDS[kind]} if kind in ARTIFACT_KINDS else ARTIFACT_KINDS
    for kind_name, suffix in wanted.items():
        files = sorted(p for p in folder.rglob(f"*{suffix}") if p.is_file())
        if files:
            return files[0], kind_name
    raise ModelError(
        f"{version.name}/{version.version} holds no model file "
        f"({', '.join(ARTIFACT_KINDS.values())})"
    )


# ---- listing -----------------------------------------------------------------------------------
def describe(name: str, client: Any = None) -> dict[str, Any]:
    """A registered model with its aliases and every version's tags (the evidence)."""
    client = client or _client()
    model = _model(client, name)
    by_version: dict[str, list[str]] = {}
    for alias, number in model.aliases.items():
        by_version.setdefault(str(number), []).append(alias)
    return {
        "name": model.name,
        "tags": dict(model.tags or {}),
        "aliases": {a: str(v) for a, v in model.aliases.items()},
        "versions": [
            {
                "version": str(v.version),
                "aliases": sorted(by_version.get(str(v.version), [])),
                "run_id": v.run_id,
                "source": v.source,
                "created": time.strftime(
                    "%Y-%m-%d %H:%M:%S", time.localtime(v.creation_timestamp / 1000)
                ),
                "tags": dict(v.tags or {}),
            }
            for v in _versions(client, name)
        ],
    }


def list_models(client: Any = None) -> list[dict[str, Any]]:
    client = client or _client()
    names = sorted(m.name for m in client.search_registered_models())
    return [describe(name, client) for name in names]


def production_summary(model: dict[str, Any]) -> dict[str, Any] | None:
    """A described model's @production version, its promotion evidence and the floor that ranks
    it among its game's production bots (`strength`), or None."""
    version = model["aliases"].get(PRODUCTION)
    if version is None:
        return None
    tags = next((v["tags"] for v in model["versions"] if v["version"] == version), {})
    low, high = tag_interval(tags.get("promotion.interval", ""))
    return {
        "spec": f"registry:{model['name']}@{PRODUCTION}",
        "name": model["name"],
        "version": version,
        "score": tag_number(tags.get("promotion.score")),
        "low": low,
        "high": high,
        "games": tags.get("promotion.games", ""),
        "opponent": tags.get("promotion.opponent", ""),
        "dataset": tags.get("dataset.sha256", ""),
        "card": _card_entry(tags),
        **strength(model, version),
    }


def _card_entry(tags: dict[str, str]) -> str | None:
    """`GAME/NAME` of the zoo entry a version was imported from, else None."""
    try:
        source = json.loads(tags.get("bundle.source", ""))
    except ValueError:
        return None
    return str(source["entry"]) if source.get("from") == "zoo" and "entry" in source else None


def card_floor(tags: dict[str, str]) -> tuple[float, str] | None:
    """(the highest lower 95% bound among a version's card evidence, that figure), or None."""
    best = None
    for key, text in tags.items():
        if not key.startswith("evidence."):
            continue
        try:
            item = json.loads(text)
            low = float(item["interval"][0])
        except (ValueError, KeyError, TypeError, IndexError):
            continue
        figure = f"{item.get('figure', key)} (opponent: {item.get('opponent', 'not recorded')})"
        if best is None or low > best[0]:
            best = (low, figure)
    return best


def strength(model: dict[str, Any], version: str) -> dict[str, Any]:
    """The evidence that ranks a production version among its game's (DESIGN.md "The zoo and
    registry bundles"): `rests_on_card` when the version is a zoo bot (its card's figures were
    measured against named, strong opponents) or won the gate over one, directly or through
    the versions it replaced; `floor`, the lower 95% bound it stands on (its card's highest for
    a zoo bot, its promotion score's otherwise) and `floor_evidence`, what that bound measured."""
    by_version = {v["version"]: v["tags"] for v in model["versions"]}
    tags = by_version.get(version, {})
    own = card_floor(tags) if tags.get("card.sha256") else None
    low, _ = tag_interval(tags.get("promotion.interval", ""))
    if own is not None:
        floor, evidence = own
    elif low is not None:
        floor = low
        evidence = f"promotion gate against {tags.get('promotion.opponent') or 'the baseline'}"
    else:
        floor, evidence = None, "none recorded"
    rests, seen, current = False, set(), version
    while current in by_version and current not in seen:
        seen.add(current)
        current_tags = by_version[current]
        if current_tags.get("card.sha256"):
            rests = True
            break
        opponent = current_tags.get("promotion.opponent", "")
        if current_tags.get("promotion.decision") != "promoted":
            break
        if current_tags.get("promotion.zoo.result") == "cleared":  # it beat a zoo bot itself
            rests = True
            break
        if not opponent.startswith(f"registry:{model['name']}/"):
            break
        current = opponent.rsplit("/", 1)[1]
    return {"rests_on_card": rests, "floor": floor, "floor_evidence": evidence}


def production_bots(game: str) -> list[dict[str, Any]]:
    """The game's models with a @production version, the strongest evidence first: a bot that
    rests on a zoo card before one whose gate evidence is only against the baseline's chain,
    then the higher floor (`strength`), the name last. Empty where no registry exists yet: a
    SQLite store that is not there is not created."""
    uri = tracking_uri()
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file():
        return []
    name = game.split(":", 1)[0]
    found = [
        summary
        for model in list_models()
        if model["name"].startswith(f"{name}-") and (summary := production_summary(model))
    ]
    return sorted(found, key=rank_key)


def rank_key(bot: dict[str, Any]) -> tuple[bool, float, str]:
    """Sort key of a production summary: strongest evidence first (see production_bots)."""
    return (not bot["rests_on_card"], -(bot["floor"] or 0.0), bot["name"])


def tag_number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def tag_interval(text: str) -> tuple[float | None, float | None]:
    """`[0.4012, 0.8123]` → (0.4012, 0.8123); (None, None) when absent or unreadable."""
    parts = text.strip("[] ").split(",")
    if len(parts) != 2:
        return None, None
    return tag_number(parts[0].strip()), tag_number(parts[1].strip())


# ---- promotion ---------------------------------------------------------------------------------
@dataclass
class Decision:
    name: str
    version: str
    opponent: str
    promoted: bool
    score: float
    low: float
    high: float
    games: int
    wins: int
    draws: int
    losses: int
    previous: str | None  # the production version before the decision
    zoo: dict[str, Any] | None = None  # the match against the game's zoo bot, where one was played

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: what `promotion.zoo.result` says of the match against the zoo bot
ZOO_CLEARED, ZOO_REFUSED = "cleared", "refused"


def zoo_bot(client: Any, game: Any, name: str, version: str, previous: str | None) -> str | None:
    """`registry:NAME/VERSION` of the zoo bot a candidate of `game` also faces at the gate: among
    the game's registered versions imported from the zoo (a card, `bundle.source` from the zoo),
    recorded for exactly this game spec and never refused at the gate, a production version
    first, then the highest card floor, then the newest. None where the game has none, or where
    it is the candidate itself or the production version the candidate faces already (a zoo
    entry's own name)."""
    from engine import parse_game_spec
    from engine.protocol import GameError

    best: tuple[bool, float, int, str] | None = None
    for model in client.search_registered_models():
        if not model.name.startswith(f"{game.name}-"):
            continue
        production = str(model.aliases.get(PRODUCTION, ""))
        for found in _versions(client, model.name):
            tags = found.tags or {}
            if not tags.get("card.sha256") or _card_entry(tags) is None:
                continue
            if tags.get("promotion.decision") == "rejected":  # a card the gate turned down
                continue
            try:
                if parse_game_spec(tags.get("game", "")).spec() != game.spec():
                    continue  # another variant of the game (a board size, a target)
            except GameError:  # a tag no game reads: not this game's bot
                continue
            if model.name == name and str(found.version) in (version, previous):
                continue
            floor = card_floor(tags)
            key = (str(found.version) == production, floor[0] if floor else -1.0,
                   int(found.version), f"registry:{model.name}/{found.version}")  # fmt: skip
            if best is None or key[:3] > best[:3]:
                best = key
    return best[3] if best is not None else None


class _Hopeless(Exception):
    """The zoo match can no longer clear the bound: its remaining games are not played."""


def needed_points(games: int) -> float | None:
    """The fewest points (draws half) out of `games` whose 95% Wilson lower bound is above 0.5,
    or None where even a clean sweep is not enough."""
    from engine.tournament import wilson_interval

    for halves in range(2 * games + 1):
        if wilson_interval(halves / 2 / games, games)[0] > 0.5:
            return halves / 2
    return None


def zoo_match(
    game: Any,
    spec: str,
    zoo: str,
    config: Any,
    make_seat: Callable[..., Any],
) -> dict[str, Any]:
    """The candidate `spec` against the zoo bot over the gate's own seeded games, stopped as soon
    as the points it has lost leave it short of `needed_points` even if it won every game left
    (those games could not change the refusal). Returns the played games' summary with
    `result` (cleared or refused) and `planned` (the gate's game count)."""
    from engine.tournament import play_pairing, summarize_pairing

    needed = needed_points(config.games)
    rows: list[dict[str, Any]] = []

    def counted(row: dict[str, Any]) -> None:
        rows.append(row)
        lost = sum(1.0 - float(r["score_a"]) for r in rows)
        if needed is None or config.games - lost < needed:
            raise _Hopeless

    with contextlib.suppress(_Hopeless):
        play_pairing(game, spec, zoo, config, make_seat=make_seat, on_game=counted)
    summary = summarize_pairing(rows)
    cleared = len(rows) == config.games and summary["score_low"] > 0.5
    keys = ("games", "wins", "draws", "losses", "score", "score_low", "score_high")
    return {
        "opponent": zoo,
        **{k: summary[k] for k in keys},
        "planned": config.games,
        "result": ZOO_CLEARED if cleared else ZOO_REFUSED,
    }


def baseline_spec(path: Path = PARAMS_FILE) -> str:
    """promote.baseline from params.yaml when it says, else the guarded random player."""
    if path.is_file():
        import yaml

        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as error:
            raise ModelError(f"cannot read {path}: {error}") from None
        promote = data.get("promote") if isinstance(data, dict) else None
        if isinstance(promote, dict) and promote.get("baseline"):
            return str(promote["baseline"])
    return DEFAULT_BASELINE


def promote_if_better(
    name: str,
    version: str | None = None,
    games: int = DEFAULT_GAMES,
    baseline: str | None = None,
    seed: int = 0,
    make_seat: Callable[..., Any] | None = None,
    on_game: Callable[[dict[str, Any]], None] | None = None,
    client: Any = None,
) -> Decision:
    """Plays the gate and moves `production` only on a win; tags the candidate either way."""
    from agents import make
    from engine import parse_game_spec
    from engine.tournament import MatchConfig, play_pairing, summarize_pairing

    if games < 2:
        raise ModelError("the promotion gate needs at least 2 games (sides swapped)")
    client = client or _client()
    model = _model(client, name)
    versions = _versions(client, name)
    if not versions:
        raise ModelError(f"{name} has no versions to promote")
    candidate = resolve(name, version=version or versions[-1].version, client=client)
    previous = model.aliases.get(PRODUCTION)
    previous = str(previous) if previous is not None else None
    if previous == str(candidate.version):
        raise ModelError(f"{name}/{candidate.version} is already @{PRODUCTION}")
    opponent = f"registry:{name}/{previous}" if previous else (baseline or baseline_spec())
    game_spec = (candidate.tags or {}).get("game") or (model.tags or {}).get("gridbots.game")
    if not game_spec:
        raise ModelError(f"{name}/{candidate.version} has no game tag; cannot play it")
    game = parse_game_spec(game_spec)
    spec = f"registry:{name}/{candidate.version}"
    config = MatchConfig(games=games, seed=seed)
    rows = play_pairing(game, spec, opponent, config, make_seat=make_seat or make, on_game=on_game)
    summary = summarize_pairing(rows)
    promoted = summary["score_low"] > 0.5
    zoo = None
    ref = zoo_bot(client, game, name, str(candidate.version), previous)
    if ref is not None and ref != opponent:  # every candidate meets it, recorded either way
        zoo = zoo_match(game, spec, ref, config, make_seat or make)
        promoted = promoted and zoo["result"] == ZOO_CLEARED
    decision = Decision(
        name,
        str(candidate.version),
        opponent,
        promoted,
        summary["score"],
        summary["score_low"],
        summary["score_high"],
        summary["games"],
        summary["wins"],
        summary["draws"],
        summary["losses"],
        previous,
        zoo,
    )
    tags = {
        "promotion.decision": "promoted" if promoted else "rejected",
        "promotion.score": f"{decision.score:.4f}",
        "promotion.interval": f"[{decision.low:.4f}, {decision.high:.4f}]",
        "promotion.games": str(decision.games),
        "promotion.wdl": f"{decision.wins}/{decision.draws}/{decision.losses}",
        "promotion.opponent": opponent,
        "promotion.seed": str(seed),
        "promotion.rule": "promoted iff the 95% Wilson lower bound of the score > 0.5, against "
        "production (or the baseline) and, where the game has a zoo bot, against it too",
        "promotion.time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    if zoo is not None:
        tags.update({
            "promotion.zoo.opponent": zoo["opponent"],
            "promotion.zoo.result": zoo["result"],
            "promotion.zoo.score": f"{zoo['score']:.4f}",
            "promotion.zoo.interval": f"[{zoo['score_low']:.4f}, {zoo['score_high']:.4f}]",
            "promotion.zoo.games": f"{zoo['games']} of {zoo['planned']}",
            "promotion.zoo.wdl": f"{zoo['wins']}/{zoo['draws']}/{zoo['losses']}",
        })  # fmt: skip
    for key, value in tags.items():
        client.set_model_version_tag(name, decision.version, key, value)
    if promoted:
        client.set_registered_model_alias(name, PRODUCTION, decision.version)
        if previous:
            client.set_model_version_tag(name, previous, "promotion.replaced_by", decision.version)
    return decision
