"""Problem statistics at the start point, for constants papers leave to the user.

Measured non-privately (like the paper's own choice of C, this looks at the data): the
smoothness L (largest |eigenvalue| of ∇²F at x₀, by Lanczos), f_max = F(x₀) (losses are
≥ 0), the gradient spread σ = √(avg_i ‖∇f_i(x₀) − ∇F(x₀)‖²) and the largest per-sample
gradient norm. avdiukhin2024's Lemma 3.2 bound on per-sample gradient norms needs the
first three (``noisy_sgd`` with ``bound_rule: lemma_3_2``; ``saddlebench estimate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from problems.oracles import Oracle


@dataclass(frozen=True)
class StartStatistics:
    smoothness: float
    f_max: float
    grad_std: float
    max_grad_norm: float


def _top_abs_eigenvalue(oracle: Oracle, x: Any) -> float:
    from scipy.sparse.linalg import LinearOperator, eigsh

    backend, d = oracle.backend, oracle.d

    def matvec(v: np.ndarray) -> np.ndarray:
        hv = oracle.hvp(x, backend.asarray(np.asarray(v, dtype=np.float64).ravel()))
        return backend.to_numpy(hv).astype(np.float64)

    op = LinearOperator((d, d), matvec=matvec, dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(d)
    return float(np.max(np.abs(eigsh(op, k=1, which="LM", tol=1e-3, v0=v0,
                                     return_eigenvectors=False))))


def start_statistics(oracle: Oracle, chunk: int = 512) -> StartStatistics:
    """L, f_max, σ and the largest per-sample gradient norm at x₀."""
    x, backend, n = oracle.x0, oracle.backend, oracle.n
    mean = backend.to_numpy(oracle.grad(x))
    sq, largest = 0.0, 0.0
    for start in range(0, n, chunk):
        g = backend.to_numpy(oracle.per_sample_grads(x, np.arange(start, min(start + chunk, n))))
        sq += float(np.sum((g - mean) ** 2))
        largest = max(largest, float(np.linalg.norm(g, axis=1).max()))
    return StartStatistics(smoothness=_top_abs_eigenvalue(oracle, x),
                           f_max=float(backend.to_numpy(oracle.loss(x))),
                           grad_std=float(np.sqrt(sq / n)), max_grad_norm=largest)
