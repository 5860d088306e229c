"""tao2025 (Gauss-PSGD): single-use sampling and its accounting, the Ada-DP-SPIDER oracle's
noise and estimation error, the escape logic, the reconstructed baseline and its selections,
the experiment files and the page."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import make_setup

from algorithms import PrivacyTarget, get_algorithm
from algorithms.ada_dp_spider import SpiderOracle, per_pass_budget
from algorithms.dp_spider_at import HELD_OUT
from algorithms.privacy.accounting import epsilon, epsilons
from algorithms.privacy.ledger import Ledger, Mechanism, Pool, Release, Sampling
from bench import cli
from bench.runner import run_one
from bench.spec import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "bench" / "experiments" / "tao2025"
SADDLE = {"d": 6, "n": 4000, "sigma1": 0.0, "sigma2": 0.0}  # no per-sample noise: ∇f_i(0) = 0


def algorithm(name: str, **params: Any) -> Any:
    cls = get_algorithm(name)
    return cls(cls.Params(**params))


def mechanism(setup: Any, seed: int = 0) -> Mechanism:
    return Mechanism(setup.backend.noise_source(seed), np.random.default_rng(seed + 1))


# -- single-use sampling and parallel composition -------------------------------------------

def test_pool_uses_every_record_at_most_once_per_pass() -> None:
    mech = Mechanism(None, np.random.default_rng(0))
    pool = mech.pool(np.arange(100, 200), epochs=3)
    passes: dict[int, list[int]] = {}
    while (batch := pool.take(30)) is not None:
        passes.setdefault(batch.sampling.epoch, []).extend(batch.indices.tolist())
    assert sorted(passes) == [0, 1, 2]
    for used in passes.values():
        assert len(used) == 90 == len(set(used))  # 3 batches of 30; the 10 left over unused
        assert set(used) <= set(range(100, 200))
    assert passes[0] != passes[1]  # a fresh permutation every pass
    assert pool.take(30) is None and pool.progress == pytest.approx(3.0)
    with pytest.raises(ValueError):
        Pool(mech, np.arange(5), 0, 0)


def test_disjoint_rounds_compose_in_parallel_within_a_pass() -> None:
    ledger = Ledger()
    for epoch in range(3):
        for sigma in (2.0, 5.0, 3.0):  # within a pass only the least noisy batch counts
            ledger.record(Sampling("disjoint", 1000, size=10, rate=0.01, epoch=epoch),
                          [Release("gaussian", "q", sigma=sigma, sensitivity=1.0)])
    plain = Ledger()
    plain.record(Sampling(), [Release("gaussian", "q", sigma=2.0, sensitivity=1.0)], 3)
    assert epsilons(ledger, 1e-5) == epsilons(plain, 1e-5)
    assert epsilons(ledger, 1e-5).gdp is not None  # no amplification is claimed: exact GDP


def test_paper_calibration_is_definition_8_per_pass() -> None:
    alg = algorithm("ada_dp_spider", epochs=1)
    for eps, sigma in ((0.5, 9.69), (1.0, 4.84), (2.0, 2.42)):  # notes §4 multipliers
        assert alg.paper_sigma(None, PrivacyTarget(eps, 1e-5, "paper")) == pytest.approx(
            sigma, abs=0.01)
    eps1, delta1 = per_pass_budget(2.0, 1e-5, 20)
    assert eps1 == pytest.approx(2.0 / (2 * math.sqrt(40 * math.log(2e5))))
    assert delta1 == pytest.approx(1e-5 / 40)
    multi = algorithm("ada_dp_spider", epochs=20)
    sigma = multi.paper_sigma(None, PrivacyTarget(2.0, 1e-5, "paper"))
    assert multi.paper_epsilon(None, sigma, 1e-5) == pytest.approx(2.0)


def test_run_ledger_matches_the_plan_and_the_target() -> None:
    setup = make_setup("strict_saddle", "numpy", **SADDLE, clients=2)
    alg = algorithm("ada_dp_spider", lr=0.1, batch_refresh=100, batch_diff=40, epochs=2)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5, "pld"))
    mech = mechanism(setup)
    list(alg.iterate(setup.oracle, plan, mech))
    assert epsilons(mech.ledger, 1e-5) == plan.eps
    assert plan.eps.pld == pytest.approx(1.0, rel=2e-3)
    assert {r.sampling.party for r, _ in mech.ledger.summary()} == {0, 1}
    assert alg.diagnostics()["epochs_used"] == pytest.approx(2.0)


# -- the oracle -----------------------------------------------------------------------------

def spy_gaussian(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    original = Mechanism.gaussian

    def spy(self: Mechanism, value: Any, **kw: Any) -> Any:
        out = original(self, value, **kw)
        calls.append({**kw, "value": np.asarray(value), "noisy": np.asarray(out)})
        return out

    monkeypatch.setattr(Mechanism, "gaussian", spy)
    return calls


def test_oracle_noise_and_sensitivities_follow_the_paper(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """T8: O1 noise std σ·2G/b₁, O2 noise std σ·2M‖x_{t−1} − x_{t−2}‖/b₂."""
    calls = spy_gaussian(monkeypatch)
    setup = make_setup("nc_least_squares", "numpy", clients=1, base_n=3000, d=5)
    p = get_algorithm("ada_dp_spider").Params(lr=0.05, batch_refresh=200, batch_diff=50,
                                             kappa=10.0, grad_clip=2.0, diff_clip=3.0)
    plan = get_algorithm("ada_dp_spider")(p).plan(setup.instance,
                                                   PrivacyTarget(1.0, 1e-5, sigma=2.5))
    spider = SpiderOracle(p, setup.oracle, plan, mechanism(setup))
    x0 = setup.oracle.x0
    x1 = x0 + 0.3
    spider.estimate(x0, None)
    spider.estimate(x1, x0)
    (o1, o2) = calls
    assert o1["tag"] == "O1" and o1["sensitivity"] == pytest.approx(2 * 2.0 / 200)
    step = np.linalg.norm(x1 - x0)
    assert o2["tag"] == "O2" and o2["sensitivity"] == pytest.approx(2 * 3.0 * step / 50)
    assert o1["sigma"] == o2["sigma"] == 2.5
    assert spider.refreshes == 1 and spider.differences == 1


def test_distributed_average_has_one_mth_of_the_variance() -> None:
    """At the noiseless saddle every per-sample gradient is 0: the O1 answer is pure noise,
    with per-coordinate std σ·2G/b₁/√m after the server's average."""
    for m in (1, 4):
        setup = make_setup("strict_saddle", "numpy", d=2000, n=2000, sigma1=0.0, sigma2=0.0,
                           clients=m)
        p = get_algorithm("ada_dp_spider").Params(batch_refresh=100, grad_clip=1.0)
        plan = get_algorithm("ada_dp_spider")(p).plan(setup.instance,
                                                       PrivacyTarget(1.0, 1e-5, sigma=3.0))
        spider = SpiderOracle(p, setup.oracle, plan, mechanism(setup))
        g = spider.estimate(setup.oracle.x0, None)
        assert np.std(g) == pytest.approx(3.0 * 2 / 100 / math.sqrt(m), rel=0.05)


def test_estimation_error_without_noise_is_the_sampling_error() -> None:
    """With negligible privacy noise, SPIDER's estimate tracks ∇F(x_{t−1}) to within the
    minibatch error, O2 recursions included (each sample used once)."""
    setup = make_setup("nc_least_squares", "numpy", clients=1, base_n=20000, d=5)
    p = get_algorithm("ada_dp_spider").Params(lr=0.05, batch_refresh=2000, batch_diff=500,
                                             kappa=0.5, grad_clip=1e6, diff_clip=1e6)
    plan = get_algorithm("ada_dp_spider")(p).plan(setup.instance,
                                                   PrivacyTarget(1.0, 1e-5, sigma=1e-9))
    spider = SpiderOracle(p, setup.oracle, plan, mechanism(setup))
    x, x_prev, errors = setup.oracle.x0, None, []
    per_sample = setup.oracle.per_sample_grads(x, np.arange(setup.instance.n))
    spread = math.sqrt(np.sum(np.var(per_sample, axis=0)))  # √trace Cov of ∇f_i at x₀
    while (g := spider.estimate(x, x_prev)) is not None:
        errors.append(np.linalg.norm(g - setup.oracle.grad(x)))
        x_prev, x = x, x - p.lr * g
        spider.moved(x, x_prev)
    assert spider.differences > spider.refreshes > 0
    # the refresh's sampling error (std ≈ spread/√b₁) dominates; O2 steps add little
    assert max(errors) < 3 * spread / math.sqrt(p.batch_refresh)
    assert np.mean(errors) > 0.2 * spread / math.sqrt(p.batch_refresh)  # not trivially zero


def test_gauss_psgd_returns_the_anchor_when_it_cannot_escape() -> None:
    """With the radius out of reach, every escape round fails and x̃ (the saddle) is output."""
    setup = make_setup("strict_saddle", "numpy", **SADDLE)
    alg = algorithm("gauss_psgd", lr=0.01, batch_refresh=200, batch_diff=50, grad_clip=1.5,
                    chi=1.0, escape_steps=5, escape_rounds=3, radius=100.0)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5, "paper"))
    list(alg.iterate(setup.oracle, plan, mechanism(setup)))
    diag = alg.diagnostics()
    assert diag["termination"] == "sosp" and diag["triggers"] == 1
    assert diag["escape_rounds"] == 3 and diag["escapes"] == 0 and diag["escape_steps"] == 15
    np.testing.assert_array_equal(alg.output(), setup.oracle.x0)
    assert diag["refreshes"] == 4  # the trigger's O1 plus one forced O1 per round (T4)


def test_gauss_psgd_escapes_the_saddle_with_privacy_noise_alone() -> None:
    setup = make_setup("strict_saddle", "numpy", **SADDLE)
    alg = algorithm("gauss_psgd", lr=0.1, batch_refresh=100, batch_diff=25, grad_clip=1.5,
                    diff_clip=1.0, chi=0.05, escape_steps=50, escape_rounds=3, radius=0.3)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5, "paper"))
    list(alg.iterate(setup.oracle, plan, mechanism(setup)))
    diag = alg.diagnostics()
    assert diag["triggers"] >= 1 and diag["escapes"] >= 1
    assert setup.instance.lambda_min(alg.output()) > 0.5  # far from the saddle's −1


# -- the baseline and its selections ----------------------------------------------------------

def test_baseline_injects_escape_noise_near_saddles() -> None:
    setup = make_setup("strict_saddle", "numpy", **SADDLE)
    alg = algorithm("dp_spider_at", lr=0.1, batch_refresh=100, batch_diff=25, grad_clip=1.5,
                    small_grad=0.5, frozen_steps=5)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5, "paper"))
    list(alg.iterate(setup.oracle, plan, mechanism(setup)))
    assert alg.diagnostics()["escape_injections"] >= 1
    assert "selected" not in alg.diagnostics()


def test_above_threshold_selection_uses_held_out_records_only(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    setup = make_setup("strict_saddle", "numpy", **SADDLE)
    alg = algorithm("dp_spider_at", lr=0.1, batch_refresh=100, batch_diff=25, grad_clip=1.5,
                    selection="above_threshold", select_epsilon=0.5, alpha=0.1, candidates=5,
                    estimator="lanczos", selection_fraction=0.2)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5, "pld"))
    pools: list[np.ndarray] = []
    original = Mechanism.pool
    monkeypatch.setattr(Mechanism, "pool", lambda self, population, **kw: (
        pools.append(np.asarray(population)) or original(self, population, **kw)))
    mech = mechanism(setup)
    list(alg.iterate(setup.oracle, plan, mech))
    (train,) = pools
    assert len(train) == 3200  # 20% of 4000 held out, never trained on
    groups = {r.sampling.party: r for r, _ in mech.ledger.summary()}
    assert HELD_OUT in groups and groups[HELD_OUT].releases[0].kind == "pure"
    spent = epsilons(mech.ledger, 1e-5)
    assert spent.pld == pytest.approx(max(plan.eps.pld, 0.5), rel=1e-6)
    assert "selection_passed" in alg.diagnostics()
    with pytest.raises(ValueError, match="use selection: distributed"):
        alg.plan(make_setup("strict_saddle", "numpy", **SADDLE, clients=2).instance,
                 PrivacyTarget(1.0, 1e-5))


def test_algorithm_4_releases_and_accounts_per_client() -> None:
    setup = make_setup("strict_saddle", "numpy", **SADDLE, clients=2)
    alg = algorithm("dp_spider_at", lr=0.1, batch_refresh=100, batch_diff=25, grad_clip=1.5,
                    diff_clip=1.0, selection="distributed", select_epsilon=1.0, alpha=0.1,
                    candidates=4)
    plan = alg.plan(setup.instance, PrivacyTarget(1.0, 1e-5, "paper"))
    mech = mechanism(setup)
    list(alg.iterate(setup.oracle, plan, mech))
    held = [(r, c) for r, c in mech.ledger.summary() if r.sampling.party >= HELD_OUT]
    assert {r.sampling.party for r, _ in held} == {HELD_OUT, HELD_OUT + 1}
    for rnd, count in held:
        assert count <= 4 and [x.tag for x in rnd.releases] == ["alg4_grad", "alg4_hessian"]
        assert rnd.releases[1].sensitivity == pytest.approx(
            math.sqrt(6) * rnd.releases[0].sensitivity * 1.0 / 1.5)
    # the paper's advanced-composition noise gives at most its ε_s on the held-out groups
    only_selection = Ledger.from_summary(held)
    assert epsilon(only_selection, 1e-5, "pld") <= 1.0
    grad, eig = alg._alg4_thresholds(d=6, m=2, n=200, delta=1e-5)
    assert grad > 0.1 and eig > math.sqrt(1.0 * 0.1)


# -- experiment files and the page ----------------------------------------------------------

def test_experiment_files_are_valid() -> None:
    for scale, count in (("quick", 3), ("paper", 2)):
        files = sorted((EXPERIMENTS / scale).glob("*.yaml"))
        assert len(files) == count
        for path in files:
            exp = load_experiment(path)
            assert exp.paper == "tao2025" and exp.scale == scale and exp.specs


def test_paper_scale_experiments_run_a_few_steps(tmp_path: Path) -> None:
    from test_data_loaders import write_cifar, write_mnist

    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    write_mnist(raw, raw, gz=False, n=(60, 20))
    write_cifar(tmp_path, "cifar10")
    for path in sorted((EXPERIMENTS / "paper").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        doc.update(seeds=1, backend={"name": "torch", "dtype": "float32"})
        doc["privacy"]["epsilon"] = [1]
        doc["problems"] = doc["problems"][1:2]  # two clients
        params = doc["problems"][0]["params"]
        params.update(data_dir=str(tmp_path), n_train=None, chunk_size=8, eval_chunk=16,
                      partition="iid")
        for alg in doc["algorithms"]:
            alg["params"].update(batch_refresh=4, batch_diff=2, epochs=1)
        for spec in parse_experiment(doc, str(path)).specs:
            record = run_one(spec)
            assert record.status == "done", (path.name, record.error)
            assert record.rows[-1].get("epoch") is not None


TINY = {
    "fig1_digits_mlp.yaml": {
        "suite": "tao2025_quick_fig1_digits_mlp", "paper": "tao2025", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": [1, 2], "delta": 1e-5, "calibration": "pld"},
        "eval": {"points": 2, "metrics": ["loss", "test"]}, "backend": {"name": "torch"},
        "problems": [{"name": "digits_mlp", "params": {"hidden": 8, "activation": "relu",
                                                       "init": "kaiming"},
                      "sweep": {"clients": [1, 2]}}],
        "algorithms": [
            {"name": "gauss_psgd", "params": {"lr": 0.01, "batch_refresh": 64,
                                              "batch_diff": 32, "epochs": 2}},
            {"name": "dp_spider_at", "params": {"lr": 0.01, "batch_refresh": 64,
                                                "batch_diff": 32, "epochs": 2}}]},
    "saddle.yaml": {
        "suite": "tao2025_quick_saddle", "paper": "tao2025", "scale": "quick", "seeds": 2,
        "privacy": {"epsilon": 1, "delta": 1e-5, "calibration": "paper"},
        "eval": {"points": 2, "metrics": ["grad_norm", "lambda_min"]},
        "problems": [{"name": "strict_saddle", "params": SADDLE}],
        "algorithms": [
            {"name": "gauss_psgd", "params": {"lr": 0.1, "batch_refresh": 100, "batch_diff": 25,
                                              "grad_clip": 1.5, "chi": 0.05,
                                              "escape_steps": 50, "radius": 0.3}},
            {"name": "dp_spider_at", "params": {"lr": 0.1, "batch_refresh": 100,
                                                "batch_diff": 25, "grad_clip": 1.5}}]},
    "selection_dimension.yaml": {
        "suite": "tao2025_quick_selection_dimension", "paper": "tao2025", "scale": "quick",
        "seeds": 2, "privacy": {"epsilon": 1, "delta": 1e-5, "calibration": "paper"},
        "eval": {"points": 2, "metrics": ["grad_norm", "lambda_min"]},
        "problems": [{"name": "strict_saddle", "params": {**SADDLE, "clients": 2},
                      "sweep": {"d": [4, 64, 256]}}],
        "algorithms": [
            {"name": "gauss_psgd", "params": {"lr": 0.1, "batch_refresh": 100, "batch_diff": 25,
                                              "grad_clip": 1.5, "chi": 0.05,
                                              "escape_steps": 50, "radius": 0.3}},
            {"name": "dp_spider_at", "label": "dp_spider_at+alg4",
             "params": {"lr": 0.1, "batch_refresh": 100, "batch_diff": 25, "grad_clip": 1.5,
                        "selection": "distributed", "alpha": 0.1, "candidates": 3}}]},
}


def test_reproduce_writes_the_paper_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "experiments" / "tao2025" / "quick"
    folder.mkdir(parents=True)
    for name, doc in TINY.items():
        (folder / name).write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(cli, "EXPERIMENTS", tmp_path / "experiments")
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--no-pdf", "tao2025", "--out", str(out), "--jobs", "2",
                     "--no-progress"]) == 0
    page = out / "report" / "tao2025" / "quick"
    html = (page / "index.html").read_text()
    status = json.loads((page / "status.json").read_text())
    assert status["artefacts"] and all(a["target"] != "other claims" for a in status["artefacts"])
    for fragment in ("Second-Order Convergence", "Escape statistics", "O1 noise norm",
                     "ε as the paper computes it", "reconstruction"):
        assert fragment in html, fragment
    for claim in ("E1", "E2", "E3", "E4", "E5", "E6", "T4", "T9"):
        assert f"<td>{claim}</td>" in html, claim
    assert (page / "tao2025_quick_selection_dimension.png").is_file()
