"""numba's on-disk cache for a game whose kernels span several modules (a game package).

numba keys a cached function on its own file only, yet a kernel holds the constants and the
compiled callees of the modules it imports: edit `layout.py` and `rules.py` would keep loading
machine code built with the old rules. `stamp_package(path)` makes every file of that package
share one freshness stamp, the digest of all of them (and of the engine modules they use), so any
edit recompiles the whole package. Call it in the package's `__init__` before importing kernels.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core import caching, config

_ENGINE = Path(__file__).parent
_SHARED = ("bits.py", "protocol.py")


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def stamp_package(package_dir: str | Path) -> None:
    """Every numba function defined under `package_dir` is cached against the digest of all
    `.py` files there plus the engine's shared kernel helpers."""
    root = Path(package_dir).resolve()
    files = sorted(root.glob("*.py")) + [_ENGINE / name for name in _SHARED]

    base = caching.UserProvidedCacheLocator if config.CACHE_DIR else caching.InTreeCacheLocator

    class PackageLocator(base):
        def get_source_stamp(self):
            return _digest(files)

        @classmethod
        def from_function(cls, py_func, py_file):
            if Path(py_file).resolve().parent != root:
                return None
            return super().from_function(py_func, py_file)

    PackageLocator.__name__ = f"PackageLocator_{root.name}"
    locators = caching.CacheImpl._locator_classes
    if not any(getattr(c, "__name__", "") == PackageLocator.__name__ for c in locators):
        locators.insert(0, PackageLocator)
