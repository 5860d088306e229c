"""liu2024 studies on the cosine saddle's population (notes §5): E1, Algorithm 2 alone, and
E4(i), the noise of tree-aggregated against per-step Gaussian prefix sums at equal privacy.

Both are simulations outside the run grid: the liu2024 paper declares them as its
``studies`` (:func:`e1_escape` and :func:`e4_noise_growth`, one row per trial), and
``saddlebench reproduce`` runs and stores them; the page only reads them (the readers are
in reports/papers/liu2024/measures.py).

Testbed A's population at an anchor on the u-axis (u = e₁ by rotation invariance):
F(x) = λ cos x₁ + μ h(x₂..x_d), h(w) = √(1 + ‖w‖²) − 1; at the saddle x = 0, ∇F = 0 and
∇²F = diag(−λ, μ, …, μ); at the minimum x₁ = π, ∇²F = diag(λ, μ, …, μ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from algorithms.privacy.ledger import Mechanism
from algorithms.privacy.tree import GaussianSums, TreeSums, tree_depth
from algorithms.spider_sosp import escape
from problems.backend import BackendSpec, get_backend

HESSIAN_THIRD = (0.859, 0.770)  # ρ = λ + 0.859μ + 0.770σ₂ (strict_saddle)


@dataclass(frozen=True)
class Saddle:
    """Testbed A's constants for a curvature λ and the escape constants at α (§2.7)."""

    lam: float
    alpha: float
    d: int
    mu: float = 1.0
    sigma2: float = 0.5
    iota: float = 0.05
    c_gamma: float = 4.0
    c_hess: float = 4.0
    c_xi: float = 1.0
    c_escape: float = 2.0

    @property
    def M(self) -> float:
        return max(self.lam, self.mu) + self.sigma2

    @property
    def rho(self) -> float:
        return self.lam + HESSIAN_THIRD[0] * self.mu + HESSIAN_THIRD[1] * self.sigma2

    @property
    def gamma(self) -> float:
        return self.alpha / self.c_gamma

    @property
    def xi(self) -> float:
        return self.c_xi * math.sqrt(self.alpha / self.rho)

    @property
    def steps(self) -> int:
        return math.ceil(self.c_escape * self.M / math.sqrt(self.rho * self.alpha)
                         * math.log(self.d / self.iota))

    @property
    def noise(self) -> float:
        """σ = γ/√(d ln(Γ/ι)) (Thm 3.4)."""
        return self.gamma / math.sqrt(self.d * math.log(self.steps / self.iota))

    @property
    def decrease(self) -> float:
        """Φ ~ γ^{3/2}/√ρ, Theorem 3.4's decrease (without its log factor)."""
        return self.gamma**1.5 / math.sqrt(self.rho)

    def predicted_steps(self) -> float:
        """(M/λ) ln(√d Ξ M/γ): the escape time Lemma 3.9's argument gives at rate λ."""
        return self.M / self.lam * math.log(math.sqrt(self.d) * self.xi * self.M / self.gamma)

    def loss_change(self, y: np.ndarray, minimum: bool) -> np.ndarray:
        """F(x_a + y) − F(x_a) for anchors at the saddle or at the minimum."""
        cos = -np.cos(y[:, 0]) if minimum else np.cos(y[:, 0])
        h = np.sqrt(1 + np.sum(y[:, 1:] ** 2, axis=1)) - 1
        return self.lam * (cos - (-1 if minimum else 1)) + self.mu * h


def lam_for_ratio(ratio: float, alpha: float, mu: float = 1.0, sigma2: float = 0.5) -> float:
    """λ with λ/√(ρ(λ)α) = ratio, ρ(λ) = λ + 0.859μ + 0.770σ₂."""
    c0 = HESSIAN_THIRD[0] * mu + HESSIAN_THIRD[1] * sigma2
    r2a = ratio**2 * alpha
    return (r2a + math.sqrt(r2a**2 + 4 * r2a * c0)) / 2


def _perturbed(s: Saddle, trials: int, minimum: bool, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """(g, H): γ-accurate gradients and ϰ-accurate Hessians at the anchor (E1's setup)."""
    g = rng.standard_normal((trials, s.d))
    g *= s.gamma / np.linalg.norm(g, axis=1, keepdims=True)
    e = rng.standard_normal((trials, s.d, s.d))
    e = e + e.transpose(0, 2, 1)
    norm = np.abs(np.linalg.eigvalsh(e)).max(axis=1)  # ‖E‖₂ of a symmetric E, without an SVD
    e *= (math.sqrt(s.rho * s.alpha) / s.c_hess) / norm[:, None, None]
    true = np.diag([s.lam if minimum else -s.lam] + [s.mu] * (s.d - 1))
    return g, true + e


TRIALS = {"quick": 100, "paper": 500}  # trials per setting (notes §5, E1: 500 seeds)


def trials_for(scale: str) -> int:
    return TRIALS.get(scale, TRIALS["quick"])


def escape_trials(ratios: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0),
                  dims: tuple[int, ...] = (10, 100), alpha: float = 0.1, trials: int = 200,
                  seed: int = 0) -> pd.DataFrame:
    """E1: Algorithm 2 alone from saddles of curvature λ = ratio·√(ρα) and from minima; one
    row per trial: escaped (moved Ξ within Γ), steps taken, the decrease F(x_a) − F(y)."""
    frames = []
    rng = np.random.default_rng(seed)
    for d in dims:
        for ratio in ratios:
            s = Saddle(lam=max(lam_for_ratio(ratio, alpha), 1e-12), alpha=alpha, d=d)
            for minimum in (False, True):
                g, hess = _perturbed(s, trials, minimum, rng)
                y, taken = escape(g, hess, steps=s.steps, radius=s.xi, lr=1 / s.M,
                                  std=s.noise, rng=rng)
                frames.append(pd.DataFrame({
                    "d": d, "ratio": ratio, "lam": s.lam,
                    "anchor": "minimum" if minimum else "saddle", "alpha": alpha,
                    "trial": np.arange(trials), "escaped": np.linalg.norm(y, axis=1) >= s.xi,
                    "steps": taken, "decrease": -s.loss_change(y, minimum),
                    "steps_predicted": s.predicted_steps() if ratio > 0 else math.inf,
                    "horizon": s.steps, "radius": s.xi, "phi": s.decrease}))
    return pd.concat(frames, ignore_index=True)


def noise_trials(leaves: int = 256, d: int = 10, sigma: float = 1.0, trials: int = 200,
                 seed: int = 0) -> pd.DataFrame:
    """E4(i): ‖noise_k‖ of prefix sums after k leaves, tree (node std σ) against per-leaf
    Gaussian noise at equal privacy (std σ/√L); the data are zero. One row per (trial, leaf)."""
    backend = get_backend(BackendSpec(name="numpy"))
    depth = tree_depth(leaves)
    norms = {"tree": np.zeros((trials, leaves)), "gaussian": np.zeros((trials, leaves))}
    for trial in range(trials):
        mech = Mechanism(backend.noise_source(seed + trial), np.random.default_rng(trial))
        pool = mech.pool(2 * leaves, epochs=1)
        sums: dict[str, TreeSums | GaussianSums] = {
            "tree": TreeSums(mech, sigma), "gaussian": GaussianSums(mech, sigma / math.sqrt(depth))}
        for k in range(leaves):
            for kind, agg in sums.items():
                batch = pool.take(1)
                assert batch is not None
                norms[kind][trial, k] = np.linalg.norm(agg.add(np.zeros(d), sensitivity=1.0,
                                                               batch=batch))
    return pd.DataFrame({"trial": np.repeat(np.arange(trials), leaves),
                         "leaf": np.tile(np.arange(1, leaves + 1), trials), "depth": depth,
                         **{kind: v.ravel() for kind, v in norms.items()}})


def e1_escape(scale: str) -> pd.DataFrame:
    """The E1 study at ``scale`` (``PAPER.studies``)."""
    return escape_trials(trials=trials_for(scale))


def e4_noise_growth(scale: str) -> pd.DataFrame:
    """The E4(i) study at ``scale`` (``PAPER.studies``)."""
    return noise_trials(trials=trials_for(scale))
