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
* R (the escape radius) is not given in the paper's experiments: default √κ (notes §6);
  the trigger is the literal 3χ of Algorithm 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from algorithms.ada_dp_spider import SpiderAlgorithm, SpiderOracle, SpiderParams
from algorithms.base import Plan, Rate, Step, register_algorithm
from algorithms.privacy.ledger import Mechanism
from problems.oracles import Oracle


@dataclass(frozen=True)
class GaussPSGDParams(SpiderParams):
    chi: float = 0.01
    escape_steps: int = 10
    escape_rounds: int = 3
    radius: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.chi > 0 or min(self.escape_steps, self.escape_rounds) < 1:
            raise ValueError("chi must be > 0; escape_steps and escape_rounds >= 1")
        if self.radius is not None and not self.radius > 0:
            raise ValueError(f"radius must be > 0, got {self.radius}")


class _Escape:
    """Counters of the escape logic (reported in the run's diagnostics)."""

    def __init__(self) -> None:
        self.triggers = self.rounds = self.escapes = 0
        self.escape_steps = 0
        self.termination = "budget"
        self.returned_at: int | None = None


@register_algorithm
class GaussPSGD(SpiderAlgorithm):
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
    Params: ClassVar[type] = GaussPSGDParams
    #: ``triggers``: the escape test ‖ĝ‖ ≤ 3χ fired (step 5)
    premises: ClassVar[tuple[str, ...]] = (*SpiderAlgorithm.premises, "triggers")

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.spider: SpiderOracle | None = None
        self.stats = _Escape()
        self._output: Any = None

    @property
    def radius(self) -> float:
        p = self.params
        return p.radius if p.radius is not None else math.sqrt(p.kappa)

    def iterate(self, oracle: Oracle, plan: Plan, mech: Mechanism) -> Iterator[Step]:
        p, xp = self.params, oracle.xp
        self.spider = spider = SpiderOracle(p, oracle, plan, mech)
        stats = self.stats
        x, x_prev, t = oracle.x0, None, 0
        self._x = x

        def norm(v: Any) -> float:
            return float(oracle.backend.to_numpy(xp.linalg.vector_norm(v)))

        while t < plan.steps:
            g = spider.estimate(x, x_prev)  # step 4
            if g is None:
                return
            if norm(g) <= 3 * p.chi:  # step 5
                stats.triggers += 1
                anchor, escaped = x, False  # step 6
                for _ in range(p.escape_rounds):  # step 7
                    stats.rounds += 1
                    x, x_prev = anchor, None  # step 8 (T1; T4: the next call refreshes)
                    for _ in range(p.escape_steps):  # step 9
                        g = spider.estimate(x, x_prev)  # step 10
                        if g is None:
                            return
                        x_prev, x = x, x - p.lr * g  # step 11
                        spider.moved(x, x_prev)
                        t += 1
                        stats.escape_steps += 1
                        self._x = x
                        yield Step(t, x, epoch=spider.progress)
                        if norm(x - anchor) >= self.radius:  # step 12
                            escaped = True
                            break
                    if escaped:
                        break
                if not escaped:  # steps 19-20 (T2: output x̃)
                    stats.termination, stats.returned_at = "sosp", t
                    self._output = anchor
                    return
                stats.escapes += 1
            else:
                x_prev, x = x, x - p.lr * g  # step 22
                spider.moved(x, x_prev)
                t += 1
                self._x = x
                yield Step(t, x, epoch=spider.progress)
        self.stats.termination = "steps"

    def output(self) -> Any:
        """x̃ when the escape test failed (an approximate SOSP), else the current iterate."""
        return self._output if self._output is not None else super().output()

    def premise_data(self) -> dict[str, Any]:
        return {**super().premise_data(), "triggers": self.stats.triggers}

    def diagnostics(self) -> dict[str, Any]:
        s = self.stats
        out = {**self.spider_diagnostics(self.spider), "triggers": s.triggers,
               "escape_rounds": s.rounds, "escapes": s.escapes, "escape_steps": s.escape_steps,
               "termination": s.termination, "returned_at": s.returned_at,
               "trigger_threshold": 3 * self.params.chi, "radius": self.radius}
        if self.spider is not None and self.spider.plan is not None:
            out["noise_norm_o1"] = self.noise_norm(self.spider)
        return out

    def noise_norm(self, spider: SpiderOracle) -> float:
        """The typical norm of the averaged O1 privacy noise: σΔ√(d/m)."""
        p, oracle = self.params, spider.oracle
        std = spider.plan.sigma * 2 * p.grad_clip / p.batch_refresh
        return std * math.sqrt(oracle.d / len(oracle.clients))
