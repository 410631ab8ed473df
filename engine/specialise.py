"""Generic loops, written once against the kernel set and compiled per game, cached on disk.

A generic loop calls the kernels by their protocol names (`current_player(s)`,
`legal_actions(s, p, out)`, ...), as if they were globals. `bind(loop, kernels)` makes the
game's copy: the same bytecode with those names (and every other generic it calls) bound to the
game's functions, compiled by numba with `cache=True` under a name of its own. Direct calls to
global functions let LLVM inline the kernels, so a generic loop runs as fast as hand-written
code; the cached name carries a digest of every source file involved, so editing a game's rules
never loads stale machine code. (Passing kernels as arguments is just as fast but cannot be
cached: numba's cache key would hold the dispatchers, which differ in every process.)
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path

from numba import njit

KERNEL_NAMES = (
    "current_player",
    "legal_actions",
    "chance_probability",
    "apply_action",
    "apply_joint",
    "returns",
)

_ENGINE = Path(__file__).parent
_BOUND: dict[tuple[int, str], Callable] = {}
_DIGESTS: dict[tuple[str, ...], str] = {}


class Generic:
    """A loop over the kernel names; call `bind(loop, kernels)` to get the compiled copy."""

    def __init__(self, py_func: Callable, inline: bool, nogil: bool = False):
        self.py_func = py_func
        self.inline = inline
        self.nogil = nogil
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__

    def __call__(self, *args):
        """`loop(*kernel_set.search(), *rest)`: binds to the six kernels given, then runs."""
        if len(args) < len(KERNEL_NAMES):
            raise TypeError(f"{self.__name__}: pass the six kernels first, then the arguments")
        return bind(self, args[: len(KERNEL_NAMES)])(*args[len(KERNEL_NAMES) :])


def generic(fn: Callable | None = None, *, inline: bool = False, nogil: bool = False):
    """Marks a function as a generic loop (`inline=True` for small helpers inlined into loops;
    `nogil=True` for loops that threads run side by side)."""
    if fn is None:
        return lambda f: Generic(f, inline, nogil)
    return Generic(fn, inline, nogil)


def _placeholder(name: str) -> Callable:
    def unbound(*args):
        raise TypeError(f"kernel {name} is only available inside a bound generic loop")

    unbound.__name__ = name
    return unbound


# names generic loops import, so that they read (and lint) like ordinary calls
current_player, legal_actions, chance_probability, apply_action, apply_joint, returns = (
    _placeholder(name) for name in KERNEL_NAMES
)


def _digest(paths: Sequence[str]) -> str:
    key = tuple(sorted(set(paths)))
    if key not in _DIGESTS:
        h = hashlib.sha1()
        for path in key:
            h.update(Path(path).read_bytes())
        _DIGESTS[key] = h.hexdigest()[:10]
    return _DIGESTS[key]


def _called_files(py_func: Callable, seen: set[int] | None = None) -> set[str]:
    """Source files of every compiled function `py_func` reaches through its globals.

    The cached machine code of a bound loop holds all of them inlined, so an edit to any of
    them must change the cache name.
    """
    seen = set() if seen is None else seen
    if id(py_func) in seen:
        return set()
    seen.add(id(py_func))
    files = {inspect.getfile(py_func)}
    for name in py_func.__code__.co_names:
        value = py_func.__globals__.get(name)
        inner = getattr(value, "py_func", None)
        if callable(inner) and hasattr(inner, "__code__"):
            files |= _called_files(inner, seen)
    return files


def _names_used(loop: Generic, seen: set[int] | None = None) -> set[str]:
    """Every global name `loop` and the generic loops it calls refer to, so that a nested loop
    is bound only to the extras it uses (thorough's copy of the alpha-beta core, bound without
    the `observation` it never calls, is then the agents' copy, compiled once)."""
    seen = set() if seen is None else seen
    if id(loop) in seen:
        return set()
    seen.add(id(loop))
    names = set(loop.py_func.__code__.co_names)
    for name in loop.py_func.__code__.co_names:
        inner = loop.py_func.__globals__.get(name)
        if isinstance(inner, Generic):
            names |= _names_used(inner, seen)
    return names


def bind(loop: Generic, kernels: Sequence[Callable], **extra: Callable) -> Callable:
    """The numba-compiled copy of `loop` for one game's kernels (`KernelSet.search()` order).

    `extra` binds further names the loop calls, such as a game's `evaluate` heuristic.
    """
    kernels = tuple(kernels)
    used = _names_used(loop)  # an extra the loop never calls must not give it a copy of its own
    extra = {name: fn for name, fn in extra.items() if name in used}
    kernel_file = inspect.getfile(sys.modules[kernels[0].py_func.__module__])
    files = {kernel_file, str(_ENGINE / "bits.py")} | _called_files(loop.py_func)
    for fn in (*kernels, *extra.values()):
        files |= _called_files(fn.py_func)
    extra_tag = "".join(f"_{name}-{fn.__name__}" for name, fn in sorted(extra.items()))
    tag = f"{Path(kernel_file).stem}{extra_tag}_{_digest(sorted(files))}"
    key = (id(loop), tag)
    if key in _BOUND:
        return _BOUND[key]
    namespace = dict(loop.py_func.__globals__)
    namespace.update(zip(KERNEL_NAMES, kernels, strict=True))
    namespace.update(extra)
    for name in loop.py_func.__code__.co_names:  # the globals this loop actually uses
        inner = namespace.get(name)
        if isinstance(inner, Generic):  # bound to the extras it reaches: one cached copy per use
            namespace[name] = bind(inner, kernels, **extra)
    code = loop.py_func.__code__
    name = f"{code.co_name}__{tag}"
    copy = types.FunctionType(code, namespace, name, loop.py_func.__defaults__)
    copy.__qualname__ = name
    copy.__module__ = loop.py_func.__module__
    compiled = njit(cache=True, inline="always" if loop.inline else "never", nogil=loop.nogil)(copy)
    _BOUND[key] = compiled
    return compiled
