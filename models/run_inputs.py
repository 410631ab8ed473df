"""What a run learned from, as MLflow dataset inputs, so the UI's Dataset column and each model
version's lineage name the data instead of a hash buried in the parameters.

A run that trains on an encoded file gets two kinds of input: the encoded file itself (context
`training`: name = file name, digest = its SHA-256, source = its path, schema = its arrays as
tensors) and each Parquet dataset folder it was encoded from (context `source`: digest = the
manifest's content hash, schema = the Arrow columns of the table the encoder read, profile =
technique, rows and whether DIR/validation/result.json passed). A run that learns by playing
logs what it played (context `self-play`, `opponent` or `evolution`): the setting's JSON, hashed.

MLflow keeps digests of at most 36 characters: a digest here is the first 32 hex digits of the
hash, and the whole hash is in the input's profile. Inputs go through the client, so a run that
another process created (a PlayerZero generation) gets them too; MLflow keeps one input per
dataset (name and digest) and run, so logging the same data again changes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

DIGEST = 32  # hex digits kept of a hash (MLflow: at most 36)


def _entity(
    name: str, full_hash: str, source_type: str, source: dict, schema: str | None, profile: dict
):
    from mlflow.entities import Dataset

    return Dataset(
        name=name[:500],
        digest=full_hash[:DIGEST],
        source_type=source_type,
        source=json.dumps(source),
        schema=schema,
        profile=json.dumps({"hash": full_hash, **profile}, default=str),
    )


def _input(dataset: Any, context: str, tags: dict[str, str] | None = None):
    from mlflow.entities import DatasetInput, InputTag

    pairs = {"mlflow.data.context": context, **(tags or {})}
    return DatasetInput(dataset, [InputTag(k, str(v)) for k, v in pairs.items()])


def _scalar_type(arrow_type: Any) -> Any:
    import pyarrow as pa
    from mlflow.types import DataType

    if pa.types.is_boolean(arrow_type):
        return DataType.boolean
    if pa.types.is_integer(arrow_type):
        return DataType.long if arrow_type.bit_width == 64 else DataType.integer
    if pa.types.is_floating(arrow_type):
        return DataType.double if arrow_type.bit_width == 64 else DataType.float
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return DataType.binary
    return DataType.string


def table_schema(table: str) -> str | None:
    """A dataset table's columns (features.schema) as MLflow's column schema JSON."""
    import pyarrow as pa
    from mlflow.types.schema import Array, ColSpec, Schema

    from features.schema import SCHEMAS

    if table not in SCHEMAS:
        return None
    columns = []
    for field in SCHEMAS[table]:
        kind = field.type
        nested = pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind)
        dtype = Array(_scalar_type(kind.value_type)) if nested else _scalar_type(kind)
        columns.append(ColSpec(dtype, field.name, required=not field.nullable))
    return json.dumps({"mlflow_colspec": Schema(columns).to_dict()})


def tensor_schema(meta: dict[str, Any]) -> str | None:
    """An encoded file's arrays (shapes and dtypes from its metadata) as tensor schema JSON."""
    import numpy as np
    from mlflow.data.schema import TensorDatasetSchema
    from mlflow.types import Schema, TensorSpec

    shapes, dtypes = meta.get("shapes") or {}, meta.get("dtypes") or {}
    specs = [
        TensorSpec(np.dtype(dtypes[key]), (-1, *shapes[key][1:]), key)
        for key in sorted(shapes)
        if key in dtypes
    ]
    return json.dumps(TensorDatasetSchema(Schema(specs)).to_dict()) if specs else None


def _validated(folder: Path, content_hash: str | None) -> str:
    """`passed` / `failed` as DIR/validation/result.json says, `not run`, or `changed` when the
    folder on disk no longer holds the rows the encoded file was made from."""
    from features.errors import DataError
    from features.store import read_manifest

    try:
        if content_hash and read_manifest(folder).get("content_hash") != content_hash:
            return "changed since encoding"
        result = json.loads((folder / "validation" / "result.json").read_text())
    except (OSError, ValueError, DataError):  # no manifest, no result: say so, never fail
        return "not run"
    return "passed" if result.get("success") else "failed"


def source_inputs(meta: dict[str, Any]) -> list[Any]:
    """The Parquet dataset folders an encoded file names (`A+B` for several), as inputs."""
    folders = str(meta.get("dataset") or "").split("+")
    hashes = str(meta.get("manifest_hash") or "").split("+")
    if len(hashes) != len(folders):
        hashes = [""] * len(folders)
    table = str(meta.get("table") or "")
    found = []
    for folder_text, recorded in zip(folders, hashes, strict=True):
        if not folder_text:
            continue
        folder = Path(folder_text)
        content_hash = recorded if recorded not in ("", "None") else None
        manifest: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            manifest = json.loads((folder / "manifest.json").read_text())
        profile = {
            "game": meta.get("game"),
            "technique": manifest.get("technique"),
            "table": table,
            "counts": manifest.get("counts"),
            # a caller that validated the folder itself says so (PlayerZero's generations)
            "validation": meta.get("validation") or _validated(folder, content_hash),
            "content_hash_recorded": content_hash is not None,
        }
        # an encoding that recorded no content hash (older files): the folder's path stands in
        full = content_hash or hashlib.sha256(str(folder.resolve()).encode()).hexdigest()
        source = {"uri": str(folder.resolve())}
        dataset = _entity(folder.name, full, "local", source, table_schema(table), profile)
        found.append(_input(dataset, "source", {"gridbots.validation": profile["validation"]}))
    return found


def encoded_inputs(path: Path, meta: dict[str, Any], sha256: str) -> list[Any]:
    """An encoded file (context `training`) and the validated dataset folders it came from."""
    profile = {
        "game": meta.get("game"),
        "encoding": meta.get("encoding"),
        "rows": meta.get("rows"),
        "manifest_hash": meta.get("manifest_hash"),
        "options": meta.get("options"),
    }
    dataset = _entity(
        Path(path).name,
        sha256,
        "local",
        {"uri": str(Path(path).resolve())},
        tensor_schema(meta),
        profile,
    )
    encoding = {"gridbots.encoding": str(meta.get("encoding", "?"))}
    return [_input(dataset, "training", encoding), *source_inputs(meta)]


def played_input(name: str, context: str, setting: dict[str, Any]) -> Any:
    """What a run that learned by playing played: `setting` (game, opponent, games, seeds …)
    is its whole description; its digest is the SHA-256 of that JSON."""
    text = json.dumps(setting, sort_keys=True, default=str)
    full = hashlib.sha256(text.encode()).hexdigest()
    tags = {k: str(v) for k, v in setting.items() if isinstance(v, str | int | float)}
    dataset = _entity(name, full, "code", {"tags": tags}, None, setting)
    return _input(dataset, context)


def read_encoded_meta(path: Path) -> dict[str, Any]:
    """An encoded file's metadata without reading its arrays (an `.npz` whose metadata lists no
    shapes gets them from the arrays' headers)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return json.loads(pq.read_schema(path).metadata[b"gridbots"])
    import zipfile

    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
    if "shapes" in meta:
        return meta
    shapes, dtypes = {}, {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            key = member.removesuffix(".npy")
            if key == "meta":
                continue
            with archive.open(member) as handle:
                major, _ = np.lib.format.read_magic(handle)
                read = np.lib.format.read_array_header_1_0
                if major > 1:
                    read = np.lib.format.read_array_header_2_0
                shape, _, dtype = read(handle)
            shapes[key], dtypes[key] = list(shape), str(dtype)
    return {**meta, "shapes": shapes, "dtypes": dtypes}


def log_inputs(mlflow_client: Any, run_id: str, inputs: list[Any]) -> None:
    """Logs dataset inputs into a run (active or not)."""
    if inputs:
        mlflow_client.log_inputs(run_id, datasets=inputs)


def log_encoded_file(
    mlflow_client: Any, run_id: str, path: Path, defaults: dict[str, Any] | None = None
) -> None:
    """A run trained on an encoded file: the file and its source folders as the run's inputs.
    `defaults` fills what the file's metadata leaves out (`dataset`: its source folder)."""
    from models.training_inputs import file_hash

    path = Path(path)
    meta = {**(defaults or {}), **read_encoded_meta(path)}
    log_inputs(mlflow_client, run_id, encoded_inputs(path, meta, file_hash(path)))
