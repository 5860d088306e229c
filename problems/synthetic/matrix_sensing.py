"""``matrix_sensing``: xu2026 §5, low-rank matrix sensing as an NC-SC minimax problem.

    min_{U,V} max_{y∈R^n} f(U, V, y) = (1/n) Σ_i [ y_i (⟨A_i, UVᵀ⟩ − b_i) − ½ y_i² ]

x = (vec U, vec V) ∈ R^{(p+q)r} (row-major), y ∈ R^n; F(x, y; i) depends on y only through
y_i. Data: A_i with i.i.d. N(0, 1/(pq)) entries, X* = U*V*ᵀ with N(0, 1) factors rescaled
to ‖X*‖_F = ``x_star_norm``, b_i = ⟨A_i, X*⟩ + N(0, noise²); start U₀, V₀ ~ N(0, init²),
y₀ = 0. The data use ``data_seed``; the start uses the run seed.

Closed forms (notes §5.1; tested against autodiff and finite differences), with residual
r_i = ⟨A_i, UVᵀ⟩ − b_i and M = (1/n) Σ r_i A_i:

* y*(x) = r(x), Φ(x) = (1/2n) Σ r_i², ∇_U Φ = M V, ∇_V Φ = Mᵀ U;
* per sample ∇_U F = y_i A_i V, ∇_V F = y_i A_iᵀ U, ∇_y F = (r_i − y_i) e_i;
* ∇²Φ(dU, dV) = (M_δ V + M dV, M_δᵀ U + Mᵀ dU), M_δ = (1/n) Σ ⟨A_i, dU Vᵀ + U dVᵀ⟩ A_i;
* (0, 0) is a strict saddle: the eigenvalues of ∇²Φ(0) are ±σ_j((1/n) Σ b_i A_i), each r
  times, so λ_min(∇²Φ(0)) = −σ₁((1/n) Σ b_i A_i) (``constants["lambda_min_at_saddle"]``).

The rescaling of X* is unspecified in the paper ("Gaussian factors (followed by a
rescaling)"). Default ‖X*‖_F = √(pq) = 20: the scale at which the measurements have unit
variance, E b_i² = ‖X*‖_F²/(pq) + noise² ≈ 1, which is what the N(0, 1/(pq)) design is
normalised for. It was chosen before any run and not tuned to Table 2 (notes §5.1 lists
Φ(x₀) and λ_min(∇²Φ(x₀)) for other scales; ``None`` keeps the raw N(0, 1) factors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import NonNegativeFloat, PositiveFloat

from problems.backend import Backend
from problems.base import DataSize, Instance, Problem, register_problem
from problems.minimax import MinimaxOracle, TorchMinimaxOracle
from problems.oracles import Oracle
from problems.params import Count, params


@params
class MatrixSensingParams:
    p: Count = 20
    q: Count = 20
    rank: Count = 3
    n: Count = 400
    noise: NonNegativeFloat = 0.01
    init: NonNegativeFloat = 0.1
    x_star_norm: PositiveFloat | None = 20.0  # None: no rescaling
    data_seed: int = 0


@dataclass
class MatrixSensingInstance(Instance):
    p_: MatrixSensingParams = MatrixSensingParams()
    a: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    b: np.ndarray = field(default_factory=lambda: np.zeros(0))
    x_star: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def factors(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(U, V) from the flat x."""
        p, q, r = self.p_.p, self.p_.q, self.p_.rank
        return x[: p * r].reshape(p, r), x[p * r:].reshape(q, r)

    def oracle(self, backend: Backend) -> Oracle:
        if backend.name == "numpy":
            return MatrixSensingOracle(self, backend)
        if backend.name == "torch":
            return self.torch_oracle(backend)
        raise ValueError(f"matrix_sensing runs on numpy or torch, not {backend.name!r}")

    def torch_oracle(self, backend: Backend) -> TorchMinimaxOracle:
        """The autodiff oracle of the same F (Φ by inner solve, ∇²Φ by Schur complement)."""
        p, q, r = self.p_.p, self.p_.q, self.p_.rank

        def F(x: Any, y: Any, a: Any, b: Any, e: Any) -> Any:
            u, v = x[: p * r].reshape(p, r), x[p * r:].reshape(q, r)
            y_i = (y * e).sum()
            return y_i * ((a * (u @ v.T)).sum() - b) - 0.5 * y_i * y_i

        return TorchMinimaxOracle(backend, F, (self.a, self.b, np.eye(self.n)), x0=self.x0,
                                  y0=np.zeros(self.n), y_smoothness=1.0 / self.n,
                                  clients=self.clients)

    def lambda_min_origin(self) -> float:
        """λ_min(∇²Φ(0)) = −σ₁((1/n) Σ b_i A_i)."""
        m0 = np.einsum("i,ipq->pq", self.b, self.a) / self.n
        return -float(np.linalg.svd(m0, compute_uv=False)[0])


class MatrixSensingOracle(MinimaxOracle):
    """Closed-form numpy oracle (module docstring), written as GEMMs on the flattened
    design A ∈ R^{n×pq} (and its transposed copy for the V-partials)."""

    def __init__(self, inst: MatrixSensingInstance, backend: Backend) -> None:
        super().__init__(backend, n=inst.n, d=inst.d, d_y=inst.n, x0=inst.x0,
                         y0=np.zeros(inst.n), clients=inst.clients)
        self.inst = inst
        p = inst.p_
        self.a_flat = np.ascontiguousarray(inst.a.reshape(inst.n, p.p * p.q))
        self.a_t = np.ascontiguousarray(inst.a.transpose(0, 2, 1))  # A_iᵀ
        self._all = np.arange(inst.n)

    def _whole(self, idx: np.ndarray | None) -> bool:
        """Whether ``idx`` is the whole data in order (then no gather copy is made)."""
        return idx is None or (len(idx) == self.n and bool(np.all(idx == self._all)))

    def _design(self, idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if self._whole(idx):
            return self.a_flat, self.inst.b
        return self.a_flat[idx], self.inst.b[idx]

    def residuals(self, x: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        u, v = self.inst.factors(x)
        a, b = self._design(idx)
        return a @ (u @ v.T).ravel() - b

    def best_response(self, x: np.ndarray) -> np.ndarray:
        return self.residuals(x)

    def _x_partials(self, x: np.ndarray, weights: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Rows w_i (A_i V, A_iᵀ U), flattened: ∇_x F at y_i = w_i."""
        p, q, r = self.inst.p_.p, self.inst.p_.q, self.inst.p_.rank
        u, v = self.inst.factors(x)
        b = len(idx)
        a, a_t = (self.inst.a, self.a_t) if self._whole(idx) else (self.inst.a[idx],
                                                                   self.a_t[idx])
        gu = (a.reshape(b * p, q) @ v).reshape(b, p * r)
        gv = (a_t.reshape(b * q, p) @ u).reshape(b, q * r)
        return np.concatenate([gu, gv], axis=1) * weights[:, None]

    def per_sample_partials(self, x: np.ndarray, y: np.ndarray, idx: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
        return self.per_sample_x_partials(x, y, idx), self.per_sample_y_partials(x, y, idx)

    def per_sample_x_partials(self, x: np.ndarray, y: np.ndarray, idx: np.ndarray
                              ) -> np.ndarray:
        idx = np.asarray(idx)
        return self._x_partials(x, y[idx], idx)

    def per_sample_y_partials(self, x: np.ndarray, y: np.ndarray, idx: np.ndarray
                              ) -> np.ndarray:
        idx = np.asarray(idx)
        gy = np.zeros((len(idx), self.d_y))
        gy[np.arange(len(idx)), idx] = self.residuals(x, idx) - y[idx]
        return gy

    def per_sample_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx)
        return self._x_partials(x, self.residuals(x, idx), idx)

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        return 0.5 * float(np.sum(self.residuals(x, idx) ** 2))

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        """Σ_i r_i (A_i V, A_iᵀ U) = (M V, Mᵀ U) with M = Σ_i r_i A_i."""
        u, v = self.inst.factors(x)
        a, _ = self._design(idx)
        m = (self.residuals(x, idx) @ a).reshape(self.inst.p_.p, self.inst.p_.q)
        return np.concatenate([(m @ v).ravel(), (m.T @ u).ravel()])

    def dense_hessian(self, x: np.ndarray) -> np.ndarray:
        """∇²Φ(x) over the whole data: Gauss–Newton JᵀJ/n (J_i = (A_i V, A_iᵀ U)) plus the
        residual blocks M ⊗ I_r, M = (1/n) Σ r_i A_i (the HVP's closed form, assembled)."""
        p, q, r = self.inst.p_.p, self.inst.p_.q, self.inst.p_.rank
        idx = np.arange(self.n)
        jac = self._x_partials(x, np.ones(self.n), idx)
        m = (self.residuals(x) @ self.a_flat).reshape(p, q) / self.n
        cross = np.kron(m, np.eye(r))
        h = jac.T @ jac / self.n
        h[: p * r, p * r:] += cross
        h[p * r:, : p * r] += cross.T
        return h

    def _hvp_sum(self, x: np.ndarray, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        p, q = self.inst.p_.p, self.inst.p_.q
        u, v = self.inst.factors(x)
        du, dv = self.inst.factors(w)
        a, _ = self._design(idx)
        dr = a @ (du @ v.T + u @ dv.T).ravel()
        m = (self.residuals(x, idx) @ a).reshape(p, q)
        m_delta = (dr @ a).reshape(p, q)
        return np.concatenate([(m_delta @ v + m @ dv).ravel(), (m_delta.T @ u + m.T @ du).ravel()])


@register_problem
class MatrixSensing(Problem):
    """xu2026 §5: synthetic low-rank matrix sensing as an NC-SC minimax problem."""

    name = "matrix_sensing"
    Params = MatrixSensingParams
    backends = ("numpy", "torch")
    minimax = True
    description = "low-rank matrix sensing, min_{U,V} max_y (xu2026 §5; strict saddle at 0)"

    def size(self) -> DataSize:
        p: MatrixSensingParams = self.params
        return DataSize(p.n)

    def build(self, seed: int) -> MatrixSensingInstance:
        p: MatrixSensingParams = self.params
        rng = np.random.default_rng(p.data_seed)
        a = rng.normal(0.0, 1.0 / np.sqrt(p.p * p.q), size=(p.n, p.p, p.q))
        x_star = rng.standard_normal((p.p, p.rank)) @ rng.standard_normal((p.q, p.rank)).T
        if p.x_star_norm is not None:
            x_star *= p.x_star_norm / np.linalg.norm(x_star)
        b = np.einsum("ipq,pq->i", a, x_star) + rng.normal(0.0, p.noise, size=p.n)
        d = (p.p + p.q) * p.rank
        x0 = np.random.default_rng(seed).normal(0.0, p.init, size=d)
        inst = MatrixSensingInstance(name=self.name, n=p.n, d=d, x0=x0, p_=p, a=a, b=b,
                                     x_star=x_star)
        inst.constants.update(d_y=p.n, mu=1.0 / p.n, saddle=0.0,
                              lambda_min_at_saddle=inst.lambda_min_origin(),
                              x_star_fro=float(np.linalg.norm(x_star)))
        return inst
