"""Optional dependencies of the tests: a skip at a desk, a failure in CI.

A test that needs a browser, an optional extra or a system program calls `require_module` or
`require_program`. Outside CI a missing piece skips the test with one line naming it and how to
install it. Under `CI=true` (what `.ci/run` sets) the same line fails the test instead: a green
CI run must have tested what it claims to test, not skipped it quietly.
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def missing(what: str, install: str, *, module_level: bool = False) -> None:
    """Skip (desk) or fail (CI) with one line: what is missing and how to get it."""
    line = f"{what} is missing ({install})"
    if in_ci():
        pytest.fail(f"CI=true and {line}", pytrace=False)
    pytest.skip(line, allow_module_level=module_level)


def require_module(name: str, install: str, *, module_level: bool = False) -> ModuleType:
    """The imported module `name`, or skip/fail as `missing` says."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"Python module {name!r}", install, module_level=module_level)
        raise AssertionError("unreachable") from None


def require_program(names: tuple[str, ...], install: str, *, module_level: bool = False) -> str:
    """The path of the first of `names` on PATH, or skip/fail as `missing` says."""
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    missing(f"program {' or '.join(names)!r}", install, module_level=module_level)
    raise AssertionError("unreachable")
