"""``saddle_chain``: a gated chain of K strict saddles (liu2024 E3, issue 37), where finding
an SOSP takes K escapes, so the steps to a certificate scale like the worst case's α⁻².

Population (θ_j = x_j/ℓ on the first K coordinates, ``rest`` the other d − K)::

    F(x) = A Σ_{j=1..K} w_j cos θ_j + μ h(rest),   w_1 = 1,  w_j = (1 − cos θ_{j−1})/2,

h(w) = √(1 + ‖w‖²) − 1. Stage k (k = 1..K+1) has x_1..x_{k−1} = πℓ and the rest 0; there
∇F = 0 and ∇²F is diagonal: (A/ℓ²)·(3/2, …, 3/2, 1/2) on the coordinates before k, −A/(2ℓ²)
at k (−A/ℓ² at the last, k = K), A/(2ℓ²) after it up to K − 1, 0 at K (its gate is closed),
μ on ``rest``. So stages 1..K are strict saddles with exactly one negative eigenvalue,
F = A(2 − k) falls by A from one stage to the next (by 2A at the last, whose link has no
gate after it), and stage K + 1 is the minimum, F = −KA = inf F; x₀ = 0 is stage 1, so
F(x₀) − inf F = (K + 1)A.

Links are sized for a target α (:func:`link`): the chain's third derivative is
ρ_chain = 2A/ℓ³ = ρ − 0.770σ₂ (so ρ is the per-sample Hessian-Lipschitz constant) and the
intermediate saddles have λ = A/(2ℓ²) ≥ r·√(ρα) (``ratio`` r > 1: none is an α-SOSP). The
shallowest such link has ℓ₀ = 4r√(ρα)/ρ_chain and depth A₀ = 2r√(ρα)ℓ₀² ∝ α^{3/2}; the chain
has K = ⌊B/A₀⌋ − 1 links of depth A = B/(K + 1) ≥ A₀ and width ℓ = (2A/ρ_chain)^{1/3}, so
F(x₀) − inf F = B (``gap``) exactly. Hence K ∝ α^{−3/2} and, with the algorithm's constants
held fixed over α, K escapes of Γ ∝ α^{−1/2} steps take ∝ α⁻² steps. Our links are
A₀/Φ = 256r³ times as deep as Theorem 3.4's Φ = γ^{3/2}/√ρ (γ = α/4): issue 37's sketch,
A = Φ and ℓ² = A/(4√(ρα)), has 2A/ℓ³ = 32√2·ρ ≈ 45ρ, so it is not ρ-Hessian-Lipschitz.

Per-sample noise as in ``strict_saddle``, paired so that it cancels exactly in the mean:
f_i(x) = F(x) + s_i(σ₁⟨ξ_a, x⟩ + σ₂ log cosh⟨v_a, x⟩) with ξ_a, v_a uniform on the sphere.
The data are n = m·2P records over a bank of P atoms (``atoms``): record i uses atom
a = i mod P and sign s_i = (−1)^⌊i/P⌋, so the single pass of Algorithm 3 can draw millions
of records without storing them (the data hold n/(2P) copies of the 2P signed atoms, whose
mean is F; the single pass draws batches from them uniformly without replacement).

Per-sample constants (proved bounds, the chain's in θ units times A/ℓ, A/ℓ², A/ℓ³):
* G = √((1.5√K·A/ℓ)² + μ²) + σ₁ + σ₂ (each chain coordinate's partial is
  sin θ_i(−w_i + cos θ_{i+1}/2), at most 1.5 in size);
* L = max(1.81·A/ℓ², μ) + σ₂ (Gershgorin on the tridiagonal chain Hessian: a row is at most
  1.5|cos θ_i| + |sin θ_i| ≤ √3.25 = 1.803);
* ρ = max(2A/ℓ³, 0.859μ) + 0.770σ₂ (each link's cubic form is ≤ 1 on a unit vector of its
  two coordinates, and Σ_j ‖(v_{j−1}, v_j)‖³ ≤ 2; the blocks are disjoint from ``rest``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Self

import numpy as np
from annotated_types import Ge
from pydantic import NonNegativeFloat, PositiveFloat, model_validator

from problems.backend import Backend
from problems.base import DataSize, Instance, Problem, register_problem
from problems.oracles import ClosedFormOracle, Oracle
from problems.params import Count, params

HESSIAN_ROW = math.sqrt(1.5**2 + 1.0)  # Gershgorin bound of the chain Hessian (θ units)
H_THIRD, NOISE_THIRD = 0.859, 0.770  # sup |h'''| (radial), sup |log cosh'''|


@params
class SaddleChainParams:
    d: Annotated[int, Ge(3)] = 12
    n: Count = 4096
    atoms: Count = 512
    alpha: PositiveFloat = 0.2
    gap: PositiveFloat = 12.7
    ratio: PositiveFloat = 1.1
    rho: PositiveFloat = 4.0
    mu: PositiveFloat = 1.0
    sigma1: NonNegativeFloat = 0.5
    sigma2: NonNegativeFloat = 0.25
    data_seed: int = 0

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.n % (2 * self.atoms):
            raise ValueError(f"saddle_chain needs n to be a multiple of 2·atoms (so the noise "
                             f"cancels in pairs), got n={self.n}, atoms={self.atoms}")
        if self.rho - NOISE_THIRD * self.sigma2 < H_THIRD * self.mu:
            raise ValueError(f"saddle_chain needs rho − 0.770·sigma2 ≥ 0.859·mu (the chain's "
                             f"third derivative bounds ρ), got rho={self.rho}")
        if link(self).links >= self.d:  # a ValueError where no chain fits the params
            raise ValueError(f"saddle_chain at alpha={self.alpha}, gap={self.gap} has "
                             f"{link(self).links} links: it needs d > links, got d={self.d}")
        return self


@dataclass(frozen=True)
class Link:
    """The chain's shape: K links of depth A and width ℓ."""

    links: int
    depth: float
    width: float


def link(p: SaddleChainParams) -> Link:
    """K = ⌊B/A₀⌋ − 1 links of depth A = B/(K + 1) ≥ A₀ = 32r³(ρα)^{3/2}/ρ_chain² and width
    ℓ = (2A/ρ_chain)^{1/3} (so 2A/ℓ³ = ρ_chain and A/(2ℓ²) ≥ r√(ρα)); needs B ≥ 2A₀."""
    chain = p.rho - NOISE_THIRD * p.sigma2
    try:
        shallowest = 32 * p.ratio**3 * (p.rho * p.alpha) ** 1.5 / chain**2
        links = math.floor(p.gap / shallowest) - 1
    except (OverflowError, ZeroDivisionError) as exc:
        raise ValueError(f"saddle_chain: no chain at alpha={p.alpha}, gap={p.gap}, "
                         f"ratio={p.ratio}, rho={p.rho} ({exc})") from exc
    if links < 1:
        raise ValueError(f"saddle_chain needs gap ≥ 2·A₀ = {2 * shallowest:.4g} at alpha="
                         f"{p.alpha} (one link of depth ≥ A₀), got gap={p.gap}")
    depth = p.gap / (links + 1)
    return Link(links, depth, (2 * depth / chain) ** (1 / 3))


@dataclass
class SaddleChainInstance(Instance):
    p: SaddleChainParams = field(default_factory=SaddleChainParams)
    shape: Link = field(default_factory=lambda: Link(1, 1.0, 1.0))
    xi: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    v: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def oracle(self, backend: Backend) -> Oracle:
        return SaddleChainOracle(self, backend)

    def stage(self, k: int) -> np.ndarray:
        """Stage k (1..K+1): x_1..x_{k−1} at πℓ, the rest 0."""
        x = np.zeros(self.d)
        x[:k - 1] = math.pi * self.shape.width
        return x

    def loss(self, x: np.ndarray) -> float:
        a, w = self.shape.depth, self.shape.width
        theta, rest = x[:self.shape.links] / w, x[self.shape.links:]
        return float(a * np.sum(_gates(theta) * np.cos(theta))
                     + self.p.mu * (np.sqrt(1.0 + rest @ rest) - 1.0))

    def grad(self, x: np.ndarray) -> np.ndarray:
        a, w, k = self.shape.depth, self.shape.width, self.shape.links
        theta, rest = x[:k] / w, x[k:]
        chain = -_gates(theta) * np.sin(theta)
        chain[:-1] += 0.5 * np.sin(theta[:-1]) * np.cos(theta[1:])
        return np.concatenate([a / w * chain, self.p.mu * rest / np.sqrt(1.0 + rest @ rest)])

    def hessian(self, x: np.ndarray) -> np.ndarray:
        a, w, k = self.shape.depth, self.shape.width, self.shape.links
        theta, rest = x[:k] / w, x[k:]
        diagonal = -_gates(theta) * np.cos(theta)
        diagonal[:-1] += 0.5 * np.cos(theta[:-1]) * np.cos(theta[1:])
        off = -0.5 * np.sin(theta[:-1]) * np.sin(theta[1:])
        h = np.zeros((self.d, self.d))
        h[:k, :k] = a / w**2 * (np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1))
        root = np.sqrt(1.0 + rest @ rest)
        h[k:, k:] = self.p.mu * (np.eye(len(rest)) / root - np.outer(rest, rest) / root**3)
        return h

    def lambda_min(self, x: np.ndarray) -> float:
        return float(np.linalg.eigvalsh(self.hessian(x))[0])


def _gates(theta: np.ndarray) -> np.ndarray:
    """w_1 = 1, w_j = (1 − cos θ_{j−1})/2."""
    return np.concatenate([[1.0], 0.5 * (1.0 - np.cos(theta[:-1]))])


class SaddleChainOracle(ClosedFormOracle):
    """Closed-form per-sample gradients and Hessians; on the whole data set the paired noise
    cancels, so loss, gradient and HVP there are F's closed forms."""

    def __init__(self, inst: SaddleChainInstance, backend: Backend) -> None:
        super().__init__(backend, n=inst.n, d=inst.d, x0=inst.x0, clients=inst.clients)
        self.inst = inst

    def _atoms(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ξ_a, v_a, s_i) of the records ``idx``."""
        atoms = self.inst.p.atoms
        a = np.asarray(idx) % atoms
        sign = 1.0 - 2.0 * ((np.asarray(idx) // atoms) % 2)
        return self.inst.xi[a], self.inst.v[a], sign

    def loss(self, x: np.ndarray, idx: np.ndarray | None = None) -> Any:
        return self.inst.loss(x) if idx is None else super().loss(x, idx)

    def grad(self, x: np.ndarray, idx: np.ndarray | None = None) -> Any:
        return self.inst.grad(x) if idx is None else super().grad(x, idx)

    def hvp(self, x: np.ndarray, v: np.ndarray, idx: np.ndarray | None = None) -> Any:
        return self.inst.hessian(x) @ v if idx is None else super().hvp(x, v, idx)

    def hvps(self, x: np.ndarray, vectors: Sequence[np.ndarray],
             idx: np.ndarray | None = None) -> list[np.ndarray]:
        if idx is None:
            h = self.inst.hessian(x)
            return [h @ vec for vec in vectors]
        return super().hvps(x, vectors, idx)

    def per_sample_losses(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        p = self.inst.p
        xi, v, sign = self._atoms(idx)
        z = v @ x
        noise = p.sigma1 * (xi @ x) + p.sigma2 * (np.logaddexp(z, -z) - math.log(2.0))
        return self.inst.loss(x) + sign * noise

    def per_sample_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        p = self.inst.p
        xi, v, sign = self._atoms(idx)
        noise = p.sigma1 * xi + p.sigma2 * np.tanh(v @ x)[:, None] * v
        return self.inst.grad(x)[None, :] + sign[:, None] * noise

    def _hvp_sum(self, x: np.ndarray, vec: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self._hvp_sums(x, [vec], idx)[0]

    def _hvp_sums(self, x: np.ndarray, vectors: Sequence[np.ndarray], idx: np.ndarray
                  ) -> np.ndarray:
        """Σ_{i ∈ idx} ∇²f_i(x)·vec for each of ``vectors``: the summed Hessian
        |idx|·∇²F(x) + σ₂ Σ s_i sech²⟨v_a, x⟩ v_a v_aᵀ is built once (O(|idx| d²))."""
        _, v, sign = self._atoms(idx)
        weights = self.inst.p.sigma2 * sign / np.cosh(v @ x) ** 2
        total = len(idx) * self.inst.hessian(x) + (v * weights[:, None]).T @ v
        return np.stack([total @ vec for vec in vectors])


@register_problem
class SaddleChain(Problem):
    """Gated chain of strict saddles sized for a target α (liu2024 E3, issue 37)."""

    name = "saddle_chain"
    Params = SaddleChainParams
    backends = ("numpy",)
    description = "K gated strict saddles (K ∝ α^(−3/2)) from x0 = 0; closed form"

    def size(self) -> DataSize:
        p: SaddleChainParams = self.params
        return DataSize.split(p.n, 1)

    def build(self, seed: int) -> SaddleChainInstance:
        p: SaddleChainParams = self.params
        shape = link(p)
        xi, v = _bank(p.atoms, p.d, p.data_seed)
        a, w, k = shape.depth, shape.width, shape.links
        return SaddleChainInstance(
            name=self.name, n=p.n, d=p.d, x0=np.zeros(p.d),
            constants={
                "G": math.hypot(1.5 * math.sqrt(k) * a / w, p.mu) + p.sigma1 + p.sigma2,
                "L": max(HESSIAN_ROW * a / w**2, p.mu) + p.sigma2,
                "rho": p.rho,  # = max(2A/ℓ³, 0.859μ) + 0.770σ₂, as 2A/ℓ³ = ρ − 0.770σ₂
                "gap": p.gap, "links": k, "link_depth": a, "link_width": w,
                "saddle": 0.0, "lambda_min_at_saddle": -a / (2 * w**2) if k > 1 else -a / w**2,
                "f_star": -k * a,
            },
            p=p, shape=shape, xi=xi, v=v)


@lru_cache(maxsize=4)
def _bank(atoms: int, d: int, data_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The atoms ξ_a, v_a, uniform on the sphere; read-only, shared by the runs of a process."""
    rng = np.random.default_rng(data_seed)
    out = []
    for _ in range(2):
        z = rng.standard_normal((atoms, d))
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        z.setflags(write=False)
        out.append(z)
    return out[0], out[1]
