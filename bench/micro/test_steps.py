"""One full algorithm step, ``dp_sgd`` (kernel ``step_dp_sgd``) against ``sgd``
(``step_sgd``): batch sampling, the (clipped) gradient, the noise and its ledger record, the
update; fixed-size batches of 64 so both steps see the same batch size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from algorithms import Algorithm, Plan, PrivacyTarget, Step, Trace, get_algorithm
from algorithms.privacy.ledger import Mechanism
from bench.micro.common import BATCH, CLIP, ROUNDS, record, setup, targets
from problems.oracles import Oracle

pytestmark = pytest.mark.benchmark(max_time=0.5)

PROBLEMS = ("digits_mlp", "cifar10_vgg")
HORIZON = 200  # steps per run; a new run starts when they are used up


class Stepper:
    """Calling it advances ``algorithm`` by one step (restarting the run when it ends) and
    synchronises the device on the new iterate."""

    def __init__(self, algorithm: Algorithm, oracle: Oracle, plan: Plan) -> None:
        self.algorithm, self.oracle, self.plan = algorithm, oracle, plan
        self.run: Iterator[Step] = iter(())

    def __call__(self) -> None:
        step = next(self.run, None)
        if step is None:
            be = self.oracle.backend
            mech = Mechanism(be.noise_source(0), np.random.default_rng(0))
            self.run = self.algorithm.run(self.oracle, self.plan, mech, Trace())
            step = next(self.run)
        self.oracle.backend.sync(step.x)


def stepper(name: str, problem: str, device: str) -> Stepper:
    """``name`` (sgd or dp_sgd) at batch 64, σ = 1, on ``problem`` with torch."""
    s = setup(problem, "torch", device)
    cls = get_algorithm(name)
    extra = {"clip": CLIP} if cls.private else {}
    algorithm = cls(cls.Params(steps=HORIZON, batch_size=BATCH, lr=0.01, sampling="fixed",
                               **extra))
    target = PrivacyTarget(epsilon=2.0, sigma=1.0) if cls.private else PrivacyTarget()
    return Stepper(algorithm, s.oracle, algorithm.plan(s.instance, target))


@pytest.mark.parametrize("algorithm", ["sgd", "dp_sgd"])
@pytest.mark.parametrize(("problem", "backend", "device"), targets(PROBLEMS, ("torch",)))
def test_step(benchmark: Any, problem: str, backend: str, device: str, algorithm: str) -> None:
    step = stepper(algorithm, problem, device)
    record(benchmark, step, rounds=ROUNDS[problem], problem=problem, backend=backend,
           device=device, kernel=f"step_{algorithm}", batch=BATCH, d=step.oracle.d)
