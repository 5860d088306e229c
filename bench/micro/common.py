"""What the micro benchmarks share: problems at the paper's size (CIFAR on fake images, as
the tests build them, and CoLA on a few sentences; Fashion-MNIST on its real files,
skipped where they are absent), cached
oracles, the backend × device parametrisation, the timed
oracle kernels and the ``extra_info`` scheme that :mod:`bench.micro.ratios` reads.

Every benchmark records ``extra_info`` with ``problem``, ``backend``, ``device``,
``kernel``, ``batch``, ``d``, ``dtype`` and ``metric`` (``"time"``, or ``"peak_bytes"`` for a
memory benchmark, whose bytes are in ``extra_info["peak_bytes"]``). Kernels that belong to
no problem (clipping, noise, tree sums) are run at a problem's dimension and carry its name.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, partial
from typing import Any
from unittest import mock

import numpy as np
import pytest

from problems import PROBLEMS, Instance
from problems.backend import Backend, BackendSpec, MissingExtraError, get_backend
from problems.data.common import DataMissingError
from problems.data.fake import FAKE_DATA
from problems.oracles import Oracle

BATCH = 64
MEMORY_BATCH = 256
CLIP = 1.0
DTYPE = "float32"
FAKE_N = 1024  # fake training samples: enough for the papers' batches (512 images)
DATA_SKIP = "data missing"  # how a benchmark whose data set is absent skips
# Params other than the defaults: tao2025's n = 6,000 training images.
PARAMS: dict[str, dict[str, Any]] = {"fashion_mnist_mlp": {"n_train": 6000, "n_test": 1000}}
# Timed rounds of kernels too slow for pytest-benchmark's calibration (None: calibrated).
ROUNDS: dict[str, int | None] = {"digits_mlp": None, "cifar10_vgg": 3,
                                 "fashion_mnist_mlp": None, "fashion_mnist_cnn": 3}
ORACLE_KERNELS = ("grad", "per_sample_grads", "clipped_grad_sum", "clipped_grad_diff_sum",
                  "hvp")
#: the torch-module kernels of :mod:`bench.micro.reference`
REFERENCE_KERNELS = ("module_grad", "opacus_clipped_sum", "opacus_ghost_clipped_sum")


@contextmanager
def _fake_data(problem: str) -> Iterator[None]:
    """CIFAR and CoLA (files absent here) patched with :mod:`problems.data.fake`'s stand-ins
    of :data:`FAKE_N` samples; Fashion-MNIST is real (skipped where absent)."""
    if problem in FAKE_DATA and not problem.startswith("fashion_mnist"):
        target, fake = FAKE_DATA[problem]
        with mock.patch(target, partial(fake, n=FAKE_N)):
            yield
    else:
        yield


#: benchmark problems that are a registered problem at other params: bert-base's sizes
#: (randomly initialised, 128 word pieces) as cola_bert
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "cola_bert_base": ("cola_bert", {"size": "base", "max_length": 128}),
}


@cache
def _instance(problem: str) -> Instance:
    name, params = VARIANTS.get(problem, (problem, PARAMS.get(problem, {})))
    cls = PROBLEMS[name]
    with _fake_data(name):
        return cls(cls.Params(**params)).build(0)


def instance(problem: str) -> Instance:
    """``problem`` with its default params (the paper's model; :data:`PARAMS`, or a
    :data:`VARIANTS` entry), built once;
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


def record_paired(benchmark: Any, calls: Mapping[str, Callable[[], None]], *, rounds: int,
                  **info: Any) -> None:
    """Time ``calls`` (kernel → a synced call) interleaved: each of ``rounds`` rounds runs
    every call once, the order rotated from round to round, so that the machine's drift falls
    on all of them alike. Each call's seconds per round go to ``extra_info["paired"]``, whose
    per-round ratios :mod:`bench.micro.ratios` takes; pytest-benchmark's own figures time
    whole rounds. ``info["kernel"]`` names the set."""
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}

    def one_round() -> None:
        shift = len(times[names[0]]) % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)

    for call in calls.values():
        call()  # warm-up
    record(benchmark, one_round, rounds=rounds, warmup=False, **info)
    benchmark.extra_info["paired"] = times
