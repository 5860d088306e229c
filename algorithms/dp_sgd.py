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
from typing import Any, ClassVar

from pydantic import PositiveFloat

from algorithms.base import Plan, PrivacyTarget, Rate, Step, register_algorithm
from algorithms.premises import NormTracker, clip_keys, unmeasured
from algorithms.privacy.accounting import calibrate, epsilon
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Release, Sampling
from algorithms.sgd import SGD, SGDParams
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import params


@params
class DPSGDParams(SGDParams):
    clip: PositiveFloat = 1.0


@register_algorithm
class DPSGD(SGD):
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
    Params: ClassVar[type] = DPSGDParams
    premises: ClassVar[tuple[str, ...]] = ("steps_taken", *clip_keys())

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._norms: NormTracker | None = None

    def bound(self, data: DataInfo) -> float:
        """C: the per-sample norm bound the noise is scaled to."""
        return float(self.params.clip)

    def sensitivity(self, data: DataInfo) -> float:
        """L2 sensitivity of the summed gradients: C (add/remove) or 2C (replace-one)."""
        return (2.0 if self.params.sampling == "fixed" else 1.0) * self.bound(data)

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        p, n = self.params, data.n
        if p.sampling == "poisson":
            sampling = Sampling("poisson", n, rate=p.batch_size / n)
        else:
            sampling = Sampling("fixed", n, rate=p.batch_size / n, size=p.batch_size)
        release = Release("gaussian", "grad_sum", sigma=sigma, sensitivity=self.sensitivity(data))
        ledger = Ledger()
        ledger.record(sampling, [release], self.steps(data))
        return ledger

    def paper_sigma(self, data: DataInfo, target: PrivacyTarget) -> float:
        return calibrate(lambda s: self.planned_ledger(data, s), target.epsilon, target.delta,
                         "rdp")

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        return epsilon(self.planned_ledger(data, sigma), delta, "rdp")

    def gradient_sum(self, oracle: Oracle, x: Any, batch: Batch, plan: Plan) -> Any:
        """Σ_{i∈B_t} of the clipped per-sample gradients (line 3); their norms go to the
        premise data."""
        total, norms = oracle.clipped_grad_sum_and_norms(x, batch.indices, self.params.clip)
        if self._norms is not None:
            self._norms.add(norms)
        return total

    def plan_extra(self, data: DataInfo) -> dict[str, Any]:
        return {"bound": self.bound(data), "sensitivity": self.sensitivity(data)}

    def run_sensitivity(self, oracle: Oracle, plan: Plan) -> float:
        """Sensitivity of the noisy sum in this run (fixed at plan time here)."""
        return float(plan.extra["sensitivity"])

    def run_bound(self, plan: Plan) -> float:
        """C of this run, the bound the per-sample norms are compared with (after
        :meth:`run_sensitivity`)."""
        return float(plan.extra["bound"])

    def premise_data(self) -> dict[str, Any]:
        """Steps taken and the per-sample norms against C."""
        norms = self._norms.premises() if self._norms is not None else unmeasured(None)
        return {**super().premise_data(), **norms}

    def iterate(self, oracle: Oracle, plan: Plan, mech: Mechanism) -> Iterator[Step]:
        xp, p = oracle.xp, self.params
        sensitivity = self.run_sensitivity(oracle, plan)
        self._norms = NormTracker(oracle.backend, self.run_bound(plan))
        x = oracle.x0
        for t in range(plan.steps):
            batch = self.sample(mech, oracle.n)  # line 2
            total = self.gradient_sum(oracle, x, batch, plan) if len(batch) else xp.zeros_like(x)
            noisy = mech.gaussian(total, sensitivity=sensitivity, sigma=plan.sigma,  # line 4
                                  tag="grad_sum", batch=batch)
            x = x - p.lr * noisy / p.batch_size  # line 5
            self._x = x
            yield Step(t + 1, x)

