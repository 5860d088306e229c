"""``private_diff``: PrivateDiff Minimax (Zhang, Lei, Ding, Xiang, Xu, Wang, AAAI 2025), the
first-order DP minimax baseline of xu2026 Table 2, re-implemented from the structure of its
public code (``mingxilei/PrivateDiff-Minimax/optimizer.py``; notes §2.5(d)).

    for r = 0..R−1:
        (i)   y ← T₂ steps of clipped gradient ascent on y (step λ_y) from the current y,
              then y ← y + N(0, (σΔ_y)² I)                          # output perturbation
        (ii)  r mod P = 0:  v_r = Clip-mean ∇_x F(x_r, y_r) + N(0, (σ·2c₁/b)² I)
              else:         v_r = v_{r−1} + Clip-mean[∇_x F(x_r, y_r) − ∇_x F(x_{r−1}, y_{r−1})]
                                  + N(0, (σ·2c₂‖x_r − x_{r−1}‖/b)² I)   # clip ∝ movement
        (iii) x_{r+1} = x_r − η v_r

Privacy under xu2026 App. D's accounting: per-sample clipping, replace-one sensitivities
2c/b, the same noise multiplier σ for every release, ``calibration: paper`` = advanced
composition over the releases (two per round).

Deviations and resolved ambiguities (against the original code):

* the inner ascent clips per-sample y-gradients at c_y and its output perturbation is
  calibrated to Δ_y = T₂ λ_y 2c_y/b, the triangle-inequality sensitivity of T₂ clipped
  steps (valid without strong concavity; the code's σ_α uses its own analysis);
* batches: the whole data by default (the code's full-batch steps); ``batch_size`` draws
  fixed-size batches without replacement, fresh per query;
* the code's defaults (η = λ_y = 0.2, P = 2, T₂ = 3, c₁ = c₂ = c_y = 1) are kept; xu2026
  gives none of PrivateDiff's hyperparameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import PositiveFloat

from algorithms.base import (
    Algorithm,
    NoExtras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    register_algorithm,
)
from algorithms.minimax import batch_sampling, draw_batch, minimax_oracle
from algorithms.premises import NormTracker, clip_keys, clip_tracked
from algorithms.privacy.ledger import Ledger, Mechanism, Release
from problems.base import DataInfo
from problems.minimax import MinimaxOracle
from problems.oracles import Oracle
from problems.params import Count, params


@params
class PrivateDiffParams:
    steps: Count = 400
    period: Count = 2
    inner_steps: Count = 3
    lr: PositiveFloat = 0.2
    lr_y: PositiveFloat = 0.2
    clip: PositiveFloat = 1.0
    diff_clip: PositiveFloat = 1.0
    clip_y: PositiveFloat = 1.0
    batch_size: Count | None = None  # None: the whole data


@register_algorithm
class PrivateDiff(Algorithm[PrivateDiffParams, NoExtras]):
    """PrivateDiff Minimax: output-perturbed inner ascent, SPIDER-style x-gradient tracking."""

    name = "private_diff"
    paper = "xu2026"
    reference = ("Zhang, Lei, Ding, Xiang, Xu, Wang 2025 (AAAI), Improved Rates of "
                 "Differentially Private Nonconvex-Strongly-Concave Minimax Optimization")
    rate = Rate(objective="empirical", stationarity="first", privacy_exponent=2 / 3,
                sample_exponent=None,
                source="Zhang, Lei, Ding, Xiang, Xu, Wang 2025 (AAAI), as cited in xu2026's "
                       "notes §2.5(d)",
                note="‖∇Φ_S‖ = Õ(d^{1/3}/(nε)^{2/3}) = Õ((√d/(nε))^{2/3}) (first order, "
                     "NC-SC ERM); xu2026 itself states no rate for this baseline")
    minimax = True
    #: the refresh clip c₁ of the x-partials is the main clip; the movement-proportional
    #: difference clip c₂‖Δx‖ is ``diff``, the inner ascent's c_y is ``y``
    premises = ("steps_taken", *clip_keys(), *clip_keys("diff"), *clip_keys("y"))
    #: xu2026 App. D: advanced composition over the releases
    paper_accountant = "advanced"

    def size(self, n: int) -> int:
        b = self.params.batch_size
        return n if b is None else min(b, n)

    def steps(self, data: DataInfo) -> int:
        return self.params.steps

    def batch_size(self, data: DataInfo) -> float:
        return float(self.size(data.n))

    def y_sensitivity(self, n: int) -> float:
        p = self.params
        return p.inner_steps * p.lr_y * 2 * p.clip_y / self.size(n)

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        p, n, ledger = self.params, data.n, Ledger()
        b = self.size(n)
        sampling = batch_sampling(n, b)
        ledger.record(sampling, [Release("gaussian", "y_output", sigma=sigma,
                                         sensitivity=self.y_sensitivity(n))], p.steps)
        ledger.record(sampling, [Release("gaussian", "v", sigma=sigma,
                                         sensitivity=2 * p.clip / b)], p.steps)
        return ledger

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> NoExtras:
        return NoExtras()

    def ascend(self, mm: MinimaxOracle, mech: Mechanism, plan: Plan[NoExtras], x: Any, y: Any,
               clips: dict[str, NormTracker | None]) -> Any:
        """(i): T₂ clipped ascent steps on one batch, then output perturbation."""
        p, xp = self.params, mm.xp
        batch = draw_batch(mech, mm.n, self.size(mm.n))
        for _ in range(p.inner_steps):
            gy = mm.per_sample_y_partials(x, y, batch.indices)
            ascent = xp.mean(clip_tracked(xp, gy, p.clip_y, clips["y"]), axis=0)
            y = mm.project_y(y + p.lr_y * ascent)
        return mm.project_y(mech.gaussian(y, sensitivity=self.y_sensitivity(mm.n),
                                          sigma=plan.sigma, tag="y_output", batch=batch))

    def track(self, mm: MinimaxOracle, mech: Mechanism, plan: Plan[NoExtras], r: int,
              point: tuple[Any, Any], previous: tuple[Any, Any] | None, v: Any,
              clips: dict[str, NormTracker | None]) -> Any:
        """(ii): refresh every P rounds, else a movement-clipped difference."""
        p, xp = self.params, mm.xp
        if r % p.period == 0 or previous is None:
            batch = draw_batch(mech, mm.n, self.size(mm.n))
            g = mm.per_sample_x_partials(*point, batch.indices)
            mean = xp.mean(clip_tracked(xp, g, p.clip, clips[""]), axis=0)
            return mech.gaussian(mean, sensitivity=2 * p.clip / len(batch), sigma=plan.sigma,
                                 tag="v", batch=batch)
        moved = mm.norm(point[0] - previous[0])
        bound = p.diff_clip * moved
        if bound == 0.0:
            return v  # the difference query is exactly zero: nothing to release
        batch = draw_batch(mech, mm.n, self.size(mm.n))
        diff = (mm.per_sample_x_partials(*point, batch.indices)
                - mm.per_sample_x_partials(*previous, batch.indices))
        mean = xp.mean(clip_tracked(xp, diff, bound, clips["diff"], scale=moved), axis=0)
        return v + mech.gaussian(mean, sensitivity=2 * bound / len(batch), sigma=plan.sigma,
                                 tag="v", batch=batch)

    def iterate(self, oracle: Oracle, plan: Plan[NoExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        mm, p = minimax_oracle(oracle, self.name), self.params
        clips = trace.clips = {"": NormTracker(mm.backend, p.clip),
                               "diff": NormTracker(mm.backend, p.diff_clip),
                               "y": NormTracker(mm.backend, p.clip_y)}
        x, y, v = mm.x0, mm.y0, None
        previous: tuple[Any, Any] | None = None
        for r in range(p.steps):
            y = self.ascend(mm, mech, plan, x, y, clips)
            v = self.track(mm, mech, plan, r, (x, y), previous, v, clips)
            previous = (x, y)
            x = x - p.lr * v
            yield Step(r + 1, x)
