"""Progress of the long commands: ``audit`` says each algorithm and ``report`` each page as
it finishes (through a callback the CLI points at its console), from tasks that come back
as they finish."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

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
    assert lines[0] == "writing 1 page(s): privacy"
    assert len(lines) == 2 and lines[1].startswith("page privacy written (1/1, ")
    assert (tmp_path / "report" / "privacy" / "index.html").is_file()


def test_tasks_in_processes_come_back_as_they_finish_and_raise_the_first_error(
        tmp_path: Path) -> None:
    from bench.executors import finished_in_workers

    calls = [partial(Path.write_text, tmp_path / n, n * 2) for n in "abc"]
    assert sorted(finished_in_workers(calls, 2)) == [(0, 2), (1, 2), (2, 2)]
    assert list(finished_in_workers(calls, 1)) == [(0, 2), (1, 2), (2, 2)]  # here, in order
    with pytest.raises(FileNotFoundError):
        list(finished_in_workers([partial(Path.read_text, tmp_path / "missing"),
                                  partial(Path.read_text, tmp_path / "a")], 2))
