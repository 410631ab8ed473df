"""The study's network (§2.1): one hidden layer over the board, h = f(W_in x), v = f(w_out · h).

No biases, the same activation f (sigmoid, ReLU or tanh) on both layers, weights drawn from
Normal(0, 0.0001). A successor's hidden pre-activation is the parent's plus the weight rows of
the inputs that changed (a move flips a handful of discs), so a whole move list costs little
more than one full forward pass. The four hooks (`mlp_prepare`, `mlp_child_value`, …) are
what agents.td.net's loops call; `arrays()` is the tuple they take as `net`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

SIGMOID, RELU, TANH = 0, 1, 2
ACTIVATIONS = {"sigmoid": SIGMOID, "relu": RELU, "tanh": TANH}


@njit(cache=True, inline="always")
def activate(z, kind):
    if kind == SIGMOID:
        return 1.0 / (1.0 + math.exp(-z))
    if kind == RELU:
        return z if z > 0.0 else 0.0
    return math.tanh(z)


@njit(cache=True, inline="always")
def slope(y, kind):
    """f'(x) written with y = f(x): what Figure 2's `self.grad` is applied to (ReLU'(0) = 0)."""
    if kind == SIGMOID:
        return y * (1.0 - y)
    if kind == RELU:
        return 1.0 if y > 0.0 else 0.0
    return 1.0 - y * y


@njit(cache=True, inline="always")
def pre_activation(w_in, x, size, z):
    """z = W_in x over the non-zero inputs (x is mostly zeros: one bit per piece)."""
    hidden = z.shape[0]
    for i in range(hidden):
        z[i] = 0.0
    for j in range(size):
        if x[j] != 0.0:
            xj = x[j]
            for i in range(hidden):
                z[i] += xj * w_in[j, i]


@njit(cache=True, inline="always")
def output(w_out, z, kind, h):
    """v = f(w_out · f(z)); fills h with the hidden outputs."""
    total = 0.0
    for i in range(z.shape[0]):
        h[i] = activate(z[i], kind)
        total += w_out[i] * h[i]
    return activate(total, kind)


@njit(cache=True)
def forward(w_in, w_out, kind, x):
    """The network on one input vector (tests and export parity use it)."""
    z = np.empty(w_out.shape[0])
    h = np.empty(w_out.shape[0])
    pre_activation(w_in, x, x.shape[0], z)
    return output(w_out, z, kind, h)


@njit(cache=True)
def backpropagate(w_in, w_out, x, size, h, v, kind, rate, delta, grad):
    """Algorithm 2 / Figure 2: one gradient step of rate * delta on every weight, where delta is
    v(current) - v(target) and the hidden deltas use w_out from before the step."""
    g_out = slope(v, kind)
    for i in range(w_out.shape[0]):
        grad[i] = g_out * w_out[i] * slope(h[i], kind)
        w_out[i] -= rate * delta * g_out * h[i]
    for j in range(size):
        if x[j] != 0.0:
            step = rate * delta * x[j]
            for i in range(w_out.shape[0]):
                w_in[j, i] -= step * grad[i]


# ---- the hooks of agents.td.net (net = MLP.arrays()) -----------------------------------------
W_IN, W_OUT, KIND, SIZE, Z, Z_CHILD, H, GRAD = range(8)


@njit(cache=True, inline="always")
def mlp_prepare(net, x):
    """The parent position's hidden pre-activation z = W_in x."""
    pre_activation(net[W_IN], x, net[SIZE], net[Z])


@njit(cache=True, inline="always")
def mlp_child_value(net, x, xc):
    """v of a child whose input is xc, from the parent's z and the inputs that changed."""
    w_in, z, zc = net[W_IN], net[Z], net[Z_CHILD]
    hidden = z.shape[0]
    for i in range(hidden):
        zc[i] = z[i]
    for j in range(net[SIZE]):
        d = xc[j] - x[j]
        if d != 0.0:
            for i in range(hidden):
                zc[i] += d * w_in[j, i]
    return output(net[W_OUT], zc, net[KIND], net[H])


@njit(cache=True, inline="always")
def mlp_current_value(net):
    """v of the prepared parent (leaves its hidden outputs in h for `learn`)."""
    return output(net[W_OUT], net[Z], net[KIND], net[H])


@njit(cache=True, inline="always")
def mlp_learn(net, x, v, rate, delta):
    backpropagate(net[W_IN], net[W_OUT], x, net[SIZE], net[H], v, net[KIND], rate, delta, net[GRAD])


class MLP:
    """The weights and settings of one network: w_in [inputs, hidden], w_out [hidden]."""

    architecture = "mlp"
    hooks = (mlp_prepare, mlp_child_value, mlp_current_value, mlp_learn)

    def __init__(self, w_in: np.ndarray, w_out: np.ndarray, activation: str, planes: int):
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r}; known: {', '.join(ACTIVATIONS)}")
        self.w_in = np.ascontiguousarray(w_in, dtype=np.float64)
        self.w_out = np.ascontiguousarray(np.ravel(w_out), dtype=np.float64)
        if self.w_in.ndim != 2 or self.w_in.shape[1] != self.w_out.shape[0]:
            raise ValueError(f"weights {self.w_in.shape} and {self.w_out.shape} do not chain")
        self.activation = activation
        self.planes = int(planes)
        self._scratch = np.zeros((4, self.hidden))

    @classmethod
    def initial(cls, game, hidden: int, activation: str, planes: int, std: float, seed: int):
        """Normal(0, std) weights (the study: std 0.0001), seeded."""
        from agents.td.net import input_size

        size = input_size(game, planes)
        rng = np.random.default_rng(seed)
        w_in = rng.normal(0.0, std, size=(size, hidden))
        w_out = rng.normal(0.0, std, size=hidden)
        return cls(w_in, w_out, activation, planes)

    @property
    def kind(self) -> int:
        return ACTIVATIONS[self.activation]

    @property
    def size(self) -> int:
        return self.w_in.shape[0]

    @property
    def hidden(self) -> int:
        return self.w_in.shape[1]

    def arrays(self) -> tuple:
        """The tuple the numba loops take as `net` (weights, settings, then scratch)."""
        z, zc, h, grad = self._scratch
        return (self.w_in, self.w_out, self.kind, self.size, z, zc, h, grad)

    def weights(self) -> dict[str, np.ndarray]:
        return {"w_in": self.w_in, "w_out": self.w_out}

    def copy(self) -> MLP:
        return MLP(self.w_in.copy(), self.w_out.copy(), self.activation, self.planes)

    def value(self, x: np.ndarray) -> float:
        """The network's estimate of seat 1's result for one encoded position."""
        return float(forward(self.w_in, self.w_out, self.kind, np.asarray(x, dtype=np.float32)))
