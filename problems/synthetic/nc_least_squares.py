"""``nc_least_squares``: huang2025 eq. (22), non-convex regularised least squares.

f_ij(x) = ½(a_ijᵀx − b_ij)² + (λ/2) Σ_k x_k² / (1 + x_k²),  F = (1/MN) Σ_ij f_ij.

Data as in huang2025 §5(a): a_ij ~ U[−1, 1]^d, one x* ~ N(0, I_d) shared by all clients,
b_ij = a_ijᵀx* + φ_ij with φ ~ N(0, noise_var). Each of the M clients draws ``base_n``
samples and duplicates them ``dup`` times (N = base_n · dup), so F is the same for every
N and only privacy noise and sampling change (the paper's scheme: a record then appears
``dup`` times, and its person's privacy is a group-privacy ε). Each client draws its records
from its own random stream, so growing ``base_n`` (dup = 1) adds fresh records and keeps
the first ones: the datasets of a sweep over base_n are nested. x⁰ = 0. Gradients are unbounded in x
(no Lipschitz constant): the point of the experiment. Per-sample smoothness
L ≤ max_i ‖a_i‖² + λ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import NonNegativeFloat

from problems.backend import Backend
from problems.base import DataSize, Instance, Problem, register_problem
from problems.oracles import BatchLoss, ClosedFormOracle, Oracle, autodiff_oracle
from problems.params import Count, params


@params
class NCLeastSquaresParams:
    clients: Count = 10
    d: Count = 10
    lam: NonNegativeFloat = 1.0
    base_n: Count = 2000
    dup: Count = 1
    noise_var: NonNegativeFloat = 2.0
    data_seed: int = 0


@dataclass
class NCLeastSquaresInstance(Instance):
    p: NCLeastSquaresParams = NCLeastSquaresParams()
    a: np.ndarray = field(default_factory=lambda: np.zeros(0))
    b: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def losses_fn(self, backend: Backend) -> BatchLoss:
        xp, lam = backend.xp, self.p.lam

        def losses(x: Any, a: Any, b: Any) -> Any:
            r = xp.sum(a * x, axis=-1) - b
            return 0.5 * r * r + 0.5 * lam * xp.sum(x * x / (1.0 + x * x))

        return losses

    def oracle(self, backend: Backend) -> Oracle:
        if backend.name == "numpy":
            return NCLeastSquaresNumpyOracle(self, backend)
        return autodiff_oracle(backend, self.losses_fn(backend), (self.a, self.b),
                               x0=self.x0, clients=self.clients)


class NCLeastSquaresNumpyOracle(ClosedFormOracle):
    """Closed-form gradients: a(aᵀx − b) + λ x / (1 + x²)² (elementwise)."""

    def __init__(self, inst: NCLeastSquaresInstance, backend: Backend) -> None:
        super().__init__(backend, n=inst.n, d=inst.d, x0=inst.x0, clients=inst.clients)
        self.inst = inst
        self._losses = inst.losses_fn(backend)
        self._last: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def per_sample_losses(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.asarray(self._losses(x, self.inst.a[idx], self.inst.b[idx]))

    def per_sample_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        a, b = self._rows(idx)
        grads = a * (a @ x - b)[:, None]
        grads += self.inst.p.lam * x / (1.0 + x * x) ** 2
        return grads

    def _rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a_i, b_i) for i in ``idx``; the last gather is kept, since PriSMA asks for the
        same batch at xᵗ and xᵗ⁻¹ (line 10)."""
        if self._last is None or self._last[0] is not idx:
            self._last = (idx, np.take(self.inst.a, idx, axis=0), np.take(self.inst.b, idx))
        return self._last[1], self._last[2]

    def _hvp_sum(self, x: np.ndarray, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        a = self.inst.a[idx]
        x2 = x * x
        reg = self.inst.p.lam * (1.0 - 3.0 * x2) / (1.0 + x2) ** 3 * v
        return a.T @ (a @ v) + len(idx) * reg


@register_problem
class NCLeastSquares(Problem):
    """huang2025 eq. (22) with M clients and the N-by-duplication scheme."""

    name = "nc_least_squares"
    Params = NCLeastSquaresParams
    description = "non-convex regularised least squares, M clients (huang2025 eq. 22)"

    def size(self) -> DataSize:
        p: NCLeastSquaresParams = self.params
        return DataSize.split(p.base_n * p.dup * p.clients, p.clients)

    def build(self, seed: int) -> NCLeastSquaresInstance:
        p: NCLeastSquaresParams = self.params
        x_star = np.random.default_rng(p.data_seed).standard_normal(p.d)
        a_parts, b_parts = [], []
        for client in range(p.clients):  # own streams: a larger base_n extends the records
            a = np.random.default_rng([p.data_seed, client]).uniform(
                -1.0, 1.0, size=(p.base_n, p.d))
            noise = np.random.default_rng([p.data_seed, client, 1]).normal(
                0.0, np.sqrt(p.noise_var), size=p.base_n)
            b = a @ x_star + noise
            a_parts.append(np.tile(a, (p.dup, 1)))
            b_parts.append(np.tile(b, p.dup))
        per_client = p.base_n * p.dup
        n = per_client * p.clients
        a_all = np.concatenate(a_parts)
        return NCLeastSquaresInstance(
            name=self.name,
            n=n,
            d=p.d,
            x0=np.zeros(p.d),
            constants={
                "L": float(np.max(np.sum(a_all**2, axis=1)) + p.lam),
                "per_client_n": per_client,
            },
            clients=[np.arange(k * per_client, (k + 1) * per_client) for k in range(p.clients)],
            p=p,
            a=a_all,
            b=np.concatenate(b_parts),
        )
