"""Private selection of an approximate SOSP among iterates (avdiukhin2024 §3.4; notes §2.3).

The paper says only: sample random iterates, test each with the full-gradient norm and
λ_min of the Hessian, privately via AboveThreshold with Lap(C/(nε)) and Lap(L/(nε)) noise.
We implement the notes' rigorous reconstruction:

    choose candidate times t_1..t_m ~ Uniform{0..T−1} before training (data-independent)
    q_j(D) = max(‖∇F(x_{t_j})‖ / α, −λ_min(∇²F(x_{t_j})) / √(ρα))
    Δ_q = max(2C / (nα), 2L / (n√(ρα)))                 # replace-one sensitivity
    T̂ = 3/2 + Lap(2Δ_q/ε_s); return the first x_{t_j} with q_j + Lap(4Δ_q/ε_s) < T̂

which is ε_s-DP whatever m is (AboveThreshold); the run's total is ε + ε_s by basic
composition, as the paper composes. A point that passes with the noise inside its
stated error has ‖∇F‖ < 2α and λ_min > −2√(ρα), i.e. it is a 4α-SOSP.

Resolutions and caveats (listed on the report page):

* thresholds (3/2), the number of candidates m and the combined single query are ours;
  the paper gives per-quantity noise without constants;
* the gradient-norm sensitivity 2C/n needs ‖∇f_i‖ ≤ C at the candidate (the same event
  as noisy SGD's privacy); the eigenvalue sensitivity 2L/n (Weyl) needs every f_i to be
  L-smooth, which the paper does not assume;
* λ_min is computed by an estimator (power method, the paper's choice, or Lanczos); the
  privacy argument, like the paper's, treats it as exact;
* if no candidate passes, the last iterate is output and the run says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
from pydantic import PositiveFloat

from algorithms.lambda_min import lambda_min_lanczos, lambda_min_power
from algorithms.privacy.ledger import Mechanism, Release, Sampling
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.params import Count, params

THRESHOLD = 1.5


@params
class SelectionParams:
    """Parameters of the private SOSP selection (off unless ``select``)."""

    select: bool = False
    alpha: PositiveFloat = 0.1
    rho: float | None = None
    smoothness: float | None = None
    select_epsilon: PositiveFloat = 0.1
    candidates: Count = 10
    estimator: Literal["power", "lanczos"] = "power"
    power_iters: Count = 100


def _constant(given: float | None, data: DataInfo, key: str, param: str) -> float:
    if given is not None:
        return float(given)
    if key in data.constants:
        return float(data.constants[key])
    raise ValueError(f"SOSP selection needs params.{param} (this problem publishes no {key})")


@dataclass(frozen=True)
class SelectionConstants:
    """What the selection resolves at plan time: ρ, L and the query sensitivity Δ_q."""

    rho: float
    smoothness: float
    query_sensitivity: float


def selection_constants(p: SelectionParams, data: DataInfo, bound: float,
                        n: int | None = None) -> SelectionConstants:
    """ρ, L and the query sensitivity Δ_q (replace-one) over ``n`` records (default: all),
    resolved at plan time."""
    rho = _constant(p.rho, data, "rho", "rho")
    smooth = _constant(p.smoothness, data, "L", "smoothness")
    size = n if n is not None else data.n
    sensitivity = max(2 * bound / (size * p.alpha),
                      2 * smooth / (size * math.sqrt(rho * p.alpha)))
    return SelectionConstants(rho, smooth, sensitivity)


def stored_constants(constants: SelectionConstants | None) -> dict[str, float]:
    """The constants as a plan stores them (flat ``plan.extra`` keys; none without
    selection)."""
    return vars(constants).copy() if constants is not None else {}


def selection_release(p: SelectionParams, party: int = 0) -> tuple[Sampling, list[Release]]:
    """The ledger round the selection records (one ε_s-DP AboveThreshold on ``party``)."""
    return Sampling(party=party), [Release("pure", "sosp_selection", epsilon=p.select_epsilon)]


def candidate_times(p: SelectionParams, steps: int, rng: np.random.Generator) -> np.ndarray:
    """t_1..t_m ~ Uniform{0..T−1}, drawn before training from public randomness."""
    return rng.integers(0, steps, size=p.candidates)


class Reservoir:
    """A uniform sample of at most ``size`` items of a stream of unknown length (Algorithm R,
    public randomness ``rng``): candidates only from the steps that ran."""

    def __init__(self, size: int, rng: np.random.Generator) -> None:
        self.size, self.rng, self.seen = size, rng, 0
        self.kept: dict[int, Any] = {}  # stream position -> item

    def offer(self, item: Any) -> None:
        if self.seen < self.size:
            self.kept[self.seen] = item
        else:
            slot = int(self.rng.integers(0, self.seen + 1))
            if slot < self.size:
                oldest = sorted(self.kept)[slot]
                del self.kept[oldest]
                self.kept[self.seen] = item
        self.seen += 1

    def items(self) -> list[Any]:
        """The kept items in stream order."""
        return [self.kept[k] for k in sorted(self.kept)]


def sosp_query(oracle: Oracle, p: SelectionParams, constants: SelectionConstants,
               rng: np.random.Generator, idx: np.ndarray | None = None,
               clip: float | None = None) -> Callable[[Any], float]:
    """q(x) = max(‖∇F(x)‖/α, −λ_min(∇²F(x))/√(ρα)) on the records ``idx`` (all if None);
    with ``clip``, ∇F is the mean of the per-sample gradients clipped at C = ``clip`` (so
    the norm's sensitivity 2C/n holds for any record, not only for one with ‖∇f_i‖ ≤ C)."""
    scale = math.sqrt(constants.rho * p.alpha)

    def gradient(x: Any) -> Any:
        if clip is None:
            return oracle.grad(x, idx)
        rows = np.arange(oracle.n) if idx is None else idx
        return oracle.clipped_grad_sum(x, rows, clip) / len(rows)

    def query(x: Any) -> float:
        grad_norm = oracle.norm(gradient(x))
        if p.estimator == "power":
            lam = lambda_min_power(oracle, x, constants.smoothness, p.power_iters, rng, idx)
        else:
            lam = lambda_min_lanczos(oracle, x, rng=rng, idx=idx)
        return max(grad_norm / p.alpha, -lam / scale)

    return query


def select(oracle: Oracle, candidates: list[Any], p: SelectionParams,
           constants: SelectionConstants, mech: Mechanism, idx: np.ndarray | None = None,
           party: int = 0, clip: float | None = None) -> int | None:
    """Index of the privately selected candidate (None: no candidate passed), tested on the
    records ``idx`` (all if None), which form the privacy group ``party``; ``clip``: the
    gradient-norm query's per-sample clip (:func:`sosp_query`)."""
    query = sosp_query(oracle, p, constants, mech.public, idx, clip)
    return mech.above_threshold((partial(query, x) for x in candidates),
                                threshold=THRESHOLD,
                                sensitivity=constants.query_sensitivity,
                                epsilon=p.select_epsilon, tag="sosp_selection", party=party)
