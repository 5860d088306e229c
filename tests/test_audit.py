"""The audit statistics: Clopper–Pearson bounds, trade-off curves (GDP and from a ledger's
privacy profile), and the split-threshold audit's pass/fail on simulated Gaussian scores."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from algorithms.privacy.ledger import Ledger, Release, Sampling
from bench.audit import (
    audit,
    clopper_pearson,
    epsilon_lower_bound,
    gdp_trade_off,
    ledger_trade_off,
    mu_lower_bound,
    profile_trade_off,
)


def test_clopper_pearson_matches_the_beta_quantiles() -> None:
    lo, hi = clopper_pearson(30, 100, 0.05)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 30, 71))
    assert hi == pytest.approx(stats.beta.ppf(0.975, 31, 70))
    assert clopper_pearson(0, 50, 0.05)[0] == 0.0 and clopper_pearson(50, 50, 0.05)[1] == 1.0
    # the exact interval covers p in (at least) 1 − α of binomial draws
    rng = np.random.default_rng(0)
    draws = rng.binomial(200, 0.3, 2000)
    covered = np.mean([clopper_pearson(int(k), 200, 0.1)[0] <= 0.3
                       <= clopper_pearson(int(k), 200, 0.1)[1] for k in draws])
    assert covered >= 0.9
    with pytest.raises(ValueError):
        clopper_pearson(5, 4, 0.05)


def test_ledger_trade_off_of_one_gaussian_is_the_gdp_curve() -> None:
    ledger = Ledger()
    ledger.record(Sampling("none"), [Release("gaussian", "g", sigma=2.0, sensitivity=1.0)])
    claimed, exact = ledger_trade_off(ledger), gdp_trade_off(0.5)
    for fpr in (1e-3, 0.01, 0.1, 0.3, 0.6):
        assert exact(fpr) <= claimed(fpr) + 1e-6  # conservative
        assert claimed(fpr) == pytest.approx(exact(fpr), abs=0.01)  # and tight on this grid
    flat = profile_trade_off([0.0], [0.0])  # ε = δ = 0: no test beats guessing
    assert flat(0.2) == pytest.approx(0.2)


def test_bounds_to_mu_and_epsilon() -> None:
    assert mu_lower_bound(stats.norm.cdf(-1.0), stats.norm.cdf(1.0)) == pytest.approx(2.0)
    assert mu_lower_bound(0.5, 0.0) == -np.inf
    assert epsilon_lower_bound(0.1, 0.5, 0.0) == pytest.approx(np.log(0.5 / 0.1))
    assert epsilon_lower_bound(0.01, 0.2, 0.0) == pytest.approx(np.log(0.2 / 0.01))
    assert epsilon_lower_bound(0.5, 0.4, 0.0) == 0.0


@pytest.mark.parametrize(("true_mu", "passes"), [(0.5, True), (1.0, False), (0.0, True)])
def test_audit_flags_a_mechanism_twice_as_leaky_as_claimed(true_mu: float, passes: bool
                                                           ) -> None:
    rng = np.random.default_rng(7)
    runs = 10_000
    in_scores = rng.normal(true_mu, 1.0, runs)  # the LLR statistic of a μ-GDP mechanism
    out_scores = rng.normal(0.0, 1.0, runs)
    result = audit(in_scores, out_scores, gdp_trade_off(0.5), alpha=1e-3)
    assert result.passed is passes
    assert (result.mu_lb > 0.5) is not passes  # the μ rule agrees with the curve rule
    assert result.runs == 2 * runs and 0 <= result.fpr_ub <= 1
    if not passes:
        assert 0.5 < result.mu_lb <= 1.0 + 0.1 and result.eps_lb > 0


def test_privacy_profile_is_the_worst_party_shifted_by_pure_releases() -> None:
    from algorithms.privacy.accounting import privacy_profile

    def gaussian(sigma: float, party: int) -> tuple[Sampling, list[Release]]:
        return Sampling("none", party=party), [Release("gaussian", "g", sigma=sigma,
                                                       sensitivity=1.0)]

    grid = [0.5, 1.0, 2.0]
    weak, strong = Ledger(), Ledger()
    weak.record(*gaussian(1.0, 0))
    strong.record(*gaussian(3.0, 0))
    both = Ledger()
    both.record(*gaussian(1.0, 0))
    both.record(*gaussian(3.0, 1))
    assert privacy_profile(both, grid) == pytest.approx(privacy_profile(weak, grid))
    assert privacy_profile(strong, grid)[0] < privacy_profile(weak, grid)[0]
    pure = Ledger()
    pure.record(*gaussian(1.0, 0))
    pure.record(Sampling(), [Release("pure", "at", sensitivity=1.0, epsilon=0.5)])
    shifted = privacy_profile(pure, [1.0, 1.5, 2.5])
    assert shifted == pytest.approx(privacy_profile(weak, grid))  # δ(ε) = δ_G(ε − 0.5)
    assert privacy_profile(pure, [0.2])[0] == 1.0
