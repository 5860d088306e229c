"""Scaling analysis: fit power laws to runs and compare the exponents with a declared rate.

:func:`fit_exponents` regresses log(response) on log(predictor) for several predictors at once
(ordinary least squares with an intercept, one row per run), with percentile intervals from a
nonparametric bootstrap over the runs. :func:`fit_slope` is the one-predictor case the paper
pages use, :func:`compare` checks declared exponents against the fitted intervals, and
:func:`declared_exponents` turns the exponent a of a bound (√d/(nε))^a into the exponents of
n, d and ε it predicts while the privacy term dominates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ScalingFit:
    """log(response) = intercept + Σ_p exponents[p]·log(p), fitted over ``points`` runs.

    ``predictors`` are the predictors fitted, ``dropped`` those left out because they were
    constant in the data used; ``rows_dropped`` counts the runs left out for a non-finite or
    non-positive value. ``intervals`` are bootstrap percentile intervals at ``level``
    ((nan, nan) when no resample could be fitted).
    """

    response: str
    predictors: tuple[str, ...]
    exponents: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    intercept: float
    r2: float
    points: int
    dropped: tuple[str, ...] = ()
    rows_dropped: int = 0
    level: float = 0.95


@dataclass(frozen=True)
class ExponentCheck:
    """A fitted exponent, its interval and the declared value; ``inside``: lo ≤ declared ≤ hi."""

    predictor: str
    fitted: float
    lo: float
    hi: float
    declared: float
    inside: bool


def _least_squares(design: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, int]:
    """OLS coefficients and the rank of ``design``."""
    coef, _, rank, _ = np.linalg.lstsq(design, target, rcond=None)
    return coef, int(rank)


def fit_exponents(frame: pd.DataFrame, response: str, predictors: Sequence[str], *,
                  draws: int = 2000, seed: int = 0, level: float = 0.95) -> ScalingFit:
    """Fit response ∝ Π_p p^{exponent_p} by OLS on logs over the rows of ``frame``.

    Rows with a non-finite or non-positive response or predictor are dropped, then predictors
    that are constant over the remaining rows. The intervals come from ``draws`` bootstrap
    resamples of the rows (resamples whose design is rank-deficient are skipped); the result
    depends only on the data and ``seed``.
    """
    names = list(dict.fromkeys(predictors))
    missing = [c for c in [response, *names] if c not in frame.columns]
    if missing:
        raise ValueError(f"columns not in the frame: {', '.join(missing)}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")

    values = frame[[response, *names]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    usable = np.all(np.isfinite(values) & (values > 0), axis=1)
    logs = np.log(values[usable])
    y, x_all = logs[:, 0], logs[:, 1:]

    varying = [j for j in range(len(names)) if x_all.shape[0] and np.ptp(x_all[:, j]) > 0]
    fitted = tuple(names[j] for j in varying)
    dropped = tuple(name for j, name in enumerate(names) if j not in varying)
    if not fitted:
        raise ValueError(f"no predictor of {response!r} varies over the usable rows "
                         f"({len(y)} of {len(frame)})")
    x = x_all[:, varying]
    m, k = x.shape
    if m < k + 2:
        raise ValueError(f"{m} usable rows are too few to fit {k} exponents and an intercept")

    design = np.column_stack([np.ones(m), x])
    coef, rank = _least_squares(design, y)
    if rank < k + 1:
        raise ValueError(f"the predictors {', '.join(fitted)} are collinear in the data")
    residual = y - design @ coef
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(residual @ residual) / total if total > 0 else math.nan

    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(draws):
        rows = rng.integers(0, m, m)
        b_coef, b_rank = _least_squares(design[rows], y[rows])
        if b_rank == k + 1:
            boot.append(b_coef[1:])
    tail = 100.0 * (1.0 - level) / 2.0
    if boot:
        lo, hi = np.percentile(np.asarray(boot), [tail, 100.0 - tail], axis=0)
        intervals = {p: (float(lo[j]), float(hi[j])) for j, p in enumerate(fitted)}
    else:
        intervals = {p: (math.nan, math.nan) for p in fitted}

    return ScalingFit(response=response, predictors=fitted,
                      exponents={p: float(coef[j + 1]) for j, p in enumerate(fitted)},
                      intervals=intervals, intercept=float(coef[0]), r2=r2, points=m,
                      dropped=dropped, rows_dropped=int(len(frame) - m), level=level)


def fit_slope(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *,
              draws: int = 2000, seed: int = 0, level: float = 0.95
              ) -> tuple[float, float, float]:
    """(slope, lo, hi): the log-log slope of y on x with its bootstrap interval at ``level``."""
    x_arr, y_arr = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x_arr.shape != y_arr.shape or x_arr.ndim != 1:
        raise ValueError(f"x and y must be 1-d of one length, got {x_arr.shape} and "
                         f"{y_arr.shape}")
    fit = fit_exponents(pd.DataFrame({"x": x_arr, "y": y_arr}), "y", ["x"], draws=draws,
                        seed=seed, level=level)
    lo, hi = fit.intervals["x"]
    return fit.exponents["x"], lo, hi


def compare(fit: ScalingFit, declared: Mapping[str, float]) -> list[ExponentCheck]:
    """One check per predictor both fitted and declared, in the fit's order."""
    checks = []
    for p in fit.predictors:
        if p not in declared:
            continue
        lo, hi = fit.intervals[p]
        value = float(declared[p])
        checks.append(ExponentCheck(predictor=p, fitted=fit.exponents[p], lo=lo, hi=hi,
                                    declared=value, inside=bool(lo <= value <= hi)))
    return checks


def declared_exponents(privacy_exponent: float, *, n: str = "n", d: str = "d",
                       epsilon: str = "epsilon", eps_bar: str = "eps_bar"
                       ) -> dict[str, float]:
    """Exponents of n, d, ε and ε̄ = √d/(nε) predicted by a bound (√d/(nε))^a while the
    privacy term dominates: −a, a/2, −a and a (keys named by the arguments)."""
    a = float(privacy_exponent)
    return {n: -a, d: a / 2.0, epsilon: -a, eps_bar: a}
