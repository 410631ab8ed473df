"""numba's compilation costs: two patches every gridbots process needs before its first
compilation (engine/__init__), and a start-up for processes that fork children which run kernels.

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

#: packages whose jitted functions are typed without literals when called with constants (and
#: the test modules', `test_*`, so their helpers behave like the code they test)
OWN_PACKAGES = ("engine", "agents", "features", "models", "flows")

#: numba's own typing of calls between jitted functions, kept for benchmarks/compile_overhead.py
SHIPPED_CALL_TYPING = None

#: the message a kernel's mismatched slice assignment raises (numba's own, without the shapes)
SLICE_MISMATCH = "cannot assign slice from input of different size"


def _cheap_slice_mismatch_error() -> None:
    cpu = getattr(_arrayobj, "ol_raise_with_shape_context_cpu", None)
    generic = getattr(_arrayobj, "ol_raise_with_shape_context_generic", None)
    if cpu is not None and generic is not None:  # another numba: leave it as it is
        cpu.__code__ = generic.__code__


def _type_jit_calls_without_literals() -> None:
    """A jitted function called from another one with constants (`_moves_of_kind(s, player,
    ATTACK, -1)`) is compiled by numba 0.68 once per distinct value (`Literal[int](-1)`,
    `Literal[int](0)` ...): territory's `_moves_of_kind` 14 times, tactics' `_units` 12 times,
    each with its own callees. Such calls are typed with plain types first, as numba's own
    `@overload`s are by default (`prefer_literal=False`), and with the literals only when that
    fails (a callee that needs a constant, to index a heterogeneous tuple say). Only gridbots'
    own functions: numba's implementations of numpy and of the builtins rely on their literals
    past typing. A cold territory and tactics game with MCTS compiles in 23 s instead of 45 s
    (`benchmarks/compile_overhead.py --games`)."""
    from numba.core import dispatcher, errors, types

    global SHIPPED_CALL_TYPING
    typed_with_literals = SHIPPED_CALL_TYPING = dispatcher._DispatcherBase.get_call_template

    def get_call_template(self, args, kws):
        plain = tuple(types.unliteral(a) for a in args)
        plain_kws = {name: types.unliteral(t) for name, t in kws.items()}
        package = (getattr(self.py_func, "__module__", None) or "").partition(".")[0]
        own = package in OWN_PACKAGES or package.startswith("test_")
        if own and self._can_compile and (plain != tuple(args) or plain_kws != kws):
            try:
                return typed_with_literals(self, plain, plain_kws)
            except errors.NumbaError:  # typing or lowering: the constants may be needed
                pass
        return typed_with_literals(self, args, kws)

    dispatcher._DispatcherBase.get_call_template = get_call_template


_cheap_slice_mismatch_error()
_type_jit_calls_without_literals()


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
