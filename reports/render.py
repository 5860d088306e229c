"""Render a results directory into a self-contained report folder.

Output (``<results>/report/`` by default)::

    index.html                   tables, figure, privacy figures, published vs ours, runs
    summary.csv                  every number the tables show (mean, s.e., seeds)
    utility_vs_epsilon.{png,pdf} the seaborn figure
    tables/<metric>.tex          standalone booktabs document per metric
    tables/<metric>_fragment.tex the same tabular, to \\input into a paper

Two Jinja2 environments: HTML with autoescape, LaTeX with ``\\VAR{}`` / ``\\BLOCK{}``
delimiters and a ``latex`` escape filter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from bench.store import Store
from reports.figures import utility_vs_epsilon
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

TEMPLATES = Path(__file__).resolve().parent / "templates"

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}
_LATEX_UNICODE = {"ε": r"\ensuremath{\varepsilon}", "δ": r"\ensuremath{\delta}",
                  "σ": r"\ensuremath{\sigma}", "λ": r"\ensuremath{\lambda}",
                  "∇": r"\ensuremath{\nabla}", "‖": r"\ensuremath{\|}", "²": r"\ensuremath{^2}",
                  "±": r"\ensuremath{\pm}", "Δ": r"\ensuremath{\Delta}", "−": "-",
                  "∞": r"\ensuremath{\infty}", "μ": r"\ensuremath{\mu}",
                  "Φ": r"\ensuremath{\Phi}", "–": "--"}


def latex_escape(value: Any) -> str:
    """Escape LaTeX specials and map the Greek/math symbols our labels use."""
    text = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(value))
    return "".join(_LATEX_UNICODE.get(ch, ch) for ch in text)


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


def latex_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        trim_blocks=True, lstrip_blocks=True, autoescape=False,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(latex=latex_escape, fmt=fmt, eps=epsilon_label)
    env.filters["cell"] = lambda c: latex_escape(cell_text(c))
    return env


def latex_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], caption: str) -> str:
    """A standalone booktabs table (compiles alone with pdflatex)."""
    align = "l" * len(columns)
    body = "\n".join(" & ".join(latex_escape(v) for v in r) + r" \\" for r in rows)
    return "\n".join([
        r"\documentclass{article}", r"\usepackage{booktabs}", r"\usepackage[T1]{fontenc}",
        r"\usepackage[landscape,margin=1cm]{geometry}", r"\begin{document}", r"\scriptsize",
        r"\begin{table}", r"\centering", rf"\caption{{{latex_escape(caption)}}}",
        rf"\begin{{tabular}}{{{align}}}", r"\toprule",
        " & ".join(latex_escape(c) for c in columns) + r" \\", r"\midrule", body,
        r"\bottomrule", r"\end{tabular}", r"\end{table}", r"\end{document}", ""])


def _latex_tables(summary: pd.DataFrame, metrics: list[str], out: Path, suite: str) -> list[Path]:
    env = latex_env()
    written = []
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for metric in metrics:
        eps, rows = pivot(summary, metric)
        context = {"suite": suite, "metric": metric, "metric_name": METRICS[metric],
                   "epsilons": eps, "rows": rows}
        for template, name in (("table_fragment.tex.j2", f"{metric}_fragment.tex"),
                               ("table_standalone.tex.j2", f"{metric}.tex")):
            path = out / "tables" / name
            path.write_text(env.get_template(template).render(**context))
            written.append(path)
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
    tex = _latex_tables(summary, metrics, out, suite.get("suite", results.name))
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
