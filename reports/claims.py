"""A paper's claims as data, and their verdicts.

A paper module (``reports/papers/<paper>/paper.py``) exports one :class:`Paper`: its claims, the
roles its experiment files play (``role:`` in the YAML), the studies ``reproduce`` runs
for it and the builder of its figures and tables. Each :class:`Claim` is declared once:

* its ``kind`` (:data:`KINDS`): ``paper`` — the paper states it, and ``where`` says where
  (section, figure, equation, page); ``implementation`` — our code does what the paper's
  formula says; ``design`` — a check of our own experiment. Only ``paper`` claims count as
  the paper's verdicts (matrix, index, README); the others are checks of the reproduction;
* the statement and the table, figure or theorem it checks;
* for a claim about an artefact that ran on data (a table or figure), the paper's own
  setting (:class:`PaperSetting`): runs on any other problem are a *stand-in*, whose
  verdict is reported as such and never as the published artefact's;
* its runs (:class:`Runs`: suites by role, a filter, the columns that split them into
  settings) and controls (:class:`Control`: runs whose expected outcome the paper predicts,
  reported apart and never counted as settings);
* its premises (:class:`Premise`: checks on the runs that return pass/fail with the
  measured value, e.g. "T = 400 < T_thm = 5.1e5");
* the statistic computed per setting and the declared rule (``reports/rules.py``).

:func:`evaluate` turns a claim and the stored runs into one of the five verdicts:

* ``held`` / ``contradicted`` — the rule decides, in every setting whose premises hold;
  contradictions are counted after a Holm correction over those settings, and *held*
  needs every such setting held (an intersection-union test, which needs no correction);
* ``inconclusive`` — the data cannot decide (the rule says how many runs would);
* ``out of regime`` — no setting has all its premises (the failed ones are named);
* ``not run`` — no runs.

Runs whose metric is non-finite, or whose loss grew past the paper's declared factor, are
``diverged``: flagged, never given a statistic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from bench.columns import undeclared
from reports.results import At, PaperResults, PaperSections
from reports.rules import ALPHA, Decision, Rule, Sample, as_float, holm, noted

VERDICTS = ("held", "contradicted", "inconclusive", "out of regime", "not run")
KINDS = ("paper", "implementation", "design")
IN_PLACE_OF = " in place of "  # a stand-in's text: "<our problems> in place of <the paper's>"
DIVERGENCE_FACTOR = 100.0


# -- which runs ---------------------------------------------------------------------------

Condition = Any  # a value, a list/tuple/set of values, or a predicate on the column


@dataclass(frozen=True)
class Runs:
    """The runs a claim (or control) looks at: those of suites playing one of ``roles``
    (or the rows of a stored ``study``), whose columns satisfy ``where`` (column → value,
    collection of values, or predicate on the column) and whose rows satisfy ``keep`` (a
    predicate on the frame, for a condition on several columns), split into one setting per
    distinct value of the ``by`` columns. ``requires``: roles whose suites the statistic
    reads beside them (e.g. the pilot whose choice it checks): where one has no recorded
    suite (it runs at another scale), there are no runs (not run)."""

    roles: tuple[str, ...] = ()
    where: Mapping[str, Condition] = field(default_factory=dict)
    by: tuple[str, ...] = ()
    study: str = ""
    keep: Callable[[pd.DataFrame], pd.Series] | None = None
    requires: tuple[str, ...] = ()

    def select(self, results: PaperResults) -> pd.DataFrame:
        frame = results.study(self.study) if self.study else results.role_runs(*self.roles)
        if not all(results.role_suites(role) for role in self.requires):
            return frame.iloc[0:0]
        if frame.empty:
            return frame
        mask = pd.Series(True, index=frame.index)
        for column, condition in self.where.items():
            if column not in frame:
                return frame.iloc[0:0]
            mask &= _matches(frame[column], condition)
        if self.keep is not None and mask.any():
            mask &= self.keep(frame[mask]).reindex(frame.index, fill_value=False).astype(bool)
        return frame[mask]

    def settings(self, results: PaperResults) -> list[tuple[str, pd.DataFrame]]:
        frame = self.select(results)
        if frame.empty:
            return []
        keys = [c for c in self.by if c in frame]
        if not keys:
            return [("all runs", frame)]
        out = []
        for values, part in frame.groupby(keys, dropna=False, sort=True):
            values = values if isinstance(values, tuple) else (values,)
            out.append((", ".join(f"{_short(k)} = {_show(v)}" for k, v in zip(
                keys, values, strict=True)), part))
        return out


def _matches(column: pd.Series, condition: Condition) -> pd.Series:
    if callable(condition):
        return pd.Series(condition(column), index=column.index).fillna(False).astype(bool)
    if isinstance(condition, list | tuple | set | frozenset):
        return column.isin(list(condition))
    if isinstance(condition, float) and not isinstance(condition, bool):
        return pd.Series(np.isclose(column.astype(float), condition), index=column.index)
    return column == condition


def _short(column: str) -> str:
    for prefix in ("p_prob_", "p_alg_", "prem_", "diag_", "final_"):
        if column.startswith(prefix):
            return column[len(prefix):]
    return column


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- premises, statistics, controls -------------------------------------------------------

#: a premise's check: (passed, or None where the runs do not record it; the measured value)
Check = Callable[[pd.DataFrame, PaperResults], tuple[bool | None, str]]


def needs(*columns: str) -> Callable[[Check], Check]:
    """A premise check that answers "<columns> not recorded" (None) where a column is
    missing or empty, and runs ``check`` otherwise."""
    def wrap(check: Check) -> Check:
        def guarded(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
            missing = [c for c in columns if c not in runs or runs[c].isna().all()]
            return (None, f"{', '.join(missing)} not recorded") if missing else \
                check(runs, results)
        return guarded
    return wrap


def in_none(what: Callable[[pd.DataFrame], str], hit: Callable[[pd.DataFrame], pd.Series],
            *columns: str) -> Check:
    """A premise check that no run is ``hit``: "<what> in k/n runs" (``columns``: what it
    needs recorded)."""
    @needs(*columns)
    def check(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
        bad = hit(runs)
        return not bool(bad.any()), f"{what(runs)} in {int(bad.sum())}/{len(runs)} runs"
    return check


def span(values: pd.Series, spec: str = ".3g", unit: str = "") -> str:
    """"low–high" of ``values`` in format ``spec`` (the one value where both read alike);
    ValueError where there is none."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        raise ValueError("no runs")
    low, high = format(values.min(), spec), format(values.max(), spec)
    return (low if low == high else f"{low}–{high}") + unit

@dataclass(frozen=True)
class PremiseCheck:
    """A premise in one setting: passed (None: not recorded) and what was measured."""

    name: str
    passed: bool | None
    measured: str
    remedy: str = ""


@dataclass(frozen=True)
class Premise:
    """A condition the claim rests on, checked on a setting's runs: ``check(runs, results)``
    returns (passed or None when the runs do not record it, the measured value as text);
    ``remedy`` says what would bring a failing run into regime."""

    name: str
    check: Callable[[pd.DataFrame, PaperResults], tuple[bool | None, str]]
    remedy: str = ""

    def __call__(self, runs: pd.DataFrame, results: PaperResults) -> PremiseCheck:
        """The check on a setting's runs; one whose runs lack what it reads (a column, a
        value: KeyError, ValueError) is "not recorded", as a regime row is."""
        try:
            passed, measured = self.check(runs, results)
        except (KeyError, ValueError) as exc:
            passed, measured = None, f"not recorded ({type(exc).__name__}: {exc})"
        return PremiseCheck(self.name, passed, measured, self.remedy)


def _bounded(name: str, column: str, bound: str | float, upper: bool, remedy: str,
             what: str) -> Premise:
    """A premise ``column ≤ bound`` (``upper``) or ``≥ bound`` in every run; ``bound`` is
    a number or another column."""
    label = what or _short(column)

    def check(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
        if column not in runs or runs[column].isna().all():
            return None, f"{label} not recorded"
        if isinstance(bound, str) and bound not in runs:
            return None, f"{_short(bound)} not recorded"
        values = runs[column].astype(float)
        limit = (runs[bound] if isinstance(bound, str) else pd.Series(bound, index=runs.index)
                 ).astype(float)
        bad = values > limit if upper else values < limit
        worst = values.max() if upper else values.min()
        shown = limit.max() if upper else limit.min()
        text = (f"{label} {'max' if upper else 'min'} {worst:.3g} vs {'≤' if upper else '≥'} "
                f"{shown:.3g}: {'exceeded' if upper else 'short'} in {int(bad.sum())}/"
                f"{len(runs)} runs")
        return not bool(bad.any()), text

    return Premise(name, check, remedy)


def at_most(name: str, column: str, bound: str | float, remedy: str = "",
            what: str = "") -> Premise:
    """A premise ``column ≤ bound`` in every run (``bound``: a number or another column)."""
    return _bounded(name, column, bound, True, remedy, what)


def at_least(name: str, column: str, bound: str | float, remedy: str = "",
             what: str = "") -> Premise:
    """A premise ``column ≥ bound`` in every run (``bound``: a number or another column)."""
    return _bounded(name, column, bound, False, remedy, what)


def never(name: str, column: str, remedy: str = "", what: str = "") -> Premise:
    """A premise that ``column`` is null/false in every run (e.g. a data cap never hit)."""

    def check(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
        if column not in runs:
            return None, f"{what or _short(column)} not recorded"
        hit = runs[column].notna() & runs[column].astype(object).ne(False)
        if not hit.any():
            return True, f"{what or _short(column)}: never, in {len(runs)} runs"
        first = runs.loc[hit, column].astype(float)
        return False, (f"{what or _short(column)} in {int(hit.sum())}/{len(runs)} runs "
                       f"(earliest at {first.min():g})")

    return Premise(name, check, remedy)


@dataclass(frozen=True)
class Statistic:
    """The numbers of one setting the rule decides on: ``compute(runs, results)`` over the
    setting's finished, non-diverged runs (``results`` gives curves and reference runs)."""

    name: str
    compute: Callable[[pd.DataFrame, PaperResults], Sample]


def per_run(name: str, test: Callable[[pd.DataFrame, PaperResults], pd.Series | None]
            ) -> Statistic:
    """A per-run property as a statistic: 1 for each run where ``test`` holds, else 0 (for
    :class:`reports.rules.Always` and :class:`reports.rules.Fraction`)."""

    def compute(runs: pd.DataFrame, results: PaperResults) -> Sample:
        held = test(runs, results)
        return Sample.of([] if held is None else
                         held.fillna(False).astype(float).to_numpy())

    return Statistic(name, compute)


def final(metric: str, scale: float = 1.0, unit: str = "", at: At = "output") -> Statistic:
    """Each run's ``metric`` (× ``scale``) at its output, or at its last or best evaluated
    iterate (:meth:`PaperResults.at`)."""
    column = f"final_{metric}"

    def compute(runs: pd.DataFrame, results: PaperResults) -> Sample:
        if at == "output" and column not in runs:
            return Sample.of(np.array([]), unit=unit)
        return Sample.of(results.at(runs, metric, at).to_numpy(float) * scale, unit=unit)

    where = "final" if at == "output" else f"{at} iterate's"
    return Statistic(f"{where} {metric.replace('_', ' ')}" + (f" ({unit})" if unit else ""),
                     compute)


def flag(column: str, name: str = "") -> Statistic:
    """A per-run boolean column (missing values count as false)."""

    def compute(runs: pd.DataFrame, _: PaperResults) -> Sample:
        if column not in runs:
            return Sample.of([])
        return Sample.of(runs[column].astype(object).eq(True).to_numpy(float))

    return Statistic(name or _short(column), compute)


def along(metric: str, axis: str, scale: float = 1.0, unit: str = "") -> Statistic:
    """The final ``metric`` grouped by the values of ``axis`` (monotonicity, slopes)."""
    column = f"final_{metric}"

    def compute(runs: pd.DataFrame, _: PaperResults) -> Sample:
        if column not in runs or axis not in runs:
            return Sample.along({})
        return Sample.along({as_float(k): part[column].to_numpy(float) * scale
                             for k, part in runs.groupby(axis)}, unit=unit)

    return Statistic(f"final {metric.replace('_', ' ')} by {_short(axis)}", compute)


def paired_or_welch(treatment: pd.Series, reference: pd.Series, unit: str = "",
                    note: str = "") -> Sample:
    """treatment − reference from two per-run series indexed by seed: paired by seed where
    each side has each seed once and at least two seeds are shared (runs of one seed share
    the data subset and the initialisation), else a Welch difference of means."""
    treatment, reference = treatment.dropna(), reference.dropna()
    shared = treatment.index.intersection(reference.index)
    if treatment.index.is_unique and reference.index.is_unique and len(shared) >= 2:
        return Sample.pairs(treatment.loc[shared].to_dict(), reference.loc[shared].to_dict(),
                            unit=unit, note=note)
    return Sample.of(treatment.to_numpy(float), reference.to_numpy(float), unit=unit,
                     note=note)


def difference(metric: str, treatment: str, reference: str, scale: float = 1.0,
               unit: str = "", by: str = "label") -> Statistic:
    """Final ``metric`` (× ``scale``) of the runs whose ``by`` is ``treatment`` minus those
    whose ``by`` is ``reference``, paired by seed where the runs pair
    (:func:`paired_or_welch`)."""
    column = f"final_{metric}"

    def compute(runs: pd.DataFrame, _: PaperResults) -> Sample:
        if column not in runs or by not in runs:
            return Sample.of([])

        def side(name: str) -> pd.Series:
            part = runs[runs[by] == name]
            return pd.Series(numeric(part, column).to_numpy(float) * scale,
                             index=part.get("seed", part.index))

        return paired_or_welch(side(treatment), side(reference), unit)

    return Statistic(f"final {metric.replace('_', ' ')}, {treatment} − {reference}"
                     + (f" ({unit})" if unit else ""), compute)


@dataclass(frozen=True)
class Control:
    """Runs whose outcome the paper predicts (e.g. noise-free SGD stays at an exact
    saddle): reported apart from the claim's settings, one outcome per setting of
    ``runs.by`` (one in all without); ``rule`` held means 'as expected'."""

    name: str
    runs: Runs
    expect: str
    statistic: Statistic
    rule: Rule


@dataclass(frozen=True)
class PaperSetting:
    """The data and model a published artefact ran on: ``problems`` are our problems that
    are that data and model at the paper's dimension (none yet: every run is a stand-in);
    ``text`` names it as the paper does, e.g. "MNIST, 784-128-10 MLP (d = 101,770)"."""

    text: str
    problems: tuple[str, ...] = ()

    def stand_in(self, runs: pd.DataFrame) -> str:
        """'' when every run is on the paper's setting, else what ran in its place."""
        if "problem" not in runs or runs.empty:
            return ""
        other = runs[~runs["problem"].isin(self.problems)]
        if other.empty:
            return ""
        names = []
        for problem, part in other.groupby("problem"):
            d = numeric(part, "p_prob_d").fillna(numeric(part, "plan_d")).dropna()
            names.append(f"{problem}" + (f" (d = {float(d.max()):,.0f})" if len(d) else ""))
        return f"{', '.join(names)}{IN_PLACE_OF}{self.text}"


@dataclass(frozen=True)
class Claim:
    """A checkable claim, declared once (see the module docstring). ``kind`` and ``where``
    are required (checked by :class:`Paper`); ``headline`` marks one of the paper's main
    claims: it leads the page's bottom line, and when it is out of regime its artefact is
    out of regime too; ``setting`` is the paper's data and model for an artefact's claim."""

    id: str
    statement: str
    checks: str  # the paper's table, figure or theorem
    runs: Runs
    statistic: Statistic
    rule: Rule
    premises: tuple[Premise, ...] = ()
    controls: tuple[Control, ...] = ()
    include_diverged: bool = False  # the statistic itself handles diverged runs
    kind: str = ""  # paper | implementation | design (KINDS)
    where: str = ""  # where the paper states it (section, figure, equation, page)
    headline: bool = False
    setting: PaperSetting | None = None

    def describe(self) -> str:
        return (f"{self.statistic.name}; {self.rule.describe()}; settings by "
                f"{', '.join(_short(b) for b in self.runs.by) or '–'} (Holm over settings)")

    def problems(self) -> list[str]:
        """What is wrong with the declaration itself ([] when it is complete)."""
        out = []
        if self.kind not in KINDS:
            out.append(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.where.strip():
            out.append("no location (where the paper states it, or what of the paper it "
                       "checks)")
        return out


# -- results ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SettingResult:
    setting: str
    verdict: str
    decision: Decision | None
    premises: tuple[PremiseCheck, ...]
    runs: int
    diverged: int
    run_ids: tuple[str, ...]

    @property
    def failed(self) -> tuple[PremiseCheck, ...]:
        return tuple(p for p in self.premises if p.passed is False)

    def evidence(self) -> str:
        parts = [self.decision.text if self.decision else "no finished run"]
        if self.decision and self.decision.needed and self.verdict == "inconclusive":
            parts.append(f"≈{self.decision.needed} runs would decide it")
        if self.diverged:
            parts.append(f"{self.diverged}/{self.runs} runs diverged (excluded)")
        return "; ".join(parts)


@dataclass(frozen=True)
class ControlResult:
    name: str
    expect: str
    outcome: str  # as expected | unexpected | inconclusive | not run
    evidence: str
    run_ids: tuple[str, ...]


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    verdict: str
    settings: tuple[SettingResult, ...]
    controls: tuple[ControlResult, ...]
    stand_in: str = ""  # what ran in place of the paper's setting ('' where it ran)

    @property
    def id(self) -> str:
        return self.claim.id

    @property
    def counts(self) -> bool:
        """Whether the verdict is one of the paper's (a ``paper`` claim)."""
        return self.claim.kind == "paper"

    def evidence(self) -> str:
        """One line: the deciding settings' evidence (or why none decides)."""
        ran = [s for s in self.settings if s.verdict != "not run"]
        if not ran:
            return "no runs"
        in_regime = [s for s in ran if s.verdict != "out of regime"]
        counts = ", ".join(f"{n} {v}" for v in VERDICTS
                           if (n := sum(s.verdict == v for s in ran)))
        shown = in_regime or ran
        head = shown[0] if len(shown) == 1 else next(
            (s for s in shown if s.verdict == self.verdict), shown[0])
        prefix = f"{len(ran)} settings ({counts}); e.g. {head.setting}: " if len(ran) > 1 \
            else ""
        return prefix + head.evidence()

    def premise_summary(self) -> list[PremiseCheck]:
        """Each premise once: failed if it failed in some setting (with how many and the
        first such value), else passed, else not recorded."""
        out: dict[str, PremiseCheck] = {}
        rank = {False: 2, True: 1, None: 0}
        for s in self.settings:
            for p in s.premises:
                seen = out.get(p.name)
                if seen is None or rank[p.passed] > rank[seen.passed]:
                    out[p.name] = p
        for name, p in out.items():
            failing = [s.setting for s in self.settings for q in s.premises
                       if q.name == name and q.passed is False]
            if len(self.settings) > 1 and failing:
                out[name] = replace(p, measured=f"failed in {len(failing)}/"
                                    f"{len(self.settings)} settings; e.g. {failing[0]}: "
                                    f"{p.measured}")
        return list(out.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "statement": self.claim.statement, "checks": self.claim.checks,
            "kind": self.claim.kind, "where": self.claim.where, "headline": self.claim.headline,
            "stand_in": self.stand_in, "verdict": self.verdict, "evidence": self.evidence(),
            "rule": self.claim.describe(),
            "premises": [_premise_dict(p) for p in self.premise_summary()],
            "settings": [{"setting": s.setting, "verdict": s.verdict, "evidence": s.evidence(),
                          "runs": s.runs, "diverged": s.diverged,
                          "estimate": None if s.decision is None else _finite(s.decision.estimate),
                          "interval": None if s.decision is None else
                          [_finite(v) for v in s.decision.interval],
                          "needed": None if s.decision is None else s.decision.needed,
                          "premises": [_premise_dict(p) for p in s.premises],
                          "run_ids": list(s.run_ids)} for s in self.settings],
            "controls": [{"name": c.name, "expect": c.expect, "outcome": c.outcome,
                          "evidence": c.evidence} for c in self.controls],
        }


def _premise_dict(p: PremiseCheck) -> dict[str, Any]:
    return {"name": p.name, "passed": p.passed, "measured": p.measured, "remedy": p.remedy}


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def diverged_mask(runs: pd.DataFrame) -> pd.Series:
    """Runs flagged diverged: the ``diverged`` column where the page computed it (non-finite
    or grown past the paper's factor), else the runner's status."""
    if runs.empty:
        return pd.Series(False, index=runs.index, dtype=bool)
    if "diverged" in runs:
        return runs["diverged"].astype(object).eq(True)
    return runs["status"].eq("diverged") if "status" in runs else pd.Series(False,
                                                                            index=runs.index)


def finished(runs: pd.DataFrame, include_diverged: bool = False) -> pd.DataFrame:
    """The runs a statistic may use: finished and (unless ``include_diverged``) not
    diverged; study rows (no ``status``) are all usable."""
    if "status" not in runs:
        return runs
    ok = runs["status"].isin(["done", "diverged"] if include_diverged else ["done"])
    return runs[ok & (include_diverged | ~diverged_mask(runs))]


def of_problems(runs: pd.DataFrame, problems: Collection[str]) -> pd.Series:
    """Whether each run's problem is one of ``problems`` (False where none is recorded)."""
    return runs["problem"].isin(problems) if "problem" in runs \
        else pd.Series(False, index=runs.index)


def real_else_stand_in(real: pd.Series) -> pd.Series:
    """The runs a claim judged on real data reads: the ``real`` ones wherever any ran, else
    the stand-in's (a stand-in's verdict is never presented where real data ran)."""
    return real if real.any() else ~real


def numeric(runs: pd.DataFrame, column: str, default: float = math.nan) -> pd.Series:
    """A run column as floats (``default`` where it is missing or null)."""
    if column not in runs:
        return pd.Series(default, index=runs.index, dtype=float)
    return pd.to_numeric(runs[column], errors="coerce").fillna(default).astype(float)


def truthy(runs: pd.DataFrame, column: str) -> pd.Series:
    """A run column as booleans: True only where it is True (missing: False)."""
    if column not in runs:
        return pd.Series(False, index=runs.index, dtype=bool)
    return runs[column].astype(object).eq(True)


def _setting(claim: Claim, name: str, runs: pd.DataFrame, results: PaperResults
             ) -> SettingResult:
    ids = tuple(sorted(str(r) for r in runs["run_id"])) if "run_id" in runs else ()
    checks = tuple(p(runs, results) for p in claim.premises)
    diverged = int(diverged_mask(runs).sum())
    usable = finished(runs, claim.include_diverged)
    out = any(c.passed is False for c in checks)
    if usable.empty:
        verdict = "out of regime" if out else "inconclusive" if diverged else "not run"
        return SettingResult(name, verdict, None, checks, len(runs), diverged, ids)
    sample = claim.statistic.compute(usable, results)
    decision = noted(claim.rule.decide(sample), sample)
    return SettingResult(name, "out of regime" if out else decision.verdict, decision, checks,
                         len(runs), diverged, ids)


def _controls(control: Control, results: PaperResults) -> list[ControlResult]:
    """One result per setting of the control's runs (one in all where it has no ``by``)."""
    parts = control.runs.settings(results) or [("", pd.DataFrame())]
    return [_control(control, f"{control.name} ({name})" if control.runs.by and name
                     else control.name, runs, results) for name, runs in parts]


def _control(control: Control, name: str, runs: pd.DataFrame, results: PaperResults
             ) -> ControlResult:
    ids = tuple(sorted(str(r) for r in runs["run_id"])) if "run_id" in runs else ()
    usable = finished(runs)
    if usable.empty:
        return ControlResult(name, control.expect, "not run", "no runs", ids)
    sample = control.statistic.compute(usable, results)
    decision = noted(control.rule.decide(sample), sample)
    outcome = {"held": "as expected", "contradicted": "unexpected"}.get(decision.verdict,
                                                                        "inconclusive")
    return ControlResult(name, control.expect, outcome, decision.text, ids)


def combine(settings: Sequence[SettingResult]) -> tuple[SettingResult, ...]:
    """Apply the Holm correction to the contradictions of the in-regime settings."""
    decided = [i for i, s in enumerate(settings)
               if s.decision is not None and s.verdict in ("held", "contradicted",
                                                           "inconclusive")]
    rejected = holm([settings[i].decision.p_contradicted for i in decided  # type: ignore[union-attr]
                     ])
    out = list(settings)
    for i, reject in zip(decided, rejected, strict=True):
        s = settings[i]
        assert s.decision is not None
        verdict = ("contradicted" if reject else "held" if s.decision.p_held < ALPHA
                   else "inconclusive")
        out[i] = SettingResult(s.setting, verdict, s.decision.with_verdict(verdict),
                               s.premises, s.runs, s.diverged, s.run_ids)
    return tuple(out)


def aggregate(verdicts: Sequence[str]) -> str:
    """A claim's (or an artefact's) verdict from its parts': contradicted if any part is;
    held if every part that could decide held; inconclusive if any part could not decide;
    out of regime if every part that ran was out of regime; not run if nothing ran."""
    ran = [v for v in verdicts if v != "not run"]
    if not ran:
        return "not run"
    if "contradicted" in ran:
        return "contradicted"
    deciding = [v for v in ran if v != "out of regime"]
    if not deciding:
        return "out of regime"
    return "held" if all(v == "held" for v in deciding) else "inconclusive"


def evaluate(claim: Claim, results: PaperResults) -> ClaimResult:
    """The claim's verdict on ``results`` (see the module docstring)."""
    settings = combine([_setting(claim, name, runs, results)
                        for name, runs in claim.runs.settings(results)])
    controls = tuple(r for c in claim.controls for r in _controls(c, results))
    stand_in = claim.setting.stand_in(claim.runs.select(results)) if claim.setting else ""
    return ClaimResult(claim, aggregate([s.verdict for s in settings]), settings, controls,
                       stand_in)


# -- the paper ----------------------------------------------------------------------------

Study = Callable[[str], pd.DataFrame]  # scale -> one row per trial


@dataclass(frozen=True)
class Regime:
    """One row of a page's "the paper's setting beside ours" table: a dimensionless
    ``quantity`` a claim's regime is about (e.g. noise-to-signal, steps per pass, passes,
    per-client n), the ``paper``'s value as text (with where it comes from; a function of
    the results where it needs a measured quantity of our instance) and ``ours``, measured
    from the runs; ``lead``: the row is quoted in the page's bottom line."""

    quantity: str
    paper: str | Callable[[PaperResults], str]
    ours: Callable[[PaperResults], str]
    note: str = ""
    lead: bool = False

    def row(self, results: PaperResults) -> list[str]:
        """[quantity, paper, ours, note]; a value the runs do not record says so."""
        values = []
        for value in (self.paper, self.ours):
            try:
                values.append(value(results) if callable(value) else value)
            except (KeyError, ValueError, IndexError, AttributeError) as exc:
                values.append(f"not recorded ({type(exc).__name__}: {exc})")
        return [self.quantity, *values, self.note]



def stand_in_findings(claims: Iterable[Claim], results: PaperResults,
                      keep: Callable[[pd.DataFrame], Any], what: str) -> list[dict[str, str]]:
    """Each claim re-judged on the stand-in runs alone (``keep``: the rows to keep), as a
    finding ("stand-in (not counted)") where it ran: the verdict it had before real data
    replaced the stand-in as its judged data; ``what`` names it (``{id}``: the claim's)."""
    found = []
    for claim in claims:
        result = evaluate(replace(claim, runs=replace(claim.runs, keep=keep)), results)
        if result.verdict != "not run":
            found.append({"kind": "stand-in (not counted)",
                          "what": what.format(id=claim.id),
                          "numbers": f"{result.verdict}: {result.evidence()}"})
    return found

def tuning_of(runs: pd.DataFrame, results: PaperResults) -> list[dict[str, Any]]:
    """The tuning records (a suite's ``tuning``, ``bench/tuning.py``) that chose ``runs``, in
    their own suites: a run id is a content hash, so two suites that chose the same run
    (e.g. tuned with and without a regime cap) each keep their own record."""
    ids = set(runs["run_id"]) if "run_id" in runs else set()
    suites = set(runs["suite"]) if "suite" in runs else None
    return [t for m in results.suites for t in m.get("tuning") or []
            if (suites is None or m.get("suite") in suites)
            and ids & set(t.get("run_ids") or ())]


def tuned_inside_grid(*params: str) -> Premise:
    """The tuned optimum lies inside its grid: no run of the setting comes from a tuning
    choice still on an edge of the grid of one of ``params`` (every tuned param if none are
    named), as recorded in the suite's ``tuning`` (``bench/tuning.py``)."""

    def check(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
        groups = tuning_of(runs, results)
        if not groups:
            return None, "no tuned runs"
        hits = [f"{t['group']}: {k} = {t['chosen'][k]:g} on the {side} edge"
                for t in groups for k, side in (t.get("edges") or {}).items()
                if not params or k in params]
        return (not hits, "; ".join(hits) if hits else
                f"every choice inside its grid ({len(groups)} tuned groups)")

    return Premise("tuned optimum inside its grid", check,
                   "extend the grid past the chosen edge (tuning: extend: N)")


class Sidecar(Protocol):
    """A paper's prose file (:class:`reports.prose.Prose`), as far as :class:`Paper`
    checks it."""

    @property
    def source(self) -> str: ...

    def claim_ids(self) -> set[str]: ...


@dataclass(frozen=True)
class Paper:
    """Everything the benchmark knows about one paper.

    ``roles`` maps each role an experiment file may declare (``role:``) to what it feeds;
    ``studies`` are simulations outside the run grid that ``reproduce`` runs and stores
    (``OUT/studies/<paper>/<scale>/<name>.parquet``) for claims and sections to read;
    ``sections(results, out)`` draws the figures and tables of the page;
    ``divergence_factor``: a run whose final loss exceeds this factor times its initial
    loss (in absolute value) is flagged diverged; ``regime``: the paper's setting beside
    ours, quantity by quantity (:class:`Regime`); ``experiments``: the folder of its
    experiment files, ``<scale>/*.yaml`` (None: ``bench/experiments/<key>``; a plugin's
    paper names its own); ``url``: the paper's arXiv or DOI page ("" where its text names
    none); ``text``: its prose sidecar (``reports/papers/<key>/paper.yaml``), whose claim ids
    must all be claims of the paper.
    """

    key: str
    title: str
    source: str
    claims: tuple[Claim, ...]
    roles: Mapping[str, str]
    sections: Callable[[PaperResults, Path], PaperSections]
    resolutions: tuple[tuple[str, str, str], ...] = ()
    studies: Mapping[str, Study] = field(default_factory=dict)
    divergence_factor: float = DIVERGENCE_FACTOR
    regime: tuple[Regime, ...] = ()
    experiments: Path | None = None
    url: str = ""
    text: Sidecar | None = None

    def __post_init__(self) -> None:
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.key}: claim ids must be unique, got {ids}")
        stray = sorted(self.text.claim_ids() - set(ids)) if self.text else []
        if stray:
            raise ValueError(f"{self.key}: {self.text.source if self.text else ''} has text "
                             f"for claims {stray}, which the paper does not declare")
        for claim in self.claims:
            if claim.problems():
                raise ValueError(f"{self.key} claim {claim.id}: "
                                 + "; ".join(claim.problems()))
            used = {*claim.runs.roles, *(r for c in claim.controls for r in c.runs.roles)}
            unknown = sorted(used - set(self.roles))
            if unknown:
                raise ValueError(f"{self.key} claim {claim.id}: roles {unknown} not declared")
            read = {c for r in (claim.runs, *(c.runs for c in claim.controls)) if not r.study
                    for c in (*r.where, *r.by)}
            unknown_columns = undeclared(read)
            if unknown_columns:
                raise ValueError(f"{self.key} claim {claim.id}: reads columns "
                                 f"{unknown_columns} the run frame does not declare "
                                 "(bench/columns.py)")
            studies = {claim.runs.study, *(c.runs.study for c in claim.controls)} - {""}
            if studies - set(self.studies):
                raise ValueError(f"{self.key} claim {claim.id}: studies "
                                 f"{sorted(studies - set(self.studies))} not declared")

    @property
    def targets(self) -> dict[str, str]:
        return {c.id: c.checks for c in self.claims}

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(f"{self.key} has no claim {claim_id!r}")

    def evaluate(self, results: PaperResults) -> list[ClaimResult]:
        return [evaluate(c, results) for c in self.claims]


def study_path(root: Path, paper: str, scale: str, name: str) -> Path:
    return root / "studies" / paper / scale / f"{name}.parquet"


def run_study(paper: Paper, name: str, scale: str, root: Path) -> Path:
    """Run and store study ``name`` of ``paper`` at ``scale`` (``reproduce`` runs each as a
    task of its own); its path."""
    path = study_path(root, paper.key, scale, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    paper.studies[name](scale).to_parquet(path, index=False)
    return path
