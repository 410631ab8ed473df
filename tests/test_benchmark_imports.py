"""Every name a benchmark script imports from gridbots exists: a moved function breaks a
benchmark silently otherwise, since benchmarks run by hand and no test executes them."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def imported_names(script: Path) -> list[tuple[str, str]]:
    """(module, name) for each absolute `from M import N` in the script, at any depth."""
    pairs = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            pairs += [(node.module, alias.name) for alias in node.names]
    return pairs


def test_there_are_benchmarks_to_check():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_each_imported_name_exists(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # scripts import their siblings
    own = {"agents", "engine", "features", "models", "flows"} | {s.stem for s in SCRIPTS}
    for module, name in imported_names(script):
        if module.split(".")[0] not in own:
            continue
        loaded = importlib.import_module(module)
        if not hasattr(loaded, name):
            importlib.import_module(f"{module}.{name}")  # a submodule imported by name
