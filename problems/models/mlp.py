"""Multi-layer perceptrons as flat-parameter functions written once in ``xp``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

Activation = Literal["tanh", "relu"]
Init = Literal["glorot", "kaiming"]
ACTIVATIONS = get_args(Activation)
INITS = get_args(Init)
Tap = Callable[[int, Any, Any], Any]
_TAPS: list[Tap] = []


@contextmanager
def tapping(callback: Tap) -> Iterator[None]:
    """While active, :meth:`MLP.logits` reports each layer's (input, pre-activation output)
    and goes on with what the callback returns in place of the output, where it returns
    something: book-keeping clipping traces the network this way (``problems/ghost.py``
    records the outputs; ``problems/ghost_jax.py`` adds a zero probe to them, whose gradient
    is each sample's gradient at the output)."""
    _TAPS.append(callback)
    try:
        yield
    finally:
        _TAPS.pop()


@dataclass(frozen=True)
class MLP:
    """Fully connected network with layer widths ``sizes`` (input first, logits last)."""

    sizes: tuple[int, ...]
    activation: str = "tanh"
    init_scheme: str = "glorot"

    def __post_init__(self) -> None:
        if len(self.sizes) < 2 or min(self.sizes) < 1:
            raise ValueError(f"MLP needs at least two positive layer sizes, got {self.sizes}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; choose {ACTIVATIONS}")
        if self.init_scheme not in INITS:
            raise ValueError(f"unknown init {self.init_scheme!r}; choose {INITS}")

    @property
    def shapes(self) -> list[tuple[tuple[int, int], int]]:
        return [((a, b), b) for a, b in zip(self.sizes[:-1], self.sizes[1:], strict=True)]

    @property
    def n_params(self) -> int:
        return sum(a * b + b for (a, b), _ in self.shapes)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """Uniform weights (Glorot: ±√(6/(fan_in+fan_out)); Kaiming for ReLU: ±√(6/fan_in)),
        zero biases, flattened layer by layer."""
        parts: list[np.ndarray] = []
        for (fan_in, fan_out), bias in self.shapes:
            spread = fan_in if self.init_scheme == "kaiming" else fan_in + fan_out
            bound = np.sqrt(6.0 / spread)
            parts += [rng.uniform(-bound, bound, size=fan_in * fan_out), np.zeros(bias)]
        return np.concatenate(parts)

    def logits(self, xp: Any, x: Any, features: Any) -> Any:
        """Forward pass; ``features`` is (in,) or (b, in). ``x`` is one point (d,) or T points
        stacked (T, d), whose logits come out (T, b, out) in one pass (book-keeping's
        differences between two points)."""
        h, offset = features, 0
        last = len(self.shapes) - 1
        points = x.shape[:-1]
        for layer, ((fan_in, fan_out), bias) in enumerate(self.shapes):
            w = xp.reshape(x[..., offset : offset + fan_in * fan_out], (*points, fan_in, fan_out))
            offset += fan_in * fan_out
            b = x[..., offset : offset + bias]
            z = h @ w + (xp.reshape(b, (*points, 1, bias)) if points else b)
            if _TAPS:
                tapped = _TAPS[-1](layer, h, z)
                z = z if tapped is None else tapped
            h, offset = z, offset + bias
            if layer < last:
                h = xp.tanh(h) if self.activation == "tanh" else xp.maximum(h, 0.0)
        return h


def cross_entropy(xp: Any, logits: Any, onehot: Any) -> Any:
    """Per-sample softmax cross-entropy, stable log-sum-exp, over the last axis."""
    m = xp.max(logits, axis=-1, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(logits - m), axis=-1)) + m[..., 0]
    return lse - xp.sum(logits * onehot, axis=-1)


def layer_sizes(n_in: int, hidden: Sequence[int], n_out: int) -> tuple[int, ...]:
    return (n_in, *hidden, n_out)
