"""Estimators of λ_min(∇²F(x)) from Hessian-vector products (avdiukhin2024 §3.4, notes §2.4).

* :func:`lambda_min_power`: the paper's suggestion, the power method on M = L·I − ∇²F(x)
  (PSD when spec(∇²F) ⊂ [−L, L]; its top eigenvalue is L − λ_min), K iterations from a
  random start, returning the Rayleigh quotient vᵀ∇²F(x)v.
* :func:`lambda_min_lanczos`: Lanczos (scipy ``eigsh``, which='SA') on a
  ``LinearOperator`` of HVPs, the "acceptable substitute" (notes §2.4); for d ≤ ``DENSE_MAX``
  the Hessian is assembled from d HVPs and diagonalised exactly.

Both use full-batch HVPs of the oracle; the start vectors come from a caller-given,
data-independent generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from problems.oracles import Oracle

DENSE_MAX = 64


def _on_backend(oracle: Oracle, v: np.ndarray) -> Any:
    return oracle.backend.asarray(np.asarray(v, dtype=np.float64).ravel())


def _hvp_numpy(oracle: Oracle, x: Any, v: np.ndarray, idx: np.ndarray | None) -> np.ndarray:
    hv = oracle.hvp(x, _on_backend(oracle, v), idx)
    return oracle.backend.to_numpy(hv).astype(np.float64)


def hessian(oracle: Oracle, x: Any, idx: np.ndarray | None = None) -> np.ndarray:
    """The (symmetrised) d × d Hessian of the mean loss over ``idx``, from d HVPs."""
    hvs = oracle.hvps(x, [_on_backend(oracle, e) for e in np.eye(oracle.d)], idx)
    h = np.stack([oracle.backend.to_numpy(hv).astype(np.float64) for hv in hvs], axis=1)
    return 0.5 * (h + h.T)


def lambda_min_power(oracle: Oracle, x: Any, smoothness: float, iters: int,
                     rng: np.random.Generator, idx: np.ndarray | None = None) -> float:
    """Algorithm 4: power iteration on L·I − H; the Rayleigh quotient of the last vector."""
    v = rng.standard_normal(oracle.d)
    v /= np.linalg.norm(v)  # line 1
    for _ in range(iters):  # line 2
        w = smoothness * v - _hvp_numpy(oracle, x, v, idx)
        v = w / np.linalg.norm(w)
    return float(v @ _hvp_numpy(oracle, x, v, idx))  # line 3


def lambda_min_lanczos(oracle: Oracle, x: Any, tol: float = 1e-8,
                       rng: np.random.Generator | None = None,
                       idx: np.ndarray | None = None) -> float:
    """Smallest eigenvalue of the Hessian of the mean loss over ``idx`` (all data if None;
    exact for small d)."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    d = oracle.d
    if idx is None and hasattr(oracle, "dense_hessian"):  # a closed-form Hessian (xu2026)
        return float(np.linalg.eigvalsh(oracle.dense_hessian(x))[0])
    if d <= DENSE_MAX:
        return float(np.linalg.eigvalsh(hessian(oracle, x, idx))[0])
    op = LinearOperator((d, d), matvec=lambda v: _hvp_numpy(oracle, x, v, idx),
                        dtype=np.float64)
    v0 = (rng or np.random.default_rng(0)).standard_normal(d)
    try:
        return float(eigsh(op, k=1, which="SA", tol=tol, v0=v0, maxiter=20 * d,
                           return_eigenvectors=False)[0])
    except ArpackNoConvergence as exc:  # pragma: no cover - rare
        return float(np.min(exc.eigenvalues)) if len(exc.eigenvalues) else float("nan")
