"""Measurements: λ_min (dense and Lanczos paths), grad_norm, evaluate() and eval_steps."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import make_setup, to_numpy

from algorithms.lambda_min import DENSE_MAX
from algorithms.lambda_min import lambda_min_lanczos as lambda_min
from bench.metrics import evaluate, finite
from bench.runner import eval_steps

LAM, MU = 1.3, 0.7


@pytest.mark.parametrize("d", [5, DENSE_MAX, 100])  # 100 > DENSE_MAX: the eigsh path
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_lambda_min_at_saddle_is_minus_lam(d: int, backend: str) -> None:
    assert (d > DENSE_MAX) == (d == 100)
    setup = make_setup("strict_saddle", backend, d=d, lam=LAM, mu=MU)
    x0 = setup.backend.asarray(np.zeros(d))
    assert lambda_min(setup.oracle, x0) == pytest.approx(-LAM, abs=1e-7)
    assert setup.instance.constants["lambda_min_at_saddle"] == -LAM
    assert setup.instance.lambda_min(np.zeros(d)) == pytest.approx(-LAM, abs=1e-15)


@pytest.mark.parametrize("d", [6, 100])
def test_lambda_min_matches_closed_form_at_random_points(d: int) -> None:
    setup = make_setup("strict_saddle", "numpy", d=d, lam=LAM, mu=MU)
    rng = np.random.default_rng(d)
    u = setup.instance.u
    points = [rng.standard_normal(d) * s for s in (0.3, 1.0, 2.0)]
    points.append(np.pi * u)  # a minimum: λ_min = min(λ, μ) > 0
    points.append(0.5 * np.pi * u + 0.2 * rng.standard_normal(d))
    for x in points:
        expected = setup.instance.lambda_min(x)
        assert lambda_min(setup.oracle, x) == pytest.approx(expected, abs=1e-7)
    assert setup.instance.lambda_min(np.pi * u) == pytest.approx(min(LAM, MU))


def test_lambda_min_nc_least_squares_matches_explicit_hessian() -> None:
    setup = make_setup("nc_least_squares", "numpy")
    inst = setup.instance
    x = np.random.default_rng(0).standard_normal(inst.d)
    lam = inst.p.lam
    hessian = inst.a.T @ inst.a / inst.n + np.diag(lam * (1 - 3 * x**2) / (1 + x**2) ** 3)
    expected = np.linalg.eigvalsh(hessian)[0]
    assert lambda_min(setup.oracle, x) == pytest.approx(expected, abs=1e-10)
    assert inst.lambda_min(x) is None  # no closed form published for this problem


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_grad_norm_vanishes_at_saddle(backend: str) -> None:
    setup = make_setup("strict_saddle", backend, lam=LAM, mu=MU)
    x = setup.oracle.x0  # init_scale = 0: x0 = 0, the saddle
    assert np.all(to_numpy(x) == 0)
    out = evaluate(setup.instance, setup.oracle, x, ["loss", "grad_norm"])
    assert set(out) == {"loss", "grad_norm"}
    # the paired samples make the noise terms cancel exactly in the mean
    assert out["grad_norm"] < 1e-12
    assert out["loss"] == pytest.approx(LAM, abs=1e-12)  # F(0) = λ cos 0
    # while single samples carry noise of size ~σ1
    per_sample = to_numpy(setup.oracle.per_sample_grads(x, np.arange(4)))
    assert np.linalg.norm(per_sample, axis=1).min() > 0.1


def test_grad_norm_is_positive_away_from_saddle() -> None:
    setup = make_setup("strict_saddle", "numpy")
    x = np.full(setup.instance.d, 0.3)
    out = evaluate(setup.instance, setup.oracle, x, ["grad_norm"])
    assert out["grad_norm"] == pytest.approx(np.linalg.norm(setup.oracle.grad(x)), rel=1e-12)
    assert out["grad_norm"] > 1e-3


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_evaluate_test_metrics_on_digits(backend: str) -> None:
    setup = make_setup("digits_mlp", backend)
    out = evaluate(setup.instance, setup.oracle, setup.oracle.x0, ["loss", "test"])
    assert set(out) == {"loss", "test_loss", "test_acc"}
    assert 0.0 <= out["test_acc"] <= 1.0
    assert math.isfinite(out["test_loss"]) and out["test_loss"] > 0
    # at a random initialisation the loss is near ln(10) and accuracy near chance
    assert out["test_loss"] == pytest.approx(math.log(10), rel=0.3)
    split = setup.instance.split
    assert setup.instance.constants["n_test"] == len(split.y_test)


def test_evaluate_test_accuracy_is_computed_from_predictions() -> None:
    setup = make_setup("digits_mlp", "torch")
    inst, be = setup.instance, setup.backend
    x = setup.oracle.x0
    logits = to_numpy(inst.model.logits(be.xp, x, be.asarray(inst.split.x_test)))
    expected = float(np.mean(np.argmax(logits, axis=1) == inst.split.y_test))
    assert evaluate(inst, setup.oracle, x, ["test"])["test_acc"] == expected


@pytest.mark.parametrize("problem", ["strict_saddle", "nc_least_squares"])
def test_evaluate_test_is_empty_for_synthetic(problem: str) -> None:
    setup = make_setup(problem, "numpy")
    assert evaluate(setup.instance, setup.oracle, setup.oracle.x0, ["test"]) == {}
    assert set(evaluate(setup.instance, setup.oracle, setup.oracle.x0,
                        ["loss", "grad_norm", "test", "lambda_min"])) == {
        "loss", "grad_norm", "lambda_min"}


def test_evaluate_refuses_unknown_metric() -> None:
    setup = make_setup("strict_saddle", "numpy")
    with pytest.raises(ValueError, match="bogus"):
        evaluate(setup.instance, setup.oracle, setup.oracle.x0, ["bogus"])


def test_finite() -> None:
    setup = make_setup("strict_saddle", "numpy")
    assert finite(np.zeros(3), setup.oracle)
    assert not finite(np.array([0.0, np.nan]), setup.oracle)
    assert not finite(np.array([np.inf, 0.0]), setup.oracle)


@pytest.mark.parametrize(("total", "points"), [(1, 2), (2, 10), (10, 10), (300, 8), (500, 10),
                                               (1000, 2), (12345, 25)])
def test_eval_steps(total: int, points: int) -> None:
    steps = eval_steps(total, points)
    ordered = sorted(steps)
    assert ordered[0] == 1
    assert ordered[-1] == total
    assert all(a < b for a, b in itertools.pairwise(ordered))
    assert all(isinstance(s, int) and 1 <= s <= total for s in steps)
    assert len(steps) <= points + 1
    if total >= points * 10 and points >= 4:
        # log-spaced: dense early, sparse late
        assert len(steps) >= points - 1
        assert ordered[1] - ordered[0] < ordered[-1] - ordered[-2]


def test_an_output_that_is_the_last_iterate_is_measured_once(monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """Where the output is the last iterate, the runner copies its metrics (λ_min among them)
    instead of computing them again; the rows still agree."""
    from test_conformance import premise_spec

    from bench import runner

    calls: list[tuple[str, ...]] = []

    def counted(instance: object, oracle: object, x: object, names: tuple[str, ...]) -> dict:
        calls.append(tuple(names))
        return evaluate(instance, oracle, x, names)

    monkeypatch.setattr(runner, "evaluate", counted)
    spec = premise_spec("sgd")
    spec = type(spec)(**{**vars(spec), "eval": type(spec.eval)(points=2,
                                                               metrics=("loss", "lambda_min"))})
    record = runner.run_one(spec)
    assert record.status == "done", record.error
    iterate, output = record.rows[-2], record.rows[-1]
    assert (iterate["point"], output["point"]) == ("iterate", "output")
    assert {k: v for k, v in output.items() if k not in ("point", "time_s")} == {
        k: v for k, v in iterate.items() if k not in ("point", "time_s")}
    assert "lambda_min" in output
    assert len(calls) == len(record.rows) - 1


@pytest.mark.parametrize("sigma2", [0.0, 0.7])
def test_strict_saddle_hvps_share_work_and_keep_every_bit(sigma2: float) -> None:
    """hvps (the d HVPs of a dense Hessian, the samples' parts computed once) gives each
    HVP's numbers bit for bit: against the per-vector formula, over several chunks."""
    setup = make_setup("strict_saddle", "numpy", d=7, sigma2=sigma2)
    oracle, inst = setup.oracle, setup.instance
    oracle.eval_chunk = 5
    rng = np.random.default_rng(3)
    x = rng.standard_normal(7)
    idx = rng.choice(inst.n, size=13, replace=False)
    vectors = [*np.eye(7), rng.standard_normal(7)]

    def one(vec: np.ndarray) -> np.ndarray:  # the formula before hvps existed
        total = 0.0
        for chunk in (idx[:5], idx[5:10], idx[10:]):
            v = inst.v[chunk]
            sech2 = 1.0 / np.cosh(v @ x) ** 2
            per = inst.p.sigma2 * (inst.s[chunk] * sech2 * (v @ vec))[:, None] * v
            total = total + (len(chunk) * oracle._common_hvp(x, vec) + per.sum(axis=0))
        return total / len(idx)

    for got, vec in zip(oracle.hvps(x, vectors, idx), vectors, strict=True):
        assert np.array_equal(got, one(vec))
        assert np.array_equal(got, oracle.hvp(x, vec, idx))
    assert all(np.array_equal(a, oracle.hvp(x, v)) for a, v in
               zip(oracle.hvps(x, vectors), vectors, strict=True))
