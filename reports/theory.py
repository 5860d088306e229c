"""The theory page: every paper's table of utility bounds beside the exponents our runs fit.

For each paper whose ``reports/published/<paper>.yaml`` has ``rates:``, its rate table as
printed (:func:`reports.paper.rates_table`) and, beside each row that names our
implementation, every power-law fit of that algorithm's final ‖∇F‖ in n, d and ε over the
suites of *all* papers at one scale (:func:`reports.paper.scaling_fits`), with the exponents
the row's bound (√d/(nε))^a predicts while its privacy term dominates (−a in n and ε, a/2 in
d: :func:`reports.scaling.declared_exponents`) and whether they lie in the fitted 95 % interval.
A second table does the same for the rate each registered algorithm declares
(``Algorithm.rate``), so algorithms without a published rate row appear too.

:func:`theory_tables` returns the tables as ``{title, note, columns, rows}`` dicts with string
cells (the shape the paper pages use); :func:`build_theory_page` renders them to
``out/index.html`` and exports them as LaTeX beside it, with a figure of every fitted
exponent against the one its bound predicts (:func:`exponent_points`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

from algorithms import ALGORITHMS
from reports.figures import exponents_against_predicted
from reports.latex import export_page
from reports.paper import (
    MIN_R2,
    PaperResults,
    ScalingGroup,
    collect,
    rates_table,
    scaling_fits,
    stored_suites,
)
from reports.papers import paper_keys
from reports.published import PUBLISHED_DIR, published_for
from reports.render import write_page

METRIC = "grad_norm"
NO_RUNS = "no scaling runs"
NO_IMPLEMENTATION = "no implementation"
PREDICTOR_LABELS = {"n": "n", "d": "d", "epsilon": "ε"}
FIT_COLUMNS = ["fitted on (suite · problem · run label, calibration; held fixed)", "predictor",
               "fitted (95 % CI)", "predicted", "predicted vs CI", "runs · git"]
FIT_NOTE = ("Beside each row: every fit of our implementation's final ‖∇F‖ over runs that "
            "differ only in n, d or ε, in any paper's suites at this scale, one line per "
            "predictor; 'predicted': the exponent the row's bound (√d/(nε))^a gives while its "
            "privacy term dominates (−a in n and ε, a/2 in d); 'inside': it lies in the 95 % "
            "bootstrap interval of the fit.")
EXPLANATION = (
    "Each fit regresses log of the final gradient norm ‖∇F‖ of finished runs on log n, "
    "log d and log ε by least squares, over a group of runs of one suite, problem, run label "
    "and calibration that differ only in those (at least 6 runs; a predictor enters only "
    "where it varies), with 95 % percentile intervals from 2000 bootstrap resamples of the "
    "runs (reports/scaling.py). An algorithm's fits come from every paper's suites at this "
    "scale, not only its own paper's; groups are never pooled, as constants differ between "
    "problems and settings. "
    "A bound Õ(n^{−b} + (√d/(nε))^{a}) predicts the exponents −a in ε and in n and a/2 in d "
    "only where its privacy term dominates. Where the sample term n^{−b}, the optimisation "
    "error of a fixed step budget or a floor of the problem dominates, the fitted slope is "
    "flatter, so 'outside' can mean the regime rather than a failed theorem; a bound is an "
    "upper bound, and an easy instance can decay faster. Second-order bounds are on α of an "
    "α-SOSP; only the gradient-norm part is fitted here. Quick-scale grids span few values "
    "with few seeds, so the intervals are wide and 'inside' is weak evidence.")


def all_results(results_root: Path, scale: str) -> PaperResults:
    """The runs of every paper's suites under ``results_root`` at ``scale`` (suites that
    name no paper, such as smoke runs, are left out)."""
    papers = {str(meta["paper"]) for meta, _ in stored_suites(results_root)
              if meta.get("scale") == scale and meta.get("paper")}
    parts = [collect(results_root, paper, scale, trajectories=False) for paper in sorted(papers)]
    frames = [p.runs for p in parts if not p.runs.empty]
    return PaperResults(paper="all", scale=scale, suites=[s for p in parts for s in p.suites],
                        runs=pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(),
                        trajectories=pd.DataFrame())


def _fits_by_algorithm(results: PaperResults) -> dict[str, list[ScalingGroup]]:
    out: dict[str, list[ScalingGroup]] = {}
    for group in scaling_fits(results, METRIC):
        out.setdefault(group.algorithm, []).append(group)
    return out


def _fit_rows(groups: Sequence[ScalingGroup], privacy_exponent: float | None,
              algorithm: str | None) -> list[list[str]]:
    """The fit cells of one rate row: one line per predictor of each fit, or one line that
    says why there are none."""
    blank = [""] * (len(FIT_COLUMNS) - 1)
    if algorithm is None:
        return [[NO_IMPLEMENTATION, *blank]]
    if not groups:
        return [[NO_RUNS, *blank]]
    rows = []
    for group in groups:
        fit = group.fit
        checks = group.checks(privacy_exponent)
        setting = (f"{group.suite} · {group.problem} · {group.label}, {group.calibration}"
                   + (f"; {group.held}" if group.held else ""))
        shas = ", ".join(s[:10] for s in group.provenance.git_shas) or "unknown"
        source = f"{fit.points} runs · R² {fit.r2:.2f} · git {shas}"
        for i, p in enumerate(fit.predictors):
            lo, hi = fit.intervals[p]
            check = checks.get(p)
            rows.append([setting if i == 0 else "", PREDICTOR_LABELS.get(p, p),
                         f"{fit.exponents[p]:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                         "–" if check is None else f"{check.declared:+.3f}",
                         "no private rate" if check is None
                         else ("inside" if check.inside else "outside"),
                         source if i == 0 else ""])
    return rows


def _beside(cells: list[str], fit_rows: list[list[str]], tail: Sequence[str] = ()
            ) -> list[list[str]]:
    """``cells``, the fit cells, then ``tail`` (long text) on the first line; blanks under
    ``cells`` and ``tail`` on the fit's further lines."""
    return [[*(cells if i == 0 else [""] * len(cells)), *fit,
             *(tail if i == 0 else [""] * len(tail))] for i, fit in enumerate(fit_rows)]


def _papers_with_rates(directory: Path = PUBLISHED_DIR) -> list[str]:
    return [p.stem for p in sorted(directory.glob("*.yaml"))
            if (pub := published_for(p.stem, directory)) is not None and pub.rates]


def _fraction(x: float) -> str:
    f = Fraction(x).limit_denominator(12)
    return str(f) if abs(float(f) - x) < 1e-6 else f"{x:.3g}"


def paper_rate_table(paper: str, fits: dict[str, list[ScalingGroup]]) -> dict[str, Any] | None:
    """One paper's rate table (as its page shows it) with the fits beside each row."""
    published = published_for(paper)
    table = rates_table(paper)
    if published is None or table is None:
        return None
    columns = list(table["columns"])
    tail = 1 if columns[-1] == "note" else 0  # the long note after the fits
    rows: list[list[str]] = []
    for rate, cells in zip(published.rates, table["rows"], strict=True):
        groups = fits.get(rate.algorithm, []) if rate.algorithm else []
        text = [str(c) for c in cells]
        rows += _beside(text[:len(text) - tail],
                        _fit_rows(groups, rate.privacy_exponent, rate.algorithm),
                        text[len(text) - tail:])
    return {"title": f"{paper}: {table['title']}",
            "note": f"{published.title}. {table['note']} {FIT_NOTE}",
            "columns": [*columns[:len(columns) - tail], *FIT_COLUMNS,
                        *columns[len(columns) - tail:]], "rows": rows}


def declared_rate_table(fits: dict[str, list[ScalingGroup]]) -> dict[str, Any]:
    """Every registered algorithm's declared rate (``Algorithm.rate``) beside its fits."""

    rows: list[list[str]] = []
    for name in sorted(ALGORITHMS):
        cls = ALGORITHMS[name]
        rate = cls.rate
        a = None if rate is None else rate.privacy_exponent
        b = None if rate is None else rate.sample_exponent
        terms = [*([f"n^{{−{_fraction(b)}}}"] if b is not None else []),
                 *([f"(√d/(nε))^{{{_fraction(a)}}}"] if a is not None else [])]
        bound = "–" if rate is None else (f"Õ({' + '.join(terms)})" if terms else "no rate")
        cells = [name, str(getattr(cls, "paper", "") or "–"),
                 "–" if rate is None else rate.objective,
                 "–" if rate is None else rate.stationarity, bound,
                 "–" if a is None else f"{a:.3g}", "–" if b is None else f"{b:.3g}"]
        rows += _beside(cells, _fit_rows(fits.get(name, []), a, name),
                        ["–" if rate is None else rate.source])
    return {"title": "The rate each registered algorithm declares (Algorithm.rate)",
            "note": "The bound on ‖∇F‖ (first order) or on α of an α-SOSP (second order) "
                    "that the implementation's paper claims, as declared in algorithms/. "
                    + FIT_NOTE.replace("the row's bound", "the declared bound"),
            "columns": ["algorithm", "paper", "objective", "stationarity", "declared bound",
                        "exp. √d/(nε)", "exp. 1/n", *FIT_COLUMNS, "source"],
            "rows": rows}


def _bounds() -> list[tuple[str, str, float]]:
    """(algorithm, where the bound is stated, its privacy exponent a) of every published
    rate row naming an implementation and of every declared ``Algorithm.rate``."""
    published = [(rate.algorithm, f"{paper} {rate.table}", rate.privacy_exponent)
                 for paper in _papers_with_rates()
                 for rate in getattr(published_for(paper), "rates", [])
                 if rate.algorithm]
    declared = [(name, "Algorithm.rate", rate.privacy_exponent) for name in sorted(ALGORITHMS)
                if (rate := ALGORITHMS[name].rate) is not None
                and rate.privacy_exponent is not None]
    return published + declared


def exponent_points(fits: dict[str, list[ScalingGroup]]) -> pd.DataFrame:
    """The figure's points: every fitted exponent (``fitted``, 95 % interval ``lo``,
    ``hi``) of a fit with R² ≥ MIN_R2 beside the exponent a bound predicts for it
    (``predicted``), per ``algorithm`` and ``predictor``; a fit predicted alike by several
    bounds once."""
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    for algorithm, where, exponent in _bounds():
        for group in fits.get(algorithm, []):
            if not group.fit.r2 >= MIN_R2:
                continue
            for p, check in group.checks(exponent).items():
                key = (algorithm, group.suite, group.problem, group.label, group.calibration,
                       group.held, p, round(check.declared, 3))
                points.setdefault(key, {
                    "algorithm": algorithm, "predictor": PREDICTOR_LABELS.get(p, p),
                    "bound": where, "predicted": check.declared, "fitted": check.fitted,
                    "lo": check.lo, "hi": check.hi, "inside": check.inside})
    return pd.DataFrame(list(points.values()),
                        columns=["algorithm", "predictor", "bound", "predicted", "fitted",
                                 "lo", "hi", "inside"])


FIGURE_CAPTION = (
    "Every fitted exponent of the final ‖∇F‖ in n, d and ε (95 % bootstrap interval) against "
    "the exponent the bound predicts while its privacy term dominates, per algorithm; on the "
    f"diagonal they agree. Fits with R² < {MIN_R2:g} are left out.")


def _tables(fits: dict[str, list[ScalingGroup]]) -> list[dict[str, Any]]:
    tables = [t for paper in _papers_with_rates() if (t := paper_rate_table(paper, fits))]
    return [*tables, declared_rate_table(fits)]


def theory_tables(results_root: Path, scale: str = "quick") -> list[dict[str, Any]]:
    """The theory page's tables ({title, note, columns, rows}, string cells): one per paper
    with published rates, then the registered algorithms' declared rates."""
    return _tables(_fits_by_algorithm(all_results(Path(results_root), scale)))


def _papers_without_rates() -> list[str]:
    known = set(paper_keys())
    known |= {p.stem for p in PUBLISHED_DIR.glob("*.yaml")}
    return sorted(known - set(_papers_with_rates()))


def build_theory_page(results_root: Path, out: Path, scale: str = "quick") -> Path:
    """Render ``out/index.html``: the rate tables with our fitted exponents beside them, and
    their LaTeX (``out/tables/``, ``out/latex.json``: :func:`reports.latex.export_page`)."""

    results = all_results(Path(results_root), scale)
    fits = _fits_by_algorithm(results)  # the fits of every group: once, for both
    tables = _tables(fits)
    figure = exponents_against_predicted(exponent_points(fits), out, "exponents")
    runs = results.runs
    write_page(
        "theory.html.j2", out, out.parents[1], [("Theory", None), (scale, None)],
        scale=scale, results_root=str(results_root),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        provenance=results.provenance().summary(), n_suites=len(results.suites),
        counts=runs["status"].value_counts().to_dict() if len(runs) else {},
        explanation=EXPLANATION, without_rates=_papers_without_rates(), tables=tables,
        figure=figure, caption=FIGURE_CAPTION)
    export_page(out, f"Theory: published rates and fitted exponents ({scale})", tables,
                [(figure.replace(".png", ".pdf"), FIGURE_CAPTION)])
    return out
