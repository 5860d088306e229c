"""reports.scaling: power-law fits with bootstrap intervals, checks against declared exponents,
and the utility rate every registered algorithm declares."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from algorithms import ALGORITHMS, Rate
from reports.scaling import (
    ExponentCheck,
    ScalingFit,
    compare,
    declared_exponents,
    fit_exponents,
    fit_slope,
)

TRUE = {"n": -0.4, "d": 0.2, "epsilon": -0.4}


def synthetic(seed: int = 0, noise: float = 0.05, reps: int = 2) -> pd.DataFrame:
    """y = 2·n^{-0.4}·d^{0.2}·ε^{-0.4}·exp(noise) on a full grid, ``reps`` runs per cell."""
    rng = np.random.default_rng(seed)
    grid = itertools.product(np.geomspace(1e3, 1e5, 4), [10.0, 100.0, 1000.0],
                             [0.5, 1.0, 2.0, 4.0], range(reps))
    rows = [{"n": n, "d": d, "epsilon": e, "delta": 1e-5, "seed": s} for n, d, e, s in grid]
    frame = pd.DataFrame(rows)
    frame["grad_norm"] = (2.0 * frame["n"] ** TRUE["n"] * frame["d"] ** TRUE["d"]
                          * frame["epsilon"] ** TRUE["epsilon"]
                          * np.exp(rng.normal(0.0, noise, len(frame))))
    return frame


@pytest.fixture(scope="module")
def fit() -> ScalingFit:
    return fit_exponents(synthetic(), "grad_norm", ["n", "d", "epsilon"])


def test_multiple_regression_recovers_known_exponents(fit: ScalingFit) -> None:
    assert fit.response == "grad_norm"
    assert fit.predictors == ("n", "d", "epsilon")
    assert fit.points == 96 and fit.dropped == () and fit.rows_dropped == 0
    for name, truth in TRUE.items():
        lo, hi = fit.intervals[name]
        assert lo <= truth <= hi, (name, lo, hi)
        assert hi - lo < 0.05, (name, lo, hi)
        assert lo < fit.exponents[name] < hi
        assert fit.exponents[name] == pytest.approx(truth, abs=0.02)
    assert fit.intercept == pytest.approx(math.log(2.0), abs=0.15)
    assert fit.r2 > 0.99


def test_a_wrong_declared_exponent_is_flagged(fit: ScalingFit) -> None:
    checks = compare(fit, {"n": -0.5, "d": 0.2, "epsilon": -0.4, "not_fitted": 1.0})
    assert [c.predictor for c in checks] == ["n", "d", "epsilon"]
    by_name = {c.predictor: c for c in checks}
    assert not by_name["n"].inside
    assert by_name["d"].inside and by_name["epsilon"].inside
    n_check = by_name["n"]
    assert n_check == ExponentCheck("n", fit.exponents["n"], *fit.intervals["n"], -0.5, False)
    # the privacy-dominated prediction of a bound (√d/(nε))^a: right a inside, wrong a outside
    assert all(c.inside for c in compare(fit, declared_exponents(0.4)))
    assert not any(c.inside for c in compare(fit, declared_exponents(0.5)))
    assert compare(fit, {}) == []


def test_declared_exponents_of_a_privacy_term() -> None:
    assert declared_exponents(2 / 3) == pytest.approx(
        {"n": -2 / 3, "d": 1 / 3, "epsilon": -2 / 3, "eps_bar": 2 / 3})
    assert declared_exponents(0.5, n="N", epsilon="eps") == {
        "N": -0.5, "d": 0.25, "eps": -0.5, "eps_bar": 0.5}


def test_constant_predictors_are_dropped_and_reported() -> None:
    frame = synthetic()
    result = fit_exponents(frame, "grad_norm", ["n", "delta", "d", "epsilon"])
    assert result.dropped == ("delta",)
    assert result.predictors == ("n", "d", "epsilon")
    assert "delta" not in result.exponents and "delta" not in result.intervals
    assert compare(result, {"delta": 1.0}) == []
    # a predictor constant only after the unusable rows are dropped is dropped too
    frame.loc[frame["d"] != 10.0, "grad_norm"] = 0.0
    partial = fit_exponents(frame, "grad_norm", ["n", "d", "epsilon"])
    assert partial.dropped == ("d",) and partial.points == 32
    with pytest.raises(ValueError, match="no predictor"):
        fit_exponents(frame, "grad_norm", ["delta", "d"])


def test_non_positive_and_non_finite_rows_are_dropped(fit: ScalingFit) -> None:
    frame = synthetic()
    bad = pd.DataFrame([
        {"n": 1e3, "d": 10.0, "epsilon": 1.0, "grad_norm": 0.0},
        {"n": 1e3, "d": 10.0, "epsilon": 1.0, "grad_norm": -1.0},
        {"n": 1e3, "d": 10.0, "epsilon": 1.0, "grad_norm": math.nan},
        {"n": 1e3, "d": 10.0, "epsilon": math.inf, "grad_norm": 0.3},
        {"n": -5.0, "d": 10.0, "epsilon": 1.0, "grad_norm": 0.3},
        {"n": 1e3, "d": None, "epsilon": 1.0, "grad_norm": 0.3},
    ])
    dirty = pd.concat([bad.iloc[:3], frame, bad.iloc[3:]], ignore_index=True)
    result = fit_exponents(dirty, "grad_norm", ["n", "d", "epsilon"], draws=200)
    clean = fit_exponents(frame, "grad_norm", ["n", "d", "epsilon"], draws=200)
    assert result.points == fit.points == 96 and result.rows_dropped == 6
    assert result.exponents == pytest.approx(clean.exponents, abs=1e-12)
    assert result.intercept == pytest.approx(clean.intercept, abs=1e-12)


def test_the_fit_is_deterministic_given_the_seed() -> None:
    frame = synthetic()
    first = fit_exponents(frame, "grad_norm", ["n", "d", "epsilon"], draws=300, seed=7)
    again = fit_exponents(frame, "grad_norm", ["n", "d", "epsilon"], draws=300, seed=7)
    other = fit_exponents(frame, "grad_norm", ["n", "d", "epsilon"], draws=300, seed=8)
    assert first == again
    assert other.exponents == first.exponents
    assert other.intervals != first.intervals


def test_level_sets_the_interval_width(fit: ScalingFit) -> None:
    narrow = fit_exponents(synthetic(), "grad_norm", ["n", "d", "epsilon"], level=0.5)
    for name in TRUE:
        lo, hi = narrow.intervals[name]
        wide_lo, wide_hi = fit.intervals[name]
        assert wide_lo < lo < hi < wide_hi


def test_too_few_rows_and_bad_arguments_are_rejected() -> None:
    frame = synthetic()
    four = pd.DataFrame({"n": [1e3, 2e3, 4e3, 8e3], "d": [10.0, 30.0, 20.0, 40.0],
                         "epsilon": [1.0, 0.5, 2.0, 4.0], "grad_norm": [0.3, 0.2, 0.1, 0.05]})
    with pytest.raises(ValueError, match="too few"):
        fit_exponents(four, "grad_norm", ["n", "d", "epsilon"])
    assert fit_exponents(four, "grad_norm", ["n", "d"], draws=50).points == 4
    with pytest.raises(ValueError, match="not in the frame"):
        fit_exponents(frame, "grad_norm", ["n", "batch"])
    with pytest.raises(ValueError, match="level"):
        fit_exponents(frame, "grad_norm", ["n"], level=95)
    collinear = frame.assign(m=frame["n"] ** 2)
    with pytest.raises(ValueError, match="collinear"):
        fit_exponents(collinear, "grad_norm", ["n", "m"])


def test_fit_slope_recovers_a_known_exponent() -> None:
    rng = np.random.default_rng(0)
    eps_bars = np.repeat(np.geomspace(1e-4, 1e-1, 8), 5)
    values = 3.0 * eps_bars ** (2 / 3) * np.exp(rng.normal(0, 0.1, len(eps_bars)))
    slope, lo, hi = fit_slope(eps_bars, values)
    assert lo <= 2 / 3 <= hi and hi - lo < 0.1
    assert slope == pytest.approx(2 / 3, abs=0.03)
    flat = fit_slope(eps_bars, 0.2 * np.exp(rng.normal(0, 0.1, len(eps_bars))))
    assert not flat[1] <= 2 / 3 <= flat[2]
    with pytest.raises(ValueError, match="no predictor"):
        fit_slope(np.ones(6), values[:6])


def test_every_registered_algorithm_declares_a_rate() -> None:
    assert len(ALGORITHMS) >= 11
    for name, cls in ALGORITHMS.items():
        if not cls.__module__.startswith("algorithms."):
            continue  # a plugin (examples/plugin) may declare none
        rate = cls.__dict__.get("rate")  # its own, not inherited from a parent class
        assert isinstance(rate, Rate), f"{name} declares no Rate of its own"
        assert rate.objective in ("population", "empirical"), name
        assert rate.stationarity in ("first", "second"), name
        for exponent in (rate.privacy_exponent, rate.sample_exponent):
            assert exponent is None or 0.0 < exponent <= 1.0, name
        assert rate.source.strip(), name
        # a private method's bound has a privacy term, a non-private one none
        assert (rate.privacy_exponent is not None) == cls.private, name
        if rate.privacy_exponent is None or cls.paper == "baseline":
            assert rate.note.strip(), f"{name}: say why the rate is not the paper's own"


@pytest.mark.parametrize(("name", "objective", "stationarity", "privacy", "sample"), [
    ("dp_rgda", "empirical", "second", 2 / 3, None),
    ("gauss_psgd", "population", "second", 2 / 5, 1 / 3),
    ("ada_dp_spider", "population", "first", 2 / 5, 1 / 3),
    ("dp_spider_at", "population", "second", 3 / 7, 1 / 3),
    ("noisy_sgd", "empirical", "second", 1 / 2, None),
    ("dp_sgd", "empirical", "first", 1 / 2, None),
    ("prisma", "empirical", "first", 2 / 5, None),
    ("dpsgd_gc", "empirical", "first", 1 / 3, None),
    ("private_diff", "empirical", "first", 2 / 3, None),
    ("dp_sgda", "empirical", "first", 1 / 2, None),
    ("sgd", "population", "first", None, 1 / 4),
])
def test_declared_rates_match_the_papers(name: str, objective: str, stationarity: str,
                                         privacy: float | None, sample: float | None) -> None:
    rate = ALGORITHMS.lookup(name).rate
    assert rate is not None
    assert (rate.objective, rate.stationarity) == (objective, stationarity)
    assert rate.privacy_exponent == (None if privacy is None else pytest.approx(privacy))
    assert rate.sample_exponent == (None if sample is None else pytest.approx(sample))


def test_rate_rejects_invalid_fields() -> None:
    good = {"objective": "empirical", "stationarity": "first", "privacy_exponent": 0.5,
            "sample_exponent": None, "source": "Theorem 1, paper"}
    assert Rate(**good).note == ""
    for field, value in [("objective", "training"), ("stationarity", "third"),
                         ("privacy_exponent", 0.0), ("privacy_exponent", 1.5),
                         ("sample_exponent", -0.3), ("source", " ")]:
        with pytest.raises(ValueError):
            Rate(**{**good, field: value})


def test_paper_pages_get_a_scaling_table_against_the_declared_rate() -> None:
    from reports.paper import PaperResults, scaling_table

    rng = np.random.default_rng(1)
    rows = []
    for lr in (0.1, 0.2):  # a held-fixed parameter that varies across groups
        for n in (1000, 4000, 16000):
            for eps in (0.5, 2.0, 8.0):
                for seed in range(3):
                    value = 5.0 * (math.sqrt(10) / (n * eps)) ** 0.5 * math.exp(
                        rng.normal(0, 0.05))
                    rows.append({"suite": "s", "problem": "strict_saddle", "algorithm": "dp_sgd",
                                 "label": "dp_sgd", "calibration": "pld", "status": "done",
                                 "n": n, "epsilon": eps, "seed": seed, "p_alg_lr": lr,
                                 "p_prob_n": n, "final_grad_norm": value})
    results = PaperResults(paper="x", scale="quick", suites=[], runs=pd.DataFrame(rows),
                           trajectories=pd.DataFrame())
    table = scaling_table(results)
    assert table is not None
    got = {(r[3], r[4]): r for r in table["rows"]}
    assert set(got) == {(f"lr={lr}", p) for lr in (0.1, 0.2) for p in ("n", "epsilon")}
    for row in got.values():
        assert float(row[5]) == pytest.approx(-0.5, abs=0.05)
        assert row[7] == "-0.500" and row[8] == "inside"  # dp_sgd declares a = 1/2


def test_a_scaling_fit_that_explains_little_is_marked_no_fit() -> None:
    from reports.paper import MIN_R2, PaperResults, scaling_table

    rng = np.random.default_rng(2)
    rows = [{"suite": "s", "problem": "strict_saddle", "algorithm": "dp_sgd", "label": "dp_sgd",
             "calibration": "pld", "status": "done", "n": 1000, "epsilon": eps, "seed": seed,
             "p_prob_n": 1000, "final_grad_norm": math.exp(rng.normal(0, 1.0))}
            for eps in (0.5, 2.0, 8.0) for seed in range(4)]  # pure noise: no trend in ε
    results = PaperResults(paper="x", scale="quick", suites=[], runs=pd.DataFrame(rows),
                           trajectories=pd.DataFrame())
    table = scaling_table(results)
    assert table is not None and len(table["rows"]) == 1
    row = table["rows"][0]
    assert float(row[10]) < MIN_R2
    assert row[4:9] == ["epsilon", "no fit", "–", "–", "–"]
