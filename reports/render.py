"""Render a results directory into a self-contained report folder.

Output (``<results>/report/`` by default)::

    index.html                   tables, figure, privacy figures, published vs ours, runs
    summary.csv                  every number the tables show (mean, s.e., seeds)
    utility_vs_epsilon.{png,pdf} the seaborn figure
    tables/<metric>.tex          standalone booktabs document per metric
    tables/<metric>_fragment.tex the same tabular, to \\input into a paper
    latex.json                   the LaTeX manifest (:mod:`reports.latex`)

HTML from Jinja2 with autoescape; LaTeX through :mod:`reports.latex`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from bench.store import Store
from reports.figures import utility_vs_epsilon
from reports.latex import TEMPLATES, write_manifest, write_table
from reports.published import PUBLISHED_DIR, published_for
from reports.tables import (
    METRICS,
    compare,
    epsilon_label,
    metric_columns,
    pivot,
    privacy_table,
    summarise,
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


def html_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    env.filters.update(fmt=fmt, cell=cell_text, eps=epsilon_label)
    return env


def _metric_table(summary: pd.DataFrame, metric: str, suite: str) -> dict[str, Any]:
    """A metric's table for LaTeX: (problem, algorithm) rows, one column per ε."""
    eps, rows = pivot(summary, metric)
    return {"title": f"{METRICS[metric]} ({suite})",
            "note": "Mean ± standard error over seeds, at the output point.",
            "columns": ["Problem", "Algorithm", *map(epsilon_label, eps)],
            "rows": [[r["problem"], r["label"], *map(cell_text, r["cells"])] for r in rows]}


def _latex(summary: pd.DataFrame, metrics: list[str], out: Path, suite: str,
           figure: Path) -> list[Path]:
    """Each metric's table as ``tables/<metric>{,_fragment}.tex`` and the manifest."""
    tables = [(m, _metric_table(summary, m, suite)) for m in metrics]
    written = [p for stem, table in tables for p in write_table(out, stem, table)]
    write_manifest(out, f"Suite {suite}", tables,
                   [(figure.name, "Utility at the output point against ε, mean ± s.e. "
                                  "over seeds.")])
    return written


def build_report(results: Path, out: Path | None = None,
                 published_dir: Path = PUBLISHED_DIR) -> Path:
    """Write the report of the suite stored at ``results``; returns the report folder."""
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
    figures = utility_vs_epsilon(runs, out)
    tex = _latex(summary, metrics, out, suite.get("suite", results.name), figures[1])
    published = published_for(suite.get("paper"), published_dir)
    comparisons = compare(published, runs) if published else []
    html = html_env().get_template("index.html.j2").render(
        suite=suite,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        counts=runs["status"].value_counts().to_dict(),
        tables=[{"metric": m, "name": METRICS[m], "pivot": pivot(summary, m)} for m in metrics],
        figure=figures[0].name,
        tex=[p.relative_to(out).as_posix() for p in tex],
        privacy=privacy_table(runs).to_dict("records"),
        published=published,
        comparisons=comparisons,
        runs=runs.sort_values(["problem", "label", "epsilon", "seed"]).to_dict("records"),
        git_shas=sorted({str(s) for s in runs["git_sha"].dropna()}),
    )
    (out / "index.html").write_text(html)
    return out
