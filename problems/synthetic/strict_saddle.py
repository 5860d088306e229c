"""``strict_saddle``: the cosine saddle of liu2024 (notes §5, testbed A) as a finite sum.

Per-sample loss (u a fixed public unit vector, P⊥ = I − uuᵀ, h(w) = √(1+‖w‖²) − 1)::

    f_i(x) = λ cos⟨u, x⟩ + μ h(P⊥x) + σ₁⟨ξ_i, x⟩ + σ₂ s_i log cosh⟨v_i, x⟩

with ξ_i, v_i uniform on the sphere and s_i = ±1. The samples come in pairs
(ξ, v, s) and (−ξ, v, −s), so the noise terms cancel *exactly* in the mean and the
empirical objective equals the population one, F(x) = λ cos⟨u,x⟩ + μ h(P⊥x), while every
per-sample gradient still carries noise of size up to σ₁ + σ₂. Hence, exactly:

* x = 0 is a strict saddle with ∇F(0) = 0 and λ_min(∇²F(0)) = −λ (when λ > 0, μ > 0);
* λ_min(∇²F(x)) = min(−λ cos⟨u,x⟩, μ (1+‖P⊥x‖²)^(−3/2)) for d ≥ 2;
* minima have F* = −λ, at ⟨u,x⟩ = π (mod 2π), P⊥x = 0;
* ``clients`` splits the samples uniformly at random (client objectives then differ; their
  average is F);
* ‖∇f_i(x)‖ ≤ G = √(λ²+μ²) + σ₁ + σ₂ everywhere (a true gradient bound, so noisy SGD's
  guarantee holds), per-sample smoothness L ≤ max(λ, μ) + σ₂,
  Hessian Lipschitz ρ ≤ λ + 0.859μ + 0.770σ₂ (notes §5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Self

import numpy as np
from annotated_types import Ge, MultipleOf
from pydantic import NonNegativeFloat, PositiveFloat, model_validator

from problems.backend import Backend
from problems.base import DataSize, Instance, Problem, register_problem
from problems.oracles import BatchLoss, ClosedFormOracle, Oracle, autodiff_oracle
from problems.params import Count, params
from problems.partition import partition


@params
class StrictSaddleParams:
    d: Annotated[int, Ge(2)] = 10
    n: Annotated[int, Ge(2), MultipleOf(2)] = 1000
    lam: PositiveFloat = 1.0
    mu: PositiveFloat = 1.0
    sigma1: NonNegativeFloat = 0.5
    sigma2: NonNegativeFloat = 0.5
    init_scale: NonNegativeFloat = 0.0
    clients: Count = 1
    data_seed: int = 0

    @model_validator(mode="after")
    def _clients_hold_samples(self) -> Self:
        if self.clients > self.n:
            raise ValueError(f"strict_saddle needs clients <= n, got clients={self.clients}, "
                             f"n={self.n}")
        return self


def _unit_rows(rng: np.random.Generator, rows: int, d: int) -> np.ndarray:
    z = rng.standard_normal((rows, d))
    return z / np.linalg.norm(z, axis=1, keepdims=True)


@dataclass
class StrictSaddleInstance(Instance):
    p: StrictSaddleParams = StrictSaddleParams()
    u: np.ndarray = field(default_factory=lambda: np.zeros(0))
    xi: np.ndarray = field(default_factory=lambda: np.zeros(0))
    v: np.ndarray = field(default_factory=lambda: np.zeros(0))
    s: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def losses_fn(self, backend: Backend) -> BatchLoss:
        xp, p = backend.xp, self.p
        u = backend.asarray(self.u)
        log2 = float(np.log(2.0))

        def losses(x: Any, xi: Any, v: Any, s: Any) -> Any:
            ux = xp.sum(u * x)
            w = x - ux * u
            base = p.lam * xp.cos(ux) + p.mu * (xp.sqrt(1.0 + xp.sum(w * w)) - 1.0)
            z = xp.sum(v * x, axis=-1)
            logcosh = xp.logaddexp(z, -z) - log2
            return base + p.sigma1 * xp.sum(xi * x, axis=-1) + p.sigma2 * s * logcosh

        return losses

    def oracle(self, backend: Backend) -> Oracle:
        if backend.name == "numpy":
            return StrictSaddleNumpyOracle(self, backend)
        return autodiff_oracle(backend, self.losses_fn(backend), (self.xi, self.v, self.s),
                               x0=self.x0, clients=self.clients)

    def lambda_min(self, x: np.ndarray) -> float:
        p = self.p
        ux = float(self.u @ x)
        r2 = float(np.sum((x - ux * self.u) ** 2))
        return min(-p.lam * np.cos(ux), p.mu * (1.0 + r2) ** -1.5)


class StrictSaddleNumpyOracle(ClosedFormOracle):
    """Closed-form per-sample gradients and HVPs of the cosine saddle. On the whole data set
    the noise terms cancel in pairs, so loss, gradient and HVP there are F's closed forms:
    O(d) instead of O(nd) (the evaluation metrics use them)."""

    def __init__(self, inst: StrictSaddleInstance, backend: Backend) -> None:
        super().__init__(backend, n=inst.n, d=inst.d, x0=inst.x0, clients=inst.clients)
        self.inst = inst
        self._losses = inst.losses_fn(backend)

    def _shared(self, x: np.ndarray) -> tuple[float, np.ndarray, float]:
        u = self.inst.u
        ux = float(u @ x)
        w = x - ux * u
        return ux, w, float(np.sqrt(1.0 + w @ w))

    def loss(self, x: np.ndarray, idx: np.ndarray | None = None) -> Any:
        if idx is not None:
            return super().loss(x, idx)
        p = self.inst.p
        ux, _, root = self._shared(x)
        return p.lam * np.cos(ux) + p.mu * (root - 1.0)

    def grad(self, x: np.ndarray, idx: np.ndarray | None = None) -> Any:
        if idx is not None:
            return super().grad(x, idx)
        p, u = self.inst.p, self.inst.u
        ux, w, root = self._shared(x)
        return -p.lam * np.sin(ux) * u + p.mu * w / root

    def hvp(self, x: np.ndarray, v: np.ndarray, idx: np.ndarray | None = None) -> Any:
        if idx is not None:
            return super().hvp(x, v, idx)
        return self._common_hvp(x, v)

    def _common_hvp(self, x: np.ndarray, vec: np.ndarray) -> np.ndarray:
        """∇²F(x)·vec for F = λ cos⟨u,x⟩ + μ h(P⊥x)."""
        i, p = self.inst, self.inst.p
        ux, w, root = self._shared(x)
        pv = vec - (i.u @ vec) * i.u
        return (-p.lam * np.cos(ux) * (i.u @ vec) * i.u
                + p.mu * (pv / root - (w @ pv) * w / root**3))

    def per_sample_losses(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        i = self.inst
        return np.asarray(self._losses(x, i.xi[idx], i.v[idx], i.s[idx]))

    def per_sample_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        i, p = self.inst, self.inst.p
        ux, w, root = self._shared(x)
        common = -p.lam * np.sin(ux) * i.u + p.mu * w / root
        v = i.v[idx]
        noise = p.sigma1 * i.xi[idx] + p.sigma2 * (i.s[idx] * np.tanh(v @ x))[:, None] * v
        return common[None, :] + noise

    def hvps(self, x: np.ndarray, vectors: Sequence[np.ndarray],
             idx: np.ndarray | None = None) -> list[np.ndarray]:
        if idx is None:
            return [self._common_hvp(x, vec) for vec in vectors]
        return super().hvps(x, vectors, idx)

    def _hvp_sum(self, x: np.ndarray, vec: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self._hvp_sums(x, [vec], idx)[0]

    def _hvp_sums(self, x: np.ndarray, vectors: Sequence[np.ndarray], idx: np.ndarray
                  ) -> np.ndarray:
        """Σ_{i ∈ idx} ∇²f_i(x)·vec for each of ``vectors``, stacked; the samples' parts that
        depend on x and idx only (the gathered v_i, s_i·sech²⟨v_i, x⟩) are computed once."""
        i, p = self.inst, self.inst.p
        commons = [len(idx) * self._common_hvp(x, vec) for vec in vectors]
        if p.sigma2 == 0.0:  # no per-sample curvature: skip gathering the v_i (an exact zero)
            return np.stack(commons)
        v = i.v[idx]
        weights = i.s[idx] * (1.0 / np.cosh(v @ x) ** 2)
        return np.stack([common + (p.sigma2 * (weights * (v @ vec))[:, None] * v).sum(axis=0)
                         for common, vec in zip(commons, vectors, strict=True)])


@register_problem
class StrictSaddle(Problem):
    """Cosine strict saddle (liu2024 notes §5 testbed A), exact finite sum."""

    name = "strict_saddle"
    Params = StrictSaddleParams
    description = "cosine strict saddle at 0 with λ_min = −lam; closed form + autodiff"

    def size(self) -> DataSize:
        p: StrictSaddleParams = self.params
        return DataSize.split(p.n, p.clients)

    def build(self, seed: int) -> StrictSaddleInstance:
        p: StrictSaddleParams = self.params
        u, xi, v, s = _samples(p.n, p.d, p.data_seed)
        x0 = p.init_scale * np.random.default_rng(seed).standard_normal(p.d) / np.sqrt(p.d)
        return StrictSaddleInstance(
            name=self.name,
            n=p.n,
            d=p.d,
            x0=x0,
            clients=partition(np.zeros(p.n), p.clients, "iid", seed=p.data_seed),
            constants={
                "G": float(np.hypot(p.lam, p.mu) + p.sigma1 + p.sigma2),
                "L": max(p.lam, p.mu) + p.sigma2,
                "rho": p.lam + 0.859 * p.mu + 0.770 * p.sigma2,
                "saddle": 0.0,
                "lambda_min_at_saddle": -p.lam,
                "f_star": -p.lam,
            },
            p=p,
            u=u,
            xi=xi,
            v=v,
            s=s,
        )


@lru_cache(maxsize=2)
def _samples(n: int, d: int, data_seed: int) -> tuple[np.ndarray, ...]:
    """u and the paired samples (ξ, v, s), (−ξ, v, −s); read-only and shared by the runs of
    one process (the seed moves only x₀), so a sweep generates its data once."""
    rng = np.random.default_rng(data_seed)
    half = n // 2
    u = _unit_rows(rng, 1, d)[0]
    xi, v = _unit_rows(rng, half, d), _unit_rows(rng, half, d)
    s = rng.choice([-1.0, 1.0], size=half)
    arrays = (u, np.concatenate([xi, -xi]), np.concatenate([v, v]), np.concatenate([s, -s]))
    for a in arrays:
        a.setflags(write=False)
    return arrays
