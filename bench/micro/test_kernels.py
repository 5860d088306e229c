"""Oracle kernels (the non-private gradient, per-sample gradients, the clipped sums, HVPs)
and the problem-free hot paths (clipping, Gaussian noise, tree aggregation), per backend
and device, at batch 64 on digits_mlp and the paper-size cifar10_vgg; the private kernels
of tao2025's Fashion-MNIST MLP (d = 101,770) and avdiukhin2024's Appendix-A CNN on
Fashion-MNIST at batch 256, the clients' means of one distributed step included (issue 38)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from algorithms.privacy.ledger import Mechanism
from algorithms.privacy.tree import TreeSums
from bench.micro.common import (
    BATCH,
    CLIP,
    ORACLE_KERNELS,
    ROUNDS,
    instance,
    make_backend,
    oracle_kernel,
    probe,
    record,
    record_paired,
    setup,
    synced,
    targets,
)
from problems.backend import Backend
from problems.clipping import clip_factors, clip_rows

pytestmark = pytest.mark.benchmark(max_time=0.5)

PROBLEMS = ("digits_mlp", "cifar10_vgg")
FASHION = ("fashion_mnist_mlp", "fashion_mnist_cnn")  # tao2025's MLP, avdiukhin2024's CNN
FASHION_BATCH = 256
FASHION_KERNELS = ("grad", "clipped_grad_sum", "clipped_grad_diff_sum")
CLIENTS = (1, 10)
PAIRED_ROUNDS = 100  # rounds of the clients' kernels timed in alternation
ANY_BACKEND = targets(PROBLEMS, ("numpy", "torch", "jax"), declared=False)
TREE_LEAVES = 32
NOISE_DRAWS = 64  # ≥ a jax block of any shape (problems.backend.BLOCK_ROWS)


@pytest.mark.parametrize("kernel", ORACLE_KERNELS)
@pytest.mark.parametrize(("problem", "backend", "device"), targets(PROBLEMS))
def test_oracle(benchmark: Any, problem: str, backend: str, device: str, kernel: str) -> None:
    s = setup(problem, backend, device)
    record(benchmark, synced(s.backend, oracle_kernel(s.oracle, kernel)),
           rounds=ROUNDS[problem], problem=problem, backend=backend, device=device,
           kernel=kernel, batch=BATCH, d=s.oracle.d)


@pytest.mark.parametrize("kernel", FASHION_KERNELS)
@pytest.mark.parametrize(("problem", "backend", "device"), targets(FASHION))
def test_private_kernels(benchmark: Any, problem: str, backend: str, device: str,
                         kernel: str) -> None:
    s = setup(problem, backend, device)
    record(benchmark, synced(s.backend, oracle_kernel(s.oracle, kernel, FASHION_BATCH)),
           rounds=ROUNDS[problem], problem=problem, backend=backend, device=device,
           kernel=kernel, batch=FASHION_BATCH, d=s.oracle.d)


def prisma_combination(xp: Any) -> Any:
    """PriSMA's per-sample combination (eq. (20), γ = 0.9, C₁ = C, C₃ = C/2)."""
    def combine(sq: Any, sq_prev: Any, inner: Any) -> tuple[Any, Any]:
        c, c_prev = (clip_factors(xp, xp.sqrt(v), CLIP) for v in (sq, sq_prev))
        diff_sq = c * c * sq + c_prev * c_prev * sq_prev - 2 * c * c_prev * inner
        s = clip_factors(xp, xp.sqrt(xp.maximum(diff_sq, 0.0)), CLIP / 2)
        return c * (0.9 + 0.1 * s), -0.1 * s * c_prev

    return combine


@pytest.mark.parametrize("kind", ["", "diff_", "combined_"])
@pytest.mark.parametrize(("problem", "backend", "device"), targets(FASHION[:1]))
def test_client_means(benchmark: Any, problem: str, backend: str, device: str,
                      kind: str) -> None:
    """A distributed step's private oracle work over m ∈ :data:`CLIENTS` batches that
    together hold :data:`FASHION_BATCH` samples, the two m timed in alternating rounds
    (:func:`record_paired`): every client's clipped mean of gradients (kernels
    ``client_means_m<m>``), of differences between two points (``client_diff_means_m<m>``),
    or PriSMA's clipped combination of both points' gradients
    (``client_combined_means_m<m>``). Beside the means, ``client_means_m1_rows10``: the m = 1
    means multiplied out to m = 10 rows, what writing the (m, d) output alone adds to m = 1
    (the floor of any m = 10 kernel that does m = 1's arithmetic)."""
    s = setup(problem, backend, device)
    x = s.oracle.x0
    x_prev = x - 1e-2 * probe(s.oracle)

    def call(clients: int) -> Callable[[], None]:
        groups = np.array_split(np.arange(FASHION_BATCH), clients)
        calls = {"": lambda: s.oracle.clipped_group_means(x, None, groups, CLIP)[0],
                 "diff_": lambda: s.oracle.clipped_group_means(x, x_prev, groups, CLIP)[0],
                 "combined_": lambda: s.oracle.combined_group_means(
                     x, x_prev, groups, prisma_combination(s.oracle.xp))}
        return synced(s.backend, calls[kind])

    calls = {f"client_{kind}means_m{m}": call(m) for m in CLIENTS}
    if not kind:  # the m = 1 means multiplied out to m = 10 rows
        one, ones = [np.arange(FASHION_BATCH)], s.backend.asarray(np.ones((CLIENTS[-1], 1)))
        calls["client_means_m1_rows10"] = synced(
            s.backend, lambda: s.oracle.clipped_group_means(x, None, one, CLIP)[0] * ones)
    record_paired(benchmark, calls, rounds=PAIRED_ROUNDS, problem=problem, backend=backend,
                  device=device, kernel=f"client_{kind}means", batch=FASHION_BATCH,
                  d=s.oracle.d)


def _on(problem: str, name: str, device: str) -> tuple[Backend, int]:
    """Backend ``name`` and the dimension of ``problem`` (the kernel runs at its d)."""
    return make_backend(name, device), instance(problem).d


@pytest.mark.parametrize(("problem", "backend", "device"), ANY_BACKEND)
def test_clip_rows(benchmark: Any, problem: str, backend: str, device: str) -> None:
    be, d = _on(problem, backend, device)
    rows = be.asarray(np.random.default_rng(0).standard_normal((BATCH, d)))
    record(benchmark, synced(be, lambda: clip_rows(be.xp, rows, CLIP)), problem=problem,
           backend=backend, device=device, kernel="clip_rows", batch=BATCH, d=d)


@pytest.mark.parametrize(("problem", "backend", "device"), ANY_BACKEND)
def test_noise(benchmark: Any, problem: str, backend: str, device: str) -> None:
    """:data:`NOISE_DRAWS` draws of one noise vector each (a run draws one or a few per step):
    a stream that draws ahead in blocks (jax's) pays its block within the round."""
    be, d = _on(problem, backend, device)
    noise = be.noise_source(0)

    def draws() -> Any:
        return [noise.normal((d,)) for _ in range(NOISE_DRAWS)][-1]

    record(benchmark, synced(be, draws), problem=problem, backend=backend, device=device,
           kernel="noise", batch=NOISE_DRAWS, d=d)


def tree_sums(be: Backend, leaf: Any, leaves: int) -> Any:
    """Prefix sums of ``leaves`` copies of ``leaf`` through a fresh tree; the last one."""
    mech = Mechanism(be.noise_source(0), np.random.default_rng(0))
    tree = TreeSums(mech, sigma=1.0)
    out = None
    for _ in range(leaves):
        batch = mech.sample(10 * BATCH, scheme="fixed", size=BATCH)
        out = tree.add(leaf, sensitivity=CLIP, batch=batch)
    return out


@pytest.mark.parametrize(("problem", "backend", "device"), ANY_BACKEND)
def test_tree_sums(benchmark: Any, problem: str, backend: str, device: str) -> None:
    """One tree of 32 leaves (node noise drawn at first use, ledger records)."""
    be, d = _on(problem, backend, device)
    leaf = be.asarray(np.full(d, 1e-3))
    record(benchmark, synced(be, lambda: tree_sums(be, leaf, TREE_LEAVES)), problem=problem,
           backend=backend, device=device, kernel="tree_sums", batch=TREE_LEAVES, d=d)
