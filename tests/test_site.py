"""The report's front page lists every paper page with its claims' statuses and links the
privacy and runtime pages that exist."""

from __future__ import annotations

import json
from pathlib import Path

from reports.site import build_index, paper_statuses


def write_status(report: Path, paper: str, claims: list[tuple[str, str]]) -> None:
    folder = report / paper / "quick"
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({
        "paper": paper, "title": f"Title of {paper}", "scale": "quick", "runs": 7,
        "claims": [{"id": i, "statement": f"claim {i}", "setting": "", "status": s,
                    "evidence": ""} for i, s in claims]}))


def test_index_lists_papers_with_claim_counts_and_links(tmp_path: Path) -> None:
    write_status(tmp_path, "alpha2024", [("C1", "held"), ("C2", "not held"), ("C3", "held")])
    write_status(tmp_path, "beta2025", [("E1", "not run")])
    (tmp_path / "privacy").mkdir()
    (tmp_path / "privacy" / "index.html").write_text("<html></html>")
    statuses = paper_statuses(tmp_path)
    assert [p["paper"] for p in statuses] == ["alpha2024", "beta2025"]
    assert statuses[0]["counts"] == [2, 1, 0] and statuses[1]["counts"] == [0, 0, 1]
    html = build_index(tmp_path).read_text()
    assert 'href="alpha2024/quick/index.html"' in html and "Title of beta2025" in html
    assert 'href="privacy/index.html"' in html and "runtime/" not in html
    assert '<span class="not-held" title="claim C2">C2</span>' in html


def test_empty_report_says_what_to_run(tmp_path: Path) -> None:
    assert "saddlebench reproduce --all" in build_index(tmp_path / "report").read_text()
