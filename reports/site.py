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
(``status.json``, ``latex.json``); :func:`reports.index.build_index` reads them, so a
command that rebuilt one page refreshes the front page cheaply.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from bench.executors import finished_in_workers
from reports.index import build_index
from reports.latex import build_report_tex, compile_pdf, pdflatex_available
from reports.page import build_paper_page
from reports.paper import stored_suites
from reports.papers import paper_keys
from reports.privacy import build_privacy_page
from reports.render import build_report, refresh_nav
from reports.runtime import build_runtime_page
from reports.theory import build_theory_page


def paper_pages(root: Path) -> list[tuple[str, str]]:
    """(paper, scale) of every suite under ``root`` whose paper declares a Paper."""
    known = set(paper_keys())
    return sorted({(str(meta["paper"]), str(meta.get("scale") or "quick"))
                   for meta, _ in stored_suites(root) if meta.get("paper") in known})


def build_site(root: Path, pages: Iterable[tuple[str, str]] | None = None,
               pdf: bool = True, jobs: int = 1,
               progress: Callable[[str], None] = lambda line: None) -> Path:
    """Rebuild ``root/report`` from the results stored under ``root``: the paper pages
    (``pages``, default every (paper, scale) found), the theory page per scale, the privacy
    and runtime pages where their inputs exist, ``report.tex`` (compiled to ``report.pdf``
    when ``pdf`` and pdflatex is installed) and the index. The paper, suite and theory
    pages read only stored results and write only their own folders: with ``jobs`` > 1
    they are built in that many processes. ``progress`` gets the pages to write, then a
    line per page as it is written. Returns the index's path."""
    report = root / "report"
    found = paper_pages(root)
    tasks = [(f"{paper}/{scale}", partial(build_paper_page, paper, scale, root,
                                          report / paper / scale))
             for paper, scale in (found if pages is None else pages)]
    tasks += [(f"suites/{store.root.name}", partial(build_report, store.root,
                                                    report / "suites" / store.root.name,
                                                    site=report))
              for meta, store in stored_suites(root)
              if not meta.get("paper") and not store.runs().empty]
    tasks += [(f"theory/{scale}", partial(build_theory_page, root, report / "theory" / scale,
                                          scale))
              for scale in sorted({scale for _, scale in found})]
    if any((root / "audit").glob("*.json")):
        tasks.append(("privacy", partial(build_privacy_page, root / "audit",
                                         report / "privacy")))
    if (root / "bench" / "micro.json").is_file():
        tasks.append(("runtime", partial(build_runtime_page, root / "bench" / "micro.json",
                                         report / "runtime", root / "reproduce_times.jsonl")))
    progress(f"writing {len(tasks)} page(s): {', '.join(name for name, _ in tasks)}")
    start = time.perf_counter()
    for n, (i, _) in enumerate(finished_in_workers([call for _, call in tasks], jobs), 1):
        seconds = time.perf_counter() - start
        progress(f"page {tasks[i][0]} written ({n}/{len(tasks)}, {seconds:.0f} s)")
    return finish_site(report, pdf, progress)


def finish_site(report: Path, pdf: bool = True,
                progress: Callable[[str], None] = lambda line: None) -> Path:
    """After pages changed: the index, ``report.tex`` (and ``report.pdf``), then the index
    again, which links the PDF, and every page's navigation bar. Returns the index's path;
    ``progress`` gets a line before pdflatex runs."""
    build_index(report)  # its LaTeX manifest first, so that report.tex includes the matrix
    tex = build_report_tex(report)
    if pdf and pdflatex_available():
        progress(f"compiling {tex.with_suffix('.pdf')} (pdflatex)")
        compile_pdf(tex)
    index = build_index(report)
    refresh_nav(report)
    return index
