"""avdiukhin2024's page sections: the figures as the paper draws them (accuracy over epochs
per ε beside SGD, per-sample norms against C, the learning-rate sweep, λ_min on the
saddle), the tables (C that holds, Theorem 3.3's δ, Lemma 3.2's preconditions, the
calibration at our scale and the paper's), the stand-in's findings and the deviations."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from algorithms import PrivacyTarget, get_algorithm
from algorithms.privacy.accounting import epsilon
from problems import DataSize
from reports.claims import Claim, finished, numeric, span, stand_in_findings, truthy
from reports.figures import Line, Panel, Plot, Series, draw, epsilon_colours
from reports.paper import calibration_table, deviations, settings
from reports.papers.avdiukhin2024.measures import (
    ACCURACY_ROLES,
    EMPIRICAL_ROLES,
    PAPER_DELTA,
    PAPER_SETTING,
    PAPER_STEPS,
    TEXT,
    bound_rule,
    empirical,
    is_real,
    norms,
    trained,
)
from reports.results import Figure, PaperResults, PaperSections, Provenance, Table
from reports.rules import as_float

EPSILONS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # §4: the paper's ε grid

# -- figures -------------------------------------------------------------------------------

CURVE_COLUMNS = ("run_id", "suite", "problem", "algorithm", "label", "epsilon", "calibration",
                 "status", "diverged", "n", "batch_size", "p_alg_bound_rule", "p_prob_sigma1")
Drawn = tuple[str, pd.DataFrame, float | None]  # (title, rows, bound C drawn or None)


def _curves(results: PaperResults, runs: pd.DataFrame) -> pd.DataFrame:
    """The iterates of the finished ``runs``, with their settings and the epoch as ``x``."""
    runs = finished(runs)
    traj = results.trajectories
    if runs.empty or traj.empty:
        return pd.DataFrame()
    rows = traj[(traj["point"] == "iterate") & traj["run_id"].isin(runs["run_id"])]
    rows = rows.merge(runs[[c for c in CURVE_COLUMNS if c in runs]], on="run_id")
    return rows.assign(x=rows["step"] * rows["batch_size"] / rows["n"])


def _series(rows: pd.DataFrame, metric: str, marker: str) -> list[Series]:
    """The mean over runs, banded ± one s.e., of each (algorithm, ε) against ``x``: noisy
    SGD coloured by ε (:func:`~reports.figures.epsilon_colours`), SGD black, clipped DP-SGD
    dashed in its ε's colour."""
    colours = epsilon_colours(rows["epsilon"].unique())
    series = []
    for (algorithm, key), part in rows.groupby(["algorithm", "epsilon"], sort=True):
        eps, clipped = as_float(key), algorithm == "dp_sgd"
        line = part.groupby("x")[metric].agg(["mean", "sem"]).fillna({"sem": 0.0})
        label = "SGD" if np.isinf(eps) else f"{'clipped DP-SGD ε' if clipped else 'ε'} = {eps:g}"
        series.append(Series(label, line.index.tolist(), line["mean"].tolist(),
                             line["sem"].tolist(), colours[eps], marker,
                             "--" if clipped else "-", band=True))
    return series


def _figure(results: PaperResults, out: Path, stem: str, panels: Sequence[Drawn],
            metric: str, ylabel: str, xlabel: str = "epoch", xscale: str = "linear",
            yscale: str = "linear") -> Figure | None:
    """The paper's figure style, one panel per (title, rows, bound C in red), captioned by
    ``figures.<stem>``, with the provenance of exactly the runs drawn; None when empty."""
    if not panels:
        return None
    marker = "o" if xscale == "log" else ""
    draw(Plot([Panel(_series(rows, metric, marker), xlabel, ylabel, title, xscale, yscale,
                     lines=[Line(bound, f"C = {bound:.3g}", "red")]
                     if bound is not None and math.isfinite(bound) else [])
               for title, rows, bound in panels], columns=3, panel_inches=(4.6, 3.5)),
         out, stem)
    ids = {str(i) for _, rows, _ in panels for i in rows["run_id"].unique()}
    runs = results.runs[results.runs["run_id"].astype(str).isin(ids)]
    return Figure(f"{stem}.png", TEXT[f"figures.{stem}"], results.provenance(runs))


def _tag(rule: str) -> str:
    return "C from Lemma 3.2" if rule == "lemma_3_2" else "empirical C"


def _norm_panels(results: PaperResults) -> list[Drawn]:
    """One panel per (problem, C rule, calibration) of noisy SGD in the accuracy suites: the
    largest per-sample norm of each block of steps (``diag_max_norm_trace``), with C."""
    runs = finished(results.role_runs(*ACCURACY_ROLES), include_diverged=True)
    if runs.empty or "diag_max_norm_trace" not in runs:
        return []
    runs = runs[(runs["algorithm"] == "noisy_sgd") & runs["diag_max_norm_trace"].apply(
        lambda v: isinstance(v, list | np.ndarray) and len(v) > 0)]
    rows = pd.DataFrame([{"run_id": r["run_id"], "x": t, "norm": m, "epsilon": r["epsilon"],
                          "algorithm": "noisy_sgd", "problem": r["problem"], "rule": _tag(rule),
                          "calibration": r["calibration"], "bound": bound}
                         for (_, r), rule, bound in zip(runs.iterrows(), bound_rule(runs),
                                                        norms(runs)["bound"], strict=True)
                         for t, m in r["diag_max_norm_trace"]])
    if rows.empty:
        return []
    groups = sorted(rows.groupby(["problem", "rule", "calibration"]),
                    key=lambda g: (g[0][1] != _tag("given"), g[0]))  # the empirical C first
    return [(f"{problem}, {rule}, calibration {cal}", part, float(part["bound"].median()))
            for (problem, rule, cal), part in groups]


def _accuracy_panels(results: PaperResults, metric: str, roles: tuple[str, ...]
                     ) -> list[Drawn]:
    """One panel per (suite, problem, C, calibration) of noisy SGD in ``roles``, each with
    the non-private SGD and clipped DP-SGD curves of its problem (from the accuracy suites),
    in %."""
    runs = results.role_runs(*roles)
    noisy = _curves(results, runs[runs["algorithm"] == "noisy_sgd"]) if len(runs) else runs
    accuracy = results.role_runs(*ACCURACY_ROLES)
    references = _curves(results, accuracy[accuracy["algorithm"].isin(["sgd", "dp_sgd"])]) \
        if len(accuracy) else accuracy
    if noisy.empty or metric not in noisy:
        return []
    panels: list[Drawn] = []
    for (_, problem, rule, cal), part in noisy.assign(rule=bound_rule(noisy)).groupby(
            ["suite", "problem", "rule", "calibration"]):
        base = references[references["problem"] == problem] if len(references) else references
        rows = pd.concat([part, base]).dropna(subset=[metric])
        panels.append((f"{problem}, {_tag(str(rule))}, calibration {cal}",
                       rows.assign(**{metric: rows[metric] * 100}), None))
    return panels


def _lr_panels(results: PaperResults) -> list[Drawn]:
    runs = finished(results.role_runs("lr_sweep"), include_diverged=True)
    if runs.empty or "final_test_acc" not in runs:
        return []
    rows = runs.assign(x=numeric(runs, "p_alg_lr"), acc=numeric(runs, "final_test_acc") * 100)
    return [(f"{problem}: final test accuracy by learning rate", part, None)
            for problem, part in rows.dropna(subset=["acc"]).groupby("problem")]


def _saddle_panels(results: PaperResults) -> list[Drawn]:
    rows = _curves(results, results.role_runs("saddle"))
    if rows.empty or "lambda_min" not in rows:
        return []
    rows = rows.dropna(subset=["lambda_min"]).assign(x=lambda r: r["step"])
    return [(f"{label}, per-sample noise σ₁ = {s1:g}", part, None)
            for (label, s1), part in rows.groupby(["label", "p_prob_sigma1"])]


def figures(results: PaperResults, out: Path) -> list[Figure]:
    """The page's figures (those with runs to draw)."""
    drawn = [
        _figure(results, out, "per_sample_norms", _norm_panels(results), "norm",
                "largest per-sample ‖∇f_i(x_t)‖", "step", yscale="log"),
        *(_figure(results, out, f"{metric}_curves", _accuracy_panels(results, metric, roles),
                  metric, f"{name} (%)")
          for metric, name, roles in (("test_acc", "test accuracy", (*EMPIRICAL_ROLES, "fig3b")),
                                      ("train_acc", "training accuracy", ("fig3a",)))),
        _figure(results, out, "lr_sweep", _lr_panels(results), "acc",
                "final test accuracy (%)", "learning rate", xscale="log"),
        _figure(results, out, "saddle_lambda_min", _saddle_panels(results), "lambda_min",
                "λ_min(∇²F(x_t))", "step")]
    return [f for f in drawn if f is not None]


# -- tables --------------------------------------------------------------------------------

def _per_setting(key: str, results: PaperResults, runs: pd.DataFrame, needs: set[str],
                 by: list[str], row: Callable[[tuple[Any, ...], pd.DataFrame], list[str]]
                 ) -> Table | None:
    """Table ``key``: one ``row(setting, runs)`` per setting of ``by`` of the finished (or
    diverged) ``runs``, with its run ids; None where none ran or they lack ``needs``."""
    runs = finished(runs, include_diverged=True)
    if runs.empty or not needs <= set(runs):
        return None
    return TEXT.grouped(key, runs, by, row, results.provenance(runs))


def planned_epsilon(n: int, steps: int, batch: int, sigma: float, delta: float) -> float:
    """ε (PLD) that noisy SGD's ledger spends at noise multiplier σ (Poisson, q = B/n)."""
    cls = get_algorithm("noisy_sgd")
    ledger = cls(cls.Params(steps=steps, batch_size=batch, bound=1.0)).planned_ledger(
        DataSize(n=n), sigma)
    spent = epsilon(ledger, delta, "pld")
    return math.inf if spent is None else float(spent)


def _holding_row(setting: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
    """C chosen so that the guarantee holds, and the ε the same noise Δ = σC/B certifies."""
    problem, cal, eps = setting
    seen, first = norms(part), part.iloc[0]
    largest, bound = float(seen["largest"].max()), float(seen["bound"].median())
    holding = max(bound, largest)
    spent = planned_epsilon(int(first["n"]), int(first["steps"]), int(first["batch_size"]),
                            float(first["sigma"]) * bound / holding, float(first["delta"]))
    return [problem, cal, f"{eps:g}", f"{bound:.3g}", f"{largest:.3g}",
            f"{int(seen['over'].sum())}/{len(seen)}", f"{holding:.3g}",
            f"{first['eps_pld']:.3g}", "∞" if math.isinf(spent) else f"{spent:.3g}"]


def holding_table(results: PaperResults) -> Table | None:
    """Per (problem, calibration, ε) of noisy SGD with the empirical C: the C that holds."""
    return _per_setting("holding", results, empirical(results.role_runs(*EMPIRICAL_ROLES)),
                        {"sigma", "steps", "n", "batch_size", "eps_pld"},
                        ["problem", "calibration", "epsilon"], _holding_row)


def _lemma_row(setting: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
    """Lemma 3.2's precondition η ≤ min(1/L, 1/(σ√T)) and its bound C."""
    seen = norms(part)
    spans = [span(numeric(part, c)) for c in ("diag_lemma_L", "diag_lemma_grad_std",
                                               "diag_lemma_f_max")]
    return [setting[0], f"{setting[1]:g}", str(part["diag_lemma_data"].iloc[0]), *spans,
            span(seen["bound"]), f"{seen['largest'].max():.3g}",
            f"{int(seen['over'].sum())}/{len(part)}", span(numeric(part, "p_alg_lr")),
            span(numeric(part, "diag_lemma_lr_max")),
            f"{int(truthy(part, 'diag_lemma_lr_ok').sum())}/{len(part)}"]


def coupling_table() -> Table:
    """Theorem 3.3's δ as stated, (ε, 2δ), beside our reading of its proof, (ε, (2+e^ε)δ)."""
    rows = [[f"{e:g}", f"{2 * PAPER_DELTA:.3g}", f"{(2 + math.exp(e)) * PAPER_DELTA:.3g}"
             + (" (vacuous: ≥ 1)" if (2 + math.exp(e)) * PAPER_DELTA >= 1 else "")]
            for e in EPSILONS]
    return TEXT.table("coupling", rows, Provenance("", computed=TEXT["tables.coupling.computed"]))


def _paper_scale_calibration() -> Table:
    """Theorem 3.3's σ against the accountant at the paper's own CIFAR-10 setting (no runs;
    σ does not depend on C)."""
    s, cls = PAPER_SETTING, get_algorithm("noisy_sgd")
    alg = cls(cls.Params(steps=PAPER_STEPS, batch_size=s["batch_size"], bound=2.5))
    rows = []
    for eps in EPSILONS:
        plan = alg.plan(DataSize(n=s["n"]), PrivacyTarget(eps, s["delta"], "paper"))
        tight = plan.tight
        assert tight is not None  # calibration: paper
        rows.append([f"{eps:g}", f"{plan.sigma:.4g}", f"{tight.sigma:.4g}", f"{tight.ratio:.3g}",
                     *(f"{e:.4g}" if e is not None else "–" for e in (plan.eps.pld,
                                                                       plan.eps.rdp))])
    return TEXT.table("paper_scale", rows,
                      Provenance("paper", computed=TEXT["tables.paper_scale.computed"]))


def stand_ins(results: PaperResults, claims: Sequence[Claim]) -> list[dict[str, str]]:
    """``claims`` (P1-P3) on the digits stand-in where real images also ran: reported, not
    counted."""
    if not is_real(results.role_runs("fig1")).any():
        return []
    return stand_in_findings(claims, results, lambda r: ~is_real(r) & trained(r),
                             TEXT["stand_in"])


def sections(results: PaperResults, out: Path, stand_in: Sequence[Claim] = ()
             ) -> PaperSections:
    """The page's settings, figures, tables (C that holds, Theorem 3.3's δ, Lemma 3.2's
    preconditions, calibration), the ``stand_in`` claims re-judged on the stand-in, and
    deviations."""
    page = PaperSections(settings=settings(results) if len(results.runs) else [])
    if results.runs.empty:
        return page
    page.figures = figures(results, out)
    page.findings += stand_ins(results, stand_in)
    calibration = calibration_table(results, TEXT["tables.calibration.note"], extra=[
        ("ε < c₁q²T", lambda r: "yes" if r["epsilon"] < r.get(
            "plan_abadi_max_epsilon", math.inf) else "no")])
    lemma = _per_setting("lemma", results, results.role_runs("fig3b"), {"diag_lemma_lr_max"},
                         ["problem", "epsilon"], _lemma_row)
    tables = (holding_table(results), coupling_table(), lemma, calibration,
              _paper_scale_calibration())
    page.tables = [t for t in tables if t]
    page.deviations = deviations([
        ("noisy_sgd", "algorithms.noisy_sgd", "Deviations"),
        ("dp_sgd", "algorithms.dp_sgd", "Deviations"),
        ("SOSP selection", "algorithms.sosp_selection", "Resolutions")])
    return page
