"""Grid-search tuning: a choice on a grid edge grows the grid (``tuning: extend``) and the
edges left are recorded, with the final runs' ids, for the reports' premise."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from bench import cli
from bench.experiment import parse_experiment
from bench.spec import SpecError, TuningRule
from bench.tuning import step_past
from reports.claims import tuned_inside_grid


def experiment(extend: int, grid: list[float]) -> dict:
    return {
        "suite": "tuned", "seeds": 1, "eval": {"points": 2, "metrics": ["loss", "grad_norm"]},
        "tuning": {"metric": "loss", "goal": "min", "seeds": 1, "extend": extend},
        "problems": [{"name": "strict_saddle", "params": {"d": 3, "n": 50,
                                                          "init_scale": 1.0}}],
        "algorithms": [{"name": "sgd", "params": {"steps": 20, "batch_size": 5},
                        "tune": {"lr": grid}}],
    }


def tuned(tmp_path: Path, doc: dict) -> dict:
    path = tmp_path / "tuned.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    (choice,) = json.loads((out / "tuned" / "suite.json").read_text())["tuning"]
    return choice


@pytest.mark.parametrize(("values", "side", "expected"), [
    ([0.01, 0.1], "upper", 1.0), ([0.01, 0.1], "lower", 0.001),
    ([-1.0, 0.0, 1.0], "upper", 2.0), ([-1.0, 0.0, 1.0], "lower", -2.0),
    ([2, 4], "upper", 8), ([0, 1], "upper", 2),
])
def test_step_past_is_geometric_for_positive_grids(values: list[float], side: str,
                                                   expected: float) -> None:
    assert step_past(values, side) == pytest.approx(expected)


def test_a_choice_on_the_upper_edge_extends_the_grid(tmp_path: Path) -> None:
    # too small learning rates: the largest wins and the grid grows past it, twice
    choice = tuned(tmp_path, experiment(2, [1e-4, 2e-4]))
    assert choice["extended"] == [{"lr": pytest.approx(4e-4)}, {"lr": pytest.approx(8e-4)}]
    assert len(choice["candidates"]) == 4
    assert choice["chosen"]["lr"] == pytest.approx(8e-4)
    assert choice["edges"] == {"lr": "upper"}  # still on the edge after two extensions
    assert len(choice["run_ids"]) == 1
    assert "extends the grid" in choice["rule"]


def test_without_extend_the_edge_is_recorded_and_the_premise_fails(tmp_path: Path) -> None:
    choice = tuned(tmp_path, experiment(0, [1e-4, 2e-4]))
    assert choice["extended"] == [] and choice["edges"] == {"lr": "upper"}

    results = SimpleNamespace(suites=[{"tuning": [choice]}])
    check = tuned_inside_grid("lr")(pd.DataFrame({"run_id": choice["run_ids"]}), results)
    assert check.passed is False and "upper edge" in check.measured
    other = tuned_inside_grid("lr")(pd.DataFrame({"run_id": ["elsewhere"]}), results)
    assert other.passed is None


def test_extend_must_be_a_count() -> None:
    with pytest.raises(ValueError, match="extend"):
        TuningRule(extend=-1)
    doc = experiment(1, [1e-4, 2e-4])
    doc["tuning"]["extend"] = "yes"
    with pytest.raises(SpecError, match="extend"):
        parse_experiment(doc)
