"""Declared statistical rules: how the numbers of one setting decide a claim.

Every rule answers with a :class:`Decision`: the estimate, its 95 % interval and two
one-sided p-values, ``p_held`` (the test whose rejection supports the claim) and
``p_contradicted`` (the test whose rejection contradicts it), each at level
:data:`ALPHA` = 0.025, so that *held* and *contradicted* are each a one-sided test and the
95 % interval lies wholly on one side exactly when one of them rejects. Where neither
rejects the rule is *inconclusive* and says how many runs a test of this effect at this
spread would need (power 0.8).

Rules (a claim names one):

* :class:`AtLeast` / :class:`AtMost` — the mean of a per-run number (or, with a reference
  sample, the difference of two means, Welch; or the mean of per-seed differences where
  :meth:`Sample.paired` pairs the runs) against a threshold; one-sided by nature;
* :class:`NonInferior` — "no worse" / "does not improve" / "comparable": the difference is
  not beyond a margin declared with its source before the data (a bound shifted by the
  margin, so it is one-sided like the others);
* :class:`Fraction` — the share of runs where an event happened against a declared
  probability (exact binomial tests, Clopper–Pearson interval);
* :class:`Always` — a deterministic property of every run (no statistics: one failing run
  contradicts it);
* :class:`Monotone` — a mean that must not fall (or rise) along an axis, up to a declared
  tolerance: held when every adjacent pair is shown within the tolerance (intersection-union,
  no correction needed), contradicted when some pair is shown to move the wrong way after a
  Holm correction over the pairs;
* :class:`Trend` — "improves with ε / m / n": the OLS slope of the per-run value on
  log₂ of the axis (change per doubling), one-sided against a declared margin (0: it rises);
  one test over every axis value, so it has the power the adjacent pairs lack;
* :class:`SlopeAtMost` — an upper bound O(x^a): the fitted log-log slope may be shallower than
  a (held when the interval lies below a) and is contradicted only when it is steeper.

Multiple settings of one claim are combined by :func:`holm` (``reports/claims.py``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, SupportsFloat, cast

import numpy as np
import numpy.typing as npt
from scipy import stats

ALPHA = 0.025  # each one-sided test; together a 95 % two-sided interval
POWER = 0.8
DECISIONS = ("held", "contradicted", "inconclusive")


def as_float(value: object) -> float:
    """A pandas cell or group key (typed as any scalar) as the float it holds."""
    return float(cast(SupportsFloat, value))


@dataclass(frozen=True)
class Sample:
    """The numbers a rule decides on: one value per run (``values``), optionally a
    ``reference`` sample (a difference of means is tested), or ``groups`` of values along
    an axis (monotonicity, slopes: axis value → values)."""

    values: np.ndarray = field(default_factory=lambda: np.array([]))
    reference: np.ndarray | None = None
    groups: Mapping[float, np.ndarray] = field(default_factory=dict)
    unit: str = ""  # how the estimate reads, e.g. "pp", "%"
    note: str = ""  # what else the evidence should say (e.g. the worst value seen)
    paired: bool = False  # ``values`` are per-seed differences treatment − reference

    @classmethod
    def of(cls, values: npt.ArrayLike, reference: npt.ArrayLike | None = None, unit: str = "",
           note: str = "") -> Sample:
        ref = None if reference is None else np.asarray(reference, dtype=float)
        return cls(np.asarray(values, dtype=float), ref, unit=unit, note=note)

    @classmethod
    def pairs(cls, treatment: Mapping[Any, float], reference: Mapping[Any, float],
              unit: str = "", note: str = "") -> Sample:
        """The per-key differences treatment − reference over the keys both have (runs
        paired by seed: same data subset and initialisation), tested as one sample."""
        keys = [k for k in treatment if k in reference]
        diffs = np.array([float(treatment[k]) - float(reference[k]) for k in keys], dtype=float)
        return cls(diffs, unit=unit, note=note, paired=True)

    @classmethod
    def along(cls, groups: Mapping[float, Sequence[float] | np.ndarray] | Mapping[
            int, Sequence[float] | np.ndarray], unit: str = "") -> Sample:
        return cls(groups={float(k): np.asarray(v, dtype=float) for k, v in groups.items()},
                   unit=unit)

    @property
    def size(self) -> int:
        if self.groups:
            return int(sum(len(v) for v in self.groups.values()))
        return len(self.values)


@dataclass(frozen=True)
class Decision:
    """What a rule found in one setting."""

    verdict: str  # held | contradicted | inconclusive (before any correction)
    estimate: float
    interval: tuple[float, float]
    p_held: float
    p_contradicted: float
    runs: int
    needed: int | None  # runs a test at this effect and spread would need (inconclusive)
    text: str

    def with_verdict(self, verdict: str) -> Decision:
        return replace(self, verdict=verdict)


def noted(decision: Decision, sample: Sample) -> Decision:
    """``decision`` with the sample's note appended to its text."""
    return replace(decision, text=f"{decision.text}; {sample.note}") if sample.note \
        else decision


class Rule(Protocol):
    """A declared decision rule; ``describe`` is printed on the page beside the claim."""

    def describe(self) -> str: ...

    def decide(self, sample: Sample) -> Decision: ...


def _verdict(p_held: float, p_contradicted: float) -> str:
    if p_held < ALPHA:
        return "held"
    if p_contradicted < ALPHA:
        return "contradicted"
    return "inconclusive"


def _fmt(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.3g}"


def _needed(effect: float, sd: float, runs: int) -> int | None:
    """Runs (per group) a one-sided t-test at ALPHA needs to detect ``effect`` with POWER
    when one run's spread is ``sd`` (at least one more than ``runs``)."""
    if not math.isfinite(sd) or sd <= 0 or effect == 0 or not math.isfinite(effect):
        return None
    z = stats.norm.ppf(1 - ALPHA) + stats.norm.ppf(POWER)
    m = max(math.ceil((z * sd / abs(effect)) ** 2), runs + 1, 2)
    while m < 10**7 and (stats.t.ppf(1 - ALPHA, m - 1) + stats.t.ppf(POWER, m - 1)) * sd \
            / math.sqrt(m) > abs(effect):
        m = int(m * 1.1) + 1
    return m


def mean_difference(values: np.ndarray, reference: np.ndarray | None
                    ) -> tuple[float, float, float, int]:
    """(estimate, standard error, degrees of freedom, runs) of mean(values) [− mean(ref)];
    Welch's degrees of freedom for a difference. The s.e. is nan with fewer than two runs."""
    a = values[np.isfinite(values)]
    est, runs = (float(a.mean()) if len(a) else math.nan), len(a)
    var_a = float(a.var(ddof=1)) / len(a) if len(a) > 1 else math.nan
    if reference is None:
        return est, math.sqrt(var_a), len(a) - 1.0, runs
    b = reference[np.isfinite(reference)]
    var_b = float(b.var(ddof=1)) / len(b) if len(b) > 1 else math.nan
    est = est - float(b.mean()) if len(b) else math.nan
    se2 = var_a + var_b
    if not math.isfinite(se2):
        return est, math.nan, math.nan, runs + len(b)
    df = se2**2 / ((var_a**2 / (len(a) - 1) if var_a else 0.0)
                   + (var_b**2 / (len(b) - 1) if var_b else 0.0)) if se2 > 0 else math.inf
    return est, math.sqrt(se2), df, runs + len(b)


def _t_test(est: float, se: float, df: float, threshold: float, above: bool
            ) -> tuple[float, float, tuple[float, float]]:
    """(p_held, p_contradicted, 95 % interval) for the claim mean > threshold (``above``)
    or mean < threshold. A zero s.e. (identical runs) decides by the point."""
    if math.isnan(est) or math.isnan(se):
        return 1.0, 1.0, (math.nan, math.nan)
    if se == 0:  # identical runs: the point decides
        if est == threshold:
            return 1.0, 1.0, (est, est)
        claim_side = (est > threshold) == above
        return (0.0, 1.0, (est, est)) if claim_side else (1.0, 0.0, (est, est))
    t = (est - threshold) / se
    upper, lower = float(stats.t.sf(t, df)), float(stats.t.cdf(t, df))
    q = float(stats.t.ppf(1 - ALPHA, df)) * se
    p_held, p_contra = (upper, lower) if above else (lower, upper)
    return p_held, p_contra, (est - q, est + q)


@dataclass(frozen=True)
class _Bound:
    threshold: float
    above: bool
    what: str = "mean"

    def describe(self) -> str:
        sign = ">" if self.above else "<"
        return (f"{self.what} {sign} {self.threshold:g}: one-sided t-test at 2.5 % each way "
                "(held if the 95 % CI lies wholly on the claim's side, contradicted if wholly "
                "on the other; a reference sample makes it a Welch difference of means)")

    def decide(self, sample: Sample) -> Decision:
        est, se, df, runs = mean_difference(sample.values, sample.reference)
        p_held, p_contra, ci = _t_test(est, se, df, self.threshold, self.above)
        verdict = _verdict(p_held, p_contra)
        sd = se * math.sqrt(max(len(sample.values), 1)) if math.isfinite(se) else math.nan
        needed = None if verdict != "inconclusive" else _needed(est - self.threshold, sd, runs)
        what = ("paired difference (per seed)" if sample.paired else "difference of means"
                if sample.reference is not None else self.what)
        unit = f" {sample.unit}" if sample.unit else ""
        text = (f"{what} {_fmt(est)}{unit}, 95 % CI [{_fmt(ci[0])}, {_fmt(ci[1])}] vs "
                f"{'>' if self.above else '<'} {self.threshold:g}{unit} ({runs} "
                f"{'seed pairs' if sample.paired else 'runs'}"
                f"{'' if math.isfinite(se) else '; too few for an interval'})")
        return Decision(verdict, est, ci, p_held, p_contra, runs, needed, text)


class AtLeast(_Bound):
    """The claim: the mean (difference) exceeds ``threshold``."""

    def __init__(self, threshold: float, what: str = "mean") -> None:
        super().__init__(threshold, True, what)


class AtMost(_Bound):
    """The claim: the mean (difference) is below ``threshold``."""

    def __init__(self, threshold: float, what: str = "mean") -> None:
        super().__init__(threshold, False, what)


@dataclass(frozen=True)
class NonInferior:
    """The claim: the treatment is no worse than the reference by more than ``margin`` —
    the mean (paired or Welch) difference treatment − reference is above −margin
    (``higher_is_better``) or below +margin. The margin is part of the declaration, with
    its ``source`` (the paper's text, or a constant declared a priori), never chosen from
    the data. Held when the 95 % CI lies wholly on the claim's side of the margin,
    contradicted when it lies wholly beyond it (worse by more than the margin)."""

    margin: float
    source: str
    higher_is_better: bool = True
    what: str = "difference"

    @property
    def _bound(self) -> _Bound:
        sign = -1.0 if self.higher_is_better else 1.0
        return _Bound(sign * self.margin, self.higher_is_better, self.what)

    def describe(self) -> str:
        side = "≥ −" if self.higher_is_better else "≤ +"
        return (f"non-inferiority: {self.what} {side}{self.margin:g} (margin from "
                f"{self.source}): one-sided t-test at 2.5 % each way (held if the 95 % CI "
                "lies wholly within the margin's side, contradicted if wholly beyond it)")

    def decide(self, sample: Sample) -> Decision:
        decision = self._bound.decide(sample)
        return replace(decision, text=f"{decision.text} (non-inferiority margin "
                                      f"{self.margin:g}: {self.source})")


def trend_slope(groups: Mapping[float, np.ndarray]) -> tuple[float, float, float, int]:
    """(slope, s.e., degrees of freedom, runs) of OLS value on log₂(axis) over every finite
    value at a positive axis value: the change per doubling of the axis."""
    xs = [math.log2(x) for x, v in groups.items() for value in v
          if x > 0 and np.isfinite(value)]
    ys = [float(value) for x, v in groups.items() for value in v
          if x > 0 and np.isfinite(value)]
    return ols_slope(xs, ys)


def ols_slope(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float, int]:
    """(slope, s.e., degrees of freedom, points) of OLS ys on xs (nan with fewer than three
    points or one distinct x)."""
    n = len(xs)
    if n < 3 or len(set(xs)) < 2:
        return math.nan, math.nan, math.nan, n
    fit = stats.linregress(xs, ys)
    return float(fit.slope), float(fit.stderr), n - 2.0, n


@dataclass(frozen=True)
class Trend:
    """The claim: the mean rises (``increasing``; else falls) with the axis — the OLS slope
    of the per-run value on log₂(axis), per doubling, is above −``margin`` (below
    +``margin`` when falling). ``margin`` 0 tests "improves"; a positive margin, declared
    with its ``source``, tests "does not get worse by more than the margin per doubling".
    Held if the slope's 95 % CI lies wholly on the claim's side, contradicted if wholly on
    the other."""

    increasing: bool = True
    axis: str = "ε"
    margin: float = 0.0
    source: str = ""

    def describe(self) -> str:
        way = "rises" if self.increasing else "falls"
        bound = (f"slope {'>' if self.increasing else '<'} "
                 f"{(-self.margin if self.increasing else self.margin) + 0.0:g}")
        return (f"trend: the mean {way} with log₂ {self.axis} ({bound} per doubling"
                f"{f', margin from {self.source}' if self.source else ''}): one-sided t-test "
                "on the OLS slope over every run at 2.5 % each way")

    def decide(self, sample: Sample) -> Decision:
        slope, se, df, runs = trend_slope(sample.groups)
        threshold = (-self.margin if self.increasing else self.margin) + 0.0  # no −0
        p_held, p_contra, ci = _t_test(slope, se, df, threshold, self.increasing)
        verdict = _verdict(p_held, p_contra)
        needed = None
        if verdict == "inconclusive" and math.isfinite(se):
            factor = _needed(slope - threshold, se, 1)
            needed = None if factor is None else runs * factor
        unit = f" {sample.unit}" if sample.unit else ""
        means = ", ".join(f"{self.axis}={k:g}: {_fmt(float(np.nanmean(sample.groups[k])))}"
                          for k in sorted(sample.groups))
        text = (f"{means}; slope {_fmt(slope)}{unit} per doubling of {self.axis}, 95 % CI "
                f"[{_fmt(ci[0])}, {_fmt(ci[1])}] vs {'>' if self.increasing else '<'} "
                f"{threshold:g} ({runs} runs)")
        return Decision(verdict, slope, ci, p_held, p_contra, runs, needed, text)


@dataclass(frozen=True)
class Fraction:
    """The claim: an event happens with probability above ``at_least`` (or, with
    ``below=True``, below it). Exact binomial tests; Clopper–Pearson 95 % interval."""

    at_least: float
    below: bool = False
    event: str = "event"
    unit: str = "runs"  # what is counted (runs, escape rounds, trials)

    def describe(self) -> str:
        sign = "<" if self.below else ">"
        return (f"P({self.event}) {sign} {self.at_least:g}: exact one-sided binomial tests at "
                "2.5 % each way, Clopper–Pearson 95 % interval")

    def decide(self, sample: Sample) -> Decision:
        hits = sample.values[np.isfinite(sample.values)] > 0.5
        n, k = len(hits), int(hits.sum())
        if n == 0:
            return Decision("inconclusive", math.nan, (math.nan, math.nan), 1.0, 1.0, 0, None,
                            "no runs")
        p0 = self.at_least
        p_above = float(stats.binom.sf(k - 1, n, p0))  # P(X >= k | p0)
        p_below = float(stats.binom.cdf(k, n, p0))  # P(X <= k | p0)
        p_held, p_contra = (p_below, p_above) if self.below else (p_above, p_below)
        lo = 0.0 if k == 0 else float(stats.beta.ppf(ALPHA, k, n - k + 1))
        hi = 1.0 if k == n else float(stats.beta.ppf(1 - ALPHA, k + 1, n - k))
        verdict = _verdict(p_held, p_contra)
        needed = self._needed(k / n, n) if verdict == "inconclusive" else None
        text = (f"{self.event} in {k}/{n} {self.unit} ({100 * k / n:.0f} %), 95 % CI "
                f"[{100 * lo:.0f} %, {100 * hi:.0f} %] vs {'<' if self.below else '>'} "
                f"{100 * p0:.3g} %")
        return Decision(verdict, k / n, (lo, hi), p_held, p_contra, n, needed, text)

    def _needed(self, p: float, n: int) -> int | None:
        """Runs at which a share ``p`` (as observed) would decide the test."""
        p0 = self.at_least
        if p in (0.0, 1.0):  # every run alike: the exact test decides at p0^m < ALPHA
            base = (1 - p0) if (p == 0.0) else p0
            return max(math.ceil(math.log(ALPHA) / math.log(base)), n + 1) \
                if 0 < base < 1 else None
        if p == p0:
            return None
        z = stats.norm.ppf(1 - ALPHA) * math.sqrt(p0 * (1 - p0)) + stats.norm.ppf(POWER) * \
            math.sqrt(p * (1 - p))
        return max(math.ceil((z / (p - p0)) ** 2), n + 1)


@dataclass(frozen=True)
class Always:
    """A deterministic property (an identity of the algorithm, not a random outcome): held
    if it holds in every run, contradicted by any run where it fails."""

    property: str = "property"

    def describe(self) -> str:
        return f"{self.property} in every run (deterministic: one failing run contradicts)"

    def decide(self, sample: Sample) -> Decision:
        ok = sample.values > 0.5
        n, k = len(ok), int(ok.sum())
        if n == 0:
            return Decision("inconclusive", math.nan, (math.nan, math.nan), 1.0, 1.0, 0, None,
                            "no runs")
        held = k == n
        return Decision("held" if held else "contradicted", k / n, (k / n, k / n),
                        0.0 if held else 1.0, 1.0 if held else 0.0, n, None,
                        f"{self.property} in {k}/{n} runs")


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise ``alpha``."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] >= alpha / (len(p_values) - rank):
            break
        rejected[i] = True
    return rejected


@dataclass(frozen=True)
class Monotone:
    """The claim: the mean does not fall (``increasing``) or rise along the axis by more
    than ``tolerance`` between adjacent values. Held when every adjacent pair is shown to
    move by less than the tolerance the wrong way (each one-sided test at 2.5 %; an
    intersection-union test needs no correction); contradicted when some pair is shown to
    move the wrong way at all, after a Holm correction over the pairs."""

    tolerance: float
    increasing: bool = True
    axis: str = "ε"

    def describe(self) -> str:
        way = "increasing" if self.increasing else "decreasing"
        return (f"weakly {way} in {self.axis} up to {self.tolerance:g}: per adjacent pair, "
                "held if the wrong-way change is shown < tolerance (all pairs), contradicted "
                "if a wrong-way change > 0 is shown (Holm over pairs)")

    def decide(self, sample: Sample) -> Decision:
        keys = sorted(sample.groups)
        sign = 1.0 if self.increasing else -1.0
        pairs = []
        for a, b in itertools.pairwise(keys):
            # the wrong-way change: a fall of the mean from a to b (for increasing)
            est, se, df, runs = mean_difference(sample.groups[a], sample.groups[b])
            drop = sign * est
            p_held, _, _ = _t_test(drop, se, df, self.tolerance, above=False)
            _, p_contra, ci = _t_test(drop, se, df, 0.0, above=False)
            pairs.append((a, b, drop, se, p_held, p_contra, ci, runs))
        if not pairs:
            return Decision("inconclusive", math.nan, (math.nan, math.nan), 1.0, 1.0,
                            sample.size, None, "fewer than two axis values")
        rejected = holm([p[5] for p in pairs])
        held = all(p[4] < ALPHA for p in pairs)
        verdict = "contradicted" if any(rejected) else "held" if held else "inconclusive"
        worst = max(pairs, key=lambda p: p[2] if math.isfinite(p[2]) else -math.inf)
        needed = None
        if verdict == "inconclusive":
            counts = [_needed(self.tolerance - p[2], p[3] * math.sqrt(p[7] / 2), p[7] // 2)
                      for p in pairs if p[4] >= ALPHA]
            needed = max((c for c in counts if c is not None), default=None)
        means = ", ".join(f"{self.axis}={k:g}: {_fmt(float(np.nanmean(sample.groups[k])))}"
                          f"{sample.unit and ' ' + sample.unit}" for k in keys)
        text = (f"{means}; largest wrong-way change {_fmt(worst[2])} between {worst[0]:g} and "
                f"{worst[1]:g}, 95 % CI [{_fmt(worst[6][0])}, {_fmt(worst[6][1])}] "
                f"(tolerance {self.tolerance:g}; {sum(rejected)} pair(s) significant after Holm)")
        # Holm rejects some pair iff the smallest p is below α/m: that is the family's p
        p_family = min(1.0, len(pairs) * min(p[5] for p in pairs))
        return Decision(verdict, worst[2], worst[6], max(p[4] for p in pairs), p_family,
                        sample.size, needed, text)


def log_slope(groups: Mapping[float, np.ndarray]) -> tuple[float, float, float, int]:
    """(slope, s.e., degrees of freedom, points) of OLS log(value) on log(axis) over every
    positive, finite value."""
    xs, ys = [], []
    for x, values in groups.items():
        for v in values:
            if x > 0 and np.isfinite(v) and v > 0:
                xs.append(math.log(x))
                ys.append(math.log(float(v)))
    return ols_slope(xs, ys)


@dataclass(frozen=True)
class SlopeAtMost:
    """An upper bound metric = O(axis^exponent): the fitted log-log slope must not be
    steeper than ``exponent`` (a shallower slope, or a bound that does not bind, is
    consistent with it). Held if the 95 % CI of the slope lies below ``exponent`` (+
    ``slack``), contradicted if it lies above; t-interval of the OLS slope on logs.

    For a bound that *decreases* in the axis (n, ε), pass ``axis_grows_bound=False``: the
    slope is negated, so 'steeper' always means 'the metric grows faster than the bound
    along the direction where the bound grows'.

    Why one-sided this way: the bounds are sums (a sampling or optimisation term plus the
    privacy term (√d/(nε))^a), and the log-log slope of a sum is at most that of its
    steepest term, so a shallower slope is what a floor from the other terms gives; a
    steeper slope over the tested range means the metric outgrows the bound where the bound
    grows (small nε, large d), inside the theorem's range. A shallower slope with the metric
    above the theorem's own accuracy is a level violation, which a claim checks with a
    premise or an ``AtMost`` on metric/α, not with the slope."""

    exponent: float
    axis: str = "n"
    axis_grows_bound: bool = True
    slack: float = 0.0

    def describe(self) -> str:
        sign = "" if self.axis_grows_bound else "−"
        return (f"upper bound ∝ {self.axis}^{sign}{self.exponent:.3g}: one-sided on the "
                f"log-log slope (a shallower slope is consistent; held if the 95 % CI of "
                f"{'' if self.axis_grows_bound else '−'}slope lies below {self.exponent:.3g}"
                f"{f' + {self.slack:g}' if self.slack else ''}, contradicted if it lies above)")

    def decide(self, sample: Sample) -> Decision:
        slope, se, df, points = log_slope(sample.groups)
        if not self.axis_grows_bound:
            slope = -slope
        limit = self.exponent + self.slack
        p_held, p_contra, ci = _t_test(slope, se, df, limit, above=False)
        verdict = _verdict(p_held, p_contra)
        needed = None
        if verdict == "inconclusive" and math.isfinite(se):
            factor = _needed(slope - limit, se, 1)
            needed = None if factor is None else points * factor
        text = (f"{'' if self.axis_grows_bound else '−'}slope in {self.axis} {_fmt(slope)}, "
                f"95 % CI [{_fmt(ci[0])}, {_fmt(ci[1])}] vs bound exponent ≤ {limit:.3g} "
                f"({points} runs)")
        return Decision(verdict, slope, ci, p_held, p_contra, points, needed, text)
