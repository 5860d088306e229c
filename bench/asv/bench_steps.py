"""Per-step cost of every algorithm on every backend, and a utility tracker."""

from __future__ import annotations

from typing import Any

import numpy as np

from algorithms import PrivacyTarget, get_algorithm
from algorithms.privacy.ledger import Mechanism
from problems import get_problem
from problems.backend import BackendSpec, get_backend

STEPS = 50


def _setup(algorithm: str, backend: str, problem: str = "nc_least_squares",
           dtype: str = "float64") -> tuple[Any, Any, Any, Any]:
    prob = get_problem(problem)
    params = prob.Params(clients=2, base_n=500) if problem == "nc_least_squares" else prob.Params()
    instance = prob(params).build(0)
    alg_cls = get_algorithm(algorithm)
    extra = {"bound": 5.0} if algorithm == "noisy_sgd" else {}
    alg = alg_cls(alg_cls.Params(steps=STEPS, batch_size=64, **extra))
    plan = alg.plan(instance, PrivacyTarget(sigma=1.0) if alg_cls.private else PrivacyTarget())
    be = get_backend(BackendSpec(name=backend, dtype=dtype))
    oracle = instance.oracle(be)
    return alg, oracle, plan, be


def _run(alg: Any, oracle: Any, plan: Any, be: Any) -> None:
    mech = Mechanism(be.noise_source(0), np.random.default_rng(0))
    x = None
    for step in alg.iterate(oracle, plan, mech):
        x = step.x
    be.sync(x)


class Steps:
    """50 steps on nc_least_squares (20k samples, d = 10)."""

    params = (["sgd", "dp_sgd", "noisy_sgd"], ["numpy", "torch", "jax"])
    param_names = ("algorithm", "backend")

    def setup(self, algorithm: str, backend: str) -> None:
        self.args = _setup(algorithm, backend)
        _run(*self.args)  # warm-up (jit, torch.func)

    def time_steps(self, algorithm: str, backend: str) -> None:
        _run(*self.args)

    def peakmem_steps(self, algorithm: str, backend: str) -> None:
        _run(*self.args)


class DigitsSteps:
    """50 steps of the digits MLP, float32."""

    params = (["sgd", "dp_sgd"], ["torch", "jax"])
    param_names = ("algorithm", "backend")

    def setup(self, algorithm: str, backend: str) -> None:
        self.args = _setup(algorithm, backend, "digits_mlp", "float32")
        _run(*self.args)

    def time_steps(self, algorithm: str, backend: str) -> None:
        _run(*self.args)


def track_dp_sgd_grad_norm() -> float:
    """Final ‖∇F‖ of a fixed-seed dp_sgd run: silent utility regressions show here."""
    alg, oracle, plan, be = _setup("dp_sgd", "numpy")
    mech = Mechanism(be.noise_source(0), np.random.default_rng(0))
    x = oracle.x0
    for step in alg.iterate(oracle, plan, mech):
        x = step.x
    return float(np.linalg.norm(oracle.grad(x)))
