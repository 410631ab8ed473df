"""Registry bundles: a bot's files, card and evidence in one folder that moves between registries.

`export` writes a bundle from a registry version (`NAME@ALIAS`, `NAME/VERSION`) or a zoo entry
(`zoo:GAME/NAME` or its folder); `import_bundle` checks it and registers it as a new version.

A bundle folder holds `bundle.json` (the manifest) and the files it lists with their sha256:
the model file, `card.json` + `card.md` (models.zoo's schema) and any evidence files. An import
checks everything before it touches the registry: the manifest, every listed file's hash and
size, no file unlisted, every file a portable format by extension and content (models.portable:
never a pickle), the card, and the model's kind. Only then does it open one MLflow run that logs
the model and the bundle's files, register it through `models.tracking.register_trained` (the one
registration path), and tag the version with the bundle's provenance and evidence. It never
moves `production`, except with `production=True` on a name that has no production version yet.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models import zoo
from models.base import ModelError
from models.portable import check_file, read_json, sha256

MANIFEST = "bundle.json"
SCHEMA = 1
MANIFEST_KEYS = ("schema", "game", "name", "model", "artifact_kind", "spec", "source", "files")
TAG_LIMIT = 4000  # characters kept of one tag value (MLflow caps tag values)


@dataclass(frozen=True)
class Checked:
    """A bundle that passed every check: what registering it needs."""

    folder: Path
    manifest: dict[str, Any]
    card: zoo.Card
    digest: str  # sha256 of bundle.json itself


# ---- export ------------------------------------------------------------------------------------
def export(reference: str, out: Path) -> Path:
    """Writes the bundle of `reference` to `out` (a new or empty folder); returns `out`."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ModelError(f"{out} exists and is not an empty folder; name a new one")
    source = zoo.locate(reference)
    from_zoo = reference.startswith("zoo:") or (source / zoo.CARD_JSON).is_file()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        if from_zoo:
            manifest = _stage_zoo(source, staging)
        else:
            manifest = _stage_registry(reference, staging)
        _write_manifest(staging, manifest)
        check(staging)  # what an import will check, before anyone receives it
        if out.exists():
            out.rmdir()
        staging.replace(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _stage_zoo(folder: Path, staging: Path) -> dict[str, Any]:
    card = zoo.load(folder)
    for entry in card.data["files"]:
        target = staging / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / entry["path"], target)
    for name in (zoo.CARD_JSON, zoo.CARD_MD):
        if (folder / name).is_file():
            shutil.copyfile(folder / name, staging / name)
    return {
        "game": card.game,
        "name": f"{card.game.split(':', 1)[0]}-{card.name}",
        "model": card.data["model"],
        "artifact_kind": card.artifact_kind(),
        "spec": card.data["spec"],
        "source": {"from": "zoo", "entry": f"{card.game}/{card.name}", "title": card.data["title"]},
    }


def _stage_registry(reference: str, staging: Path) -> dict[str, Any]:
    from models.registry import download, resolve, split_ref

    name, alias, version = split_ref(reference)
    found = resolve(name, alias=alias, version=version)
    path, kind = download(found)
    tags = dict(found.tags or {})
    imported = _imported_card(found.run_id, staging)
    model_name = imported["model"] if imported else path.name
    shutil.copyfile(path, staging / model_name)
    extras = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".")]
    for extra in extras:  # sidecars such as model.crfsuite.json travel with their model
        shutil.copyfile(extra, staging / f"{model_name}{extra.name[len(path.name) :]}")
    if imported:
        card = imported
        recorded = {f["path"]: f["sha256"] for f in card["files"]}
        if recorded.get(model_name) != sha256(staging / model_name):
            raise ModelError(f"{name}/{found.version}: its file differs from its card's hash")
    else:
        card = _card_from_tags(name, found, tags, kind, model_name, staging, extras)
        zoo.write_card(staging, card, "<bundle folder>")
    return {
        "game": tags.get("game") or card["game"],
        "name": name,
        "model": model_name,
        "artifact_kind": kind,
        "spec": card["spec"],
        "source": {
            "from": "registry",
            "name": name,
            "version": str(found.version),
            "run_id": found.run_id,
            "tags": tags,
        },
    }


def _imported_card(run_id: str | None, staging: Path) -> dict[str, Any] | None:
    """The card and evidence an imported version's run kept under `bundle/`, copied into
    `staging` (model files left out: the registered one is fetched); None otherwise."""
    if not run_id:
        return None
    import mlflow

    from models.mlflow_store import client as tracking_client

    client = tracking_client()
    names = {a.path for a in client.list_artifacts(run_id, "bundle")}
    if f"bundle/{zoo.CARD_JSON}" not in names:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        local = Path(
            mlflow.artifacts.download_artifacts(
                run_id=run_id, artifact_path="bundle", dst_path=scratch
            )
        )
        card = zoo.read(local).data
        for entry in card["files"]:
            if entry["path"] != card["model"] and (local / entry["path"]).is_file():
                (staging / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(local / entry["path"], staging / entry["path"])
        for name in (zoo.CARD_JSON, zoo.CARD_MD):
            if (local / name).is_file():
                shutil.copyfile(local / name, staging / name)
    return card


def _card_from_tags(
    name: str,
    version: Any,
    tags: dict[str, str],
    kind: str,
    model_file: str,
    staging: Path,
    extras: list[Path],
) -> dict[str, Any]:
    """A card for a version trained in this registry: its tags are its evidence."""
    from models.play_spec import version_spec

    game = tags.get("game") or name.rsplit("-", 1)[0]
    spec = version_spec(kind, tags).replace("{path}", "{dir}/" + model_file)
    (staging / "evidence").mkdir()
    (staging / "evidence/registry-version.json").write_text(
        json.dumps(
            {"name": name, "version": str(version.version), "run_id": version.run_id, "tags": tags},
            indent=2,
        )
        + "\n"
    )
    evidence = []
    if tags.get("promotion.score"):
        games, opponent = tags.get("promotion.games", ""), tags.get("promotion.opponent", "")
        evidence.append(
            {
                "figure": f"promotion gate score against {opponent}",
                "value": float(tags["promotion.score"]),
                "interval": tags.get("promotion.interval", "not recorded"),
                "wins/draws/losses": tags.get("promotion.wdl", "not recorded"),
                "opponent": opponent,
                "games": int(games) if games.isdigit() else games,
                "seeded_openings": f"yes, scenario seeds from {tags.get('promotion.seed', '0')}",
                "sides_swapped": "yes, each scenario twice",
                "decision": tags.get("promotion.decision", "not recorded"),
                "status": "recorded",
                "command": f'gridbots match {game} "{spec}" "{opponent}" --games {games} '
                f"--seed {tags.get('promotion.seed', '0')}",
            }
        )
    held_out = {k[len("eval.") :]: v for k, v in tags.items() if k.startswith("eval.")}
    if held_out:
        evidence.append(
            {
                "figure": "held-out metrics at training",
                "value": held_out,
                "opponent": "none (the training run's held-out split)",
                "status": "recorded",
                "command": f"not re-measurable from the bundle: training run {version.run_id}",
            }
        )
    files = [zoo.file_entry(staging, model_file, f"{kind} model")]
    files += [
        zoo.file_entry(staging, f"{model_file}{e.name[len(Path(model_file).name) :]}", "sidecar")
        for e in extras
    ]
    files.append(zoo.file_entry(staging, "evidence/registry-version.json", "evidence: tags"))
    return {
        "schema": zoo.SCHEMA,
        "game": game,
        "name": tags.get("family") or name.split("-", 1)[-1],
        "title": f"{name} version {version.version}",
        "spec": spec,
        "model": model_file,
        "what": {
            "family": tags.get("family", "not recorded"),
            "kind": kind,
            "encoding": tags.get("encoding", "not recorded"),
        },
        "made": {
            "mlflow_run_id": version.run_id or "not recorded",
            "params": tags.get("params", "not recorded"),
            "dataset.sha256": tags.get("dataset.sha256", "not recorded"),
            "export.parity_max_abs_diff": tags.get("export.parity_max_abs_diff", "not recorded"),
            **_run_lineage(version.run_id),
        },
        "files": files,
        "evidence": evidence,
    }


def _run_lineage(run_id: str | None) -> dict[str, str]:
    """Commit, dvc.lock hash (the tags every stage's run carries), training hours and host of
    a version's run; "not recorded" where the run does not say."""
    from models.mlflow_store import client as tracking_client

    found = {"commit": "not recorded", "dvc_lock": "not recorded", "training_hours": "not recorded"}
    if not run_id:
        return found
    run = tracking_client().get_run(run_id)
    tags = run.data.tags
    found["commit"] = (
        tags.get("git.commit") or tags.get("mlflow.source.git.commit") or found["commit"]
    )
    found["dvc_lock"] = tags.get("dvc.lock_sha256", found["dvc_lock"])
    if run.info.end_time and run.info.start_time:
        found["training_hours"] = f"{(run.info.end_time - run.info.start_time) / 3.6e6:.3g}"
    found["machine"] = tags.get("gridbots.worker", "not recorded")
    return found


def _write_manifest(staging: Path, manifest: dict[str, Any]) -> None:
    listed = sorted(
        p.relative_to(staging).as_posix()
        for p in staging.rglob("*")
        if p.is_file() and p.name != MANIFEST
    )
    manifest = {
        "schema": SCHEMA,
        **manifest,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": [
            {"path": rel, "sha256": sha256(staging / rel), "bytes": (staging / rel).stat().st_size}
            for rel in listed
        ],
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


# ---- import ------------------------------------------------------------------------------------
def check(folder: Path) -> Checked:
    """Every check of an import, none of which touches a registry; ModelError on the first
    problem (one line)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelError(f"{folder}: not a bundle folder")
    path = folder / MANIFEST
    if not path.is_file():
        raise ModelError(f"{folder}: no {MANIFEST}; not a bundle (gridbots bots export writes one)")
    manifest = read_json(path)
    if not isinstance(manifest, dict):
        raise ModelError(f"{path}: a manifest is a JSON object")
    if gaps := [k for k in MANIFEST_KEYS if k not in manifest]:
        raise ModelError(f"{path}: manifest lacks {', '.join(gaps)}")
    if manifest["schema"] != SCHEMA:
        raise ModelError(f"{path}: bundle schema {manifest['schema']!r}; this gridbots reads 1")
    files = manifest["files"]
    if not isinstance(files, list) or not all(isinstance(f, dict) and "path" in f for f in files):
        raise ModelError(f"{path}: files is a list of {{path, sha256, bytes}}")
    listed = set()
    for entry in files:
        file = zoo._inside(folder, str(entry["path"]))
        if not file.is_file() or file.is_symlink():
            raise ModelError(f"{file}: listed in {MANIFEST} but missing")
        if file.stat().st_size != entry.get("bytes") or sha256(file) != entry.get("sha256"):
            raise ModelError(f"{file}: sha256 differs from the manifest's (altered or truncated)")
        check_file(file)  # portable formats only, by extension and by content
        listed.add(file.relative_to(folder).as_posix())
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}
    if unlisted := sorted(present - listed - {MANIFEST}):
        raise ModelError(f"{folder / unlisted[0]}: not listed in {MANIFEST}; refusing the bundle")
    if manifest["model"] not in listed:
        raise ModelError(f"{path}: the model {manifest['model']!r} is not among its files")
    kind = zoo.artifact_kind(folder / manifest["model"])
    if kind != manifest["artifact_kind"]:
        raise ModelError(f"{path}: artifact_kind {manifest['artifact_kind']!r}, the file is {kind}")
    card = zoo.read(folder)  # hashes already checked above, against the manifest
    zoo.verify(card)  # and against the card's own record
    if card.data["model"] != manifest["model"] or card.game != manifest["game"]:
        raise ModelError(f"{path}: the card and the manifest name different models or games")
    _check_game(card)
    return Checked(folder, manifest, card, sha256(path))


def _check_game(card: zoo.Card) -> None:
    """The card's game exists, the model is what its kind says (a `.json` model is a gridbots
    HMM: the registry plays it as one), and a model that names its game names the card's."""
    from engine import parse_game_spec
    from models.mlflow_store import read_onnx

    parse_game_spec(card.game)  # GameError naming the known games otherwise
    meta: dict[str, Any] = {}
    if card.artifact_kind() == "onnx":
        meta = {p.key: p.value for p in read_onnx(card.model).metadata_props}
    elif card.artifact_kind() == "hmm-json":
        document = read_json(card.model)
        if not isinstance(document, dict) or document.get("format") != "gridbots-hmm":
            raise ModelError(
                f"{card.model}: a .json model must be a gridbots HMM (format gridbots-hmm); "
                "other networks (a NEAT genome) travel as ONNX"
            )
        meta = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    trained = str(meta.get("gridbots.game") or "")
    if trained and trained != card.game:
        raise ModelError(f"{card.model}: a {trained} model, but the card says {card.game}")


def registry_name(checked: Checked, name: str | None) -> tuple[str, str]:
    """(registered name, family) for an import: `<game>-<family>`, as every registry name."""
    game = checked.card.game.split(":", 1)[0]
    wanted = name or checked.manifest["name"]
    prefix = f"{game}-"
    family = wanted[len(prefix) :] if wanted.startswith(prefix) else ""
    if not family or not all(c.isalnum() or c in "-_" for c in family):
        raise ModelError(f"{wanted!r}: a {game} bot's registry name is {game}-FAMILY")
    return wanted, family


def import_bundle(folder: Path, name: str | None = None, production: bool = False) -> dict:
    """Checks the bundle, then registers it as a new version; returns {name, version, ...}."""
    checked = check(folder)
    wanted, family = registry_name(checked, name)
    from models.mlflow_store import client as tracking_client
    from models.registry import PRODUCTION

    client = tracking_client()
    if production:
        from mlflow.exceptions import MlflowException

        try:
            aliases = client.get_registered_model(wanted).aliases
        except MlflowException:
            aliases = {}
        if PRODUCTION in aliases:
            raise ModelError(
                f"{wanted} already has @{PRODUCTION} (version {aliases[PRODUCTION]}); "
                "only the promotion gate replaces it: import without --production, then "
                f"gridbots bots promote {wanted} VERSION"
            )
    version = _register(checked, wanted, family, client)
    if production:
        client.set_registered_model_alias(wanted, PRODUCTION, version)
        note = "imported as the first production version (gridbots bots import --production)"
        client.set_model_version_tag(wanted, version, "promotion.decision", "imported")
        client.set_model_version_tag(wanted, version, "promotion.rule", note)
    return {
        "name": wanted,
        "version": version,
        "production": production,
        "bundle.sha256": checked.digest,
    }


def _register(checked: Checked, name: str, family: str, client: Any) -> str:
    """One run logs the model and the bundle; models.tracking.register_trained makes the
    version; tags follow."""
    import mlflow

    from models.base import TrainingResult
    from models.tracking import family_run, log_model, register_trained

    manifest, card = checked.manifest, checked.card
    source = manifest["source"]
    tags = source.get("tags", {}) if isinstance(source, dict) else {}
    params = _params(tags.get("params"), card.data["made"].get("params"))
    metrics = {}
    for key, value in tags.items():
        if key.startswith("eval.") and (number := _number(value)) is not None:
            metrics[key[len("eval.") :]] = number
    model = checked.folder / manifest["model"]
    with tempfile.TemporaryDirectory() as scratch:
        artifact = Path(scratch) / model.name  # log_artifact logs the file under its own name
        shutil.copyfile(model, artifact)
        for sidecar in checked.folder.glob(model.name + ".*"):
            shutil.copyfile(sidecar, Path(scratch) / sidecar.name)
        sidecars = [Path(scratch) / s.name for s in checked.folder.glob(model.name + ".*")]
        result = TrainingResult(
            family,
            card.game,
            tags.get("encoding", "n/a"),
            params,
            artifact,
            manifest["artifact_kind"],
            metrics,
            extra_artifacts=sidecars,
        )
        dataset = {
            "game": card.game,
            "dataset.path": tags.get("dataset.path", f"bundle {manifest['name']}"),
            "dataset.sha256": tags.get("dataset.sha256", "not recorded"),
            "dataset.manifest_hash": tags.get("dataset.manifest_hash", "not recorded"),
        }
        parity = tags.get("export.parity_max_abs_diff", "n/a")
        experiment = card.game.split(":", 1)[0]
        bundle_tag = {"gridbots.bundle.sha256": checked.digest}
        with family_run(experiment, f"import {name}", family, card.game, tags=bundle_tag):
            trained = log_model(result, dataset, parity)
            mlflow.log_artifacts(str(checked.folder), artifact_path="bundle")
        # the card names the model as {dir}/MODEL; the version holds it as {path}
        play_spec = str(manifest["spec"]).replace("{dir}/" + str(manifest["model"]), "{path}")
        version = register_trained(trained, play_spec, client)
    for key, value in _provenance_tags(checked).items():
        client.set_model_version_tag(name, version, key, value[:TAG_LIMIT])
    return version


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _params(from_tags: str | None, from_card: Any) -> dict[str, Any]:
    if from_tags:
        try:
            loaded = json.loads(from_tags)
            if isinstance(loaded, dict):
                return loaded
        except ValueError:
            pass
    return from_card if isinstance(from_card, dict) else {"made": str(from_card or "")}


#: what ranks a version (models.registry.card_floor) and names the figure: never dropped
EVIDENCE_KEYS = ("figure", "value", "interval", "opponent", "games", "spec", "floor", "floor_met")


def _evidence_tag(item: dict[str, Any]) -> str:
    """A card figure as a tag: whole where it fits, else without its longest notes (a list of
    every run, say), the card keeping them, so the figure and its interval stay readable
    (registered cut at TAG_LIMIT, the JSON would not parse and the figure would not count)."""
    kept = dict(item)
    text = json.dumps(kept, sort_keys=True, default=str)
    while len(text) > TAG_LIMIT:  # a cut JSON could not be read back
        notes = [k for k in kept if k not in EVIDENCE_KEYS and k != "abridged"]
        if not notes:
            break
        kept.pop(max(notes, key=lambda k: len(json.dumps(kept[k], default=str))))
        kept["abridged"] = "longer notes left out: the card holds the whole figure"
        text = json.dumps(kept, sort_keys=True, default=str)
    return text


def _provenance_tags(checked: Checked) -> dict[str, str]:
    """The bundle's provenance and evidence as version tags (`bundle.*`, `evidence.N`)."""
    manifest, card = checked.manifest, checked.card
    source = dict(manifest["source"]) if isinstance(manifest["source"], dict) else {}
    source.pop("tags", None)  # the source's own evidence tags are summarised below
    tags = {
        "bundle.sha256": checked.digest,
        "bundle.created": str(manifest.get("created", "")),
        "bundle.source": json.dumps(source, sort_keys=True, default=str),
        "bundle.spec": str(manifest["spec"]),
        "card.sha256": sha256(checked.folder / zoo.CARD_JSON),
        "card.title": str(card.data["title"]),
        "card.made": json.dumps(card.data["made"], sort_keys=True, default=str),
    }
    for i, item in enumerate(card.data["evidence"]):
        tags[f"evidence.{i}"] = _evidence_tag(item)
    old = manifest["source"].get("tags", {}) if isinstance(manifest["source"], dict) else {}
    for key, value in old.items():  # the source registry's gate and held-out evidence
        if key.startswith(("promotion.", "eval.")):
            tags[f"source.{key}"] = str(value)
    return tags


# ---- zoo entries into a registry -------------------------------------------------------------
def import_zoo_entry(folder: Path) -> dict[str, Any]:
    """Registers a zoo entry once, under `<game>-<entry>` (the name its family trains under):
    as the name's first production version when it has none, else as a version the gate may
    promote. An entry whose card.json is already a version (tag `card.sha256`) is left alone.
    Returns {entry, name, version, card.sha256, imported (False: already there)}."""
    from models.mlflow_store import client as tracking_client
    from models.registry import PRODUCTION

    card = zoo.load(Path(folder))
    card_hash = sha256(card.folder / zoo.CARD_JSON)
    name = f"{card.game.split(':', 1)[0]}-{card.name}"
    found = {"entry": f"{card.game}/{card.name}", "name": name, "card.sha256": card_hash}
    client = tracking_client()
    for version in client.search_model_versions(f"name='{name}'"):
        if (version.tags or {}).get("card.sha256") == card_hash:
            return {**found, "version": str(version.version), "imported": False}
    aliases = {m.name: m.aliases for m in client.search_registered_models(f"name='{name}'")}
    production = PRODUCTION not in aliases.get(name, {})
    with tempfile.TemporaryDirectory(prefix="gridbots-zoo-") as scratch:
        done = import_bundle(export(str(card.folder), Path(scratch) / "bundle"), name, production)
    return {**found, "version": str(done["version"]), "imported": True}
