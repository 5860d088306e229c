"""Cost of algorithm steps: time and peak memory of every registered algorithm (plugins
included) × backend on a problem suited to it.

The registry is the source: the parameters are read from ``ALGORITHMS`` when asv imports
this module, so a new algorithm, built in or from a plugin's entry point, is benchmarked
without an edit here. Minimisers run on the strict saddle (numpy, torch
and jax, at two sizes) and on the digits MLP (torch, jax); minimax algorithms on the NC-SC
double well.

Each benchmark times :data:`STEPS` iterates of ``Algorithm.run`` from x0 with fresh
fixed-seed noise and sampling streams, ending with a device sync. The problem build, the
plan (σ is given) and one warm-up pass (jit compilation, torch.func set-up) happen in
``setup``, outside the timing. Combinations that do not apply raise ``NotImplementedError``
in ``setup`` (asv: n/a; :func:`._common.skip_reason`): minimax algorithms on minimisation
problems and the reverse, backends the problem does not declare, missing instance
constants (``cls.needs``) and d above ``_common.MAX_D``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from algorithms import ALGORITHMS

from ._common import Run, prepare, warmed

#: iterates per timed call (tests/test_asv_suites.py lowers it to run every combination)
STEPS = 20
BACKENDS = ["numpy", "torch", "jax"]
#: every registered algorithm, those of installed plugins too
REGISTERED = ALGORITHMS.plugins()
MINIMISERS = sorted(name for name, cls in REGISTERED.items() if not cls.minimax)
MINIMAX = sorted(name for name, cls in REGISTERED.items() if cls.minimax)


@dataclass(frozen=True)
class Workload:
    """The problem a suite runs on: its params, dtype, and algorithm settings over
    ``_common.SETTINGS`` (each algorithm takes those its ``Params`` has)."""

    problem: str
    params: Mapping[str, Any] = field(default_factory=dict)
    dtype: str = "float64"
    settings: Mapping[str, Any] = field(default_factory=dict)


class _Steps:
    """:data:`STEPS` iterates of ``algorithm`` on ``backend``; a subclass names its
    :class:`Workload` and its parameters: ``algorithm``, ``backend``, then problem params
    (e.g. ``d``)."""

    workload: ClassVar[Workload]
    param_names: ClassVar[tuple[str, ...]]
    timeout = 120.0

    def setup(self, algorithm: str, backend: str, *sizes: Any) -> None:
        w = self.workload
        sized = dict(zip(self.param_names[2:], sizes, strict=True))
        self.run: Run = warmed(prepare(algorithm, w.problem, backend, STEPS, w.dtype,
                                       {**w.params, **sized}, w.settings))

    def time_steps(self, *params: Any) -> None:
        self.run()

    def peakmem_steps(self, *params: Any) -> None:
        self.run()


class Steps(_Steps):
    """Minimisers on the cosine strict saddle (n = 2000, float64) at d = 10 and 1000."""

    params = (MINIMISERS, BACKENDS, [10, 1000])
    param_names = ("algorithm", "backend", "d")
    workload = Workload("strict_saddle", {"n": 2000})


class MinimaxSteps(_Steps):
    """Minimax algorithms on the NC-SC double well (d = d_y = 10, n = 2000, float64)."""

    params = (MINIMAX, BACKENDS)
    param_names = ("algorithm", "backend")
    workload = Workload("ncsc_double_well", {"d": 10, "d_y": 10, "n": 2000})


class ModelSteps(_Steps):
    """Minimisers on the digits MLP (hidden 32, d = 2410), float32, batches of 64; C = 13
    for algorithms that assume a gradient bound (the quick avdiukhin2024 experiments')."""

    params = (MINIMISERS, ["torch", "jax"])
    param_names = ("algorithm", "backend")
    workload = Workload("digits_mlp", dtype="float32",
                        settings={"batch_size": 64, "lr": 0.1, "bound": 13.0})
