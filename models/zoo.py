"""The bot zoo: `zoo/GAME/NAME/`, each entry a bot's portable files and its card.

A card is `card.json` (read by programs) beside `card.md` (read by people, `render_markdown`
writes it from the JSON so the two never disagree). Its keys (schema 1, DESIGN.md and
zoo/README.md): `schema`, `game`, `name`, `title`, `spec` (the agent spec that plays the bot,
`{dir}` standing for the entry's folder), `model` (the file a registry version holds), `what`,
`made`, `files` (path, sha256, bytes, format, role: every file of the entry but the card
itself) and `evidence` (every figure with its opponent, games or positions, seeded openings,
sides swapped, 95% interval and the command that re-measures it). `load` reads a card and
checks every file against its recorded hash, so a bot is never played from altered files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.base import ARTIFACT_KINDS, ModelError
from models.portable import check_file, read_json, sha256

SCHEMA = 1
CARD_JSON, CARD_MD = "card.json", "card.md"
REQUIRED = ("schema", "game", "name", "title", "spec", "model", "what", "made", "files", "evidence")
FILE_KEYS = ("path", "sha256", "bytes", "format", "role")
EVIDENCE_KEYS = ("figure", "status", "command")
#: where `zoo:GAME/NAME` looks: the working folder's zoo/, then the checkout's
CHECKOUT_ZOO = Path(__file__).resolve().parents[1] / "zoo"


@dataclass(frozen=True)
class Card:
    folder: Path
    data: dict[str, Any]

    @property
    def game(self) -> str:
        return str(self.data["game"])

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def model(self) -> Path:
        return self.folder / self.data["model"]

    def spec(self, **options: str) -> str:
        """The spec that plays the bot from this folder, options appended (`sims=32`)."""
        spec = resolve_spec(self.data["spec"], self.folder)
        return spec + "".join(f",{k}={v}" for k, v in options.items())

    def artifact_kind(self) -> str:
        """The registry artifact kind of the model file (onnx, hmm-json, crfsuite)."""
        return artifact_kind(self.model)


def resolve_spec(template: str, folder: Path) -> str:
    return template.replace("{dir}", str(folder))


def artifact_kind(path: Path) -> str:
    for kind, suffix in ARTIFACT_KINDS.items():
        if path.name.endswith(suffix):
            return kind
    raise ModelError(f"{path.name}: a registry holds {', '.join(ARTIFACT_KINDS.values())} files")


def _inside(folder: Path, relative: str) -> Path:
    """The file `relative` names inside `folder`; refuses absolute paths and `..`."""
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise ModelError(f"{relative!r}: a file of an entry is a relative path inside it")
    return folder / rel


def _require(data: dict[str, Any], keys: tuple[str, ...], what: str) -> None:
    if gaps := [k for k in keys if k not in data]:
        raise ModelError(f"{what} lacks {', '.join(gaps)}")


def validate(data: Any, where: str) -> dict[str, Any]:
    """The card's JSON when it has every key schema 1 asks for; ModelError naming the gap."""
    if not isinstance(data, dict):
        raise ModelError(f"{where}: a card is a JSON object")
    _require(data, REQUIRED, f"{where}: card")
    if data["schema"] != SCHEMA:
        raise ModelError(f"{where}: card schema {data['schema']!r}, this gridbots reads {SCHEMA}")
    if "{dir}" not in str(data["spec"]):
        raise ModelError(f"{where}: the card's spec names its files as {{dir}}/FILE")
    _rows(data, "files", FILE_KEYS, "path", where)
    if data["model"] not in {f["path"] for f in data["files"]}:
        raise ModelError(f"{where}: the card's model {data['model']!r} is not among its files")
    _rows(data, "evidence", EVIDENCE_KEYS, "figure", where)
    return data


def _rows(data: dict[str, Any], key: str, keys: tuple[str, ...], label: str, where: str) -> None:
    """`data[key]` is a list of objects, each with `keys`."""
    rows = data[key]
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ModelError(f"{where}: card {key} is a list of objects")
    for row in rows:
        _require(row, keys, f"{where}: card {key} {row.get(label)!r}")


def read(folder: Path) -> Card:
    """The card of an entry (or a bundle) without checking its files."""
    folder = Path(folder)
    path = folder / CARD_JSON
    if not path.is_file():
        raise ModelError(f"{folder}: no {CARD_JSON} (a zoo entry or a bundle holds one)")
    return Card(folder, validate(read_json(path), str(path)))


def verify(card: Card) -> None:
    """Every file the card lists is there, portable, and has its recorded hash and size; and
    the entry holds no file the card does not list (bundles add their manifest)."""
    listed = {Path(f["path"]).as_posix() for f in card.data["files"]}
    own = {CARD_JSON, CARD_MD, "bundle.json"}
    for path in sorted(p for p in card.folder.rglob("*") if not p.is_dir()):
        relative = path.relative_to(card.folder).as_posix()
        if relative not in listed and relative not in own:
            raise ModelError(f"{path}: not listed on the card (every file carries its hash)")
    for entry in card.data["files"]:
        path = _inside(card.folder, entry["path"])
        if not path.is_file():
            raise ModelError(f"{path}: listed on the card but missing")
        if path.stat().st_size != int(entry["bytes"]) or sha256(path) != entry["sha256"]:
            raise ModelError(f"{path}: sha256 differs from the card's (altered or truncated)")
        fmt = check_file(path)
        if fmt != entry["format"]:
            raise ModelError(f"{path}: the card says {entry['format']}, the file is {fmt}")


def load(folder: Path) -> Card:
    """A card whose files all match it: what plays a zoo bot."""
    card = read(folder)
    verify(card)
    return card


def locate(reference: str) -> Path:
    """`zoo:GAME/NAME` or a folder holding card.json → that folder."""
    if reference.startswith("zoo:"):
        tail = reference[len("zoo:") :]
        for root in (Path("zoo"), CHECKOUT_ZOO):
            if (root / tail / CARD_JSON).is_file():
                return root / tail
        raise ModelError(f"{reference}: no such zoo entry; known: {', '.join(names()) or 'none'}")
    return Path(reference)


def entries(root: Path = CHECKOUT_ZOO) -> list[Path]:
    """Every entry folder under a zoo root (GAME/NAME/card.json), sorted."""
    return sorted(p.parent for p in Path(root).glob(f"*/*/{CARD_JSON}"))


def names(root: Path = CHECKOUT_ZOO) -> list[str]:
    return [f"zoo:{p.parent.name}/{p.name}" for p in entries(root)]


def file_entry(folder: Path, relative: str, role: str) -> dict[str, Any]:
    """A card's `files` row for a file of the entry, measured now."""
    path = _inside(Path(folder), relative)
    return {
        "path": relative,
        "sha256": sha256(path),
        "bytes": path.stat().st_size,
        "format": check_file(path),
        "role": role,
    }


# ---- the human page ---------------------------------------------------------------------------
def _value(value: Any) -> str:
    if value is None or value == "":
        return "not recorded"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"[{_value(value[0])}, {_value(value[1])}]"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items())
    return str(value)


def render_markdown(data: dict[str, Any], shown_dir: str) -> str:
    """card.md from card.json; `{dir}` shown as `shown_dir` (the entry's repo-relative path)."""

    def show(text: str) -> str:
        return str(text).replace("{dir}", shown_dir)

    lines = [f"# {data['title']}", "", f"Game `{data['game']}`, entry `{data['name']}`.", ""]
    lines += ["## Play it", "", "```", show(data["spec"]), "```", ""]
    lines += ["## What it is", ""]
    lines += [f"- **{k}**: {show(_value(v))}" for k, v in data["what"].items()] + [""]
    lines += ["## How it was made", ""]
    lines += [f"- **{k}**: {show(_value(v))}" for k, v in data["made"].items()] + [""]
    lines += ["## Files", "", "| file | bytes | format | sha256 | role |", "|---|---:|---|---|---|"]
    lines += [
        f"| `{f['path']}` | {f['bytes']} | {f['format']} | `{f['sha256']}` | {f['role']} |"
        for f in data["files"]
    ]
    lines += ["", "## Evidence", ""]
    for item in data["evidence"]:
        lines.append(f"### {item['figure']}")
        lines.append("")
        for key, value in item.items():
            if key in ("figure", "command"):
                continue
            lines.append(f"- **{key}**: {show(_value(value))}")
        lines += ["", "Re-measure:", "", "```", show(item["command"]), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def write_card(folder: Path, data: dict[str, Any], shown_dir: str) -> None:
    """card.json and card.md of an entry, each written to a temporary name and renamed."""
    validate(data, str(Path(folder) / CARD_JSON))
    for name, text in (
        (CARD_JSON, json.dumps(data, indent=2) + "\n"),
        (CARD_MD, render_markdown(data, shown_dir)),
    ):
        staged = Path(folder) / f".{name}.tmp"
        staged.write_text(text, encoding="utf-8")
        staged.replace(Path(folder) / name)


def render(folder: Path) -> Path:
    """Rewrites an entry's card.md from its card.json (after checking both and the files)."""
    card = load(folder)
    write_card(card.folder, card.data, str(card.folder))
    return card.folder / CARD_MD


def below_floor(card: Card) -> list[str]:
    """The figures whose floor the card says is not met (`floor_met: false`)."""
    return [e["figure"] for e in card.data["evidence"] if e.get("floor_met") is False]


def install(source: Path, zoo_root: Path = CHECKOUT_ZOO, allow_below_floor: bool = False) -> Path:
    """Copies a rebuilt entry (rebuild/zoo/GAME/NAME, issue 66 item 3) into `zoo_root` as
    GAME/NAME, replacing the entry there, once its files match its card and every floor holds
    (`allow_below_floor`: an entry the issue lets ship below its floor, territory's); card.md is
    rendered again with the entry's new folder. ModelError names what stops it."""
    import shutil
    import tempfile

    card = load(source)
    short = below_floor(card)
    if short and not allow_below_floor:
        raise ModelError(f"{source}: floor not met: {'; '.join(short)} (--below-floor installs it)")
    game = card.game.split(":", 1)[0]
    final = Path(zoo_root) / game / card.data["name"]
    final.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        shutil.copytree(card.folder, staged, dirs_exist_ok=True)
        write_card(staged, card.data, f"zoo/{game}/{card.data['name']}")
        load(staged)
        if final.exists():
            old = final.with_name(f".{final.name}.replaced")
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
            shutil.rmtree(old)
        staged.rename(final)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return final


def main(argv: list[str]) -> int:
    """`python -m models.zoo DIR …` checks each entry and rewrites its card.md from card.json;
    `python -m models.zoo --install DIR [--below-floor]` installs a rebuilt entry into zoo/.
    A bad entry: one line on stderr, exit 2."""
    import sys

    try:
        if argv[:1] == ["--install"]:
            folders = [a for a in argv[1:] if a != "--below-floor"]
            if len(folders) != 1:
                raise ModelError("usage: python -m models.zoo --install DIR [--below-floor]")
            print(install(Path(folders[0]), allow_below_floor="--below-floor" in argv))
            return 0
        for argument in argv:
            print(render(Path(argument)))
    except ModelError as problem:
        print(f"models.zoo: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # python -m models.zoo zoo/GAME/NAME …: card.md from card.json
    import sys

    sys.exit(main(sys.argv[1:]))
