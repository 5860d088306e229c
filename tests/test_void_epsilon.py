"""Issue 40 item 5: a noisy SGD run whose per-sample gradient norms exceed its assumed bound
C has no guarantee, so it records ε = ∞ (void) with the norm that broke the bound; the
selection step's norms are checked against C too."""

from __future__ import annotations

import json
import math

import numpy as np
from conftest import make_setup, traced
from test_conformance import premise_spec

from algorithms import PrivacyTarget, get_algorithm
from algorithms.noisy_sgd import SELECTION
from algorithms.privacy.ledger import Mechanism
from bench.runner import run_one
from bench.store import _dumps, flatten


def test_a_run_over_its_bound_records_infinite_epsilon_with_the_norm() -> None:
    record = run_one(premise_spec("noisy_sgd", bound=0.3))
    assert record.status == "done" and record.eps is not None, record.error
    norm = record.diagnostics["max_per_sample_grad_norm"]
    assert record.diagnostics["guarantee_void"] is True and norm > 0.3
    assert all(math.isinf(record.eps[k]) for k in ("pld", "rdp", "gdp", "headline"))
    assert f"{norm:.4g}" in record.eps["void"] and "C = 0.3" in record.eps["void"]
    stored = json.loads(_dumps(record.sidecar()))  # strict JSON: ∞ as a string, read back
    row = flatten(stored)
    assert math.isinf(float(row["eps_pld"])) and row["diag_void_reason"] == record.eps["void"]


def test_a_run_within_its_bound_keeps_its_epsilon() -> None:
    record = run_one(premise_spec("noisy_sgd", bound=1e3))
    assert record.eps is not None and record.diagnostics["guarantee_void"] is False
    assert math.isfinite(record.eps["pld"]) and "void" not in record.eps


def test_the_selection_step_checks_its_candidates_against_the_bound() -> None:
    """Every record's norm at every candidate is checked against C, and counts in the run's
    largest norm and its violations."""
    setup = make_setup("strict_saddle", "numpy", d=6, n=400)
    cls = get_algorithm("noisy_sgd")
    alg = cls(cls.Params(steps=30, batch_size=40, select=True, candidates=5, bound=0.05))
    plan = alg.plan(setup.instance, PrivacyTarget(2.0, 1e-5))
    mech = Mechanism(setup.backend.noise_source(0), np.random.default_rng(1))
    _, trace = traced(alg, setup.oracle, plan, mech)
    checked = trace.clips[SELECTION]
    assert checked is not None and checked.seen == 5 * 400
    seen = checked.summary()
    assert seen["max"] is not None and seen["over"] is not None
    diag = alg.diagnostics(trace)
    assert diag["max_per_sample_grad_norm"] >= seen["max"] > 0.05
    assert diag["bound_violations"] >= seen["over"] > 0 and diag["guarantee_void"]
