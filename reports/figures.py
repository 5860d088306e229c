"""Figures with seaborn, in one style (:func:`style`) with one colour per algorithm, fixed
across every figure of every page (:func:`colours`).

``utility_vs_epsilon``: one panel per problem, the problem's headline metric (test
accuracy where there is a test set, else ‖∇F‖) at the output point against ε on a log
axis; mean over seeds with s.e. error bars; non-private runs as a dashed horizontal line.
Written as PNG (HTML) and PDF (LaTeX).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from algorithms import ALGORITHMS
from reports.tables import METRICS

PALETTE = "colorblind"
MAX_COLUMNS = 4


def headline_metric(runs: pd.DataFrame, problem: str) -> str | None:
    """Test accuracy where the problem has a test set, else the gradient norm."""
    part = runs[runs["problem"] == problem]
    for metric in ("test_acc", "grad_norm", "loss"):
        col = f"final_{metric}"
        if col in part and part[col].notna().any():
            return metric
    return None


RGB = tuple[float, float, float]


@lru_cache(maxsize=1)
def algorithm_colours() -> dict[str, RGB]:
    """One colour per registered algorithm (sorted names over tab20, saturated shades first),
    the same on every figure of every page."""
    import seaborn as sns


    palette = sns.color_palette("tab20", n_colors=20)
    order = palette[0::2] + palette[1::2]
    registry = ALGORITHMS.plugins()
    builtin = sorted(n for n, cls in registry.items() if cls.__module__.startswith("algorithms."))
    names = builtin + sorted(set(registry) - set(builtin))  # plugins after the built-ins
    return {name: order[i % len(order)] for i, name in enumerate(names)}


def _algorithm(label: str, algorithm_of: Mapping[str, str]) -> str | None:
    """The registered algorithm behind ``label`` (None: none, e.g. a plugin not importable
    where the report is built; the label then takes the palette)."""
    if algorithm_of.get(label) in algorithm_colours():
        return algorithm_of[label]
    known = [a for a in algorithm_colours() if label == a or label.startswith(f"{a}_")]
    return max(known, key=len) if known else None


def colours(labels: Iterable[str], algorithm_of: Mapping[str, str] | None = None
            ) -> dict[str, RGB]:
    """A colour per label. A label naming a registered algorithm (itself, ``<algorithm>_…``,
    or through ``algorithm_of``) gets that algorithm's fixed colour; further labels of the
    same algorithm get darker shades of it. Other labels (curve parameters such as d) take
    the colour-blind palette in sorted order."""
    labels = sorted(set(labels))
    mapping = algorithm_of or {}
    out: dict[str, RGB] = {}
    shades: dict[str, int] = {}
    others = [label for label in labels if _algorithm(label, mapping) is None]
    for label in labels:
        algorithm = _algorithm(label, mapping)
        if algorithm is None:
            continue
        k = shades[algorithm] = shades.get(algorithm, -1) + 1
        base = algorithm_colours()[algorithm]
        out[label] = (base[0] * 0.65**k, base[1] * 0.65**k, base[2] * 0.65**k)
    out.update(zip(others, palette(len(others)), strict=True))
    return out


def palette(n: int) -> list[RGB]:
    """``n`` colours for labels that are not algorithms."""
    import seaborn as sns

    return [tuple(c) for c in sns.color_palette(PALETTE, n_colors=max(n, 1))][:n]


def style() -> None:
    """The one figure style of every page."""
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")


def utility_vs_epsilon(runs: pd.DataFrame, out_dir: Path, stem: str = "utility_vs_epsilon"
                       ) -> list[Path]:
    """Draw the figure; returns the written files (PNG, PDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import NullLocator

    done = runs[runs["status"] == "done"]
    problems = sorted(done["problem"].unique())
    colour = colours(runs["label"].astype(str),
                     dict(zip(runs["label"].astype(str), runs["algorithm"], strict=True)))
    style()
    fig, axes = plt.subplots(1, max(len(problems), 1), figsize=(4.2 * max(len(problems), 1), 3.4),
                             squeeze=False)
    for ax, problem in zip(axes[0], problems, strict=False):
        metric = headline_metric(done, problem)
        if metric is None:
            continue
        part = done[done["problem"] == problem]
        private = part[np.isfinite(part["epsilon"].astype(float))]
        if not private.empty:
            sns.lineplot(data=private, x="epsilon", y=f"final_{metric}", hue="label",
                         palette=colour, marker="o", errorbar="se", err_style="bars", ax=ax)
        for label, group in part[~np.isfinite(part["epsilon"].astype(float))].groupby("label"):
            ax.axhline(group[f"final_{metric}"].mean(), color=colour[str(label)], ls="--",
                       label=f"{label} (non-private)")
        ax.set_xscale("log")
        ticks = sorted(private["epsilon"].astype(float).unique())
        if ticks:
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticks(ticks, labels=[f"{t:g}" for t in ticks])
        ax.set_title(problem)
        ax.set_xlabel("ε")
        ax.set_ylabel(METRICS.get(metric, metric))
        if metric == "grad_norm":
            ax.set_yscale("log")
        ax.legend(fontsize=7)
    save_figure(fig, out_dir, stem)
    return [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]


def curves_with_band(panels: list[tuple[str, pd.DataFrame]], metric: str, ylabel: str,
                     out_dir: Path, stem: str, xlabel: str = "epoch") -> list[Path]:
    """The paper's figure style: mean over runs with a min–max band, one curve per ε.

    Each panel is (title, rows) with columns ``x``, ``metric``, ``epsilon`` and ``run_id``;
    non-private runs (ε = ∞) are drawn black and labelled "SGD".
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    style()
    cols = min(max(len(panels), 1), MAX_COLUMNS)
    rows_n = -(-max(len(panels), 1) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.4 * cols, 3.4 * rows_n), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, rows) in zip(axes.flat, panels, strict=False):
        eps_values = sorted(rows["epsilon"].unique(), key=lambda e: (np.isinf(e), e))
        finite = [e for e in eps_values if np.isfinite(e)]
        cmap = sns.color_palette("viridis", n_colors=max(len(finite), 1))
        for eps in eps_values:
            part = rows[rows["epsilon"] == eps].groupby("x")[metric].agg(["mean", "min", "max"])
            colour = "black" if np.isinf(eps) else cmap[finite.index(eps)]
            label = "SGD" if np.isinf(eps) else f"ε = {eps:g}"
            ax.plot(part.index, part["mean"], color=colour, label=label, lw=1.4)
            ax.fill_between(part.index, part["min"], part["max"], color=colour, alpha=0.18, lw=0)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=6, ncol=2)
    save_figure(fig, out_dir, stem)
    return [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]


def save_figure(fig: Any, out: Path, stem: str, dpi: int = 130) -> str:
    """The one way every figure is written: ``out/stem.png`` (for the HTML, at ``dpi``)
    and ``out/stem.pdf`` (for LaTeX), after ``tight_layout``; closes the figure and returns
    the PNG's name."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(out / f"{stem}.{ext}", dpi=dpi)
    plt.close(fig)
    return f"{stem}.png"
