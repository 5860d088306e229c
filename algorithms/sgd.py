"""``sgd``: plain minibatch SGD, the non-private reference of every paper's figures.

x_{t+1} = x_t − η · avg_{i∈B_t} ∇f_i(x_t). Batches are drawn like the private methods'
(Poisson with rate B/n, or fixed size B without replacement) so the only difference from
them is privacy. The ledger records each step as a non-private use of the data (ε = ∞).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

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
from algorithms.privacy.ledger import Batch, Mechanism
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import Count, params


@params
class SGDParams:
    lr: PositiveFloat = 0.1
    steps: Count = 500
    batch_size: Count = 64
    sampling: Literal["poisson", "fixed"] = "poisson"


def minibatch_size(p: SGDParams, data: DataInfo) -> float:
    """B, which must not exceed n."""
    if p.batch_size > data.n:
        raise ValueError(f"batch_size {p.batch_size} exceeds n = {data.n}")
    return float(p.batch_size)


def draw_minibatch(p: SGDParams, mech: Mechanism, n: int) -> Batch:
    """Draw B_t: Poisson with q = B/n, or B records without replacement."""
    return mech.sample(n, scheme=p.sampling, rate=p.batch_size / n, size=p.batch_size)


@register_algorithm
class SGD(Algorithm[SGDParams, NoExtras]):
    """Minibatch SGD without noise (non-private baseline)."""

    name = "sgd"
    paper = "baseline"
    reference = "Robbins & Monro 1951; the SGD curve of avdiukhin2024 Figs. 1-3"
    private = False
    rate = Rate(objective="population", stationarity="first", privacy_exponent=None,
                sample_exponent=1 / 4,
                source="Arjevani et al. 2023 (Õ(σ²/α⁴) stochastic gradients), as cited in "
                       "avdiukhin2024 §1 and its notes §4 (with Jin et al. 2021)",
                note="non-private, so no privacy term; no paper proves a rate for this "
                     "baseline: the best-known rate the notes cite is Õ(σ²/α⁴) oracle calls "
                     "to an α-stationary point, i.e. α ∝ n^{-1/4} after one pass over n "
                     "samples (on the empirical risk with repeated passes: no n floor)")

    def steps(self, data: DataInfo) -> int:
        return int(self.params.steps)

    def batch_size(self, data: DataInfo) -> float:
        return minibatch_size(self.params, data)

    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> NoExtras:
        return NoExtras()

    def iterate(self, oracle: Oracle, plan: Plan[NoExtras], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        x = oracle.x0
        for t in range(plan.steps):
            batch = draw_minibatch(self.params, mech, oracle.n)
            if len(batch):
                g = mech.exact(oracle.grad(x, batch.indices), tag="grad", batch=batch)
                x = x - self.params.lr * g
            yield Step(t + 1, x)
