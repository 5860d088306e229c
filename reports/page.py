"""A paper's page: its verdicts, findings, the paper's setting beside ours, sections, the
published-vs-ours comparison, tuning, resolutions and every run, from stored results
(``out/index.html``, ``status.json`` for the site's index, ``provenance.json``)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reports.claims import ClaimResult
from reports.latex import export_page
from reports.paper import (
    PREMISE_MARK,
    PaperResults,
    PaperSections,
    artefact_verdict,
    artefacts,
    bottom_line,
    claim_rows,
    collect,
    findings,
    in_regime,
    out_of_regime,
    scaling_table,
    with_provenance,
)
from reports.papers import get_paper
from reports.published import published_for
from reports.render import write_page
from reports.tables import compare

SETTING_COLUMNS = ("quantity", "paper", "ours", "note")


def claims_table(title: str, note: str, claims: list[ClaimResult], results: PaperResults
                 ) -> dict[str, Any]:
    """A table of claims (id, where, statement, verdict, evidence, premises) for LaTeX."""
    return {
        "title": title, "note": note, "provenance": results.provenance(),
        "columns": ["claim", "where", "statement", "verdict", "evidence", "premises"],
        "rows": [[r.id, r.claim.where, r.claim.statement,
                  r.verdict + (" (stand-in)" if r.stand_in else ""), r.evidence(),
                  "; ".join(f"{p.name}: {PREMISE_MARK[p.passed]} ({p.measured})"
                            for p in r.premise_summary()) or "–"] for r in claims]}


def build_paper_page(paper: str, scale: str, results_root: Path, out: Path) -> Path:
    """Render ``out/index.html`` for (paper, scale) from stored results, with its
    ``status.json`` (verdicts and artefacts, for the site's index) and ``provenance.json``."""
    spec = get_paper(paper)
    results = collect(results_root, paper, scale, divergence_factor=spec.divergence_factor,
                      roles=spec.roles)
    out.mkdir(parents=True, exist_ok=True)
    verdicts = spec.evaluate(results)
    sections: PaperSections = spec.sections(results, out)
    scaling = scaling_table(results)
    if scaling:
        sections.tables.append(scaling)
    with_provenance(sections, results)
    published = published_for(paper)
    comparisons = in_regime(compare(published, results.runs), verdicts) \
        if published and len(results.runs) else []
    status = artefacts(verdicts, comparisons)
    found = findings(verdicts, results.runs, comparisons) + sections.findings
    regime = out_of_regime(verdicts)
    setting_rows = [r.row(results) for r in spec.regime]
    summary = bottom_line(verdicts, status, comparisons,
                          [row for r, row in zip(spec.regime, setting_rows, strict=True)
                           if r.lead])
    setting = {"title": "The paper's setting beside ours", "provenance": results.provenance(),
               "note": "The quantities the claims' regimes are about: the paper's value (from "
                       "its stated setting) and ours (measured from the runs).",
               "columns": list(SETTING_COLUMNS), "rows": setting_rows}
    paper_claims = [r for r in verdicts if r.counts]
    checks = [r for r in verdicts if not r.counts]
    verdict_table = claims_table(
        "Verdicts", "Each claim the paper states, with where it states it, its verdict under "
        "the declared rule (on a stand-in where marked), the evidence and the premises it rests "
        "on. Checks of this reproduction are listed apart." if paper_claims else
        "No claim of a published paper is declared here (e.g. an example plugin's page): "
        "only the checks of this reproduction below, none of them counted as a verdict.",
        paper_claims, results)
    checks_table = claims_table(
        "Checks of this reproduction", "Checks of our code against the paper's formulas "
        "(implementation) and of our experiment (design): never counted as the paper's "
        "verdicts.", checks, results)
    write_page(
        "paper.html.j2", out, out.parents[1],
        [("Papers", "index.html#papers"), (paper, None), (scale, None)],
        paper=paper, title=spec.title, source=spec.source, url=spec.url, scale=scale,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        suites=results.suites, n_runs=len(results.runs),
        counts=results.runs["status"].value_counts().to_dict() if len(results.runs) else {},
        diverged=int(results.runs["diverged"].sum()) if "diverged" in results.runs else 0,
        provenance=results.provenance(), artefacts=status, sections=sections,
        claims=claim_rows(verdicts, results), findings=found, regime=regime, setting=setting,
        bottom_line=summary, artefact_verdict=artefact_verdict,
        comparisons=comparisons, resolutions=spec.resolutions,
        runs=results.runs.to_dict("records") if len(results.runs) else [],
    )
    export_page(out, f"{spec.title} ({paper}, {scale})",
                [verdict_table, *([checks_table] if checks else []),
                 *([setting] if setting_rows else []), *sections.tables],
                [(Path(f.path).with_suffix(".pdf").as_posix(), f.caption)
                 for f in sections.figures], summary=summary)
    (out / "status.json").write_text(json.dumps({
        "paper": paper, "title": spec.title, "scale": scale, "runs": len(results.runs),
        "bottom_line": summary, "claims": [r.to_dict() for r in verdicts], "artefacts": status,
        "findings": found, "out_of_regime": regime,
        "setting": [dict(zip(SETTING_COLUMNS, r, strict=True)) for r in setting_rows]},
        indent=1))
    (out / "provenance.json").write_text(json.dumps({
        "page": asdict(results.provenance()),
        "tables": {t["title"]: {**asdict(t["provenance"]), "row_runs": t.get("row_runs")}
                   for t in sections.tables},
        "figures": {f.path: asdict(f.provenance) for f in sections.figures if f.provenance}},
        indent=1))
    return out
