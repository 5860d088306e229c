"""Figures with seaborn, in one style (:func:`style`: serif text and math as in the LaTeX
report, legends readable at page width) with one distinct hue per algorithm, fixed
across every figure of every page (:func:`colours`), and a discrete ε palette whose
neighbours differ (:func:`epsilon_colours`).

Uncertainty is shown one way everywhere, as the tables show it: mean ± one standard error
over seeds (:data:`INTERVAL`).

``utility_vs_epsilon``: one panel per problem, the problem's headline metric (test
accuracy where there is a test set, else ‖∇F‖) at the output point against ε on a log
axis; mean over seeds with s.e. error bars; non-private runs as a dashed horizontal line.
Written as PNG (HTML) and PDF (LaTeX).

A page module declares its figures as data (:class:`Plot` of :class:`Panel` of
:class:`Series` and reference :class:`Line`) and :func:`draw` renders them: paper modules
never import matplotlib.

Every figure goes through :func:`save_figure`: a PNG as drawn for the pages, and PDFs laid
out for print at a two-column paper's column and page widths (:data:`PRINT_INCHES`), every
text at least 7 pt there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from algorithms import ALGORITHMS
from reports.tables import METRICS

PALETTE = "colorblind"
MAX_COLUMNS = 3  # panels per row: at page width (1400 px) a panel stays ~450 px wide
INTERVAL = "mean ± one standard error over seeds"
LEGEND_POINTS = 9.0  # the smallest legend font size (pt) any figure is saved with
#: the print widths every figure's PDF is laid out at (inches): a two-column paper's single
#: column (``stem_column.pdf``) and its full width (``stem.pdf``)
PRINT_INCHES = {"single": 3.5, "double": 7.0}
PRINT_POINTS = (7.0, 8.0)  # every text of a printed figure, in pt, at its print size
PANEL_INCHES = 2.2  # the narrowest panel a printed figure lays out
PANEL_ASPECT = (0.55, 0.85)  # a printed panel's height over its width
LABEL_INCHES = 0.4  # the height a printed panel's title and axis labels add
#: every registered algorithm's hue (Okabe–Ito, then Paul Tol's muted set), fixed on every
#: page; non-private references in greys
ALGORITHM_HUES: dict[str, str] = {
    "dp_sgd": "#0072B2", "dp_spider_at": "#E69F00", "gauss_psgd": "#009E73",
    "ada_dp_spider": "#D55E00", "dp_rgda": "#56B4E9", "dp_sgda": "#CC79A7",
    "dpsgd_gc": "#882255", "prisma": "#332288", "private_diff": "#999933",
    "spider_sosp": "#AA4499", "noisy_sgd": "#555555", "sgd": "#000000"}
#: hues for algorithms without one above (plugins), given out in name order
SPARE_HUES = ("#44AA99", "#88CCEE", "#DDCC77", "#117733", "#CC6677", "#6699CC", "#AA7744",
              "#661100", "#999999", "#F0E442")
#: the ε palette: eight hues that neighbouring ε never share (ε = ∞ is black)
EPSILON_HUES = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#882255",
                "#999933")
#: the figure style: serif text and math in STIX (matplotlib's own fonts, which cover the
#: Greek and the symbols our labels use; no TeX needed), beside report.tex's serif text
RC = {"font.family": "serif", "font.serif": ["STIXGeneral", "DejaVu Serif"],
      "mathtext.fontset": "stix",
      "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9,
      "ytick.labelsize": 9, "legend.fontsize": LEGEND_POINTS, "legend.title_fontsize": 9}


def headline_metric(runs: pd.DataFrame, problem: str) -> str | None:
    """Test accuracy where the problem has a test set, else the gradient norm."""
    part = runs[runs["problem"] == problem]
    for metric in ("test_acc", "grad_norm", "loss"):
        col = f"final_{metric}"
        if col in part and part[col].notna().any():
            return metric
    return None


RGB = tuple[float, float, float]


def _rgb(hex_colour: str) -> RGB:
    return (int(hex_colour[1:3], 16) / 255, int(hex_colour[3:5], 16) / 255,
            int(hex_colour[5:7], 16) / 255)


@lru_cache(maxsize=1)
def algorithm_colours() -> dict[str, RGB]:
    """One distinct hue per registered algorithm (:data:`ALGORITHM_HUES`), the same on every
    figure of every page; algorithms without one (plugins) take :data:`SPARE_HUES` in name
    order."""
    names = sorted(ALGORITHMS.plugins())
    spare = [n for n in names if n not in ALGORITHM_HUES]
    hues = {**ALGORITHM_HUES, **{n: SPARE_HUES[i % len(SPARE_HUES)] for i, n in enumerate(spare)}}
    return {name: _rgb(hues[name]) for name in names}


def epsilon_colours(values: Iterable[float]) -> dict[float, RGB]:
    """A colour per ε: finite values in increasing order over :data:`EPSILON_HUES` (so
    neighbouring ε differ in hue), ε = ∞ (non-private) black."""
    finite = sorted(v for v in set(values) if np.isfinite(v))
    out = {v: _rgb(EPSILON_HUES[i % len(EPSILON_HUES)]) for i, v in enumerate(finite)}
    return {**out, **{v: (0.0, 0.0, 0.0) for v in set(values) if not np.isfinite(v)}}


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
    """The one figure style of every page: seaborn's white grid with :data:`RC` (serif
    Computer Modern text, readable legends)."""
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper", rc=RC)


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
        ax.legend()
    save_figure(fig, out_dir, stem)
    return [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]


def curves_with_band(panels: list[tuple[str, pd.DataFrame]], metric: str, ylabel: str,
                     out_dir: Path, stem: str, xlabel: str = "epoch") -> list[Path]:
    """One curve per ε: the mean over runs with a band of ± one standard error
    (:data:`INTERVAL`, as the tables show it).

    Each panel is (title, rows) with columns ``x``, ``metric``, ``epsilon`` and ``run_id``;
    non-private runs (ε = ∞) are drawn black and labelled "SGD".
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style()
    cols = min(max(len(panels), 1), MAX_COLUMNS)
    rows_n = -(-max(len(panels), 1) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.4 * cols, 3.4 * rows_n), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, rows) in zip(axes.flat, panels, strict=False):
        eps_values = sorted(rows["epsilon"].unique(), key=lambda e: (np.isinf(e), e))
        colour = epsilon_colours(eps_values)
        for eps in eps_values:
            part = rows[rows["epsilon"] == eps].groupby("x")[metric].agg(["mean", "sem"])
            label = "SGD" if np.isinf(eps) else f"ε = {eps:g}"
            ax.plot(part.index, part["mean"], color=colour[eps], label=label, lw=1.4)
            se = part["sem"].fillna(0.0)
            ax.fill_between(part.index, part["mean"] - se, part["mean"] + se, color=colour[eps],
                            alpha=0.18, lw=0)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(ncol=2)
    save_figure(fig, out_dir, stem)
    return [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]


def _panels(fig: Any) -> tuple[list[list[Any]], int] | None:
    """The figure's visible panels in reading order (each: the axes drawn on it, twins
    included) and its number of grid columns, when every panel is one cell of one grid;
    None otherwise (a colour bar, a spanning panel: then the figure is only resized)."""
    cells: dict[tuple[int, int], list[Any]] = {}
    grids: set[int] = set()
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        spec = ax.get_subplotspec()
        if spec is None or len(spec.rowspan) != 1 or len(spec.colspan) != 1:
            return None
        grids.add(id(spec.get_gridspec()))
        cells.setdefault((spec.rowspan.start, spec.colspan.start), []).append(ax)
    if len(grids) != 1:  # none, or panels on several grids
        return None
    return [cells[k] for k in sorted(cells)], 1 + max(col for _, col in cells)


def fit_to_print(fig: Any, width: float) -> None:
    """Lay ``fig`` out at ``width`` inches as printed: its panels keep their grid where
    its columns fit (:data:`PANEL_INCHES` wide at least), else flow row by row into as many
    columns as fit; each panel keeps its aspect (within :data:`PANEL_ASPECT`; its labels
    add :data:`LABEL_INCHES`), and every text is set within :data:`PRINT_POINTS` (journals
    ask for 7 pt at least)."""
    from matplotlib.gridspec import GridSpec
    from matplotlib.text import Text

    w, h = fig.get_size_inches()
    found = _panels(fig)
    if found is None:
        fig.set_size_inches(width, h * width / w)
    else:
        panels, columns = found
        rows = -(-len(panels) // columns) if panels else 1
        cols = max(1, min(columns, int(width // PANEL_INCHES)))
        aspect = float(np.clip((h / rows) / (w / columns), *PANEL_ASPECT))
        if cols < columns:
            rows = -(-len(panels) // cols)
            grid = GridSpec(rows, cols, figure=fig)
            for i, axes in enumerate(panels):
                for ax in axes:
                    ax.set_subplotspec(grid[i // cols, i % cols])
        fig.set_size_inches(width, rows * (aspect * width / cols + LABEL_INCHES))
    low, high = PRINT_POINTS
    for text in fig.findobj(Text):
        text.set_fontsize(min(max(text.get_fontsize(), low), high))


#: mathtext's superscripts in plain text, for :func:`plain_log_label`
SUPERSCRIPTS = str.maketrans("0123456789-−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")


def plain_log_label(label: str) -> str:
    """A log axis's tick label in plain text (``$\\mathdefault{2\\times10^{-3}}$`` →
    ``2×10⁻³``); a label in any other mathtext is returned as it is."""
    body = label.removeprefix("$\\mathdefault{").removesuffix("}$")
    if len(body) == len(label) - len("$\\mathdefault{}$"):
        body = re.sub(r"\^\{([^{}]*)\}", lambda m: m.group(1).translate(SUPERSCRIPTS),
                      body.replace("\\times", "×"))
        if not any(c in body for c in "\\{}$^"):
            return body
    return label


@lru_cache(maxsize=1)
def _plain_log_formatter() -> Any:
    """A formatter that writes what a log axis's mathtext formatter would, in plain text
    (:func:`plain_log_label`); it passes the axis and the tick locations on, from which
    the inner one picks the minor ticks it labels."""
    from matplotlib.ticker import Formatter

    class PlainLog(Formatter):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def set_axis(self, axis: Any) -> None:
            super().set_axis(axis)
            self.inner.set_axis(axis)

        def set_locs(self, locs: Any) -> None:
            super().set_locs(locs)
            self.inner.set_locs(locs)

        def __call__(self, x: float, pos: int | None = None) -> str:
            return plain_log_label(self.inner(x, pos))

    return PlainLog


def _plain_log_ticks(fig: Any) -> None:
    """Every log axis of ``fig`` labelled in plain text: matplotlib writes 10⁻³ in
    mathtext, whose parser took a tenth of the report's drawing time (every figure is laid
    out and drawn three times)."""
    from matplotlib.ticker import LogFormatterMathtext

    for axis in (a for ax in fig.axes for a in (ax.xaxis, ax.yaxis)):
        for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                         (axis.get_minor_formatter, axis.set_minor_formatter)):
            if isinstance(get(), LogFormatterMathtext):
                put(_plain_log_formatter()(get()))


def save_figure(fig: Any, out: Path, stem: str, dpi: int = 130) -> str:
    """The one way every figure is written: ``out/stem.png`` for the HTML (at ``dpi``, as
    drawn), and for print, ``out/stem.pdf`` at double-column width and
    ``out/stem_column.pdf`` at single-column width (:data:`PRINT_INCHES`,
    :func:`fit_to_print`); all after ``tight_layout``, with serif text and legends of at
    least :data:`LEGEND_POINTS` (whatever style the figure was drawn in). Closes the
    figure and returns the PNG's name."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    out.mkdir(parents=True, exist_ok=True)
    for legend in (ax.get_legend() for ax in fig.axes):
        for text in legend.get_texts() if legend is not None else []:
            text.set_fontsize(max(text.get_fontsize(), LEGEND_POINTS))
    for text in fig.findobj(Text):
        text.set_fontfamily(RC["font.serif"])
    _plain_log_ticks(fig)
    # TrueType fonts embedded in every PDF (matplotlib's default, Type 3, fails IEEE's and
    # ACM's font checks)
    with plt.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42}):
        fig.tight_layout()
        fig.savefig(out / f"{stem}.png", dpi=dpi)
        for name, width in (("", PRINT_INCHES["double"]), ("_column", PRINT_INCHES["single"])):
            fit_to_print(fig, width)
            fig.tight_layout()
            fig.savefig(out / f"{stem}{name}.pdf")
    plt.close(fig)
    return f"{stem}.png"


def dot_plot(points: pd.DataFrame, out: Path, stem: str, xlabel: str, reference: str) -> str:
    """One row per ``row`` of ``points`` (top to bottom in their order), a marker per
    ``kind`` at its ``value``: the ``reference`` kind a black bar, the others in the
    palette, one legend. Returns the PNG's name (:func:`save_figure`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style()
    rows = list(dict.fromkeys(points["row"]))
    kinds = [k for k in dict.fromkeys(points["kind"]) if k != reference]
    fig, ax = plt.subplots(figsize=(7.5, 1.8 + 0.32 * max(len(rows), 1)))
    y = {r: -i for i, r in enumerate(rows)}
    styles = {reference: ("|", (0.0, 0.0, 0.0), 14.0),
              **{k: (m, c, 7.0) for k, m, c in zip(kinds, "o^Ds*v", palette(len(kinds)),
                                                   strict=False)}}
    for kind, (marker, colour, size) in styles.items():
        part = points[points["kind"] == kind]
        ax.plot(part["value"].astype(float), [y[r] for r in part["row"]], ls="", marker=marker,
                color=colour, ms=size, mew=2.0 if kind == reference else 1.0, label=kind)
    ax.set_yticks(list(y.values()), labels=rows)
    ax.set_ylim(-len(rows) + 0.4, 0.6)
    ax.set_xlim(left=0)
    ax.set_xlabel(xlabel)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)  # below the panel
    return save_figure(fig, out, stem)


#: a verdict's colour in :func:`verdict_bars` (the site's CSS hues, muted)
VERDICT_COLOURS = {"held": "#3a7d44", "contradicted": "#b03a2e", "inconclusive": "#c9a227",
                   "out of regime": "#7f8c8d", "not run": "#d5d8dc"}


def verdict_bars(counts: pd.DataFrame, out: Path, stem: str) -> str:
    """One horizontal bar per ``row`` of ``counts`` (a paper), stacked by verdict column (its
    number of claims with that verdict), one legend. Returns the PNG's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style()
    rows = list(counts.index)
    fig, ax = plt.subplots(figsize=(7.0, 1.4 + 0.35 * max(len(rows), 1)))
    left = pd.Series(0.0, index=counts.index)
    for verdict in counts.columns:
        ax.barh(rows, counts[verdict], left=left, color=VERDICT_COLOURS.get(verdict),
                label=verdict)
        left += counts[verdict]
    ax.invert_yaxis()  # the first paper on top, as in the table
    ax.set_xlabel("the paper's claims")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.02), ncol=len(counts.columns))
    return save_figure(fig, out, stem)


#: a predictor's marker in :func:`exponents_against_predicted`
PREDICTOR_MARKERS = {"n": "o", "d": "s", "ε": "^"}


def exponents_against_predicted(points: pd.DataFrame, out: Path, stem: str) -> str:
    """Fitted exponents (``fitted`` with its interval ``lo``–``hi``) against ``predicted``:
    a colour per ``algorithm`` (:func:`colours`), a marker per ``predictor``, the diagonal
    where they agree; a panel that says so when there is nothing to draw. Returns the PNG's
    name (:func:`save_figure`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    style()
    fig, ax = plt.subplots(figsize=(6.0, 4.6))
    if points.empty:
        ax.text(0.5, 0.5, "no fit with a predicted exponent at this scale", ha="center",
                va="center", transform=ax.transAxes)
    colour = colours(points["algorithm"].astype(str))
    for (algorithm, predictor), part in points.groupby(["algorithm", "predictor"]):
        ax.errorbar(part["predicted"], part["fitted"],
                    yerr=[part["fitted"] - part["lo"], part["hi"] - part["fitted"]], ls="",
                    marker=PREDICTOR_MARKERS.get(str(predictor), "D"), ms=6, capsize=2,
                    color=colour[str(algorithm)], alpha=0.85)
    values = points[["predicted", "lo", "hi"]].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    low, high = (finite.min(), finite.max()) if finite.size else (-1.0, 1.0)
    ax.plot([low, high], [low, high], color="0.4", ls="--", lw=1.0)
    handles = [Line2D([], [], ls="", marker="o", color=colour[a], label=a) for a in colour]
    handles += [Line2D([], [], ls="", marker=m, color="0.3", label=f"in {p}")
                for p, m in PREDICTOR_MARKERS.items() if p in set(points["predictor"])]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ax.set_xlabel("predicted exponent (the bound's privacy term)")
    ax.set_ylabel("fitted exponent (95 % CI)")
    return save_figure(fig, out, stem)


# -- declared figures ---------------------------------------------------------------------

Values = Sequence[float] | np.ndarray | pd.Series  # a series' coordinates

@dataclass(frozen=True)
class Series:
    """One curve: ``y`` against ``x`` with an optional ± ``err``, drawn as error bars, or as
    a shaded band when ``band``; ``marker`` "" draws a plain line, ``line`` "" markers only."""

    label: str
    x: Values
    y: Values
    err: Values | None = None
    colour: Any = None
    marker: str = "o"
    line: str = "-"
    band: bool = False
    width: float = 1.4


@dataclass(frozen=True)
class Line:
    """A reference line at ``value`` (horizontal, or vertical when ``vertical``), with a
    shaded ± ``half_band`` around it when given."""

    value: float
    label: str = ""
    colour: Any = "grey"
    style: str = ":"
    vertical: bool = False
    half_band: float = 0.0


@dataclass(frozen=True)
class Panel:
    """One set of axes. ``xscale``/``yscale``: "linear", "log" or "log2"; ``xticks``: the
    ticks to show (None: matplotlib's)."""

    series: Sequence[Series]
    xlabel: str = ""
    ylabel: str = ""
    title: str = ""
    xscale: str = "linear"
    yscale: str = "linear"
    lines: Sequence[Line] = ()
    xticks: Values | None = None
    legend: bool = True


@dataclass(frozen=True)
class Plot:
    """A figure: its panels in reading order, at most ``columns`` per row, each
    ``panel_inches`` (width, height) as drawn for the HTML page."""

    panels: Sequence[Panel]
    columns: int = MAX_COLUMNS
    panel_inches: tuple[float, float] = (4.6, 3.4)
    dpi: int = 130
    share_y: bool = False


def _scale(set_scale: Any, scale: str) -> None:
    if scale == "log2":
        set_scale("log", base=2)
    elif scale != "linear":
        set_scale(scale)


def _draw_panel(ax: Any, panel: Panel) -> None:
    for s in panel.series:
        if s.err is not None and s.band:
            low = np.asarray(s.y, float) - np.asarray(s.err, float)
            high = np.asarray(s.y, float) + np.asarray(s.err, float)
            ax.fill_between(s.x, low, high, color=s.colour, alpha=0.18, lw=0)
        if s.err is not None and not s.band:
            ax.errorbar(s.x, s.y, yerr=s.err, marker=s.marker or None, capsize=3,
                        ls=s.line or "none", color=s.colour, label=s.label, lw=s.width)
        else:
            ax.plot(s.x, s.y, marker=s.marker or None, ls=s.line or "none", color=s.colour,
                    label=s.label, lw=s.width)
    for line in panel.lines:
        draw_line, span = (ax.axvline, ax.axvspan) if line.vertical else (ax.axhline,
                                                                          ax.axhspan)
        draw_line(line.value, color=line.colour, ls=line.style, label=line.label or None)
        if line.half_band:
            span(line.value - line.half_band, line.value + line.half_band, color=line.colour,
                 alpha=0.2)
    _scale(ax.set_xscale, panel.xscale)
    _scale(ax.set_yscale, panel.yscale)
    if panel.xticks is not None:
        ax.set_xticks(list(panel.xticks))
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    if panel.title:
        ax.set_title(panel.title)
    if panel.legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)


def draw(plot: Plot, out: Path, stem: str) -> str:
    """Render ``plot`` in the house style and write it (:func:`save_figure`); returns the
    PNG's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style()
    count = max(len(plot.panels), 1)
    cols = min(count, plot.columns)
    rows = -(-count // cols)
    width, height = plot.panel_inches
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False,
                             sharey=plot.share_y)
    for ax in axes.flat[len(plot.panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, plot.panels, strict=False):
        _draw_panel(ax, panel)
    return save_figure(fig, out, stem, dpi=plot.dpi)
