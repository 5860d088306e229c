"""The run frame's declared columns (bench/columns.py): every column a stored run's row
holds is declared; a closed family catches a misspelt parameter; a paper whose claim reads
an undeclared column is refused when it is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.columns import undeclared
from bench.experiment import parse_experiment
from bench.runner import run_one
from bench.store import Store
from reports.claims import Claim, Paper, Runs, Statistic
from reports.paper import flag_divergence
from reports.rules import Always


def test_every_column_of_a_stored_private_run_is_declared(tmp_path: Path) -> None:
    doc = {"suite": "cols", "seeds": 1, "eval": {"points": 3, "metrics": ["loss", "grad_norm"]},
           "problems": [{"name": "strict_saddle", "params": {"d": 5, "n": 200}}],
           "algorithms": [{"name": "dp_sgd", "params": {"lr": 0.05, "steps": 10,
                                                        "batch_size": 16, "clip": 1.0}}],
           "privacy": {"epsilon": [1.0]}}
    store = Store(tmp_path / "cols")
    for spec in parse_experiment(doc).specs:
        store.write(run_one(spec))
    runs, curves = store.runs_and_trajectories()
    frame = flag_divergence(runs.assign(suite="cols"), curves, 100.0)
    assert not frame.empty and undeclared(frame.columns) == []


def test_closed_families_name_their_members_and_open_ones_take_any() -> None:
    assert undeclared(["p_prob_clients", "p_alg_lr", "eps_pld", "prem_steps_taken",
                       "diag_anything", "final_test_acc", "time_run"]) == []
    assert undeclared(["p_prob_clinets", "eps_renyi", "colour"]) == [
        "colour", "eps_renyi", "p_prob_clinets"]


def test_a_claim_reading_an_undeclared_column_is_refused_at_load() -> None:
    claim = Claim("C", "s", "Figure 1", Runs(("fig",), by=("p_prob_clinets",)),
                  Statistic("x", lambda runs, results: None), Always("x"), kind="paper",
                  where="§5")
    with pytest.raises(ValueError, match=r"reads columns \['p_prob_clinets'\]"):
        Paper("p", "t", "s", (claim,), {"fig": "Figure 1"},
              lambda results, out: None)  # type: ignore[arg-type,return-value]
