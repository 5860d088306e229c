"""What the micro benchmarks share: problems at the paper's size (CIFAR on fake images, as
the tests build them; Fashion-MNIST on its real files, skipped where they are absent), cached
oracles, the backend × device parametrisation, the timed
oracle kernels and the ``extra_info`` scheme that :mod:`bench.micro.ratios` reads.

Every benchmark records ``extra_info`` with ``problem``, ``backend``, ``device``,
``kernel``, ``batch``, ``d``, ``dtype`` and ``metric`` (``"time"``, or ``"peak_bytes"`` for a
memory benchmark, whose bytes are in ``extra_info["peak_bytes"]``). Kernels that belong to
no problem (clipping, noise, tree sums) are run at a problem's dimension and carry its name.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any
from unittest import mock

import numpy as np
import pytest

from problems import PROBLEMS, Instance
from problems.backend import Backend, BackendSpec, MissingExtraError, get_backend
from problems.data.common import DataMissingError, Split
from problems.oracles import Oracle

BATCH = 64
MEMORY_BATCH = 256
CLIP = 1.0
DTYPE = "float32"
FAKE_N = 512  # fake training images: enough for a batch of MEMORY_BATCH
# Problems whose data are files (absent here): the loader is patched with fake_images.
FAKE_DATA = {"cifar10_vgg": "problems.vision.load_images"}
DATA_SKIP = "data missing"  # how a benchmark whose data set is absent skips
# Params other than the defaults: tao2025's n = 6,000 training images.
PARAMS: dict[str, dict[str, Any]] = {"fashion_mnist_mlp": {"n_train": 6000, "n_test": 1000}}
# Timed rounds of kernels too slow for pytest-benchmark's calibration (None: calibrated).
ROUNDS: dict[str, int | None] = {"digits_mlp": None, "cifar10_vgg": 3,
                                 "fashion_mnist_mlp": None}
ORACLE_KERNELS = ("grad", "per_sample_grads", "clipped_grad_sum", "clipped_grad_diff_sum",
                  "hvp")


def fake_images(variant: str, data_dir: str | None = None, download: bool = False,
                n: int = FAKE_N) -> Split:
    """Random CIFAR-shaped images in [0, 1] with every class, in
    :func:`problems.vision.load_images`' signature (tests/conftest.py's stand-in)."""
    rng = np.random.default_rng(0)
    classes = 100 if variant == "cifar100" else 10

    def images(m: int) -> np.ndarray:
        return rng.random((m, 3, 32, 32), dtype=np.float32)

    return Split(images(n), np.arange(n) % classes, images(n // 2),
                 np.arange(n // 2) % classes, classes)


@contextmanager
def _fake_data(problem: str) -> Iterator[None]:
    if problem in FAKE_DATA:
        with mock.patch(FAKE_DATA[problem], fake_images):
            yield
    else:
        yield


@cache
def _instance(problem: str) -> Instance:
    cls = PROBLEMS[problem]
    with _fake_data(problem):
        return cls(cls.Params(**PARAMS.get(problem, {}))).build(0)


def instance(problem: str) -> Instance:
    """``problem`` with its default params (the paper's model; :data:`PARAMS`), built once;
    skips the benchmark when the problem needs a missing extra or data set."""
    try:
        return _instance(problem)
    except MissingExtraError as exc:
        pytest.skip(str(exc))
    except DataMissingError as exc:
        pytest.skip(f"{DATA_SKIP}: {exc}")


@dataclass(frozen=True)
class Setup:
    """A built problem, a backend and its training oracle."""

    instance: Instance
    backend: Backend
    oracle: Oracle


@cache
def _backend(name: str, device: str) -> Backend:
    return get_backend(BackendSpec(name=name, device=device, dtype=DTYPE))


def make_backend(name: str, device: str = "cpu") -> Backend:
    """The (cached) float32 backend ``name`` on ``device``; skips if it is not installed."""
    if name != "numpy":
        pytest.importorskip(name)
    return _backend(name, device)


@cache
def setup(problem: str, backend_name: str, device: str = "cpu") -> Setup:
    """The cached oracle of ``problem`` on ``backend_name``/``device`` (skips if missing)."""
    inst, be = instance(problem), make_backend(backend_name, device)
    return Setup(inst, be, inst.oracle(be))


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA GPU."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def targets(problems: tuple[str, ...], backends: tuple[str, ...] = ("torch", "jax"),
            declared: bool = True) -> list[Any]:
    """pytest params (problem, backend, device): every backend on cpu (only those the
    problem declares if ``declared``) and torch on cuda (marked ``gpu``, skipped without a
    GPU)."""
    out = []
    for problem in problems:
        usable = [b for b in backends if not declared or b in PROBLEMS[problem].backends]
        out += [pytest.param(problem, b, "cpu", id=f"{problem}-{b}-cpu") for b in usable]
        if "torch" in usable:
            out.append(gpu_param(problem, "torch"))
    return out


def gpu_param(*values: str) -> Any:
    """``(*values, "cuda")`` as a pytest param marked ``gpu``, skipped without CUDA."""
    return pytest.param(*values, "cuda", id="-".join((*values, "cuda")),
                        marks=[pytest.mark.gpu,
                               pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")])


def probe(oracle: Oracle, seed: int = 0) -> Any:
    """A fixed unit direction on the oracle's backend (HVP vector, x_prev offset)."""
    v = np.random.default_rng(seed).standard_normal(oracle.d)
    return oracle.backend.asarray(v / np.linalg.norm(v))


def oracle_kernel(oracle: Oracle, kernel: str, batch: int = BATCH) -> Callable[[], Any]:
    """One of :data:`ORACLE_KERNELS` at x0 on the first ``batch`` samples."""
    x, v, idx = oracle.x0, probe(oracle), np.arange(batch)
    x_prev = x - 1e-2 * v
    calls: dict[str, Callable[[], Any]] = {
        "grad": lambda: oracle.grad(x, idx),
        "per_sample_grads": lambda: oracle.per_sample_grads(x, idx),
        "clipped_grad_sum": lambda: oracle.clipped_grad_sum(x, idx, CLIP),
        "clipped_grad_diff_sum": lambda: oracle.clipped_grad_diff_sum(x, x_prev, idx, CLIP),
        "hvp": lambda: oracle.hvp(x, v, idx),
    }
    return calls[kernel]


def synced(backend: Backend, fn: Callable[[], Any]) -> Callable[[], None]:
    """``fn`` followed by a device synchronisation on its result."""

    def run() -> None:
        backend.sync(fn())

    return run


def record(benchmark: Any, fn: Callable[[], Any], *, rounds: int | None = None,
           warmup: bool = True, **info: Any) -> Any:
    """Time ``fn`` (after one warm-up call; ``rounds`` fixed, else calibrated) and tag the
    result with ``info`` (the extra_info scheme; ``metric`` defaults to ``"time"``)."""
    benchmark.extra_info.update({"metric": "time", "dtype": DTYPE, **info})
    benchmark.group = f"{info.get('problem', '')} {info.get('device', '')}".strip()
    if warmup:
        fn()
    if rounds is None:
        return benchmark(fn)
    return benchmark.pedantic(fn, rounds=rounds, iterations=1)
