"""Utility and privacy figures of fixed-seed runs, tracked across commits.

The same code and seeds give the same numbers, so a change in any of them is a change in
an algorithm, a problem or the accountant: silent utility (or accounting) regressions show
on the dashboard as steps in these curves.
"""

from __future__ import annotations

import numpy as np

from algorithms import Trace
from algorithms.privacy.accounting import epsilon
from algorithms.privacy.ledger import Mechanism

from ._common import SEED, TARGET, Run, prepare

#: the strict saddle started near its saddle, as in the smoke experiment
SADDLE = {"d": 10, "n": 2000, "init_scale": 0.01}
STEPS = 300


def _saddle_run(algorithm: str) -> Run:
    return prepare(algorithm, "strict_saddle", "numpy", STEPS, problem_params=SADDLE,
                   settings={"lr": 0.1, "batch_size": 64})


def _final_grad_norm(run: Run) -> float:
    """‖∇F(x_T)‖ over the whole training set."""
    return float(np.linalg.norm(run.backend.to_numpy(run.oracle.grad(run()))))


def track_grad_norm_dp_sgd() -> float:
    """Final ‖∇F‖ of dp_sgd (σ = 1, C = 1) on the strict saddle (d = 10, n = 2000)."""
    return _final_grad_norm(_saddle_run("dp_sgd"))


track_grad_norm_dp_sgd.unit = "grad norm"  # type: ignore[attr-defined]


def track_grad_norm_sgd() -> float:
    """Final ‖∇F‖ of sgd on the strict saddle (d = 10, n = 2000)."""
    return _final_grad_norm(_saddle_run("sgd"))


track_grad_norm_sgd.unit = "grad norm"  # type: ignore[attr-defined]


def track_test_acc_dp_sgd_digits() -> float:
    """Test accuracy of dp_sgd (σ = 1, C = 1, 300 steps of 64) on the digits MLP (torch)."""
    run = prepare("dp_sgd", "digits_mlp", "torch", STEPS, dtype="float32",
                  problem_params={"hidden": 16}, settings={"lr": 0.5, "batch_size": 64})
    return run.instance.evaluate_test(run.backend, run())["test_acc"]


track_test_acc_dp_sgd_digits.unit = "accuracy"  # type: ignore[attr-defined]


def track_eps_pld_dp_sgd() -> float:
    """ε (PLD, δ = 1e-5) of the ledger a fixed dp_sgd run records (σ = 1, q = 64/2000)."""
    run = _saddle_run("dp_sgd")
    mech = Mechanism(run.backend.noise_source(SEED), np.random.default_rng(SEED))
    for _ in run.algorithm.run(run.oracle, run.plan, mech, Trace()):
        pass
    value = epsilon(mech.ledger, TARGET.delta, "pld")
    assert value is not None
    return value


track_eps_pld_dp_sgd.unit = "epsilon"  # type: ignore[attr-defined]
