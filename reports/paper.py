"""One page per paper: its runs at one scale, the verdict of every declared claim (held /
contradicted / inconclusive / out of regime / not run, with its evidence and premises),
the genuine findings, why runs are out of regime, figures drawn as the paper draws them,
every resolved ambiguity, and ε as the paper computes it beside the accountants' ε.

A paper module ``reports/papers/<paper>/paper.py`` exports one :class:`reports.claims.Paper`;
this module collects the results, evaluates the claims and renders.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from algorithms import get_algorithm
from bench.experiment import SCALES
from bench.store import Store
from reports.claims import (
    DIVERGENCE_FACTOR,
    IN_PLACE_OF,
    VERDICTS,
    ClaimResult,
    aggregate,
    finished,
    study_path,
)
from reports.published import published_for
from reports.results import PaperResults, PaperSections, Provenance, Table
from reports.rules import as_float
from reports.scaling import ExponentCheck, ScalingFit, compare, declared_exponents, fit_exponents
from reports.tables import Comparison


def stored_suites(results_root: Path) -> list[tuple[dict[str, Any], Store]]:
    """(metadata, store) of every suite under ``results_root``."""
    stores = [Store(path.parent) for path in sorted(results_root.glob("*/suite.json"))]
    return [(store.suite(), store) for store in stores]


def collect(results_root: Path, paper: str, scale: str, trajectories: bool = True,
            divergence_factor: float | None = None,
            roles: Iterable[str] | None = None) -> PaperResults:
    """Runs (and, with ``trajectories``, trajectories) of every suite under
    ``results_root`` for (paper, scale) (the suites of every folder the scale runs:
    ``bench.experiment.SCALES``), with each run's ``diverged`` flag (see
    :func:`flag_divergence`) and the paper's stored studies; ``roles``: the paper's declared
    roles, the only ones its sections may ask for."""

    suites, runs, curves = [], [], []
    for meta, store in stored_suites(results_root):
        if meta.get("paper") != paper or meta.get("scale") not in SCALES.get(scale, (scale,)):
            continue
        frame, curve = store.runs_and_trajectories() if trajectories else (store.runs(), None)
        if frame.empty:
            continue
        suites.append(meta)
        runs.append(frame.assign(suite=meta["suite"]))
        if curve is not None:
            curves.append(curve)
    frame = pd.concat(runs, ignore_index=True) if runs else pd.DataFrame()
    traj = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    studies = {path.stem: pd.read_parquet(path) for path in
               sorted(study_path(results_root, paper, scale, "*").parent.glob("*.parquet"))}
    return PaperResults(paper=paper, scale=scale, suites=suites,
                        runs=flag_divergence(frame, traj, divergence_factor or
                                             DIVERGENCE_FACTOR),
                        trajectories=traj, studies=studies,
                        roles=None if roles is None else frozenset(roles))


def flag_divergence(runs: pd.DataFrame, trajectories: pd.DataFrame, factor: float
                    ) -> pd.DataFrame:
    """``runs`` with a boolean ``diverged`` column: the runner stopped it on a non-finite
    value, or its final loss exceeds ``factor`` × its initial loss in absolute value (the
    initial loss from the trajectory's step 0), and ``loss_growth`` (that ratio)."""
    if runs.empty:
        return runs
    growth = pd.Series(math.nan, index=runs.index)
    if not trajectories.empty and {"loss", "step", "point"} <= set(trajectories) \
            and "final_loss" in runs:
        start = trajectories[(trajectories["step"] == 0) & (trajectories["point"] == "iterate")]
        initial = runs["run_id"].map(start.drop_duplicates("run_id").set_index("run_id")["loss"])
        growth = runs["final_loss"].abs() / initial.abs().clip(lower=1e-12)
    grown = growth.gt(factor).fillna(False).astype(bool)
    # copied: one block per dtype, not one per suite's column (each later selection of rows
    # takes every block)
    return runs.assign(diverged=runs["status"].eq("diverged") | grown,
                       loss_growth=growth).copy()


def docstring_section(module: str, heading: str) -> str:
    """The paragraph(s) of a module docstring that follow a line starting with ``heading``."""
    doc = importlib.import_module(module).__doc__ or ""
    match = re.search(rf"^{re.escape(heading)}.*?$\n(.*)", doc, flags=re.M | re.S)
    return match.group(1).strip() if match else ""


def bullet_items(text: str) -> list[str]:
    """'* item' paragraphs of a docstring section as single-line strings."""
    items = re.split(r"^\* ", text, flags=re.M)
    return [" ".join(part.split()) for part in items if part.strip()]


def final_stats(runs: pd.DataFrame, metric: str, by: str = "epsilon") -> pd.DataFrame:
    """Mean, s.e. and count of the final ``metric`` over finished runs, per value of ``by``."""
    done = runs[runs["status"] == "done"] if len(runs) else runs
    col = f"final_{metric}"
    if col not in done or done.empty:
        return pd.DataFrame(columns=[by, "mean", "se", "runs"])
    grouped = done.groupby(by)[col]
    return pd.DataFrame({"mean": grouped.mean(), "se": grouped.sem(),
                         "runs": grouped.size()}).reset_index()


def mean_se(values: pd.Series) -> tuple[float, float]:
    """Mean and standard error of ``values`` (nan where undefined)."""
    numbers = values.to_numpy(dtype=float)
    if not len(numbers):
        return math.nan, math.nan
    se = float(numbers.std(ddof=1) / math.sqrt(len(numbers))) if len(numbers) > 1 else math.nan
    return float(numbers.mean()), se


def format_mean_se(mean: float, se: float | None) -> str:
    """'mean ± se' (4 and 2 significant digits); '–' for no value."""
    if math.isnan(mean):
        return "–"
    if not math.isfinite(mean):
        return f"{mean:g}"
    return f"{mean:.4g}" + ("" if se is None or not math.isfinite(se) else f" ± {se:.2g}")


def mean_se_cell(runs: pd.DataFrame, metric: str, scale: float = 1.0, by: str = "epsilon"
                 ) -> str:
    """'mean ± s.e.' of the final ``metric`` (× ``scale``) over ``runs`` ('–' without): one
    table cell, the runs being one value of ``by``."""
    s = final_stats(runs, metric, by)
    return format_mean_se(scale * float(s["mean"].iloc[0]),
                          scale * float(s["se"].iloc[0])) if len(s) else "–"


def median_range(values: pd.Series, fmt: str = "{:.3g}", runs: bool = False) -> str:
    """'median (min–max)' of ``values``, the one value where they agree, '–' for none
    (:func:`reports.claims.span` writes 'low–high'); with ``runs``, how many values
    ('median (min–max, k runs)', 'value (k runs)')."""
    v = values.dropna().astype(float)
    if v.empty:
        return "–"
    lo, mid, hi = (fmt.format(x) for x in (v.min(), v.median(), v.max()))
    count = f"{len(v)} runs" if runs else ""
    inside = ", ".join(part for part in ("" if lo == hi else f"{lo}–{hi}", count) if part)
    return f"{mid} ({inside})" if inside else mid


Build = Callable[[PaperResults, str, pd.DataFrame], Any]


def per_suite(results: PaperResults, role: str, build: Build, done: bool = True) -> list[Any]:
    """``build(results, suite, runs)`` for each suite of ``role`` with runs (its finished
    runs where ``done``), leaving out what comes back None: a section's table or figure
    per suite."""
    out = []
    for suite in results.role_suites(role):
        runs = finished(results.suite_runs(suite)) if done else results.suite_runs(suite)
        if not runs.empty and (item := build(results, suite, runs)) is not None:
            out.append(item)
    return out


def settings(results: PaperResults) -> list[tuple[str, str]]:
    """Each suite's description with what actually ran (algorithms, ε, δ, seeds)."""
    out = []
    for meta in results.suites:
        runs = results.suite_runs(meta["suite"])
        algs = ", ".join(sorted(runs["label"].unique()))
        eps = ", ".join(f"{e:g}" for e in sorted(runs["epsilon"].unique()))
        out.append((meta["suite"], f"{meta.get('description', '').strip()} "
                    f"[algorithms: {algs}; ε: {eps}; δ: {runs['delta'].iloc[0]:g}; "
                    f"seeds: {runs['seed'].nunique()}; calibrations: "
                    f"{', '.join(sorted(runs['calibration'].unique()))}]"))
    return out


Column = tuple[str, Callable[[pd.Series], str]]


def calibration_table(results: PaperResults, note: str,
                      extra: Sequence[Column] = ()) -> Table | None:
    """ε as the paper computes it beside the accountant, for every paper-calibrated setting."""
    runs = results.runs
    if runs.empty or "plan_sigma_tight" not in runs:
        return None
    paper = runs[(runs["calibration"] == "paper") & runs["plan_sigma_tight"].notna()]
    rows: list[list[str]] = []
    for (suite, problem, label, eps), part in paper.groupby(["suite", "problem", "label",
                                                             "epsilon"]):
        r = part.iloc[0]
        rows.append([str(suite), str(problem), str(label), f"{eps:g}", f"{r['n']:g}",
                     f"{r['batch_size']:g}", f"{r['steps']:g}", f"{r['sigma']:.4g}",
                     f"{r['plan_sigma_tight']:.4g}",
                     f"{r['plan_noise_ratio_tight_over_paper']:.3g}",
                     "–" if pd.isna(r["eps_paper"]) else f"{r['eps_paper']:.4g}",
                     f"{r['eps_pld']:.4g}", *(fn(r) for _, fn in extra)])
    return {"title": "ε as the paper computes it vs the accountant", "note": note,
            "columns": ["suite", "problem", "algorithm", "ε target", "n", "batch", "T",
                        "σ paper", "σ tight", "σ tight / σ paper", "ε paper", "ε PLD (spent)",
                        *(name for name, _ in extra)],
            "rows": rows}


SCALING_PREDICTORS = {"n": "n", "p_prob_d": "d", "epsilon": "epsilon"}


@dataclass(frozen=True)
class ScalingGroup:
    """One power-law fit of :func:`scaling_fits`: a group of finished runs of one suite,
    problem, label and calibration that differ only in n, d or ε. ``held`` lists the
    parameters that vary elsewhere in the suite with this group's values ('' if none)."""

    suite: str
    problem: str
    algorithm: str
    label: str
    calibration: str
    held: str
    fit: ScalingFit
    provenance: Provenance

    def checks(self, privacy_exponent: float | None) -> dict[str, ExponentCheck]:
        """Per fitted predictor, the check against the exponent a bound (√d/(nε))^a with
        a = ``privacy_exponent`` predicts (none without a rate)."""

        declared = {} if privacy_exponent is None else declared_exponents(privacy_exponent)
        return {c.predictor: c for c in compare(self.fit, declared)}


def scaling_fits(results: PaperResults, metric: str = "grad_norm", min_runs: int = 6
                 ) -> list[ScalingGroup]:
    """Least-squares exponents of the final ``metric`` in n, d and ε (reports/scaling.py) for
    every group of finished runs that differ only there (at least ``min_runs`` runs and one
    predictor that varies); groups that cannot be fitted are left out."""

    runs = results.runs
    column = f"final_{metric}"
    if runs.empty or column not in runs:
        return []
    done = runs[(runs["status"] == "done") & runs["epsilon"].apply(math.isfinite)]
    fixed = [c for c in done if str(c).startswith(("p_prob_", "p_alg_"))
             and c not in (*SCALING_PREDICTORS, "p_prob_n")]
    keys = ["suite", "problem", "algorithm", "label", "calibration", *fixed]
    varied = {(str(k[0]), str(k[1])): [str(c) for c in fixed if part[c].nunique() > 1]
              for k, part in done.groupby(["suite", "label"]) if isinstance(k, tuple)}
    groups = []
    for _, part in done.groupby([k for k in keys if k in done], dropna=False):
        varying = [c for c in SCALING_PREDICTORS if c in part and part[c].nunique() > 1]
        if len(part) < min_runs or not varying:
            continue
        try:
            fit = fit_exponents(part.rename(columns=SCALING_PREDICTORS), column,
                                [SCALING_PREDICTORS[c] for c in varying])
        except ValueError:
            continue
        first = part.iloc[0]
        held = ", ".join(f"{c.split('_', 2)[-1]}={first[c]}"
                         for c in varied[(str(first["suite"]), str(first["label"]))]
                         if pd.notna(first[c]))
        groups.append(ScalingGroup(
            suite=str(first["suite"]), problem=str(first["problem"]),
            algorithm=str(first["algorithm"]), label=str(first["label"]),
            calibration=str(first["calibration"]), held=held, fit=fit,
            provenance=results.provenance(part)))
    return groups


MIN_R2 = 0.5  # below it a log-log fit explains too little to read an exponent from


def scaling_table(results: PaperResults, metric: str = "grad_norm", min_runs: int = 6
                  ) -> Table | None:
    """Fitted exponents of the final ``metric`` in n, d and ε beside those each algorithm's
    declared rate predicts (reports/scaling.py), one row per predictor of each group of
    :func:`scaling_fits`; a group whose fit has R² < :data:`MIN_R2` is one row marked
    "no fit", with no exponent and no check against the rate."""

    rows = []
    for group in scaling_fits(results, metric, min_runs):
        fit = group.fit
        first = [group.suite, group.label, group.calibration, group.held or "–"]
        if not fit.r2 >= MIN_R2:
            rows.append([*first, ", ".join(fit.predictors), "no fit", "–", "–", "–",
                         f"{fit.points}", f"{fit.r2:.2f}"])
            continue
        rate = get_algorithm(group.algorithm).rate
        checks = group.checks(None if rate is None else rate.privacy_exponent)
        for p in fit.predictors:
            lo, hi = fit.intervals[p]
            check = checks.get(p)
            rows.append([*first, p, f"{fit.exponents[p]:+.3f}", f"[{lo:+.3f}, {hi:+.3f}]",
                         "–" if check is None else f"{check.declared:+.3f}",
                         "–" if check is None else ("inside" if check.inside else "outside"),
                         f"{fit.points}", f"{fit.r2:.2f}"])
    if not rows:
        return None
    return {"title": f"Scaling of the final {metric.replace('_', ' ')} in n, d and ε",
            "note": "Least-squares exponents of log(final metric) on log n, log d, log ε over "
                    "runs that differ only there (95 % bootstrap intervals over runs), beside "
                    "the exponents each algorithm's declared rate (√d/(nε))^a predicts while "
                    "its privacy term dominates: −a in n and ε, a/2 in d (reports/scaling.py). "
                    "'outside': the declared exponent is not in the interval. 'no fit': the "
                    f"fit explains less than R² = {MIN_R2:g} of the variance, so no exponent "
                    "is read from it.",
            "columns": ["suite", "method", "calibration", "held fixed", "predictor", "fitted",
                        "95 % CI",
                        "declared", "declared vs CI", "runs", "R²"], "rows": rows}


def rates_table(paper: str) -> Table | None:
    """A paper's table of utility bounds from reports/published/<paper>.yaml."""

    published = published_for(paper)
    if published is None or not published.rates:
        return None
    rows = [[r.method, r.problem, r.objective, r.bound, f"{r.privacy_exponent:.3g}",
             "–" if r.sample_exponent is None else f"{r.sample_exponent:.3g}",
             "✓" if r.sosp else "✗", r.algorithm or "–", r.note] for r in published.rates]
    return {"provenance": Provenance("", computed=f"as printed in the paper, from "
                                                  f"reports/published/{paper}.yaml"),
            "title": f"Utility bounds ({published.rates[0].table}; "
                     f"reports/published/{paper}.yaml)",
            "note": "Exponents: of √d/(nε) and of 1/n in the bound. 'ours': the registered "
                    "implementation.",
            "columns": ["method", "problem", "objective", "bound", "exp. √d/(nε)",
                        "exp. 1/n", "SOSP", "ours", "note"], "rows": rows}


def deviations(sources: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """(name, item) for every bullet under ``heading`` in each (name, module, heading)."""
    return [(name, item) for name, module, heading in sources
            for item in bullet_items(docstring_section(module, heading))]


PREMISE_MARK = {True: "ok", False: "FAILED", None: "not recorded"}
NUMBER_VERDICTS = ("held", "contradicted", "inconclusive", "out of regime", "not run")
# (and calibrated, diverged: never counted)


def _combine(parts: Sequence[tuple[str, str, bool]]) -> str:
    """An artefact's verdict from its (name, verdict, headline) parts: as
    :func:`reports.claims.aggregate`, except that an out-of-regime headline claim makes it
    out of regime (never held) unless some part is contradicted."""
    verdicts = [v for _, v, _ in parts]
    verdict = aggregate(verdicts)
    if verdict != "contradicted" and any(h and v == "out of regime" for _, v, h in parts):
        return "out of regime"
    return verdict


def artefact_verdict(artefact: Mapping[str, Any]) -> str:
    """How an artefact's verdict reads in a table: its verdict about the paper, and where
    only a stand-in ran, "paper scale: not run · stand-in: <its verdict>"."""
    if artefact.get("stand_in") and artefact["verdict"] == "not run":
        return f"paper scale: not run · stand-in: {artefact['stand_in']}"
    text = artefact["verdict"]
    if artefact.get("stand_in"):
        text += f" · stand-in: {artefact['stand_in']}"
    return text


def artefacts(claims: Sequence[ClaimResult], comparisons: Sequence[Comparison]
              ) -> list[dict[str, Any]]:
    """Each table, figure or theorem of the paper that our runs check, with its verdict
    about the paper: :func:`_combine` over its ``paper`` claims that ran on the paper's own
    setting and its published numbers (calibrated numbers and diverged runs never count).
    Claims that ran on a stand-in give ``stand_in``, the stand-in's verdict, never the
    artefact's: an artefact checked only on stand-ins is "not run" at paper scale.
    Implementation and design claims are checks of the reproduction, not of an artefact."""
    parts: dict[str, list[tuple[str, str, bool]]] = {}
    stand_ins: dict[str, list[tuple[str, str, bool]]] = {}
    for result in claims:
        if not result.counts:
            continue
        decided = [s for s in result.settings if s.verdict != "not run"]
        name = f"claim {result.id}" + (
            f" ({sum(s.verdict == 'held' for s in decided)}/{len(decided)} settings held)"
            if len(decided) > 1 else "")
        into = stand_ins if result.stand_in else parts
        into.setdefault(result.claim.checks, []).append(
            (name + (" [stand-in]" if result.stand_in else ""), result.verdict,
             result.claim.headline))
        parts.setdefault(result.claim.checks, [])
    numbers: dict[str, list[Comparison]] = {}
    for c in comparisons:
        numbers.setdefault(c.entry.table or c.entry.figure or "published numbers", []).append(c)
    for target, group in numbers.items():
        counts = ", ".join(f"{n} {s}" for s in (*NUMBER_VERDICTS, "calibrated", "diverged")
                           if (n := sum(c.status == s for c in group)))
        counted = [c.status for c in group if c.status in NUMBER_VERDICTS]
        parts.setdefault(target, []).append((f"{len(group)} published numbers ({counts})",
                                             aggregate(counted) if counted else "not run",
                                             False))
    out = []
    for target in sorted(parts):
        measured = [c for c in numbers.get(target, [])
                    if c.delta is not None and c.status != "calibrated"]
        delta = ""
        if measured:
            far = max(measured,
                      key=lambda c: abs(c.delta or 0.0) / max(abs(c.entry.value), 1e-12))
            settled = [c.status for c in measured if c.status != "out of regime"]
            outside = len(measured) - len(settled)
            delta = "; ".join(t for t in (
                settled and f"{settled.count('held')}/{len(settled)} published numbers held",
                outside and f"{outside} out of regime",
                f"largest Δ {far.delta:+.3g} ({far.entry.id}: {far.entry.value:g} published)")
                if t)
        flagged = [c for c in numbers.get(target, []) if c.status in ("calibrated", "diverged")]
        if flagged:
            delta = "; ".join(t for t in (delta, ", ".join(
                f"{c.entry.id} {c.status}" for c in flagged)) if t)
        every = [*parts[target], *stand_ins.get(target, [])]
        verdicts = [v for _, v, _ in every]
        tally = {v: verdicts.count(v) for v in VERDICTS if v in verdicts}
        verdict = _combine(parts[target])
        stand_in = _combine(stand_ins[target]) if stand_ins.get(target) else ""
        out.append({"target": target, "verdict": verdict, "stand_in": stand_in,
                    "delta": delta, "counts": tally,
                    "mixed": "" if list(tally) == [verdict] else
                    ", ".join(f"{n} {v}" for v, n in tally.items()),
                    "parts": [{"name": n, "verdict": v, "headline": h} for n, v, h in every]})
    return out


LEAD = {"contradicted": "Contradicted", "held": "Held", "inconclusive": "Undecided",
        "out of regime": "Out of regime", "not run": "Not run"}


def _lead(r: ClaimResult) -> str:
    """One sentence on a headline claim: its verdict about the paper, where the paper
    states it, and the deciding evidence (or the failed premise with its value)."""
    on = " on a stand-in" if r.stand_in and r.verdict != "not run" else ""
    head = f"{LEAD[r.verdict]}{on} — {r.id} ({r.claim.where}): {r.claim.statement}"
    if r.verdict == "out of regime":
        failed = next((p for p in r.premise_summary() if p.passed is False), None)
        return head + (f". Failed premise: {failed.name} ({failed.measured})." if failed
                       else ".")
    if r.verdict == "contradicted":
        return f"{head}. {_contradicting(r, shown=1)}."
    return head + (f". {r.evidence()}." if r.verdict != "not run" else ".")


def bottom_line(claims: Sequence[ClaimResult], artefact_rows: Sequence[Mapping[str, Any]],
                comparisons: Sequence[Comparison], regime_rows: Sequence[Sequence[str]] = ()
                ) -> list[str]:
    """What a reader may conclude about the paper, in a few sentences built from the
    declarations and the runs: each headline ``paper`` claim (contradictions first), the
    tally of the paper's claims, where the evidence comes from (stand-ins beside the
    paper's setting, with the regime quantities ``regime_rows`` side by side), which
    verdicts transfer to the paper, and what has not run."""
    paper = [r for r in claims if r.counts]
    order = list(LEAD)
    lead = sorted((r for r in paper if r.claim.headline), key=lambda r: order.index(r.verdict))
    out = [_lead(r) for r in lead]
    tally = ", ".join(f"{n} {v}" for v in VERDICTS if (n := sum(r.verdict == v for r in paper)))
    checks = len(claims) - len(paper)
    out.append(f"Of the paper's {len(paper)} claims checked here: {tally or 'none'}"
               + (f"; {checks} checks of this reproduction (implementation, design) are "
                  "listed apart and not counted." if checks else "."))
    stand_ins = [r for r in paper if r.stand_in and r.verdict != "not run"]
    if stand_ins:
        what = "; ".join(dict.fromkeys(r.stand_in.split(IN_PLACE_OF)[0]
                                       for r in stand_ins))
        regime = "; ".join(f"{q}: paper {pv}, ours {ov}" for q, pv, ov, *_ in regime_rows)
        out.append(f"Claims {', '.join(r.id for r in stand_ins)} ran on stand-ins ({what}), "
                   "not on the paper's data and models: their verdicts describe the stand-in, "
                   "not the published artefacts"
                   + (f" (regime — {regime})" if regime else "") + ".")
    transfer = [r.id for r in paper if not r.stand_in
                and r.verdict in ("held", "contradicted", "inconclusive")]
    outside = [r.id for r in paper if r.verdict == "out of regime"]
    out.append(("Verdicts that transfer to the paper (its own setting, or an instance that "
                f"meets a theorem's assumptions): {', '.join(transfer)}" if transfer else
                "No verdict transfers to the paper's own setting yet")
               + (f"; out of regime (a premise failed, named below): {', '.join(outside)}"
                  if outside else "") + ".")
    unrun = [a["target"] for a in artefact_rows if a["verdict"] == "not run"]
    numbers = sum(c.status == "not run" for c in comparisons)
    if unrun or numbers:
        out.append("Not run at the paper's scale: " + "; ".join(t for t in (
            ", ".join(unrun), numbers and f"{numbers} published numbers") if t) + ".")
    return out


def in_regime(comparisons: Sequence[Comparison], claims: Sequence[ClaimResult]
              ) -> list[Comparison]:
    """Published numbers of an artefact whose every claim that ran is out of regime are out
    of regime too (their runs fail the premises those claims name): a Δ is still shown, but
    the number is neither held nor contradicted."""
    by_target: dict[str, list[str]] = {}
    for r in claims:
        if r.counts and r.verdict != "not run":
            by_target.setdefault(r.claim.checks, []).append(r.verdict)
    out = []
    for c in comparisons:
        verdicts = by_target.get(c.entry.table or c.entry.figure or "", [])
        outside = bool(verdicts) and all(v == "out of regime" for v in verdicts)
        decided = c.status in ("held", "contradicted", "inconclusive")
        out.append(replace(c, status="out of regime") if outside and decided else c)
    return out


def findings(claims: Sequence[ClaimResult], runs: pd.DataFrame,
             comparisons: Sequence[Comparison], overspend: float = 1.01,
             underspend: float = 0.5) -> list[dict[str, str]]:
    """The genuine findings: every contradicted claim and published number, and every
    paper calibration whose accountant ε (PLD) is above ``overspend`` or below
    ``underspend`` times its target."""
    def kind(r: ClaimResult) -> str:
        if not r.counts:
            return f"failed check of this reproduction ({r.claim.kind})"
        return "contradicted on a stand-in" if r.stand_in else "contradicted claim"

    out = [{"kind": kind(r), "what": f"{r.id} ({r.claim.checks}): {r.claim.statement}"
            + (f" [stand-in: {r.stand_in}]" if r.stand_in else ""),
            "numbers": _contradicting(r)}
           for r in sorted(claims, key=lambda r: (not r.counts, bool(r.stand_in)))
           if r.verdict == "contradicted"]
    out += [{"kind": "contradicted published number",
             "what": f"{c.entry.id} ({c.entry.where}, {c.entry.row}, {c.entry.column})",
             "numbers": f"published {c.entry.value:g}, ours {c.ours:.4g} "
                        f"[{c.interval[0]:.4g}, {c.interval[1]:.4g}] ({c.seeds} runs)"}
            for c in comparisons if c.status == "contradicted" and c.ours is not None]
    out += calibration_findings(runs, overspend, underspend)
    return out


def _contradicting(result: ClaimResult, shown: int = 3) -> str:
    """The evidence of the first ``shown`` contradicted settings of a claim, and how many
    more there are."""
    settings = [s for s in result.settings if s.verdict == "contradicted"]
    text = "; ".join(f"{s.setting}: {s.evidence()}" for s in settings[:shown])
    more = len(settings) - shown
    return text + (f"; and {more} more contradicted settings (see {result.id} below)"
                   if more > 0 else "")


def calibration_findings(runs: pd.DataFrame, overspend: float = 1.01,
                         underspend: float = 0.5) -> list[dict[str, str]]:
    """Paper calibrations that overspend or underspend their target ε (PLD accountant):
    one row per method, calibration and direction, with the targets, suites and range of
    ε spent ÷ target over its settings. Runs that voided their guarantee (ε = ∞: a per-sample
    norm above the assumed bound) are reported as void elsewhere, not here."""
    if runs.empty or "eps_pld" not in runs:
        return []
    paper = runs[runs["calibration"].isin(["paper", "advanced"])
                 & runs["epsilon"].apply(math.isfinite)]
    if "diag_guarantee_void" in paper:  # a void run's ε = ∞ is its bound's, not the calibration's
        paper = paper[~paper["diag_guarantee_void"].eq(True)]
    settings = []
    for (suite, label, cal, eps), part in paper.groupby(["suite", "label", "calibration",
                                                         "epsilon"]):
        spent = part["eps_pld"].astype(float) / as_float(eps)
        direction = ("overspends" if spent.max() > overspend
                     else "underspends" if spent.min() < underspend else None)
        if direction:
            settings.append({"label": str(label), "calibration": str(cal),
                             "direction": direction, "suite": suite, "epsilon": as_float(eps),
                             "low": spent.min(), "high": spent.max(), "runs": len(part)})
    out = []
    for (label, cal, way), found in pd.DataFrame(settings).groupby(
            ["label", "calibration", "direction"], sort=False) if settings else []:
        targets = sorted(set(found["epsilon"]))
        out.append({"kind": f"calibration {way} its target",
                    "what": f"{label}, calibration {cal}, target ε ∈ "
                            f"{{{', '.join(f'{e:g}' for e in targets)}}} in "
                            f"{_settings(list(dict.fromkeys(found['suite'])))}",
                    "numbers": f"ε spent (PLD) ÷ target {found['low'].min():.3g}–"
                               f"{found['high'].max():.3g} over {found['runs'].sum()} runs in "
                               f"{len(found)} settings"})
    return out


def out_of_regime(claims: Sequence[ClaimResult]) -> list[dict[str, str]]:
    """Why runs are out of regime: each failed premise once, with the claims it takes out,
    the measured values and what would bring the runs into regime."""
    rows: dict[str, dict[str, Any]] = {}
    for r in claims:
        for s in r.settings:
            for p in s.failed:
                row = rows.setdefault(p.name, {"premise": p.name, "claims": [],
                                               "measured": {}, "remedy": p.remedy})
                if r.id not in row["claims"]:
                    row["claims"].append(r.id)
                row["measured"].setdefault(p.measured, []).append(s.setting)
    return [{"premise": r["premise"], "claims": ", ".join(r["claims"]),
             "measured": "; ".join(f"{text} ({_settings(where)})"
                                   for text, where in r["measured"].items()),
             "remedy": r["remedy"]} for r in rows.values()]


def _settings(names: Sequence[str], shown: int = 3) -> str:
    """Setting names for a sentence: the first ``shown``, then how many more."""
    unique = list(dict.fromkeys(names))
    more = len(unique) - shown
    return " · ".join(unique[:shown]) + (f" · and {more} more settings" if more > 0 else "")


def with_provenance(sections: PaperSections, results: PaperResults) -> None:
    everything = results.provenance()
    for table in sections.tables:
        table.setdefault("provenance", everything)
    sections.figures = [f if f.provenance else replace(f, provenance=everything)
                        for f in sections.figures]


def claim_rows(claims: Sequence[ClaimResult], results: PaperResults) -> list[dict[str, Any]]:
    """The page's first table: claim → verdict → evidence → premises, with the runs."""
    rows = []
    for r in claims:
        ids = sorted({i for s in r.settings for i in s.run_ids}
                     | {i for c in r.controls for i in c.run_ids})
        rows.append({**r.to_dict(),
                     "provenance": results.provenance(results.runs[results.runs["run_id"]
                                                                   .isin(ids)])
                     if ids and not results.runs.empty else Provenance(results.scale)})
    return rows
