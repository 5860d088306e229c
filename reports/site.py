"""The whole report of a results root, rebuilt from stored results alone.

``build_site(root)`` writes ``root/report/``::

    index.html                  the reproduction-status matrix (paper × table/figure/result ×
                                verdict, with the Δ), the verdict counts per paper, links
    <paper>/<scale>/            one page per paper and scale found under ``root``
    suites/<suite>/             the report of each suite that names no paper (e.g. smoke)
    theory/<scale>/             every paper's rate table beside the fitted exponents
    privacy/                    the audit (from root/audit/*.json, where ``audit`` ran)
    runtime/                    the benchmarks (from root/bench/micro.json, where ``bench`` ran)
    report.tex (report.pdf)     every table and figure of every page, for pdflatex

Each page builder leaves what the index and the LaTeX need beside its HTML
(``status.json``, ``latex.json``); :func:`build_index` reads them, so a command that
rebuilt one page refreshes the front page cheaply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reports.claims import VERDICTS
from reports.paper import stored_suites
from reports.render import html_env

README_START = "<!-- status-matrix:start -->"
README_END = "<!-- status-matrix:end -->"
MATRIX_COLUMNS = ["paper", "scale", "table / figure / result", "verdict",
                  "Δ (published numbers)", "checked by"]


def paper_statuses(report: Path) -> list[dict[str, Any]]:
    """One entry per paper page under ``report``: title, scale, runs, claims (with their
    verdicts), artefacts and the number of claims with each verdict."""
    pages = []
    for path in sorted(report.glob("*/*/status.json")):
        status = json.loads(path.read_text())
        counts = [sum(c["verdict"] == v for c in status["claims"]) for v in VERDICTS]
        pages.append({**status, "href": f"{path.parent.relative_to(report).as_posix()}/",
                      "counts": counts, "artefacts": status.get("artefacts", [])})
    return pages


def matrix_rows(pages: list[dict[str, Any]]) -> list[list[str]]:
    """The status matrix as rows of :data:`MATRIX_COLUMNS` (plain text)."""
    return [[p["paper"], p["scale"], a["target"],
             a["verdict"] + (f" ({a['mixed']})" if a.get("mixed") else ""), a["delta"] or "–",
             ", ".join(f"{part['name']}: {part['verdict']}" for part in a["parts"])]
            for p in pages for a in p["artefacts"]]


def verdict_counts(pages: list[dict[str, Any]]) -> list[list[str]]:
    """Per paper page: how many claims have each verdict."""
    return [[p["paper"], p["scale"], *(str(n) for n in p["counts"])] for p in pages]


def other_suites(report: Path) -> list[tuple[str, str]]:
    """(suite, href) of the reports of suites that are not on a paper page (e.g. smoke)."""
    return [(p.parent.name, p.relative_to(report).as_posix())
            for p in sorted(report.glob("suites/*/index.html"))]


def build_index(report: Path) -> Path:
    """Write ``report/index.html`` (and its LaTeX manifest) from what the pages left."""
    from reports.latex import export_page

    report.mkdir(parents=True, exist_ok=True)
    extra = [(name, f"{name}/") for name in ("privacy", "runtime")
             if (report / name / "index.html").exists()]
    extra += [(f"theory ({p.parent.name})", f"theory/{p.parent.name}/")
              for p in sorted(report.glob("theory/*/index.html"))]
    pages = paper_statuses(report)
    html = html_env().get_template("site.html.j2").render(
        papers=pages, verdicts=VERDICTS, extra=extra,
        suites=other_suites(report),
        latex=[name for name in ("report.tex", "report.pdf") if (report / name).exists()],
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    path = report / "index.html"
    path.write_text(html)
    export_page(report, "Reproduction status", [{
        "title": "Reproduction status of every paper",
        "note": "The verdict of each artefact from its claims and published numbers: "
                "contradicted if any part is; held if every part that could decide held; "
                "inconclusive if a part could not decide; out of regime if a premise failed "
                "in every part that ran; not run if nothing ran.",
        "columns": MATRIX_COLUMNS, "rows": matrix_rows(pages)}, {
        "title": "Verdicts per paper", "note": "Declared claims of each paper by verdict.",
        "columns": ["paper", "scale", *VERDICTS], "rows": verdict_counts(pages)}], [])
    return path


def paper_pages(root: Path) -> list[tuple[str, str]]:
    """(paper, scale) of every suite under ``root`` whose paper declares a Paper."""
    from reports.papers import paper_keys

    known = set(paper_keys())
    return sorted({(str(meta["paper"]), str(meta.get("scale") or "quick"))
                   for meta, _ in stored_suites(root) if meta.get("paper") in known})


def build_site(root: Path, pages: Iterable[tuple[str, str]] | None = None,
               pdf: bool = True) -> Path:
    """Rebuild ``root/report`` from the results stored under ``root``: the paper pages
    (``pages``, default every (paper, scale) found), the theory page per scale, the privacy
    and runtime pages where their inputs exist, ``report.tex`` (compiled to ``report.pdf``
    when ``pdf`` and pdflatex is installed) and the index. Returns the index's path."""
    from reports.paper import build_paper_page
    from reports.privacy import build_privacy_page
    from reports.render import build_report
    from reports.runtime import build_runtime_page
    from reports.theory import build_theory_page

    report = root / "report"
    found = paper_pages(root)
    for paper, scale in found if pages is None else pages:
        build_paper_page(paper, scale, root, report / paper / scale)
    for meta, store in stored_suites(root):
        if not meta.get("paper") and not store.runs().empty:
            build_report(store.root, report / "suites" / store.root.name)
    for scale in sorted({scale for _, scale in found}):
        build_theory_page(root, report / "theory" / scale, scale)
    if any((root / "audit").glob("*.json")):
        build_privacy_page(root / "audit", report / "privacy")
    if (root / "bench" / "micro.json").is_file():
        build_runtime_page(root / "bench" / "micro.json", report / "runtime",
                           root / "reproduce_times.jsonl")
    return finish_site(report, pdf)


def finish_site(report: Path, pdf: bool = True) -> Path:
    """After pages changed: the index, ``report.tex`` (and ``report.pdf``), then the index
    again, which links the PDF. Returns the index's path."""
    from reports.latex import build_report_tex, compile_pdf, pdflatex_available

    build_index(report)  # its LaTeX manifest first, so that report.tex includes the matrix
    tex = build_report_tex(report)
    if pdf and pdflatex_available():
        compile_pdf(tex)
    return build_index(report)


def _markdown(columns: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    return "\n".join(["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
                      *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)])


def matrix_markdown(report: Path) -> str:
    """The verdict counts per paper and the status matrix as Markdown (for the README)."""
    pages = paper_statuses(report)
    if not pages:
        return "No paper pages yet: run `saddlebench reproduce --all --scale quick`."
    return (_markdown(["paper", "scale", *VERDICTS], verdict_counts(pages)) + "\n\n"
            + _markdown(MATRIX_COLUMNS, matrix_rows(pages)))


def update_readme(readme: Path, report: Path) -> None:
    """Replace the block between the status-matrix markers of ``readme`` with the matrix of
    ``report`` (and the date it was generated)."""
    text = readme.read_text()
    pattern = re.compile(rf"{re.escape(README_START)}.*?{re.escape(README_END)}", re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no {README_START} … {README_END} block to replace")
    block = (f"{README_START}\n<!-- generated by `saddlebench report OUT --readme "
             f"{readme.name}` on {datetime.now(UTC):%Y-%m-%d} -->\n\n"
             f"{matrix_markdown(report)}\n{README_END}")
    readme.write_text(pattern.sub(lambda _: block, text))
