"""Book-keeping clipping for torch networks: the clipped sum of per-sample gradients from one
forward and one backward pass, without materialising the (b, d) per-sample gradients.

Every parametrised layer is an affine map applied at L positions of each sample,
z_l = W a_l (+ b) (a linear layer: L = 1, or the tokens of a sequence; a convolution: the
output pixels, a the unfolded input patches), or a per-channel scale z = ŵ ⊙ x̂ + b (GroupNorm,
x̂ the normalised input). A forward pass keeps each layer's input; one backward pass of the
summed loss gives g = ∂L/∂z, which is per sample because samples never interact (no
BatchNorm). From (a, g), for sample i:

* the weight gradient is G_i = Σ_l g_il a_ilᵀ; its squared norm (and the inner product with
  the same layer at another point) is materialised as an O × K matrix when O·K ≤ L², else
  taken from the L × L Gram matrices, Σ_{l,m} (a_l·a'_m)(g_l·g'_m) (the ghost norm of
  Li et al. 2022; Goodfellow 2015 for L = 1); the bias gradient is Σ_l g_il;
* clip factors c_i = min(1, C/‖G_i‖) over all layers, and the clipped sum of each layer is
  its ordinary weight-gradient contraction with g scaled by c (Bu et al. 2023, "book-keeping").

Differences of per-sample gradients at two points (SPIDER, PriSMA) use two passes:
‖G_i − G'_i‖² = ‖G_i‖² + ‖G'_i‖² − 2⟨G_i, G'_i⟩, and the clipped sum Σ c_i (G_i − G'_i).

Supported: torch ``nn.Linear``, ``nn.Conv2d`` (groups = 1), ``nn.GroupNorm`` and the
flat-parameter :class:`~problems.models.mlp.MLP`. A network with any other parametrised
layer, a layer used twice in one forward pass, or an L2 term in the loss keeps the
per-sample (vmap) path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.grad import conv2d_weight

from problems.backend import Backend
from problems.models.mlp import MLP, tapping
from problems.models.torch_module import TorchModel
from problems.oracles import BatchLoss, TorchOracle


@dataclass
class Site:
    """One parametrised layer in one forward pass.

    ``inputs``: (b, L, K) for a linear layer, the input (b, C, H, W) for a convolution, the
    normalised input (b, C, P) for a scale; ``output``: the layer's output (in the autograd
    graph); ``view`` maps its gradient to (b, L, O), (b, O, H', W') or (b, C, P);
    ``weight``/``bias``: slices of the flat parameter vector; ``transposed``: a linear
    weight stored O × K (torch) instead of K × O; ``conv``: the convolution's module.
    """

    kind: str  # "linear", "conv" or "scale"
    inputs: torch.Tensor
    output: torch.Tensor
    view: Callable[[torch.Tensor], torch.Tensor]
    weight: slice
    bias: slice | None
    transposed: bool = True
    conv: nn.Conv2d | None = None


@dataclass
class Book:
    """The sites of one pass with their output gradients, and the per-sample rows of the
    layers where they are materialised (kept for the weighted sum)."""

    sites: list[Site]
    grads: list[torch.Tensor]
    rows: dict[int, torch.Tensor] = field(default_factory=dict)

    def layer_rows(self, i: int) -> torch.Tensor | None:
        """Layer i's per-sample gradients (b, p) if materialised (computed once), else None."""
        site, g = self.sites[i], self.grads[i]
        if not _materialise(site, g):
            return None
        if i not in self.rows:
            self.rows[i] = _rows(site, g)
        return self.rows[i]


Tracer = Callable[[Any, tuple[Any, ...]], tuple[torch.Tensor, list[Site]]]
"""``trace(x, batch) -> (summed loss, sites)``: one forward pass that records its layers."""


# -- per-layer algebra ------------------------------------------------------------------------
def _materialise(site: Site, g: torch.Tensor) -> bool:
    """Per-sample rows (O·K numbers per sample) where they are cheaper than L × L Grams."""
    if site.kind == "scale":
        return True
    if site.kind == "linear":
        length, k = site.inputs.shape[1:]
        # rows come out O × K: the torch layout (an MLP's K × O layers have L = 1: ghost)
        return site.transposed and length > 1 and g.shape[-1] * k <= length * length
    assert site.conv is not None
    kh, kw = site.conv.kernel_size
    length = g.shape[2] * g.shape[3]
    return g.shape[1] * site.inputs.shape[1] * kh * kw <= length * length


def _rows(site: Site, g: torch.Tensor) -> torch.Tensor:
    """Per-sample gradients of a site, (b, p)."""
    b = g.shape[0]
    if site.kind == "scale":
        return torch.cat([(site.inputs * g).sum(-1), *([g.sum(-1)] if site.bias else [])], 1)
    if site.kind == "linear":
        weight = torch.einsum("blo,blk->bok", g, site.inputs).flatten(1)
        return torch.cat([weight, *([g.sum(1)] if site.bias else [])], 1)
    conv, a = site.conv, site.inputs
    assert conv is not None
    per_sample = conv2d_weight(  # the batch as groups: one weight gradient per sample
        a.reshape(1, -1, *a.shape[2:]), (b * g.shape[1], a.shape[1], *conv.kernel_size),
        g.reshape(1, -1, *g.shape[2:]), stride=conv.stride, padding=conv.padding,
        dilation=conv.dilation, groups=b)
    return torch.cat([per_sample.reshape(b, -1), *([g.sum((2, 3))] if site.bias else [])], 1)


def _patches(site: Site, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, g) as (b, L, K) and (b, L, O) (a convolution's unfolded input patches)."""
    if site.kind == "linear":
        return site.inputs, g
    conv = site.conv
    assert conv is not None
    patches = F.unfold(site.inputs, conv.kernel_size, dilation=conv.dilation,
                       padding=conv.padding, stride=conv.stride)  # type: ignore[arg-type]
    return patches.transpose(1, 2), g.flatten(2).transpose(1, 2)


def _ghost(s1: Site, g1: torch.Tensor, s2: Site, g2: torch.Tensor) -> torch.Tensor:
    """⟨G_i, G'_i⟩ per sample from the L × L Gram matrices (nothing materialised)."""
    (a1, h1), (a2, h2) = _patches(s1, g1), _patches(s2, g2)
    if a1.shape[1] == 1:
        weight = (a1[:, 0] * a2[:, 0]).sum(1) * (h1[:, 0] * h2[:, 0]).sum(1)
    else:
        weight = (torch.bmm(a1, a2.transpose(1, 2)) * torch.bmm(h1, h2.transpose(1, 2))).sum((1, 2))
    return weight + ((h1.sum(1) * h2.sum(1)).sum(1) if s1.bias else 0.0)


def _sq_norms(book: Book) -> torch.Tensor:
    """‖G_i‖² per sample, summed over the layers of one pass."""
    total = torch.zeros((), dtype=book.grads[0].dtype, device=book.grads[0].device)
    for i, (s, g) in enumerate(zip(book.sites, book.grads, strict=True)):
        rows = book.layer_rows(i)
        total = total + ((rows**2).sum(1) if rows is not None else _ghost(s, g, s, g))
    return total


def _diff_sq_norms(now: Book, before: Book) -> torch.Tensor:
    """‖G_i − G'_i‖² per sample between two passes."""
    total = torch.zeros((), dtype=now.grads[0].dtype, device=now.grads[0].device)
    for i, (s1, g1, s2, g2) in enumerate(zip(now.sites, now.grads, before.sites, before.grads,
                                             strict=True)):
        r1, r2 = now.layer_rows(i), before.layer_rows(i)
        if r1 is not None and r2 is not None:
            total = total + ((r1 - r2) ** 2).sum(1)
        else:
            total = total + (_ghost(s1, g1, s1, g1) + _ghost(s2, g2, s2, g2)
                             - 2 * _ghost(s1, g1, s2, g2))
    return total


def _weighted(site: Site, g: torch.Tensor, c: torch.Tensor, flat: torch.Tensor) -> None:
    """Add Σ_i c_i G_i of one layer into the flat gradient vector."""
    gc = g * c.view(-1, *([1] * (g.ndim - 1)))
    if site.kind == "scale":
        flat[site.weight] += (site.inputs * gc).sum((0, 2))
        reduce: tuple[int, ...] = (0, 2)
    elif site.kind == "linear":
        eq = "blo,blk->ok" if site.transposed else "blo,blk->ko"
        flat[site.weight] += torch.einsum(eq, gc, site.inputs).reshape(-1)
        reduce = (0, 1)
    else:
        conv = site.conv
        assert conv is not None
        flat[site.weight] += conv2d_weight(
            site.inputs, (gc.shape[1], site.inputs.shape[1], *conv.kernel_size), gc,
            stride=conv.stride, padding=conv.padding, dilation=conv.dilation).reshape(-1)
        reduce = (0, 2, 3)
    if site.bias is not None:
        flat[site.bias] += gc.sum(reduce)


def _factors_and_norms(sq_norms: torch.Tensor, clip: float
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Clip factors min(1, C/‖G_i‖) and the norms ‖G_i‖ they are computed from."""
    norms = torch.sqrt(torch.clamp(sq_norms, min=0.0))
    return 1.0 / torch.clamp(norms / clip, min=1.0), norms


# -- tracing ----------------------------------------------------------------------------------
class BookkeepingOracle(TorchOracle):
    """A :class:`TorchOracle` whose clipped sums come from book-keeping (module docstring)."""

    def __init__(self, backend: Backend, losses: BatchLoss, data: Any, *, trace: Tracer,
                 **kw: Any) -> None:
        super().__init__(backend, losses, data, **kw)
        self.trace = trace

    def _book(self, x: Any, idx: np.ndarray) -> Book:
        """One forward pass at ``x`` on the samples ``idx`` and the backward to the layers'
        outputs."""
        point = x.detach().requires_grad_(True)
        loss, sites = self.trace(point, self.batch(idx))
        grads = torch.autograd.grad(loss, [s.output for s in sites])
        return Book(sites, [s.view(g) for s, g in zip(sites, grads, strict=True)])

    def _sum(self, book: Book, c: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
        for i, (s, g) in enumerate(zip(book.sites, book.grads, strict=True)):
            rows = book.rows.get(i)
            if rows is None:  # the layer's own weight-gradient contraction, g scaled by c
                _weighted(s, g, c, flat)
                continue
            total = c @ rows  # rows already hold the per-sample gradients: weight, then bias
            size = s.weight.stop - s.weight.start
            flat[s.weight] += total[:size]
            if s.bias is not None:
                flat[s.bias] += total[size:]
        return flat

    def clipped_grad_sum(self, x: Any, idx: np.ndarray, clip: float) -> Any:
        return self.clipped_grad_sum_and_norms(x, idx, clip)[0]

    def clipped_grad_sum_and_norms(self, x: Any, idx: np.ndarray, clip: float
                                   ) -> tuple[Any, Any]:
        if len(idx) == 0:
            return torch.zeros_like(x), torch.zeros(0, dtype=x.dtype, device=x.device)
        book = self._book(x, idx)
        with torch.no_grad():
            c, norms = _factors_and_norms(_sq_norms(book), clip)
            return self._sum(book, c, torch.zeros_like(x)), norms

    def grad_sum_and_norms(self, x: Any, idx: np.ndarray) -> tuple[Any, Any]:
        book = self._book(x, idx)
        with torch.no_grad():
            ones = torch.ones(len(idx), dtype=x.dtype, device=x.device)
            return (self._sum(book, ones, torch.zeros_like(x)),
                    torch.sqrt(torch.clamp(_sq_norms(book), min=0.0)))

    def clipped_grad_diff_sum(self, x: Any, x_prev: Any, idx: np.ndarray, clip: float) -> Any:
        return self.clipped_grad_diff_sum_and_norms(x, x_prev, idx, clip)[0]

    def clipped_grad_diff_sum_and_norms(self, x: Any, x_prev: Any, idx: np.ndarray,
                                        clip: float) -> tuple[Any, Any]:
        if len(idx) == 0:
            return torch.zeros_like(x), torch.zeros(0, dtype=x.dtype, device=x.device)
        now, before = self._book(x, idx), self._book(x_prev, idx)
        with torch.no_grad():
            c, norms = _factors_and_norms(_diff_sq_norms(now, before), clip)
            return (self._sum(now, c, torch.zeros_like(x))
                    - self._sum(before, c, torch.zeros_like(x)), norms)


# -- torch modules ----------------------------------------------------------------------------
SUPPORTED = (nn.Linear, nn.Conv2d, nn.GroupNorm)


def module_layers(module: nn.Module, layout: list[tuple[str, tuple[int, ...], int]]
                  ) -> dict[nn.Module, tuple[slice, slice | None]] | None:
    """Each parametrised layer with the (weight, bias) slices of the flat vector, or None
    when some parameter belongs to an unsupported layer."""
    offsets, start = {}, 0
    for name, _, numel in layout:
        offsets[name] = slice(start, start + numel)
        start += numel
    layers: dict[nn.Module, tuple[slice, slice | None]] = {}
    covered = set()
    for prefix, sub in module.named_modules():
        own = [n for n, _ in sub.named_parameters(recurse=False)]
        if not own:
            continue
        if not isinstance(sub, SUPPORTED) or (isinstance(sub, nn.Conv2d) and sub.groups != 1):
            return None
        if isinstance(sub, nn.GroupNorm) and not sub.affine:
            return None
        name = f"{prefix}." if prefix else ""
        weight = offsets[f"{name}weight"]
        bias = offsets.get(f"{name}bias") if sub.bias is not None else None
        layers[sub] = (weight, bias)
        covered |= {f"{name}{n}" for n in own}
    return layers if covered == set(offsets) else None


def _module_site(sub: nn.Module, a: torch.Tensor, out: torch.Tensor, weight: slice,
                 bias: slice | None) -> Site:
    b = a.shape[0]
    if isinstance(sub, nn.Linear):
        return Site("linear", a.detach().reshape(b, -1, a.shape[-1]), out,
                    lambda g: g.reshape(b, -1, g.shape[-1]), weight, bias)
    if isinstance(sub, nn.Conv2d):
        return Site("conv", a.detach(), out, lambda g: g, weight, bias, conv=sub)
    assert isinstance(sub, nn.GroupNorm)
    normed = F.group_norm(a.detach(), sub.num_groups, eps=sub.eps).flatten(2)
    return Site("scale", normed, out, lambda g: g.flatten(2), weight, bias)


def module_tracer(module: nn.Module, layers: dict[nn.Module, tuple[slice, slice | None]],
                  losses: BatchLoss) -> Tracer:
    """Trace the torch ``module`` (called inside ``losses``) with forward hooks."""
    def trace(x: Any, batch: tuple[Any, ...]) -> tuple[torch.Tensor, list[Site]]:
        sites: list[Site] = []
        seen: set[nn.Module] = set()

        def hook(sub: nn.Module, inputs: tuple[Any, ...], out: torch.Tensor) -> None:
            if sub in seen:
                raise RuntimeError("a layer used twice in one pass: book-keeping needs "
                                   "each parameter used once")
            seen.add(sub)
            sites.append(_module_site(sub, inputs[0], out, *layers[sub]))

        handles = [sub.register_forward_hook(hook) for sub in layers]
        try:
            loss = losses(x, *batch).sum()
        finally:
            for h in handles:
                h.remove()
        return loss, sites

    return trace


# -- the flat-parameter MLP -------------------------------------------------------------------
def mlp_tracer(shapes: list[tuple[tuple[int, int], int]], losses: BatchLoss) -> Tracer:
    """Trace an :class:`~problems.models.mlp.MLP` (weights stored fan_in × fan_out)."""
    slices, start = [], 0
    for (fan_in, fan_out), bias in shapes:
        slices.append((slice(start, start + fan_in * fan_out),
                       slice(start + fan_in * fan_out, start + fan_in * fan_out + bias)))
        start += fan_in * fan_out + bias

    def trace(x: Any, batch: tuple[Any, ...]) -> tuple[torch.Tensor, list[Site]]:
        sites: list[Site] = []

        def record(layer: int, a: Any, z: Any) -> None:
            b = a.shape[0]
            sites.append(Site("linear", a.detach().reshape(b, 1, -1), z,
                              lambda g: g.reshape(b, 1, -1), *slices[layer], transposed=False))

        with tapping(record):
            loss = losses(x, *batch).sum()
        return loss, sites

    return trace


def bookkeeping_tracer(model: Any, losses: BatchLoss) -> Tracer | None:
    """The tracer of ``model`` (an MLP or a TorchModel), or None where book-keeping does not
    apply (an unsupported layer)."""
    if isinstance(model, MLP):
        return mlp_tracer(model.shapes, losses)
    if isinstance(model, TorchModel):
        layers = module_layers(model.module, model._layout)
        return None if layers is None else module_tracer(model.module, layers, losses)
    return None
