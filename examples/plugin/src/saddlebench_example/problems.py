"""``rosenbrock_sum``: the Rosenbrock function as an exact finite sum.

    f_i(x) = R(x) + ⟨ξ_i, x⟩,   R(x) = Σ_{j<d-1} a (x_{j+1} − x_j²)² + (1 − x_j)²

The ξ_i come in pairs (ξ, −ξ), so F = (1/n) Σ f_i = R exactly: the minimum is x = 1 with
F* = 0, while every per-sample gradient carries noise of norm ``noise``. The start is the
classic (−1.2, 1, −1.2, 1, ...). numpy uses the closed forms below; torch and jax
differentiate the same per-sample loss, written once in ``xp``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from annotated_types import Ge, MultipleOf
from pydantic import NonNegativeFloat, PositiveFloat

from problems import Instance, Problem, register_problem
from problems.backend import Backend
from problems.oracles import ClosedFormOracle, Oracle, autodiff_oracle
from problems.params import params


@params
class RosenbrockParams:
    d: Annotated[int, Ge(2)] = 10
    n: Annotated[int, Ge(2), MultipleOf(2)] = 1000  # even: the noise comes in pairs
    a: PositiveFloat = 10.0  # the valley's steepness (the classic function has 100)
    noise: NonNegativeFloat = 1.0  # ‖ξ_i‖
    data_seed: int = 0


@dataclass
class RosenbrockInstance(Instance):
    a: float = 10.0
    xi: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def losses(self, backend: Backend) -> Any:
        xp, a = backend.xp, self.a

        def losses(x: Any, xi: Any) -> Any:
            valley = a * xp.sum((x[1:] - x[:-1] ** 2) ** 2) + xp.sum((1.0 - x[:-1]) ** 2)
            return valley + xp.sum(xi * x, axis=-1)

        return losses

    def oracle(self, backend: Backend) -> Oracle:
        if backend.name == "numpy":
            return RosenbrockOracle(self, backend)
        return autodiff_oracle(backend, self.losses(backend), (self.xi,), x0=self.x0)


class RosenbrockOracle(ClosedFormOracle):
    """∇R and ∇²R·v in closed form (∇²R is tridiagonal); the ξ terms are linear."""

    def __init__(self, inst: RosenbrockInstance, backend: Backend) -> None:
        super().__init__(backend, n=inst.n, d=inst.d, x0=inst.x0)
        self.inst = inst

    def _valley_grad(self, x: np.ndarray) -> np.ndarray:
        a, r = self.inst.a, x[1:] - x[:-1] ** 2
        g = np.zeros_like(x)
        g[:-1] = -4 * a * x[:-1] * r - 2 * (1 - x[:-1])
        g[1:] += 2 * a * r
        return g

    def per_sample_losses(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        a = self.inst.a
        valley = a * np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum((1 - x[:-1]) ** 2)
        return valley + self.inst.xi[idx] @ x

    def per_sample_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self._valley_grad(x)[None, :] + self.inst.xi[idx]

    def _hvp_sum(self, x: np.ndarray, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        a, r = self.inst.a, x[1:] - x[:-1] ** 2
        diag = np.zeros_like(x)
        diag[:-1] = -4 * a * r + 8 * a * x[:-1] ** 2 + 2
        diag[1:] += 2 * a
        off = -4 * a * x[:-1]  # ∂²R/∂x_j∂x_{j+1}
        hv = diag * v
        hv[:-1] += off * v[1:]
        hv[1:] += off * v[:-1]
        return len(idx) * hv


@register_problem
class RosenbrockSum(Problem):
    """Rosenbrock's valley plus paired linear noise: an exact finite sum with F = R."""

    name = "rosenbrock_sum"
    Params = RosenbrockParams
    description = "Rosenbrock valley as a finite sum (pairs of linear noise cancel)"

    def build(self, seed: int) -> RosenbrockInstance:
        p: RosenbrockParams = self.params
        rng = np.random.default_rng(p.data_seed)
        half = rng.standard_normal((p.n // 2, p.d))
        half *= p.noise / np.linalg.norm(half, axis=1, keepdims=True)
        x0 = np.resize([-1.2, 1.0], p.d)
        return RosenbrockInstance(name=self.name, n=p.n, d=p.d, x0=x0,
                                  constants={"f_star": 0.0}, a=p.a,
                                  xi=np.concatenate([half, -half]))
