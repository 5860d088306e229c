"""tao2025's page sections: Figures 1-2 regenerated per calibration, α-SOSP outputs by d
(Remark 4), the escape test at the paper's settings (the E0 study, and on real images), the
horizon check beside E1, the escape, χ-sweep, saddle and calibration tables, and the
findings that are no claim's verdict. Measures: :mod:`reports.papers.tao2025.measures`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reports.claims import Claim, finished, numeric, span, stand_in_findings
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import calibration_table, deviations, settings
from reports.papers.tao2025.measures import (
    ALG4,
    BASELINE,
    CHANCE,
    CHI_SELECT,
    CHI_SWEEP,
    E1_GAP,
    E1_RULE,
    FIGURES,
    FIGURES_REAL,
    HORIZON,
    HORIZON_TUNING,
    OURS,
    REFERENCES,
    SADDLE,
    SELECTION,
    TEXT,
    data_name,
    fired,
    fired_of,
    identical_pairs,
    is_real,
    is_sosp,
    o1_noise_to_signal,
    of,
    per_pass,
    remark4_threshold,
    run_chi,
    tuned_lr,
    violation,
)
from reports.results import Figure, PaperResults, PaperSections, Provenance, Table

TRIGGER_STUDY = "paper_scale_trigger"
DASHES = ("-", "--", ":", "-.")  # Figures 1-2: one per number of clients m
SETTING_KEYS = ["problem", "calibration", "p_prob_clients", "epsilon", "p_alg_epochs"]


# -- figures ------------------------------------------------------------------------------

def _references(results: PaperResults, eps: float, problem: str) -> list[Line]:
    """Final test accuracy of SGD and DP-SGD at ``eps`` on ``problem``, and chance."""
    runs = finished(results.role_runs(REFERENCES))
    if not runs.empty and "final_test_acc" in runs:
        runs = runs[(runs["problem"] == problem) & ((runs["algorithm"] == "sgd") | np.isclose(
            runs["epsilon"].astype(float), eps))]
    means = runs.groupby("algorithm")["final_test_acc"].mean() if "final_test_acc" in runs \
        else pd.Series(dtype=float)
    return [*(Line(float(acc), f"{name} (reference)", style=style) for (name, acc), style
              in zip(means.items(), ("-.", ":"), strict=False)),
            Line(CHANCE, colour="lightgrey", style="-")]


def _curve_panel(rows: pd.DataFrame, metric: str, title: str, lines: list[Line],
                 legend: bool) -> Panel:
    """Mean ``metric`` per pass, one line per method (its colour) and m (its dash)."""
    ms, colour, series = sorted(rows["m"].unique()), colours([OURS, BASELINE]), []
    for (label, m), grp in rows.groupby(["label", "m"]):
        mean = grp.groupby("epoch")[metric].mean()
        series.append(Series(f"{label}, m={m}", mean.index.to_numpy(), mean, marker="",
                             colour=colour.get(str(label)), line=DASHES[ms.index(m) % 4]))
    return Panel(series, "pass over the data (epoch)", metric.replace("_", " "), title,
                 lines=lines, legend=legend)


def _figure_1_2(results: PaperResults, suite: str, out: Path) -> list[Figure]:
    """Figures 1-2 regenerated per calibration: accuracy (top) and loss (bottom) per ε."""
    curves = results.curves(suite, points=("iterate", "output"))
    if curves.empty or "epoch" not in curves:
        return []
    curves = per_pass(finished(curves))
    figures = []
    for cal, part in curves.assign(m=curves["p_prob_clients"]).groupby("calibration"):
        eps_values, problem = sorted(part["epsilon"].unique()), str(part["problem"].iloc[0])
        panels = [_curve_panel(part[part["epsilon"] == eps], metric, f"ε = {eps:g}",
                               _references(results, float(eps), problem) if top else [],
                               legend=top and i == 0)
                  for metric, top in (("test_acc", True), ("test_loss", False))
                  for i, eps in enumerate(eps_values)]
        name = draw(Plot(panels, columns=len(eps_values), panel_inches=(4, 3.2), dpi=120), out,
                    f"{suite}_{cal}")
        figures.append(Figure(name, TEXT.fill("figures.curves", suite=suite, calibration=cal),
                              results.provenance(results.suite_runs(suite))))
    return figures


def _dimension_figure(results: PaperResults, out: Path) -> list[Figure]:
    """α-SOSP outputs by d over every selection suite (T9 and its control)."""
    every = results.role_runs(SELECTION)
    runs = finished(every)
    if runs.empty or "p_prob_d" not in runs:
        return []
    runs = runs.assign(sosp=is_sosp(runs, float(4 * run_chi(of(runs, OURS)).median())))
    table = runs.groupby(["p_prob_d", "label"])["sosp"].mean().unstack()
    colour = colours(list(table.columns))
    panel = Panel([Series(label, table.index.to_numpy(), table[label], colour=colour[label])
                   for label in table.columns], "dimension d",
                  "fraction of outputs that are 4χ-SOSPs", xscale="log2",
                  lines=[Line(float(remark4_threshold(runs).iloc[0]), "(√m n ε)^(6/13)",
                              style="--", vertical=True)])
    name = draw(Plot([panel], panel_inches=(4.6, 3.4)), out, "selection_by_dimension")
    counts = of(runs, ALG4).groupby("p_prob_d").size()
    return [Figure(name, TEXT.fill("figures.selection", counts=", ".join(
        f"{n} at d = {d:g}" for d, n in counts.items())), results.provenance(every))]


# -- tables and findings ------------------------------------------------------------------

def _trigger_table(results: PaperResults) -> Table | None:
    """Claim E0's arithmetic per cell of the Figures' settings (study paper_scale_trigger)."""
    rows = results.study(TRIGGER_STUDY)
    if rows.empty:
        return None
    table = []
    for (name, eps, m), part in rows.groupby(["data", "epsilon", "clients"], sort=False):
        first = part.iloc[0]
        table.append([str(name), f"{first['d']:,}", f"{eps:g}", f"{m:g}", f"{first['sigma']:.2f}",
                      f"{first['eps_pld']:.2f}", f"{first['noise_formula']:.2f}",
                      span(part["noise_norm"], ".2f"), f"{part['lower_bound'].min():.2f}",
                      f"{first['threshold']:g}", f"{part['b1_max'].min():.0f}"])
    return TEXT.table("trigger", table,
                      Provenance(results.scale, computed=f"study {TRIGGER_STUDY}"))


def _real_runs(results: PaperResults) -> pd.DataFrame:
    runs = finished(results.role_runs(FIGURES, FIGURES_REAL))
    runs = runs[is_real(runs)] if not runs.empty else runs
    return runs.assign(noise=o1_noise_to_signal(runs) * numeric(runs, "p_alg_grad_clip"),
                       limit=3 * run_chi(runs))


def _real_table(results: PaperResults) -> Table | None:
    """The escape test on real images at the paper's settings, per setting."""
    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        (problem, cal, m, eps, passes), (same, pairs) = cell, identical_pairs(part)
        return [data_name(str(problem)), str(cal), f"{m:g}", f"{eps:g}", f"{passes:g}",
                f"{part['sigma'].median():.2f}", f"{part['noise'].median():.3g}",
                f"{part['limit'].median():g}", f"{(part['noise'] / part['limit']).median():,.0f}",
                fired_of(part, OURS), fired_of(part, BASELINE),
                f"{same}/{pairs}" if pairs else "–",
                f"{100 * of(part, OURS)['final_test_acc'].mean():.1f} %"]

    runs = _real_runs(results)
    return None if runs.empty else TEXT.grouped("real", runs, SETTING_KEYS, row,
                                                results.provenance(runs))


def _real_findings(results: PaperResults, stand_ins: Iterable[Claim]
                   ) -> list[dict[str, str]]:
    """The escape test on real images (every run), and ``stand_ins`` (E3, E6) re-judged on
    the stand-in, not counted."""
    runs = _real_runs(results)
    if runs.empty:
        return []
    ratio = runs["noise"] / runs["limit"]
    same, pairs = np.sum([identical_pairs(part) for _, part in runs.groupby(SETTING_KEYS)],
                         axis=0)
    hits = numeric(runs, "diag_triggers").sum() + numeric(runs, "diag_escape_injections").sum()
    names = ", ".join(sorted({data_name(str(p)) for p in runs["problem"]}))
    return [{"kind": TEXT["findings.real.kind"],
             "what": TEXT.fill("findings.real.what", names=names),
             "numbers": TEXT.fill("findings.real.numbers", noise_min=runs["noise"].min(),
                                  noise_max=runs["noise"].max(), limit=runs["limit"].max(),
                                  ratio_min=ratio.min(), ratio_max=ratio.max(), runs=len(runs),
                                  ours=fired_of(runs, OURS), base=fired_of(runs, BASELINE),
                                  same=same, pairs=pairs, reading=TEXT[
                                      "findings.real." + ("silent" if hits == 0 else "fired")])},
            *stand_in_findings(stand_ins, results, lambda r: ~is_real(r),
                               TEXT["findings.real.stand_in"])]


def _gap(part: pd.DataFrame, results: PaperResults) -> str:
    """E1's gap (pp) over ``part`` with the 95 % interval of its own statistic and rule."""
    decision = E1_RULE.decide(E1_GAP.compute(part, results))
    low, high = decision.interval
    return f"{decision.estimate:+.1f}" + (f" [{low:+.1f}, {high:+.1f}]"
                                          if math.isfinite(low) else "")


def _horizon_cells(results: PaperResults) -> pd.DataFrame:
    """The Figures and horizon runs (``judged``) at the m the horizon check ran."""
    long = results.role_runs(HORIZON)
    if long.empty or "final_test_acc" not in long:
        return long
    runs = finished(pd.concat([results.role_runs(FIGURES).assign(judged=FIGURES),
                               long.assign(judged=HORIZON)]))
    return runs[runs["p_prob_clients"].isin(long["p_prob_clients"].unique())]


def _stopped(ours: pd.DataFrame) -> int:
    """Gauss-PSGD runs that ended at the SOSP exit (x̃ certified)."""
    return int((ours["diag_termination"] == "sosp").sum()) if "diag_termination" in ours \
        else 0


def _horizon_table(results: PaperResults) -> Table | None:
    """E1's comparison at the judged horizon and at the longer one, per cell."""
    tuned = {FIGURES: tuned_lr(results), HORIZON: tuned_lr(results, HORIZON_TUNING)}

    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        (eps, m, passes, role), ours = cell, of(part, OURS)
        choice = tuned[str(role)].get(OURS)
        return [f"{eps:g}", f"{m:g}", f"{passes:g}", f"{ours['p_alg_lr'].iloc[0]:g}"
                + (f" (tuned {choice[0]:g})" if choice else " (not tuned)"),
                f"{100 * ours['final_test_acc'].mean():.1f} %",
                f"{100 * of(part, BASELINE)['final_test_acc'].mean():.1f} %",
                _gap(part, results), f"{_stopped(ours)}/{len(ours)}"]

    runs = _horizon_cells(results)
    return None if runs.empty else TEXT.grouped(
        "horizon", runs, ["epsilon", "p_prob_clients", "p_alg_epochs", "judged"], row,
        results.provenance(runs))


def _horizon_finding(results: PaperResults) -> list[dict[str, str]]:
    """The horizon check beside E1's verdict: each cell's gap at the longer horizon."""
    runs = _horizon_cells(results)
    long = runs[runs["judged"] == HORIZON] if not runs.empty else runs
    if long.empty:
        return []
    cells = []
    for (eps, m), part in long.groupby(["epsilon", "p_prob_clients"]):
        ours = of(part, OURS)
        stops = _stopped(ours)
        cells.append(f"ε = {eps:g}, m = {m:g}: {_gap(part, results)} pp" + (
            f" (Gauss-PSGD stopped at the SOSP exit in {stops}/{len(ours)})" if stops else ""))
    passes = ", ".join(f"{p:g}" for p in sorted(long["p_alg_epochs"].unique()))
    return [{"kind": TEXT["findings.horizon.kind"],
             "what": TEXT.fill("findings.horizon.what", passes=passes),
             "numbers": TEXT.fill("findings.horizon.numbers", cells="; ".join(cells))}]


def _escape_table(results: PaperResults) -> Table | None:
    """Gauss-PSGD's escape statistics per (suite, label, ε, calibration), means per run."""
    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        mean = {c: part[f"diag_{c}"].mean() for c in ("triggers", "escape_rounds", "escapes",
                                                      "refreshes", "differences",
                                                      "noise_norm_o1")}
        share = part["diag_escape_steps"] / (part["diag_refreshes"] + part["diag_differences"])
        return [cell[0], str(cell[1]), f"{cell[2]:g}", cell[3], f"{mean['triggers']:.2f}",
                f"{mean['escape_rounds']:.2f}", f"{mean['escapes']:.2f}",
                f"{100 * share.mean():.1f}%",
                f"{mean['refreshes']:.1f} / {mean['differences']:.1f}",
                f"{mean['noise_norm_o1']:.3g}", f"{part['diag_trigger_threshold'].iloc[0]:.3g}",
                ", ".join(f"{k}: {v}" for k, v in part["diag_termination"].value_counts().items())]

    runs = results.runs
    if runs.empty or "diag_triggers" not in runs:
        return None
    ours = finished(runs[runs["algorithm"] == OURS])
    return TEXT.grouped("escape", ours, ["suite", "label", "epsilon", "calibration"], row,
                        results.provenance(ours))


def _chi_table(results: PaperResults) -> Table | None:
    """The χ sweep: how often each method's escape test fires, per (suite, label, χ)."""
    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        (suite, label, scale), ours = cell, part["algorithm"].eq(OURS).all()
        fixed = part["p_alg_chi"].notna().all() if "p_alg_chi" in part else False
        acted = numeric(part, "diag_escapes" if ours else "diag_escape_injections")
        ends = part["diag_termination"].dropna().value_counts() \
            if "diag_termination" in part else pd.Series(dtype=int)
        return [str(suite).removeprefix("tao2025_quick_"), str(label),
                "paper χ = 0.01" if fixed else f"χ = {scale:g}·ψ̂",
                f"{part['chi_used'].median():.3g}",
                f"{numeric(part, 'diag_noise_norm_o1').median():.3g}",
                fired(part, OURS if ours else BASELINE)[1],
                f"{acted.mean():.1f} {'escapes' if ours else 'injections'}",
                ", ".join(f"{k}: {v}" for k, v in ends.items()) or "–",
                f"{100 * part['final_test_acc'].mean():.1f} %"]

    runs = finished(results.role_runs(CHI_SWEEP, CHI_SELECT))
    if runs.empty or "diag_trigger_tests" not in runs:
        return None
    return TEXT.grouped("chi", runs.assign(chi_used=run_chi(runs)),
                        ["suite", "label", "p_alg_chi_scale"], row, results.provenance(runs),
                        dropna=False)


def _saddle_table(results: PaperResults) -> Table | None:
    """Every method's outputs from the strict saddle, judged at Gauss-PSGD's α = 4χ."""
    runs = finished(results.role_runs(SADDLE))
    if runs.empty or "final_lambda_min" not in runs:
        return None
    alpha = float(4 * run_chi(of(runs, OURS)).median())
    runs = runs.assign(sosp=is_sosp(runs, alpha), violation=violation(runs))
    rows = [[str(label), str(len(part)), f"{int(part['sosp'].sum())}/{len(part)}",
             f"{part['final_grad_norm'].mean():.3g}", f"{part['final_lambda_min'].mean():.3g}",
             f"{part['violation'].mean():.3g}"] for label, part in runs.groupby("label")]
    return TEXT.table("saddle", rows, results.provenance(runs), alpha=alpha)


def sections(results: PaperResults, out: Path, *, stand_ins: Iterable[Claim]
             ) -> PaperSections:
    """Figures 1-2 and selection by d; the escape test, χ, saddle and ε tables; findings
    (``stand_ins``: the claims re-judged on the stand-in where real images replace it)."""
    found = PaperSections(settings=settings(results))
    trigger = _trigger_table(results)  # a study: no run needed
    found.tables += [trigger] if trigger else []
    if results.runs.empty:
        return found
    for suite in results.role_suites(FIGURES, FIGURES_REAL, HORIZON):
        found.figures += _figure_1_2(results, suite, out)
    found.figures += _dimension_figure(results, out)
    found.findings += _real_findings(results, stand_ins) + _horizon_finding(results)
    found.tables += [table for table in (
        _real_table(results), _horizon_table(results), _escape_table(results),
        _chi_table(results), _saddle_table(results),
        calibration_table(results, TEXT["tables.calibration"])) if table]
    found.deviations = deviations([(name, f"algorithms.{name}", "Deviations")
                                   for name in (OURS, "ada_dp_spider", BASELINE)])
    return found
