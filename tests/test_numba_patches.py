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
