"""The source files each DVC stage executes, derived from the code rather than kept by hand.

A stage's command `gridbots stage NAME …` runs the module flows/pipeline/stages/NAME.py (generation
also runs its technique's module); the files it executes are that module's import closure
within the repository's packages, found by reading the source (every `import`, at any depth
of the file, so lazy imports count too), plus modules named by string constants (agents.base's
built-in agent list) and every module of the packages a module lists in `DYNAMIC_IMPORTS`
(engine.registry discovers the games that way). tests/test_dvc_stages.py fails when dvc.yaml
misses one; `python -m flows.pipeline.dependencies` prints each stage's list for dvc.yaml.
"""

from __future__ import annotations

import ast
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


@cache
def direct_imports(name: str, root: Path = ROOT, module_level_only: bool = False) -> frozenset:
    """Repository modules `name` imports (anywhere in the file, unless module_level_only)."""
    path = module_file(name, root)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    nodes = tree.body if module_level_only else list(ast.walk(tree))
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
    """Files of every repository module the roots execute, with what runs every stage."""
    seen: set[str] = set()
    todo = [*roots, *COMMON]
    todo += [m.rsplit(".", i)[0] for m in todo for i in range(1, m.count(".") + 1)]  # packages
    while todo:
        name = todo.pop()
        if name in seen or module_file(name, root) is None:
            continue
        seen.add(name)
        todo.extend(direct_imports(name, root))
    todo = list(ENTRY)  # their module-level imports, recursively
    while todo:
        name = todo.pop()
        if name in seen or module_file(name, root) is None:
            continue
        seen.add(name)
        todo.extend(direct_imports(name, root, module_level_only=True))
    return {module_file(name, root) for name in seen} - {None}


def stage_roots(stage: str, technique: str | None = None) -> list[str]:
    """`generate-connect4@battle` → the modules its command runs (a dataset named otherwise
    than its technique, Sokoban's `planner`, passes the technique its params name)."""
    kind, _, key = stage.partition("@")
    kind = kind.split("-")[0]
    roots = [f"flows.pipeline.stages.{kind}"]
    if kind == "generate":
        roots.append(f"features.generate.{technique or key}")
    return roots


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
    for name, stage in spec.items():
        if "foreach" in stage:
            items = _render(stage["foreach"], params)
            items = items if isinstance(items, dict) else dict.fromkeys(items, None)
            for key, item in items.items():
                variables = {**params, "key": key, "item": item}
                expanded[f"{name}@{key}"] = _render(stage["do"], variables)
                if isinstance(item, dict) and "technique" in item:  # generate's own choice
                    techniques[f"{name}@{key}"] = str(item["technique"])
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
    return result


def missing_deps(name: str, stage: dict[str, Any], root: Path = ROOT) -> list[str]:
    """Source files the stage executes that none of its deps covers."""
    covered = [root / dep for dep in stage["deps"]]
    missing = []
    for path in sorted(closure(stage_roots(name, stage.get("technique")), root)):
        if not any(path == dep or dep in path.parents for dep in covered):
            missing.append(str(path.relative_to(root)))
    return missing


PROFILES = ("params.yaml", "params-full.yaml", "params-study.yaml")


def is_source(dep: str) -> bool:
    """A dep that is the repository's code (a package's file or folder), not data."""
    return dep.split("/")[0] in PACKAGES


def source_deps(root: Path = ROOT) -> dict[str, list[str]]:
    """dvc.yaml stage (its `foreach` group by its own name) → the source files it runs. A group
    lists what any of its stages runs in any profile: DVC cannot give the stages of one
    `foreach` different lists, and only generation's differ (each technique's own module)."""
    found: dict[str, set[str]] = {}
    for profile in PROFILES:
        for name, stage in stages(root, profile).items():
            files = closure(stage_roots(name, stage.get("technique")), root)
            group = found.setdefault(name.partition("@")[0], set())
            group |= {p.relative_to(root).as_posix() for p in files}
    return {name: sorted(files) for name, files in found.items()}


#: DVC projects of their own inside the repository (`dvc init --subdir`), whose stages run the
#: same stage commands from their folder: the zoo's chains (rebuild/dvc.yaml, issue 66)
SUBPROJECTS = ("rebuild",)


def subproject_deps(root: Path, folder: str) -> dict[str, list[str]]:
    """FOLDER/dvc.yaml's stages (plain ones) → the source files each runs, as ../PATH."""
    spec = yaml.safe_load((root / folder / "dvc.yaml").read_text())["stages"]
    up = "../" * len(Path(folder).parts)
    return {
        name: sorted(up + p.relative_to(root).as_posix() for p in closure(stage_roots(name), root))
        for name in spec
    }


def write_deps(root: Path = ROOT) -> list[str]:
    """Rewrites the source deps of every stage of dvc.yaml and of each subproject's (data deps,
    comments and order kept); the stages whose list changed."""
    changed = _rewrite(root / "dvc.yaml", source_deps(root), "")
    for folder in SUBPROJECTS:
        up = "../" * len(Path(folder).parts)
        found = _rewrite(root / folder / "dvc.yaml", subproject_deps(root, folder), up)
        changed += [f"{folder}/dvc.yaml: {name}" for name in found]
    return changed


def _rewrite(path: Path, wanted: dict[str, list[str]], up: str) -> list[str]:
    from ruamel.yaml import YAML

    yaml_rt = YAML()
    yaml_rt.indent(mapping=2, sequence=4, offset=2)
    yaml_rt.width = 4096
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
    temp = path.with_suffix(".yaml.tmp")
    with temp.open("w") as out:
        yaml_rt.dump(document, out)
    temp.replace(path)
    return changed


def main() -> None:
    """Prints, per stage, the source files its command executes (dvc.yaml's deps); with
    `--write`, puts them into dvc.yaml."""
    import sys

    if sys.argv[1:] == ["--write"]:
        for name in write_deps():
            print(f"{name}: source deps rewritten")
        return
    report = {
        name: sorted(
            str(p.relative_to(ROOT)) for p in closure(stage_roots(name, stage.get("technique")))
        )
        for name, stage in stages().items()
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
