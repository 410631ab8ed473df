"""numba's per-process costs: a patch every gridbots process needs before its first compilation
(engine/__init__), and a start-up for processes that fork children which run kernels.

Slice assignment (`a[:] = b`, everywhere in the kernels) makes numba 0.68 compile, once per
process, an error path that formats both shapes into the message: f-strings, `str` of integers
and string joins: 2.5 s of compilation (`benchmarks/compile_overhead.py`: a first function with
one slice assignment compiles in 3.5 s, 0.9 s with this patch, on a quiet machine; 5.7 s and
1.1 s on a loaded one). Every process that compiles a kernel cold pays it: each stage of a cold
`dvc repro`, each test process. The error path numba keeps for targets without strings
raises the same ValueError with a fixed message; the CPU target uses it here. Kernels loaded
from the on-disk cache are unaffected either way: only their mismatch message differs.
"""

from __future__ import annotations

import numba.np.arrayobj as _arrayobj

#: the message a kernel's mismatched slice assignment raises (numba's own, without the shapes)
SLICE_MISMATCH = "cannot assign slice from input of different size"


def _cheap_slice_mismatch_error() -> None:
    cpu = getattr(_arrayobj, "ol_raise_with_shape_context_cpu", None)
    generic = getattr(_arrayobj, "ol_raise_with_shape_context_generic", None)
    if cpu is not None and generic is not None:  # another numba: leave it as it is
        cpu.__code__ = generic.__code__


_cheap_slice_mismatch_error()


def start_compiler() -> float:
    """Initialises numba's CPU target now (LLVM's JIT, the runtime, the typing registries) and
    returns the seconds it took.

    numba does this lazily, at a process's first kernel call, even when every kernel comes from
    the on-disk cache: 0.6-1 s per process. A process that forks many short-lived children that
    run kernels (the stage host of `gridbots repro`) calls this once, so the children inherit a
    started target: a Connect 4 encode stage runs in 1.6 s instead of 2.6 s. The function is
    compiled, not loaded: loading from disk would not start everything a compilation needs.
    """
    import time

    from numba import njit

    start = time.perf_counter()
    njit(cache=False)(_increment)(1)
    return time.perf_counter() - start


def _increment(value: int) -> int:
    return value + 1
