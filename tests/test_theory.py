"""The theory page: published rate tables with the exponents our runs fit beside them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from algorithms import ALGORITHMS
from reports.published import PUBLISHED_DIR, Rate, published_for
from reports.theory import (
    FIT_COLUMNS,
    NO_IMPLEMENTATION,
    NO_RUNS,
    _fits_by_algorithm,
    all_results,
    build_theory_page,
    exponent_points,
    theory_tables,
)

FITTED_ON = FIT_COLUMNS[0]
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
SEEDS = (0, 1, 2)


def papers_with_rates() -> list[str]:
    return [p.stem for p in sorted(PUBLISHED_DIR.glob("*.yaml"))
            if (pub := published_for(p.stem)) is not None and pub.rates]


def a_rate_with_an_implementation() -> tuple[str, int, Rate]:
    for paper in papers_with_rates():
        published = published_for(paper)
        assert published is not None
        for i, rate in enumerate(published.rates):
            if rate.algorithm:
                return paper, i, rate
    pytest.skip("no published rate names an implementation")


def write_suite(root: Path, suite: str, algorithm: str, exponent: float, *,
                scale: str = "quick", paper: str | None = "xu2026") -> None:
    """Finished fake runs whose final ‖∇F‖ is 3·ε^exponent times a little seeded noise."""
    rng = np.random.default_rng(7)
    runs = root / suite / "runs"
    runs.mkdir(parents=True)
    (root / suite / "suite.json").write_text(json.dumps(
        {"suite": suite, "paper": paper, "scale": scale, "description": ""}))
    for eps in EPSILONS:
        for seed in SEEDS:
            run_id = f"{suite}-{eps}-{seed}"
            value = 3.0 * eps**exponent * float(np.exp(rng.normal(0.0, 0.02)))
            side = {"run_id": run_id, "status": "done",
                    "spec": {"problem": {"name": "strict_saddle", "params": {"d": 10}},
                             "algorithm": {"name": algorithm, "params": {"lr": 0.1}},
                             "privacy": {"epsilon": eps, "delta": 1e-6, "calibration": "pld"},
                             "backend": {"name": "numpy", "device": "cpu", "dtype": "float64"},
                             "seed": seed},
                    "plan": {"n": 1000, "steps": 10, "batch_size": 10},
                    "environment": {"git_sha": "0123456789abcdef"},
                    "final": {"grad_norm": value, "loss": value}}
            trajectory = pd.DataFrame({"run_id": [run_id], "step": [10], "point": ["output"],
                                       "grad_norm": [value]}).to_parquet(index=False)
            side["trajectory"] = {"sha256": hashlib.sha256(trajectory).hexdigest()}
            (runs / f"{run_id}.parquet").write_bytes(trajectory)
            (runs / f"{run_id}.json").write_text(json.dumps(side))


def blocks(table: dict[str, Any]) -> list[list[list[str]]]:
    """The rows of a table grouped per rate row (a block starts with a non-empty first cell)."""
    out: list[list[list[str]]] = []
    for row in table["rows"]:
        assert all(isinstance(c, str) for c in row) and len(row) == len(table["columns"])
        if row[0]:
            out.append([])
        out[-1].append(row)
    return out


def fit_cells(table: dict[str, Any], block: list[list[str]], predictor: str) -> dict[str, str]:
    first = table["columns"].index("predictor")
    line = next(r for r in block if r[first] == predictor)
    return dict(zip(table["columns"][first:], line[first:], strict=True))


def paper_table(tables: list[dict[str, Any]], paper: str) -> dict[str, Any]:
    return next(t for t in tables if t["title"].startswith(f"{paper}:"))


def rate_block(tables: list[dict[str, Any]], paper: str, index: int
               ) -> tuple[dict[str, Any], list[list[str]]]:
    table = paper_table(tables, paper)
    return table, blocks(table)[index]


def first_fit_cell(table: dict[str, Any], block: list[list[str]]) -> str:
    return block[0][table["columns"].index(FITTED_ON)]


def test_an_exact_power_law_in_epsilon_is_fitted_and_the_prediction_is_inside(
        tmp_path: Path) -> None:
    paper, index, rate = a_rate_with_an_implementation()
    assert rate.algorithm
    write_suite(tmp_path, "s_quick", rate.algorithm, -rate.privacy_exponent)
    write_suite(tmp_path, "s_paper", rate.algorithm, -0.05, scale="paper")  # another scale
    write_suite(tmp_path, "smoke", rate.algorithm, -0.05, paper=None)  # no paper: left out
    tables = theory_tables(tmp_path, "quick")
    table, block = rate_block(tables, paper, index)
    cells = fit_cells(table, block, "ε")
    assert float(cells["fitted (95 % CI)"].split()[0]) == pytest.approx(
        -rate.privacy_exponent, abs=0.03)
    assert cells["predicted"] == f"{-rate.privacy_exponent:+.3f}"
    assert cells["predicted vs CI"] == "inside"
    assert len(block) == 1  # one fit (the other two suites are not used), one predictor
    setting = first_fit_cell(table, block)
    provenance = block[0][table["columns"].index(FIT_COLUMNS[-1])]
    assert setting.startswith("s_quick · strict_saddle")
    assert provenance.startswith(f"{len(EPSILONS) * len(SEEDS)} runs")
    assert "0123456789" in provenance

    declared = tables[-1]
    assert declared["title"].startswith("The rate each registered algorithm declares")
    ours = next(b for b in blocks(declared) if b[0][0] == rate.algorithm)
    assert fit_cells(declared, ours, "ε")["fitted (95 % CI)"] == cells["fitted (95 % CI)"]


def test_a_power_law_with_the_wrong_exponent_is_outside(tmp_path: Path) -> None:
    paper, index, rate = a_rate_with_an_implementation()
    assert rate.algorithm
    write_suite(tmp_path, "s", rate.algorithm, -rate.privacy_exponent / 3)
    table, block = rate_block(theory_tables(tmp_path, "quick"), paper, index)
    cells = fit_cells(table, block, "ε")
    assert float(cells["fitted (95 % CI)"].split()[0]) == pytest.approx(
        -rate.privacy_exponent / 3, abs=0.03)
    assert cells["predicted vs CI"] == "outside"


def test_rates_without_scaling_runs_or_implementation_say_so(tmp_path: Path) -> None:
    _, _, chosen = a_rate_with_an_implementation()
    assert chosen.algorithm
    write_suite(tmp_path, "s", chosen.algorithm, -chosen.privacy_exponent)
    tables = theory_tables(tmp_path, "quick")
    seen = set()
    for paper in papers_with_rates():
        published = published_for(paper)
        assert published is not None
        table = paper_table(tables, paper)
        for rate, block in zip(published.rates, blocks(table), strict=True):
            first = first_fit_cell(table, block)
            if rate.algorithm is None:
                assert first == NO_IMPLEMENTATION
            elif rate.algorithm != chosen.algorithm:
                assert first == NO_RUNS and len(block) == 1
            else:
                assert first.startswith("s · ")
            seen.add(first)
    assert NO_RUNS in seen
    declared = tables[-1]
    declared_blocks = blocks(declared)
    assert {b[0][0] for b in declared_blocks} == set(ALGORITHMS)
    assert all(first_fit_cell(declared, b) == NO_RUNS
               for b in declared_blocks if b[0][0] != chosen.algorithm)


def test_every_paper_with_rates_appears_and_the_page_is_self_contained(tmp_path: Path) -> None:
    _, _, rate = a_rate_with_an_implementation()
    assert rate.algorithm
    write_suite(tmp_path / "results", "s", rate.algorithm, -rate.privacy_exponent)
    out = build_theory_page(tmp_path / "results", tmp_path / "theory")
    html = (out / "index.html").read_text()
    papers = papers_with_rates()
    assert papers
    for p in papers:
        assert re.search(rf'<h2 id="table-\d+">{p}:', html)
    assert "inside" in html and NO_RUNS in html and "What is fitted" in html
    assert "http://" not in html and "https://" not in html  # nothing fetched: offline
    resources = re.findall(r'<(?:link|script)[^>]*(?:href|src)="([^"]+)"', html)
    assert resources and all(r.startswith("../") for r in resources)  # the site's static/
    manifest = json.loads((out / "latex.json").read_text())
    assert len(manifest["tables"]) == len(papers) + 1
    assert all((out / t["fragment"]).is_file() for t in manifest["tables"])


def test_an_empty_results_root_gives_every_table_without_numbers(tmp_path: Path) -> None:
    tables = theory_tables(tmp_path, "quick")
    assert len(tables) == len(papers_with_rates()) + 1
    for table in tables:
        assert not any(c in ("inside", "outside") for row in table["rows"] for c in row)


def test_the_figure_puts_each_fit_beside_the_exponent_its_bound_predicts(tmp_path: Path) -> None:
    _, _, rate = a_rate_with_an_implementation()
    assert rate.algorithm
    write_suite(tmp_path / "results", "s", rate.algorithm, -rate.privacy_exponent)
    points = exponent_points(_fits_by_algorithm(all_results(tmp_path / "results", "quick")))
    ours = points[(points["algorithm"] == rate.algorithm) & (points["predictor"] == "ε")]
    exact = ours[np.isclose(ours["predicted"].astype(float), -rate.privacy_exponent)]
    assert len(exact) == 1 and bool(exact["inside"].iloc[0])
    assert float(exact["fitted"].iloc[0]) == pytest.approx(-rate.privacy_exponent, abs=0.03)
    out = build_theory_page(tmp_path / "results", tmp_path / "theory")
    assert '<img src="exponents.png"' in (out / "index.html").read_text()
    assert all((out / f).is_file() for f in ("exponents.png", "exponents.pdf",
                                             "exponents_column.pdf"))
    assert json.loads((out / "latex.json").read_text())["figures"][0]["pdf"] == "exponents.pdf"
