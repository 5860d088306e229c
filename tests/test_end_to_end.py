"""End to end: experiment YAML → runs → store → report, and the report's numbers are the store's."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bench.experiment import load_experiment
from saddlebench.cli import main

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "bench" / "experiments" / "smoke.yaml"


def small_smoke(tmp_path: Path) -> Path:
    """The smoke experiment with fewer steps, seeds and ε values (same problems, algorithms)."""
    doc = yaml.safe_load(SMOKE.read_text())
    doc["suite"] = "smoke_small"
    doc["seeds"] = 2
    doc["privacy"]["epsilon"] = [1, 4]
    doc["eval"]["points"] = 4
    for alg in doc["algorithms"]:
        alg["params"]["steps"] = 30
    path = tmp_path / "smoke_small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_smoke_experiment_file_is_valid() -> None:
    exp = load_experiment(SMOKE)
    # 3 problems x (sgd once + 2 private algorithms x 4 eps) x 3 seeds
    assert exp.suite == "smoke"
    assert len(exp.specs) == 3 * (1 + 2 * 4) * 3
    assert {s.problem.name for s in exp.specs} == {"strict_saddle", "nc_least_squares",
                                                   "digits_mlp"}
    assert {s.algorithm.name for s in exp.specs} == {"sgd", "dp_sgd", "noisy_sgd"}


def _sidecars(suite: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((suite / "runs").glob("*.json"))]


def _expected_summary(sidecars: list[dict]) -> pd.DataFrame:
    """Mean and s.e. per cell, computed straight from the sidecars (not via reports/)."""
    rows = []
    for side in sidecars:
        spec = side["spec"]
        eps = float(spec["privacy"]["epsilon"])
        for key, value in side["final"].items():
            if key in ("step", "time_s", "point"):
                continue
            rows.append({"problem": spec["problem"]["name"],
                         "label": spec["label"] or spec["algorithm"]["name"], "epsilon": eps,
                         "metric": key, "value": float(value)})
    frame = pd.DataFrame(rows)
    grouped = frame.groupby(["problem", "label", "epsilon", "metric"])["value"]
    return grouped.agg(mean="mean", se=lambda v: v.std(ddof=1) / math.sqrt(len(v))).reset_index()


def test_experiment_to_store_to_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    experiment = small_smoke(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(experiment), "--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    suite = out / "smoke_small"
    sidecars = _sidecars(suite)
    assert len(sidecars) == 3 * (1 + 2 * 2) * 2
    assert {s["status"] for s in sidecars} == {"done"}
    for side in sidecars:
        assert (suite / "runs" / f"{side['run_id']}.parquet").is_file()
        assert side["environment"]["versions"]["numpy"]
        assert side["final"]["point"] == "output"

    # a rerun runs nothing
    capsys.readouterr()
    assert main(["run", str(experiment), "--out", str(out), "--no-progress"]) == 0
    assert "0 to run" in capsys.readouterr().out

    assert main(["report", str(suite)]) == 0
    report = suite / "report"
    for name in ("index.html", "summary.csv", "utility_vs_epsilon.png", "utility_vs_epsilon.pdf",
                 "tables/grad_norm.tex", "tables/grad_norm_fragment.tex"):
        assert (report / name).is_file(), name

    # the report's numbers are the store's numbers
    ours = pd.read_csv(report / "summary.csv")
    expected = _expected_summary(sidecars)
    merged = expected.merge(ours, on=["problem", "label", "epsilon", "metric"],
                            suffixes=("_store", "_report"))
    assert len(merged) == len(expected) == len(ours)
    np.testing.assert_allclose(merged["mean_report"], merged["mean_store"], rtol=1e-12)
    np.testing.assert_allclose(merged["se_report"], merged["se_store"], rtol=1e-9)

    html = (report / "index.html").read_text()
    tex = (report / "tables" / "grad_norm_fragment.tex").read_text()
    cell = merged[(merged["metric"] == "grad_norm") & (merged["label"] == "dp_sgd")].iloc[0]
    assert f"{cell['mean_store']:.4g} ± {cell['se_store']:.2g}" in html
    assert f"{cell['mean_store']:.4g} \\ensuremath{{\\pm}} {cell['se_store']:.2g}" in tex

    # every local link and image of the page exists
    for target in re.findall(r'(?:href|src)="([^"#:]+)"', html):
        assert (report / target).is_file(), target

    # the whole site of the results root carries the suite's report and its LaTeX
    assert main(["report", str(out), "--no-pdf"]) == 0
    site = out / "report"
    assert 'href="suites/smoke_small/index.html"' in (site / "index.html").read_text()
    assert (site / "suites" / "smoke_small" / "summary.csv").read_text() == \
        (report / "summary.csv").read_text()
    assert "suites/smoke_small/tables/grad_norm_fragment.tex" in \
        (site / "report.tex").read_text()
    assert not (site / "theory").exists()  # no paper suites: no theory page


@pytest.mark.slow
def test_full_smoke_experiment(tmp_path: Path) -> None:
    """The README's main job, as it runs for a new user (about a minute on 2 cores)."""
    out = tmp_path / "out"
    assert main(["run", str(SMOKE), "--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    assert main(["report", str(out / "smoke")]) == 0
    assert (out / "smoke" / "report" / "index.html").is_file()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_latex_table_compiles(tmp_path: Path) -> None:
    experiment = small_smoke(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(experiment), "--out", str(out), "--no-progress"]) == 0
    assert main(["report", str(out / "smoke_small")]) == 0
    tables = out / "smoke_small" / "report" / "tables"
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                             "grad_norm.tex"], cwd=tables, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout[-2000:]
    assert (tables / "grad_norm.pdf").is_file()
