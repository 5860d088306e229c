"""``gauss_psgd`` (tao2025, Algorithm 1): Gaussian-perturbed SGD with the model-drift escape test.

    loop:
      ĝ_t ← P_Grad_Oracle(x_{t−1})                                   # step 4
      if ‖ĝ_t‖ ≤ 3χ:                                                  # step 5: maybe a saddle
          x̃ ← x_{t−1}                                                 # step 6
          for q = 1..Q:                                               # step 7
              restart from x̃                                          # step 8
              for τ = 1..Γ:                                           # step 9
                  x ← x − η ĝ;  if ‖x − x̃‖ ≥ R: escaped, break         # steps 10-14
              if escaped: break
          if not escaped: return x̃                                    # steps 19-20
          (escaped: ordinary steps resume from the escaped iterate)
      else: x_t ← x_{t−1} − η ĝ_t                                      # step 22

with the Ada-DP-SPIDER oracle (Algorithms 2/3, :mod:`algorithms.ada_dp_spider`), whose DP
noise is the only perturbation: no extra noise is ever added, and every decision (the 3χ
test, the R test, the return) uses private outputs only (post-processing). Each run logs the
number of triggers (‖ĝ‖ ≤ 3χ), escape rounds, successful escapes, how it ended, and the
typical norm of the oracle's privacy noise next to 3χ (notes §7: at d ≈ 10⁵ the noise norm
alone may exceed 3χ, so the trigger never fires).

Deviations and resolved ambiguities (notes §3.1):

* T1: a round restart sets the current point to x̃ (the paper's counter reset);
* T2: on failure to escape the algorithm outputs x̃ (the text and Theorem 1), not the last
  iterate of round Q;
* T3: the paper's loop has no budget: the run also stops when the data (``epochs`` passes)
  run out, and then outputs the current iterate; ``termination`` says which happened;
* T4: the first oracle call of every escape round is a forced refresh (O1), so the rounds
  are independent and SPIDER stays unbiased;
* T5: every oracle call, discarded escape rounds included, uses fresh samples and is
  accounted;
* χ (``chi``: None) follows Theorem 1's scaling with the noise, χ = ``chi_scale``·ψ̂ (eq. 5:
  χ = 4√C s μ² ψ; Lemma 5 needs χ above the oracle's noise norm w.h.p.), with ψ̂ the planned
  effective noise of one averaged O1 answer, eq. 3: ψ̂² = G²/(m b₁) + (2σG/b₁)² d/m (the
  sampling term bounded by the clip). The paper's experiments' χ = 0.01 is ``chi: 0.01``;
  the trigger is the literal 3χ of Algorithm 1;
* when the data run out inside an escape episode, the output is x̃ (the episode's anchor:
  Theorem 1's output, the escape not shown) and ``termination`` says ``data (escape)``;
* ``escape_noise`` (the T10 ablation, off by default): [29]'s extra escape noise, a
  data-free N(0, (escape_noise·2σG/b₁)² I) added to the first estimate of every escape
  round (1 = the O1 noise's own std, the baseline's default);
* R (the escape radius) is not given in the paper's experiments: default √κ (notes §6);
  ``radius_scale`` s sets R = s·Γ·η·χ, Theorem 1's scaling (eq. 5: R = Γη·4sχ/ι^2.5, so R
  is proportional to the distance Γ steps of size ηχ cover), which keeps R reachable by the
  noise as σ, d and m change.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import NonNegativeFloat, PositiveFloat

from algorithms.ada_dp_spider import SpiderAlgorithm, SpiderOracle, SpiderParams
from algorithms.base import NoExtras, Plan, PrivacyTarget, Rate, Step, Trace, register_algorithm
from algorithms.privacy.ledger import Mechanism
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import Count, params


@params
class GaussPSGDParams(SpiderParams):
    chi: PositiveFloat | None = None
    chi_scale: PositiveFloat = 1.0
    escape_steps: Count = 10
    escape_rounds: Count = 3
    radius: PositiveFloat | None = None
    radius_scale: PositiveFloat | None = None
    escape_noise: NonNegativeFloat = 0.0


def o1_noise_std(params: SpiderParams, sigma: float) -> float:
    """Per-coordinate std of one client's O1 privacy noise: 2σG/b₁."""
    return sigma * 2 * params.grad_clip / params.batch_refresh


def effective_noise(params: SpiderParams, sigma: float, d: int, m: int) -> float:
    """ψ̂ of eq. 3 for one averaged O1 answer over m clients: √(G²/(m b₁) + r² d),
    r = 2σG/(b₁√m) (the sampling term bounded by the clip G)."""
    sampling = params.grad_clip ** 2 / (m * params.batch_refresh)
    return math.sqrt(sampling + o1_noise_std(params, sigma) ** 2 * d / m)


def threshold(chi: float | None, chi_scale: float, psi: float) -> float:
    """χ: the given value, else Theorem 1's scaling χ = chi_scale·ψ̂."""
    return chi if chi is not None else chi_scale * psi


@dataclass
class EscapeStats:
    """Counters of the escape logic (reported in the run's diagnostics)."""

    triggers: int = 0
    rounds: int = 0
    escapes: int = 0
    escape_steps: int = 0
    tests: int = 0
    termination: str = "budget"
    returned_at: int | None = None


def radius(p: GaussPSGDParams, chi: float) -> float:
    """R: ``radius``, else ``radius_scale``·Γ·η·χ, else √κ."""
    if p.radius is not None:
        return float(p.radius)
    if p.radius_scale is not None:
        return p.radius_scale * p.escape_steps * p.lr * chi
    return math.sqrt(p.kappa)


@register_algorithm
class GaussPSGD(SpiderAlgorithm[GaussPSGDParams, NoExtras]):
    """Perturbed SGD whose DP noise escapes saddles; outputs the point where it could not."""

    name = "gauss_psgd"
    paper = "tao2025"
    reference = ("Tao, Zhang, Yu, Cheng, Dressler, Wang 2025, Second-Order Convergence in "
                 "Private Stochastic Non-Convex Optimization, Alg. 1 (+ Algs. 2-3)")
    rate = Rate(objective="population", stationarity="second", privacy_exponent=2 / 5,
                sample_exponent=1 / 3,
                source="Theorem 2 (Theorem 3 distributed), tao2025",
                note="α = Õ(n^{-1/3} + (√d/(nε))^{2/5}), output directly (no selection); "
                     "with m clients of n records each: Õ((mn)^{-1/3} + (√d/(√m·nε))^{2/5})")
    #: ``triggers``: the escape test ‖ĝ‖ ≤ 3χ fired (step 5)
    premises = (*SpiderAlgorithm.premises, "triggers")
    # small runs (conformance, audit) use the paper's fixed χ: under the noise-scaled χ the
    # first test may open an escape episode that a few hundred records cannot feed
    small: ClassVar[dict[str, Any]] = {"chi": 0.01}

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> NoExtras:
        return NoExtras()

    def chi(self, plan: Plan[NoExtras], oracle: Oracle) -> float:
        """χ of this run (``chi``, else chi_scale·ψ̂ from the plan's σ)."""
        p = self.params
        return threshold(p.chi, p.chi_scale,
                         effective_noise(p, plan.sigma, oracle.d, len(oracle.clients)))

    def iterate(self, oracle: Oracle, plan: Plan[NoExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        p = self.params
        spider = self.start(trace, SpiderOracle(p, oracle, plan, mech))
        chi = self.chi(plan, oracle)
        trace.facts.update(chi=chi, sigma=plan.sigma, d=oracle.d, m=len(oracle.clients))
        stats = trace.facts["escape"] = EscapeStats()
        extra = p.escape_noise * o1_noise_std(p, plan.sigma)
        x, x_prev, t = oracle.x0, None, 0

        def stop(why: str, anchor: Any) -> None:
            """T3: the data (or the step budget) ran out; inside an episode the output is
            its anchor x̃, the last point that passed the small-gradient test."""
            if anchor is not None:
                stats.termination, trace.output = f"{why} (escape)", anchor
            else:
                stats.termination = why

        while t < plan.steps:
            g = spider.estimate(x, x_prev)  # step 4
            if g is None:
                return stop("data", None)
            stats.tests += 1
            if oracle.norm(g) <= 3 * chi:  # step 5
                stats.triggers += 1
                anchor, escaped = x, False  # step 6
                for _ in range(p.escape_rounds):  # step 7
                    stats.rounds += 1
                    x, x_prev = anchor, None  # step 8 (T1; T4: the next call refreshes)
                    for tau in range(p.escape_steps):  # step 9
                        g = spider.estimate(x, x_prev)  # step 10
                        if g is None:
                            return stop("data", anchor)
                        if extra and tau == 0:
                            g = mech.perturb(g, extra)  # T10 ablation: [29]'s extra noise
                        x_prev, x = x, x - p.lr * g  # step 11
                        spider.moved(x, x_prev)
                        t += 1
                        stats.escape_steps += 1
                        yield Step(t, x, epoch=spider.progress)
                        if t >= plan.steps:  # the budget T ends inside the episode
                            return stop("steps", anchor)
                        if oracle.norm(x - anchor) >= radius(p, chi):  # step 12
                            escaped = True
                            break
                    if escaped:
                        break
                if not escaped:  # steps 19-20 (T2: output x̃)
                    stats.termination, stats.returned_at = "sosp", t
                    trace.output = anchor
                    return
                stats.escapes += 1
            else:
                x_prev, x = x, x - p.lr * g  # step 22
                spider.moved(x, x_prev)
                t += 1
                yield Step(t, x, epoch=spider.progress)
        stats.termination = "steps"

    def premise_data(self, trace: Trace) -> dict[str, Any]:
        stats = trace.facts.get("escape", EscapeStats())
        return {**super().premise_data(trace), "triggers": stats.triggers}

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        """x̃ is the output when the escape test failed or the data ran out inside an
        escape episode, else the current iterate."""
        facts = trace.facts
        s: EscapeStats = facts.get("escape", EscapeStats())
        chi = facts.get("chi", math.nan)
        out = {**self.spider_diagnostics(trace.state), "triggers": s.triggers,
               "escape_rounds": s.rounds, "escapes": s.escapes, "escape_steps": s.escape_steps,
               "termination": s.termination, "returned_at": s.returned_at,
               "trigger_tests": s.tests,
               "trigger_rate": s.triggers / s.tests if s.tests else None,
               "radius": radius(self.params, chi)}
        if trace.state is not None:
            sigma, d, m = facts["sigma"], facts["d"], facts["m"]
            out.update(d=d, chi=chi, trigger_threshold=3 * chi,
                       psi=effective_noise(self.params, sigma, d, m),
                       noise_norm_o1=o1_noise_std(self.params, sigma) * math.sqrt(d / m))
        return out
