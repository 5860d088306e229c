"""liu2024's page: "why our results differ", the rate table, E1–E4's tables and figures (E1
and E4(i) from their studies) and the calibration table."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.studies.liu2024 import trials_for
from reports.claims import numeric, span
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import (
    calibration_table,
    deviations,
    format_mean_se,
    mean_se,
    rates_table,
    settings,
)
from reports.papers.liu2024 import measures as m
from reports.papers.liu2024.measures import E1, E4I, SAMPLES, T_CERT, TEXT
from reports.results import Figure, PaperResults, PaperSections, Provenance, Table


def _summary(values: pd.Series) -> str:
    return format_mean_se(*mean_se(values))


def _number(value: Any, spec: str) -> str:
    value = float(value)
    return format(value, spec) if math.isfinite(value) else ("∞" if value > 0 else "–")


def _why(results: PaperResults) -> Table:
    """"Why our results differ from the paper's": each cause once, with its numbers."""
    def theorem_batches(results: PaperResults) -> str:
        return "; ".join(f"τ {tau}: {m.horizon_note(g)}"
                         for tau, g in m.honest(results).groupby("p_alg_tau"))

    def tau(results: PaperResults) -> str:
        return "; ".join(f"{m.tau_name(label)}, ε = {e:g}: τ {span(g['diag_tau'], 'g')}, "
                         f"σ {span(g['sigma'])}"
                         for (label, e), g in m.spider(results, "e3").groupby(["label", "epsilon"]))

    def data_cap(results: PaperResults) -> str:
        parts = []
        for role in ("e3", "e3_chain", "e4"):
            runs = m.done(results, role)
            if len(runs):
                fixed = numeric(runs[m.censored(runs)], SAMPLES)
                parts.append(f"{role.upper()}: {len(fixed)}/{len(runs)} runs censored"
                             + (f" (N ≥ {fixed.min():.3g})" if len(fixed) else ""))
        return "; ".join(parts)

    def measured(how: Callable[[PaperResults], str]) -> str:
        try:
            return how(results)
        except (KeyError, ValueError, IndexError) as exc:
            return f"not recorded ({type(exc).__name__})"

    measures = {"sigma": m.theorem_sigma, "honest": theorem_batches, "spent": m.spent_share,
                "fosp": m.fosp_at_saddle, "chain": m.chain_steps, "privacy": m.e3_privacy,
                "tau": tau, "censored": data_cap}
    return TEXT.table("why", [[TEXT[f"tables.why_rows.{key}.cause"], measured(how),
                               TEXT[f"tables.why_rows.{key}.effect"]]
                              for key, how in measures.items()],
                      results.provenance(results.runs))


def _study_provenance(results: PaperResults, name: str) -> Provenance:
    return Provenance(results.scale, computed=TEXT.fill(
        "tables.study", name=name, scale=results.scale, trials=trials_for(results.scale)))


def _e1(results: PaperResults, out: Path) -> tuple[list[Table], list[Figure]]:
    trials = results.study(E1)
    if trials.empty:
        return [], []
    study, provenance = m.escape_summary(trials), _study_provenance(results, E1)
    rows = [[f"{r['d']}", f"{r['ratio']:g}", str(r["anchor"]), f"{r['escape_rate']:.3f}",
             _number(r["steps_mean"], ".1f"), _number(r["steps_predicted"], ".1f"),
             f"{r['horizon']}", _number(r["decrease_min"], ".4f"), f"{r['phi']:.4f}"]
            for r in study.to_dict("records")]
    colour = colours([str(d) for d in study["d"].unique()])
    series = [Series(f"d = {d}, {anchor}", part["ratio"].tolist(), part["escape_rate"].tolist(),
                     colour=colour[str(d)], line="-" if anchor == "saddle" else "--")
              for (d, anchor), part in study.groupby(["d", "anchor"])]
    plot = Plot([Panel(series, "λ / √(ρα)", "P(escape within Γ)",
                       lines=(Line(1.0, style="-", vertical=True),))], panel_inches=(4.8, 3.4))
    return ([TEXT.table("e1", rows, provenance, trials=int(study["trials"].iloc[0]))],
            [Figure(draw(plot, out, "e1_escape"), TEXT["tables.e1.caption"], provenance)])


def _e2(results: PaperResults) -> list[Table]:
    runs = m.e2_outputs(results)
    if runs.empty:
        return []
    alpha = m.e2_alpha(results)
    runs = runs.assign(sosp=m.sosp(runs, alpha),
                       saddle=runs["final_lambda_min"] < m.curvature_floor(runs, alpha))
    table = runs.groupby(["p_prob_lam", "output", "label"]).agg(
        sosp=("sosp", "mean"), saddle=("saddle", "mean"), grad=("final_grad_norm", "mean"),
        lam=("final_lambda_min", "mean"), runs=("sosp", "size"), planned=("epsilon", "max"),
        spent=("eps_pld", "max"))
    rows = [[f"{key[0]:g}", str(key[2]), str(key[1]), f"{r['sosp']:.2f}", f"{r['saddle']:.2f}",
             f"{r['grad']:.3g}", f"{r['lam']:.3g}", f"{r['planned']:g}", f"{r['spent']:.3g}",
             f"{r['runs']:g}"]
            for key, r in table.iterrows() if isinstance(key, tuple)]
    return [TEXT.table("e2", rows, results.provenance(runs), alpha=alpha)]


def _e3(results: PaperResults, out: Path) -> tuple[list[Table], list[Figure]]:
    runs = pd.concat([m.done(results, role) for role in ("e3", "e3_chain")], ignore_index=True)
    if runs.empty:
        return [], []
    runs = runs.assign(N=numeric(runs, SAMPLES), alpha=runs["p_alg_alpha"],
                       tau=runs["label"].map(m.tau_name))
    rows = []
    for (problem, tau, alpha, eps), group in runs.groupby(["problem", "tau", "alpha", "epsilon"]):
        ok = group[m.certified(group)]
        rows.append([str(problem), str(tau), f"{alpha:g}", f"{eps:g}", m.links(group.iloc[0]),
                     f"{group['eps_pld'].max():.3g}", _summary(ok["N"]), _summary(ok[T_CERT]),
                     f"{m.t_thm(group).iloc[0]:g}", f"{len(ok)}/{len(group)}"])
    table, ok = TEXT.table("e3", rows, results.provenance(runs)), runs[m.certified(runs)]
    if ok.empty:
        return [table], []
    series = [Series(f"{problem}, {tau}, ε = {e:g}", mean.index.tolist(), mean.tolist())
              for (problem, tau, e), part in ok.groupby(["problem", "tau", "epsilon"])
              for mean in [part.groupby("alpha")["N"].mean()]]
    grid = np.geomspace(ok["alpha"].min(), ok["alpha"].max(), 10)
    anchor = float(ok["N"].median() * ok["alpha"].median() ** 2)
    guide = Series("slope −2", grid.tolist(), (anchor * grid**-2.0).tolist(), colour="k",
                   marker="", line="--", width=0.8)
    plot = Plot([Panel([*series, guide], "α", "samples to the first certificate", xscale="log",
                       yscale="log")], panel_inches=(4.8, 3.4))
    return [table], [Figure(draw(plot, out, "e3_sample_complexity"), TEXT["tables.e3.caption"],
                            results.provenance(runs))]


def _e4(results: PaperResults, out: Path) -> tuple[list[Table], list[Figure]]:
    """E4's table, and E4(i)'s figure from its study."""
    runs, tables, figures = m.done(results, "e4"), [], []
    if len(runs):
        runs = runs.assign(N=numeric(runs, SAMPLES), certified=m.certified(runs))
        rows = [[str(label), str(cal), _summary(g["N"]), f"{g['certified'].mean():.2f}",
                 _summary(g["final_grad_norm"]), _summary(g["final_lambda_min"]),
                 f"{g['epsilon'].iloc[0]:g}", f"{g['eps_pld'].max():.3g}"]
                for (label, cal), g in runs.groupby(["label", "calibration"])]
        tables.append(TEXT.table("e4", rows, results.provenance(runs)))
    if len(trials := results.study(E4I)):
        growth = m.noise_summary(trials)
        plot = Plot([Panel([Series(kind, growth["leaf"].tolist(), growth[kind].tolist(),
                                   marker="") for kind in ("tree", "gaussian")],
                           "leaves since the last refresh", "mean ‖prefix-sum noise‖")])
        figures.append(Figure(draw(plot, out, "e4_noise_growth"), TEXT["tables.e4i.caption"],
                              _study_provenance(results, E4I)))
    return tables, figures


def sections(results: PaperResults, out: Path) -> PaperSections:
    """The page's figures and tables: the rate table, E1–E4 and the calibration table."""
    (e1_tables, e1_figures), (e3_tables, e3_figures), (e4_tables, e4_figures) = (
        _e1(results, out), _e3(results, out), _e4(results, out))
    why = _why(results) if len(results.runs) else None
    calibration = calibration_table(results, TEXT["tables.calibration.note"])
    tables = (why, rates_table("liu2024"), *e1_tables, *_e2(results), *e3_tables, *e4_tables,
              calibration)
    return PaperSections(
        settings=settings(results), tables=[t for t in tables if t],
        figures=[*e1_figures, *e3_figures, *e4_figures],
        deviations=deviations([("spider_sosp", "algorithms.spider_sosp", "Deviations")]))
