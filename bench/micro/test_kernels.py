"""Hot kernels: per-sample gradients and clipping, per backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from problems import get_problem
from problems.backend import BackendSpec, get_backend
from problems.clipping import clip_rows

BATCH = 64


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_per_sample_grads_digits(benchmark: Any, backend: str) -> None:
    instance = get_problem("digits_mlp")().build(0)
    be = get_backend(BackendSpec(name=backend, dtype="float32"))
    oracle = instance.oracle(be)
    idx = np.arange(BATCH)
    oracle.per_sample_grads(oracle.x0, idx)

    def kernel() -> None:
        be.sync(oracle.per_sample_grads(oracle.x0, idx))

    benchmark(kernel)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_clip_rows(benchmark: Any, backend: str) -> None:
    be = get_backend(BackendSpec(name=backend, dtype="float32"))
    rows = be.asarray(np.random.default_rng(0).standard_normal((BATCH, 10_000)))

    def kernel() -> None:
        be.sync(clip_rows(be.xp, rows, 1.0))

    benchmark(kernel)
