"""The front page of a report folder and the README's status matrix, read from what the
page builders left beside their HTML (``status.json``, ``latex.json``), so a command that
rebuilt one page refreshes them cheaply."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from reports.claims import VERDICTS
from reports.figures import verdict_bars
from reports.latex import export_page
from reports.paper import artefact_verdict
from reports.render import write_page

README_START = "<!-- status-matrix:start -->"
README_END = "<!-- status-matrix:end -->"
MATRIX_COLUMNS = ["paper", "scale", "table / figure / result", "verdict",
                  "Δ (published numbers)", "checked by"]


def part_anchor(name: str) -> str:
    """Where a part of an artefact's verdict is shown on its paper page: the row of the
    claim (``claim <id> …``), else the published comparison."""
    words = name.split()
    return f"claim-{words[1]}" if len(words) > 1 and words[0] == "claim" else "published"


def paper_statuses(report: Path) -> list[dict[str, Any]]:
    """One entry per paper page under ``report``: title, scale, runs, bottom line, the
    paper's claims (kind ``paper``, with their verdicts), artefacts (each part with the
    ``anchor`` of its row on the paper page) and the number of the paper's claims with
    each verdict; checks of the reproduction (implementation, design) are not counted."""
    pages = []
    for path in sorted(report.glob("*/*/status.json")):
        status = json.loads(path.read_text())
        status["claims"] = [c for c in status["claims"] if c.get("kind") == "paper"]
        status.setdefault("bottom_line", [])
        counts = [sum(c["verdict"] == v for c in status["claims"]) for v in VERDICTS]
        artefacts = [{**a, "parts": [{**part, "anchor": part_anchor(part["name"])}
                                     for part in a["parts"]]}
                     for a in status.get("artefacts", [])]
        pages.append({**status, "href": f"{path.parent.relative_to(report).as_posix()}/",
                      "counts": counts, "artefacts": artefacts})
    return pages


def matrix_rows(pages: list[dict[str, Any]]) -> list[list[str]]:
    """The status matrix as rows of :data:`MATRIX_COLUMNS` (plain text)."""
    return [[p["paper"], p["scale"], a["target"],
             artefact_verdict(a) + (f" ({a['mixed']})" if a.get("mixed") else ""),
             a["delta"] or "–",
             ", ".join(f"{part['name']}: {part['verdict']}" for part in a["parts"])]
            for p in pages for a in p["artefacts"]]


def verdict_counts(pages: list[dict[str, Any]]) -> list[list[str]]:
    """Per paper page: how many of the paper's claims have each verdict."""
    return [[p["paper"], p["scale"], *(str(n) for n in p["counts"])] for p in pages]


def other_suites(report: Path) -> list[tuple[str, str]]:
    """(suite, href) of the reports of suites that are not on a paper page (e.g. smoke)."""
    return [(p.parent.name, p.relative_to(report).as_posix())
            for p in sorted(report.glob("suites/*/index.html"))]


def build_index(report: Path) -> Path:
    """Write ``report/index.html`` (and its LaTeX manifest) from what the pages left."""
    report.mkdir(parents=True, exist_ok=True)
    extra = [(name, f"{name}/") for name in ("privacy", "runtime")
             if (report / name / "index.html").exists()]
    extra += [(f"theory ({p.parent.name})", f"theory/{p.parent.name}/")
              for p in sorted(report.glob("theory/*/index.html"))]
    pages = paper_statuses(report)
    figure = verdict_bars(pd.DataFrame([p["counts"] for p in pages], columns=list(VERDICTS),
                                       index=[f"{p['paper']} ({p['scale']})" for p in pages]),
                          report, "verdicts") if pages else None
    path = write_page(
        "site.html.j2", report, report, [], papers=pages, verdicts=VERDICTS, extra=extra,
        figure=figure,
        artefact_verdict=artefact_verdict,
        suites=other_suites(report),
        latex=[name for name in ("report.tex", "report.pdf") if (report / name).exists()],
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    export_page(report, "Reproduction status", [{
        "title": "Reproduction status of every paper",
        "note": "The verdict of each artefact from its claims and published numbers: "
                "contradicted if any part is; held if every part that could decide held; "
                "inconclusive if a part could not decide; out of regime if a premise failed "
                "in every part that ran; not run if nothing ran.",
        "columns": MATRIX_COLUMNS, "rows": matrix_rows(pages)}, {
        "title": "Verdicts per paper",
        "note": "The claims each paper states, by verdict (checks of the reproduction not "
                "counted).",
        "columns": ["paper", "scale", *VERDICTS], "rows": verdict_counts(pages)}],
        [(figure.replace(".png", ".pdf"), "The paper's claims per verdict, one bar per paper.")]
        if figure else [])
    return path


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
    lines = "\n\n".join(f"**{p['paper']}** ({p['scale']}). " + " ".join(p["bottom_line"])
                         for p in pages)
    return (_markdown(["paper", "scale", *VERDICTS], verdict_counts(pages)) + "\n\n"
            + lines + "\n\n" + _markdown(MATRIX_COLUMNS, matrix_rows(pages)))


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
