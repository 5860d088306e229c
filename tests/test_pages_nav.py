"""Progress of the long commands: ``audit`` says each algorithm and ``report`` each page as
it finishes (through a callback the CLI points at its console)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.audit import AuditRequest, run_audits
from reports.site import build_site


def test_audit_and_report_say_each_algorithm_and_page_as_it_is_done(tmp_path: Path) -> None:
    lines: list[str] = []
    quick = {"runs": 40, "subsampled": False, "one_run": False, "training": False}
    audits = run_audits([AuditRequest("dp_sgd", **quick), AuditRequest("gauss_psgd", **quick)],
                        progress=lines.append)
    assert [a.algorithm for a in audits] == ["dp_sgd", "gauss_psgd"]
    assert [line.split(":")[0] for line in lines] == ["audited dp_sgd (1/2)",
                                                      "audited gauss_psgd (2/2)"]
    assert all(" pass, ε lb " in line and "CPU s" in line for line in lines)

    (tmp_path / "audit").mkdir()
    for audit in audits:
        (tmp_path / "audit" / f"{audit.algorithm}.json").write_text(json.dumps(audit.to_dict()))
    lines.clear()
    build_site(tmp_path, pdf=False, progress=lines.append)
    assert len(lines) == 1 and lines[0].startswith("page privacy written (1/1, ")
    assert (tmp_path / "report" / "privacy" / "index.html").is_file()
