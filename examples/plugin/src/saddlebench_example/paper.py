"""example2026: the example plugin's paper — how a plugin declares a page of its own.

There is no published paper behind it. Its claims are checks of the example's own design
(``design``: what this module declares about the experiment in experiments/quick/, with
the margin and the rules fixed here before any run) and of its implementation
(``implementation``: momentum only post-processes DP-SGD's released sums, so its privacy
plan is DP-SGD's); none is of kind ``paper``, so none counts as a paper's verdict.

The design (the location the claims name):

* momentum DP-SGD (β = 0.9) against DP-SGD on the Rosenbrock finite sum at ε ∈ {1, 2, 4}
  (PLD), non-private SGD as the reference; every learning rate tuned alike on a grid that
  grows past an edge, then five seeds per method, paired by seed;
* C1: momentum's final loss is no worse than DP-SGD's at each ε, by more than
  :data:`MARGIN` (non-inferiority, paired by seed);
* C2: momentum's final loss falls as ε grows (a trend in log₂ ε);
* C3: momentum's σ at each ε is DP-SGD's, and its PLD ε stays within the target.

The module is a declaration over saddlebench's shared pieces: its prose is paper.yaml
(:class:`reports.prose.Prose`), its claims use :mod:`reports.claims` and
:mod:`reports.rules`, its figure is declared with :mod:`reports.figures` (no matplotlib
here) and its table is a mean ± s.e. table. The entry point in this plugin's
pyproject.toml (group ``saddlebench.papers``) points at :data:`PAPER`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reports.claims import (
    Paper,
    Runs,
    Statistic,
    along,
    difference,
    finished,
    tuned_inside_grid,
)
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import final_stats, format_mean_se, mean_se, settings
from reports.prose import Prose
from reports.results import Figure, PaperResults, PaperSections
from reports.rules import Always, NonInferior, Sample, Trend, as_float
from reports.tables import epsilon_label

KEY = "example2026"
ROLE = "compare"
MOMENTUM, DP_SGD = "dp_sgd_momentum", "dp_sgd"
# C1's margin, in final loss F(x_T) (F* = 0, F(x₀) ≈ 227.5 at d = 10, a = 10), declared
# here with the design before any run: a loss within 0.05 of DP-SGD's is "no worse"
MARGIN = 0.05
TOLERANCE = 1e-9  # relative: σ "equal" to DP-SGD's, ε spent "within" the target

TEXT = Prose.load(__file__, MARGIN=MARGIN)


def _private(epsilon: pd.Series) -> pd.Series:
    """Whether each run is private (finite ε)."""
    return pd.Series(np.isfinite(epsilon.astype(float)), index=epsilon.index)


def _dp_sgd_plan(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """1 per momentum run whose σ is DP-SGD's at its ε and whose PLD ε is within the
    target, else 0 (no runs while DP-SGD has none to compare with)."""
    reference = finished(results.role_runs(ROLE), include_diverged=True)
    sigma = reference[reference["label"] == DP_SGD].groupby("epsilon")["sigma"].first()
    if sigma.empty:
        return Sample.of([])
    theirs = runs["epsilon"].map(sigma).astype(float)
    same = np.isclose(runs["sigma"].astype(float), theirs, rtol=TOLERANCE, atol=0.0)
    within = runs["eps_pld"].astype(float) <= runs["epsilon"].astype(float) * (1 + TOLERANCE)
    return Sample.of((same & within).astype(float))


TUNED = (tuned_inside_grid("lr"),)

CLAIMS = (
    TEXT.claim("C1", "Table 1", Runs((ROLE,), {"label": [MOMENTUM, DP_SGD],
                                                 "epsilon": _private}, by=("epsilon",)),
               difference("loss", MOMENTUM, DP_SGD),
               NonInferior(MARGIN, TEXT["margin"], higher_is_better=False,
                           what="final loss, momentum − DP-SGD"),
               TUNED, kind="design"),
    TEXT.claim("C2", "Figure 1", Runs((ROLE,), {"label": MOMENTUM}),
               along("loss", "epsilon"), Trend(increasing=False), TUNED, kind="design"),
    TEXT.claim("C3", "the privacy plan", Runs((ROLE,), {"label": MOMENTUM}),
               Statistic("σ equal to DP-SGD's at the same ε, and PLD ε ≤ target", _dp_sgd_plan),
               Always("σ = DP-SGD's σ and ε (PLD) ≤ the target"), include_diverged=True,
               kind="implementation"),
)


# -- the page's table and figure ----------------------------------------------------------

def _runs(results: PaperResults) -> pd.DataFrame:
    return finished(results.role_runs(ROLE))


def _loss_table(results: PaperResults) -> dict[str, Any] | None:
    """Table 1: per method and ε, the tuned learning rate, σ and the final loss (mean ±
    s.e. over seeds)."""
    runs = _runs(results)
    if runs.empty:
        return None
    rows = []
    for (label, eps), part in runs.groupby(["label", "epsilon"]):
        first = part.iloc[0]
        rows.append([str(label), epsilon_label(as_float(eps)), f"{first['p_alg_lr']:g}",
                     f"{first['sigma']:.3g}", format_mean_se(*mean_se(part["final_loss"])),
                     str(len(part))])
    return {"title": TEXT["tables.loss.title"], "note": TEXT["tables.loss.note"],
            "columns": ["method", "ε", "tuned lr", "σ", "final loss F(x_T)", "seeds"],
            "rows": rows, "provenance": results.provenance(runs)}


def _loss_figure(results: PaperResults, out: Path) -> list[Figure]:
    """Figure 1: final loss against ε per private method (± s.e.), non-private SGD dashed."""
    runs = _runs(results)
    if runs.empty:
        return []
    labels = runs["label"].astype(str)
    colour = colours(labels, dict(zip(labels, runs["algorithm"], strict=True)))
    private = runs[_private(runs["epsilon"])]
    series = [Series(str(label), stats["epsilon"], stats["mean"], stats["se"],
                     colour=colour[str(label)])
              for label, part in private.groupby("label")
              for stats in [final_stats(part, "loss")]]
    lines = [Line(float(part["final_loss"].mean()), f"{label} (non-private)",
                  colour[str(label)], "--")
             for label, part in runs[~_private(runs["epsilon"])].groupby("label")]
    plot = Plot([Panel(series, "ε", "final loss F(x_T)", xscale="log2", yscale="log",
                       lines=lines, xticks=sorted(private["epsilon"].unique()))],
                panel_inches=(5.2, 3.6))
    return [Figure(draw(plot, out, f"{KEY}_loss_vs_epsilon"), TEXT["figures.loss"],
                   results.provenance(runs))]


def sections(results: PaperResults, out: Path) -> PaperSections:
    page = PaperSections(settings=settings(results))
    page.tables = [t for t in (_loss_table(results),) if t]
    page.figures = _loss_figure(results, out)
    return page


PAPER = Paper(
    key=KEY, title=TEXT["title"], source=TEXT["source"], claims=CLAIMS,
    roles=dict(TEXT.section("roles")), sections=sections,
    experiments=Path(__file__).resolve().parent / "experiments", text=TEXT)
