"""Book-keeping clipping for the flat-parameter MLP on jax: :mod:`problems.ghost`'s algebra
for linear layers applied once per sample (L = 1), inside the jax oracle's jitted kernels.

A zero probe ε_l added to each layer's pre-activation output z_l = a_l W_l + b_l
(:func:`~problems.models.mlp.tapping`) has, as the gradient of the (padding-weighted) loss
sum, every sample's gradient at that output, g_l (b, O), from one backward pass. Per
sample, the weight gradient is a_l g_lᵀ and the bias gradient g_l, so

* ⟨∇f_i(x), ∇f_i(x′)⟩ = Σ_l (a_il·a′_il + 1)(g_il·g′_il): the squared norms, and at two
  points the difference's, ‖G‖² + ‖G′‖² − 2⟨G, G′⟩, and PriSMA's inner products;
* a weighted sum Σ_i (α_i ∇f_i(x) + β_i ∇f_i(x′)) is, per layer, aᵀ(α ⊙ g) + a′ᵀ(β ⊙ g′)
  and Σ_i α_i g_i + β_i g′_i; the first layer reads the batch at both points, so its two
  products are one, aᵀ(α ⊙ g + β ⊙ g′).

Clients' batches go through one forward and backward pass: the oracle lays them out as an
(m, S) block of indices (each client's batch padded to S with weight 0), the pass runs on
all m·S samples, and each client's sums are one batched product over its S rows. Nothing
of size (b, d) is formed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from problems.clipping import clip_factors
from problems.models.mlp import tapping

Shapes = Sequence[tuple[tuple[int, int], int]]
"""An MLP's layers: ((fan_in, fan_out), bias size), as :attr:`MLP.shapes`."""
Point = list[tuple[Any, Any]]
"""Each layer's (inputs a_l, output gradients g_l) at one point, over the samples."""


@dataclass(frozen=True)
class MlpKernels:
    """The book-keeping kernels (unjitted), on an (m, S) block of padded indices ``idx``
    with the real sizes ``sizes`` (m,):

    * ``group_clipped_sums(x, x_prev, clip, sizes, idx, data, share) -> (sums (m, d),
      norms (m, S))``: each group's share_j Σ_i c_i G_i, G_i = ∇f_i(x) (− ∇f_i(x_prev) unless
      None) (share 1/|group|: the means, folded into the per-sample weights);
    * ``pair_stats(x, x_prev, sizes, idx, data) -> (points, (‖G‖², ‖G′‖², ⟨G, G′⟩))``: each
      point's layers and the per-sample statistics PriSMA's weights come from (m·S,);
    * ``combined_sums(points, alpha, beta, m) -> (m, d)``: each group's
      Σ_i α_i ∇f_i(x) + β_i ∇f_i(x_prev), from ``pair_stats``' points (``m`` static).
    """

    group_clipped_sums: Callable[..., Any]
    pair_stats: Callable[..., Any]
    combined_sums: Callable[..., Any]


def mlp_kernels(jax: Any, jnp: Any, losses: Callable[..., Any], shapes: Shapes,
                gathered: Callable[[Any, Any], Any]) -> MlpKernels:
    """:class:`MlpKernels` of the MLP loss ``losses`` (layers ``shapes``)."""

    def layers(x: Any, batch: tuple[Any, ...], w: Any) -> Point:
        """Each layer's inputs a_l and per-sample output gradients g_l at ``x`` (samples of
        weight 0 get g = 0)."""
        probes = [jnp.zeros((len(w), fan_out), dtype=x.dtype) for (_, fan_out), _ in shapes]

        def total(eps: list[Any]) -> tuple[Any, list[Any]]:
            inputs: list[Any] = []

            def probe(layer: int, a: Any, z: Any) -> Any:
                inputs.append(a)
                return z + eps[layer]

            with tapping(probe):
                return jnp.sum(w * losses(x, *batch)), inputs

        grads, inputs = jax.grad(total, has_aux=True)(probes)
        return list(zip(inputs, grads, strict=True))

    def inner(first: Point, second: Point) -> Any:
        """⟨G_i, G′_i⟩ per sample: Σ_l (a_l·a′_l + 1)(g_l·g′_l)."""
        return sum(jnp.sum(g1 * g2, axis=1) * (jnp.sum(a1 * a2, axis=1) + 1)
                   for (a1, g1), (a2, g2) in zip(first, second, strict=True))

    def scaled(point: Point, v: Any) -> Point:
        return [(a, v[:, None] * g) for a, g in point]

    def sums(first: Point, second: Point | None, m: int) -> Any:
        """(m, d): each group's Σ_i of the per-sample gradients of ``first`` (plus those of
        ``second``), over the m groups of S consecutive samples."""
        def group(t: Any) -> Any:
            return jnp.reshape(t, (m, -1, t.shape[-1]))

        parts = []
        for layer, (a, g) in enumerate(first):
            terms = [(a, g)]
            if second is not None:
                a2, g2 = second[layer]
                terms = [(a, g + g2)] if layer == 0 else [(a, g), (a2, g2)]
            parts.append(sum(jnp.reshape(jnp.einsum("msk,mso->mko", group(a), group(g)), (m, -1))
                             for a, g in terms))
            parts.append(group(sum(g for _, g in terms)).sum(axis=1))
        return jnp.concatenate(parts, axis=1)

    def block(x: Any, x_prev: Any, sizes: Any, idx: Any, data: tuple[Any, ...]
              ) -> tuple[Point, Point | None, Any]:
        """Both points' layers over the flattened (m, S) block, and its sample weights."""
        w = (jnp.arange(idx.shape[1]) < sizes[:, None]).astype(x.dtype).reshape(-1)
        batch = gathered(jnp.reshape(idx, (-1,)), data)
        return (layers(x, batch, w), None if x_prev is None else layers(x_prev, batch, w), w)

    def group_clipped_sums(x: Any, x_prev: Any, clip: Any, sizes: Any, idx: Any,
                           data: tuple[Any, ...], share: Any) -> tuple[Any, Any]:
        first, second, w = block(x, x_prev, sizes, idx, data)
        if second is None:
            sq = inner(first, first)
        else:
            second = scaled(second, -jnp.ones_like(w))
            sq = inner(first, first) + inner(second, second) + 2 * inner(first, second)
        norms = jnp.sqrt(jnp.maximum(sq, 0.0))
        m = idx.shape[0]
        c = w * jnp.repeat(share, idx.shape[1]) * clip_factors(jnp, norms, clip)
        return (sums(scaled(first, c), None if second is None else scaled(second, c), m),
                jnp.reshape(norms, (m, -1)))

    def pair_stats(x: Any, x_prev: Any, sizes: Any, idx: Any, data: tuple[Any, ...]
                   ) -> tuple[tuple[Point, Point], tuple[Any, Any, Any]]:
        first, second, _ = block(x, x_prev, sizes, idx, data)
        assert second is not None
        return (first, second), (inner(first, first), inner(second, second),
                                 inner(first, second))

    def combined_sums(points: tuple[Point, Point], alpha: Any, beta: Any, m: int) -> Any:
        return sums(scaled(points[0], alpha), scaled(points[1], beta), m)

    return MlpKernels(group_clipped_sums, pair_stats, combined_sums)
