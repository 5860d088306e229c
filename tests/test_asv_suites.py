"""The asv suites (bench/asv) still import, set up and run: one combination per suite, and
every ``track_`` function once (asv itself is not run here)."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import bench.asv
from bench.asv import bench_steps
from bench.asv._common import Run

PREFIXES = ("time_", "peakmem_", "mem_", "track_", "timeraw_")


def suite_modules() -> list[ModuleType]:
    """Every benchmark module asv discovers in bench/asv (as ``bench.asv.<name>``)."""
    names = [m.name for m in pkgutil.iter_modules(bench.asv.__path__) if not m.name.startswith("_")]
    return [importlib.import_module(f"bench.asv.{name}") for name in names]


def tracks() -> list[Any]:
    """Every module-level ``track_`` function, as pytest params (name, function)."""
    return [pytest.param(f"{module.__name__.rsplit('.', 1)[-1]}.{name}", fn, id=name)
            for module in suite_modules() for name, fn in vars(module).items()
            if name.startswith("track_") and inspect.isfunction(fn)]


@pytest.fixture(autouse=True)
def _keep_torch_threads() -> Iterator[None]:
    """The suites pin torch to one thread; give the test session its setting back."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def assert_finite(run: Run) -> None:
    x = run.backend.to_numpy(run())
    assert x.shape == (run.oracle.d,)
    assert np.all(np.isfinite(x))


def test_suites_are_well_formed() -> None:
    """Parametrised classes name every parameter; every benchmark is discoverable."""
    found = 0
    for module in suite_modules():
        for cls in (v for v in vars(module).values() if inspect.isclass(v)):
            if cls.__module__ != module.__name__:
                continue
            params = getattr(cls, "params", ())
            assert len(params) == len(getattr(cls, "param_names", ())), cls.__name__
            found += sum(name.startswith(PREFIXES) for name in vars(cls))
    assert found >= 6


@pytest.mark.parametrize(("cls", "params"), [
    (bench_steps.Steps, ("dp_sgd", "numpy", 10)),
    (bench_steps.MinimaxSteps, ("dp_sgda",)),
    (bench_steps.ModelSteps, ("dp_sgd", "torch")),
], ids=["Steps", "MinimaxSteps", "ModelSteps"])
def test_step_suite_runs(cls: Any, params: tuple[Any, ...]) -> None:
    for values, choices in zip(params, cls.params, strict=True):
        assert values in choices
    bench = cls()
    bench.setup(*params)
    assert bench.time_steps(*params) is None
    assert_finite(bench.run)


def test_steps_skip() -> None:
    """Minimisers never skip on numpy; spider_sosp skips at d = 1000 (dense Hessians)."""
    assert {"sgd", "dp_sgd", "spider_sosp"} <= set(bench_steps.MINIMISERS)
    assert not set(bench_steps.MINIMISERS) & set(bench_steps.MINIMAX)
    with pytest.raises(NotImplementedError, match="spider_sosp"):
        bench_steps.Steps().setup("spider_sosp", "numpy", 1000)


@pytest.mark.parametrize(("name", "fn"), tracks())
def test_track(name: str, fn: Callable[[], float]) -> None:
    value = fn()
    assert isinstance(value, float) and math.isfinite(value), (name, value)
    assert isinstance(getattr(fn, "unit", None), str), f"{name} has no unit"
    if "acc" in name:
        assert 0.5 < value <= 1.0
    else:
        assert value > 0.0
