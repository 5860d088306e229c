"""Book-keeping clipping for torch networks: the clipped sum of per-sample gradients from one
forward and one backward pass, without materialising the (b, d) per-sample gradients.

Every parametrised layer is an affine map applied at L positions of each sample,
z_l = W a_l (+ b) (a linear layer: L = 1, or the tokens of a sequence; a convolution: the
output pixels, a the unfolded input patches; an embedding: the tokens, a_l the one-hot
vector of token l, so a_l·a_m = [id_l = id_m]), or a per-channel scale z = ŵ ⊙ x̂ + b
(GroupNorm, LayerNorm, x̂ the normalised input). A forward pass keeps each layer's input;
one backward pass of the summed loss gives g = ∂L/∂z, which is per sample because samples
never interact (no BatchNorm). From (a, g), for sample i:

* the weight gradient is G_i = Σ_l g_il a_ilᵀ; for its squared norm it is materialised as
  an O × K matrix when O·K ≤ L², else the norm comes from the L × L Gram matrices,
  Σ_{l,m} (a_l·a_m)(g_l·g_m) (the ghost norm of Li et al. 2022; Goodfellow 2015 for
  L = 1); the bias gradient is Σ_l g_il;
* clip factors c_i = min(1, C/‖G_i‖) over all layers, and the clipped sum of each layer is
  its ordinary weight-gradient contraction with g scaled by c (Bu et al. 2023, "book-keeping");
  an embedding's is the rows of c·g added into the rows of their tokens.

An embedding is never materialised (its rows would be vocabulary × width per sample); a
padding token's gradient is zero (``padding_idx``), so g is masked there. A transformer's
linear layers (L tokens) take the ghost norm where O·K > L², so no layer of a BERT holds a
per-sample gradient larger than its LayerNorms' (Li et al. 2022's ghost clipping).

Differences of per-sample gradients at two points (SPIDER, PriSMA) take a forward and a
backward pass at each point on the same batch, of loss(x) and of −loss(x'), which hand
each layer g at x and −g' at x'. Each layer's difference G_i − G'_i is then a sum of two
terms, Σ_l g_il a_ilᵀ + Σ_l (−g'_il) a'_ilᵀ: its rows are the sum of both passes' rows, its
squared norm ‖G‖² + ‖G'‖² − 2⟨G, G'⟩ from three L × L Gram products, its clipped sum the
two contractions with g and −g' scaled by c. A layer that reads the same input in both
passes (the first: the batch itself) has one term, G_i − G'_i = Σ_l (g_il − g'_il) a_ilᵀ.

A convolution's patch Gram (a_l·a'_m) is never unfolded: it is the Gram matrix of the
padded inputs' pixels (over channels), summed over the kernel offsets
(:func:`_patch_gram`), which costs b·(H_p·W_p)²·C instead of b·L²·C·k_h·k_w.

Supported: torch ``nn.Linear``, ``nn.Conv2d`` (groups = 1, numeric zero padding),
``nn.GroupNorm``, ``nn.LayerNorm`` (over the last axis), ``nn.Embedding`` (no ``max_norm``,
frequency scaling or sparse gradients; its output batched like the loss) and the
flat-parameter :class:`~problems.models.mlp.MLP`. A network with
any other parametrised layer, a layer used twice in one forward pass, or an L2 term in the
loss keeps the per-sample (vmap) path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations_with_replacement
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.grad import conv2d_weight

from problems.backend import Backend
from problems.models.mlp import MLP, tapping
from problems.models.torch_module import TorchModel
from problems.oracles import BatchLoss, Combine, TorchOracle


@dataclass
class Site:
    """One parametrised layer in one forward pass.

    ``inputs``: (b, L, K) for a linear layer, the input (b, C, H, W) for a convolution, the
    normalised input (b, C, P) for a scale, the token ids (b, L) for an embedding; ``view``
    maps the gradient at its output to (b, L, O), (b, O, H', W'), (b, C, P) or (b, L, O);
    ``weight``/``bias``: slices of the flat parameter vector; ``transposed``: a linear
    weight stored O × K (torch) instead of K × O; ``conv``: the convolution's module.
    """

    kind: str  # "linear", "conv", "scale" or "embedding"
    inputs: torch.Tensor
    view: Callable[[torch.Tensor], torch.Tensor]
    weight: slice
    bias: slice | None
    transposed: bool = True
    conv: nn.Conv2d | None = None


Term = tuple[Site, torch.Tensor]
"""A site and the gradient of the pass's loss at its output (laid out by ``site.view``)."""


@dataclass
class Layer:
    """One layer's per-sample gradients, Σ_t G(site_t, g_t) over its terms: one term at one
    point; at two points their difference, one term per pass (the second pass's g negated),
    or a single term (site, g − g') where both passes read the same input (module
    docstring). The per-sample rows are kept once computed (:func:`_materialise` layers)."""

    terms: list[Term]
    rows: list[torch.Tensor] | None = None

    @property
    def site(self) -> Site:
        return self.terms[0][0]

    @property
    def materialised(self) -> bool:
        return _materialise(*self.terms[0])

    def per_sample(self) -> list[torch.Tensor]:
        """The per-sample gradients of the weight (b, O·K), then the bias (b, O), computed
        once."""
        if self.rows is None:
            self.rows = _rows(*self.terms[0])
            for site, g in self.terms[1:]:
                for total, part in zip(self.rows, _rows(site, g), strict=True):
                    total += part
        return self.rows

    def sq_norms(self) -> torch.Tensor:
        """‖Σ_t G_t,i‖² per sample."""
        if not self.materialised:
            return _ghost(self.terms)
        weight, *bias = self.per_sample()
        return sum((torch.linalg.vecdot(r, r) for r in bias), torch.linalg.vecdot(weight, weight))

    def write_weighted(self, c: torch.Tensor, groups: Groups, flat: torch.Tensor) -> None:
        """Write Σ_{i ∈ group j} c_i Σ_t G_t,i into row j of the flat gradients (m, d), at
        this layer's weight and bias: the batched products write there directly."""
        if self.materialised:
            for run, samples, shape in groups.runs:
                w = c[samples].view(shape).unsqueeze(1)
                for part, rows in zip(self._parts(), self.per_sample(), strict=True):
                    torch.bmm(w, rows[samples].unflatten(0, shape),
                              out=flat[run, part].unsqueeze(1))
        elif self.site.kind == "linear":
            _linear_weighted(self.terms, c, groups, flat)
        elif self.site.kind == "embedding":
            _embedding_weighted(self.terms, c, groups, flat)
        else:
            parts = [_weighted_by_group(site, g, c, groups) for site, g in self.terms]
            for part, column in zip(self._parts(), zip(*parts, strict=True), strict=True):
                flat[:, part] = sum(column[1:], column[0])

    def _parts(self) -> list[slice]:
        return [self.site.weight, *([self.site.bias] if self.site.bias is not None else [])]


class Groups:
    """A batch cut into m contiguous groups (clients' batches) of ``sizes``, for batched
    contractions over ``runs``: consecutive groups of one size, each a view of the batch
    (r groups × s samples) with no gather or padding (one run where the sizes are equal).
    A run is (its groups, its samples, (r, s))."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = list(sizes)
        ends = np.cumsum(self.sizes).tolist()
        self.parts = [slice(e - n, e) for e, n in zip(ends, self.sizes, strict=True)]
        self.runs: list[tuple[slice, slice, tuple[int, int]]] = []
        first = 0
        for j in range(1, len(self.sizes) + 1):
            if j == len(self.sizes) or self.sizes[j] != self.sizes[first]:
                self.runs.append((slice(first, j), slice(self.parts[first].start, ends[j - 1]),
                                  (j - first, self.sizes[first])))
                first = j

    def of_samples(self, device: torch.device) -> torch.Tensor:
        """Each sample's group, (B,)."""
        sizes = torch.tensor(self.sizes, device=device)
        return torch.repeat_interleave(torch.arange(len(self.sizes), device=device), sizes)


Traced = tuple[torch.Tensor, list[Site], list[torch.Tensor]]
"""(summed loss, sites, their outputs in the autograd graph): the outputs are kept apart so
that they are released after the backward (they would keep the pre-activations alive)."""


@dataclass(frozen=True)
class Tracer:
    """``tracer(x, batch) -> Traced``: one forward pass that records its layers.
    ``stacks``: ``x`` may also be two points stacked (2, d), traced in one pass whose loss
    is (2,) (one sum per point) and whose sites carry a leading point axis on their inputs
    (unless the input is the same at both points) and their output gradients."""

    trace: Callable[[Any, tuple[Any, ...]], Traced]
    stacks: bool = False

    def __call__(self, x: Any, batch: tuple[Any, ...]) -> Traced:
        return self.trace(x, batch)


# -- per-layer algebra ------------------------------------------------------------------------
def _materialise(site: Site, g: torch.Tensor) -> bool:
    """Per-sample rows (O·K numbers per sample) where they are cheaper than L × L Grams."""
    if site.kind in ("scale", "embedding"):
        return site.kind == "scale"
    if site.kind == "linear":
        length, k = site.inputs.shape[1:]
        # rows come out O × K: the torch layout (an MLP's K × O layers have L = 1: ghost)
        return site.transposed and length > 1 and g.shape[-1] * k <= length * length
    assert site.conv is not None
    kh, kw = site.conv.kernel_size
    length = g.shape[2] * g.shape[3]
    return g.shape[1] * site.inputs.shape[1] * kh * kw <= length * length


def _rows(site: Site, g: torch.Tensor) -> list[torch.Tensor]:
    """Per-sample gradients of a site: the weight's (b, O·K), then the bias's (b, O)."""
    b = g.shape[0]
    if site.kind == "scale":
        weight = (site.inputs * g).sum(-1)
    elif site.kind == "linear":
        weight = torch.einsum("blo,blk->bok", g, site.inputs).flatten(1)
    else:
        conv, a = site.conv, site.inputs
        assert conv is not None
        weight = conv2d_weight(  # the batch as groups: one weight gradient per sample
            a.reshape(1, -1, *a.shape[2:]), (b * g.shape[1], a.shape[1], *conv.kernel_size),
            g.reshape(1, -1, *g.shape[2:]), stride=conv.stride, padding=conv.padding,
            dilation=conv.dilation, groups=b).reshape(b, -1)
    return [weight, *([_bias_rows(site, g)] if site.bias is not None else [])]


def _patch_gram(conv: nn.Conv2d, first: torch.Tensor, second: torch.Tensor,
                out: tuple[int, int]) -> torch.Tensor:
    """Inner products ⟨patch_l, patch'_m⟩ of the convolution's unfolded input patches of two
    inputs, (b, L, L) over the L = H'·W' output positions, without unfolding: the Gram
    matrix of the padded pixels (Σ over channels), summed over the kernel offsets (u, v),
    ⟨patch_(i,j), patch'_(i',j')⟩ = Σ_{u,v} ⟨pixel(s·i + d·u, s·j + d·v),
    pixel'(s·i' + d·u, s·j' + d·v)⟩ (strides s, dilations d); the sum over u, then v."""
    assert not isinstance(conv.padding, str)  # refused by :func:`_handled`
    (ph, pw), (sh, sw), (dh, dw) = conv.padding, conv.stride, conv.dilation
    kh, kw = conv.kernel_size
    b, c = first.shape[:2]
    pixels = [F.pad(a, (pw, pw, ph, ph)) for a in (first, second)]
    hp, wp = pixels[0].shape[2:]
    gram = torch.bmm(pixels[0].reshape(b, c, -1).transpose(1, 2), pixels[1].reshape(b, c, -1))
    rows = _shifted_sum(gram.view(b, hp, wp, hp, wp), (1, 3), [dh * u for u in range(kh)],
                        out[0], sh)
    patches = _shifted_sum(rows, (2, 4), [dw * v for v in range(kw)], out[1], sw)
    return patches.reshape(b, out[0] * out[1], out[0] * out[1])


def _shifted_sum(t: torch.Tensor, dims: tuple[int, int], offsets: list[int], size: int,
                 step: int) -> torch.Tensor:
    """Σ_o of ``t`` at indices o + step·k (k < size) along both ``dims``."""
    index = [slice(None)] * t.ndim
    total: torch.Tensor | None = None
    for o in offsets:
        index[dims[0]] = index[dims[1]] = slice(o, o + step * (size - 1) + 1, step)
        part = t[tuple(index)]
        total = part.clone() if total is None else total.add_(part)
    assert total is not None
    return total


def _ghost(terms: list[Term]) -> torch.Tensor:
    """‖Σ_t G_t,i‖² per sample = Σ_t ‖G_t,i‖² + 2 Σ_{t<u} ⟨G_t,i, G_u,i⟩, each from L × L
    Gram matrices (nothing materialised)."""
    parts = [_dot(t, u) if t is u else 2 * _dot(t, u)
             for t, u in combinations_with_replacement(terms, 2)]
    return sum(parts[1:], parts[0])


def _dot(first: Term, second: Term) -> torch.Tensor:
    """⟨G_i, G'_i⟩ per sample of two terms of one layer, weight and bias."""
    weight = _inner(first, second)
    if first[0].bias is None:
        return weight
    return weight + torch.linalg.vecdot(_bias_rows(*first), _bias_rows(*second))


def _inner(first: Term, second: Term) -> torch.Tensor:
    """⟨G_i, G'_i⟩ of two terms of a layer's weight: Σ_{l,m} (a_l·a'_m)(g_l·g'_m)."""
    (s1, g1), (s2, g2) = first, second
    if s1.kind == "embedding":
        same = (s1.inputs.unsqueeze(2) == s2.inputs.unsqueeze(1)).to(g1.dtype)
        return (same * torch.bmm(g1, g2.transpose(1, 2))).sum((1, 2))
    if s1.kind == "conv":
        assert s1.conv is not None
        activations = _patch_gram(s1.conv, s1.inputs, s2.inputs, (g1.shape[2], g1.shape[3]))
        return (activations * torch.bmm(g1.flatten(2).transpose(1, 2), g2.flatten(2))).sum((1, 2))
    a1, a2 = s1.inputs, s2.inputs
    if a1.shape[1] == 1:
        return torch.linalg.vecdot(a1[:, 0], a2[:, 0]) * torch.linalg.vecdot(g1[:, 0], g2[:, 0])
    return (torch.bmm(a1, a2.transpose(1, 2)) * torch.bmm(g1, g2.transpose(1, 2))).sum((1, 2))


def _bias_rows(site: Site, g: torch.Tensor) -> torch.Tensor:
    """Per-sample gradients of a site's bias, (b, O): g summed over the positions."""
    return g.sum(1) if site.kind == "linear" else g.flatten(2).sum(2)


def _linear_weighted(terms: list[Term], c: torch.Tensor, groups: Groups,
                     flat: torch.Tensor) -> None:
    """A linear layer's :meth:`Layer.write_weighted`: one batched product over the groups,
    its terms joined along the samples (Σ_t a_tᵀ g_t = [a_1; a_2]ᵀ [g_1; g_2])."""
    site = terms[0][0]
    for run, samples, shape in groups.runs:
        w = c[samples].view(*shape, 1, 1)
        gw = _joined([(g[samples].unflatten(0, shape) * w).flatten(1, 2) for _, g in terms])
        a = _joined([s.inputs[samples].unflatten(0, shape).flatten(1, 2) for s, _ in terms])
        m, k, o = shape[0], a.shape[-1], gw.shape[-1]  # gw (r, s·L, O), a (r, s·L, K)
        if site.transposed:  # torch's O × K
            torch.bmm(gw.mT, a, out=flat[run, site.weight].view(m, o, k))
        else:
            torch.bmm(a.mT, gw, out=flat[run, site.weight].view(m, k, o))
        if site.bias is not None:
            torch.sum(gw, 1, out=flat[run, site.bias])


def _embedding_weighted(terms: list[Term], c: torch.Tensor, groups: Groups,
                        flat: torch.Tensor) -> None:
    """An embedding's :meth:`Layer.write_weighted`: c_i g_il added into row id_il of its
    group's table, every term, sample and token in one accumulating write per term."""
    site = terms[0][0]
    width = terms[0][1].shape[-1]
    table = flat[:, site.weight].view(len(groups.sizes), -1, width)
    table.zero_()
    group = groups.of_samples(c.device)
    for s, g in terms:
        rows = group.unsqueeze(1).expand_as(s.inputs)
        table.index_put_((rows, s.inputs), g * c.view(-1, 1, 1), accumulate=True)


def _joined(parts: list[torch.Tensor]) -> torch.Tensor:
    """``parts`` concatenated along the samples (axis 1); one part as it is."""
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def _weighted_by_group(site: Site, g: torch.Tensor, c: torch.Tensor, groups: Groups
                       ) -> list[torch.Tensor]:
    """Σ_{i ∈ group j} c_i G_i of one term of a convolution or scale site, group by
    group: the weight's (m, O·K), then the bias's (m, O)."""
    rows = [_weighted_one(site, g[part], c[part], site.inputs[part]) for part in groups.parts]
    return [torch.stack(column) for column in zip(*rows, strict=True)]


def _weighted_one(site: Site, g: torch.Tensor, c: torch.Tensor, inputs: torch.Tensor
                  ) -> list[torch.Tensor]:
    """Σ_i c_i G_i of a convolution or scale site over the samples of ``g`` and ``inputs``:
    the weight's, then the bias's."""
    gc = g * c.view(-1, *([1] * (g.ndim - 1)))
    if site.kind == "scale":
        weight = (inputs * gc).sum((0, 2))
        reduce: tuple[int, ...] = (0, 2)
    else:
        conv = site.conv
        assert conv is not None
        weight = conv2d_weight(
            inputs, (gc.shape[1], inputs.shape[1], *conv.kernel_size), gc,
            stride=conv.stride, padding=conv.padding, dilation=conv.dilation).reshape(-1)
        reduce = (0, 2, 3)
    return [weight, *([gc.sum(reduce)] if site.bias is not None else [])]


def _same_input(first: Site, second: Site) -> bool:
    """Whether two sites read the same memory (the batch, at a network's first layer)."""
    a, b = first.inputs, second.inputs
    return (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
            and a.dtype == b.dtype)


def _stacked_layer(site: Site, g: torch.Tensor) -> Layer:
    """The difference layer of a pass over two stacked points: g (2, ...), the second
    negated; the inputs (2, ...), or without the point axis where both points share them."""
    if site.inputs.ndim < g.ndim:
        return Layer([(site, g[0] + g[1])])
    return Layer([(replace(site, inputs=site.inputs[t]), g[t]) for t in range(2)])


# -- tracing ----------------------------------------------------------------------------------
class BookkeepingOracle(TorchOracle):
    """A :class:`TorchOracle` whose clipped sums come from book-keeping (module docstring)."""

    materialises_rows = False

    def __init__(self, backend: Backend, losses: BatchLoss, data: Any, *, trace: Tracer,
                 **kw: Any) -> None:
        super().__init__(backend, losses, data, **kw)
        self.trace = trace

    def _layers(self, idx: np.ndarray, *points: Any) -> list[Layer]:
        """The per-sample gradients at one point x, or of their difference between x and
        x_prev, per layer, on the same batch ``idx``: both points in one pass where the
        tracer stacks them, else one pass after the other (the first graph is freed before
        the second is built)."""
        batch = self.batch(idx)
        if len(points) == 2 and self.trace.stacks:
            return [_stacked_layer(*term)
                    for term in self._pass(torch.stack(points), batch, [1.0, -1.0])]
        passes = [self._pass(p, batch, sign) for p, sign in zip(points, (1.0, -1.0),
                                                                  strict=False)]
        if len(passes) == 1:
            return [Layer([term]) for term in passes[0]]
        return [Layer([(s1, g1 + g2)] if _same_input(s1, s2) else [(s1, g1), (s2, g2)])
                for (s1, g1), (s2, g2) in zip(*passes, strict=True)]

    def _pass(self, x: Any, batch: tuple[Any, ...], signs: float | list[float]) -> list[Term]:
        """A forward pass at ``x`` (a point, or points stacked) and the backward of the
        loss, times ``signs`` (one per point), to the layers' outputs."""
        loss, sites, outputs = self.trace(x.detach().requires_grad_(True), batch)
        root = torch.tensor(signs, dtype=loss.dtype, device=loss.device)
        grads = torch.autograd.grad(loss, outputs, grad_outputs=root)
        return [(s, s.view(g)) for s, g in zip(sites, grads, strict=True)]

    def _sums(self, layers: list[Layer], clip: float | None, like: torch.Tensor,
              sizes: Sequence[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """((Σ_{i ∈ group j} c_i G_i)_j, stacked (m, d); (‖G_i‖)_i) over the layers'
        per-sample gradients G_i, with clip factors c_i = min(1, C/‖G_i‖) (c_i = 1 where
        ``clip`` is None); with ``sizes``, each group's mean (:meth:`_written`), else one
        group's sum."""
        with torch.no_grad():
            sq_norms = torch.stack([layer.sq_norms() for layer in layers]).sum(0)
            norms = torch.sqrt(torch.clamp(sq_norms, min=0.0))
            c = torch.ones_like(norms) if clip is None else 1.0 / torch.clamp(norms / clip,
                                                                                min=1.0)
            return self._written(layers, c, like, sizes), norms

    @staticmethod
    def _written(layers: list[Layer], c: torch.Tensor, like: torch.Tensor,
                 sizes: Sequence[int] | None) -> torch.Tensor:
        """(Σ_{i ∈ group j} c_i G_i)_j, stacked (m, d); with ``sizes``, the batch cut into
        contiguous groups of those sizes and each group's mean, c_i/|group| (folded into the
        weights: no pass over the (m, d) result), else one group's sum."""
        groups = Groups([len(c)] if sizes is None else sizes)
        if sizes is not None:
            counts = torch.tensor(groups.sizes, device=like.device)
            c = c / torch.repeat_interleave(counts.to(c.dtype), counts)
        covered = sum(part.stop - part.start for layer in layers for part in layer._parts())
        shape = (len(groups.sizes), like.shape[-1])  # every entry written, or zeros
        total = like.new_empty(shape) if covered == shape[1] else like.new_zeros(shape)
        for layer in layers:
            layer.write_weighted(c, groups, total)
        return total

    def clipped_grad_sum(self, x: Any, idx: np.ndarray, clip: float) -> Any:
        return self.clipped_grad_sum_and_norms(x, idx, clip)[0]

    def clipped_grad_sum_and_norms(self, x: Any, idx: np.ndarray, clip: float
                                   ) -> tuple[Any, Any]:
        if len(idx) == 0:
            return torch.zeros_like(x), torch.zeros(0, dtype=x.dtype, device=x.device)
        total, norms = self._sums(self._layers(idx, x), clip, x)
        return total[0], norms

    def grad_sum_and_norms(self, x: Any, idx: np.ndarray) -> tuple[Any, Any]:
        total, norms = self._sums(self._layers(idx, x), None, x)
        return total[0], norms

    def clipped_grad_diff_sum(self, x: Any, x_prev: Any, idx: np.ndarray, clip: float) -> Any:
        return self.clipped_grad_diff_sum_and_norms(x, x_prev, idx, clip)[0]

    def clipped_grad_diff_sum_and_norms(self, x: Any, x_prev: Any, idx: np.ndarray,
                                        clip: float) -> tuple[Any, Any]:
        if len(idx) == 0:
            return torch.zeros_like(x), torch.zeros(0, dtype=x.dtype, device=x.device)
        total, norms = self._sums(self._layers(idx, x, x_prev), clip, x)
        return total[0], norms

    def clipped_group_means(self, x: Any, x_prev: Any | None, groups: Sequence[np.ndarray],
                            clip: float) -> tuple[Any, Any]:
        """Every client's clipped mean from one forward and backward pass over all their
        batches (of any sizes, none empty), each client's sum a contraction over its own
        samples: no per-sample (b, d) rows where the layers allow it."""
        points = (x,) if x_prev is None else (x, x_prev)
        return self._sums(self._layers(np.concatenate(groups), *points), clip, x,
                          _sizes(groups))

    def combined_group_means(self, x: Any, x_prev: Any, groups: Sequence[np.ndarray],
                             combine: Combine) -> Any:
        """Every client's mean of α_i ∇f_i(x) + β_i ∇f_i(x_prev) from a forward and
        backward pass at each point over all their batches: the per-sample squared norms
        and inner products from each layer's Grams (its rows where materialised), the
        weights folded into each pass's output gradients (or rows)."""
        sizes = _sizes(groups)
        batch = self.batch(np.concatenate(groups))
        pairs = list(zip(self._pass(x, batch, 1.0), self._pass(x_prev, batch, 1.0),
                         strict=True))
        with torch.no_grad():
            rows = [(_rows(*t1), _rows(*t2)) if _materialise(*t1) else None for t1, t2 in pairs]
            stats = [(_dot(t1, t1), _dot(t2, t2), _dot(t1, t2)) if r is None else _row_stats(*r)
                     for (t1, t2), r in zip(pairs, rows, strict=True)]
            alpha, beta = combine(*(torch.stack(column).sum(0) for column in zip(*stats,
                                                                                  strict=True)))
            layers = [_combined_layer(t1, t2, alpha, beta, r)
                      for (t1, t2), r in zip(pairs, rows, strict=True)]
            return self._written(layers, torch.ones_like(alpha), x, sizes)


def _sizes(groups: Sequence[np.ndarray]) -> list[int]:
    sizes = [len(group) for group in groups]
    if min(sizes) == 0:
        raise ValueError("a group mean needs a non-empty batch per group")
    return sizes


def _weighted(term: Term, w: torch.Tensor) -> Term:
    """A term whose output gradient is scaled per sample by ``w``."""
    site, g = term
    return site, g * w.view(-1, *([1] * (g.ndim - 1)))


def _combined_layer(first: Term, second: Term, alpha: torch.Tensor, beta: torch.Tensor,
                    rows: tuple[list[torch.Tensor], list[torch.Tensor]] | None) -> Layer:
    """A layer's α_i G_i + β_i G'_i: its rows combined where materialised, else the two
    passes' output gradients weighted (one term where both read the same input)."""
    if rows is not None:
        return Layer([first], rows=[alpha[:, None] * a + beta[:, None] * b
                                    for a, b in zip(*rows, strict=True)])
    (s1, g1), (s2, g2) = _weighted(first, alpha), _weighted(second, beta)
    return Layer([(s1, g1 + g2)] if _same_input(s1, s2) else [(s1, g1), (s2, g2)])


def _row_stats(first: list[torch.Tensor], second: list[torch.Tensor]
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(‖G_i‖², ‖G'_i‖², ⟨G_i, G'_i⟩) from a layer's materialised rows at two points."""
    def dot(a: list[torch.Tensor], b: list[torch.Tensor]) -> torch.Tensor:
        parts = [torch.linalg.vecdot(u, v) for u, v in zip(a, b, strict=True)]
        return sum(parts[1:], parts[0])

    return dot(first, first), dot(second, second), dot(first, second)


# -- torch modules ----------------------------------------------------------------------------
SUPPORTED = (nn.Linear, nn.Conv2d, nn.GroupNorm, nn.LayerNorm, nn.Embedding)


def _handled(sub: nn.Module) -> bool:
    """Whether book-keeping handles the parametrised layer ``sub``: a supported type; a
    convolution with one group and numeric zero padding; an affine GroupNorm; a LayerNorm
    over the last axis with its weight; an embedding without renormalisation, frequency
    scaling or sparse gradients."""
    if isinstance(sub, nn.Conv2d):
        return (sub.groups == 1 and sub.padding_mode == "zeros"
                and not isinstance(sub.padding, str))
    if isinstance(sub, nn.GroupNorm):
        return sub.affine
    if isinstance(sub, nn.LayerNorm):
        return len(sub.normalized_shape) == 1 and sub.weight is not None
    if isinstance(sub, nn.Embedding):
        return sub.max_norm is None and not sub.scale_grad_by_freq and not sub.sparse
    return isinstance(sub, SUPPORTED)


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
        if not _handled(sub):
            return None
        name = f"{prefix}." if prefix else ""
        weight = offsets[f"{name}weight"]
        bias = offsets.get(f"{name}bias") if getattr(sub, "bias", None) is not None else None
        layers[sub] = (weight, bias)
        covered |= {f"{name}{n}" for n in own}
    return layers if covered == set(offsets) else None


def _module_site(sub: nn.Module, a: torch.Tensor, weight: slice, bias: slice | None) -> Site:
    b = a.shape[0]
    if isinstance(sub, nn.Linear):
        return Site("linear", a.detach().reshape(b, -1, a.shape[-1]),
                    lambda g: g.reshape(b, -1, g.shape[-1]), weight, bias)
    if isinstance(sub, nn.Conv2d):
        return Site("conv", a.detach(), lambda g: g, weight, bias, conv=sub)
    if isinstance(sub, nn.Embedding):
        ids = a.detach().reshape(b, -1)
        keep = None if sub.padding_idx is None else (ids != sub.padding_idx).unsqueeze(-1)

        def tokens(g: torch.Tensor) -> torch.Tensor:
            g = g.reshape(b, -1, g.shape[-1])
            return g if keep is None else g * keep

        return Site("embedding", ids, tokens, weight, None)
    if isinstance(sub, nn.LayerNorm):
        normed = F.layer_norm(a.detach(), sub.normalized_shape, eps=sub.eps)
        width = normed.shape[-1]
        return Site("scale", normed.reshape(b, -1, width).mT,
                    lambda g: g.reshape(b, -1, width).mT, weight, bias)
    assert isinstance(sub, nn.GroupNorm)
    normed = F.group_norm(a.detach(), sub.num_groups, eps=sub.eps).flatten(2)
    return Site("scale", normed, lambda g: g.flatten(2), weight, bias)


def module_tracer(module: nn.Module, layers: dict[nn.Module, tuple[slice, slice | None]],
                  losses: BatchLoss) -> Tracer:
    """Trace the torch ``module`` (called inside ``losses``) with forward hooks."""
    def trace(x: Any, batch: tuple[Any, ...]) -> Traced:
        sites: list[Site] = []
        outputs: list[torch.Tensor] = []
        seen: set[nn.Module] = set()
        size = len(batch[-1])  # the labels: one per sample

        def hook(sub: nn.Module, inputs: tuple[Any, ...], out: torch.Tensor) -> None:
            if sub in seen:
                raise RuntimeError("a layer used twice in one pass: book-keeping needs "
                                   "each parameter used once")
            if out.shape[0] != size:
                raise RuntimeError(f"{type(sub).__name__}'s output {tuple(out.shape)} is not "
                                   f"batched per sample ({size}): book-keeping needs each "
                                   "layer applied to the samples one by one (pass "
                                   "broadcast inputs, e.g. position ids, per sample)")
            seen.add(sub)
            sites.append(_module_site(sub, inputs[0], *layers[sub]))
            outputs.append(out)

        handles = [sub.register_forward_hook(hook) for sub in layers]
        try:
            loss = losses(x, *batch).sum()
        finally:
            for h in handles:
                h.remove()
        return loss, sites, outputs

    return Tracer(trace)


# -- the flat-parameter MLP -------------------------------------------------------------------
def mlp_tracer(shapes: list[tuple[tuple[int, int], int]], losses: BatchLoss) -> Tracer:
    """Trace an :class:`~problems.models.mlp.MLP` (weights stored fan_in × fan_out), at one
    point or two stacked (its logits take both in one pass)."""
    slices, start = [], 0
    for (fan_in, fan_out), bias in shapes:
        slices.append((slice(start, start + fan_in * fan_out),
                       slice(start + fan_in * fan_out, start + fan_in * fan_out + bias)))
        start += fan_in * fan_out + bias

    def trace(x: Any, batch: tuple[Any, ...]) -> Traced:
        sites: list[Site] = []
        outputs: list[torch.Tensor] = []

        def record(layer: int, a: Any, z: Any) -> None:  # a: (b, K), or (2, b, K) if stacked
            sites.append(Site("linear", a.detach().unsqueeze(-2), lambda g: g.unsqueeze(-2),
                              *slices[layer], transposed=False))
            outputs.append(z)

        with tapping(record):
            loss = losses(x, *batch).sum(-1)
        return loss, sites, outputs

    return Tracer(trace, stacks=True)


def bookkeeping_tracer(model: Any, losses: BatchLoss) -> Tracer | None:
    """The tracer of ``model`` (an MLP or a TorchModel), or None where book-keeping does not
    apply (an unsupported layer)."""
    if isinstance(model, MLP):
        return mlp_tracer(model.shapes, losses)
    if isinstance(model, TorchModel):
        layers = module_layers(model.module, model._layout)
        return None if layers is None else module_tracer(model.module, layers, losses)
    return None
