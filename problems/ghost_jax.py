"""Book-keeping clipping for the flat-parameter MLP on jax: :mod:`problems.ghost`'s algebra
for linear layers applied once per sample (L = 1), inside the jax oracle's jitted kernels.

A zero probe ε_l added to each layer's pre-activation output z_l = a_l W_l + b_l
(:func:`~problems.models.mlp.tapping`) has, as the gradient of the (padding-weighted) loss
sum, every sample's gradient at that output, g_l (b, O), from one backward pass. Per
sample, the weight gradient is a_l g_lᵀ and the bias gradient g_l, so

* ‖∇f_i‖² = Σ_l (‖a_il‖² + 1)‖g_il‖²; at two points, ∇f_i(x) − ∇f_i(x′) has
  Σ_l ‖a‖²‖g‖² + ‖a′‖²‖g′‖² − 2(a·a′)(g·g′) + ‖g − g′‖²;
* the clipped sum is, per layer, aᵀ(c ⊙ g) (− a′ᵀ(c ⊙ g′)) and Σ_i c_i(g_i − g′_i).

Nothing of size (b, d) is formed. The result has :func:`problems.oracles._build_jax_kernels`'
``clipped_sum`` signature, so the group kernel (a vmap over clients) uses it as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from problems.clipping import clip_factors
from problems.models.mlp import tapping

Shapes = Sequence[tuple[tuple[int, int], int]]
"""An MLP's layers: ((fan_in, fan_out), bias size), as :attr:`MLP.shapes`."""


def mlp_clipped_sum(jax: Any, jnp: Any, losses: Callable[..., Any], shapes: Shapes,
                    gathered: Callable[[Any, Any], Any],
                    weights: Callable[[Any, Any, Any], Any]) -> Callable[..., Any]:
    """``clipped_sum(x, x_prev, clip, b, idx, data) -> (Σ_i c_i G_i, (‖G_i‖)_i)`` over the
    padded batch ``idx`` (rows past ``b`` weigh 0), G_i = ∇f_i(x) (− ∇f_i(x_prev))."""

    def outputs(x: Any, batch: tuple[Any, ...], w: Any) -> tuple[list[Any], list[Any]]:
        """Each layer's inputs a_l and per-sample output gradients g_l at ``x``."""
        probes = [jnp.zeros((len(w), fan_out), dtype=x.dtype) for (_, fan_out), _ in shapes]

        def total(eps: list[Any]) -> tuple[Any, list[Any]]:
            inputs: list[Any] = []

            def probe(layer: int, a: Any, z: Any) -> Any:
                inputs.append(a)
                return z + eps[layer]

            with tapping(probe):
                return jnp.sum(w * losses(x, *batch)), inputs

        grads, inputs = jax.grad(total, has_aux=True)(probes)
        return inputs, grads

    def inner(first: list[tuple[Any, Any]], second: list[tuple[Any, Any]]) -> Any:
        """⟨G_i, G′_i⟩ per sample of two terms, layer by layer: (a·a′ + 1)(g·g′)."""
        return sum(jnp.sum(g1 * g2, axis=1) * (jnp.sum(a1 * a2, axis=1) + 1)
                   for (a1, g1), (a2, g2) in zip(first, second, strict=True))

    def clipped_sum(x: Any, x_prev: Any, clip: Any, b: Any, idx: Any,
                    data: tuple[Any, ...]) -> tuple[Any, Any]:
        batch, w = gathered(idx, data), weights(idx, b, x.dtype)
        terms = [list(zip(*outputs(x, batch, w), strict=True))]
        if x_prev is not None:
            a_prev, g_prev = outputs(x_prev, batch, w)
            terms.append([(a_l, -g_l) for a_l, g_l in zip(a_prev, g_prev, strict=True)])
        sq = sum(inner(t, u) for t in terms for u in terms)
        norms = jnp.sqrt(jnp.maximum(sq, 0.0))
        c = clip_factors(jnp, norms, clip)[:, None]
        parts = []
        for layer in zip(*terms, strict=True):
            parts.append(sum(jnp.reshape(a_l.T @ (c * g_l), (-1,)) for a_l, g_l in layer))
            parts.append(sum(jnp.sum(c * g_l, axis=0) for _, g_l in layer))
        return jnp.concatenate(parts), norms

    return clipped_sum
