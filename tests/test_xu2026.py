"""xu2026 (DP RGDA): the minimax oracles' closed forms against autodiff and finite
differences, the strict saddle of matrix sensing, advanced composition, DP RGDA's
queries, sensitivities, escape and selection, the ERM schedule, the baselines' ledgers,
the rates schema, the calibrated Table 2 entries, and the known answers of every declared
claim (the page itself: tests/tiny/xu2026 and tests/test_paper_pages.py)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import make_mech, make_setup, run_steps, to_numpy, traced
from scipy.sparse.linalg import LinearOperator, eigsh

from algorithms import ALGORITHMS, PrivacyTarget, Trace, get_algorithm
from algorithms.dp_rgda import DPRGDA, eps_bar, erm_schedule
from algorithms.lambda_min import lambda_min_lanczos
from algorithms.minimax import release_pair
from algorithms.privacy.accounting import advanced_composition, calibrate, epsilon
from algorithms.privacy.ledger import Ledger, Mechanism, Release, Sampling
from bench.experiment import load_experiment, parse_experiment
from bench.spec import instantiate_params
from bench.studies.xu2026 import app_d_sigma
from problems import get_problem
from problems.backend import BackendSpec, get_backend
from problems.minimax import MinimaxOracle
from reports.known_answers import synthetic_results, verdict_of
from reports.paper import PaperResults
from reports.papers.xu2026.measures import DATA_SHARE, constant_differences
from reports.papers.xu2026.paper import DATA, PAPER, SUBSUMED
from reports.published import PublishedError, load_published, published_for
from reports.tables import compare

EXPERIMENTS = Path(__file__).resolve().parents[1] / "bench" / "experiments" / "xu2026"
TINY_DIR = Path(__file__).resolve().parent / "tiny" / "xu2026"
# the tiny experiment files of the page test, by file name (tests/test_browser.py uses them)
TINY = {p.name: yaml.safe_load(p.read_text()) for p in sorted(TINY_DIR.glob("*.yaml"))
        if p.name != "expected.yaml"}
MINIMAX = ("matrix_sensing", "ncsc_double_well")
F64 = BackendSpec(name="torch", dtype="float64")


def random_x(problem: str, seed: int = 0, scale: float = 0.5) -> np.ndarray:
    setup = make_setup(problem)
    return np.random.default_rng(seed).normal(0.0, scale, setup.instance.d)


def numpy_oracle(problem: str, **params) -> MinimaxOracle:
    oracle = make_setup(problem, **params).oracle
    assert isinstance(oracle, MinimaxOracle)
    return oracle


# -- closed forms vs autodiff and finite differences ------------------------------------------

@pytest.mark.parametrize("problem", MINIMAX)
def test_closed_forms_match_the_torch_inner_solve(problem: str) -> None:
    closed, auto = numpy_oracle(problem), make_setup(problem, F64).oracle
    be = make_setup(problem, F64).backend
    for seed in (0, 1):
        x = random_x(problem, seed)
        v = np.random.default_rng(10 + seed).standard_normal(len(x))
        assert float(auto.loss(be.asarray(x))) == pytest.approx(float(closed.loss(x)),
                                                                rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(to_numpy(auto.grad(be.asarray(x))), closed.grad(x),
                                   rtol=1e-8, atol=1e-11)
        np.testing.assert_allclose(to_numpy(auto.hvp(be.asarray(x), be.asarray(v))),
                                   closed.hvp(x, v), rtol=1e-7, atol=1e-10)
        y = closed.best_response(x) + 0.1
        idx = np.arange(7)
        for a, b in zip(auto.per_sample_partials(be.asarray(x), be.asarray(y), idx),
                        closed.per_sample_partials(x, y, idx), strict=True):
            np.testing.assert_allclose(to_numpy(a), b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("problem", MINIMAX)
def test_closed_forms_match_finite_differences(problem: str) -> None:
    oracle, x = numpy_oracle(problem), random_x(problem, 3)
    h, eye = 1e-6, np.eye(len(x))
    fd_grad = np.array([(oracle.loss(x + h * e) - oracle.loss(x - h * e)) / (2 * h)
                        for e in eye])
    np.testing.assert_allclose(oracle.grad(x), fd_grad, rtol=1e-5, atol=1e-8)
    v = np.random.default_rng(4).standard_normal(len(x))
    fd_hvp = (oracle.grad(x + h * v) - oracle.grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(oracle.hvp(x, v), fd_hvp, rtol=1e-5, atol=1e-7)
    # y*(x) is the inner maximiser (∇_y f = 0) and ∇Φ = ∇_x f(x, y*) (Danskin)
    y = oracle.best_response(x)
    gx, gy = oracle.partials(x, y)
    assert np.linalg.norm(gy) < 1e-12
    np.testing.assert_allclose(gx, oracle.grad(x), rtol=1e-12, atol=1e-14)


# -- the matrix-sensing instance ---------------------------------------------------------------

def dense_hessian(oracle: MinimaxOracle, x: np.ndarray) -> np.ndarray:
    h = np.stack([oracle.hvp(x, e) for e in np.eye(len(x))])
    return (h + h.T) / 2


def test_origin_is_a_strict_saddle_with_the_predicted_spectrum() -> None:
    setup = make_setup("matrix_sensing")
    inst, oracle = setup.instance, setup.oracle
    p, q, r = inst.p_.p, inst.p_.q, inst.p_.rank
    zero = np.zeros(inst.d)
    assert np.linalg.norm(oracle.grad(zero)) < 1e-14  # a critical point
    sv = np.linalg.svd(np.einsum("i,ipq->pq", inst.b, inst.a) / inst.n, compute_uv=False)
    predicted = np.sort(np.concatenate([np.repeat(sv, r), -np.repeat(sv, r),
                                        np.zeros(abs(p - q) * r)]))
    np.testing.assert_allclose(np.linalg.eigvalsh(dense_hessian(oracle, zero)), predicted,
                               atol=1e-12)
    assert inst.constants["lambda_min_at_saddle"] == pytest.approx(-sv[0], rel=1e-12)
    assert inst.constants["lambda_min_at_saddle"] < 0


def test_default_instance_saddle_and_scale() -> None:
    problem = get_problem("matrix_sensing")
    inst = problem().build(0)
    oracle = inst.oracle(get_backend(BackendSpec(name="numpy")))
    eigs = np.linalg.eigvalsh(dense_hessian(oracle, np.zeros(inst.d)))
    assert eigs[0] == pytest.approx(inst.constants["lambda_min_at_saddle"], rel=1e-10)
    assert np.sum(np.isclose(eigs, eigs[0], rtol=1e-8)) == 3  # multiplicity r
    assert inst.constants["x_star_fro"] == pytest.approx(20.0)
    # Φ(x₀) ≈ ‖X*‖²_F / (2pq) at the small init (notes §5.1)
    assert float(oracle.loss(oracle.x0)) == pytest.approx(400 / 800, rel=0.1)


def test_noise_free_minimum_has_r_squared_zero_eigenvalues() -> None:
    setup = make_setup("matrix_sensing", noise=0.0)
    inst, oracle = setup.instance, setup.oracle
    u, s, vt = np.linalg.svd(inst.x_star)
    r = inst.p_.rank
    x = np.concatenate([(u[:, :r] * np.sqrt(s[:r])).ravel(), (vt[:r].T * np.sqrt(s[:r])).ravel()])
    assert float(oracle.loss(x)) < 1e-25 and np.linalg.norm(oracle.grad(x)) < 1e-12
    eigs = np.linalg.eigvalsh(dense_hessian(oracle, x))
    tol = 1e-9 * eigs[-1]
    assert np.sum(np.abs(eigs) < tol) == r * r  # the GL(r) invariance
    assert eigs[0] > -tol


def test_lambda_min_matches_the_papers_finite_difference_estimator() -> None:
    oracle, x = numpy_oracle("matrix_sensing"), random_x("matrix_sensing", 5, 0.3)
    h = 5e-4

    def fd_hvp(v: np.ndarray) -> np.ndarray:
        return (oracle.grad(x + h * v) - oracle.grad(x - h * v)) / (2 * h)

    op = LinearOperator((len(x), len(x)), matvec=fd_hvp, dtype=float)
    paper = eigsh(op, k=1, which="SA", maxiter=500, tol=1e-4)[0][0]
    exact = np.linalg.eigvalsh(dense_hessian(oracle, x))[0]
    assert lambda_min_lanczos(oracle, x) == pytest.approx(exact, abs=1e-8)
    assert paper == pytest.approx(exact, abs=1e-4)


# -- advanced composition ------------------------------------------------------------------------

@pytest.mark.parametrize(("k", "z"), [(2040, 866.2), (4080, 1243.8), (400, 369.4)])
def test_advanced_composition_calibration_matches_the_notes(k: int, z: float) -> None:
    def ledger(sigma: float) -> Ledger:
        out = Ledger()
        out.record(Sampling("none", 400), [Release("gaussian", "q", sigma=sigma)], k)
        return out

    sigma = calibrate(ledger, 2.0, 1e-6, "advanced")
    assert sigma == pytest.approx(z, rel=2e-4)  # multiplier: std σ·2C/B, 8.66 at B = 200
    assert epsilon(ledger(sigma), 1e-6, "advanced") == pytest.approx(2.0, rel=1e-6)
    assert epsilon(ledger(sigma), 1e-6, "pld") < 0.5  # the same noise by PLD: far less ε


def test_advanced_composition_is_at_most_basic_and_handles_huge_epsilons() -> None:
    assert advanced_composition([(1e-9, 10)], 1e-6) == pytest.approx(
        10 * advanced_composition([(1e-9, 1)], 1e-6 / 10) / 1, rel=1e-6)
    mixed = advanced_composition([(5.0, 30), (50.0, 100)], 1e-5)
    assert mixed <= 30 * advanced_composition([(5.0, 1)], 1e-5 / 260) + 100 * \
        advanced_composition([(50.0, 1)], 1e-5 / 260)


# -- DP RGDA -------------------------------------------------------------------------------------

def small_rgda(**kw) -> DPRGDA:
    base = {"steps": 7, "period": 3, "inner_steps": 2, "batch_refresh": 20, "batch_diff": 8}
    return DPRGDA(DPRGDA.Params(**{**base, **kw}))


@pytest.mark.parametrize(("refresh_increment", "queries"), [(False, 3 + 7 * 2 - 3),
                                                           (True, 3 + 7 * 2)])
def test_dp_rgda_ledger_counts_queries_as_planned(refresh_increment: bool, queries: int) -> None:
    setup = make_setup("ncsc_double_well")
    alg = small_rgda(refresh_increment=refresh_increment)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=1e-6, sigma=3.0))
    mech = make_mech(setup.backend)
    run_steps(alg, setup.oracle, plan, mech)
    assert plan.extra.queries == queries
    counts = {rnd.releases[0].tag.split("_")[0]: count for rnd, count in mech.ledger.summary()}
    assert counts == {"refresh": 3, "increment": queries - 3}
    assert all(len(rnd.releases) == 2 for rnd, _ in mech.ledger.summary())  # x and y
    assert epsilon(mech.ledger, 1e-6, "pld") == pytest.approx(plan.eps.pld, rel=1e-9)


def test_paper_defaults_give_2000_joint_queries_and_noise_of_the_notes() -> None:
    setup = make_setup("matrix_sensing")
    data = get_problem("matrix_sensing")().build(0)
    alg = DPRGDA()
    plan = alg.plan(data, PrivacyTarget(epsilon=2.0, delta=1e-6, calibration="advanced"))
    assert plan.extra.queries == 2000
    assert plan.eps.advanced == pytest.approx(2.0, rel=1e-6)
    assert plan.extra.std_refresh == pytest.approx(plan.sigma * 2 / 200)
    assert plan.extra.std_increment == pytest.approx(plan.sigma * 2 / 50)
    literal = DPRGDA(DPRGDA.Params(refresh_increment=True)).plan(
        data, PrivacyTarget(epsilon=2.0, delta=1e-6, calibration="advanced"))
    assert literal.extra.queries == 2040
    # 2,040 joint queries, the x- and y-releases on one batch composed exactly as one
    # Gaussian mechanism of multiplier σ/√2 (notes §3: z = 866.2 for 2,040 queries)
    assert literal.sigma == pytest.approx(866.2 * math.sqrt(2), rel=2e-4)
    tight = DPRGDA().plan(data, PrivacyTarget(epsilon=2.0, delta=1e-6, calibration="pld"))
    assert tight.sigma < plan.sigma / 10
    assert setup.instance.name == "matrix_sensing"


def test_release_pair_clips_each_partial_and_scales_noise() -> None:
    backend = get_backend(BackendSpec(name="numpy"))
    mech = Mechanism(backend.noise_source(0), np.random.default_rng(0))
    batch = mech.sample(100, scheme="fixed", size=10)
    gx = np.full((10, 3), 1e3)  # far above the clip
    gy = np.zeros((10, 4))
    sigma, clip = 1e-12, 0.5
    vx, vy = release_pair(mech, np, gx, gy, bound=clip, batch=batch, sigma=sigma, tag="t")
    assert np.linalg.norm(vx) == pytest.approx(clip, rel=1e-9)
    np.testing.assert_allclose(vy, 0.0, atol=1e-9)
    ((rnd, count),) = mech.ledger.summary()
    assert count == 1 and {r.sensitivity for r in rnd.releases} == {2 * clip / 10}
    big = Mechanism(backend.noise_source(1), np.random.default_rng(1))
    batch = big.sample(100, scheme="fixed", size=10)
    noise = np.stack([release_pair(big, np, np.zeros((10, 3)), np.zeros((10, 4)), bound=clip,
                                   batch=batch, sigma=2.0, tag="t")[0] for _ in range(2000)])
    assert noise.std() == pytest.approx(2.0 * 2 * clip / 10, rel=0.05)


def test_movement_clipping_releases_nothing_for_a_zero_move() -> None:
    setup = make_setup("ncsc_double_well")
    alg = small_rgda(diff_clip_mode="movement", steps=3, period=10, inner_steps=1)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=1e-6, sigma=1e-9))
    mech = make_mech(setup.backend)
    x = setup.oracle.x0
    y, state = alg.inner(setup.oracle, mech, plan, 0, x, x, setup.oracle.y0, None)
    y2, state2 = alg.inner(setup.oracle, mech, plan, 1, x, x, y, state)
    # K = 1 after a refresh: only the k = 0 increment, from (x, y_{t,s}) to (x, y_{t+1}) —
    # the y-move is non-zero, so it is released with a bound proportional to the move
    sens = [r.sensitivity for rnd, _ in mech.ledger.summary() for r in rnd.releases
            if r.tag.startswith("increment")]
    moved = np.linalg.norm(to_numpy(y) - to_numpy(state.y))
    assert sens and sens[0] == pytest.approx(2 * moved / 8)
    # called again from the point its estimate is anchored at: no move, nothing released
    before = sum(c for _, c in mech.ledger.summary())
    alg.inner(setup.oracle, mech, plan, 2, x, x, state2.y, state2)
    assert sum(c for _, c in mech.ledger.summary()) == before == 2
    assert not np.array_equal(to_numpy(y2), to_numpy(y))


@pytest.mark.parametrize("select", ["next", "current"])
def test_select_modes_with_one_inner_step(select: str) -> None:
    setup = make_setup("ncsc_double_well")
    alg = small_rgda(inner_steps=1, select=select, lr_y=0.5)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=1e-6, sigma=1e-9))
    mech = make_mech(setup.backend)
    y0 = setup.oracle.y0
    y1, state = alg.inner(setup.oracle, mech, plan, 0, setup.oracle.x0, setup.oracle.x0, y0,
                          None)
    np.testing.assert_array_equal(state.y, y0)  # (v, u) estimate at y_{t,s}, s = 0
    if select == "current":
        np.testing.assert_array_equal(y1, y0)  # y never moves: the reason for "next"
    else:
        np.testing.assert_allclose(y1, y0 + 0.5 * state.u)


def test_dp_rgda_escapes_the_saddle_without_noise() -> None:
    setup = make_setup("ncsc_double_well", init=0.0, spread=0.0)
    oracle = setup.oracle
    assert np.linalg.norm(oracle.grad(oracle.x0)) < 1e-15  # x₀ = 0 is the saddle
    alg = DPRGDA(DPRGDA.Params(steps=300, period=5, inner_steps=2, batch_refresh=60,
                               batch_diff=60, lr=0.05, alpha=0.01, lr_escape=0.5,
                               radius=0.05, escape_steps=20))
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=math.inf, sigma=1e-9))
    _, trace = traced(alg, oracle, plan, make_mech(setup.backend))
    diag = alg.diagnostics(trace)
    assert diag["escape_triggers"] >= 1 and diag["escapes"] >= 1
    out = trace.point()
    assert np.linalg.norm(oracle.grad(out)) < 0.05
    assert np.linalg.eigvalsh(dense_hessian(oracle, out))[0] > 0  # a minimum, not the saddle


def test_dp_rgda_certifies_a_saddle_it_cannot_leave() -> None:
    setup = make_setup("ncsc_double_well", init=0.0, spread=0.0)
    alg = DPRGDA(DPRGDA.Params(steps=60, period=5, inner_steps=1, batch_refresh=60,
                               batch_diff=60, alpha=0.5, lr_escape=1e-4, radius=1e-6,
                               escape_steps=5, early_return=True))
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=math.inf, sigma=1e-9))
    steps, trace = traced(alg, setup.oracle, plan, make_mech(setup.backend))
    diag = alg.diagnostics(trace)
    assert diag["certificates"] == 1 and diag["stopped_at"] == len(steps) < 60
    np.testing.assert_array_equal(trace.point(), setup.oracle.x0)  # the anchor


def test_erm_schedule_values() -> None:
    inst = get_problem("ncsc_double_well")(get_problem("ncsc_double_well").Params(n=1000)
                                           ).build(0)
    target = PrivacyTarget(epsilon=2.0, delta=1e-6)
    e = eps_bar(inst, target)
    assert e == pytest.approx(math.sqrt(10 * math.log(1e6)) / 2000)
    p = erm_schedule(DPRGDA.Params(schedule="erm"), inst, target)
    assert (p.steps, p.period, p.inner_steps, p.batch_refresh, p.batch_diff) == (
        943, 30, 1, 1000, 33)
    assert p.alpha == pytest.approx(e ** (2 / 3)) and p.lr == pytest.approx(0.2 * e ** (2 / 3))
    with pytest.raises(ValueError, match="finite epsilon"):
        erm_schedule(DPRGDA.Params(schedule="erm"), inst, PrivacyTarget())


def test_erm_schedule_sets_lemma6_escape_threshold() -> None:
    """t_thres = Õ(1/(η_H α_H)), α_H = √(ρ_Φ α): it scales as 1/η_H and as α^{-1/2}
    (so as ε̄^{-1/3}), and D̄ = R²/t_thres² follows it (Lemma 6)."""
    inst = get_problem("ncsc_double_well")(get_problem("ncsc_double_well").Params(n=1000)
                                           ).build(0)
    rho = inst.constants["hessian_lipschitz"]

    def schedule(eps: float, **kw: float) -> DPRGDA.Params:
        return erm_schedule(DPRGDA.Params(schedule="erm", **kw), inst,
                            PrivacyTarget(epsilon=eps, delta=1e-6))

    p = schedule(2.0)
    expected = 2 * math.log(math.sqrt(inst.d) / p.radius) / (p.lr_escape * math.sqrt(rho * p.alpha))
    assert p.escape_steps == math.ceil(expected)
    assert p.movement == pytest.approx(p.escape_radius**2 / p.escape_steps**2)
    assert schedule(2.0, lr_escape=0.05).escape_steps == pytest.approx(4 * p.escape_steps, abs=1)
    small, large = schedule(8.0), schedule(0.5)  # ε̄ ÷ 4 and × 4 → t_thres × and ÷ 4^{1/3}
    assert small.escape_steps / p.escape_steps == pytest.approx(4 ** (1 / 3), rel=0.02)
    assert p.escape_steps / large.escape_steps == pytest.approx(4 ** (1 / 3), rel=0.02)


# -- baselines and compatibility -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["dp_sgda", "private_diff"])
def test_minimax_baselines_spend_what_they_plan(name: str) -> None:
    setup = make_setup("ncsc_double_well")
    cls = get_algorithm(name)
    alg = cls(cls.Params(steps=6))
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=1e-6,
                                                  calibration="advanced"))
    assert plan.eps.advanced == pytest.approx(2.0, rel=1e-6)
    mech = make_mech(setup.backend)
    steps = run_steps(alg, setup.oracle, plan, mech)
    assert len(steps) == 6
    assert epsilon(mech.ledger, 1e-6, "advanced") == pytest.approx(2.0, rel=1e-6)
    assert all(r.sigma == pytest.approx(plan.sigma) for rnd, _ in mech.ledger.summary()
               for r in rnd.releases)


def test_minimax_algorithms_refuse_and_skip_plain_problems() -> None:
    setup = make_setup("strict_saddle")
    for cls in (c for c in ALGORITHMS.values() if c.minimax):
        alg = cls(cls.Params(steps=3))
        with pytest.raises(TypeError, match="minimax problem"):
            next(alg.run(setup.oracle, alg.plan(setup.instance, PrivacyTarget(sigma=1.0)),
                         make_mech(setup.backend), Trace()))
    exp = parse_experiment({
        "suite": "mixed", "seeds": 1, "privacy": {"epsilon": 1},
        "problems": [{"name": "strict_saddle"}, {"name": "matrix_sensing"}],
        "algorithms": [{"name": "dp_rgda"}, {"name": "dp_sgd"}]})
    pairs = {(s.problem.name, s.algorithm.name) for s in exp.specs}
    assert pairs == {("strict_saddle", "dp_sgd"), ("matrix_sensing", "dp_sgd"),
                     ("matrix_sensing", "dp_rgda")}
    assert any("dp_rgda is a minimax algorithm" in s for s in exp.skipped)


# -- reports ------------------------------------------------------------------------------------

def test_published_tables_and_rates_load() -> None:
    published = published_for("xu2026")
    assert published is not None and len(published.entries) == 12
    ours = [r for r in published.rates if r.algorithm == "dp_rgda"]
    assert sorted((r.objective, r.privacy_exponent) for r in ours) == [
        ("empirical", pytest.approx(2 / 3)), ("population", 0.5)]


def test_rates_schema_is_validated(tmp_path: Path) -> None:
    bad = {"paper": "x", "entries": [], "rates": [{"method": "m", "table": "T", "problem": "max",
                                                    "objective": "empirical", "bound": "b",
                                                    "privacy_exponent": 1, "sosp": True}]}
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(PublishedError, match="minimax or minimization"):
        load_published(path)
    bad["rates"][0].update(problem="minimax", sosp="yes")
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(PublishedError, match="sosp"):
        load_published(path)


def test_experiment_files_are_valid() -> None:
    for scale in ("quick", "paper"):
        files = sorted((EXPERIMENTS / scale).glob("*.yaml"))
        assert [f.name for f in files] == ["rate_ncsc.yaml", "table2_literal.yaml",
                                           *(f"table2_scale{s}{part}.yaml" for s in (100, 20)
                                             for part in ("", "_inregime", "_references",
                                                          "_untuned"))]
        for path in files:
            exp = load_experiment(path)
            assert exp.paper == "xu2026" and exp.scale == scale and (exp.specs or exp.groups)
            assert not exp.skipped
            assert exp.roles and set(exp.roles) <= set(PAPER.roles)


def test_tiny_files_mirror_the_quick_ones() -> None:
    quick = {p.name: load_experiment(p) for p in sorted((EXPERIMENTS / "quick").glob("*.yaml"))}
    assert set(TINY) == set(quick)
    for name, doc in TINY.items():
        tiny = parse_experiment(doc)
        assert (tiny.suite, tiny.paper, tiny.scale, tiny.roles) == (
            quick[name].suite, "xu2026", "quick", quick[name].roles)
    expected = yaml.safe_load((TINY_DIR / "expected.yaml").read_text())
    assert set(expected["claims"]) <= {c.id for c in PAPER.claims}


# -- the published numbers: calibrated entries and diverged runs -------------------------------

def table2_run(label: str, loss: float, **extra: object) -> dict[str, object]:
    """One synthetic Table 2 run at ‖X*‖_F = 100 under the paper's calibration."""
    return {"role": "table2", "label": label, "algorithm": label, "problem": "matrix_sensing",
            "calibration": "advanced", "epsilon": 2.0, "delta": 1e-6,
            "p_prob_x_star_norm": 100.0, "final_loss": loss, "final_grad_norm": 1.0,
            "final_lambda_min": -0.1, **extra}


def test_calibrated_entries_never_count_and_diverged_runs_get_no_delta() -> None:
    published = published_for("xu2026")
    assert published is not None
    calibrated = {e.id for e in published.entries if e.calibrated}
    assert calibrated == {"t2-sto-spider-phi", "t2-sto-spider-lmin"}  # they set ‖X*‖_F = 100
    runs = [table2_run("sto_spider", 13.7 + 0.01 * s, seed=s, p_alg_grad_clip=1.0)
            for s in range(3)]  # App. D's C = 1: the literal variant the entries match
    runs += [table2_run("private_diff", 6e6, seed=s, status="diverged", p_alg_clip=1.0)
             for s in range(3)]
    runs += [table2_run("private_diff", 0.5, seed=s, p_alg_clip=10.0) for s in range(3)]
    results = synthetic_results("xu2026", runs)
    status = {c.entry.id: c for c in compare(published, results.runs)}
    assert status["t2-sto-spider-phi"].status == "calibrated"
    assert status["t2-sto-spider-lmin"].status == "calibrated"
    assert status["t2-sto-spider-grad"].status != "calibrated"
    pd_phi = status["t2-private-diff-phi"]
    assert pd_phi.status == "diverged" and pd_phi.delta is None and pd_phi.ours is None


# -- known answers of the declared claims --------------------------------------------------------

PHI0 = 13.2  # Φ(x₀) at ‖X*‖_F = 100


IN_REGIME = {  # our in-regime level (128, 1e-6) under PLD on the §5 instance
    "p_prob_p": 20, "p_prob_q": 20, "p_prob_rank": 3, "p_alg_clip": 1.0,
    "plan_std_refresh": 0.01, "plan_std_increment": 0.04, "sigma": 1.0, "epsilon": 128.0,
    "calibration": "pld"}


def table2_results(phi: dict[str, list[float]], lam: dict[str, list[float]] | None = None,
                   ref_ratio: float = 0.1, clipped: float = 0.1, depends: bool = True,
                   level: dict[str, object] | None = None,
                   constants: dict[str, dict[str, object]] | None = None) -> PaperResults:
    """Synthetic Table 2 runs at our in-regime level (or ``level``): per label, one run per
    Φ(x_T) in ``phi`` (λ_min(x_T) from ``lam``), each with a trajectory from Φ(x₀) = 13.2 to
    its x_T at T = 400, plus a σ → 0 reference of every label ending at ``ref_ratio`` Φ(x₀)
    (with ``constants[label]`` as its constants, the private runs' by default), the instance
    study (a share ``clipped`` of the per-sample y-partials clipped) and the data study (the
    methods' iterates ``depends`` on the data at this level). With the defaults every
    premise passes."""
    runs, curves = [], []
    refs = {f"{label}_nonprivate": [ref_ratio * PHI0] * 3 for label in phi}
    for label, values in {**phi, **refs}.items():
        for seed, loss in enumerate(values):
            extra: dict[str, object] = {**IN_REGIME, **(level or {}), "p_alg_alpha": 0.3}
            if label.endswith("_nonprivate"):
                extra.update(calibration="pld", epsilon=math.inf)
                extra.update((constants or {}).get(label.removesuffix("_nonprivate"), {}))
            lmin = lam[label][seed] if lam and label in lam else -0.1
            extra["final_lambda_min"] = lmin
            runs.append(table2_run(label, loss, seed=seed, steps=400, **extra))
            run_id = f"r{len(runs) - 1}"
            curves += [{"run_id": run_id, "step": 0, "loss": PHI0},
                       {"run_id": run_id, "step": 400, "loss": loss, "grad_norm": 1.0,
                        "lambda_min": lmin}]
    study = pd.DataFrame([{"scale": "100", "x_star_norm": 100.0, "data_seed": 0,
                           "clipped_y": clipped, "clipped_x": 0.0, "median_y": 0.5,
                           "median_x": 0.1, "saddle_ok": True}])
    at = {**IN_REGIME, **(level or {})}
    data = pd.DataFrame([{"variant": "judged level", "label": label, "x_star_norm": 100.0,
                          "epsilon": at["epsilon"], "calibration": at["calibration"], "seed": 0,
                          "steps": 40, "influence": 0.5 if depends else 0.001, "ratio": 0.9,
                          "ratio_zeros": 1.0} for label in phi])
    return synthetic_results("xu2026", runs, curves, {"instance": study, "data": data})


SPIDERS_HIGH = {"sto_spider": [13.0, 13.4, 13.7], "ada_dp_spider": [8.0, 8.1, 7.9]}


@pytest.mark.known_answer("xu2026", "C1")
def test_c1_held_contradicted_and_out_of_regime() -> None:
    held = verdict_of("xu2026", "C1", table2_results({"dp_rgda": [0.9, 1.0, 0.95],
                                                      **SPIDERS_HIGH}))
    assert held.verdict == "held" and len(held.settings) == 2  # one per SPIDER baseline
    assert all(p.passed is not False for s in held.settings for p in s.premises)  # untuned
    worse = verdict_of("xu2026", "C1", table2_results({"dp_rgda": [13.0, 13.1, 13.2],
                                                       "sto_spider": [1.0, 1.1, 0.9],
                                                       "ada_dp_spider": [1.0, 1.2, 1.1]}))
    assert worse.verdict == "contradicted"
    # the σ → 0 reference does not leave the saddle: nothing can be concluded
    frozen = verdict_of("xu2026", "C1", table2_results({"dp_rgda": [0.9, 1.0, 0.95],
                                                        **SPIDERS_HIGH}, ref_ratio=0.99))
    assert frozen.verdict == "out of regime"
    failed = {p.name: p.measured for s in frozen.settings for p in s.failed}
    assert "0.99" in failed["the σ → 0 reference leaves the saddle"]


@pytest.mark.known_answer("xu2026", "C1")
def test_c1_clipping_and_data_premises_take_settings_out_of_regime() -> None:
    phi = {"dp_rgda": [0.9, 1.0, 0.95], **SPIDERS_HIGH}
    clipped = verdict_of("xu2026", "C1", table2_results(phi, clipped=0.85))
    assert clipped.verdict == "out of regime"
    assert {p.name for s in clipped.settings for p in s.failed} == {"clipping inactive or mild"}
    recorded = table2_results(phi)  # the runs' own record (increment clip) counts as well
    recorded.runs["prem_clipped_fraction"] = 0.3
    recorded.runs["prem_clipped_fraction_diff"] = 0.9
    result = verdict_of("xu2026", "C1", recorded)
    assert result.verdict == "out of regime"
    assert "90% clipped" in result.settings[0].failed[0].measured
    # App. D's own noise level is the paper's regime: it is no premise (the Regime table)
    noisy = table2_results(phi)
    noisy.runs["plan_std_refresh"] = 12.1  # App. D's calibration: std 12.1 / 48.5
    noisy.runs["plan_std_increment"] = 48.5
    assert verdict_of("xu2026", "C1", noisy).verdict == "held"
    # iterates that do not depend on the data take the settings out of regime, loudly
    blind = verdict_of("xu2026", "C1", table2_results(phi, depends=False))
    assert blind.verdict == "out of regime"
    assert {p.name for s in blind.settings for p in s.failed} == {DATA.name}


@pytest.mark.known_answer("xu2026", "C1")
def test_c1_at_app_d_level_is_subsumed_by_d1() -> None:
    """At App. D's (2, 1e-6) under advanced composition the comparison is D1's: the setting
    is out of regime, naming D1, whatever the runs show."""
    phi = {"dp_rgda": [0.9, 1.0, 0.95], **SPIDERS_HIGH}
    app_d = verdict_of("xu2026", "C1", table2_results(
        phi, level={"epsilon": 2.0, "calibration": "advanced"}))
    assert app_d.verdict == "out of regime"
    failed = {p.name: p.measured for s in app_d.settings for p in s.failed}
    assert set(failed) == {SUBSUMED.name} and "claim D1" in failed[SUBSUMED.name]


@pytest.mark.known_answer("xu2026", "C1")
def test_the_reference_premise_fails_when_the_constants_differ() -> None:
    """A σ → 0 reference at other constants than the judged runs' (here α 0.03 against 0.3)
    cannot vouch for them: the premise fails, naming the difference; a tuned constant only
    has to lie inside the range its tuning searched."""
    phi = {"dp_rgda": [0.9, 1.0, 0.95], **SPIDERS_HIGH}
    other = verdict_of("xu2026", "C1", table2_results(
        phi, constants={"dp_rgda": {"p_alg_alpha": 0.03}}))
    assert other.verdict == "out of regime"
    failed = [p.measured for s in other.settings for p in s.failed]
    assert failed and all("alpha 0.03 ≠ 0.3" in m for m in failed)
    assert constant_differences({"p_alg_lr": 1e-3, "p_alg_clip": 10.0},
                                {"p_alg_lr": 0.2, "p_alg_clip": 10.0}, {"lr": (1e-2, 1.0)}) == []
    assert constant_differences({"p_alg_lr": 1e-3, "p_alg_clip": 10.0},
                                {"p_alg_lr": 2.0, "p_alg_clip": 2.0}, {"lr": (1e-2, 1.0)}) == [
        "lr 2 outside the tuned 0.01–1", "clip 2 ≠ 10"]


@pytest.mark.known_answer("xu2026", "C2")
def test_c2_on_progress_and_a_diverged_private_diff_is_reported_not_scored() -> None:
    close = verdict_of("xu2026", "C2", table2_results({"dp_rgda": [0.9, 0.92, 0.91],
                                                       "private_diff": [0.65, 0.66, 0.64]}))
    assert close.verdict == "held"  # progress 0.93 ≥ 0.95/1.5
    stuck = verdict_of("xu2026", "C2", table2_results({"dp_rgda": [13.1, 13.15, 13.2],
                                                       "private_diff": [0.65, 0.66, 0.64]}))
    assert stuck.verdict == "contradicted"  # DP-RGDA stays while PrivateDiff moves
    phi = {"dp_rgda": [0.9, 0.92, 0.91], "private_diff": [6e6, 5e6, 7e6]}
    blown = verdict_of("xu2026", "C2", table2_results(phi))
    (setting,) = blown.settings
    assert setting.diverged == 3 and setting.verdict == "inconclusive"
    assert setting.decision is not None and math.isnan(setting.decision.estimate)  # no number
    assert "3/3 runs diverged (excluded)" in setting.evidence()
    # a failing premise still takes the setting out of regime when the baseline diverged
    frozen = verdict_of("xu2026", "C2", table2_results(phi, ref_ratio=0.99))
    assert frozen.verdict == "out of regime" and frozen.settings[0].diverged == 3


@pytest.mark.known_answer("xu2026", "C2")
def test_c2_is_comparable_only_where_a_method_moves() -> None:
    """Two methods that both stay at x₀ are 'comparable' only on noise: out of regime."""
    both = {"dp_rgda": [PHI0, PHI0 * 1.001, PHI0 * 0.999],
            "private_diff": [PHI0 * 0.999, PHI0, PHI0 * 1.002]}
    result = verdict_of("xu2026", "C2", tuned(table2_results(both), {
        "dp_rgda": "lower", "private_diff": "lower"}))
    assert result.verdict == "out of regime"
    assert "neither moves" in result.settings[0].failed[0].measured


@pytest.mark.known_answer("xu2026", "C3")
def test_c3_held_and_inconclusive() -> None:
    phi = {"dp_rgda": [0.9, 1.0, 0.95], **SPIDERS_HIGH}
    milder = verdict_of("xu2026", "C3", table2_results(phi, {
        "dp_rgda": [-0.05, -0.048, -0.049], "sto_spider": [-0.22, -0.21, -0.23],
        "ada_dp_spider": [-0.14, -0.15, -0.145]}))
    assert milder.verdict == "held"
    spread = verdict_of("xu2026", "C3", table2_results(phi, {
        "dp_rgda": [-0.3, -0.01, -0.2], "sto_spider": [-0.25, -0.02, -0.15],
        "ada_dp_spider": [-0.28, -0.01, -0.18]}))
    assert spread.verdict == "inconclusive"
    assert all(s.decision is not None and s.decision.needed for s in spread.settings)


@pytest.mark.known_answer("xu2026", "P1")
def test_p1_verdict_and_its_controls_are_reported_apart() -> None:
    left = table2_results({"dp_rgda": [0.9, 1.0, 0.95]})
    result = verdict_of("xu2026", "P1", left)
    assert result.verdict == "held"  # 0.07 of Φ(x₀) < 0.5
    assert len(result.settings) == 1  # the σ → 0 runs are controls, not settings
    control = {c.name: c for c in result.controls}["σ → 0 dp_rgda, ‖X*‖_F = 100 (clip = 1)"]
    assert control.outcome == "as expected"
    assert set(control.run_ids).isdisjoint(result.settings[0].run_ids)
    stuck = verdict_of("xu2026", "P1", table2_results({"dp_rgda": [13.0, 13.1, 13.2]},
                                                      ref_ratio=0.99))
    assert stuck.verdict == "out of regime"
    assert {c.name: c.outcome for c in stuck.controls}[
        "σ → 0 dp_rgda, ‖X*‖_F = 100 (clip = 1)"] == "unexpected"
    # in regime (the reference leaves the saddle) but the private run stays: contradicted
    stays = verdict_of("xu2026", "P1", table2_results({"dp_rgda": [13.0, 13.3, 13.1]}))
    assert stays.verdict == "contradicted"
    app_d = verdict_of("xu2026", "P1", table2_results(
        {"dp_rgda": [13.0, 13.3, 13.1]}, level={"epsilon": 2.0, "calibration": "advanced"}))
    assert app_d.verdict == "out of regime"  # App. D's level: D1 decides


@pytest.mark.known_answer("xu2026", "A1")
def test_a1_charges_every_run_as_app_d_says() -> None:
    runs = [table2_run(label, 1.0, seed=s, eps_advanced=2.0, steps=400, sigma=1212.4)
            for label in ("dp_rgda", "dp_sgda") for s in range(2)]
    runs.append(table2_run("private_diff", 6e6, eps_advanced=2.0, steps=400, sigma=369.0,
                           status="diverged"))
    spider = {"algorithm": "ada_dp_spider", "eps_advanced": 0.74, "steps": 400}
    runs.append(table2_run("ada_dp_spider", 13.0, sigma=app_d_sigma(400), **spider))
    assert verdict_of("xu2026", "A1", synthetic_results("xu2026", runs)).verdict == "held"
    runs[0]["eps_advanced"] = 2.3  # one run spent more than planned
    runs[-1]["sigma"] = 136.48  # per pass: 60 rounds, not App. D's 400 oracle calls
    over = verdict_of("xu2026", "A1", synthetic_results("xu2026", runs))
    assert over.verdict == "contradicted"
    assert {s.setting: s.verdict for s in over.settings} == {  # a diverged run's ledger counts
        "label = ada_dp_spider": "contradicted", "label = dp_rgda": "contradicted",
        "label = dp_sgda": "held", "label = private_diff": "held"}
    assert "against App. D's 369.4" in next(
        s for s in over.settings if s.setting.endswith("ada_dp_spider")).evidence()


def test_app_d_sigma_is_advanced_composition_over_the_oracle_calls() -> None:
    """App. D's per-call σ for T = 400 queries (369.4, the notes' z) spends (2, 1e-6); the
    SPIDER entries at App. D's level run it."""
    assert app_d_sigma(400) == pytest.approx(369.43, rel=1e-4)
    assert advanced_composition([(app_d_sigma(400), 400)], 1e-6) == pytest.approx(2.0, rel=1e-9)
    for name in ("table2_scale100", "table2_scale20", "table2_literal",
                 "table2_scale100_untuned", "table2_scale20_untuned"):
        exp = load_experiment(EXPERIMENTS / "quick" / f"{name}.yaml")
        specs = [*exp.specs, *(c for g in exp.groups for c in g.candidates)]
        spiders = [r for r in specs if r.algorithm.name in ("ada_dp_spider", "dp_spider_at")
                   and math.isfinite(r.privacy.epsilon)]
        assert spiders
        for r in spiders:
            instance = get_problem(r.problem.name)(
                instantiate_params("problem", r.problem)).build(0)
            plan = get_algorithm(r.algorithm.name)(
                instantiate_params("algorithm", r.algorithm)).plan(instance, r.privacy)
            assert r.privacy.sigma == pytest.approx(app_d_sigma(plan.steps), rel=1e-9)


@pytest.mark.known_answer("xu2026", "D1")
def test_d1_decides_on_the_data_share_at_app_d_literal_constants() -> None:
    """D1 holds where the data move the iterates (share ≥ 0.1 on average over the Table 2
    methods and seeds), is contradicted where the iterates on the data and on zeros
    coincide, and its evidence names each method's share."""
    def data(share: float) -> PaperResults:
        rows = [{"variant": "App. D literal", "label": label, "x_star_norm": 100.0,
                 "epsilon": 2.0, "calibration": "advanced", "seed": seed, "steps": 400,
                 "influence": share * (1 + 0.1 * seed), "ratio": 1.0, "ratio_zeros": 1.0}
                for label in ("dp_rgda", "sto_spider", "ada_dp_spider", "private_diff")
                for seed in range(2)]
        return synthetic_results("xu2026", [], studies={"data": pd.DataFrame(rows)})

    learns = verdict_of("xu2026", "D1", data(0.6))
    assert learns.verdict == "held" and len(learns.settings) == 1
    noise = verdict_of("xu2026", "D1", data(4e-4))
    assert noise.verdict == "contradicted"
    assert "dp_rgda 0.00042" in noise.settings[0].evidence()
    assert verdict_of("xu2026", "D1", synthetic_results("xu2026", [])).verdict == "not run"


def rate_results(slope: float, alpha: float = 1.0, certified: int = 1, clipped: float = 0.0
                 ) -> PaperResults:
    """Rate-check runs whose best-iterate ‖∇Φ‖ (and output's) = c ε̄^slope (± 5 %), with
    α = c_α ε̄^{2/3} and a share ``clipped`` of per-sample partials clipped."""
    runs, curves = [], []
    for bar in (1e-3, 3e-3, 1e-2, 3e-2):
        for seed, wobble in enumerate((0.95, 1.0, 1.05)):
            grad = wobble * 0.5 * bar ** slope * 1e-2 ** (2 / 3 - slope)
            runs.append({"role": "rate", "label": "dp_rgda", "problem": "ncsc_double_well",
                         "seed": seed, "plan_eps_bar": bar, "p_alg_theory_alpha": alpha,
                         "steps": math.ceil(bar ** (-4 / 3)), "diag_certificates": certified,
                         "prem_clipped_fraction": clipped, "final_grad_norm": grad})
            curves += [{"run_id": f"r{len(runs) - 1}", "step": 1, "grad_norm": 3 * grad},
                       {"run_id": f"r{len(runs) - 1}", "step": 2, "grad_norm": grad}]
    return synthetic_results("xu2026", runs, curves)


@pytest.mark.known_answer("xu2026", "R1")
def test_r1_is_one_sided_and_needs_a_binding_bound() -> None:
    assert verdict_of("xu2026", "R1", rate_results(2 / 3 - 0.3)).verdict == "held"  # shallower
    assert verdict_of("xu2026", "R1", rate_results(1.2)).verdict == "contradicted"  # steeper
    loose = verdict_of("xu2026", "R1", rate_results(0.5, alpha=1e3))  # ‖∇Φ‖ ≪ α: vacuous
    assert loose.verdict == "out of regime"
    assert [p.name for s in loose.settings for p in s.failed] == ["the bound binds"]
    short = rate_results(0.5)
    short.runs["steps"] = 10
    assert verdict_of("xu2026", "R1", short).verdict == "out of regime"
    clipping = verdict_of("xu2026", "R1", rate_results(0.5, clipped=0.3))
    assert clipping.verdict == "out of regime"
    assert [p.name for s in clipping.settings for p in s.failed] == [
        "clipping inactive (the theory has no clipping)"]


@pytest.mark.known_answer("xu2026", "S1")
def test_s1_reads_the_instance_study() -> None:
    rows = pd.DataFrame([{"scale": s, "saddle_ok": True} for s in ("raw", "1", "20", "100")])
    held = verdict_of("xu2026", "S1", synthetic_results("xu2026", [], studies={"instance": rows}))
    assert held.verdict == "held" and len(held.settings) == 4
    rows.loc[2, "saddle_ok"] = False
    broken = verdict_of("xu2026", "S1", synthetic_results("xu2026", [],
                                                          studies={"instance": rows}))
    assert broken.verdict == "contradicted"
    none = verdict_of("xu2026", "S1", synthetic_results("xu2026", []))
    assert none.verdict == "not run"


def test_the_instance_study_computes_the_saddle_and_the_clipping() -> None:
    from bench.studies.xu2026 import _instance_row

    row = _instance_row(100.0, 0)
    assert row["saddle_ok"] and row["multiplicity"] == 3
    assert row["phi_x0"] == pytest.approx(13.2, rel=0.05)
    assert row["clipped_y"] > 0.5  # y-partials ≈ ‖X*‖_F/20 = 5 at the start: C = 1 clips them


def test_the_data_check_can_fail_both_ways() -> None:
    """The data share is about 1 without noise (zeroed data leave x₀ in place), 0 on data
    that are zeros already, and below the declared 0.1 under App. D's noise."""
    from bench.studies.xu2026 import data_influence, table2_specs, zeroed

    spec = next(r for r in table2_specs("quick", ("dp_rgda",))
                if r.problem.params["x_star_norm"] == 100)
    inst = get_problem("matrix_sensing")(get_problem("matrix_sensing").Params(
        p=4, q=3, rank=2, n=40, x_star_norm=100.0)).build(0)
    small = replace_steps(spec, 12)
    quiet = dataclasses.replace(small, privacy=PrivacyTarget(delta=1e-6, sigma=1e-9))
    assert data_influence(quiet, inst, steps=12) > 0.9
    assert data_influence(small, zeroed(inst), steps=12) == 0.0
    assert data_influence(small, inst, steps=12) < DATA_SHARE  # App. D's σ swamps the data


def replace_steps(spec, steps: int):  # type: ignore[no-untyped-def]
    params = {**spec.algorithm.params, "steps": steps, "batch_refresh": 20, "batch_diff": 8}
    return dataclasses.replace(spec, algorithm=dataclasses.replace(spec.algorithm,
                                                                   params=params))


def test_table2_tunes_every_private_method_alike() -> None:
    """Every private Table 2 method tunes lr on the same grid with ≥ 3 tuning seeds and an
    extension past an edge; the studies read the references' constants at the private target."""
    from bench.studies.xu2026 import table2_specs

    for s in (100, 20):
        exp = load_experiment(EXPERIMENTS / "quick" / f"table2_scale{s}.yaml")
        assert exp.tuning and len(exp.tuning.seeds) >= 3
        grids = {tuple(c.algorithm.params["lr"] for c in g.candidates) for g in exp.groups}
        assert len(exp.groups) == 5 and len(grids) == 1
    specs = table2_specs("quick")  # scale 20 has two sets of references (both levels)
    assert len(specs) == 14 and all(math.isfinite(r.privacy.epsilon) for r in specs)


def tuned(results: PaperResults, edges: dict[str, str | None]) -> PaperResults:
    """``results`` with one tuning group per label whose chosen lr sits on ``edges[label]``
    (None: inside its grid), as ``bench/tuning.py`` records it in the suite."""
    runs = results.runs
    results.suites[0]["tuning"] = [
        {"group": label, "chosen": {"lr": 1e-3}, "edges": {"lr": side} if side else {},
         "run_ids": runs.loc[runs["label"] == label, "run_id"].tolist()}
        for label, side in edges.items()]
    return results


@pytest.mark.known_answer("xu2026", "C1")
def test_c1_needs_each_method_at_its_best_step_and_one_moving() -> None:
    """A lower-edge lr is a method's best step only where it does not move (a smaller step
    only keeps x_T nearer x₀), and only beside a method that does: two methods stuck at x₀
    (App. D's level) are out of regime, as is a lower edge that moves, or an upper edge."""
    name = "each method at its best step, one of them moving (DP-RGDA and the baseline)"
    stuck_rgda = {"dp_rgda": [PHI0, PHI0 * 1.001, PHI0 * 0.999]}
    movers = {"sto_spider": [1.0, 1.1, 0.9], "ada_dp_spider": [2.0, 2.2, 2.1]}
    beside = verdict_of("xu2026", "C1", tuned(table2_results({**stuck_rgda, **movers}), {
        "dp_rgda": "lower", "sto_spider": None, "ada_dp_spider": None}))
    assert beside.verdict == "contradicted"
    assert all(p.passed for s in beside.settings for p in s.premises if p.name == name)
    frozen = {"sto_spider": [PHI0] * 3, "ada_dp_spider": [PHI0] * 3}
    both = verdict_of("xu2026", "C1", tuned(table2_results({**stuck_rgda, **frozen}), {
        "dp_rgda": "lower", "sto_spider": "lower", "ada_dp_spider": "lower"}))
    assert both.verdict == "out of regime"
    assert {p.name for s in both.settings for p in s.failed} == {name}
    assert "neither moves" in both.settings[0].failed[0].measured
    inside = verdict_of("xu2026", "C1", tuned(table2_results({**stuck_rgda, **frozen}), {
        "dp_rgda": "lower", "sto_spider": None, "ada_dp_spider": None}))  # chosen on noise
    assert inside.verdict == "out of regime"
    moving_edge = verdict_of("xu2026", "C1", tuned(table2_results(
        {"dp_rgda": [0.9, 1.0, 0.95], **movers}), {
        "dp_rgda": "lower", "sto_spider": None, "ada_dp_spider": None}))
    assert moving_edge.verdict == "out of regime"
    upper = verdict_of("xu2026", "C1", tuned(table2_results({**stuck_rgda, **movers}), {
        "dp_rgda": "lower", "sto_spider": "upper", "ada_dp_spider": None}))
    assert {s.setting.split("label = ")[1]: s.verdict for s in upper.settings} == {
        "ada_dp_spider": "contradicted", "sto_spider": "out of regime"}


@pytest.mark.known_answer("xu2026", "C1")
def test_c1_needs_every_tuned_constant_of_a_mover_inside_its_grid() -> None:
    """A method that moves with a tuned constant other than lr on an edge (here C_u) may do
    better past it: the setting is out of regime."""
    results = tuned(table2_results({"dp_rgda": [6.0, 6.5, 7.0], **SPIDERS_HIGH}), {
        "dp_rgda": None, "sto_spider": None, "ada_dp_spider": None})
    results.suites[0]["tuning"][0]["edges"] = {"diff_clip": "lower"}
    result = verdict_of("xu2026", "C1", results)
    assert result.verdict == "out of regime"
    assert all("diff_clip on the lower edge" in p.measured
               for s in result.settings for p in s.failed)


def test_the_in_regime_table2_file_keeps_the_constants_and_tunes_alike() -> None:
    """table2_scale100_inregime.yaml: the σ → 0 references' constants at ‖X*‖_F = 100
    (n = 400), (128, 1e-6) under PLD, 5 seeds, lr and C_u tuned alike on one grid each (and
    the y-step of DP-RGDA and PrivateDiff) on ≥ 3 tuning seeds with extensions, the
    references inside every grid; App. D's level (table2_scale*.yaml) keeps its privacy at 3
    seeds."""
    path = EXPERIMENTS / "quick" / "table2_scale100_inregime.yaml"
    exp = load_experiment(path)
    refs = {(r.label or r.algorithm.name).removesuffix("_nonprivate"): r for r in
            load_experiment(EXPERIMENTS / "quick" / "table2_scale100_references.yaml").specs}
    assert list(exp.roles) == ["table2"] and yaml.safe_load(path.read_text())["seeds"] == 5
    assert exp.tuning and len(exp.tuning.seeds) >= 3 and exp.tuning.extend >= 1
    for key, values in (("lr", {0.1, 1.0}), ("diff_clip", {1.0, 10.0})):
        assert all({c.algorithm.params[key] for c in g.candidates} == values
                   for g in exp.groups)
    for group in exp.groups:
        first = group.candidates[0]
        name = first.label or first.algorithm.name
        assert (first.privacy.epsilon, first.privacy.delta, first.privacy.calibration) == (
            128, 1e-6, "pld")
        assert first.problem.params == refs[name].problem.params
        grid = {k for k in first.algorithm.params
                if len({c.algorithm.params[k] for c in group.candidates}) > 1}
        assert grid == ({"lr", "diff_clip", "lr_y"} if name in ("dp_rgda", "private_diff")
                        else {"lr", "diff_clip"})
        ref = refs[name].algorithm.params
        assert {k: v for k, v in first.algorithm.params.items() if k not in grid} == {
            k: v for k, v in ref.items() if k not in grid}
        for k in grid:  # the reference inside the grid
            searched = [c.algorithm.params[k] for c in group.candidates]
            assert min(searched) <= ref[k] <= max(searched)
    assert {g.candidates[0].label or g.candidates[0].algorithm.name for g in exp.groups} == {
        "dp_rgda", "sto_spider", "ada_dp_spider", "private_diff"}
    for s in (100, 20):
        literal = EXPERIMENTS / "quick" / f"table2_scale{s}.yaml"
        assert yaml.safe_load(literal.read_text())["seeds"] == 3
        assert load_experiment(literal).groups[0].candidates[0].privacy.epsilon == 2
