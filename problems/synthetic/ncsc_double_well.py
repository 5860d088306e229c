"""``ncsc_double_well``: a nonconvex–strongly-concave family with closed forms (xu2026 Table 1
rate checks; not from a paper).

    F(x, y; i) = ⟨a_i, x⟩ + Σ_k ¼(x_k² − 1)² + yᵀBx − ⟨c_i, y⟩ − (μ/2)‖y‖²,  y ∈ R^{d_y}

B = β·Q with Q ∈ R^{d_y×d} having orthonormal columns (d_y ≥ d), so BᵀB = β²I. Data
a_i ~ N(0, s² I_d), c_i ~ N(0, s² I_{d_y}) (``data_seed``); start x₀ ~ N(0, init²/d · I)
(run seed), y₀ = 0. With ā, c̄ the data means:

* y*(x) = (Bx − c̄)/μ,  Φ(x) = ⟨ā, x⟩ + Σ_k ¼(x_k² − 1)² + ‖Bx − c̄‖²/(2μ);
* ∇Φ(x) = ā + (x³ − x) + Bᵀ(Bx − c̄)/μ,  ∇²Φ(x) = diag(3x² − 1) + (β²/μ) I;
* ∇²Φ is 6-Lipschitz on the box |x_k| ≤ 1 (``constants["hessian_lipschitz"]``, ρ_Φ of
  xu2026 Lemma 6);
* so near x = 0 (an exact saddle when the tilts vanish) λ_min(∇²Φ) = β²/μ − 1 < 0 for
  β² < μ, and f(x, ·) is μ-strongly concave with every per-sample F too (unlike
  matrix_sensing), so xu2026's Assumption 4 holds as stated.

``d``, ``d_y`` and ``n`` are free, which the rate experiments need (xu2026's ε̄ uses
d = max(d_x, d_y)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
from pydantic import NonNegativeFloat, PositiveFloat, model_validator

from problems.backend import Backend
from problems.base import DataSize, Instance, Problem, register_problem
from problems.minimax import MinimaxOracle, TorchMinimaxOracle
from problems.oracles import Oracle
from problems.params import Count, params


@params
class DoubleWellParams:
    d: Count = 10
    d_y: Count = 10
    n: Count = 2000
    mu: PositiveFloat = 1.0
    beta: NonNegativeFloat = 0.5
    spread: NonNegativeFloat = 0.3
    init: NonNegativeFloat = 0.01
    data_seed: int = 0

    @model_validator(mode="after")
    def _y_covers_x(self) -> Self:
        if self.d_y < self.d:
            raise ValueError(f"ncsc_double_well needs d_y >= d, got d_y={self.d_y}, d={self.d}")
        return self


@dataclass
class DoubleWellInstance(Instance):
    p: DoubleWellParams = DoubleWellParams()
    a: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    c: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    B: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def oracle(self, backend: Backend) -> Oracle:
        if backend.name == "numpy":
            return DoubleWellOracle(self, backend)
        if backend.name == "torch":
            return self.torch_oracle(backend)
        raise ValueError(f"ncsc_double_well runs on numpy or torch, not {backend.name!r}")

    def torch_oracle(self, backend: Backend) -> TorchMinimaxOracle:
        """The autodiff oracle of the same F (Φ by inner solve, ∇²Φ by Schur complement)."""
        B, mu = backend.asarray(self.B), self.p.mu

        def F(x: Any, y: Any, a: Any, c: Any) -> Any:
            well = 0.25 * ((x * x - 1.0) ** 2).sum()
            return (a * x).sum() + well + y @ (B @ x) - (c * y).sum() - 0.5 * mu * (y * y).sum()

        return TorchMinimaxOracle(backend, F, (self.a, self.c), x0=self.x0,
                                  y0=np.zeros(self.p.d_y), y_smoothness=mu,
                                  clients=self.clients)


class DoubleWellOracle(MinimaxOracle):
    """Closed-form numpy oracle (module docstring)."""

    def __init__(self, inst: DoubleWellInstance, backend: Backend) -> None:
        super().__init__(backend, n=inst.n, d=inst.d, d_y=inst.p.d_y, x0=inst.x0,
                         y0=np.zeros(inst.p.d_y), clients=inst.clients)
        self.inst = inst

    def _means(self, idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        a = self.inst.a if idx is None else self.inst.a[idx]
        c = self.inst.c if idx is None else self.inst.c[idx]
        return a.mean(axis=0), c.mean(axis=0)

    def best_response(self, x: np.ndarray) -> np.ndarray:
        return (self.inst.B @ x - self._means(None)[1]) / self.inst.p.mu

    def per_sample_partials(self, x: np.ndarray, y: np.ndarray, idx: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
        B, mu = self.inst.B, self.inst.p.mu
        gx = self.inst.a[idx] + (x**3 - x + B.T @ y)[None, :]
        gy = (B @ x - mu * y)[None, :] - self.inst.c[idx]
        return gx, gy

    def per_sample_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self.per_sample_partials(x, self.best_response(x), idx)[0]

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        B, mu = self.inst.B, self.inst.p.mu
        y = self.best_response(x)
        a, c = self.inst.a[idx], self.inst.c[idx]
        per = (a @ x + 0.25 * np.sum((x * x - 1.0) ** 2) + y @ (B @ x) - c @ y
               - 0.5 * mu * y @ y)
        return float(per.sum())

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self.per_sample_grads(x, idx).sum(axis=0)

    def _hvp_sum(self, x: np.ndarray, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        curvature = 3.0 * x * x - 1.0 + self.inst.p.beta**2 / self.inst.p.mu
        return len(idx) * curvature * v


@register_problem
class DoubleWell(Problem):
    """Nonconvex–strongly-concave double-well family with closed-form Φ (rate checks)."""

    name = "ncsc_double_well"
    Params = DoubleWellParams
    backends = ("numpy", "torch")
    minimax = True
    description = "NC-SC double well min_x max_y, closed-form Φ, strict saddle near 0"

    def size(self) -> DataSize:
        p: DoubleWellParams = self.params
        return DataSize(p.n)

    def build(self, seed: int) -> DoubleWellInstance:
        p: DoubleWellParams = self.params
        rng = np.random.default_rng(p.data_seed)
        q, _ = np.linalg.qr(rng.standard_normal((p.d_y, p.d)))
        a = rng.normal(0.0, p.spread, size=(p.n, p.d))
        c = rng.normal(0.0, p.spread, size=(p.n, p.d_y))
        x0 = np.random.default_rng(seed).normal(0.0, p.init / np.sqrt(p.d), size=p.d)
        return DoubleWellInstance(
            name=self.name, n=p.n, d=p.d, x0=x0,
            constants={"d_y": p.d_y, "mu": p.mu, "saddle": 0.0,
                       "lambda_min_at_saddle": p.beta**2 / p.mu - 1.0,
                       "hessian_lipschitz": 6.0},
            p=p, a=a, c=c, B=p.beta * q,
        )
