"""The audit statistics: Clopper–Pearson bounds, trade-off curves (GDP and from a ledger's
privacy profile), the split-threshold rule and the GDP fit on simulated Gaussian mechanisms
(known answers), and the choice of statistic."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from algorithms.privacy.accounting import gaussian_mechanism_epsilon
from algorithms.privacy.ledger import Ledger, Release, Sampling
from bench.audit import (
    any_statistic_mu_lower_bound,
    audit,
    choose_statistic,
    clopper_pearson,
    detectable_epsilon,
    epsilon_lower_bound,
    gdp_epsilon,
    gdp_fit,
    gdp_mu,
    gdp_trade_off,
    ledger_gdp_mu,
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


# -- the GDP fit -------------------------------------------------------------------------------
def test_gdp_epsilon_is_the_analytic_gaussian_mechanism() -> None:
    for mu in (0.3, 1.0, 2.5):  # μ-GDP is one Gaussian mechanism with σ = 1/μ
        assert gdp_epsilon(mu, 1e-5) == pytest.approx(gaussian_mechanism_epsilon(1 / mu, 1e-5),
                                                      rel=1e-6)
        assert gdp_mu(gdp_epsilon(mu, 1e-5), 1e-5) == pytest.approx(mu, rel=1e-6)
    assert gdp_epsilon(0.0, 1e-5) == 0.0 and gdp_epsilon(-1.0, 1e-5) == 0.0
    assert gdp_epsilon(1e3, 1e-5) > 1e5  # no overflow far above any claim
    assert gdp_epsilon(np.inf, 1e-5) == np.inf


def test_gdp_fit_on_a_single_gaussian_mechanism_is_tight() -> None:
    """Known answer: one Gaussian mechanism at μ = 1 (ε = 4.38 at δ = 1e-5); with 10,000 runs
    a side (5,000 tested) and seed 0 the audit's ε_lb is within 10% of the truth, below it,
    and the claim passes."""
    rng = np.random.default_rng(0)
    runs, truth = 10_000, gdp_epsilon(1.0, 1e-5)
    in_scores, out_scores = rng.normal(1.0, 1.0, runs), rng.normal(0.0, 1.0, runs)
    result = audit(in_scores, out_scores, gdp_trade_off(1.0), delta=1e-5, mu_claimed=1.0,
                   eps_claimed=truth)
    assert result.exact_gdp and result.passed
    assert 0.9 * truth <= result.eps_lower <= truth
    assert result.ratio == pytest.approx(result.eps_lower / truth)
    assert result.mu_lb_gdp < 1.0 < result.mu_lb_gdp + 0.15
    # the power of 5,000 test runs a side: a little above the truth
    assert result.eps_detectable is not None and truth < result.eps_detectable < 1.15 * truth


@pytest.mark.parametrize(("true_mu", "passes"), [(0.5, True), (0.6, False), (1.0, False)])
def test_gdp_fit_flags_small_violations_the_threshold_rule_misses(true_mu: float,
                                                                  passes: bool) -> None:
    rng = np.random.default_rng(3)
    runs = 10_000
    result = audit(rng.normal(true_mu, 1.0, runs), rng.normal(0.0, 1.0, runs),
                   gdp_trade_off(0.5), alpha=1e-3, delta=1e-5, mu_claimed=0.5,
                   eps_claimed=gdp_epsilon(0.5, 1e-5))
    assert result.gdp_passed is passes and result.passed is passes
    if true_mu == 0.6:
        assert result.threshold_passed  # 20% more leakage: invisible without the fit


def test_gdp_fit_confidence_bound_covers_mu() -> None:
    rng = np.random.default_rng(11)
    misses = sum(gdp_fit(rng.normal(0.7, 1.0, 400), rng.normal(0.0, 1.0, 400), 0.05).mu_lb
                 > 0.7 for _ in range(400))
    assert misses <= 0.05 * 400 + 3 * np.sqrt(0.05 * 0.95 * 400)


def test_any_statistic_bound_holds_for_the_likelihood_ratio_itself() -> None:
    """f = the likelihood ratio of N(1, 1) vs N(0, 1) reaches d = √(e^{μ²} − 1) > μ: a
    Gaussian fit of its mean shift would claim more than μ = 1, the χ² bound does not."""
    rng = np.random.default_rng(2)
    inside = np.exp(rng.normal(1.0, 1.0, 50_000) - 0.5)
    outside = np.exp(rng.normal(0.0, 1.0, 50_000) - 0.5)
    shift = (inside.mean() - outside.mean()) / outside.std()
    assert shift > 1.1  # beyond μ
    assert 0.85 < any_statistic_mu_lower_bound(inside, outside, 1e-3) <= 1.0
    gaussian = any_statistic_mu_lower_bound(rng.normal(1.0, 1.0, 50_000),
                                            rng.normal(0.0, 1.0, 50_000), 1e-3)
    assert gaussian == pytest.approx(np.sqrt(np.log(2.0)), abs=0.05)  # √ln(1 + μ²)


def test_ledger_gdp_mu_only_for_unsampled_gaussians() -> None:
    def ledger(sampling: Sampling, sigma: float = 2.0, count: int = 4) -> Ledger:
        out = Ledger()
        for _ in range(count):
            out.record(sampling, [Release("gaussian", "g", sigma=sigma, sensitivity=1.0)])
        return out

    assert ledger_gdp_mu(ledger(Sampling())) == pytest.approx(1.0)  # √4 / 2
    assert ledger_gdp_mu(ledger(Sampling("poisson", 64, rate=1.0))) == pytest.approx(1.0)
    assert ledger_gdp_mu(ledger(Sampling("poisson", 64, rate=0.25))) is None
    pure = ledger(Sampling())
    pure.record(Sampling(), [Release("pure", "at", sensitivity=1.0, epsilon=0.5)])
    assert ledger_gdp_mu(pure) is None


def test_detectable_epsilon_shrinks_towards_the_claim() -> None:
    claim = gdp_mu(2.0, 1e-5)
    few, many = (detectable_epsilon(claim, n, 1e-3, 1e-5) for n in (500, 50_000))
    assert 2.0 < many < few


def test_the_iterates_statistic_wins_when_the_releases_say_nothing() -> None:
    """Column 0 (release LLR) is noise; the signal is spread over two iterate columns."""
    rng = np.random.default_rng(5)

    def observations(shift: float) -> np.ndarray:
        obs = rng.normal(0.0, 1.0, (4000, 3))
        obs[:, 1:] += shift
        return obs

    inside, outside = observations(0.5), observations(0.0)
    assert choose_statistic(inside, outside, 1e-3).name.startswith("iterates")
    result = audit(inside, outside, gdp_trade_off(1.0), delta=1e-5, mu_claimed=1.0)
    assert result.statistic.startswith("iterates")
    assert result.mu_hat == pytest.approx(0.5 * np.sqrt(2), abs=0.08)  # both columns used
    inside[:, 0] += 3.0  # now the releases separate best
    assert choose_statistic(inside, outside, 1e-3).name == "release LLR"


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


def test_the_lower_bounds_cover_the_true_epsilon_of_a_known_gaussian_mechanism() -> None:
    """Coverage, in the style of jax-privacy's auditing tests: over many audits of one
    Gaussian mechanism (μ = 1, its exact trade-off curve claimed), each lower bound exceeds
    the true ε at most at its stated rate α (here 5%; the reported ε lb, the larger of the
    GDP fit's and the threshold rule's, at most 2α), up to binomial scatter (99.9%)."""
    rng = np.random.default_rng(11)
    alpha, trials, runs, mu = 0.05, 300, 1000, 1.0
    truth, claimed = gdp_epsilon(mu, 1e-5), gdp_trade_off(mu)
    over_gdp = over_threshold = over_reported = 0
    for _ in range(trials):
        result = audit(rng.normal(mu, 1.0, runs), rng.normal(0.0, 1.0, runs), claimed,
                       alpha=alpha, delta=1e-5, mu_claimed=mu, eps_claimed=truth)
        over_gdp += result.eps_lb_gdp > truth
        over_threshold += result.eps_lb > truth
        over_reported += result.eps_lower > truth
    limit = stats.binom.ppf(0.999, trials, alpha)
    assert over_gdp <= limit and over_threshold <= limit
    assert over_reported <= stats.binom.ppf(0.999, trials, 2 * alpha)
    assert over_gdp >= 1  # the fit is not vacuous: it reaches the truth now and then
