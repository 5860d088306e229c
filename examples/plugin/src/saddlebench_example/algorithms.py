"""``dp_sgd_momentum``: DP-SGD with heavy-ball momentum on the privatised gradient.

    for t = 0..T−1:
        sample B_t (Poisson, rate B/n)
        g̃_t = (Σ_{i∈B_t} clip_C(∇f_i(x_t)) + N(0, σ²C² I)) / B
        m_t = β m_{t−1} + g̃_t
        x_{t+1} = x_t − η m_t

Momentum only post-processes the released noisy sums, so the privacy ledger is DP-SGD's:
the class inherits ``planned_ledger`` and ``extras`` from :class:`~algorithms.dp_sgd.DPSGD`
and replaces the update alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from algorithms import register_algorithm
from algorithms.base import Plan, Step, Trace
from algorithms.dp_sgd import DPSGD, DPSGDExtras, DPSGDParams
from algorithms.premises import NormTracker
from algorithms.privacy.ledger import Mechanism
from problems.oracles import Oracle
from problems.params import Fraction, params


@params
class MomentumParams(DPSGDParams):
    beta: Fraction = 0.9  # momentum β in (0, 1)


@register_algorithm
class DPSGDMomentum(DPSGD):
    """Clipped DP-SGD whose step follows a heavy-ball average of the noisy gradients."""

    name = "dp_sgd_momentum"
    paper = "example"
    reference = "saddlebench example plugin (examples/plugin)"
    Params = MomentumParams
    rate = None  # DP-SGD's rate is not claimed for the momentum variant

    def iterate(self, oracle: Oracle, plan: Plan[DPSGDExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        p = self.params
        norms = trace.clips[""] = NormTracker(oracle.backend, plan.extra.bound)
        x, m = oracle.x0, oracle.xp.zeros_like(oracle.x0)
        for t in range(plan.steps):
            batch = self.sample(mech, oracle.n)
            total = self.gradient_sum(oracle, x, batch, norms)
            noisy = mech.gaussian(total, sensitivity=plan.extra.sensitivity, sigma=plan.sigma,
                                  tag="grad_sum", batch=batch)
            m = p.beta * m + noisy / p.batch_size
            x = x - p.lr * m
            yield Step(t + 1, x)
