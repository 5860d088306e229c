"""Every registered algorithm on every registered problem and each of its backends.

The grid is read from the registries (``algorithms.ALGORITHMS``, ``problems.PROBLEMS`` and
each problem's ``backends``), so a newly registered component is covered automatically.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields

import numpy as np
import pytest
from conftest import (
    DELTA,
    FAKE_DATA,
    SMALL_ALGO,
    SMALL_PARAMS,
    array_type,
    default_target,
    make_algorithm,
    make_setup,
    problem_backend_pairs,
    run_algorithm,
    to_numpy,
    unsupported,
)

from algorithms import ALGORITHMS, Plan, PrivacyTarget, Step, Trace, get_algorithm
from algorithms.premises import CLIP_SUFFIXES, PREMISES, clip_keys
from algorithms.privacy.accounting import Epsilons
from bench.check import iterate_failures, plan_failures, self_assignments
from bench.runner import run_one
from bench.spec import ComponentSpec, EvalSpec, RunSpec
from bench.store import flatten
from problems import PROBLEMS, get_problem
from problems.backend import BackendSpec

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
    alg, plan, mech, steps, trace = run_algorithm(alg_name, setup, steps=STEPS)

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
    assert len(steps) == plan.steps or (data_limited and 1 <= len(steps) <= plan.steps)
    assert all(isinstance(s.x, array_type(backend)) for s in steps)
    # numbered, x0's shape, finite, moving; an output; a recorded release (bench.check)
    assert not iterate_failures(plan, steps, trace, mech, setup.oracle.x0)
    assert isinstance(alg.diagnostics(trace), dict)


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


def test_output_before_the_run_raises() -> None:
    with pytest.raises(RuntimeError, match="before the run"):
        Trace().point()


# -- the pure interface --------------------------------------------------------------------

@pytest.mark.parametrize("alg_name", sorted(ALGORITHMS))
def test_plan_and_iterate_never_assign_to_self(alg_name: str) -> None:
    """No algorithm keeps per-run state on itself: no method (``plan``, ``iterate`` and all
    they call) assigns to ``self.<attr>`` (or ``self.<attr>[...]``), only ``__init__``."""
    assert not self_assignments(ALGORITHMS[alg_name])


@pytest.mark.parametrize("alg_name", sorted(ALGORITHMS))
def test_plan_returns_the_declared_extras_and_leaves_the_algorithm_alone(alg_name: str) -> None:
    cls = ALGORITHMS[alg_name]
    setup = make_setup("ncsc_double_well" if cls.minimax else "strict_saddle", "numpy")
    alg = make_algorithm(alg_name, setup.instance)
    assert not plan_failures(alg, setup.instance, default_target(alg))
    assert isinstance(alg.params, cls.Params) or alg_name == "dpsgd_gc"  # a PriSMA preset


def test_stored_extras_keep_their_flat_keys() -> None:
    """The sidecar's ``plan.extra`` is the flat dict reports read ``plan_<key>`` columns
    from: fields ``iterate`` alone needs are left out, nested constants are flattened, and
    the tight accountant's σ follows under ``calibration: paper``."""
    setup = make_setup("strict_saddle", "numpy")
    noisy = make_algorithm("noisy_sgd", setup.instance, select=True)
    extra = noisy.plan(setup.instance, PrivacyTarget(4.0, DELTA, "paper")).to_dict()["extra"]
    assert list(extra) == ["bound", "sensitivity", "abadi_max_epsilon", "d", "rho",
                           "smoothness", "query_sensitivity", "sigma_tight",
                           "sigma_tight_method", "noise_ratio_tight_over_paper"]
    minimax = make_setup("ncsc_double_well", "numpy")
    rgda = make_algorithm("dp_rgda", minimax.instance)
    extra = rgda.plan(minimax.instance, default_target(rgda)).to_dict()["extra"]
    assert "resolved" not in extra and {"queries", "schedule", "eps_bar"} <= set(extra)
    json.dumps(extra, allow_nan=False)


def test_dpsgd_gc_is_a_prisma_preset() -> None:
    gc = ALGORITHMS["dpsgd_gc"](ALGORITHMS["dpsgd_gc"].Params(lr=0.3, clip1=2.0))
    assert isinstance(gc, ALGORITHMS["prisma"])
    assert gc.params == ALGORITHMS["prisma"].Params(lr=0.3, clip1=2.0, gamma=1.0, clip3=None,
                                                    server_clip=False)
    assert set(vars(gc)) == {"params"}


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


# -- premise data -----------------------------------------------------------------------------

def premise_spec(alg_name: str, **overrides: object) -> RunSpec:
    """A small numpy run of ``alg_name`` (its :meth:`small_params`) on a problem with the
    constants every algorithm needs, evaluated at two points only (σ = 5: quick to account;
    spider_sosp's batches grow with σ, so it keeps σ = 1 and still takes O2 steps)."""
    cls = ALGORITHMS[alg_name]
    sigma = 1.0 if alg_name == "spider_sosp" else 5.0
    problem = "ncsc_double_well" if cls.minimax else "strict_saddle"
    params = cls.small_params(SMALL_ALGO, **overrides)
    return RunSpec(ComponentSpec(problem, SMALL_PARAMS[problem]),
                   ComponentSpec(alg_name, {f.name: getattr(params, f.name)
                                            for f in fields(params)}),
                   default_target(cls, sigma=sigma), BackendSpec(name="numpy"), seed=0,
                   eval=EvalSpec(points=2, metrics=("loss",)))


def check_clip(premises: dict, suffix: str) -> None:
    """A clip's entries agree: fraction in [0, 1], median ≤ max, max ≤ C ⇒ nothing clipped
    (and, for the main clip, max > C ⇒ something clipped)."""
    top, median, bound, fraction = (premises[k] for k in clip_keys(suffix))
    assert 0.0 <= fraction <= 1.0
    assert 0.0 <= median <= top
    assert bound > 0
    if top <= bound * (1 - 1e-12):
        assert fraction == 0.0, (suffix, premises)
    if not suffix:
        assert (fraction > 0) == (top > bound), premises


@pytest.mark.parametrize("alg_name", sorted(ALGORITHMS))
def test_premise_data_in_the_sidecar(alg_name: str) -> None:
    cls = ALGORITHMS[alg_name]
    assert set(cls.premises) <= set(PREMISES), "declared keys must be in the vocabulary"
    assert "steps_taken" in cls.premises
    record = run_one(premise_spec(alg_name))
    assert record.status == "done", record.error
    json.dumps(record.premises, allow_nan=False)  # plain JSON types, finite here
    premises = json.loads(json.dumps(record.sidecar(), default=str))["premises"]
    assert not set(premises) - set(PREMISES), "keys outside the vocabulary"
    assert not set(cls.premises) - set(premises), "declared, not recorded"
    for key in cls.premises:
        assert key == "data_exhausted_at" or premises[key] is not None, key
    last = max(r["step"] for r in record.rows if r["point"] == "iterate")
    assert premises["steps_taken"] == last >= 1
    if "data_exhausted_at" in cls.premises:
        assert cls.data_limited
        assert premises["data_exhausted_at"] in (None, premises["steps_taken"])
    if "horizon" in cls.premises:
        assert premises["horizon"] >= 1
    if "triggers" in cls.premises:
        assert isinstance(premises["triggers"], int) and premises["triggers"] >= 0
    for suffix in ("", *CLIP_SUFFIXES):
        if clip_keys(suffix)[-1] in cls.premises:
            check_clip(premises, suffix)
    row = flatten(json.loads(json.dumps(record.sidecar(), default=str)))
    for key, value in premises.items():
        assert row[f"prem_{key}"] == value


def test_premise_data_of_clipped_and_diverged_runs() -> None:
    # a clip far below the gradients' norms: every per-sample gradient clipped
    record = run_one(premise_spec("dp_sgd", clip=1e-3))
    assert record.premises["clipped_fraction"] == 1.0
    assert record.premises["max_per_sample_norm"] > record.premises["clip_bound"] == 1e-3
    # noisy SGD's fraction over its assumed bound is the diagnostics' violation count
    record = run_one(premise_spec("noisy_sgd", bound=0.3))
    seen = record.premises
    assert seen["clip_bound"] == record.diagnostics["bound"] == 0.3
    assert seen["max_per_sample_norm"] == record.diagnostics["max_per_sample_grad_norm"]
    assert (seen["clipped_fraction"] > 0) == record.diagnostics["guarantee_void"] is True
    # a diverging run still records what it gathered
    spec = premise_spec("noisy_sgd", lr=1e6, steps=100, bound=5.0)
    spec = RunSpec(ComponentSpec("nc_least_squares", SMALL_PARAMS["nc_least_squares"]),
                   spec.algorithm, spec.privacy, spec.backend, seed=0,
                   eval=EvalSpec(points=4, metrics=("loss",)))
    record = run_one(spec)
    assert record.status == "diverged", record.error
    assert record.premises["steps_taken"] >= 1
    assert record.premises["clipped_fraction"] > 0
    assert json.loads(json.dumps(record.sidecar(), default=str))["premises"]["clip_bound"] == 5.0


def test_data_exhaustion_is_recorded() -> None:
    # ada_dp_spider without a step cap on 200 samples, refreshes of 64: the data run out
    record = run_one(premise_spec("ada_dp_spider", steps=None, batch_refresh=64, batch_diff=8,
                                  kappa=1e-12))
    assert record.status == "done", record.error
    seen = record.premises
    assert seen["data_exhausted_at"] == seen["steps_taken"] >= 1
    assert seen["triggers"] >= 1  # the tiny κ makes the drift test refresh
