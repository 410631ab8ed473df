"""Imports only go down the layers (flows → models → features → agents → engine), and the
engine stays numpy + numba: no pandas, matplotlib or rich (tables and plots live in flows/)."""

from __future__ import annotations

import ast

import pytest

from flows.pipeline.dependencies import PACKAGES, ROOT

BELOW = {name: set(PACKAGES[: len(PACKAGES) - i]) for i, name in enumerate(reversed(PACKAGES))}
PRESENTATION = {"pandas", "matplotlib", "rich"}


def imported_packages(path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_order_is_the_designs():
    assert BELOW["engine"] == {"engine"} and BELOW["flows"] == set(PACKAGES)


@pytest.mark.parametrize("layer", PACKAGES)
def test_imports_only_go_down(layer):
    for path in sorted((ROOT / layer).rglob("*.py")):
        above = (imported_packages(path) & set(PACKAGES)) - BELOW[layer]
        assert not above, f"{path.relative_to(ROOT)} imports {sorted(above)}"


def test_engine_needs_no_presentation_libraries():
    for path in sorted((ROOT / "engine").rglob("*.py")):
        assert not imported_packages(path) & PRESENTATION, path.relative_to(ROOT)
