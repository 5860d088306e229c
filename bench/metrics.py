"""Non-private measurements of an iterate (never fed back to the algorithm).

* ``loss``: F(x) over the whole training set;
* ``grad_norm``: ‖∇F(x)‖ (full gradient);
* ``lambda_min``: λ_min(∇²F(x)) by Lanczos (scipy ``eigsh``, which='SA') on a
  Hessian-vector-product ``LinearOperator``; for d ≤ ``DENSE_MAX`` the Hessian is built
  from d HVPs and diagonalised exactly;
* ``test``: the instance's held-out metrics (test loss, test accuracy), where it has them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from problems.base import Instance
from problems.oracles import Oracle

DENSE_MAX = 64


def lambda_min(oracle: Oracle, x: Any, tol: float = 1e-8) -> float:
    """Smallest eigenvalue of the full Hessian at ``x``."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    backend, d = oracle.backend, oracle.d

    def matvec(v: np.ndarray) -> np.ndarray:
        hv = oracle.hvp(x, backend.asarray(np.asarray(v, dtype=np.float64).ravel()))
        return backend.to_numpy(hv).astype(np.float64)

    if d <= DENSE_MAX:
        hessian = np.stack([matvec(e) for e in np.eye(d)], axis=1)
        return float(np.linalg.eigvalsh(0.5 * (hessian + hessian.T))[0])
    op = LinearOperator((d, d), matvec=matvec, dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(d)
    try:
        return float(eigsh(op, k=1, which="SA", tol=tol, v0=v0, maxiter=20 * d,
                           return_eigenvectors=False)[0])
    except ArpackNoConvergence as exc:  # pragma: no cover - rare
        return float(np.min(exc.eigenvalues)) if len(exc.eigenvalues) else float("nan")


def evaluate(instance: Instance, oracle: Oracle, x: Any, names: Iterable[str]) -> dict[str, float]:
    """The requested metrics at ``x`` (NaN where a value is not finite)."""
    backend = oracle.backend
    out: dict[str, float] = {}
    with np.errstate(all="ignore"):
        for name in names:
            if name == "loss":
                out["loss"] = float(backend.to_numpy(oracle.loss(x)))
            elif name == "grad_norm":
                out["grad_norm"] = float(np.linalg.norm(backend.to_numpy(oracle.grad(x))))
            elif name == "lambda_min":
                out["lambda_min"] = lambda_min(oracle, x)
            elif name == "test":
                out.update(instance.evaluate_test(backend, x))
            else:
                raise ValueError(f"unknown metric {name!r}")
    return out


def finite(x: Any, oracle: Oracle) -> bool:
    """Whether every coordinate of ``x`` is finite."""
    return bool(np.all(np.isfinite(oracle.backend.to_numpy(x))))
