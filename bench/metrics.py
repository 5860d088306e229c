"""Non-private measurements of an iterate (never fed back to the algorithm).

* ``loss``: F(x) over the whole training set;
* ``grad_norm``: ‖∇F(x)‖ (full gradient);
* ``lambda_min``: λ_min(∇²F(x)) by Lanczos on full-batch HVPs
  (:func:`algorithms.lambda_min.lambda_min_lanczos`; exact for small d);
* ``test``: the instance's held-out metrics (test loss, test accuracy), where it has them;
* ``train``: training-set accuracy (``train_acc``), where it applies.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from algorithms.lambda_min import lambda_min_lanczos
from problems.base import Instance
from problems.oracles import Oracle


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
                out["lambda_min"] = lambda_min_lanczos(oracle, x)
            elif name == "test":
                out.update(instance.evaluate_test(backend, x))
            elif name == "train":
                out.update(instance.evaluate_train(backend, x))
            else:
                raise ValueError(f"unknown metric {name!r}")
    return out


def finite(x: Any, oracle: Oracle) -> bool:
    """Whether every coordinate of ``x`` is finite."""
    return bool(np.all(np.isfinite(oracle.backend.to_numpy(x))))
