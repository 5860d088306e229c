"""reports.diff: two renders that differ only in their date are equal; a changed verdict, a
lost table or a lost figure is reported."""

from __future__ import annotations

from pathlib import Path

from reports.diff import differences, main


def _site(root: Path, verdict: str, stamp: str, table: bool = True) -> Path:
    page = root / "p" / "quick"
    (page / "tables").mkdir(parents=True)
    (page / "status.json").write_text(f'{{"verdict": "{verdict}"}}\n')
    (page / "index.html").write_text(f"<p> generated {stamp} UTC</p>\n")
    (root / "report.tex").write_text(f"\\date{{{stamp} UTC}}\n")
    (page / "fig.png").write_bytes(b"\x89PNG" + stamp.encode())
    if table:
        (page / "tables" / "verdicts.tex").write_text("held\n")
    return root


def test_dates_and_figure_bytes_aside_renders_are_equal(tmp_path: Path) -> None:
    old = _site(tmp_path / "a", "held", "2026-11-28 08:55")
    new = _site(tmp_path / "b", "held", "2026-11-28 09:41")
    assert differences(old, new) == [] and main([str(old), str(new)]) == 0


def test_a_changed_verdict_and_a_lost_table_are_reported(tmp_path: Path) -> None:
    old = _site(tmp_path / "a", "held", "2026-11-28 08:55")
    new = _site(tmp_path / "b", "contradicted", "2026-11-28 08:55", table=False)
    found = differences(old, new)
    assert any('+{"verdict": "contradicted"}' in block for block in found)
    assert "only in old: p/quick/tables/verdicts.tex" in found
    assert main([str(old), str(new)]) == 1
