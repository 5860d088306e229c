"""Shared helpers for the saddlebench test suite.

Problems are kept small so the whole quick suite runs in well under a minute and a half
on two CPU cores. Built instances and oracles are cached per (problem, params, backend):
jax compiles per oracle, so reusing one oracle across tests saves seconds. Oracles are
stateless between calls (the jax one only caches compiled functions), so sharing them does
not couple tests.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pytest

# A fresh accountant cache per test session: results never come from an earlier checkout.
os.environ["SADDLEBENCH_CACHE"] = tempfile.mkdtemp(prefix="saddlebench-cache-")

from algorithms import ALGORITHMS, Algorithm, Plan, PrivacyTarget, Step, Trace
from algorithms.privacy.ledger import Mechanism
from problems import PROBLEMS, Instance
from problems.backend import Backend, BackendSpec, get_backend
from problems.data.fake import FAKE_DATA, fake_images, fake_text  # noqa: F401
from problems.oracles import Oracle

# Small versions of the registered problems. A problem registered later and missing here
# is built with its default params (still covered by the registry-driven tests).
SMALL_PARAMS: dict[str, dict[str, Any]] = {
    "strict_saddle": {"d": 5, "n": 200},
    "nc_least_squares": {"clients": 2, "base_n": 50, "d": 5},
    "digits_mlp": {"hidden": 8},
    "digits_cnn": {"width": 0.125},
    "cifar10_cnn": {"width": 0.0625},
    "cifar10_resnet18": {"width": 0.0625},
    "cifar10_vgg": {"width": 0.125},
    "mnist_mlp": {"hidden": 8},
    "fashion_mnist_mlp": {"hidden": 8},
    "fashion_mnist_cnn": {"width": 0.0625},
    "fashion_mnist_vgg": {"width": 0.125},
    "cifar10_mlp": {"hidden": 8},
    "cifar100_resnet18": {"width": 0.0625},
    "cola_bert": {"max_length": 16},
    "matrix_sensing": {"p": 4, "q": 3, "rank": 2, "n": 40},
    "ncsc_double_well": {"d": 3, "d_y": 4, "n": 60},
}


def build_problem(name: str, params: Any, seed: int) -> Instance:
    """``PROBLEMS[name](params).build(seed)``, on fake data where the real data are files."""
    with pytest.MonkeyPatch.context() as mp:
        if name in FAKE_DATA:
            mp.setattr(*FAKE_DATA[name])
        return PROBLEMS[name](params).build(seed)


# Small algorithm settings shared by most tests.
SMALL_ALGO: dict[str, Any] = {"steps": 4, "batch_size": 16, "lr": 0.01, "batch_refresh": 16,
                               "batch_diff": 8}
DELTA = 1e-5


def array_type(backend_name: str) -> type:
    """The array class iterates must have on ``backend_name``."""
    if backend_name == "numpy":
        return np.ndarray
    if backend_name == "torch":
        import torch

        return torch.Tensor
    import jax

    return jax.Array


def to_numpy(a: Any) -> np.ndarray:
    """Any backend array (or a float) as a numpy array."""
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def problem_params(name: str, **overrides: Any) -> Any:
    cls = PROBLEMS[name]
    return cls.Params(**{**SMALL_PARAMS.get(name, {}), **overrides})


_INSTANCES: dict[tuple[str, tuple[tuple[str, Any], ...], int], Instance] = {}


def make_instance(name: str, seed: int = 0, **overrides: Any) -> Instance:
    """A (cached) built instance of problem ``name`` with small params."""
    params = problem_params(name, **overrides)
    key = (name, tuple(sorted(vars(params).items())), seed)
    if key not in _INSTANCES:
        _INSTANCES[key] = build_problem(name, params, seed)
    return _INSTANCES[key]


@dataclass
class Setup:
    """An instance, a backend and its oracle."""

    instance: Instance
    backend: Backend
    oracle: Oracle


_SETUPS: dict[Any, Setup] = {}


def make_setup(name: str, backend: str | BackendSpec = "numpy", seed: int = 0,
               **overrides: Any) -> Setup:
    """(Cached) instance + backend + oracle for problem ``name`` on ``backend``."""
    spec = BackendSpec(name=backend) if isinstance(backend, str) else backend
    params = problem_params(name, **overrides)
    key = (name, tuple(sorted(vars(params).items())), seed, spec)
    if key not in _SETUPS:
        inst = make_instance(name, seed, **overrides)
        be = get_backend(spec)
        _SETUPS[key] = Setup(inst, be, inst.oracle(be))
    return _SETUPS[key]


def make_mech(backend: Backend, noise_seed: int = 1, sampling_seed: int = 2) -> Mechanism:
    """A fresh Mechanism drawing noise from ``backend``'s stream with fixed seeds."""
    return Mechanism(backend.noise_source(noise_seed), np.random.default_rng(sampling_seed))


def make_algorithm(name: str, instance: Instance | None = None, **overrides: Any) -> Algorithm:
    """Algorithm ``name`` with small settings; noisy_sgd gets a bound if the problem has no G."""
    cls = ALGORITHMS[name]
    if ("bound" in cls.Params.__dataclass_fields__ and instance is not None
            and "G" not in instance.constants and "bound" not in overrides):
        overrides["bound"] = 5.0
    return cls(cls.small_params(SMALL_ALGO, **overrides))


def default_target(algorithm: Algorithm | type[Algorithm], sigma: float = 1.0,
                   **kw: Any) -> PrivacyTarget:
    """ε = 2, δ = 1e-5 with σ given (no calibration) for private algorithms."""
    if algorithm.private:
        return PrivacyTarget(epsilon=kw.pop("epsilon", 2.0), delta=kw.pop("delta", DELTA),
                             sigma=sigma, **kw)
    return PrivacyTarget(epsilon=math.inf, delta=kw.pop("delta", DELTA), **kw)


def run_steps(algorithm: Algorithm, oracle: Oracle, plan: Plan, mech: Mechanism,
              k: int | None = None, trace: Trace | None = None) -> list[Step]:
    """The first ``k`` (default: all) steps of ``algorithm.run``, recording into ``trace``
    (default: a fresh one)."""
    steps: list[Step] = []
    it: Iterator[Step] = algorithm.run(oracle, plan, mech, trace if trace is not None
                                       else Trace())
    for step in it:
        steps.append(step)
        if k is not None and len(steps) >= k:
            break
    return steps


def traced(algorithm: Algorithm, oracle: Oracle, plan: Plan, mech: Mechanism
           ) -> tuple[list[Step], Trace]:
    """All steps of ``algorithm.run`` and the run's trace."""
    trace = Trace()
    return run_steps(algorithm, oracle, plan, mech, trace=trace), trace


class Ran(NamedTuple):
    """One run of :func:`run_algorithm`."""

    algorithm: Algorithm
    plan: Plan
    mech: Mechanism
    steps: list[Step]
    trace: Trace


def run_algorithm(name: str, setup: Setup, *, noise_seed: int = 1, sampling_seed: int = 2,
                  target: PrivacyTarget | None = None, **overrides: Any) -> Ran:
    """Plan and run ``name`` on ``setup``."""
    alg = make_algorithm(name, setup.instance, **overrides)
    plan = alg.plan(setup.instance, target if target is not None else default_target(alg))
    mech = make_mech(setup.backend, noise_seed, sampling_seed)
    trace = Trace()
    return Ran(alg, plan, mech, run_steps(alg, setup.oracle, plan, mech, trace=trace), trace)


def unsupported(alg_name: str, instance: Instance) -> str | None:
    """Why algorithm ``alg_name`` cannot run on ``instance`` (None: it can)."""
    cls = ALGORITHMS[alg_name]
    missing = [k for k in cls.needs if k not in instance.constants]
    if missing:
        return f"{alg_name} needs the constants {missing}, which {instance.name} lacks"
    return None


def problem_backend_pairs() -> list[tuple[str, str]]:
    """Every registered problem with every backend it declares."""
    return [(p, b) for p, cls in sorted(PROBLEMS.items()) for b in cls.backends]


@pytest.fixture
def small_setup():
    """Factory fixture: ``small_setup(problem, backend, **overrides)``."""
    return make_setup


def pytest_configure(config: pytest.Config) -> None:
    # torch registers its jvp decompositions with torch.jit.script on first forward-mode use
    config.addinivalue_line(
        "filterwarnings", "ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` skip on machines without a CUDA device."""
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
