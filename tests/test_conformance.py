"""Every registered algorithm on every registered problem and each of its backends.

The grid is read from the registries (``algorithms.ALGORITHMS``, ``problems.PROBLEMS`` and
each problem's ``backends``), so a newly registered component is covered automatically.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import (
    DELTA,
    FAKE_DATA,
    array_type,
    default_target,
    make_algorithm,
    make_setup,
    problem_backend_pairs,
    run_algorithm,
    to_numpy,
    unsupported,
)

from algorithms import ALGORITHMS, Plan, PrivacyTarget, Step, get_algorithm
from algorithms.privacy.accounting import Epsilons
from problems import PROBLEMS, get_problem

STEPS = 4

GRID = [
    pytest.param(alg, prob, backend, id=f"{alg}-{prob}-{backend}")
    for alg in sorted(ALGORITHMS)
    for prob, backend in problem_backend_pairs()
    if PROBLEMS[prob].minimax or not ALGORITHMS[alg].minimax
]


def test_registries_are_populated() -> None:
    assert {"sgd", "dp_sgd", "noisy_sgd"} <= set(ALGORITHMS)
    assert {"strict_saddle", "nc_least_squares", "digits_mlp"} <= set(PROBLEMS)
    for name, cls in ALGORITHMS.items():
        assert cls.name == name
        assert get_algorithm(name) is cls
    for name, pcls in PROBLEMS.items():
        assert pcls.name == name
        assert get_problem(name) is pcls
        assert pcls.backends, f"{name} declares no backend"


def test_fake_data_entries_are_registered_problems() -> None:
    assert set(FAKE_DATA) <= set(PROBLEMS)


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="nope"):
        get_algorithm("nope")
    with pytest.raises(ValueError, match="nope"):
        get_problem("nope")


@pytest.mark.parametrize(("alg_name", "prob_name", "backend"), GRID)
def test_plan_iterate_output(alg_name: str, prob_name: str, backend: str) -> None:
    setup = make_setup(prob_name, backend)
    if reason := unsupported(alg_name, setup.instance):
        pytest.skip(reason)
    alg, plan, mech, steps = run_algorithm(alg_name, setup, steps=STEPS)

    assert isinstance(plan, Plan)
    # single-pass algorithms may stop when the data run out
    data_limited = alg.data_limited
    assert plan.steps == STEPS or (data_limited and 1 <= plan.steps < STEPS)
    assert plan.n == setup.instance.n
    assert isinstance(plan.eps, Epsilons)
    if alg.private:
        assert plan.sigma == 1.0
        assert plan.eps.headline is not None and 0 < plan.eps.headline < math.inf
    else:
        assert plan.sigma == 0.0
        assert plan.eps.headline == math.inf

    assert all(isinstance(s, Step) for s in steps)
    assert [s.t for s in steps] == list(range(1, len(steps) + 1))
    assert len(steps) == plan.steps or (data_limited and 1 <= len(steps) <= plan.steps)
    d = setup.instance.d
    for s in steps:
        assert isinstance(s.x, array_type(backend)), type(s.x)
        x = to_numpy(s.x)
        assert x.shape == (d,)
        assert np.all(np.isfinite(x))
    # the iterate moves (every algorithm takes a gradient or noise step)
    assert not np.array_equal(to_numpy(steps[-1].x), to_numpy(setup.oracle.x0))

    out = alg.output()
    assert isinstance(out, array_type(backend))
    assert to_numpy(out).shape == (d,)
    assert np.all(np.isfinite(to_numpy(out)))

    # the realised ledger is accounted like the plan's
    assert mech.ledger.summary(), "the run recorded no release"
    assert isinstance(alg.diagnostics(), dict)


@pytest.mark.parametrize(("alg_name", "prob_name", "backend"), GRID)
def test_deterministic_given_seeds(alg_name: str, prob_name: str, backend: str) -> None:
    setup = make_setup(prob_name, backend)
    if reason := unsupported(alg_name, setup.instance):
        pytest.skip(reason)
    runs = [run_algorithm(alg_name, setup, steps=STEPS)[3] for _ in range(2)]
    for a, b in zip(*runs, strict=True):
        assert a.t == b.t
        np.testing.assert_array_equal(to_numpy(a.x), to_numpy(b.x))  # bitwise on CPU


@pytest.mark.parametrize("alg_name", sorted(a for a, c in ALGORITHMS.items() if c.private))
def test_seeds_matter(alg_name: str) -> None:
    setup = make_setup("ncsc_double_well" if ALGORITHMS[alg_name].minimax else "strict_saddle",
                       "numpy")
    x1 = run_algorithm(alg_name, setup, steps=STEPS, noise_seed=1)[3][-1].x
    x2 = run_algorithm(alg_name, setup, steps=STEPS, noise_seed=7)[3][-1].x
    assert not np.array_equal(x1, x2)


def test_output_before_iterate_raises() -> None:
    alg = make_algorithm("sgd")
    with pytest.raises(RuntimeError, match="before iterate"):
        alg.output()


@pytest.mark.parametrize("alg_name", sorted(a for a, c in ALGORITHMS.items() if c.private))
def test_private_algorithm_needs_epsilon_or_sigma(alg_name: str) -> None:
    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm(alg_name, setup.instance)
    with pytest.raises(ValueError, match="private"):
        alg.plan(setup.instance, PrivacyTarget(epsilon=math.inf, delta=DELTA))
    # with a sigma the same target is accepted and spends a finite ε
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=math.inf, delta=DELTA, sigma=1.0))
    assert plan.sigma == 1.0
    assert plan.eps.pld is not None and math.isfinite(plan.eps.pld)


@pytest.mark.parametrize("alg_name", sorted(a for a, c in ALGORITHMS.items() if not c.private))
def test_nonprivate_plan_reports_infinite_epsilon(alg_name: str) -> None:
    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm(alg_name, setup.instance)
    plan = alg.plan(setup.instance, default_target(alg))
    assert plan.eps.pld == plan.eps.rdp == math.inf
    assert plan.calibration == "none"


@pytest.mark.parametrize(
    "kwargs",
    [{"epsilon": 0.0}, {"epsilon": -1.0}, {"delta": 0.0}, {"delta": 1.0}, {"delta": 2.0},
     {"calibration": "magic"}, {"sigma": 0.0}, {"sigma": -1.0}],
)
def test_privacy_target_validation(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        PrivacyTarget(**kwargs)


def test_plan_to_dict_is_json_serialisable() -> None:
    import json

    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm("dp_sgd", setup.instance)
    plan = alg.plan(setup.instance, default_target(alg))
    d = json.loads(json.dumps(plan.to_dict()))
    assert d["sigma"] == 1.0
    assert d["steps"] == plan.steps
    assert d["eps"]["headline"] == pytest.approx(plan.eps.headline)
