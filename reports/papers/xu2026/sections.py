"""xu2026's page: Table 2 regenerated (judged, untuned and literal variants), why it differs
from the published one, the instance, the data-dependence study, the calibrations, the rate
check, Figure 1 regenerated, the σ sweep and the rate figure."""

from __future__ import annotations

import math
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.studies.xu2026 import KEY, LITERAL, OURS
from reports.claims import DIVERGENCE_FACTOR, finished
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import deviations, format_mean_se, mean_se_cell, per_suite, rates_table, settings
from reports.papers.xu2026.measures import (
    DATA_SHARE,
    LEFT_SADDLE,
    METRICS,
    MIN_R2,
    RATE,
    TEXT,
    early_stops,
    eps_bar,
    last_iterates,
    noise_to_signal,
)
from reports.results import Figure, PaperResults, PaperSections, Provenance, Table
from reports.scaling import ScalingFit, fit_exponents


def _computed(results: PaperResults, key: str) -> Provenance:
    """A study's provenance: the scale and what computed it (the text at ``key``)."""
    return Provenance(results.scale, computed=TEXT[key])


# -- tables ----------------------------------------------------------------------------------

def _table2(results: PaperResults, role: str = "table2") -> list[Table]:
    """Table 2 regenerated per (scale, calibration): each method at x_T and at its output,
    mean ± s.e. over the runs that did not diverge, with the diverged runs and early stops."""
    runs = last_iterates(results.role_runs(role), results)
    if runs.empty or "last_step" not in runs:
        return []
    provenance, runs = results.provenance(runs), finished(runs, include_diverged=True)
    keys, cols = ["p_prob_x_star_norm", "calibration", "label"], [
        f"{w}_{m}" for w in ("last", "final") for m, _ in METRICS]
    clean, (early, _) = finished(runs).groupby(keys), early_stops(runs)
    diverged = runs[runs["diverged"].astype(bool)].groupby(keys).size() \
        if "diverged" in runs else pd.Series(dtype=int)
    stats = pd.concat([runs.groupby(keys)[["sigma", "epsilon", "eps_advanced", "eps_pld"]].first(),
                       clean[cols].mean(), clean[cols].sem().add_suffix("_se"),
                       clean.size().rename("runs"), diverged.rename("diverged"),
                       early.groupby(keys).size().rename("early"),
                       early.groupby(keys)["last_step"].min().rename("first_stop")],
                      axis=1).fillna({"runs": 0, "diverged": 0, "early": 0})

    def row(label: str, r: pd.Series) -> list[str]:
        cells = [format_mean_se(r[c], r[f"{c}_se"]) if r["runs"] else "diverged" for c in
                 (*cols[:3], "final_loss", "final_grad_norm")]
        return [label, f"{r['sigma']:.4g}", *cells, f"{r['early']:g} (from t = "
                f"{r['first_stop']:g})" if r["early"] else "–", f"{r['eps_advanced']:.3g}",
                f"{r['eps_pld']:.3g}", f"{r['runs']:g}", f"{r['diverged']:g}"]

    tables = []
    for (scale, cal), part in stats.groupby(level=[0, 1]):
        eps = part["epsilon"].astype(float)
        private = eps[np.isfinite(eps)]
        variant = "inregime" if role == "table2" and len(private) and private.max() > 2 \
            else role
        tables.append(TEXT.table("table2", [
            row(str(key[2]), r) for key, r in part.iterrows() if isinstance(key, tuple)],
            provenance, scale=scale, cal=cal,
            level=f"ε = {private.max():g}" if len(private) else "σ → 0",
            variant=TEXT[f"tables.table2.variants.{variant}"], divergence=DIVERGENCE_FACTOR))
    return tables


def _calibration(results: PaperResults) -> Table | None:
    runs = finished(results.role_runs("table2"))
    if runs.empty:
        return None
    runs = runs[runs["epsilon"].apply(math.isfinite)]

    def pair(r: pd.Series, kind: str) -> str:
        return (f"{r[f'{kind}_refresh']:.3g} / {r[f'{kind}_increment']:.3g}"
                if pd.notna(r.get(f"{kind}_refresh")) else "–")

    return TEXT.table("calibration", [
        [str(label), f"{r['epsilon']:g}", str(cal), f"{r['sigma']:.4g}", pair(r, "plan_std"),
         pair(r, "plan_std_alg3"), f"{r['eps_advanced']:.3g}", f"{r['eps_pld']:.3g}"]
        for (label, _, cal), part in runs.groupby(["label", "epsilon", "calibration"])
        for r in [part.iloc[0]]], results.provenance(runs))


def _scale_table(results: PaperResults) -> Table | None:
    """Φ, ‖∇Φ‖ at x₀ and the spectrum of ∇²Φ(0) per X* scale (the instance study)."""
    study = results.study("instance")
    if study.empty:
        return None
    first = study[study["data_seed"] == study["data_seed"].min()]
    return TEXT.table("scale", [
        ["raw factors" if r["scale"] == "raw" else r["scale"], f"{r['x_star_fro']:.3g}",
         f"{r['phi_x0']:.4g}", f"{r['grad_x0']:.3g}",
         f"{r['lambda_min']:.4g} (×{r['multiplicity']:g})", f"{r['lambda_max']:.4g}",
         f"{r['clipped_y']:.0%} (median {r['median_y']:.3g})",
         f"{r['clipped_x']:.0%} (median {r['median_x']:.3g})"] for _, r in first.iterrows()],
        _computed(results, "tables.scale.computed"))


def _data_table(results: PaperResults) -> Table | None:
    study = results.study("data")
    if study.empty or "variant" not in study:
        return None
    rows = []
    for (variant, scale, eps, cal, label), part in study.groupby(
            ["variant", "x_star_norm", "epsilon", "calibration", "label"], sort=False):
        share = part["influence"].astype(float)
        spread = f" ({share.min():.2g}–{share.max():.2g})" if len(part) > 1 else ""
        rows.append([str(variant), str(label), f"{scale:g}", f"{eps:g} ({cal})",
                     f"{part['steps'].max():g}", f"{len(part)}", f"{share.mean():.2g}{spread}",
                     f"{part['ratio'].mean():.4g}", f"{part['ratio_zeros'].mean():.4g}",
                     "yes" if share.mean() >= DATA_SHARE else "NO"])
    return TEXT.table("data", rows, _computed(results, "tables.data.computed"))


def _why_table(results: PaperResults) -> Table | None:
    """Why our Table 2 differs from the paper's: each cause with the number that measures it."""
    runs = last_iterates(finished(results.role_runs("table2", "table2_literal")), results)
    if runs.empty or "phi_ratio" not in runs:
        return None
    ratio, literal = runs["phi_ratio"], runs["suite"].str.contains("literal")

    def mean(in_literal: bool, label: str) -> str:
        sel = ratio[(literal == in_literal) & (runs["label"] == label)]
        return f"{sel.mean():.3g}" if len(sel) else "not run"

    def row(key: str, **values: Any) -> list[str]:
        return [TEXT[f"tables.why.{key}.cause"], TEXT.fill(f"tables.why.{key}.measured", **values)]

    reference = mean(False, "dp_rgda_nonprivate")
    rows = [row("literal", literal=mean(True, "dp_rgda_nonprivate"), ours=reference),
            row("noise", ratio=noise_to_signal(results), private=mean(False, "dp_rgda"),
                reference=reference)]
    if len(sigma := results.study("sigma")):
        ours = sigma[sigma["label"] == OURS]
        means = ours.groupby("sigma")["ratio"].mean()
        left = means[means <= LEFT_SADDLE]
        rows.append(row("sigma", largest=left.index.max() if len(left) else "none",
                        advanced=ours["sigma_advanced"].iloc[0], pld=ours["sigma_pld"].iloc[0]))
    eps = runs["epsilon"].astype(float)
    private = np.isfinite(eps) & ~runs["suite"].str.contains("literal|untuned")
    levels = [(level, ratio[mask].groupby(runs.loc[mask, "label"]).mean()) for level, mask in (
        ("App. D (2, advanced)", private & (eps <= 2)), ("in regime", private & (eps > 2)))]
    rows.append(row("level", parts="; ".join(
        f"{level}: " + ", ".join(f"{k} {v:.3g}" for k, v in means.items())
        for level, means in levels if len(means))))
    data = results.study("data")
    if len(data) and "variant" in data:
        shares = data[data["variant"] == LITERAL].groupby("label")["influence"].mean()
        rows.append(row("data", shares=", ".join(f"{k} {v:.2g}" for k, v in shares.items())))
    early, labels = early_stops(runs)
    rows += [row("early", early=len(early), runs=len(runs), labels=labels,
                 first=early["last_step"].min() if len(early) else "–"), row("scale")]
    return TEXT.table("why", rows, results.provenance(runs))


def _rate_fit(results: PaperResults) -> tuple[pd.DataFrame, ScalingFit | None]:
    """The finished rate runs with ε̄ and the log-log least-squares fit of ‖∇Φ(x_out)‖ in ε̄
    (slope, its 95 % bootstrap interval, R²; None below three runs)."""
    pts = finished(results.role_runs("rate"))
    if len(pts) < 3:
        return pts, None
    pts = pts.assign(eps_bar=eps_bar(pts))
    return pts, fit_exponents(pts, "final_grad_norm", ["eps_bar"])


def _rate_table(results: PaperResults) -> Table | None:
    pts, fit = _rate_fit(results)
    if fit is None:
        return None
    rows = [[f"{n:g}", f"{e:g}", f"{g['eps_bar'].iloc[0]:.3g}", f"{g['steps'].iloc[0]:g}",
             f"{g['p_alg_theory_alpha'].iloc[0] * g['eps_bar'].iloc[0] ** RATE:.3g}",
             mean_se_cell(g, "grad_norm"), f"{g['final_lambda_min'].mean():.3g}",
             f"{(g['diag_certificates'] > 0).mean():.2f}"]
            for (n, e), g in pts.groupby(["n", "epsilon"])]
    (low, high), r2 = fit.intervals["eps_bar"], fit.r2
    fit_text = TEXT.fill("tables.rate.fit" if r2 >= MIN_R2 else "tables.rate.no_fit",
                         slope=fit.exponents["eps_bar"], low=low, high=high, r2=r2)
    return TEXT.table("rate", rows, results.provenance(pts), fit=fit_text, declared=RATE)


# -- figures ---------------------------------------------------------------------------------

def _figure1(results: PaperResults, suite: str, clean: pd.DataFrame, out: Path
             ) -> list[Figure]:
    """Figure 1 regenerated for a Table 2 suite (its finished runs ``clean``), per scale and
    calibration: Φ, ‖∇Φ‖, λ_min along t."""
    curves = results.curves(suite)
    if curves.empty:
        return []
    curves = curves[curves["run_id"].isin(clean["run_id"])]
    bases = curves["label"].astype(str).str.removesuffix("_nonprivate")
    colour = colours(bases, dict(zip(bases, curves["algorithm"], strict=True)))
    figures = []
    for (scale, cal), part in curves.groupby(["p_prob_x_star_norm", "calibration"]):
        means = {str(label): grp.groupby("step")[[m for m, _ in METRICS]].mean()
                 for label, grp in part.groupby("label")}
        panels = [Panel([Series(label, mean.index.to_numpy(), mean[metric], marker="",
                                colour=colour[label.removesuffix("_nonprivate")],
                                line="--" if label.endswith("_nonprivate") else "-")
                         for label, mean in means.items()],
                        xlabel="t", title=name.replace("x_T", "x_t"),
                        yscale="log" if i < 2 else "linear", legend=i == 0)
                  for i, (metric, name) in enumerate(METRICS)]
        name = draw(Plot(panels, columns=3, panel_inches=(13 / 3, 3.6), dpi=120), out,
                    f"figure1_scale{scale:g}_{cal}")
        figures.append(Figure(name, TEXT.fill("figures.figure1", scale=scale, cal=cal),
                              results.provenance(clean[clean["run_id"].isin(part["run_id"])])))
    return figures


def _sigma_figure(results: PaperResults, out: Path) -> list[Figure]:
    """Φ(x_T)/Φ(x₀) against σ (study 'sigma'), with each method's calibrated σ."""
    study = results.study("sigma")
    if study.empty:
        return []
    series, lines = [], [Line(LEFT_SADDLE, style="-")]
    for (label, part), colour in zip(study.groupby("label"), ("C0", "C1", "C2", "C3"),
                                     strict=False):
        mean = part.groupby("sigma")["ratio"].mean()
        series.append(Series(str(label), mean.index.to_numpy(), mean.to_numpy(), colour=colour))
        lines += [Line(float(part[f"sigma_{cal}"].iloc[0]), colour=colour, style=style,
                       vertical=True) for cal, style in (("advanced", "--"), ("pld", ":"))]
    plot = Plot([Panel(series, "noise multiplier σ", "Φ(x_T)/Φ(x₀)", xscale="log",
                       yscale="log", lines=lines)], panel_inches=(5.2, 3.4))
    return [Figure(draw(plot, out, "xu2026_sigma_sweep"), TEXT["figures.sigma"],
                   _computed(results, "figures.sigma_computed"))]


def _rate_figure(results: PaperResults, out: Path) -> list[Figure]:
    """‖∇Φ(x_out)‖ against ε̄ (log-log) per n, the fit where R² ≥ ``MIN_R2`` and slope 2/3."""
    pts, fit = _rate_fit(results)
    if fit is None:
        return []
    series = [Series(f"n = {n:g}", part["eps_bar"], part["final_grad_norm"], line="")
              for n, part in pts.groupby("n")]
    grid = np.geomspace(pts["eps_bar"].min(), pts["eps_bar"].max(), 20)
    slope, r2 = fit.exponents["eps_bar"], fit.r2
    if r2 >= MIN_R2:
        series.append(Series(f"fit, slope {slope:.2f} (R² {r2:.2f})", grid,
                             np.exp(fit.intercept) * grid ** slope, colour="k", marker=""))
    x, y = np.log(pts["eps_bar"]), np.log(pts["final_grad_norm"])
    series.append(Series("slope 2/3 (upper bound)", grid, float(np.exp(
        y.mean() - RATE * x.mean())) * grid ** RATE, colour="k", marker="", line="--"))
    plot = Plot([Panel(series, "ε̄ = √(d log(1/δ))/(nε)", "‖∇Φ(x_out)‖", xscale="log",
                       yscale="log")])
    stems = results.role_suites("rate")
    caption = TEXT.fill("figures.rate", r2=r2, drawn="" if r2 >= MIN_R2 else TEXT["figures.no_fit"])
    return [Figure(draw(plot, out, stems[0] if stems else "rate_check"), caption,
                   results.provenance(pts))]


def sections(results: PaperResults, out: Path) -> PaperSections:
    page = PaperSections(settings=settings(results))
    page.tables = [t for t in (_why_table(results), rates_table(KEY), _scale_table(results),
                               *_table2(results), *_table2(results, "table2_untuned"),
                               *_table2(results, "table2_literal"),
                               _data_table(results), _calibration(results),
                               _rate_table(results)) if t]
    if not results.runs.empty:
        figure1 = per_suite(results, "table2", partial(_figure1, out=out))
        page.figures = [*chain.from_iterable(figure1), *_sigma_figure(results, out),
                        *_rate_figure(results, out)]
    page.deviations = deviations([
        ("dp_rgda", "algorithms.dp_rgda", "Resolutions of the paper's ambiguities"),
        *((name, f"algorithms.{name}", "Deviations")
          for name in ("dp_sgda", "private_diff", "ada_dp_spider", "dp_spider_at"))])
    return page
