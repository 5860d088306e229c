"""Tables from stored runs: mean ± s.e. over seeds, privacy figures, published vs ours.

Every table is computed from ``Store.runs()`` (one row per run) and nothing else, so a
report can be rebuilt from the results directory alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reports.claims import diverged_mask
from reports.published import Entry, Published

METRICS = {
    "loss": "training loss F(x)",
    "grad_norm": "‖∇F(x)‖",
    "lambda_min": "λ_min(∇²F(x))",
    "test_loss": "test loss",
    "test_acc": "test accuracy",
}
CELL = ["problem", "label", "variant", "epsilon"]


VARIANT_COLUMNS = ("problem", "algorithm", "backend", "calibration")


def _spec_columns(runs: pd.DataFrame) -> list[str]:
    """The run columns that tell spec variants apart (never the seed or ε)."""
    return [str(c) for c in runs if c in VARIANT_COLUMNS
            or str(c).startswith(("p_prob_", "p_alg_"))]


def variants(runs: pd.DataFrame, columns: list[str] | None = None
             ) -> list[tuple[str, pd.DataFrame]]:
    """``runs`` split by every spec field that varies among them (problem and algorithm
    params, backend, calibration; never the seed), or by ``columns``, each part named by
    its values, e.g. "n=1000, lr=0.1"; one unnamed part when nothing varies."""
    columns = [c for c in (_spec_columns(runs) if columns is None else columns)
               if runs[c].astype(str).nunique() > 1]
    if not columns:
        return [("", runs)]
    values = runs[columns].astype(str)  # params may be lists: group on their text
    parts = values.groupby(columns, sort=True).indices  # key → row positions
    return [(", ".join(f"{c.split('_', 2)[-1]}={v}" for c, v in zip(columns, key, strict=True)),
             runs.iloc[parts[raw]]) for raw in sorted(parts, key=str)
            for key in [raw if isinstance(raw, tuple) else (raw,)]]


def metric_columns(runs: pd.DataFrame) -> list[str]:
    """The metrics measured at the output point of at least one run, in display order."""
    return [m for m in METRICS if f"final_{m}" in runs and runs[f"final_{m}"].notna().any()]


def with_variants(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``variant`` column naming, per (problem, label), the spec values that
    vary among runs of one ε (problem and algorithm params, backend, calibration: a sweep,
    two entries of one algorithm, two files written into one folder), e.g. "n=1000,
    lr=0.1"; empty where nothing varies. A run stored twice counts once."""
    if "run_id" in runs:
        runs = runs.drop_duplicates("run_id")
    columns = _spec_columns(runs)
    named = []
    for _, group in runs.groupby(["problem", "label"], sort=False, dropna=False):
        spread = group[columns].astype(str).groupby(group["epsilon"], dropna=False).nunique()
        varying = [c for c in columns if (spread[c] > 1).any()]
        named += [part.assign(variant=name) for name, part in variants(group, varying)]
    return pd.concat(named) if named else runs.assign(variant="")


def variant_label(label: object, variant: object) -> str:
    """A method's label with its variant's values where it has one: "dp_sgd (lr=0.1)"."""
    return f"{label} ({variant})" if variant else str(label)


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (problem, algorithm label, variant, ε, metric): mean, s.e. and count over seeds
    (:func:`with_variants`: variants are never pooled).

    Only runs with status ``done`` enter the statistics; ``runs``/``failed`` count all.
    """
    runs = with_variants(runs)
    rows: list[dict[str, Any]] = []
    for key, group in runs.groupby(CELL, sort=True, dropna=False):
        done = group[group["status"] == "done"]
        failed = int((group["status"] != "done").sum())
        for metric in metric_columns(runs):
            values = done[f"final_{metric}"].dropna().to_numpy(dtype=float)
            if not len(values) and not failed:
                continue  # the metric does not apply to this problem
            rows.append({
                **dict(zip(CELL, key, strict=True)),
                "metric": metric,
                "mean": float(values.mean()) if len(values) else math.nan,
                "se": float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1
                else math.nan,
                "seeds": len(values),
                "runs": len(group),
                "failed": failed,
            })
    return pd.DataFrame(rows)


def epsilon_label(eps: float) -> str:
    return "non-private" if math.isinf(eps) else f"ε={eps:g}"


def pivot(summary: pd.DataFrame, metric: str) -> tuple[list[float], list[dict[str, Any]]]:
    """A metric's table: columns are ε values, rows (problem, label, variant) with cells."""
    part = summary[summary["metric"] == metric]
    eps = sorted(part["epsilon"].unique(), key=lambda e: (math.isinf(e), e))
    rows = []
    for (problem, label, variant), group in part.groupby(["problem", "label", "variant"],
                                                         sort=True):
        by_eps = {r["epsilon"]: r for r in group.to_dict("records")}
        rows.append({"problem": problem, "label": label, "variant": variant,
                     "cells": [by_eps.get(e) for e in eps]})
    return [float(e) for e in eps], rows


def privacy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per private configuration (variants apart, :func:`with_variants`): σ and ε from every
    accountant (identical across seeds, except that a run which voided its guarantee records
    ε = ∞: the configuration shows the largest, so one void seed shows ∞)."""
    private = with_variants(runs[np.isfinite(runs["epsilon"].astype(float))])
    if private.empty:
        return pd.DataFrame()
    cols = [c for c in ("sigma", "eps_pld", "eps_rdp", "eps_gdp", "eps_advanced", "eps_paper")
            if c in private]
    keys = ["problem", "label", "variant", "epsilon", "calibration"]
    grouped = private.groupby(keys, sort=True, dropna=False)
    out = grouped[cols].max().reset_index()
    if "diag_guarantee_void" in private:
        void = private.assign(v=private["diag_guarantee_void"].eq(True))
        out["guarantee_void"] = void.groupby(keys, sort=True, dropna=False)["v"].sum(
            ).to_numpy()
    return out


# -- published vs ours ---------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """One published number beside ours: our mean, its s.e. and 95 % t-interval over the
    matching runs, Δ = ours − published, and the number's status (see :func:`compare`)."""

    entry: Entry
    ours: float | None
    se: float | None
    seeds: int
    delta: float | None
    status: str
    run_ids: tuple[str, ...] = ()  # the runs behind ``ours``
    interval: tuple[float, float] = (math.nan, math.nan)
    diverged: int = 0  # matching runs that diverged (never averaged in)
    variant: str = ""  # the spec values that tell this row's runs apart, when several match


def _matching(runs: pd.DataFrame, entry: Entry) -> pd.DataFrame:
    mask = pd.Series(True, index=runs.index)
    for key, value in entry.match.items():
        if key in ("metric", "statistic"):
            continue
        column = next((c for c in (key, f"p_alg_{key}", f"p_prob_{key}") if c in runs), None)
        if column is None:
            return runs.iloc[0:0]
        if isinstance(value, int | float) and not isinstance(value, bool):
            mask &= np.isclose(runs[column].astype(float), float(value))
        else:
            mask &= runs[column] == value
    return runs[mask & runs["status"].isin(["done", "diverged"])]


def number_verdict(low: float, high: float, value: float, tolerance: float) -> str:
    """held if our 95 % interval [low, high] lies inside published ± tolerance,
    contradicted if it lies wholly outside, inconclusive otherwise."""
    band = (value - tolerance, value + tolerance)
    if not (math.isfinite(low) and math.isfinite(high)):
        return "inconclusive"
    if band[0] <= low and high <= band[1]:
        return "held"
    if high < band[0] or low > band[1]:
        return "contradicted"
    return "inconclusive"


def compare(published: Published, runs: pd.DataFrame) -> list[Comparison]:
    """Every published entry with our statistic, Δ = ours − published, and a status:

    ``held`` / ``contradicted`` / ``inconclusive`` by :func:`number_verdict` on the 95 %
    t-interval of our mean over the finished runs that did not diverge (one run gives no
    interval: inconclusive; ``diverged`` counts the others); ``calibrated`` when the entry
    was used to set a constant (never counted as reproduced); ``diverged`` when every
    matching run diverged (no Δ); ``not run`` when no run matches the entry. Runs that
    differ in a spec field the entry does not fix are never pooled: each variant is its own
    row, named by the values that differ (:func:`variants`).
    """
    out = []
    for entry in published.entries:
        column = f"final_{entry.match['metric']}"
        match = _matching(runs, entry) if column in runs else runs.iloc[0:0]
        if "run_id" in match:  # a run stored in two suites is one run
            match = match.drop_duplicates("run_id")
        if not len(match):
            out.append(Comparison(entry, None, None, 0, None, "not run"))
            continue
        out += [_compare(entry, part, column, variant) for variant, part in variants(match)]
    return out


def _compare(entry: Entry, match: pd.DataFrame, column: str, variant: str) -> Comparison:
    """One published entry against the runs of one variant (see :func:`compare`)."""
    from scipy import stats

    ids = tuple(sorted(match["run_id"])) if "run_id" in match else ()
    diverged = diverged_mask(match)
    if diverged.all():
        return Comparison(entry, None, None, 0, None, "diverged", ids, diverged=len(match),
                          variant=variant)
    values = match[~diverged][column].dropna().to_numpy(dtype=float) * entry.unit
    if not len(values):
        return Comparison(entry, None, None, 0, None, "not run", variant=variant)
    ours = float(np.median(values) if entry.statistic == "median" else values.mean())
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else None
    half = float(stats.t.ppf(0.975, len(values) - 1)) * se if se is not None else math.nan
    interval = (ours - half, ours + half)
    status = "calibrated" if entry.calibrated else number_verdict(
        *interval, entry.value, entry.tolerance_for(entry.value))
    return Comparison(entry, ours, se, len(values), ours - entry.value, status, ids,
                      interval, int(diverged.sum()), variant)
