"""The asv suites (bench/asv) still import, set up and run: every parameter combination of
every step suite once (setup, then each benchmark method, at :data:`TEST_STEPS` iterates,
untimed), every ``track_`` function once, and asv's own check of the suites."""

from __future__ import annotations

import importlib
import inspect
import itertools
import math
import os
import pkgutil
import shutil
import subprocess
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import bench.asv
from algorithms import ALGORITHMS
from bench.asv import bench_steps
from bench.env import ROOT

PREFIXES = ("time_", "peakmem_", "mem_", "track_", "timeraw_")
#: iterates per benchmark call here (bench_steps.STEPS in asv)
TEST_STEPS = 2
#: the combinations of built-in algorithms that are n/a (asv: skipped), and why
SKIPPED = {
    **{("MinimaxSteps", (name, "jax")): "ncsc_double_well has no jax backend"
       for name in bench_steps.MINIMAX},
    **{("ModelSteps", ("spider_sosp", backend)): r"spider_sosp needs \['G', 'L', 'rho'\]"
       for backend in ("torch", "jax")},
    **{("Steps", ("spider_sosp", backend, 1000)): "benchmarked up to d = 100"
       for backend in bench_steps.BACKENDS},
}


def suite_modules() -> list[ModuleType]:
    """Every benchmark module asv discovers in bench/asv (as ``bench.asv.<name>``)."""
    names = [m.name for m in pkgutil.iter_modules(bench.asv.__path__) if not m.name.startswith("_")]
    return [importlib.import_module(f"bench.asv.{name}") for name in names]


def suites() -> list[type]:
    """Every benchmark class asv discovers (public, defined in its module)."""
    return [cls for module in suite_modules() for name, cls in vars(module).items()
            if inspect.isclass(cls) and cls.__module__ == module.__name__
            and not name.startswith("_") and any(n.startswith(PREFIXES) for n in dir(cls))]


def combinations() -> list[Any]:
    """Every (suite, parameter values) of the parametrised suites, as pytest params."""
    return [pytest.param(cls, values, id="-".join(map(str, (cls.__name__, *values))))
            for cls in suites() for values in itertools.product(*cls.params)]


def tracks() -> list[Any]:
    """Every module-level ``track_`` function, as pytest params (name, function)."""
    return [pytest.param(f"{module.__name__.rsplit('.', 1)[-1]}.{name}", fn, id=name)
            for module in suite_modules() for name, fn in vars(module).items()
            if name.startswith("track_") and inspect.isfunction(fn)]


def plugin(name: Any) -> bool:
    """Whether ``name`` is an algorithm registered by outside code (a plugin)."""
    return name in ALGORITHMS and not ALGORITHMS[name].__module__.startswith("algorithms.")


@pytest.fixture(autouse=True)
def _keep_torch_threads() -> Iterator[None]:
    """The suites pin torch to one thread; give the test session its setting back."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_suites_are_well_formed() -> None:
    """Parametrised classes name every parameter; the step suites are discovered."""
    found = {cls.__name__ for cls in suites()}
    assert {"Steps", "MinimaxSteps", "ModelSteps"} <= found
    for cls in suites():
        assert len(cls.params) == len(cls.param_names), cls.__name__


def test_every_algorithm_has_step_suites_on_torch_and_jax() -> None:
    """The registry (plugins included) is the source: each algorithm is a parameter of a
    step suite on torch and one on jax."""
    registered = set(ALGORITHMS.plugins())
    assert set(bench_steps.MINIMISERS) | set(bench_steps.MINIMAX) == registered
    for backend in ("torch", "jax"):
        covered = {name for cls in suites() if issubclass(cls, bench_steps._Steps)
                   and backend in cls.params[1] for name in cls.params[0]}
        assert covered == registered, backend


@pytest.mark.parametrize(("cls", "values"), combinations())
def test_step_suite_runs(cls: type, values: tuple[Any, ...],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Setup and each benchmark method once; n/a only where :data:`SKIPPED` says (built-in
    algorithms) or with asv's NotImplementedError (plugins)."""
    monkeypatch.setattr(bench_steps, "STEPS", TEST_STEPS)
    bench = cls()
    reason = SKIPPED.get((cls.__name__, values))
    if reason is not None:
        with pytest.raises(NotImplementedError, match=reason):
            bench.setup(*values)
        return
    try:
        bench.setup(*values)
    except NotImplementedError as exc:
        if not plugin(values[0]):
            raise  # built-in algorithms are n/a exactly where SKIPPED says
        pytest.skip(f"plugin algorithm n/a: {exc}")
    for name in dir(cls):
        if name.startswith(PREFIXES):
            assert getattr(bench, name)(*values) is None, name
    if isinstance(bench, bench_steps._Steps):
        x = bench.run.backend.to_numpy(bench.run())
        assert x.shape == (bench.run.oracle.d,)
        assert np.all(np.isfinite(x))


@pytest.mark.parametrize(("name", "fn"), tracks())
def test_track(name: str, fn: Callable[[], float]) -> None:
    value = fn()
    assert isinstance(value, float) and math.isfinite(value), (name, value)
    assert isinstance(getattr(fn, "unit", None), str), f"{name} has no unit"
    if "acc" in name:
        assert 0.5 < value <= 1.0
    else:
        assert value > 0.0


def test_asv_check() -> None:
    """asv discovers the suites and finds their signatures valid (``asv check``), importing
    this checkout's code (asv drops PYTHONPATH and reads ASV_PYTHONPATH)."""
    asv = shutil.which("asv")
    if asv is None:
        pytest.skip("asv is not installed (the bench extra)")
    done = subprocess.run([asv, "check", "--python=same"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "ASV_PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No problems found" in done.stdout, done.stdout + done.stderr
