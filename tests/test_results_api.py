"""bench.results.load: the documented way to read results as pandas frames."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.results import load
from saddlebench import cli

DOC = {"suite": "r", "seeds": 2, "privacy": {"epsilon": [1, 2], "delta": 1e-5},
       "eval": {"points": 3, "metrics": ["loss", "grad_norm"]},
       "problems": [{"name": "strict_saddle", "params": {"d": 3, "n": 40}}],
       "algorithms": [{"name": "dp_sgd", "params": {"lr": 0.1, "steps": 6, "batch_size": 4}},
                      {"name": "sgd", "params": {"steps": 6, "batch_size": 4}}]}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    path = root / "r.yaml"
    path.write_text(yaml.safe_dump(DOC))
    assert cli.main(["run", str(path), "--out", str(root / "out"), "--no-progress"]) == 0
    return root / "out"


def test_runs_and_long_curves(out: Path) -> None:
    res = load(out / "r")
    assert len(res.runs) == 2 * 2 + 2 and set(res.runs["suite"]) == {"r"}
    assert {"final_loss", "p_alg_lr", "eps_pld"} <= set(res.runs.columns)
    curves = res.curves()
    assert set(curves["metric"]) >= {"loss", "grad_norm"}
    assert set(curves["run_id"]) == set(res.runs["run_id"])
    assert {"label", "epsilon", "seed", "step", "value"} <= set(curves.columns)


def test_a_results_root_reads_every_suite(out: Path) -> None:
    assert len(load(out).runs) == len(load(out / "r").runs)


def test_nothing_there_says_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="expected a suite folder"):
        load(tmp_path)
