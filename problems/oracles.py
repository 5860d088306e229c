"""Oracles: per-sample gradients, gradients, HVPs and losses on one backend.

Parameters are flat vectors of the backend's array type. Indices (``idx``) are host numpy
integer arrays; ``idx=None`` means the whole training set. Means over many samples are
computed in chunks of ``eval_chunk`` so evaluation never materialises ``n × d``.

Three kinds:

* :class:`ClosedFormOracle` (numpy): the problem writes per-sample gradients and HVPs.
* :class:`TorchOracle`: ``torch.func.vmap(grad(...))`` over a per-sample loss, with
  ``chunk_size``; HVP by forward-over-reverse (``jvp`` of ``grad``).
* :class:`JaxOracle`: ``jax.jit(jax.vmap(jax.grad(...)))``; batches are padded to a few
  bucket sizes (powers of two) so Poisson batches do not recompile every step.

A problem's loss is written once as ``losses(xp, consts, x, *batch) -> (b,)`` with
broadcasting over leading axes, so the same function serves a batch (numpy, sums) and one
sample (inside ``vmap``).
"""

from __future__ import annotations

import functools
import os
from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from problems.backend import Backend, JaxBackend, TorchBackend
from problems.clipping import clip_factors, clip_rows, clip_rows_and_norms, row_norms

BatchLoss = Callable[..., Any]
"""``f(x, *batch) -> per-sample losses``; broadcasts over the batch's leading axis."""
Combine = Callable[[Any, Any, Any], tuple[Any, Any]]
"""``(‖g_i‖², ‖g'_i‖², ⟨g_i, g'_i⟩) -> (α, β)``, per-sample weights of two points' gradients
(:meth:`Oracle.combined_group_means`)."""


def group_means(xp: Any, rows: Any, groups: Sequence[np.ndarray]) -> Any:
    """(len(groups), d): the mean of ``rows`` (the groups' samples, concatenated in order)
    over each group."""
    ends = np.cumsum([len(group) for group in groups]).tolist()
    return xp.stack([xp.mean(rows[end - len(group):end], axis=0)
                     for end, group in zip(ends, groups, strict=True)])


class Oracle:
    """Access to a finite-sum objective F(x) = (1/n) Σ_i f_i(x) on one backend.

    ``materialises_rows``: whether its clipped sums and group means hold the per-sample
    (b, d) gradients (callers then bound the samples per call; book-keeping does not)."""

    materialises_rows: bool = True

    def __init__(
        self,
        backend: Backend,
        *,
        n: int,
        d: int,
        x0: np.ndarray,
        clients: Sequence[np.ndarray] | None = None,
        eval_chunk: int = 4096,
    ) -> None:
        self.backend = backend
        self.xp = backend.xp
        self.n = n
        self.d = d
        self.x0 = backend.asarray(x0)
        self.clients = list(clients) if clients else [np.arange(n)]
        self.eval_chunk = eval_chunk

    # -- what every oracle implements -------------------------------------------------
    @abstractmethod
    def per_sample_grads(self, x: Any, idx: np.ndarray) -> Any:
        """∇f_i(x) for i in idx, as a (len(idx), d) array."""

    @abstractmethod
    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any: ...

    @abstractmethod
    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any: ...

    @abstractmethod
    def _hvp_sum(self, x: Any, v: Any, idx: np.ndarray) -> Any: ...

    # -- shared ---------------------------------------------------------------------
    def norm(self, v: Any) -> float:
        """‖v‖ on the host: the one device-to-host norm sync (a host float decides a branch
        or is reported), so keep it out of a timed loop's per-step diagnostics."""
        return float(self.backend.to_numpy(self.xp.linalg.vector_norm(v)))

    def per_sample_grad_diffs(self, x: Any, x_prev: Any, idx: np.ndarray) -> Any:
        """∇f_i(x) − ∇f_i(x_prev) on the same samples (SPIDER, PriSMA)."""
        return self.per_sample_grads(x, idx) - self.per_sample_grads(x_prev, idx)

    def clipped_grad_sum(self, x: Any, idx: np.ndarray, clip: float) -> Any:
        """Σ_i ∇f_i(x)·min(1, C/‖∇f_i(x)‖) over ``idx`` (DP-SGD's clipped sum); torch models
        override it with book-keeping clipping (no per-sample gradients materialised)."""
        return self.xp.sum(clip_rows(self.xp, self.per_sample_grads(x, idx), clip), axis=0)

    def clipped_grad_sum_and_norms(self, x: Any, idx: np.ndarray, clip: float
                                   ) -> tuple[Any, Any]:
        """(:meth:`clipped_grad_sum`, (‖∇f_i(x)‖)_i): the clipped sum (the same numbers) and
        the per-sample norms the clipping computed anyway (premise data). An oracle that
        overrides only :meth:`clipped_grad_sum` keeps its sum; the norms then cost a
        per-sample pass."""
        if type(self).clipped_grad_sum is not Oracle.clipped_grad_sum:
            return (self.clipped_grad_sum(x, idx, clip),
                    row_norms(self.xp, self.per_sample_grads(x, idx)))
        rows, norms = clip_rows_and_norms(self.xp, self.per_sample_grads(x, idx), clip)
        return self.xp.sum(rows, axis=0), norms

    def grad_sum_and_norms(self, x: Any, idx: np.ndarray) -> tuple[Any, Any]:
        """(Σ_i ∇f_i(x), (‖∇f_i(x)‖)_i) over ``idx``: an unclipped sum whose per-sample norms
        are checked against an assumed bound (noisy SGD)."""
        rows = self.per_sample_grads(x, idx)
        return self.xp.sum(rows, axis=0), row_norms(self.xp, rows)

    def clipped_grad_diff_sum(self, x: Any, x_prev: Any, idx: np.ndarray, clip: float) -> Any:
        """Σ_i of the per-sample differences ∇f_i(x) − ∇f_i(x_prev), each clipped at C."""
        return self.xp.sum(
            clip_rows(self.xp, self.per_sample_grad_diffs(x, x_prev, idx), clip), axis=0)

    def clipped_grad_diff_sum_and_norms(self, x: Any, x_prev: Any, idx: np.ndarray,
                                        clip: float) -> tuple[Any, Any]:
        """(:meth:`clipped_grad_diff_sum`, (‖∇f_i(x) − ∇f_i(x_prev)‖)_i), as
        :meth:`clipped_grad_sum_and_norms`."""
        if type(self).clipped_grad_diff_sum is not Oracle.clipped_grad_diff_sum:
            return (self.clipped_grad_diff_sum(x, x_prev, idx, clip),
                    row_norms(self.xp, self.per_sample_grad_diffs(x, x_prev, idx)))
        rows, norms = clip_rows_and_norms(self.xp, self.per_sample_grad_diffs(x, x_prev, idx),
                                          clip)
        return self.xp.sum(rows, axis=0), norms

    def clipped_group_means(self, x: Any, x_prev: Any | None, groups: Sequence[np.ndarray],
                            clip: float) -> tuple[Any, Any]:
        """((len(groups), d): the mean over each group of ∇f_i(x) − ∇f_i(x_prev) (of ∇f_i(x)
        when ``x_prev`` is None), each row clipped at C; the rows' norms, groups in order).
        The groups (clients' batches) may differ in size but none is empty; all go through
        one call (jax: one kernel, torch book-keeping: one forward and backward pass)."""
        idx = np.concatenate(groups)
        rows = self.per_sample_grads(x, idx)
        if x_prev is not None:
            rows = rows - self.per_sample_grads(x_prev, idx)
        clipped, norms = clip_rows_and_norms(self.xp, rows, clip)
        return group_means(self.xp, clipped, groups), norms

    def combined_group_means(self, x: Any, x_prev: Any, groups: Sequence[np.ndarray],
                             combine: Combine) -> Any:
        """(len(groups), d): the mean over each group of α_i ∇f_i(x) + β_i ∇f_i(x_prev), with
        (α, β) = ``combine(‖∇f_i(x)‖², ‖∇f_i(x_prev)‖², ⟨∇f_i(x), ∇f_i(x_prev)⟩)`` over the
        concatenated groups (a clip of each point's gradient and of their difference is such
        a combination: PriSMA's eq. (20)). The groups may differ in size; none is empty."""
        idx = np.concatenate(groups)
        rows, rows_prev = self.per_sample_grads(x, idx), self.per_sample_grads(x_prev, idx)
        xp = self.xp
        alpha, beta = combine(xp.sum(rows * rows, axis=1), xp.sum(rows_prev * rows_prev, axis=1),
                              xp.sum(rows * rows_prev, axis=1))
        return group_means(xp, alpha[:, None] * rows + beta[:, None] * rows_prev, groups)
    def loss(self, x: Any, idx: np.ndarray | None = None) -> Any:
        """Mean loss over ``idx`` (all samples if None)."""
        return self._mean(self._loss_sum, idx, x)

    def grad(self, x: Any, idx: np.ndarray | None = None) -> Any:
        """Mean gradient over ``idx`` (all samples if None)."""
        return self._mean(self._grad_sum, idx, x)

    def hvp(self, x: Any, v: Any, idx: np.ndarray | None = None) -> Any:
        """Mean Hessian-vector product ∇²F(x) v over ``idx``."""
        return self._mean(self._hvp_sum, idx, x, v)

    def hvps(self, x: Any, vectors: Sequence[Any], idx: np.ndarray | None = None) -> list[Any]:
        """:meth:`hvp` of each of ``vectors`` (the same numbers): one at a time, or, where
        the oracle overrides :meth:`_hvp_sums` to share per-sample work across vectors (a
        dense Hessian from d HVPs), all of them per chunk."""
        if type(self)._hvp_sums is Oracle._hvp_sums:
            return [self.hvp(x, v, idx) for v in vectors]
        return list(self._mean(self._hvp_sums, idx, x, vectors))

    def _hvp_sums(self, x: Any, vectors: Sequence[Any], idx: np.ndarray) -> Any:
        """Σ_{i ∈ idx} ∇²f_i(x)·v for each of ``vectors``, stacked (the same numbers as
        :meth:`_hvp_sum`); an oracle that shares per-sample work across vectors overrides
        it, and a wrapper's reaches that sharing through it."""
        return self.xp.stack([self._hvp_sum(x, v, idx) for v in vectors])

    def _chunks(self, idx: np.ndarray | None) -> Iterator[np.ndarray]:
        idx = np.arange(self.n) if idx is None else np.asarray(idx)
        for start in range(0, len(idx), self.eval_chunk):
            yield idx[start : start + self.eval_chunk]

    def _mean(self, fn: Callable[..., Any], idx: np.ndarray | None, *args: Any) -> Any:
        count = self.n if idx is None else len(idx)
        if count == 0:
            raise ValueError("mean over an empty index set")
        chunks = self._chunks(idx)
        total = fn(*args, next(chunks))
        for chunk in chunks:
            total = total + fn(*args, chunk)
        return total / count


class ClosedFormOracle(Oracle):
    """numpy oracle whose problem supplies closed-form derivatives."""

    @abstractmethod
    def per_sample_losses(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray: ...

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self.per_sample_losses(x, idx).sum()

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self.per_sample_grads(x, idx).sum(axis=0)


class _AutodiffOracle(Oracle):
    """Shared data handling for torch and jax: data arrays live on the device."""

    def __init__(
        self,
        backend: Backend,
        losses: BatchLoss,
        data: Sequence[np.ndarray],
        *,
        x0: np.ndarray,
        clients: Sequence[np.ndarray] | None = None,
        eval_chunk: int = 4096,
    ) -> None:
        n = len(data[0])
        super().__init__(backend, n=n, d=len(x0), x0=x0, clients=clients, eval_chunk=eval_chunk)
        self.losses = losses
        self.data = tuple(
            backend.as_index(a) if np.issubdtype(a.dtype, np.integer) else backend.asarray(a)
            for a in data
        )

    def batch(self, idx: np.ndarray) -> tuple[Any, ...]:
        i = self.backend.as_index(idx)
        return tuple(a[i] for a in self.data)


#: bytes the per-sample gradients of one vmap chunk may take (``chunk_size="auto"``);
#: $SADDLEBENCH_PSG_MEMORY overrides it
PSG_MEMORY = 512 * 2**20


def auto_chunk(d: int, itemsize: int) -> int:
    """Samples per vmap chunk so that their gradients and the autograd intermediates of the
    same size (about 3·d numbers per sample) fit in the memory budget."""
    budget = int(os.environ.get("SADDLEBENCH_PSG_MEMORY", PSG_MEMORY))
    return max(1, budget // (3 * d * itemsize))


class TorchOracle(_AutodiffOracle):
    """torch.func oracle: vmap(grad) per-sample gradients (``chunk_size`` samples at a time;
    ``"auto"``: from the memory budget, :func:`auto_chunk`), jvp-of-grad HVPs."""

    def __init__(self, backend: Backend, losses: BatchLoss, data: Sequence[np.ndarray], *,
                 chunk_size: int | str | None = "auto", **kw: Any) -> None:
        assert isinstance(backend, TorchBackend)
        super().__init__(backend, losses, data, **kw)
        from torch import func

        if chunk_size == "auto":
            chunk_size = auto_chunk(self.d, self.x0.element_size())
        assert chunk_size is None or isinstance(chunk_size, int)
        self.chunk_size = chunk_size

        self._func = func
        one = self._one_sample_loss
        in_dims = (None,) + (0,) * len(self.data)
        self._psg = func.vmap(func.grad(one), in_dims=in_dims, chunk_size=chunk_size)
        self._psg_diff = func.vmap(
            lambda x, xp_, *d: func.grad(one)(x, *d) - func.grad(one)(xp_, *d),
            in_dims=(None, None) + (0,) * len(self.data),
            chunk_size=chunk_size,
        )

    def _one_sample_loss(self, x: Any, *datum: Any) -> Any:
        return self.losses(x, *datum)

    def _sum_loss(self, x: Any, *batch: Any) -> Any:
        return self.losses(x, *batch).sum()

    def per_sample_grads(self, x: Any, idx: np.ndarray) -> Any:
        return self._psg(x, *self.batch(idx))

    def per_sample_grad_diffs(self, x: Any, x_prev: Any, idx: np.ndarray) -> Any:
        return self._psg_diff(x, x_prev, *self.batch(idx))

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        with self.backend.torch.no_grad():  # type: ignore[attr-defined]
            return self._sum_loss(x, *self.batch(idx))

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        """One plain reverse pass (autograd: torch.func.grad's transform adds about a third
        to the Fashion-MNIST MLP's backward at batch 256, CPU)."""
        torch = self.backend.torch  # type: ignore[attr-defined]
        with torch.enable_grad():
            y = x.detach().requires_grad_(True)
            return torch.autograd.grad(self._sum_loss(y, *self.batch(idx)), y)[0]

    def _hvp_sum(self, x: Any, v: Any, idx: np.ndarray) -> Any:
        batch = self.batch(idx)
        g = self._func.grad(self._sum_loss)
        return self._func.jvp(lambda y: g(y, *batch), (x,), (v,))[1]


def _bucket(b: int) -> int:
    """The padded batch size: the next power of two, at least 8."""
    return max(8, 1 << max(0, (b - 1).bit_length()))


def _group_width(b: int) -> int:
    """The padded size of a client's batch in a group kernel: ``b`` rounded up to a
    multiple of 2^(⌊log₂ b⌋ − 3) (under 1/8 padding; few recompiles as sizes vary)."""
    step = 1 << max(0, b.bit_length() - 4)
    return -(-b // step) * step


@dataclass(frozen=True)
class _JaxKernels:
    """The jitted kernels of one per-sample loss: each a function of (x, …, padded indices,
    real size b, data), so one trace serves every data set of the same shapes; the group
    kernel takes (m,) sizes and (m, S) indices and gives each group's mean. ``real``:
    arrays of a padded block at its real entries (flat positions), ``spread``: per-sample
    weights of the real entries, times ``share``, put at them in a block of zeros (a jitted
    gather is a fraction of an eager one). ``pair_stats`` and ``combined_sums``: an MLP's
    book-keeping (:class:`problems.ghost_jax.MlpKernels`), else None."""

    rows: Any
    clipped_sum: Any
    group_clipped_means: Any
    loss_sum: Any
    grad_sum: Any
    hvp_sum: Any
    real: Any
    spread: Any
    pair_stats: Any = None
    combined_sums: Any = None


def _build_jax_kernels(jax: Any, jnp: Any, losses: BatchLoss, n_data: int,
                       mlp_shapes: Sequence[tuple[tuple[int, int], int]] | None = None
                       ) -> _JaxKernels:
    """The jitted kernels of ``losses``; with ``mlp_shapes`` (the loss is an MLP's), the
    clipped sums and PriSMA's combined sums by book-keeping, all groups in one pass
    (:mod:`problems.ghost_jax`), else from per-sample rows (groups vmapped)."""
    psg = jax.vmap(jax.grad(losses), in_axes=(None,) + (0,) * n_data)

    def gathered(idx: Any, data: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(a[idx] for a in data)

    def weights(idx: Any, b: Any, dtype: Any) -> Any:
        return (jnp.arange(len(idx)) < b).astype(dtype)

    def rows(x: Any, x_prev: Any, idx: Any, data: tuple[Any, ...]) -> Any:
        """∇f_i(x) for the padded batch, minus ∇f_i(x_prev) unless x_prev is None."""
        batch = gathered(idx, data)
        g = psg(x, *batch)
        return g if x_prev is None else g - psg(x_prev, *batch)

    def clipped_sum(x: Any, x_prev: Any, clip: Any, b: Any, idx: Any,
                    data: tuple[Any, ...]) -> tuple[Any, Any]:
        """(Σ_{i<b} rows_i · min(1, C/‖rows_i‖), (‖rows_i‖)_i) of the padded batch."""
        r = rows(x, x_prev, idx, data)
        norms = row_norms(jnp, r)
        return (weights(idx, b, r.dtype) * clip_factors(jnp, norms, clip)) @ r, norms

    def masked_sum(x: Any, b: Any, idx: Any, data: tuple[Any, ...]) -> Any:
        return jnp.sum(weights(idx, b, x.dtype) * losses(x, *gathered(idx, data)))

    sums = jax.vmap(clipped_sum, in_axes=(None,) * 3 + (0, 0, None))

    def group_means(x: Any, x_prev: Any, clip: Any, sizes: Any, *args: Any) -> tuple[Any, Any]:
        """Each group's clipped mean (its sum over its real size) and the norms."""
        total, norms = sums(x, x_prev, clip, sizes, *args)
        return total / sizes[:, None].astype(total.dtype), norms

    extra: dict[str, Any] = {}
    if mlp_shapes is not None:
        from problems.ghost_jax import mlp_kernels

        mlp = mlp_kernels(jax, jnp, losses, mlp_shapes, gathered)

        def clipped_sum(x: Any, x_prev: Any, clip: Any, b: Any, idx: Any,
                        data: tuple[Any, ...]) -> tuple[Any, Any]:
            total, norms = mlp.group_clipped_sums(x, x_prev, clip, jnp.reshape(b, (1,)),
                                                  idx[None], data, jnp.ones(1, x.dtype))
            return total[0], norms[0]

        def group_means(x: Any, x_prev: Any, clip: Any, sizes: Any, *args: Any
                        ) -> tuple[Any, Any]:
            return mlp.group_clipped_sums(x, x_prev, clip, sizes, *args,
                                          1 / sizes.astype(x.dtype))

        extra = {"pair_stats": jax.jit(mlp.pair_stats),
                 "combined_sums": jax.jit(mlp.combined_sums, static_argnums=3)}

    return _JaxKernels(
        rows=jax.jit(rows),
        clipped_sum=jax.jit(clipped_sum),
        group_clipped_means=jax.jit(group_means),
        loss_sum=jax.jit(masked_sum),
        grad_sum=jax.jit(jax.grad(masked_sum)),
        hvp_sum=jax.jit(lambda x, v, *args: jax.jvp(
            lambda y: jax.grad(masked_sum)(y, *args), (x,), (v,))[1]),
        real=jax.jit(lambda values, at: tuple(jnp.reshape(v, (-1,))[at] for v in values)),
        spread=jax.jit(lambda weights, share, at, size: tuple(
            jnp.zeros(size, dtype=share.dtype).at[at].set(w * share) for w in weights),
            static_argnums=3),
        **extra,
    )


#: kernels shared by every oracle built with the same ``kernel_key`` (and data arity)
_SHARED_JAX_KERNELS: dict[Hashable, _JaxKernels] = {}


class JaxOracle(_AutodiffOracle):
    """jax oracle: every kernel one jitted function of (x, …, padded indices, real size b,
    data), so the batch gather, per-sample gradients, norms, clipping and sum run in one
    dispatch with no host round trip; batches are padded to power-of-two buckets (few
    recompiles) and the padding rows get weight 0.

    ``kernel_key``: a hashable value that determines ``losses`` entirely (e.g. a frozen
    model description). Oracles with the same key share one set of jitted kernels, so a
    new run on new data of the same shapes neither traces nor lowers them again; without
    a key every oracle jits its own. ``mlp_shapes``: ``losses`` is an MLP's without a
    per-sample L2 term, whose clipped sums come by book-keeping (no (b, d) rows).
    """

    def __init__(self, backend: Backend, losses: BatchLoss, data: Sequence[np.ndarray], *,
                 kernel_key: Hashable | None = None,
                 mlp_shapes: Sequence[tuple[tuple[int, int], int]] | None = None,
                 **kw: Any) -> None:
        assert isinstance(backend, JaxBackend)
        kw.pop("chunk_size", None)
        super().__init__(backend, losses, data, **kw)
        self.materialises_rows = mlp_shapes is None
        build = functools.partial(_build_jax_kernels, backend.jax, backend.jnp, losses,
                                  len(self.data), mlp_shapes)
        if kernel_key is None:
            kernels = build()
        else:
            key = (kernel_key, len(self.data), mlp_shapes is not None)
            if key not in _SHARED_JAX_KERNELS:
                _SHARED_JAX_KERNELS[key] = build()
            kernels = _SHARED_JAX_KERNELS[key]
        self._rows = kernels.rows
        self._clipped_sum = kernels.clipped_sum
        self._group_clipped_means = kernels.group_clipped_means
        self._real = kernels.real
        self._spread = kernels.spread
        self._pair_stats = kernels.pair_stats
        self._combined_sums = kernels.combined_sums
        self._loss_sum_j = kernels.loss_sum
        self._grad_sum_j = kernels.grad_sum
        self._hvp_sum_j = kernels.hvp_sum

    def _padded(self, idx: np.ndarray) -> tuple[int, np.ndarray]:
        """(b = len(idx), idx padded to its bucket with copies of its first index)."""
        b = len(idx)
        pad = np.full(_bucket(b) - b, idx[0] if b else 0, dtype=np.int64)
        return b, np.concatenate([np.asarray(idx, dtype=np.int64), pad])

    def _unpadded(self, out: Any, b: int) -> Any:
        """The first ``b`` rows of a padded result (itself when nothing was padded)."""
        return out if len(out) == b else out[:b]

    def per_sample_grads(self, x: Any, idx: np.ndarray) -> Any:
        b, padded = self._padded(idx)
        return self._unpadded(self._rows(x, None, padded, self.data), b)

    def per_sample_grad_diffs(self, x: Any, x_prev: Any, idx: np.ndarray) -> Any:
        b, padded = self._padded(idx)
        return self._unpadded(self._rows(x, x_prev, padded, self.data), b)

    def _clipped(self, x: Any, x_prev: Any, idx: np.ndarray, clip: float) -> tuple[Any, Any]:
        b, padded = self._padded(idx)
        total, norms = self._clipped_sum(x, x_prev, clip, b, padded, self.data)
        return total, self._unpadded(norms, b)

    def clipped_grad_sum(self, x: Any, idx: np.ndarray, clip: float) -> Any:
        return self._clipped(x, None, idx, clip)[0]

    def clipped_grad_sum_and_norms(self, x: Any, idx: np.ndarray, clip: float
                                   ) -> tuple[Any, Any]:
        return self._clipped(x, None, idx, clip)

    def grad_sum_and_norms(self, x: Any, idx: np.ndarray) -> tuple[Any, Any]:
        return self._clipped(x, None, idx, float("inf"))

    def clipped_grad_diff_sum(self, x: Any, x_prev: Any, idx: np.ndarray, clip: float) -> Any:
        return self._clipped(x, x_prev, idx, clip)[0]

    def clipped_grad_diff_sum_and_norms(self, x: Any, x_prev: Any, idx: np.ndarray,
                                        clip: float) -> tuple[Any, Any]:
        return self._clipped(x, x_prev, idx, clip)

    @staticmethod
    def _block(groups: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sizes (m,), the groups' indices padded to one width (m, S) with copies of their
        last, the real entries' positions in the flattened block): the layout of the group
        kernels, S the largest group's :func:`_group_width`."""
        sizes = np.array([len(group) for group in groups])
        if sizes.min() == 0:
            raise ValueError("a group mean needs a non-empty batch per group")
        width = _group_width(int(sizes.max()))
        starts = np.cumsum(sizes) - sizes
        at = starts[:, None] + np.minimum(np.arange(width), sizes[:, None] - 1)
        padded = np.concatenate(groups).astype(np.int64, copy=False)[at]
        return sizes, padded, np.flatnonzero(np.arange(width) < sizes[:, None])

    def clipped_group_means(self, x: Any, x_prev: Any | None, groups: Sequence[np.ndarray],
                            clip: float) -> tuple[Any, Any]:
        sizes, padded, real = self._block(groups)
        means, norms = self._group_clipped_means(x, x_prev, clip, sizes, padded, self.data)
        return means, self._real((norms,), real)[0]

    def combined_group_means(self, x: Any, x_prev: Any, groups: Sequence[np.ndarray],
                             combine: Combine) -> Any:
        """Book-keeping for an MLP (:mod:`problems.ghost_jax`): one kernel gives both
        points' layers and per-sample statistics over every group, ``combine`` runs on the
        real samples' (outside the kernel: it may record them), a second kernel the
        weighted means; else the per-sample rows."""
        if self._pair_stats is None:
            return super().combined_group_means(x, x_prev, groups, combine)
        sizes, padded, real = self._block(groups)
        points, stats = self._pair_stats(x, x_prev, sizes, padded, self.data)
        weights = combine(*self._real(stats, real))
        share = self.backend.asarray(1.0 / np.repeat(sizes, sizes))  # each sample's 1/|group|
        alpha, beta = self._spread(weights, share, real, padded.size)
        return self._combined_sums(points, alpha, beta, len(groups))

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self._loss_sum_j(x, *self._padded(idx), self.data)

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self._grad_sum_j(x, *self._padded(idx), self.data)

    def _hvp_sum(self, x: Any, v: Any, idx: np.ndarray) -> Any:
        return self._hvp_sum_j(x, v, *self._padded(idx), self.data)


def autodiff_oracle(
    backend: Backend,
    losses: BatchLoss,
    data: Sequence[np.ndarray],
    *,
    kernel_key: Hashable | None = None,
    **kw: Any,
) -> Oracle:
    """The torch or jax oracle for a per-sample loss written once in ``backend.xp``.

    ``kernel_key`` (jax only): a hashable value that determines ``losses`` entirely, under
    which oracles share their jitted kernels (:class:`JaxOracle`)."""
    if isinstance(backend, TorchBackend):
        return TorchOracle(backend, losses, data, **kw)
    if isinstance(backend, JaxBackend):
        return JaxOracle(backend, losses, data, kernel_key=kernel_key, **kw)
    raise ValueError(f"autodiff oracles need torch or jax, not {backend.name!r}")
