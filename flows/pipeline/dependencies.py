"""The source files each DVC stage executes, derived from the code rather than kept by hand.

A stage's command `gridbots stage NAME …` runs the module flows/pipeline/stages/NAME.py (generation
also runs its technique's module); the files it executes are that module's import closure
within the repository's packages, found by reading the source (every `import`, at any depth
of the file, so lazy imports count too), plus modules named by string constants (agents.base's
built-in agent list) and every module of the packages a module lists in `DYNAMIC_IMPORTS`
(engine.registry discovers the games that way). tests/test_dvc_stages.py fails when dvc.yaml
misses one; `python -m flows.pipeline.dependencies` prints each stage's list for dvc.yaml.

dvc.yaml lists each distinct set of files once (a stage command's, a generated dataset's, a
training family's), as deps of the stamp stage `sources`, whose command (`--stamp KEY=MODULES…`)
writes `sources/KEY.json` per set: each file's sha256. Every other stage depends on its set's
stamp, and a `foreach` item names its own with one templated path
(`sources/train-${item.family}.json`): DVC templates a path, never a list. Editing models/lstm.py
reruns `sources`; the LSTM's stamp changes and reruns the LSTM trainings, the HMM's is written
alike and its trainings stay up to date. dvc.lock holds each file once, not once per stage.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "agents", "features", "models", "flows")
#: what runs a stage before its own module: the program's entry, the stage commands and the warm
#: host. Only their module-level imports count (recursively): their lazy ones send a stage to
#: its own module (the roots) or a command to the command line, which no stage loads
ENTRY = ("flows.entry", "flows.pipeline.commands", "flows.pipeline.host")
#: modules a string names (agents.base's built-in agents) that no stage loads: agents.make
#: imports an agent's module only when a spec names it, and no stage seats a person at a
#: terminal (`human`, agents/play); a real `import` of them still counts
NAMED_BUT_NOT_RUN = ("agents.play",)
#: what every stage's command runs before its flow (quiet libraries, checked params): lazy
#: imports and all
COMMON = ("flows.pipeline.settings",)
#: the table of training families (models.base.FAMILIES, module names as strings): a training
#: runs only its own family's module, which stage_roots names, so a closure that holds a
#: family's module follows none of the table's other strings
FAMILY_TABLE = ("models.base", "FAMILIES")
#: the stamp stage and the (ignored) folder it writes, one small JSON per source set
STAMPS = "sources"
#: what the stamp stage runs besides the files it hashes: this module, as `python -m`
STAMP_CODE = ("flows/__init__.py", "flows/pipeline/__init__.py", "flows/pipeline/dependencies.py")


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The file of a repository module (`agents.base` → agents/base.py), None for others."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_modules(package: str, root: Path) -> set[str]:
    folder = root.joinpath(*package.split("."))
    modules = {f"{package}.{p.stem}" for p in folder.glob("*.py") if not p.stem.startswith("_")}
    packages = {f"{package}.{p.parent.name}" for p in folder.glob("*/__init__.py")}
    return modules | packages | {package}


def _table(tree: ast.Module, name: str) -> ast.AST | None:
    """The value of the module-level assignment `name = …` in tree."""
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node.value
    return None


@cache
def family_modules(root: Path = ROOT) -> dict[str, str]:
    """models.base.FAMILIES (family → module), read from its source: importing models.base
    would start numba in the stamp command."""
    module, table = FAMILY_TABLE
    path = module_file(module, root)
    value = _table(ast.parse(path.read_text(), str(path)), table) if path else None
    return ast.literal_eval(value) if value is not None else {}


@cache
def direct_imports(
    name: str, root: Path = ROOT, module_level_only: bool = False, one_family: bool = False
) -> frozenset:
    """Repository modules `name` imports (anywhere in the file, unless module_level_only); with
    one_family, none that the family table names only by string."""
    path = module_file(name, root)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    if one_family and name == FAMILY_TABLE[0]:
        table = _table(tree, FAMILY_TABLE[1])
        skipped = {id(n) for n in ast.walk(table)} if table is not None else set()
        nodes = [n for n in nodes if id(n) not in skipped]
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}  # submodules
        elif not module_level_only and isinstance(node, ast.Constant):
            text = node.value
            if (
                isinstance(text, str)
                and re.fullmatch(r"[a-z_]+(\.[a-z_0-9]+)+", text)
                and not text.startswith(tuple(f"{m}." for m in NAMED_BUT_NOT_RUN))
            ):
                found.add(text)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "DYNAMIC_IMPORTS" for t in node.targets
        ):
            for package_name in ast.literal_eval(node.value):
                found |= _package_modules(package_name, root)
    parents = set()
    for module in found:  # importing a.b.c runs a/__init__ and a/b/__init__ first
        pieces = module.split(".")
        parents |= {".".join(pieces[:i]) for i in range(1, len(pieces))}
    return frozenset(m for m in found | parents if module_file(m, root) is not None)


def closure(roots: list[str], root: Path = ROOT) -> set[Path]:
    """Files of every repository module the roots execute, with what runs every stage. A root
    that is a family's module (a training) leaves out the other families."""
    one_family = bool(set(roots) & set(family_modules(root).values()))
    seen: set[str] = set()
    todo = [*roots, *COMMON]
    todo += [m.rsplit(".", i)[0] for m in todo for i in range(1, m.count(".") + 1)]  # packages
    while todo:
        name = todo.pop()
        if name in seen or module_file(name, root) is None:
            continue
        seen.add(name)
        todo.extend(direct_imports(name, root, one_family=one_family))
    todo = list(ENTRY)  # their module-level imports, recursively
    while todo:
        name = todo.pop()
        if name in seen or module_file(name, root) is None:
            continue
        seen.add(name)
        todo.extend(direct_imports(name, root, module_level_only=True))
    return {module_file(name, root) for name in seen} - {None}


def stage_roots(stage: str, technique: str | None = None, family: str | None = None) -> list[str]:
    """`generate-connect4@battle` → the modules its command runs (a dataset named otherwise
    than its technique, Sokoban's `planner`, passes the technique its params name; a training
    its model's family)."""
    kind, _, key = stage.partition("@")
    kind = kind.split("-")[0]
    roots = [f"flows.pipeline.stages.{kind}"]
    if kind == "generate":
        roots.append(f"features.generate.{technique or key}")
    if kind == "train" and family:
        roots.append(family_modules()[family])
    return roots


#: the stamp a `foreach` item depends on, where its items run different files: one templated
#: path (DVC templates a path, never a list of deps)
TEMPLATES = {"generate": "generate-${key}", "train": "train-${item.family}"}


def source_set(name: str, stage: dict[str, Any]) -> tuple[str, list[str]]:
    """A stage of dvc.yaml (as `stages` gives it) → the name of its source set, KEY of its stamp
    sources/KEY.json, and the modules its command runs; for the stamp stage, every set's."""
    if is_stamp(name):
        return STAMPS, sorted({m for ms in stamp_sets(str(stage["cmd"])).values() for m in ms})
    roots = stage_roots(name, stage.get("technique"), stage.get("family"))
    kind, _, item = name.partition("@")
    kind = kind.split("-")[0]
    if kind == "generate" or (kind == "train" and stage.get("family")):
        kind = _render(TEMPLATES[kind], {"key": item, "item": {"family": stage.get("family")}})
    return kind, roots


def stamp_path(key: str) -> str:
    return f"{STAMPS}/{key}.json"


def is_stamp(name: str) -> bool:
    """The stamp stage of dvc.yaml, not one of the pipeline's."""
    return name == STAMPS


def stamp_sets(cmd: str) -> dict[str, list[str]]:
    """The stamp stage's command → each stamp's KEY and the modules whose files it hashes."""
    argv = cmd.split()
    pairs = argv[argv.index("--stamp") + 1 :] if "--stamp" in argv else []
    return {key: mods.split(",") for key, _, mods in (a.partition("=") for a in pairs)}


def _render(text: Any, variables: dict[str, Any]) -> Any:
    """DVC's ${...} interpolation for the keys dvc.yaml uses."""
    if isinstance(text, str):

        def value_of(name: str) -> Any:
            value: Any = variables
            for part in name.split("."):
                value = value[part]
            return value

        whole = re.fullmatch(r"\$\{([^}]+)\}", text)
        if whole:  # `foreach: ${connect4.datasets}`: the value itself
            return value_of(whole.group(1))
        return re.sub(r"\$\{([^}]+)\}", lambda m: str(value_of(m.group(1))), text)
    if isinstance(text, list):
        return [_render(t, variables) for t in text]
    if isinstance(text, dict):
        return {_render(k, variables): _render(v, variables) for k, v in text.items()}
    return text


def stages(root: Path = ROOT, params_file: str = "params.yaml") -> dict[str, dict[str, Any]]:
    """Every stage of dvc.yaml with foreach expanded: name → {cmd, deps, outs (paths), params
    (the dotted keys it reads from the profile)}."""
    params = yaml.safe_load((root / params_file).read_text())
    spec = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    expanded: dict[str, dict[str, Any]] = {}
    techniques: dict[str, str] = {}
    families: dict[str, str] = {}
    for name, stage in spec.items():
        if "foreach" in stage:
            items = _render(stage["foreach"], params)
            items = items if isinstance(items, dict) else dict.fromkeys(items, None)
            for key, item in items.items():
                variables = {**params, "key": key, "item": item}
                expanded[f"{name}@{key}"] = _render(stage["do"], variables)
                if isinstance(item, dict) and "technique" in item:  # generate's own choice
                    techniques[f"{name}@{key}"] = str(item["technique"])
                if isinstance(item, dict) and "family" in item:  # a training's
                    families[f"{name}@{key}"] = str(item["family"])
        else:
            expanded[name] = _render(stage, params)
    result = {}
    for name, stage in expanded.items():
        outs: list[str] = []
        for field in ("outs", "metrics", "plots"):
            for entry in stage.get(field, []):
                outs.append(next(iter(entry)) if isinstance(entry, dict) else entry)
        result[name] = {"cmd": stage["cmd"], "deps": stage.get("deps", []), "outs": outs,
                        "params": stage.get("params", [])}  # fmt: skip
        if name in techniques:
            result[name]["technique"] = techniques[name]
        if name in families:
            result[name]["family"] = families[name]
    return result


def missing_deps(
    name: str, stage: dict[str, Any], root: Path = ROOT, known: dict[str, dict] | None = None
) -> list[str]:
    """Source files the stage executes that reach it through none of its deps: a dep of its
    own, or its stamp (sources/KEY.json of its source set: the stamp stage `known` gives
    hashes that set's modules and depends on their files)."""
    key, roots = source_set(name, stage)
    covered = [root / dep for dep in stage["deps"]]
    stamp = (known or {}).get(STAMPS)
    hashed = stamp_sets(str(stamp["cmd"])).get(key, []) if stamp else []
    if stamp and stamp_path(key) in stage["deps"] and sorted(hashed) == sorted(roots):
        covered += [root / dep for dep in stamp["deps"]]
    missing = []
    for path in sorted(closure(roots, root)):
        if not any(path == dep or dep in path.parents for dep in covered):
            missing.append(str(path.relative_to(root)))
    return missing


PROFILES = ("params.yaml", "params-full.yaml", "params-study.yaml")


def is_source(dep: str) -> bool:
    """A dep that is the repository's code (a package's file or folder), not data."""
    return dep.split("/")[0] in PACKAGES


def source_sets(root: Path = ROOT) -> tuple[dict[str, Any], dict[str, str]]:
    """The stamp stage dvc.yaml needs ({cmd, deps, outs}: a stamp per source set that any stage
    of any profile runs) and the stamp each of its stages (a `foreach` group by its own name)
    depends on (a `foreach` whose items run different sets names its item's by template)."""
    roots: dict[str, set[str]] = {}
    stamp_of: dict[str, str] = {}
    for profile in PROFILES:
        for name, stage in stages(root, profile).items():
            if is_stamp(name):
                continue
            key, modules = source_set(name, stage)
            roots.setdefault(key, set()).update(modules)
            group, _, item = name.partition("@")
            kind = group.split("-")[0]
            stamp_of[group] = stamp_path(TEMPLATES[kind] if item and kind in TEMPLATES else key)
    sets = {
        key: sorted(roots[key], key=lambda m: (not m.startswith("flows."), m))
        for key in sorted(roots)
    }
    files = {
        p.relative_to(root).as_posix() for modules in sets.values() for p in closure(modules, root)
    }
    pairs = [f"{key}={','.join(modules)}" for key, modules in sets.items()]
    stamp = {
        "cmd": " ".join(["python -m flows.pipeline.dependencies --stamp", *pairs]),
        "deps": sorted(files | set(STAMP_CODE)),
        "outs": [stamp_path(key) for key in sets],
    }
    return stamp, stamp_of


def write_stamps(sets: dict[str, list[str]], root: Path = ROOT) -> None:
    """sources/KEY.json per set: the sha256 of each file its modules run, sorted, and nothing
    else (no time, no host), so that it changes exactly when one of those files does."""
    for key, roots in sets.items():
        digests = {
            path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in closure(roots, root)
        }
        out = root / stamp_path(key)
        out.parent.mkdir(parents=True, exist_ok=True)
        temp = out.with_name(f".{out.name}.tmp")
        body = {"roots": roots, "files": dict(sorted(digests.items()))}
        temp.write_text(json.dumps(body, indent=1) + "\n")
        temp.replace(out)


#: DVC projects of their own inside the repository (`dvc init --subdir`), whose stages run the
#: same stage commands from their folder: the zoo's chains (rebuild/dvc.yaml, issue 66)
SUBPROJECTS = ("rebuild",)


@cache
def _profile(path: Path) -> dict[str, Any]:
    """A params profile, read once however many of a subproject's stages name it."""
    return yaml.safe_load(path.read_text()) or {}


def subproject_roots(command: str, folder: Path) -> list[str]:
    """`gridbots stage KIND GAME KEY --params FILE` → the modules it runs: a generation's
    technique and a training's family are read from the profile it names, as dvc.yaml's
    `foreach` items carry them."""
    words = command.split()
    kind, game, key = [*words[words.index("stage") + 1 :], "", "", ""][:3]
    profile = words[words.index("--params") + 1] if "--params" in words else "params.yaml"
    section = _profile((folder / profile).resolve()).get(game) or {}
    dataset = (section.get("datasets") or {}).get(key) or {}
    model = (section.get("models") or {}).get(key) or {}
    technique = dataset.get("technique", key) if kind == "generate" else None
    return stage_roots(f"{kind}@{key}", technique, model.get("family") if kind == "train" else None)


def subproject_deps(root: Path, folder: str) -> dict[str, list[str]]:
    """FOLDER/dvc.yaml's stages (plain ones) → the source files each runs, as ../PATH."""
    spec = yaml.safe_load((root / folder / "dvc.yaml").read_text())["stages"]
    up = "../" * len(Path(folder).parts)
    return {
        name: sorted(
            up + p.relative_to(root).as_posix()
            for p in closure(subproject_roots(str(stage["cmd"]), root / folder), root)
        )
        for name, stage in spec.items()
    }


def write_deps(root: Path = ROOT) -> list[str]:
    """Rewrites dvc.yaml's stamp stage and each stage's stamp dep, and the source deps of each
    subproject's stages (data deps, comments and order kept); the stages that changed."""
    stamp, stamp_of = source_sets(root)
    changed = _rewrite_stamped(root / "dvc.yaml", stamp, stamp_of)
    for folder in SUBPROJECTS:
        up = "../" * len(Path(folder).parts)
        found = _rewrite(root / folder / "dvc.yaml", subproject_deps(root, folder), up)
        changed += [f"{folder}/dvc.yaml: {name}" for name in found]
    return changed


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml_rt = YAML()
    yaml_rt.indent(mapping=2, sequence=4, offset=2)
    yaml_rt.width = 4096
    return yaml_rt


def _dump(yaml_rt: Any, document: Any, path: Path) -> None:
    temp = path.with_suffix(".yaml.tmp")
    with temp.open("w") as out:
        yaml_rt.dump(document, out)
    temp.replace(path)


def _rewrite_stamped(path: Path, stamp: dict[str, Any], stamp_of: dict[str, str]) -> list[str]:
    """dvc.yaml: every stage's source deps become its one stamp dep; the stamp stage follows
    the pipeline's, at the end, with its comment (its command one set a line)."""
    from ruamel.yaml.scalarstring import FoldedScalarString

    yaml_rt = _yaml()
    document = yaml_rt.load(path.read_text())
    stages_map = document["stages"]
    changed = []
    before = set(stages_map)

    def dropped(dep: str) -> bool:
        return is_source(dep) or dep.startswith(f"{STAMPS}/")

    for name, stage in list(stages_map.items()):
        if is_stamp(name):
            was = {"cmd": " ".join(str(stage.get("cmd")).split()),
                   "deps": list(map(str, stage.get("deps", []))),
                   "outs": list(map(str, stage.get("outs", [])))}  # fmt: skip
            if was != stamp:
                changed.append(name)
            del stages_map[name]
            continue
        body = stage["do"] if "foreach" in stage else stage
        deps = body.get("deps")
        if deps is None or name not in stamp_of:
            continue
        wanted = stamp_of[name]
        if list(map(str, deps)) != [*(str(d) for d in deps if not dropped(str(d))), wanted]:
            changed.append(name)
            for index in reversed(range(len(deps))):  # in place: data deps keep their comments
                if dropped(str(deps[index])):
                    del deps[index]
            deps.append(wanted)
    if STAMPS not in before:
        changed.append(STAMPS)
    command = FoldedScalarString(stamp["cmd"])
    command.fold_pos = [i for i, c in enumerate(stamp["cmd"]) if c == " " and
                        stamp["cmd"][i + 1 :].split(" ", 1)[0].count("=")]  # fmt: skip
    stages_map[STAMPS] = {"cmd": command, "deps": stamp["deps"], "outs": stamp["outs"]}
    text = io.StringIO()
    yaml_rt.dump(document, text)
    lines = [line for line in text.getvalue().splitlines() if line not in STAMP_COMMENT]
    at = lines.index(f"  {STAMPS}:")  # the comment above the stamp stage, wherever it was left
    lines[at:at] = STAMP_COMMENT
    temp = path.with_suffix(".yaml.tmp")
    temp.write_text("\n".join(lines) + "\n")
    temp.replace(path)
    return changed


STAMP_COMMENT = [
    "  # ---- the stamps: one per set of source files a command runs (a stage, a generated",
    "  # dataset, a training family); sources/KEY.json (each file's sha256) is the one source",
    "  # dep of the stages that run set KEY (`python -m flows.pipeline.dependencies --write`)",
]


def _rewrite(path: Path, wanted: dict[str, list[str]], up: str) -> list[str]:
    yaml_rt = _yaml()
    document = yaml_rt.load(path.read_text())
    changed = []

    def source(dep: str) -> bool:
        return dep.startswith(up) and is_source(dep[len(up) :])

    for name, stage in document["stages"].items():
        body = stage["do"] if "foreach" in stage else stage
        deps = body.get("deps")
        if deps is None or name not in wanted:
            continue
        new = [str(d) for d in deps if not source(str(d))] + wanted[name]
        if list(map(str, deps)) != new:
            changed.append(name)
            for index in reversed(range(len(deps))):  # in place: data deps keep their comments
                if source(str(deps[index])):
                    del deps[index]
            deps.extend(wanted[name])
    _dump(yaml_rt, document, path)
    return changed


def main() -> int:
    """Prints, per stage, the source files its command executes; `--write` puts the stamp stage
    and each stage's stamp into dvc.yaml (and the subprojects' deps into theirs); `--stamp
    KEY=MODULE[,MODULE…]…` (the stamp stage's command) writes sources/KEY.json per set."""
    import sys

    args = sys.argv[1:]
    if args == ["--write"]:
        for name in write_deps():
            print(f"{name}: source deps rewritten")
        return 0
    if args[:1] == ["--stamp"]:
        sets = stamp_sets(" ".join(args))
        modules = [m for ms in sets.values() for m in ms]
        if not sets or any(module_file(m) is None for m in modules):
            print("usage: --stamp KEY=MODULE[,MODULE…]… (modules of this repository)",
                  file=sys.stderr)  # fmt: skip
            return 2
        write_stamps(sets)
        return 0
    report = {
        name: sorted(str(p.relative_to(ROOT)) for p in closure(source_set(name, stage)[1]))
        for name, stage in stages().items()
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
