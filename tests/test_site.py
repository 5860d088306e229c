"""The report's front page: the status matrix (paper × table/figure/result × verdict, with the
Δ of published numbers), the verdict counts per paper, links to the other pages, and the
README block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.claims import Claim, ClaimResult, Runs, SettingResult, flag
from reports.index import (
    README_END,
    README_START,
    build_index,
    matrix_markdown,
    paper_statuses,
    update_readme,
)
from reports.paper import artefacts
from reports.published import Entry
from reports.rules import Always
from reports.site import paper_pages
from reports.tables import Comparison
from saddlebench import cli


def entry(id_: str, table: str, value: float) -> Entry:
    return Entry(id=id_, value=value, statistic="mean", match={"metric": "loss"}, table=table)


def result(claim_id: str, checks: str, *verdicts: str, kind: str = "paper",
           stand_in: str = "", headline: bool = False) -> ClaimResult:
    """A claim result whose settings have ``verdicts``, aggregated as the framework does."""
    from reports.claims import aggregate

    claim = Claim(claim_id, f"claim {claim_id}", checks, Runs(), flag("x"), Always(),
                  kind=kind, where="§1", headline=headline)
    settings = tuple(SettingResult(f"s{i}", v, None, (), 3, 0, ()) for i, v in
                     enumerate(verdicts))
    return ClaimResult(claim, aggregate(verdicts), settings, (), stand_in)


def test_artefact_verdict_combines_claims_and_published_numbers() -> None:
    claims = [result("1", "Table 1", "held"), result("2", "Figure 1", "held", "contradicted"),
              result("3", "Theorem 2"), result("4", "Theorem 4", "out of regime", "held"),
              result("5", "Theorem 5", "out of regime")]
    comparisons = [
        Comparison(entry("t1-a", "Table 1", 2.0), 2.1, 0.1, 3, 0.1, "held"),
        Comparison(entry("t1-b", "Table 1", 1.0), 1.5, 0.01, 3, 0.5, "inconclusive"),
        Comparison(entry("t1-c", "Table 1", 1.0), 9.0, 0.01, 3, 8.0, "calibrated"),
        Comparison(entry("t1-d", "Table 1", 1.0), None, None, 3, None, "diverged"),
        Comparison(entry("t3-a", "Table 3", 1.0), None, None, 0, None, "not run")]
    found = {a["target"]: a for a in artefacts(claims, comparisons)}
    assert {t: a["verdict"] for t, a in found.items()} == {
        "Table 1": "inconclusive", "Figure 1": "contradicted", "Theorem 2": "not run",
        "Theorem 4": "held", "Theorem 5": "out of regime", "Table 3": "not run"}
    assert "1/2 published numbers held" in found["Table 1"]["delta"]
    assert "largest Δ +0.5 (t1-b" in found["Table 1"]["delta"]  # the calibrated one never counts
    assert "t1-c calibrated, t1-d diverged" in found["Table 1"]["delta"]
    assert [p["name"] for p in found["Table 1"]["parts"]] == [
        "claim 1", "4 published numbers (1 held, 1 inconclusive, 1 calibrated, 1 diverged)"]
    assert found["Figure 1"]["parts"] == [{"name": "claim 2 (1/2 settings held)",
                                           "verdict": "contradicted", "headline": False}]
    assert found["Table 3"]["parts"] == [{"name": "1 published numbers (1 not run)",
                                          "verdict": "not run", "headline": False}]


def test_numbers_of_an_artefact_whose_claims_are_out_of_regime_are_out_of_regime() -> None:
    from reports.paper import in_regime

    claims = [result("1", "Table 1", "out of regime"), result("2", "Table 2", "held")]
    numbers = [Comparison(entry("a", "Table 1", 1.0), 9.0, 0.1, 3, 8.0, "contradicted"),
               Comparison(entry("b", "Table 1", 1.0), 9.0, 0.1, 3, 8.0, "calibrated"),
               Comparison(entry("c", "Table 2", 1.0), 9.0, 0.1, 3, 8.0, "contradicted")]
    assert [c.status for c in in_regime(numbers, claims)] == [
        "out of regime", "calibrated", "contradicted"]


def test_findings_and_why_out_of_regime_are_assembled_from_the_verdicts() -> None:
    import pandas as pd

    from reports.claims import PremiseCheck
    from reports.paper import findings, out_of_regime

    failed = PremiseCheck("T ≥ T_thm", False, "T = 400 < T_thm = 5.1e5", "run longer")
    claim = Claim("T5", "half are SOSPs", "Theorem 3.4", Runs(), flag("x"), Always())
    settings = tuple(SettingResult(f"σ = {i}", "out of regime", None, (failed,), 3, 0, ())
                     for i in range(5))
    regime = out_of_regime([ClaimResult(claim, "out of regime", settings, ())])
    assert regime == [{"premise": "T ≥ T_thm", "claims": "T5", "remedy": "run longer",
                       "measured": "T = 400 < T_thm = 5.1e5 (σ = 0 · σ = 1 · σ = 2 · and 2 "
                                   "more settings)"}]
    runs = pd.DataFrame({"suite": "s", "label": "a", "calibration": "paper", "epsilon": 2.0,
                         "eps_pld": [5.6, 5.6]})
    found = findings([result("1", "Theorem 3.17", "contradicted")], runs, [])
    assert [f["kind"] for f in found] == ["contradicted claim",
                                          "calibration overspends its target"]
    assert "÷ target 2.8–2.8 over 2 runs in 1 settings" in found[1]["numbers"]
    under = runs.assign(eps_pld=0.05)
    assert findings([], under, [])[0]["kind"] == "calibration underspends its target"
    # repeated settings of one calibration collapse into one row with the range
    many = pd.DataFrame({"suite": ["s", "s", "t", "t"], "label": "a", "calibration": "paper",
                         "epsilon": [1.0, 2.0, 1.0, 4.0], "eps_pld": [0.1, 0.4, 0.3, 0.8]})
    rows = findings([], many, [])
    assert len(rows) == 1 and "target ε ∈ {1, 2, 4} in s · t" in rows[0]["what"]
    assert "÷ target 0.1–0.3 over 4 runs in 4 settings" in rows[0]["numbers"]
    assert findings([], runs.assign(eps_pld=1.9), []) == []


def write_status(report: Path, paper: str, claims: list[ClaimResult]) -> None:
    folder = report / paper / "quick"
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({
        "paper": paper, "title": f"Title of {paper}", "scale": "quick", "runs": 7,
        "claims": [c.to_dict() for c in claims], "artefacts": artefacts(claims, [])}))


def test_index_shows_the_matrix_verdict_counts_and_links(tmp_path: Path) -> None:
    report = tmp_path / "report"
    write_status(report, "alpha2024", [result("C1", "Table 1", "held"),
                                       result("C2", "Figure 2", "contradicted"),
                                       result("C3", "Table 1", "held", "inconclusive")])
    write_status(report, "beta2025", [result("E1", "Table 4"),
                                      result("E2", "Table 5", "out of regime")])
    (report / "privacy").mkdir()
    (report / "privacy" / "index.html").write_text("<html></html>")
    (report / "suites" / "smoke").mkdir(parents=True)
    (report / "suites" / "smoke" / "index.html").write_text("<html></html>")
    statuses = paper_statuses(report)
    assert [p["paper"] for p in statuses] == ["alpha2024", "beta2025"]
    assert statuses[0]["counts"] == [1, 1, 1, 0, 0] and statuses[1]["counts"] == [0, 0, 0, 1, 1]
    html = build_index(report).read_text()
    assert 'href="alpha2024/quick/index.html"' in html and "Title of beta2025" in html
    assert 'href="privacy/index.html"' in html and "runtime/" not in html
    assert 'href="suites/smoke/index.html"' in html
    assert ('<a class="contradicted" title="claim C2" href="alpha2024/quick/index.html#claim-C2">'
            'C2</a>') in html
    assert ('<a href="alpha2024/quick/index.html#status">Figure 2</a></td>'
            '<td class="contradicted">') in html
    assert ('<a href="beta2025/quick/index.html#status">Table 5</a></td>'
            '<td class="out-of-regime">') in html
    assert "not held" not in html
    manifest = json.loads((report / "latex.json").read_text())
    assert manifest["title"] == "Reproduction status"


def test_readme_block_is_replaced_with_the_matrix(tmp_path: Path) -> None:
    report = tmp_path / "report"
    write_status(report, "alpha2024", [result("C1", "Table 1", "held"),
                                       result("C2", "Table|2", "inconclusive")])
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n\n{README_START}\nold\n{README_END}\n\nafter\n")
    update_readme(readme, report)
    text = readme.read_text()
    assert "old" not in text and text.startswith("# x\n\nbefore") and text.endswith("after\n")
    assert "| alpha2024 | quick | 1 | 0 | 1 | 0 | 0 |" in text
    assert "| alpha2024 | quick | Table 1 | held | – | claim C1: held |" in text
    assert "| alpha2024 | quick | Table\\|2 | inconclusive | – | claim C2: inconclusive |" in text
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


def test_site_tasks_run_in_processes_and_raise_the_first_error(tmp_path: Path) -> None:
    from functools import partial

    from bench.executors import map_in_workers

    assert map_in_workers([partial(Path.write_text, tmp_path / n, n) for n in "ab"], 2) == [1, 1]
    assert [(tmp_path / n).read_text() for n in "ab"] == ["a", "b"]
    with pytest.raises(FileNotFoundError):
        map_in_workers([partial(Path.read_text, tmp_path / "missing"),
                        partial(Path.read_text, tmp_path / "a")], jobs=2)
