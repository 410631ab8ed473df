"""The files a bot may travel as: an allow-list by extension, each checked by its content.

Zoo entries and registry bundles hold only these: ONNX graphs, JSON (an HMM's parameters, a
NEAT genome, a card, evidence), CRFsuite model files, and the card's text and pictures. A file
is refused when its extension is not listed or its bytes are not what the extension claims, so
a pickle renamed `model.onnx` or `model.json` is refused too; nothing here ever unpickles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.base import ModelError
from models.training_inputs import file_hash

#: extension → format name
FORMATS = {
    ".onnx": "onnx",
    ".json": "json",
    ".crfsuite": "crfsuite",
    ".md": "text",
    ".txt": "text",
    ".csv": "text",
    ".png": "png",
}
#: a pickle starts with the PROTO opcode (protocol 2+) or is a protocol-0/1 stream of opcodes
PICKLE_STARTS = (b"\x80", b"(dp", b"(lp", b"}q", b"]q", b"ccopy_reg", b"c__builtin__")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CRFSUITE_MAGIC = b"lCRF"


def sha256(path: Path) -> str:
    return file_hash(path)


def read_json(path: Path) -> Any:
    """A JSON file's content; ModelError (one line) when it is not UTF-8 JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ModelError(f"{path}: not valid JSON ({error})") from None


def check_file(path: Path) -> str:
    """The format of a portable file; ModelError naming the file and why it is refused."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        raise ModelError(f"{path}: not a regular file")
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ModelError(
            f"{path}: {path.suffix or 'no extension'} is not a portable format "
            f"(allowed: {', '.join(sorted(FORMATS))}; never a pickle)"
        )
    head = path.read_bytes()[:16]
    if head.startswith(PICKLE_STARTS):
        raise ModelError(f"{path}: looks like a pickle; bots travel as ONNX, JSON or CRFsuite")
    if fmt == "onnx":
        from models.mlflow_store import read_onnx

        read_onnx(path)  # ModelError "corrupt ONNX file …" otherwise
    elif fmt == "json":
        read_json(path)
    elif fmt == "crfsuite" and not head.startswith(CRFSUITE_MAGIC):
        raise ModelError(f"{path}: not a CRFsuite model file (no {CRFSUITE_MAGIC!r} header)")
    elif fmt == "png" and not head.startswith(PNG_MAGIC):
        raise ModelError(f"{path}: not a PNG picture")
    elif fmt == "text":
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ModelError(f"{path}: not UTF-8 text") from None
    return fmt
