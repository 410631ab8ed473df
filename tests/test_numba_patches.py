"""A kernel's mismatched slice assignment still raises numpy's ValueError, through the cheap
error path engine/numba_patches.py selects (the shape-formatting one costs seconds per process)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from engine.numba_patches import SLICE_MISMATCH


@njit
def _assign(target, source):
    target[:] = source
    return target.sum()


def test_a_matching_slice_assignment_copies():
    assert _assign(np.zeros(4), np.arange(4.0)) == 6.0


def test_a_mismatched_slice_assignment_raises_value_error_like_numpy():
    with pytest.raises(ValueError):
        np.zeros(4)[:] = np.ones(3)  # numpy's own behaviour, the truth the kernel must keep
    with pytest.raises(ValueError, match=SLICE_MISMATCH):
        _assign(np.zeros(4), np.ones(3))


def test_a_started_compiler_is_inherited_by_forked_children():
    """What the stage host relies on: numba starts its CPU target lazily, per process, unless
    the parent started it before forking."""
    import subprocess
    import sys

    script = """
import os
from numba.core.registry import cpu_target
from engine.numba_patches import start_compiler
started = lambda: "_toplevel_target_context" in vars(cpu_target)
assert not started()
start_compiler()
pid = os.fork()
if pid == 0:
    os._exit(0 if started() else 1)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


@njit
def _kind_count(values, kind):
    return (values == kind).sum()


@njit
def _count_both(values):
    return _kind_count(values, 1) * 10 + _kind_count(values, 2)


@njit
def _pick(pair, index):
    return pair[index]  # a heterogeneous tuple: only a constant index types


@njit
def _first_of(pair):
    return _pick(pair, 0)


def test_a_jitted_call_with_constants_compiles_its_callee_once_not_once_per_value():
    assert _count_both(np.array([1, 2, 2, 3])) == 12  # counted by hand: one 1, two 2s
    (only,) = _kind_count.signatures  # not one per constant (Literal[int](1), Literal[int](2))
    assert str(only[1]) == "int64"


def test_a_callee_that_needs_a_constant_still_gets_it():
    assert _first_of((7, 2.5)) == 7
    assert len(_pick.signatures) == 1 and "Literal[int](0)" in str(_pick.signatures[0])


def test_a_jitted_function_without_a_module_still_compiles():
    """Code run by exec without `__name__` (a user's bot file, say) makes functions whose
    `__module__` is None: numba's own typing then, and no error from the patch."""
    namespace: dict = {"njit": njit}
    exec(
        "def helper(x):\n    return x + 1\n\ndef caller(x):\n    return helper(x) + helper(2)",
        namespace,
    )
    helper = njit(namespace["helper"])
    namespace["helper"] = helper
    caller = njit(namespace["caller"])
    assert namespace["caller"].__module__ is None
    assert caller(1) == 5
