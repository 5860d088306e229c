"""``dp_sgda``: single-loop DP stochastic gradient descent–ascent, the baseline named in
xu2026's Figure 1 caption (Yang, Hu, Lei, Ying 2022; notes §2.5(a), reconstructed there).

    for t = 0..T−1:
        B_t ← b samples (fixed size, without replacement)
        g_x = Clip-mean ∇_x F(x_t, y_t) + N(0, (σ·2C/b)² I),  g_y likewise for ∇_y F
        x_{t+1} = x_t − η_x g_x;   y_{t+1} = Π_Y(y_t + η_y g_y)

Output: the last iterate x_T.

Deviations and resolved ambiguities:

* per-sample clipping at C of each partial separately, as xu2026 App. D does for every
  method (Yang et al. assume Lipschitz losses and add noise without clipping);
* ``calibration: paper`` is App. D's rule, advanced composition over the T queries (i.e.
  ``advanced``), not Yang et al.'s moments accountant;
* xu2026 gives no settings: the defaults are DP RGDA's (η_x, η_y) = (0.2, 0.8) (notes
  §2.5(a)) and b = 50 (its increment batch);
* §3 of xu2026 cites DP-SGDA to Rafique et al. 2022, a mis-citation (notes §2.5(a)).
"""

from __future__ import annotations

from collections.abc import Iterator

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
from algorithms.minimax import batch_sampling, draw_batch, minimax_oracle, private_partials
from algorithms.premises import NormTracker, clip_keys
from algorithms.privacy.ledger import Ledger, Mechanism, Release
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import Count, params


@params
class DPSGDAParams:
    steps: Count = 400
    batch_size: Count = 50
    lr: PositiveFloat = 0.2
    lr_y: PositiveFloat = 0.8
    clip: PositiveFloat = 1.0


@register_algorithm
class DPSGDA(Algorithm[DPSGDAParams, NoExtras]):
    """Single-loop clipped DP-SGDA: simultaneous noisy descent in x and ascent in y."""

    name = "dp_sgda"
    paper = "xu2026"
    reference = "Yang, Hu, Lei, Ying 2022 (UAI), as reconstructed in xu2026's notes §2.5(a)"
    rate = Rate(objective="empirical", stationarity="first", privacy_exponent=1 / 2,
                sample_exponent=None,
                source="Zhang, Lei, Ding, Xiang, Xu, Wang 2025 (AAAI; arXiv:2503.18317), "
                       "DP-SGDA analysis for NC-SC ERM",
                note="‖∇Φ_S‖ = Õ(d^{1/4}/(nε)^{1/2}), from outside the notes (the abstract "
                     "of the PrivateDiff paper); xu2026 Table 1 cites Yang et al. 2022's "
                     "O(1/√n + √d/(nε)), a convex-concave primal-dual population bound, "
                     "not a stationarity bound")
    minimax = True
    #: the per-sample x- and y-partial norms against C
    premises = ("steps_taken", *clip_keys())
    #: xu2026 App. D: advanced composition over the T queries
    paper_accountant = "advanced"

    def steps(self, data: DataInfo) -> int:
        return self.params.steps

    def batch_size(self, data: DataInfo) -> float:
        return float(min(self.params.batch_size, data.n))

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        p, n = self.params, data.n
        size = min(p.batch_size, n)
        ledger = Ledger()
        ledger.record(batch_sampling(n, size), [Release("gaussian", f"grad_{part}", sigma=sigma,
                                         sensitivity=2 * p.clip / size) for part in ("x", "y")],
                      p.steps)
        return ledger

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> NoExtras:
        return NoExtras()

    def iterate(self, oracle: Oracle, plan: Plan[NoExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        mm, p = minimax_oracle(oracle, self.name), self.params
        x, y = mm.x0, mm.y0
        norms = trace.clips[""] = NormTracker(mm.backend, p.clip)
        for t in range(p.steps):
            batch = draw_batch(mech, mm.n, p.batch_size)
            gx, gy = private_partials(mech, mm, x, y, batch, clip=p.clip, sigma=plan.sigma,
                                      tag="grad", norms=norms)
            x, y = x - p.lr * gx, mm.project_y(y + p.lr_y * gy)
            yield Step(t + 1, x)
