"""Reports: number formatting, published-number files and the published-vs-ours table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from reports.published import Published, PublishedError, load_published, published_for
from reports.render import cell_text, fmt
from reports.tables import compare, summarise

PUBLISHED = """
paper: demo2026
title: A demo paper
source: arXiv:0000.00000v1
entries:
  - id: t1-a
    table: Table 1
    row: DP-SGD
    column: grad norm
    page: 7
    value: 0.50
    statistic: mean
    tolerance: {abs: 0.06}
    match: {metric: grad_norm, problem: p, label: dp_sgd, epsilon: 1}
  - id: t1-b
    table: Table 1
    row: DP-SGD
    column: grad norm
    page: 7
    value: 0.90
    statistic: mean
    tolerance: {rel: 0.01}
    match: {metric: grad_norm, problem: p, label: dp_sgd, epsilon: 2}
  - id: f2
    figure: Figure 2
    row: noisy SGD
    column: test accuracy
    value: 0.8
    statistic: median
    match: {metric: test_acc, problem: p, label: noisy_sgd, epsilon: 1}
"""


def runs_frame() -> pd.DataFrame:
    rows = []
    for seed, (a, b) in enumerate([(0.52, 0.40), (0.48, 0.42), (0.50, 0.41)]):
        rows.append({"problem": "p", "label": "dp_sgd", "algorithm": "dp_sgd", "epsilon": 1.0,
                     "seed": seed, "status": "done", "final_grad_norm": a})
        rows.append({"problem": "p", "label": "dp_sgd", "algorithm": "dp_sgd", "epsilon": 2.0,
                     "seed": seed, "status": "done", "final_grad_norm": b})
    rows.append({"problem": "p", "label": "dp_sgd", "algorithm": "dp_sgd", "epsilon": 2.0,
                 "seed": 9, "status": "diverged", "final_grad_norm": float("nan")})
    return pd.DataFrame(rows)


def test_number_formatting() -> None:
    assert fmt(0.123456) == "0.1235"
    assert fmt(float("nan")) == "–"
    assert fmt(math.inf) == "∞"
    assert fmt(None) == "–"
    cell = {"mean": 1.0, "se": 0.25, "failed": 1, "runs": 4}
    assert cell_text(cell) == "1 ± 0.25 (1/4 failed)"


def test_summary_statistics_use_finished_runs_only() -> None:
    summary = summarise(runs_frame())
    row = summary[(summary["epsilon"] == 2.0) & (summary["metric"] == "grad_norm")].iloc[0]
    assert row["seeds"] == 3 and row["runs"] == 4 and row["failed"] == 1
    assert row["mean"] == pytest.approx(0.41)
    assert row["se"] == pytest.approx(pd.Series([0.40, 0.42, 0.41]).std(ddof=1) / math.sqrt(3))


def test_published_vs_ours(tmp_path: Path) -> None:
    path = tmp_path / "demo2026.yaml"
    path.write_text(PUBLISHED)
    published = published_for("demo2026", tmp_path)
    assert published is not None and len(published.entries) == 3
    assert published.entries[0].where == "Table 1, p. 7"
    by_id = {c.entry.id: c for c in compare(published, runs_frame())}
    assert by_id["t1-a"].status == "held"  # 95 % CI [0.45, 0.55] inside 0.50 ± 0.06
    assert by_id["t1-a"].ours == pytest.approx(0.50)
    assert by_id["t1-a"].delta == pytest.approx(0.0, abs=1e-12)
    assert by_id["t1-b"].status == "contradicted"
    assert by_id["t1-b"].delta == pytest.approx(0.41 - 0.90)
    assert by_id["t1-b"].seeds == 3 and by_id["t1-b"].diverged == 1  # never averaged in
    assert by_id["f2"].status == "not run"
    wide = compare(published, runs_frame().assign(final_grad_norm=[0.40, 0.4, 0.6, 0.42, 0.5,
                                                                  0.41, math.nan]))
    assert {c.entry.id: c.status for c in wide}["t1-a"] == "inconclusive"
    diverged = runs_frame().assign(status="diverged")
    assert {c.entry.id: c.status for c in compare(published, diverged)}["t1-a"] == "diverged"
    calibrated = load_published_text(tmp_path, PUBLISHED.replace(
        "    value: 0.50\n", "    value: 0.50\n    calibrated: set the scale of X\n"))
    assert compare(calibrated, runs_frame())[0].status == "calibrated"
    assert published_for("nobody", tmp_path) is None
    assert published_for(None, tmp_path) is None


def test_published_numbers_never_pool_variants(tmp_path: Path) -> None:
    published = load_published_text(tmp_path, PUBLISHED)
    base = runs_frame().assign(p_alg_lr=0.1, p_prob_n=1000, run_id=lambda f: f.index.astype(str))
    swept = pd.concat([base, base.assign(p_alg_lr=0.5, final_grad_norm=base["final_grad_norm"]
                                         + 1, run_id=lambda f: "b" + f["run_id"])])
    rows = [c for c in compare(published, swept) if c.entry.id == "t1-a"]
    assert [(c.variant, c.seeds) for c in rows] == [("lr=0.1", 3), ("lr=0.5", 3)]
    assert [c.status for c in rows] == ["held", "contradicted"]
    # one run stored in two suites counts once; nothing varies, so one unnamed row
    twice = pd.concat([base.assign(suite="a"), base.assign(suite="b")])
    (row,) = [c for c in compare(published, twice) if c.entry.id == "t1-a"]
    assert row.variant == "" and row.seeds == 3


def load_published_text(tmp_path: Path, text: str) -> Published:
    path = tmp_path / "calibrated" / "demo2026.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    published = published_for("demo2026", path.parent)
    assert published is not None
    return published


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("paper: x\nentries:\n  - {id: a, value: 1, statistic: mean, match: {metric: loss}}",
         "exactly one of 'table' or 'figure'"),
        ("paper: x\nentries:\n  - {id: a, table: T, value: 1, statistic: avg, "
         "match: {metric: loss}}", "statistic must be one of"),
        ("paper: x\nentries:\n  - {id: a, table: T, value: one, statistic: mean, "
         "match: {metric: loss}}", "value must be a number"),
        ("paper: x\nentries:\n  - {id: a, table: T, value: 1, statistic: mean}",
         "missing key 'match'"),
        ("paper: x\ncolour: red\n", "unknown key 'colour'"),
        ("paper: x\nentries:\n  - {id: a, table: T, value: 1, statistic: mean, "
         "match: {metric: loss}}\n  - {id: a, table: T, value: 2, statistic: mean, "
         "match: {metric: loss}}", "unique"),
    ],
)
def test_published_schema_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(PublishedError, match=message):
        load_published(path)


def test_every_pdf_figure_embeds_truetype_fonts_not_type3(tmp_path: Path) -> None:
    """IEEE's and ACM's checks reject Type 3 fonts: save_figure embeds TrueType (the PDF's
    font dictionaries are plain objects, so their subtypes can be read from the bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reports.figures import save_figure, style

    style()
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1, 4, 9], label="noisy SGD, ε = 2")
    ax.set_xlabel(r"$\varepsilon$ (log scale)")
    ax.legend()
    save_figure(fig, tmp_path, "fonts")
    pdf = (tmp_path / "fonts.pdf").read_bytes()
    assert b"/Subtype /Type3" not in pdf
    assert b"/Subtype /TrueType" in pdf or b"/CIDFontType2" in pdf
