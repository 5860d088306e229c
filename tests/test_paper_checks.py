"""The common checks over every registered paper (reports/check.py), and what they catch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reports.check import _roles, check_paper, file_roles, paper_targets
from reports.papers import get_paper, paper_keys
from saddlebench.cli import main


@pytest.mark.parametrize("key", paper_keys())
def test_every_registered_paper_passes_the_common_checks(key: str) -> None:
    report = check_paper(key)
    assert report.passed, [(c.what, c.failures) for c in report.checks if not c.passed]


def test_roles_that_no_file_plays_and_files_playing_undeclared_roles_fail(
        tmp_path: Path) -> None:
    (tmp_path / "quick").mkdir()
    (tmp_path / "quick" / "a.yaml").write_text("suite: a\nrole: [fig1, stray]\n")
    (tmp_path / "quick" / "b.yaml").write_text("suite: b\nrole: fig1\n")
    assert file_roles(tmp_path) == {"quick/a.yaml": ("fig1", "stray"), "quick/b.yaml": ("fig1",)}
    paper = replace(get_paper("liu2024"), roles={"fig1": "Figure 1", "fig2": "Figure 2"},
                    claims=(), text=None, experiments=tmp_path)
    failures = _roles(paper).failures
    assert any("'fig2' is declared but no file" in f for f in failures)
    assert any("quick/a.yaml plays roles ['stray']" in f for f in failures)


def test_saddlebench_check_runs_a_paper_s_common_checks(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert paper_targets("liu2024") == ["liu2024"] and paper_targets("no-such-thing") == []
    assert main(["check", "liu2024"]) == 0
    out = capsys.readouterr().out
    assert "paper liu2024" in out and "FAIL" not in out


def test_a_section_asking_for_an_undeclared_role_fails_even_with_no_runs() -> None:
    import pandas as pd

    from reports.results import PaperResults

    results = PaperResults("p", "quick", [], pd.DataFrame(), pd.DataFrame(),
                           roles=frozenset({"fig1"}))
    assert results.role_runs("fig1").empty
    with pytest.raises(KeyError, match=r"roles \['fig_1'\] are not declared"):
        results.role_runs("fig_1")
