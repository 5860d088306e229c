"""The report's front page: the status matrix (paper × table/figure/result × status, with the
Δ of published numbers), the claim counts, links to the other pages, and the README block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cli
from reports.paper import Claim, artefacts
from reports.published import Entry
from reports.site import (
    README_END,
    README_START,
    build_index,
    matrix_markdown,
    paper_pages,
    paper_statuses,
    update_readme,
)
from reports.tables import Comparison


def entry(id_: str, table: str, value: float) -> Entry:
    return Entry(id=id_, value=value, statistic="mean", match={"metric": "loss"}, table=table)


def test_artefact_status_combines_claims_and_published_numbers() -> None:
    claims = [Claim("1", "a", "", "held", ""), Claim("2", "b", "", "not held", ""),
              Claim("3", "c", "", "not run", ""), Claim("9", "d", "", "held", "")]
    targets = {"1": "Table 1", "2": "Figure 1", "3": "Theorem 2"}
    comparisons = [Comparison(entry("t1-a", "Table 1", 2.0), 2.1, 0.1, 3, 0.1, "reproduced"),
                   Comparison(entry("t1-b", "Table 1", 1.0), 1.5, 0.01, 3, 0.5, "differs"),
                   Comparison(entry("t3-a", "Table 3", 1.0), None, None, 0, None, "not run")]
    found = {a["target"]: a for a in artefacts(claims, targets, comparisons)}
    assert {t: a["status"] for t, a in found.items()} == {
        "Table 1": "differs", "Figure 1": "differs", "Theorem 2": "not run",
        "Table 3": "not run", "other claims": "reproduced"}
    assert "1/2 published numbers reproduced" in found["Table 1"]["delta"]
    assert "largest Δ +0.5 (t1-b" in found["Table 1"]["delta"]
    assert [p["name"] for p in found["Table 1"]["parts"]] == [
        "claim 1", "2 published numbers (1 reproduced, 1 differs)"]
    assert found["Table 3"]["parts"] == [{"name": "1 published numbers (1 not run)",
                                          "status": "not run"}]
    assert found["Figure 1"]["delta"] == ""


def write_status(report: Path, paper: str, claims: list[tuple[str, str]],
                 targets: dict[str, str] | None = None) -> None:
    folder = report / paper / "quick"
    folder.mkdir(parents=True)
    objects = [Claim(i, f"claim {i}", "", s, "") for i, s in claims]
    (folder / "status.json").write_text(json.dumps({
        "paper": paper, "title": f"Title of {paper}", "scale": "quick", "runs": 7,
        "claims": [{"id": c.id, "statement": c.statement, "setting": "", "status": c.status,
                    "evidence": ""} for c in objects],
        "artefacts": artefacts(objects, targets or {}, [])}))


def test_index_shows_the_matrix_claim_counts_and_links(tmp_path: Path) -> None:
    report = tmp_path / "report"
    write_status(report, "alpha2024", [("C1", "held"), ("C2", "not held"), ("C3", "held")],
                 {"C1": "Table 1", "C2": "Figure 2", "C3": "Table 1"})
    write_status(report, "beta2025", [("E1", "not run")], {"E1": "Table 4"})
    (report / "privacy").mkdir()
    (report / "privacy" / "index.html").write_text("<html></html>")
    (report / "suites" / "smoke").mkdir(parents=True)
    (report / "suites" / "smoke" / "index.html").write_text("<html></html>")
    statuses = paper_statuses(report)
    assert [p["paper"] for p in statuses] == ["alpha2024", "beta2025"]
    assert statuses[0]["counts"] == [2, 1, 0] and statuses[1]["counts"] == [0, 0, 1]
    html = build_index(report).read_text()
    assert 'href="alpha2024/quick/index.html"' in html and "Title of beta2025" in html
    assert 'href="privacy/index.html"' in html and "runtime/" not in html
    assert 'href="suites/smoke/index.html"' in html
    assert '<span class="not-held" title="claim C2">C2</span>' in html
    assert '<a href="alpha2024/quick/index.html#status">Figure 2</a></td><td class="differs">' \
        in html
    assert '<a href="beta2025/quick/index.html#status">Table 4</a></td><td class="not-run">' \
        in html
    manifest = json.loads((report / "latex.json").read_text())
    assert manifest["title"] == "Reproduction status"


def test_readme_block_is_replaced_with_the_matrix(tmp_path: Path) -> None:
    report = tmp_path / "report"
    write_status(report, "alpha2024", [("C1", "held"), ("C2", "not held")],
                 {"C1": "Table 1", "C2": "Table|2"})
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n\n{README_START}\nold\n{README_END}\n\nafter\n")
    update_readme(readme, report)
    text = readme.read_text()
    assert "old" not in text and text.startswith("# x\n\nbefore") and text.endswith("after\n")
    assert "| alpha2024 | quick | Table 1 | reproduced | – | claim C1 |" in text
    assert "| alpha2024 | quick | Table\\|2 | differs | – | claim C2 |" in text
    assert matrix_markdown(tmp_path / "none").startswith("No paper pages yet")
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="status-matrix"):
        update_readme(readme, report)


def test_paper_pages_are_found_from_suites_with_a_page_module(tmp_path: Path) -> None:
    for suite, meta in {"a": {"paper": "xu2026", "scale": "quick"},
                        "b": {"paper": "xu2026", "scale": "paper"},
                        "c": {"paper": "nobody2030", "scale": "quick"}, "smoke": {}}.items():
        (tmp_path / suite).mkdir()
        (tmp_path / suite / "suite.json").write_text(json.dumps({"suite": suite, **meta}))
    assert paper_pages(tmp_path) == [("xu2026", "paper"), ("xu2026", "quick")]


def test_report_of_an_empty_root_names_what_to_run(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "saddlebench reproduce" in capsys.readouterr().err


def test_empty_report_says_what_to_run(tmp_path: Path) -> None:
    assert "saddlebench reproduce --all" in build_index(tmp_path / "report").read_text()


def test_a_claim_checked_in_several_settings_gets_one_badge(tmp_path: Path) -> None:
    report = tmp_path / "report"
    write_status(report, "alpha2024", [("C1", "held"), ("C1", "not held"), ("C1", "held"),
                                       ("C2", "not run"), ("C2", "held"), ("C3", "not run")])
    page = paper_statuses(report)[0]
    assert [(b["id"], b["status"]) for b in page["badges"]] == [
        ("C1", "not held"), ("C2", "held"), ("C3", "not run")]
    assert build_index(report).read_text().count(">C1</span>") == 1
