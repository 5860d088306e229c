"""Minimax problems min_x max_{y∈Y} f(x, y), f(x, y) = (1/n) Σ_i F(x, y; ξ_i).

A :class:`MinimaxOracle` is an :class:`~problems.oracles.Oracle` of the *value function*
Φ(x) = max_{y∈Y} f(x, y): ``loss``, ``grad`` and ``hvp`` are Φ(x), ∇Φ(x) and ∇²Φ(x)·v, so the
metrics (Φ, ‖∇Φ‖, λ_min(∇²Φ)) and every minimisation method run on Φ unchanged. Its
per-sample gradients are ∇_x F(x, y*(x); ξ_i), whose mean is ∇Φ(x) exactly (Danskin:
∇Φ(x) = ∇_x f(x, y*(x)) since ∇_y f(x, y*(x)) = 0 in the interior; xu2026 eq. 4).

Minimax algorithms use the joint access on top: ``per_sample_partials(x, y, idx)`` →
(∇_x F, ∇_y F) per sample, ``partials`` (their means), ``project_y`` (Π_Y), ``y0`` and the
best response ``best_response(x)`` = y*(x).

Problems with closed forms (``problems.synthetic.matrix_sensing``, ``ncsc_double_well``)
write them in numpy. :class:`TorchMinimaxOracle` needs only the per-sample F, written once
in ``xp``: partials by ``torch.func`` and Φ by an accurate inner solve (projected gradient
ascent to ‖G‖ ≤ ``inner_tol``, started at y0), ∇Φ by Danskin, and ∇²Φ·v by the Schur
complement f_xx v − f_xy f_yy⁻¹ f_yx v at (x, y*(x)) with conjugate gradients on −f_yy
(valid where y*(x) is interior to Y, e.g. Y = R^{d_y}).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from problems.backend import Backend, TorchBackend
from problems.oracles import Oracle

PerSampleF = Callable[..., Any]
"""``F(x, y, *datum) -> scalar`` for one sample (vmapped over the data)."""


class MinimaxOracle(Oracle):
    """Φ's oracle plus the joint (x, y) access of minimax algorithms."""

    def __init__(self, backend: Backend, *, n: int, d: int, d_y: int, x0: np.ndarray,
                 y0: np.ndarray, **kw: Any) -> None:
        super().__init__(backend, n=n, d=d, x0=x0, **kw)
        self.d_y = d_y
        self.y0 = backend.asarray(y0)

    @abstractmethod
    def per_sample_partials(self, x: Any, y: Any, idx: np.ndarray) -> tuple[Any, Any]:
        """(∇_x F(x, y; ξ_i), ∇_y F(x, y; ξ_i)) for i in idx: (b, d) and (b, d_y) arrays."""

    def per_sample_x_partials(self, x: Any, y: Any, idx: np.ndarray) -> Any:
        """∇_x F(x, y; ξ_i) alone (closed forms override it to skip the y-part)."""
        return self.per_sample_partials(x, y, idx)[0]

    def per_sample_y_partials(self, x: Any, y: Any, idx: np.ndarray) -> Any:
        """∇_y F(x, y; ξ_i) alone (closed forms override it to skip the x-part)."""
        return self.per_sample_partials(x, y, idx)[1]

    @abstractmethod
    def best_response(self, x: Any) -> Any:
        """y*(x) = argmax_{y∈Y} f(x, y) over the whole training set."""

    def project_y(self, y: Any) -> Any:
        """Π_Y(y) (default Y = R^{d_y}: the identity)."""
        return y

    def partials(self, x: Any, y: Any, idx: np.ndarray | None = None) -> tuple[Any, Any]:
        """(∇_x f, ∇_y f) averaged over ``idx`` (all samples if None), in chunks."""
        def sums(chunk: np.ndarray) -> Any:
            gx, gy = self.per_sample_partials(x, y, chunk)
            return self.xp.concat([gx.sum(axis=0), gy.sum(axis=0)])

        joint = self._mean(sums, idx)
        return joint[: self.d], joint[self.d:]

    def per_sample_grads(self, x: Any, idx: np.ndarray) -> Any:
        """∇_x F(x, y*(x); ξ_i): the per-sample gradients of Φ's finite sum."""
        return self.per_sample_partials(x, self.best_response(x), idx)[0]


class TorchMinimaxOracle(MinimaxOracle):
    """Autodiff minimax oracle: torch.func partials, Φ by an inner solve (module docstring).

    ``project`` is Π_Y in torch ops; ``y_smoothness`` (L_y ≥ the largest eigenvalue of
    −∇²_yy f) sets the inner ascent step 1/L_y.
    """

    def __init__(self, backend: Backend, F: PerSampleF, data: Sequence[np.ndarray], *,
                 x0: np.ndarray, y0: np.ndarray, y_smoothness: float,
                 project: Callable[[Any], Any] | None = None, inner_tol: float = 1e-10,
                 inner_iters: int = 100_000, cg_tol: float = 1e-12, **kw: Any) -> None:
        assert isinstance(backend, TorchBackend)
        super().__init__(backend, n=len(data[0]), d=len(x0), d_y=len(y0), x0=x0, y0=y0, **kw)
        from torch import func

        self.torch, self._func = backend.torch, func
        self.data = tuple(backend.asarray(a) for a in data)
        self._project = project or (lambda y: y)
        self.step_y = 1.0 / y_smoothness
        self.inner_tol, self.inner_iters, self.cg_tol = inner_tol, inner_iters, cg_tol
        in_dims = (None, None) + (0,) * len(self.data)
        self._psp = func.vmap(func.grad(F, argnums=(0, 1)), in_dims=in_dims)
        self._values = func.vmap(F, in_dims=in_dims)
        self._last: tuple[Any, Any] | None = None

    def batch(self, idx: np.ndarray) -> tuple[Any, ...]:
        i = self.backend.as_index(idx)
        return tuple(a[i] for a in self.data)

    def project_y(self, y: Any) -> Any:
        return self._project(y)

    def per_sample_partials(self, x: Any, y: Any, idx: np.ndarray) -> tuple[Any, Any]:
        gx, gy = self._psp(x, y, *self.batch(idx))
        return gx, gy

    def value(self, x: Any, y: Any, idx: np.ndarray | None = None) -> Any:
        """f(x, y) averaged over ``idx``."""
        return self._mean(lambda c: self._values(x, y, *self.batch(c)).sum(), idx)

    def best_response(self, x: Any) -> Any:
        """Projected gradient ascent y ← Π_Y(y + ∇_y f/L_y) from y0 until ‖Δy‖/step ≤
        inner_tol. Always started at y0 (a warm start from an earlier x would make the
        result depend on the call history in the last bits); the last (x, y*) is cached."""
        if self._last is not None and self.torch.equal(self._last[0], x):
            return self._last[1]
        y = self.y0
        for _ in range(self.inner_iters):
            y_next = self.project_y(y + self.step_y * self.partials(x, y)[1])
            moved = float(self.torch.linalg.vector_norm(y_next - y)) / self.step_y
            y = y_next
            if moved <= self.inner_tol:
                break
        self._last = (x.clone(), y)
        return y

    # -- Φ --------------------------------------------------------------------------------
    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        y = self.best_response(x)
        return self._values(x, y, *self.batch(idx)).sum()

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self.per_sample_grads(x, idx).sum(axis=0)

    def _joint_hvp(self, x: Any, y: Any, vx: Any, vy: Any) -> tuple[Any, Any]:
        """∇²f(x, y)·(vx, vy) over the whole training set, split into (x, y) parts."""
        def grads(xx: Any, yy: Any) -> tuple[Any, Any]:
            return self.partials(xx, yy)

        tangents = self._func.jvp(grads, (x, y), (vx, vy))[1]
        return tangents[0], tangents[1]

    def hvp(self, x: Any, v: Any, idx: np.ndarray | None = None) -> Any:
        """∇²Φ(x)·v by the Schur complement at (x, y*(x)) (full training set only)."""
        if idx is not None:
            raise ValueError("TorchMinimaxOracle.hvp is defined on the whole training set")
        y = self.best_response(x)
        zero_x, zero_y = self.torch.zeros_like(x), self.torch.zeros_like(y)
        fxx_v, fyx_v = self._joint_hvp(x, y, v, zero_y)
        w = self._cg(lambda u: -self._joint_hvp(x, y, zero_x, u)[1], fyx_v)
        fxy_w = self._joint_hvp(x, y, zero_x, w)[0]
        return fxx_v + fxy_w

    def _hvp_sum(self, x: Any, v: Any, idx: np.ndarray) -> Any:
        """Batch HVPs of Φ are undefined (y* is a whole-data quantity): ``hvp`` refuses them."""
        raise ValueError("TorchMinimaxOracle.hvp is defined on the whole training set")

    def _cg(self, apply: Callable[[Any], Any], b: Any) -> Any:
        """Solve apply(w) = b (apply symmetric positive definite) by conjugate gradients."""
        w = self.torch.zeros_like(b)
        r = b.clone()
        p = r.clone()
        rr = float(r @ r)
        scale = max(rr, 1e-300)
        for _ in range(10 * len(b)):
            if rr <= self.cg_tol**2 * scale:
                break
            ap = apply(p)
            step = rr / float(p @ ap)
            w = w + step * p
            r = r - step * ap
            rr_next = float(r @ r)
            p = r + (rr_next / rr) * p
            rr = rr_next
        return w
