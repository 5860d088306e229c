"""``dp_sgd``: clipped DP-SGD (Abadi et al. 2016; avdiukhin2024 Algorithm 1).

    for t = 0..T−1:
        sample B_t                                            # line 2
        g_i = ∇f_i(x_t) / max(1, ‖∇f_i(x_t)‖/C)               # line 3
        ξ_t ~ N(0, Δ² I)                                      # line 4
        x_{t+1} = x_t − η (avg_{i∈B_t} g_i + ξ_t)              # line 5

Implementation: Gaussian noise N(0, (σC)²) is added to the *sum* of clipped gradients
and the result divided by B, so Δ = σC/B with σ the noise multiplier.

Deviations and resolved ambiguities:

* Sampling: Poisson with q = B/n by default (the assumption of Abadi et al.'s moments
  accountant and of PLD); the sum is divided by the expected batch size B. ``sampling:
  fixed`` draws exactly B records without replacement; its sensitivity is then 2C
  (replace-one; see algorithms/privacy/accounting.py for how each accountant treats it).
* ``calibration: paper`` is Abadi et al.'s moments accountant, i.e. RDP; ``pld`` is tight.
* Output: the last iterate (the paper uses Algorithm 1 only as a privacy black box).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import PositiveFloat

from algorithms.base import (
    Algorithm,
    Extras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    register_algorithm,
)
from algorithms.premises import NormTracker, clip_keys
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Release, Sampling
from algorithms.sgd import SGDParams, draw_minibatch, minibatch_size
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import params


@params
class DPSGDParams(SGDParams):
    clip: PositiveFloat = 1.0


@dataclass(frozen=True)
class DPSGDExtras(Extras):
    #: C, the per-sample norm bound the noise is scaled to
    bound: float
    #: L2 sensitivity of the summed gradients
    sensitivity: float


def sum_sensitivity(p: SGDParams, bound: float) -> float:
    """L2 sensitivity of a sum of per-sample vectors of norm ≤ C: C (add/remove, Poisson)
    or 2C (replace-one, fixed batches)."""
    return (2.0 if p.sampling == "fixed" else 1.0) * bound


def noisy_sum_ledger(p: SGDParams, n: int, steps: int, sigma: float,
                     sensitivity: float) -> Ledger:
    """T rounds, each one Gaussian release of the sum over B_t (``grad_sum``)."""
    if p.sampling == "poisson":
        sampling = Sampling("poisson", n, rate=p.batch_size / n)
    else:
        sampling = Sampling("fixed", n, rate=p.batch_size / n, size=p.batch_size)
    ledger = Ledger()
    ledger.record(sampling, [Release("gaussian", "grad_sum", sigma=sigma,
                                     sensitivity=sensitivity)], steps)
    return ledger


@register_algorithm
class DPSGD(Algorithm[DPSGDParams, DPSGDExtras]):
    """Clipped DP-SGD with Gaussian noise on the summed clipped gradients."""

    name = "dp_sgd"
    paper = "avdiukhin2024"
    reference = "Abadi et al. 2016, Deep Learning with Differential Privacy; avdiukhin2024 Alg. 1"
    private = True
    rate = Rate(objective="empirical", stationarity="first", privacy_exponent=1 / 2,
                sample_exponent=None,
                source="avdiukhin2024 §1 ('the standard convergence rate' d^{1/4}/√(nε)); "
                       "huang2025 §1 (Yang et al. 2022: Õ((√d/(nε))^{1/2}) for DPSGD-GC)",
                note="avdiukhin2024 uses Algorithm 1 only as a privacy black box and proves "
                     "no utility bound for it; this is the best-known rate the notes cite "
                     "(clipping inactive, or an a.s. bound on the gradient variance). With "
                     "bounded variance only, clipping bias gives (√d/(nε))^{1/3} "
                     "(Koloskova et al. 2023, huang2025 §1)")
    premises = ("steps_taken", *clip_keys())
    #: Abadi et al.'s moments accountant
    paper_accountant = "rdp"

    def steps(self, data: DataInfo) -> int:
        return int(self.params.steps)

    def batch_size(self, data: DataInfo) -> float:
        return minibatch_size(self.params, data)

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        p = self.params
        return noisy_sum_ledger(p, data.n, self.steps(data), sigma,
                                sum_sensitivity(p, p.clip))

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> DPSGDExtras:
        p = self.params
        return DPSGDExtras(bound=float(p.clip), sensitivity=sum_sensitivity(p, p.clip))

    def sample(self, mech: Mechanism, n: int) -> Batch:
        """Line 2: draw B_t."""
        return draw_minibatch(self.params, mech, n)

    def gradient_sum(self, oracle: Oracle, x: Any, batch: Batch, norms: NormTracker) -> Any:
        """Line 3: Σ_{i∈B_t} clip_C(∇f_i(x_t)); the per-sample norms go to ``norms``."""
        total, seen = oracle.clipped_grad_sum_and_norms(x, batch.indices, self.params.clip)
        norms.add(seen)
        return total

    def iterate(self, oracle: Oracle, plan: Plan[DPSGDExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        xp, p = oracle.xp, self.params
        norms = trace.clips[""] = NormTracker(oracle.backend, plan.extra.bound)
        x = oracle.x0
        for t in range(plan.steps):
            batch = self.sample(mech, oracle.n)  # line 2
            total = self.gradient_sum(oracle, x, batch, norms) if len(batch) \
                else xp.zeros_like(x)  # line 3
            noisy = mech.gaussian(total, sensitivity=plan.extra.sensitivity,  # line 4
                                  sigma=plan.sigma, tag="grad_sum", batch=batch)
            x = x - p.lr * noisy / p.batch_size  # line 5
            yield Step(t + 1, x)
