"""Bit tricks and a tiny seeded RNG for numba kernels.

`popcount` and `lowest_bit_index` compile to single CPU instructions (LLVM ctpop / cttz), which
is what lets bitboard kernels run at the speed of C. The RNG is xorshift64* kept in a one-element
uint64 array so that every generic loop is reproducible from an integer seed, independently of
numba's global generator and of how work is split across processes.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic


@intrinsic
def _ctpop(typingctx, x):
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
        return builder.call(fn, [args[0]])

    return sig, codegen


@intrinsic
def _cttz(typingctx, x):
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.cttz", [ir.IntType(64), ir.IntType(1)])
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])

    return sig, codegen


@njit(cache=True, inline="always")
def popcount(x):
    """Number of set bits of a 64-bit word (int64 or uint64)."""
    return np.int64(_ctpop(np.uint64(x)))


@njit(cache=True, inline="always")
def lowest_bit_index(x):
    """Index of the lowest set bit (64 when x == 0)."""
    return np.int64(_cttz(np.uint64(x)))


@njit(cache=True, inline="always")
def nth_set_bit(x, n):
    """Index of the n-th (0-based) set bit of x, counting from the lowest."""
    word = np.uint64(x)
    for _ in range(n):
        word &= word - np.uint64(1)
    return np.int64(_cttz(word))


def new_rng(seed: int) -> np.ndarray:
    """RNG state for the kernels: splitmix64 of the seed, never zero."""
    z = (int(seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return np.array([z or 0x2545F4914F6CDD1D], dtype=np.uint64)


@njit(cache=True, inline="always")
def next_u64(rng):
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return x * np.uint64(0x2545F4914F6CDD1D)


@njit(cache=True, inline="always")
def rand_below(rng, n):
    """Uniform integer in [0, n) (multiply-shift, no modulo bias worth measuring)."""
    return np.int64(((next_u64(rng) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, inline="always")
def rand_unit(rng):
    """Uniform float in [0, 1)."""
    return np.float64(next_u64(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
