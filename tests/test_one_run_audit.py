"""The one-run audit (Steinke, Nasr & Jagielski 2023): its p-value and ε bound on known
answers, and one run of dp_sgd (correct, and with its clip removed), on the synthetic
problem and in real training (the digits MLP)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from test_privacy_audit import NoClipping

from algorithms.dp_sgd import DPSGD
from bench.one_run_audit import (
    epsilon_lower_bound,
    guessing_game,
    one_run_audit,
    p_value,
    training_one_run,
)


def test_p_value_without_delta_is_the_randomised_response_binomial() -> None:
    q = 1 / (1 + math.exp(-1.0))
    assert p_value(500, 100, 70, 1.0, 0.0) == pytest.approx(stats.binom.sf(69, 100, q))
    assert p_value(500, 100, 70, 1.0, 1e-5) > p_value(500, 100, 70, 1.0, 0.0)  # δ adds
    assert p_value(500, 100, 70, 2.0, 0.0) > p_value(500, 100, 70, 1.0, 0.0)
    with pytest.raises(ValueError):
        p_value(10, 20, 5, 1.0, 0.0)


def test_all_guesses_right_gives_the_closed_form_bound() -> None:
    """r = v = 100, δ = 0: q^100 = 0.05, so ε_lb = ln(q/(1 − q)) with q = 0.05^(1/100)."""
    q = 0.05 ** (1 / 100)
    assert epsilon_lower_bound(100, 100, 100, 0.0, 0.95) == pytest.approx(
        math.log(q / (1 - q)), abs=1e-3)
    assert epsilon_lower_bound(100, 100, 50, 0.0, 0.95) == 0.0  # a coin toss shows nothing


def test_guessing_game_on_a_known_gaussian_mechanism_is_valid() -> None:
    """Scores N(μ·present, 1) with μ = 1: ε_lb stays below ε(1-GDP) = 4.38 at δ = 1e-5."""
    rng = np.random.default_rng(0)
    present = rng.random(1000) < 0.5
    r, v, eps = guessing_game(rng.normal(present * 1.0, 1.0), present, 1e-5)
    assert 0 < eps < 4.38 and v <= r


def test_one_run_of_dp_sgd_passes_and_a_missing_clip_is_caught() -> None:
    correct = one_run_audit("dp_sgd", algorithm=DPSGD)
    assert correct.passed and 0 < correct.eps_lb < 2.0 and correct.canaries == 1000
    broken = one_run_audit("dp_sgd", algorithm=NoClipping)
    assert not broken.passed and broken.eps_lb > 2.0


def test_one_run_in_real_training_quick() -> None:
    """dp_sgd on the digits MLP (torch), shortened: the correct run stays below its claim,
    a missing clip lets every canary through."""
    pytest.importorskip("torch")
    correct = training_one_run("dp_sgd", canaries=300, steps=100)
    assert correct is not None and correct.problem == "digits_mlp"
    assert correct.passed and 0 <= correct.eps_lb < 2.0
    broken = training_one_run("dp_sgd", canaries=300, steps=100, algorithm=NoClipping)
    assert broken is not None and not broken.passed and broken.eps_lb > 2.0
    assert training_one_run("prisma") is None  # no real training configured


@pytest.mark.slow
def test_one_run_in_real_training_at_the_default_settings() -> None:
    pytest.importorskip("torch")
    result = training_one_run("dp_sgd")
    assert result is not None and result.canaries == 1000 and result.passed
    assert 0 < result.eps_lb < 2.0
