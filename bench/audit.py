"""Empirical privacy audits: the statistics (anchors dp_tooling.md §4, §6.4 L1).

Given attack scores of runs *with* the canary (``in``) and *without* it (``out``), a
threshold picked on one half of the runs and Clopper–Pearson bounds on the other half give
an upper bound FPR_ub on the false-positive rate and a lower bound TPR_lb on the true-
positive rate, each at confidence 1 − α/2. An (ε, δ) claim allows at most
TPR_max(FPR) = min_ε min(1, e^ε FPR + δ(ε), 1 − e^{−ε}(1 − δ(ε) − FPR)) over the
accountant's privacy profile δ(ε); the audit **fails** when TPR_lb > TPR_max(FPR_ub). For a
μ-GDP claim (compositions of unsampled Gaussians) the equivalent rule is μ_lb > μ with
μ_lb = Φ⁻¹(TPR_lb) − Φ⁻¹(FPR_ub). ε_lb = max(ln((TPR_lb − δ)/FPR_ub),
ln((1 − δ − FPR_ub)/(1 − TPR_lb))) is reported for reading, never gated on. A correct
implementation fails with probability at most α; with fixed seeds the outcome is
deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from algorithms import ALGORITHMS, Algorithm, PrivacyTarget
from algorithms.privacy.accounting import privacy_profile
from algorithms.privacy.ledger import Ledger
from bench.canary import (
    ExactReport,
    audit_params,
    audit_problem,
    canary_data,
    canary_scores,
    exact_checks,
    make_audit,
)
from problems import Instance

TradeOff = Callable[[float], float]
THRESHOLDS = 201  # candidate thresholds: quantiles of the pooled first-half scores


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """The two-sided (1 − α) Clopper–Pearson interval of a binomial proportion (each side
    α/2; use one side alone for a one-sided bound at α/2)."""
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got "
                         f"{successes}/{trials}")
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes,
                                                         trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha / 2, successes + 1,
                                                              trials - successes))
    return lo, hi


def gdp_trade_off(mu: float) -> TradeOff:
    """TPR_max(FPR) = Φ(Φ⁻¹(FPR) + μ) of μ-GDP (Dong, Roth, Su 2022)."""
    return lambda fpr: float(stats.norm.cdf(stats.norm.ppf(fpr) + mu))


def profile_trade_off(epsilons: Sequence[float], deltas: Sequence[float]) -> TradeOff:
    """TPR_max(FPR) from a privacy profile δ(ε) on a grid (a valid, conservative curve)."""
    eps, dlt = np.asarray(epsilons, dtype=float), np.asarray(deltas, dtype=float)

    def tpr_max(fpr: float) -> float:
        bound = np.minimum(np.exp(eps) * fpr + dlt, 1 - np.exp(-eps) * (1 - dlt - fpr))
        return float(min(1.0, bound.min()))

    return tpr_max


def ledger_trade_off(ledger: Ledger, epsilons: Sequence[float] | None = None) -> TradeOff:
    """The trade-off curve a ledger claims, from the PLD accountant's privacy profile δ(ε)
    (the worst party; :func:`~algorithms.privacy.accounting.privacy_profile`)."""
    grid = list(epsilons) if epsilons is not None else list(np.linspace(0.0, 20.0, 401))
    return profile_trade_off(grid, privacy_profile(ledger, grid))


@dataclass(frozen=True)
class AuditResult:
    """The outcome of one audit (see the module docstring)."""

    runs: int
    threshold: float
    fpr_ub: float
    tpr_lb: float
    tpr_max: float
    mu_lb: float
    eps_lb: float
    alpha: float

    @property
    def passed(self) -> bool:
        """False when the measured point beats the claimed trade-off curve."""
        return self.tpr_lb <= self.tpr_max


def mu_lower_bound(fpr_ub: float, tpr_lb: float) -> float:
    """μ_lb = Φ⁻¹(TPR_lb) − Φ⁻¹(FPR_ub) (−inf when either bound is degenerate)."""
    if tpr_lb <= 0.0 or fpr_ub >= 1.0:
        return -math.inf
    return float(stats.norm.ppf(tpr_lb) - stats.norm.ppf(fpr_ub))


def epsilon_lower_bound(fpr_ub: float, tpr_lb: float, delta: float) -> float:
    """ε_lb from the bounds, both ways round (0 when nothing is shown)."""
    values = [0.0]
    if tpr_lb - delta > 0 and fpr_ub > 0:
        values.append(math.log((tpr_lb - delta) / fpr_ub))
    if 1 - delta - fpr_ub > 0 and tpr_lb < 1:
        values.append(math.log((1 - delta - fpr_ub) / (1 - tpr_lb)))
    return max(values)


def _rates(in_scores: np.ndarray, out_scores: np.ndarray, threshold: float
           ) -> tuple[int, int]:
    """(true positives, false positives) of the test score ≥ threshold."""
    return int((in_scores >= threshold).sum()), int((out_scores >= threshold).sum())


def _probit_margin(tpr_lb: float, tpr_max: float) -> float:
    """Φ⁻¹(TPR_lb) − Φ⁻¹(TPR_max): how far a point beats the curve, on the probit scale
    that weighs every FPR level alike (a plain difference favours the saturated ends)."""
    if tpr_max >= 1.0 or tpr_lb <= 0.0:
        return -math.inf
    return float(stats.norm.ppf(tpr_lb) - stats.norm.ppf(tpr_max))


def audit(in_scores: Sequence[float] | np.ndarray, out_scores: Sequence[float] | np.ndarray,
          claimed: TradeOff, *,
          alpha: float = 1e-3, delta: float = 0.0) -> AuditResult:
    """Threshold on the first half of each side, bounds on the second half (module doc)."""
    a, b = np.asarray(in_scores, dtype=float), np.asarray(out_scores, dtype=float)
    if min(len(a), len(b)) < 4:
        raise ValueError("an audit needs at least 4 runs on each side")
    fit_in, test_in = a[: len(a) // 2], a[len(a) // 2:]
    fit_out, test_out = b[: len(b) // 2], b[len(b) // 2:]

    def bounds(scores_in: np.ndarray, scores_out: np.ndarray, t: float) -> tuple[float, float]:
        tp, fp = _rates(scores_in, scores_out, t)
        return (clopper_pearson(fp, len(scores_out), alpha)[1],
                clopper_pearson(tp, len(scores_in), alpha)[0])

    candidates = np.unique(np.quantile(np.concatenate([fit_in, fit_out]),
                                       np.linspace(0.0, 1.0, THRESHOLDS)))
    margins = []
    for t in candidates:
        fpr_ub, tpr_lb = bounds(fit_in, fit_out, t)
        margins.append(_probit_margin(tpr_lb, claimed(fpr_ub)))
    threshold = float(candidates[int(np.argmax(margins))])  # first of ties if all -inf
    fpr_ub, tpr_lb = bounds(test_in, test_out, threshold)
    return AuditResult(runs=len(a) + len(b), threshold=threshold, fpr_ub=fpr_ub,
                       tpr_lb=tpr_lb, tpr_max=claimed(fpr_ub),
                       mu_lb=mu_lower_bound(fpr_ub, tpr_lb),
                       eps_lb=epsilon_lower_bound(fpr_ub, tpr_lb, delta), alpha=alpha)


# -- one algorithm's full audit ------------------------------------------------------------
DEFAULT_RUNS = 1000
DEFAULT_EPSILON = 2.0
DEFAULT_DELTA = 1e-5


@dataclass
class AlgorithmAudit:
    """L0 and L1 for one algorithm on one problem, with the ε figures of its plan."""

    algorithm: str
    paper: str
    problem: str
    target: dict[str, Any]
    sigma: float
    calibration: str
    eps_claimed: dict[str, float | None]
    eps_paper: float | None
    paper_calibration: dict[str, Any] | None
    exact: ExactReport
    canary: AuditResult

    @property
    def passed(self) -> bool:
        return self.exact.passed and self.canary.passed

    def to_dict(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "paper": self.paper, "problem": self.problem,
                "target": self.target, "sigma": self.sigma, "calibration": self.calibration,
                "eps_claimed": self.eps_claimed, "eps_paper": self.eps_paper,
                "paper_calibration": self.paper_calibration, "exact": self.exact.to_dict(),
                "canary": {**asdict(self.canary), "passed": self.canary.passed},
                "passed": self.passed}


def paper_calibration(algorithm: Algorithm, instance: Instance, epsilon: float,
                      delta: float) -> dict[str, Any] | None:
    """Does the paper's own σ formula, asked for ``epsilon``, spend at most ``epsilon``
    (PLD of the run's ledger)? None where the paper gives no formula."""
    try:
        plan = algorithm.plan(canary_data(instance),
                              PrivacyTarget(epsilon=epsilon, delta=delta, calibration="paper"))
    except (NotImplementedError, ValueError):
        return None
    spent = plan.eps.headline
    return {"target": epsilon, "sigma": plan.sigma, "eps_pld": plan.eps.pld,
            "eps_rdp": plan.eps.rdp, "meets": spent is not None and spent <= epsilon * 1.001}


def audit_algorithm(name: str, problem: str | None = None, *, runs: int = DEFAULT_RUNS,
                    epsilon: float = DEFAULT_EPSILON, delta: float = DEFAULT_DELTA,
                    alpha: float = 1e-3, exact_runs: int = 20, seed: int = 0,
                    algorithm: Algorithm | None = None) -> AlgorithmAudit:
    """Audit algorithm ``name`` (or the given instance of it, e.g. a mutant) with ``runs``
    canary runs per side, at σ calibrated for (``epsilon``, ``delta``)."""
    alg = algorithm if algorithm is not None else ALGORITHMS[name](audit_params(name))
    instance = audit_problem(name, problem)
    target = PrivacyTarget(epsilon=epsilon, delta=delta, calibration="pld")
    try:
        setup = make_audit(alg, instance, target)
    except ValueError as exc:
        if "no event" not in str(exc):
            raise
        target = PrivacyTarget(epsilon=epsilon, delta=delta, calibration="rdp")
        setup = make_audit(alg, instance, target)
    exact = exact_checks(setup, runs=exact_runs, seed=seed)
    in_scores, out_scores = canary_scores(setup, exact.directions, runs, seed=seed + 10**6)
    claimed = ledger_trade_off(setup.plan.ledger)
    result = audit(in_scores, out_scores, claimed, alpha=alpha, delta=delta)
    return AlgorithmAudit(
        algorithm=alg.name, paper=alg.paper, problem=instance.name,
        target={"epsilon": epsilon, "delta": delta}, sigma=setup.plan.sigma,
        calibration=setup.plan.calibration, eps_claimed=setup.plan.eps.to_dict(),
        eps_paper=setup.plan.eps_paper,
        paper_calibration=paper_calibration(alg, instance, epsilon, delta),
        exact=exact, canary=result)
