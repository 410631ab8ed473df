"""`gridbots new-game`: writes a working game module and its test file from a template.

Each template (engine/templates/<kind>.py.tmpl) is a complete tiny game that passes the protocol
checks, so a user starts from green tests and edits the parts marked `# RULES:`. The test
template holds one section per kind between `#@ <kind>` lines; only the chosen one is kept.
Placeholders are `{{name}}` (module and registry name) and `{{Class}}` (the Game subclass).
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from engine.protocol import KINDS, GameError
from engine.registry import game_names

TEMPLATES = Path(__file__).resolve().parent / "templates"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
SECTION = re.compile(r"^#@ (\w+)\n", re.MULTILINE)


def class_name(name: str) -> str:
    """`my_game` -> `MyGame`: the Game subclass the module defines."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def check_name(name: str, root: Path) -> None:
    """A new game's name must import as a module and clash with nothing already there."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise GameError(
            f"bad game name {name!r}: use lowercase letters, digits and underscores, "
            "starting with a letter (it becomes a Python module name)"
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise GameError(f"bad game name {name!r}: it is a Python keyword")
    if name in game_names():
        raise GameError(f"a game named {name!r} already exists")
    for path in _targets(name, root):
        if path.exists():
            raise GameError(f"{path} already exists; not overwriting it")


def _targets(name: str, root: Path) -> tuple[Path, Path]:
    return root / "engine" / "games" / f"{name}.py", root / "tests" / f"test_{name}.py"


def render_template(template: str, name: str, kind: str | None = None) -> str:
    """Substitutes the placeholders; with `kind`, keeps the common part and that kind's section."""
    if kind is not None:
        parts = SECTION.split(template)
        sections = dict(zip(parts[1::2], parts[2::2], strict=True))
        if kind not in sections:
            raise GameError(f"template has no section for kind {kind!r}")
        template = parts[0] + sections[kind]
    text = template.replace("{{name}}", name).replace("{{Class}}", class_name(name))
    if "{{" in text:
        raise GameError(f"template left a placeholder unfilled: {text[text.index('{{') :][:40]}")
    return text


def write_game(name: str, kind: str, root: Path) -> list[Path]:
    """Writes `root/engine/games/<name>.py` and `root/tests/test_<name>.py`; returns both paths.

    `root` is a checkout's root (the folder holding engine/), so the registry finds the new
    module on its next discovery. Nothing is written unless both files can be created.
    """
    if kind not in KINDS:
        raise GameError(f"bad kind {kind!r}; choose one of {', '.join(KINDS)}")
    root = Path(root)
    if not (root / "engine" / "games").is_dir():
        raise GameError(f"{root} has no engine/games folder: give the repository root")
    check_name(name, root)
    module_path, test_path = _targets(name, root)
    module_text = render_template((TEMPLATES / f"{kind}.py.tmpl").read_text(), name)
    test_text = render_template((TEMPLATES / "test.py.tmpl").read_text(), name, kind)
    test_path.parent.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        for path, text in ((module_path, module_text), (test_path, test_text)):
            with path.open("x", encoding="utf-8") as handle:  # "x": never overwrite
                handle.write(text)
            written.append(path)
    except OSError as error:
        for path in written:
            path.unlink()
        raise GameError(f"could not write {name}: {error}") from error
    return written
