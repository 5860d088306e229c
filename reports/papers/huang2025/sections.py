"""huang2025's page sections: Figure 1 and Table 1 regenerated (each as a figure and a
table), the Table 1 pilot, PriSMA's ablation, Table 1's own evidence, the Theorem 3 and
Lemma D.2 studies, Corollary 1's σ̂ at the CNN setting and the paper's calibration beside the
accountant's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from bench.studies.huang2025 import corollary_sigma, group_privacy
from reports.claims import Claim, difference, finished, stand_in_findings
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import (
    calibration_table,
    deviations,
    final_stats,
    format_mean_se,
    mean_se,
    mean_se_cell,
    median_range,
    per_suite,
    settings,
)
from reports.papers.huang2025 import measures as m
from reports.papers.huang2025.measures import METHODS, NAMES, PAPER_STRICTEST, TEXT
from reports.results import Figure, PaperResults, PaperSections, Provenance, Table
from reports.rules import as_float, mean_difference

ABLATIONS = ("prisma", "prisma_no_c2", "prisma_no_c3", "prisma_gamma1")
COROLLARY_SIGMA = {4: 11.135, 8: 5.965, 16: 3.345, 32: 1.986}  # notes §7 item 10
CHANCE = 0.1  # 10 classes (digits and CIFAR-10)
TABLE1_METRICS = (("test_acc", 100), ("test_loss", 1))  # (metric, scale): accuracy in %


def _figure1(results: PaperResults, suite: str, runs: pd.DataFrame, out: Path) -> Figure | None:
    """Figure 1: final ‖∇F(x_T)‖ against N, mean ± s.e. per method (log y axis)."""
    frame, colour = runs.assign(N=m.per_client_n(runs)), colours(list(METHODS))
    stats = {str(label): t for label, part in frame.groupby("label")
             if len(t := final_stats(part, "grad_norm", by="N"))}
    if not stats:
        return None
    panel = Panel([Series(NAMES.get(label, label), t["N"], t["mean"], t["se"], colour.get(label))
                   for label, t in stats.items()], "N (samples per client)", "‖∇F(x_T)‖",
                  "non-convex regularised least squares, ε = 1", yscale="log",
                  xticks=sorted({n for t in stats.values() for n in t["N"]}))
    dup = m.dup_factor(runs)
    shown = "" if dup is None else (
        TEXT.fill("figures.fig1.duplicated", SHOWN=m.copies(dup), MAX=float(dup.max()))
        if float(dup.max()) > 1 else TEXT["figures.fig1.fresh"])
    return Figure(draw(Plot([panel]), out, f"fig1_{suite}"),
                  " ".join(t for t in (TEXT["figures.fig1.caption"], shown) if t),
                  results.provenance(runs))


def _reference(results: PaperResults, problem: str) -> tuple[float, float, int]:
    """Non-private SGD's final test accuracy (mean, s.e., runs) on ``problem``."""
    ref = m.done(results, "reference")
    ref = ref[ref["problem"] == problem] if not ref.empty else ref
    if ref.empty or "final_test_acc" not in ref:
        return math.nan, math.nan, 0
    return (*mean_se(ref["final_test_acc"].astype(float)), len(ref))


def _table1_figure(results: PaperResults, suite: str, runs: pd.DataFrame, out: Path
                   ) -> Figure | None:
    """Test accuracy against ε for both methods, with non-private SGD and chance marked."""
    if "final_test_acc" not in runs:
        return None
    colour = colours([*METHODS, "sgd"])
    stats = {label: final_stats(runs[runs["label"] == label], "test_acc") for label in METHODS}
    mean, se, count = _reference(results, str(runs["problem"].iloc[0]))
    sgd = [Line(100 * mean, NAMES["sgd"], colour.get("sgd"), "-", half_band=100 * se)]
    panel = Panel([Series(NAMES[label], t["epsilon"], 100 * t["mean"], 100 * t["se"],
                          colour.get(label)) for label, t in stats.items()],
                  "ε", "test accuracy (%)", xscale="log2",
                  lines=[*(sgd if count else []), Line(100 * CHANCE, "chance")])
    return Figure(draw(Plot([panel]), out, f"table1_{suite}"), TEXT["figures.table1.caption"],
                  results.provenance(runs))


def _table1(results: PaperResults, suite: str, runs: pd.DataFrame) -> Table:
    """Table 1: mean ± s.e. per method and ε, with the paired gaps."""
    rows = []
    for eps in sorted(set(runs["epsilon"])):
        at = runs[np.isclose(runs["epsilon"].astype(float), float(eps))]
        row = [f"{float(eps):g}", *(mean_se_cell(at[at["label"] == m], metric, scale)
                                    for m in METHODS for metric, scale in TABLE1_METRICS)]
        for metric, scale in TABLE1_METRICS:
            sample = difference(metric, *METHODS, scale=scale).compute(finished(at), results)
            diff = mean_difference(sample.values, sample.reference)[0]
            row.append("–" if math.isnan(diff) else f"{diff:+.3g}")
        rows.append(row)
    mean, se, count = _reference(results, str(runs["problem"].iloc[0]))
    reference = (f"{format_mean_se(100 * mean, 100 * se)} % test accuracy ({count} runs)"
                 if count else "– (not run)")
    return TEXT.table("table1", rows, results.provenance(runs), SUITE=suite,
                      PROBLEM=runs["problem"].iloc[0], REFERENCE=reference)


def _show_group(k: float, eps: float, delta: float) -> str:
    """A person's group-privacy (ε, δ) when their record appears ``k`` times."""
    group_eps, group_delta = group_privacy(k, eps, delta)
    return f"{group_eps:g} (δ = {group_delta:.2g})"


def _figure1_table(results: PaperResults, suite: str, runs: pd.DataFrame) -> Table:
    """Figure 1's numbers per N, with the per-record ε and a person's group-privacy ε, for
    our runs and for the paper's duplication scheme (2,000 records copied N/2,000 times)."""
    runs = runs.assign(N=m.per_client_n(runs), copies=m.dup_factor(runs))
    rows = []
    for key, part in runs.groupby("N"):
        n = as_float(key)
        eps, delta = float(part["epsilon"].iloc[0]), float(part["delta"].iloc[0])
        k = float(part["copies"].max())
        rows.append([f"{n:g}", f"{eps:g}", f"{k:g}", _show_group(k, eps, delta),
                     f"{n / 2000:g}", _show_group(n / 2000, eps, delta),
                     *(mean_se_cell(part[part["label"] == m], "grad_norm", by="N")
                       for m in METHODS)])
    return TEXT.table("figure1", rows, results.provenance(runs), SUITE=suite)


def _ablation_table(results: PaperResults, suite: str, runs: pd.DataFrame) -> Table:
    """PriSMA against itself without each part: final ‖∇F‖, Δ₁, σ̂Δ₁, largest step / ηC₂."""
    rows = []
    for label in [lab for lab in ABLATIONS if lab in set(runs["label"])]:
        part = runs[runs["label"] == label]
        ratio = part["diag_max_step"].astype(float) / part["diag_step_bound"].astype(float)
        rows.append([NAMES[label], format_mean_se(*mean_se(part["final_grad_norm"])),
                     median_range(part["plan_sensitivity"].astype(float)),
                     median_range(part["plan_sigma_later"].astype(float)),
                     median_range(ratio), f"{len(part)}"])
    return TEXT.table("ablation", rows, results.provenance(runs), SUITE=suite)


def _pilot_table(results: PaperResults) -> list[Table]:
    """The pilot's best mean accuracy per swept value and ε, its choice, and what Table 1 uses."""
    scores = m.pilot_scores(results)
    if scores.empty:
        return []
    chosen = m.pilot_choice(results)
    table1 = m.done(results, "table1")
    eps = sorted(set(scores["epsilon"]))
    rows = []
    for (method, param, key), part in scores.groupby(["method", "param", "value"]):
        value, by_eps = as_float(key), part.set_index("epsilon")["score"]
        used = table1[table1["algorithm"] == method].get(f"p_alg_{param}",
                                                         pd.Series(dtype=float))
        rows.append([NAMES[str(method)], str(param), f"{value:g}",
                     *(f"{100 * by_eps[e]:.1f}" if e in by_eps else "–" for e in eps),
                     "chosen" if np.isclose(chosen.get((str(method), str(param)), math.nan),
                                            value) else "",
                     "yes" if np.isclose(used.astype(float), value).any() else ""])
    table = TEXT.table("pilot", rows, results.provenance(results.role_runs("pilot")))
    head, tail = table["columns"][:3], table["columns"][3:]
    return [{**table, "columns": [*head, *(f"acc % at ε = {e:g}" for e in eps), *tail]}]


def _evidence_table(scale: str) -> Table:
    """Table 1's own gaps and their z, from its published means ± s.e."""
    rows = [[f"{e:g}", m.show_z(m.paper_gap("test_acc", e), " pp"),
             m.show_z(m.paper_gap("test_loss", e)),
             "–" if e == PAPER_STRICTEST else m.show_z(m.paper_gain_drop(e), " pp")]
            for e in sorted({k[2] for k in m.published_cells()})]
    return TEXT.table("evidence", rows,
                      Provenance(scale, computed="reports/published/huang2025.yaml"))


def _study_tables(results: PaperResults) -> list[Table]:
    """The Theorem 3 and Lemma D.2 studies (bench/studies/huang2025.py), where stored."""
    tables = []
    theorem, lemma = results.study("theorem3"), results.study("lemma_d2")
    if not theorem.empty:
        tables.append(TEXT.table("theorem3", [
            [f"{r.epsilon:g}", f"{r.delta:g}", f"{r.n}", f"{r.batch_size}", f"{r.steps}",
             f"{r.sigma:.4g}", f"{r.plan_condition_18_rhs:.3g} vs "
             f"{r.plan_condition_18_alpha:.3g}", f"{r.eps_pld:.4g}", f"{r.eps_rdp:.4g}"]
            for r in theorem.itertuples()], Provenance(results.scale, computed="study theorem3")))
    if not lemma.empty:
        rows = [[form, f"{int(lemma[ok].sum())}/{len(lemma)}",
                 f"{float((lemma['lhs'] ** power / lemma['rhs']).max()):.3g}"]
                for form, ok, power in (("as printed: ‖·‖ ≤ rhs", "printed_ok", 1),
                                        ("squared: ‖·‖² ≤ rhs", "squared_ok", 2))]
        tables.append(TEXT.table("lemma_d2", rows,
                                 Provenance(results.scale, computed="study lemma_d2"),
                                 COUNT=len(lemma)))
    return tables


def _sigma_ratio(r: pd.Series) -> str:
    """PriSMA's σ₁ over DPSGD-GC's σ at the same (ε, δ, T, b, N, C₁): γ + (1−γ)C₃/C₁."""
    if r.get("algorithm") != "prisma" or pd.isna(r.get("plan_sigma_later")):
        return "–"
    other = r["sigma"] * 2 * r["p_alg_clip1"] / r["batch_size"]
    return f"{r['plan_sigma_later'] / other:.3g}"


def _condition(r: pd.Series) -> str:
    """Theorem 3's condition (18) at a calibrated setting: holds or fails, rhs vs α."""
    if pd.isna(r.get("plan_condition_18_rhs")):
        return "–"
    holds = "holds" if r["plan_condition_18_rhs"] >= r["plan_condition_18_alpha"] else "fails"
    return f"{holds}: {r['plan_condition_18_rhs']:.3g} vs α = {r['plan_condition_18_alpha']:.3g}"


def sections(results: PaperResults, out: Path, stand_in: Sequence[Claim] = ()) -> PaperSections:
    """The page's sections; ``stand_in``: the claims re-judged on the digits stand-in where
    real images replace it as their judged data (reported beside, not counted)."""
    page = PaperSections(settings=settings(results) if len(results.runs) else [])
    if len(results.runs):
        if m.is_real(m.done(results, "table1")).any():
            page.findings += stand_in_findings(stand_in, results, lambda r: ~m.is_real(r),
                                               TEXT["findings.stand_in"])
        page.figures = (per_suite(results, "fig1", partial(_figure1, out=out), done=False)
                        + per_suite(results, "table1", partial(_table1_figure, out=out)))
        page.tables += (per_suite(results, "fig1", _figure1_table)
                        + per_suite(results, "table1", _table1, done=False)
                        + _pilot_table(results) + per_suite(results, "ablation", _ablation_table))
    page.tables.append(_evidence_table(results.scale))
    page.tables += _study_tables(results)
    page.tables.append(TEXT.table(
        "sigma", [[f"{e:g}", f"{corollary_sigma(e):.4f}", f"{v:.3f}"]
                  for e, v in COROLLARY_SIGMA.items()],
        Provenance(results.scale, computed="computed by prisma.paper_sigma")))
    calibration = calibration_table(results, TEXT["tables.calibration.note"],
                                    extra=[("condition (18)", _condition),
                                           ("σ₁ / σ DPSGD-GC", _sigma_ratio)])
    page.tables += [calibration] if calibration else []
    page.deviations = deviations([("prisma / dpsgd_gc", "algorithms.prisma", "Deviations")])
    return page
