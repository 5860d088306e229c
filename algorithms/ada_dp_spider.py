"""``ada_dp_spider`` (tao2025, Algorithms 2 and 3): the adaptive DP-SPIDER gradient oracle.

    drift ← κ                                                    # line 1: O1 first
    each call, at x_{t−1} (previous point x_{t−2}):
      if drift ≥ κ:                                              # O1, refresh (lines 3–7)
          B fresh, |B| = b₁;  ĝ_t = ∇f̂_B(x_{t−1}) + N(0, σ₁²I);  drift ← 0
      else:                                                      # O2, recursion (lines 8–11)
          B fresh, |B| = b₂;  ĝ_t = ĝ_{t−1} + [∇f̂_B(x_{t−1}) − ∇f̂_B(x_{t−2})] + N(0, σ₂²I)
      drift ← drift + ‖x_t − x_{t−1}‖²                           # line 12 (eq. 9)

Distributed (Algorithm 3): every client j keeps its own ĝ_j and answers from its own data;
the server averages, ĝ_t = (1/m) Σ_j ĝ_{j,t}, and holds the one drift, so all clients switch
between O1 and O2 in lockstep. One client is the centralised Algorithm 2.

Privacy: every sample is used once per pass (a ``disjoint`` pool per client), so within a
pass a record pays for one query (parallel composition, Lemma 17):
σ = Δ·√(c·ln(1.25/δ)/4)/ε with Δ = 2G/b₁ for O1 and 2M‖x_{t−1} − x_{t−2}‖/b₂ for O2
(replace-one). ``calibration: paper`` is the paper's own formula, Def. 8 per query at the
full (ε, δ) with c₁ = c₂ = c = 8 (notes §4): exact for one pass (Theorems 2-3); over several
passes it is applied as written and the accountants report what it then spends.
``advanced`` is Def. 8 per pass composed across passes by advanced composition (our
resolution for several passes); ``pld`` calibrates the same multiplier with the accountant
(each pass one unsampled Gaussian per record).

Deviations and resolved ambiguities (notes §3.2, §4, §7):

* sensitivities need per-sample clipping, which the paper does not mention (its Assumption 1
  does not hold for networks): O1 clips each per-sample gradient at G (``grad_clip``), O2
  clips each per-sample difference at M‖x_{t−1} − x_{t−2}‖ (``diff_clip`` = M);
* several passes (``epochs`` > 1; the paper trains for several epochs without saying how
  the budget is split): ``paper`` keeps the paper's per-query formula (valid for one pass),
  ``advanced`` splits the budget over passes, ``pld`` composes passes exactly;
* ``records`` (Option A of notes §6): each client trains on that many of its records, a
  public random subset, so that n per client stays fixed as m grows;
* ``period`` (the standard SPIDER of notes §2, an ablation): refresh every ``period`` calls
  instead of when the drift reaches κ;
* the O2 noise scale uses the actual parameter difference ‖x_{t−1} − x_{t−2}‖ (public), and
  a zero difference releases nothing (the query is exactly zero);
* a call that finds a client's data budget spent returns None: the run stops there;
  ``steps`` caps the number of oracle calls too (None: until the data run out).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np
from pydantic import PositiveFloat

from algorithms.base import (
    Algorithm,
    Extras,
    NoExtras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    register_algorithm,
)
from algorithms.distributed import clipped_client_means
from algorithms.premises import NormTracker, clip_keys
from algorithms.privacy.ledger import Ledger, Mechanism, Release, Sampling
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import Count, params


@params
class SpiderParams:
    lr: PositiveFloat = 0.01
    batch_refresh: Count = 256
    batch_diff: Count = 64
    kappa: PositiveFloat = 0.1
    grad_clip: PositiveFloat = 1.0
    diff_clip: PositiveFloat = 10.0
    epochs: Count = 1
    steps: Count | None = None  # None: until the data run out
    c: PositiveFloat = 8.0
    records: Count | None = None
    period: Count | None = None


def clients(data: DataInfo) -> list[np.ndarray]:
    return list(data.clients) or [np.arange(data.n)]


def records(params: SpiderParams, client: np.ndarray, public: np.random.Generator
            ) -> np.ndarray:
    """The records a client trains on: all, or ``records`` of them (a public random
    subset; Option A)."""
    if params.records is None or params.records >= len(client):
        return client
    return np.sort(public.permutation(client)[:params.records])


class SpiderBudget:
    """Sizes, steps and the paper's calibration, shared by every SPIDER algorithm."""

    def __init__(self, params: SpiderParams) -> None:
        self.p = params

    def max_steps(self, sizes: list[int]) -> int:
        """The most oracle calls: ``steps``, or what the data allow (every call an O2 of b₂
        fresh samples), whichever is smaller."""
        smallest = min(sizes)
        if max(self.p.batch_refresh, self.p.batch_diff) > smallest:
            raise ValueError(f"batch sizes must not exceed the smallest client's {smallest} "
                             "training samples")
        allowed = self.p.epochs * (smallest // self.p.batch_diff)
        return allowed if self.p.steps is None else min(self.p.steps, allowed)

    def ledger(self, sizes: list[int], sigma: float) -> Ledger:
        """Per client and pass, the worst query a record can be in (parallel composition)."""
        ledger = Ledger()
        for party, size in enumerate(sizes):
            for epoch in range(self.p.epochs):
                ledger.record(Sampling("disjoint", size, size=self.p.batch_refresh,
                                       rate=self.p.batch_refresh / size, party=party,
                                       epoch=epoch),
                              [Release("gaussian", "O1", sigma=sigma,
                                       sensitivity=2 * self.p.grad_clip / self.p.batch_refresh)])
        return ledger

    def paper_sigma(self, target: PrivacyTarget) -> float:
        """The paper's multiplier (Alg. 2 line 5 with Def. 8's c): √(c·ln(1.25/δ)/4)/ε,
        every query at the full (ε, δ) whatever the number of passes."""
        return math.sqrt(self.p.c * math.log(1.25 / target.delta) / 4) / target.epsilon

    def paper_epsilon(self, sigma: float, delta: float) -> float:
        """The paper's claim for σ (Theorems 2-3: one Gaussian per record, Def. 8)."""
        return math.sqrt(self.p.c * math.log(1.25 / delta) / 4) / sigma


class SpiderOracle:
    """Algorithms 2/3 over the clients of ``oracle``: :meth:`estimate` is one oracle call."""

    def __init__(self, params: SpiderParams, oracle: Oracle, plan: Plan[Any], mech: Mechanism,
                 data: list[np.ndarray] | None = None) -> None:
        self.p, self.oracle, self.plan, self.mech = params, oracle, plan, mech
        self.pools = [mech.pool(records(params, c, mech.public), epochs=params.epochs, party=j)
                      for j, c in enumerate(data if data is not None else oracle.clients)]
        self.g: Any = None
        self.drift = params.kappa  # line 1: the first call is an O1
        self.since = 0  # calls since the last refresh (``period``)
        self.refreshes = 0
        self.differences = 0
        self.drift_triggers = 0  # refreshes the drift test (drift ≥ κ) asked for
        self.exhausted = False  # a call found a client's data spent
        #: per-sample norms against G (O1) and, divided by the move, against M (O2)
        self.norms = {"": NormTracker(oracle.backend, params.grad_clip),
                      "diff": NormTracker(oracle.backend, params.diff_clip)}

    @property
    def progress(self) -> float:
        """Passes over the data used so far (the slowest client)."""
        return min(pool.progress for pool in self.pools)

    def estimate(self, x: Any, x_prev: Any, refresh: bool = False) -> Any | None:
        """ĝ_t at x = x_{t−1} (x_prev = x_{t−2}); None once a client's data are spent."""
        forced = refresh or self.g is None or x_prev is None
        due = self.since >= self.p.period if self.p.period else self.drift >= self.p.kappa
        self.since += 1
        if forced or due:
            if not forced:
                self.drift_triggers += 1
            ok = self._refresh(x)
        else:
            ok = self._difference(x, x_prev)
        return self.oracle.xp.mean(self.g, axis=0) if ok else None

    def moved(self, x_new: Any, x_old: Any) -> None:
        """drift ← drift + ‖x_t − x_{t−1}‖² (line 12)."""
        self.drift += self.oracle.norm(x_new - x_old) ** 2

    def _refresh(self, x: Any) -> bool:
        p, oracle = self.p, self.oracle
        batches = [pool.take(p.batch_refresh) for pool in self.pools]  # line 4
        if any(b is None for b in batches):
            self.exhausted = True
            return False
        taken = [b for b in batches if b is not None]
        means = clipped_client_means(oracle, taken, x, None, p.grad_clip, self.norms[""])
        self.g = self.mech.gaussian(means, sensitivity=2 * p.grad_clip / p.batch_refresh,
                                    sigma=self.plan.sigma, tag="O1", batch=taken)  # lines 5-6
        self.drift, self.since = 0.0, 1  # line 7
        self.refreshes += 1
        return True

    def _difference(self, x: Any, x_prev: Any) -> bool:
        p, oracle = self.p, self.oracle
        step = self.oracle.norm(x - x_prev)
        if step == 0.0:
            return True  # the difference query is exactly zero: nothing to release
        batches = [pool.take(p.batch_diff) for pool in self.pools]  # line 9
        if any(b is None for b in batches):
            self.exhausted = True
            return False
        taken = [b for b in batches if b is not None]
        bound = p.diff_clip * step
        means = clipped_client_means(oracle, taken, x, x_prev, bound, self.norms["diff"],
                                     scale=step)
        self.g = self.g + self.mech.gaussian(means, sensitivity=2 * bound / p.batch_diff,
                                             sigma=self.plan.sigma, tag="O2",
                                             batch=taken)  # lines 10-11
        self.differences += 1
        return True


SP = TypeVar("SP", bound=SpiderParams)
E = TypeVar("E", bound=Extras)


class SpiderAlgorithm(Algorithm[SP, E]):
    """Plan hooks shared by the algorithms built on :class:`SpiderOracle`, whose per-run
    :class:`SpiderOracle` is the trace's ``state`` (its norm trackers the trace's clips)."""

    data_limited = True
    #: O1's clip at G is the main clip, O2's at M‖Δx‖ the ``diff`` clip
    premises = ("steps_taken", "data_exhausted_at", *clip_keys(), *clip_keys("diff"))

    def budget(self) -> SpiderBudget:
        return SpiderBudget(self.params)

    def train_sizes(self, data: DataInfo) -> list[int]:
        """How many records each client trains on (all of its data, or ``records``)."""
        cap = self.params.records
        return [len(c) if cap is None else min(cap, len(c)) for c in clients(data)]

    def steps(self, data: DataInfo) -> int:
        return self.budget().max_steps(self.train_sizes(data))

    def batch_size(self, data: DataInfo) -> float:
        return float(self.params.batch_diff)

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        return self.budget().ledger(self.train_sizes(data), sigma)

    def paper_sigma(self, data: DataInfo, target: PrivacyTarget) -> float:
        return self.budget().paper_sigma(target)

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        return self.budget().paper_epsilon(sigma, delta)

    @staticmethod
    def start(trace: Trace, spider: SpiderOracle) -> SpiderOracle:
        """Keep the run's SPIDER estimator (and its norm trackers) in ``trace``."""
        trace.state = spider
        trace.clips.update(spider.norms)
        return spider

    def premise_data(self, trace: Trace) -> dict[str, Any]:
        """Steps taken, where the data ran out and the norms of O1 and O2."""
        spider = trace.state
        exhausted = spider is not None and spider.exhausted
        return {**super().premise_data(trace),
                "data_exhausted_at": trace.steps_taken if exhausted else None}

    @staticmethod
    def spider_diagnostics(spider: SpiderOracle | None) -> dict[str, Any]:
        if spider is None:
            return {}
        return {"refreshes": spider.refreshes, "differences": spider.differences,
                "epochs_used": spider.progress}


@register_algorithm
class AdaDPSpider(SpiderAlgorithm[SpiderParams, NoExtras]):
    """Ada-DP-SPIDER as a first-order method: x_t = x_{t−1} − η ĝ_t until the data run out."""

    name = "ada_dp_spider"
    paper = "tao2025"
    reference = ("Tao, Zhang, Yu, Cheng, Dressler, Wang 2025, Second-Order Convergence in "
                 "Private Stochastic Non-Convex Optimization, Algs. 2-3")
    rate = Rate(objective="population", stationarity="first", privacy_exponent=2 / 5,
                sample_exponent=1 / 3,
                source="Theorem 2 (Theorem 3 distributed), tao2025; xu2026 Table 1",
                note="Theorem 2 bounds Gauss-PSGD run with this oracle: α = Õ(n^{-1/3} + "
                     "(√d/(nε))^{2/5}); run as plain descent without the escape loop only its "
                     "first-order part is claimed here; m clients: (mn)^{-1/3}, √m·nε")
    #: its only test is the drift test: ``triggers`` counts the refreshes it asked for
    premises = (*SpiderAlgorithm.premises, "triggers")

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> NoExtras:
        return NoExtras()

    def iterate(self, oracle: Oracle, plan: Plan[NoExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        spider = self.start(trace, SpiderOracle(self.params, oracle, plan, mech))
        x, x_prev = oracle.x0, None
        for t in range(plan.steps):
            g = spider.estimate(x, x_prev)
            if g is None:
                return
            x_prev, x = x, x - self.params.lr * g
            spider.moved(x, x_prev)
            yield Step(t + 1, x, epoch=spider.progress)

    def premise_data(self, trace: Trace) -> dict[str, Any]:
        spider = trace.state
        return {**super().premise_data(trace),
                "triggers": spider.drift_triggers if spider is not None else None}

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        return self.spider_diagnostics(trace.state)
