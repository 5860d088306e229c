"""Render a results directory into a self-contained report folder.

Output (``<results>/report/`` by default)::

    index.html                   tables, figure, privacy figures, published vs ours, runs
    summary.csv                  every number the tables show (mean, s.e., seeds)
    utility_vs_epsilon.{png,pdf} the seaborn figure
    tables/<metric>.tex          standalone booktabs document per metric
    tables/<metric>_fragment.tex the same tabular, to \\input into a paper
    latex.json                   the LaTeX manifest (:mod:`reports.latex`)

HTML from Jinja2 with autoescape, in the site's one layout (``templates/base.html.j2``:
:func:`write_page`); LaTeX through :mod:`reports.latex`.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd
from markupsafe import Markup, escape
from scipy import stats

from algorithms import ALGORITHMS
from bench.store import Store
from reports.figures import curves_with_band, headline_metric, utility_vs_epsilon
from reports.latex import (
    RATE_START,
    TEMPLATES,
    formula_end,
    formula_tex,
    write_manifest,
    write_table,
)
from reports.papers import paper_keys
from reports.published import PUBLISHED_DIR, published_for
from reports.rules import mean_difference
from reports.tables import (
    METRICS,
    compare,
    epsilon_label,
    metric_columns,
    pivot,
    privacy_table,
    summarise,
    variant_label,
    variants,
    with_variants,
)


def fmt(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; '–' for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}"
    return str(value)


def cell_text(cell: dict[str, Any] | None) -> str:
    """'mean ± s.e.' (plus failures) for a summary cell."""
    if cell is None:
        return ""
    text = fmt(cell["mean"])
    if not math.isnan(cell["se"]):
        text += f" ± {fmt(cell['se'], 2)}"
    if cell["failed"]:
        text += f" ({cell['failed']}/{cell['runs']} failed)"
    return text


# the reStructuredText our docstrings use: ``code``, :math:`x`, :class:`~a.B` (and the
# other Python roles), `default role`, **strong**, *emphasis*
_RST: list[tuple[re.Pattern[str], Any]] = [(re.compile(r"``(.+?)``"), r"<code>\1</code>"),
        (re.compile(r":math:`(.+?)`"), r"\\(\1\\)"),
        (re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc):`(~?)(.+?)`"),
         lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>"),
        (re.compile(r"(?<![\w`])`([^`]+?)`(?![\w`])"), r"<code>\1</code>"),
        (re.compile(r"(?<![\w*])\*\*(\S(?:.*?\S)?)\*\*(?![\w*])"), r"<strong>\1</strong>"),
        (re.compile(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])"), r"<em>\1</em>")]


def rst_inline(text: Any) -> Markup:
    """Docstring text as HTML: the inline reStructuredText our docstrings use (``code``,
    roles, :math: as KaTeX \\( \\), emphasis) rendered, everything else escaped."""
    html = str(escape(str(text)))
    for pattern, replacement in _RST:
        html = pattern.sub(replacement, html)
    return Markup(html)


def with_math(text: Any) -> Markup:
    """``text`` escaped for HTML, each rate formula in it (``O(…)``, ``Õ(…)``, ``Ω(…)``)
    as TeX between ``\\(`` and ``\\)``, which KaTeX typesets in the browser."""
    text, out, done = str(text), [], 0
    for match in RATE_START.finditer(text):
        if match.start() < done or (end := formula_end(text, match)) < 0:
            continue
        out += [str(escape(text[done:match.start()])),
                rf"\({escape(formula_tex(text[match.start():end]))}\)"]
        done = end
    return Markup("".join([*out, str(escape(text[done:]))]))


def html_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    env.filters.update(fmt=fmt, cell=cell_text, eps=epsilon_label, rst=rst_inline,
                       math=with_math)
    return env


# -- the site's layout: static files, navigation bar, breadcrumbs ---------------------------
STATIC = Path(__file__).resolve().parent / "static"
NAV_START, NAV_END = "<!-- site-nav:start -->", "<!-- site-nav:end -->"
Crumbs = Sequence[tuple[str, str | None]]  # (label, href from the site's root; None: no link)


def site_links(site: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """The navigation bar's groups: (group, [(label, href from the site's root)]) for every
    page found under ``site`` (paper pages, theory, privacy, runtime, other suites, the PDF)."""
    papers = [(f"{p.parent.parent.name} ({p.parent.name})",
               f"{p.parent.relative_to(site).as_posix()}/index.html")
              for p in sorted(site.glob("*/*/status.json"))]
    groups = [("Papers", papers),
              ("Theory", [(f"Theory ({p.parent.name})", f"theory/{p.parent.name}/index.html")
                          for p in sorted(site.glob("theory/*/index.html"))]),
              ("Privacy", [("Privacy audit", "privacy/index.html")]
               if (site / "privacy" / "index.html").exists() else []),
              ("Runtime", [("Runtime", "runtime/index.html")]
               if (site / "runtime" / "index.html").exists() else []),
              ("Suites", [(f"Suite {p.parent.name}", f"suites/{p.parent.name}/index.html")
                          for p in sorted(site.glob("suites/*/index.html"))]),
              ("LaTeX", [("report.pdf", "report.pdf")] if (site / "report.pdf").exists() else [])]
    return [(group, links) for group, links in groups if links]


def _root(site: Path, folder: Path) -> str:
    """The relative path from a page's folder up to the site's root ('' or '../../')."""
    up = Path(os.path.relpath(site.resolve(), folder.resolve())).as_posix()
    return "" if up == "." else f"{up}/"


def site_nav(site: Path, folder: Path) -> str:
    """The navigation bar of the page in ``folder`` (its links relative to ``folder``)."""
    current = f"{folder.resolve().relative_to(site.resolve()).as_posix()}/index.html"
    return html_env().get_template("nav.html.j2").render(
        root=_root(site, folder), groups=site_links(site),
        current=current.removeprefix("./"))


def write_page(template: str, out: Path, site: Path, crumbs: Crumbs, **context: Any) -> Path:
    """Render ``template`` (which extends ``base.html.j2``) to ``out/index.html``, a page of
    the site rooted at ``site``: the static files (stylesheet, script, KaTeX) are copied to
    ``site/static``, and the page links them, the navigation bar and its breadcrumbs
    (``crumbs``, from the site's root) by relative path. Returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(STATIC, site / "static", dirs_exist_ok=True)
    html = html_env().get_template(template).render(
        root=_root(site, out), nav=site_nav(site, out), nav_start=NAV_START, nav_end=NAV_END,
        crumbs=[("Report", "index.html"), *crumbs], **context)
    path = out / "index.html"
    path.write_text(html)
    return path


def refresh_nav(site: Path) -> None:
    """Rewrite the navigation bar of every page under ``site`` from the pages there now, so
    that pages built before others link to them too."""
    block = re.compile(f"{re.escape(NAV_START)}.*?{re.escape(NAV_END)}", re.S)
    for page in site.rglob("index.html"):
        text = page.read_text()
        nav = f"{NAV_START}{site_nav(site, page.parent)}{NAV_END}"
        page.write_text(block.sub(nav.replace("\\", "\\\\"), text, count=1))


def _metric_table(summary: pd.DataFrame, metric: str, suite: str) -> dict[str, Any]:
    """A metric's table for LaTeX: (problem, algorithm) rows, one column per ε."""
    eps, rows = pivot(summary, metric)
    return {"title": f"{METRICS[metric]} ({suite})",
            "note": "Mean ± standard error over seeds, at the output point.",
            "columns": ["Problem", "Algorithm", *map(epsilon_label, eps)],
            "rows": [[r["problem"], variant_label(r["label"], r["variant"]),
                      *map(cell_text, r["cells"])] for r in rows]}


def _latex(summary: pd.DataFrame, metrics: list[str], out: Path, suite: str,
           figure: Path) -> list[Path]:
    """Each metric's table as ``tables/<metric>{,_fragment}.tex`` and the manifest."""
    tables = [(m, _metric_table(summary, m, suite)) for m in metrics]
    written = [p for stem, table in tables for p in write_table(out, stem, table)]
    write_manifest(out, f"Suite {suite}", tables,
                   [(figure.name, "Utility at the output point against ε, mean ± s.e. "
                                  "over seeds.")])
    return written


def labelled_variants(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each variant's values in its label ("dp_sgd (lr=0.1)"), so that a
    figure drawn per label never pools variants (:func:`reports.tables.with_variants`)."""
    runs = with_variants(runs)
    return runs.assign(label=[variant_label(label, variant) for label, variant
                              in zip(runs["label"], runs["variant"], strict=True)])


# -- the suite report's curves and its differences from the reference method ----------------
DELTA_COLUMNS = ["problem", "metric", "method", "ε", "Δ vs reference (95 % CI)", "seeds"]


def reference_label(runs: pd.DataFrame) -> str | None:
    """The suite's reference method: the label run only without privacy (ε = ∞; the first
    by name where several are); None where every method is private."""
    private = np.isfinite(runs["epsilon"].astype(float))
    labels = sorted(set(runs.loc[~private, "label"].astype(str))
                    - set(runs.loc[private, "label"].astype(str)))
    return labels[0] if labels else None


def reference_deltas(runs: pd.DataFrame, reference: str) -> list[list[str]]:
    """Per problem (each problem variant apart), method, variant and ε: Δ = its mean −
    the reference's mean of the problem's headline metric (:func:`headline_metric`) over
    finished runs, with Welch's 95 % t-interval; rows of :data:`DELTA_COLUMNS`."""
    done = runs[runs["status"] == "done"]
    problem_params = [str(c) for c in done if str(c).startswith("p_prob_")]
    rows = []
    for problem, name, part in [(str(problem), name, with_variants(part))
                                for problem, of_problem in done.groupby("problem", sort=True)
                                for name, part in variants(of_problem, problem_params)]:
        metric = headline_metric(part, problem)
        base = part[part["label"] == reference]
        if metric is None or base.empty:
            continue
        values = f"final_{metric}"
        for (label, variant, _), cell in part[part["label"] != reference].groupby(
                ["label", "variant", "epsilon"], sort=True):
            est, se, df, _ = mean_difference(cell[values].to_numpy(float),
                                             base[values].to_numpy(float))
            half = float(stats.t.ppf(0.975, df)) * se if math.isfinite(se) else math.nan
            interval = f" [{fmt(est - half, 3)}, {fmt(est + half, 3)}]" if math.isfinite(
                half) else " (one run: no interval)"
            rows.append([variant_label(problem, name), METRICS.get(metric, metric),
                         variant_label(label, variant),
                         epsilon_label(float(cell["epsilon"].iloc[0])),
                         f"{fmt(est, 3)}{interval}",
                         f"{cell[values].notna().sum()} vs {base[values].notna().sum()}"])
    return rows


def training_curves(store: Store, runs: pd.DataFrame, out: Path, stem: str = "curves"
                    ) -> str | None:
    """The training loss over steps, one panel per problem and method (variants apart), a
    curve per ε with a band of ± one s.e. over seeds (:func:`curves_with_band`); the PNG's
    name, None where no run recorded a trajectory."""
    traj = store.trajectories()
    if traj.empty or "loss" not in traj:
        return None
    named = labelled_variants(runs[runs["status"] == "done"])
    rows = traj[traj["point"] == "iterate"].merge(
        named[["run_id", "problem", "label", "epsilon"]], on="run_id").rename(
        columns={"step": "x"})
    panels = [(f"{problem} · {label}", part)
              for (problem, label), part in rows.groupby(["problem", "label"], sort=True)]
    if not panels:
        return None
    return curves_with_band(panels, "loss", METRICS["loss"], out, stem, xlabel="step")[0].name


def paper_epsilons(privacy: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``privacy`` (:func:`privacy_table`) with ε paper kept only for methods from a paper
    this project reproduces (a plugin inheriting an accountant has no paper's ε)."""
    if privacy.empty or "eps_paper" not in privacy:
        return privacy
    papers = set(paper_keys())
    algorithm = dict(zip(runs["label"].astype(str), runs["algorithm"], strict=False))
    from_paper = np.array([getattr(ALGORITHMS.get(algorithm.get(str(label), "")), "paper",
                                   None) in papers for label in privacy["label"]], dtype=bool)
    return privacy.assign(eps_paper=privacy["eps_paper"].where(from_paper))


def build_report(results: Path, out: Path | None = None,
                 published_dir: Path = PUBLISHED_DIR, site: Path | None = None) -> Path:
    """Write the report of the suite stored at ``results``; returns the report folder.
    ``site``: the root of the site the page belongs to (default: the report folder itself,
    a site of one page)."""
    store = Store(results)
    out = out or results / "report"
    out.mkdir(parents=True, exist_ok=True)
    suite = store.suite()
    runs = store.runs()
    if runs.empty:
        raise ValueError(f"no finished runs in {results}; nothing to report")
    summary = summarise(runs)
    summary.to_csv(out / "summary.csv", index=False)
    metrics = metric_columns(runs)
    figures = utility_vs_epsilon(labelled_variants(runs), out)
    tex = _latex(summary, metrics, out, suite.get("suite", results.name), figures[1])
    published = published_for(suite.get("paper"), published_dir)
    comparisons = compare(published, runs) if published else []
    name = str(suite.get("suite", results.name))
    reference = reference_label(runs)
    privacy = paper_epsilons(privacy_table(runs), runs)
    write_page(
        "index.html.j2", out, site or out,
        [("Suites", "index.html#suites"), (name, None)] if site else [], suite=suite,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        counts=runs["status"].value_counts().to_dict(),
        tables=[{"metric": m, "name": METRICS[m], "pivot": pivot(summary, m)} for m in metrics],
        figure=figures[0].name,
        tex=[p.relative_to(out).as_posix() for p in tex],
        privacy=privacy.to_dict("records"),
        paper_column="eps_paper" in privacy and bool(privacy["eps_paper"].notna().any()),
        curves=training_curves(store, runs, out), reference=reference,
        deltas=reference_deltas(runs, reference) if reference else [],
        delta_columns=DELTA_COLUMNS,
        published=published,
        comparisons=comparisons,
        runs=runs.sort_values(["problem", "label", "epsilon", "seed"]).to_dict("records"),
        git_shas=sorted({str(s) for s in runs["git_sha"].dropna()}),
    )
    return out
