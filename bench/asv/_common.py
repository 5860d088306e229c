"""Shared set-up for the asv suites: small algorithm settings, fixed seeds, timed runs.

Benchmarks skip a parameter combination by raising ``NotImplementedError`` in ``setup``
(:func:`skip_reason` says why); asv records it as skipped (n/a).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from algorithms import ALGORITHMS, Algorithm, Plan, PrivacyTarget, Trace
from algorithms.privacy.ledger import Mechanism
from problems import PROBLEMS, Instance
from problems.backend import Backend, BackendSpec, get_backend
from problems.oracles import Oracle

#: Settings shared by every algorithm; each takes those that are fields of its ``Params``.
SETTINGS: dict[str, Any] = {"batch_size": 64, "lr": 0.01, "batch_refresh": 64,
                            "batch_diff": 16}
#: Largest d an algorithm is benchmarked at: spider_sosp forms dense per-sample Hessians
#: (d × d each): at d = 1000, 6 numpy steps took 27 s and 20 torch steps over 2 minutes.
MAX_D: dict[str, int] = {"spider_sosp": 100}
#: torch intra-op threads: the problems are small (batches of 64) and on a shared 2-core
#: machine a second thread makes timings vary several-fold (and float sums thread-dependent)
TORCH_THREADS = 1
#: Every private run: σ given (no calibration), ε and δ only label the plan.
TARGET = PrivacyTarget(epsilon=2.0, delta=1e-5, sigma=1.0)
SEED = 0


def make_algorithm(name: str, steps: int, settings: Mapping[str, Any] | None = None) -> Algorithm:
    """Algorithm ``name`` with :data:`SETTINGS` updated by ``settings`` (those its ``Params``
    has), its small settings and ``steps``."""
    cls = ALGORITHMS.lookup(name)
    return cls(cls.small_params({**SETTINGS, **(settings or {}), "steps": steps}))


def target(algorithm: Algorithm) -> PrivacyTarget:
    """:data:`TARGET` for private algorithms, no privacy for the rest."""
    return TARGET if algorithm.private else PrivacyTarget(epsilon=math.inf, delta=TARGET.delta)


def build(problem: str, **params: Any) -> Instance:
    """Problem ``problem`` with ``params``, built at :data:`SEED`."""
    cls = PROBLEMS.lookup(problem)
    return cls(cls.Params(**params)).build(SEED)


def skip_reason(algorithm: str, problem: str, backend: str, instance: Instance) -> str | None:
    """Why ``algorithm`` is not benchmarked on ``instance`` × ``backend`` (None: it is)."""
    cls, prob = ALGORITHMS.lookup(algorithm), PROBLEMS.lookup(problem)
    if cls.minimax != prob.minimax:
        return f"{algorithm} minimax={cls.minimax}, {problem} minimax={prob.minimax}"
    if backend not in prob.backends:
        return f"{problem} has no {backend} backend"
    missing = [k for k in cls.needs if k not in instance.constants]
    if missing:
        return f"{algorithm} needs {missing}, which {problem} lacks"
    if instance.d > MAX_D.get(algorithm, instance.d):
        return f"{algorithm} is benchmarked up to d = {MAX_D[algorithm]}"
    return None


@dataclass
class Run:
    """Everything a timed run needs: algorithm, plan, oracle, backend and step count."""

    algorithm: Algorithm
    plan: Plan
    oracle: Oracle
    backend: Backend
    instance: Instance
    steps: int

    def __call__(self) -> Any:
        """Up to ``steps`` iterates from x0 with fresh fixed-seed streams; the last one."""
        mech = Mechanism(self.backend.noise_source(SEED), np.random.default_rng(SEED))
        x, t = self.oracle.x0, 0
        for step in self.algorithm.run(self.oracle, self.plan, mech, Trace()):
            x, t = step.x, t + 1
            if t >= self.steps:
                break
        self.backend.sync(x)
        return x


def prepare(algorithm: str, problem: str, backend: str, steps: int, dtype: str = "float64",
            problem_params: Mapping[str, Any] | None = None,
            settings: Mapping[str, Any] | None = None) -> Run:
    """A :class:`Run` (``settings``: see :func:`make_algorithm`), or ``NotImplementedError``
    (asv: skipped) where it does not apply."""
    instance = build(problem, **(problem_params or {}))
    reason = skip_reason(algorithm, problem, backend, instance)
    if reason is not None:
        raise NotImplementedError(reason)
    alg = make_algorithm(algorithm, steps, settings)
    be = get_backend(BackendSpec(name=backend, dtype=dtype))
    if backend == "torch":
        import torch

        torch.set_num_threads(TORCH_THREADS)
    return Run(alg, alg.plan(instance, target(alg)), instance.oracle(be), be, instance, steps)


def warmed(run: Run) -> Run:
    """``run`` after one untimed pass (jit compilation, torch.func set-up, caches)."""
    run()
    return run
