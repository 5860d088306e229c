"""Grid-search tuning: a choice on a grid edge grows the grid (``tuning: extend``) and the
edges left are recorded, with the final runs' ids, for the reports' premise."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
import yaml

from bench.experiment import parse_experiment
from bench.spec import SpecError, TuningRule
from bench.tuning import rungs, step_past
from reports.claims import tuned_inside_grid
from saddlebench import cli


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

    results: Any = SimpleNamespace(suites=[{"tuning": [choice]}])  # what the premise reads
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


def halving_doc(grid: list[float]) -> dict:
    doc = experiment(0, grid)
    doc["tuning"].update(seeds=3, halving=3)
    return doc


def test_successive_halving_runs_a_third_at_each_next_seed_and_chooses_among_finalists(
        tmp_path: Path) -> None:
    grid = [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4]
    choice = tuned(tmp_path, halving_doc(grid))
    sides = [json.loads(p.read_text()) for p in (tmp_path / "out" / "tuned" / "runs").glob(
        "*.json")]
    loss: dict[float, dict[int, float]] = {}  # lr -> seed -> final loss of its tuning runs
    for side in sides:
        if side["spec"].get("stage") == "tune":
            loss.setdefault(side["spec"]["algorithm"]["params"]["lr"], {})[
                side["spec"]["seed"]] = side["final"]["loss"]
    assert sorted(len(seeds) for seeds in loss.values()) == [1] * 6 + [2] * 2 + [3]  # 9, 3, 1
    assert all(sorted(seeds) == [1000, 1001, 1002][:len(seeds)] for seeds in loss.values())
    (final,) = [lr for lr, seeds in loss.items() if len(seeds) == 3]
    assert choice["chosen"]["lr"] == final
    assert [c["params"]["lr"] for c in choice["candidates"] if c["finalist"]] == [final]
    # the three kept after the first seed were the best three there (lowest loss)
    kept = [lr for lr, seeds in loss.items() if len(seeds) > 1]
    out = [lr for lr, seeds in loss.items() if len(seeds) == 1]
    assert max(loss[lr][1000] for lr in kept) <= min(loss[lr][1000] for lr in out)
    assert "successive halving" in choice["rule"]


def test_rungs_count_the_candidates_run_at_each_seed() -> None:
    three = (1000, 1001, 1002)
    assert rungs(675, TuningRule(seeds=three, halving=3)) == [675, 225, 75]
    assert rungs(45, TuningRule(seeds=three, halving=3)) == [45, 15, 5]
    assert rungs(10, TuningRule(seeds=three, halving=4)) == [10, 3, 1]
    assert rungs(675, TuningRule(seeds=three)) == [675] * 3
    with pytest.raises(ValueError, match="halving"):
        TuningRule(seeds=three, halving=1)
