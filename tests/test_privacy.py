"""Privacy: clipping, noise calibration, sampling, accounting and its regression constants.

Follows anchors/dp_tooling.md §6.4 (L0 exact unit checks) and §6.5 (regression constants).
Statistical tests use fixed seeds, so they are deterministic; tolerances are several
standard errors wide.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import (
    DELTA,
    make_algorithm,
    make_mech,
    make_setup,
    run_steps,
    to_numpy,
    traced,
)

from algorithms import PrivacyTarget
from algorithms.noisy_sgd import NoisySGD, NoisySGDParams
from algorithms.privacy import accounting
from algorithms.privacy.accounting import calibrate, epsilon, epsilons, sigma_eff
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Release, Round, Sampling
from problems import DataSize
from problems.backend import BACKENDS, BackendSpec, get_backend
from problems.clipping import clip_rows, row_norms

# -- helpers ------------------------------------------------------------------------------


def gaussian_ledger(sigma: float, count: int, rate: float = 1.0, n: int = 10_000,
                    scheme: str | None = None) -> Ledger:
    """``count`` rounds of one Gaussian release with noise multiplier ``sigma``."""
    scheme = scheme or ("none" if rate >= 1.0 else "poisson")
    if scheme == "poisson":
        sampling = Sampling("poisson", n, rate=rate)
    elif scheme == "fixed":
        sampling = Sampling("fixed", n, rate=rate, size=round(rate * n))
    else:
        sampling = Sampling()
    ledger = Ledger()
    ledger.record(sampling, [Release("gaussian", "g", sigma=sigma, sensitivity=1.0)], count)
    return ledger


@dataclass
class GaussianSpy:
    """Records every call of Mechanism.gaussian: the pre-noise value and the noise added."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> GaussianSpy:
        original = Mechanism.gaussian
        spy = self

        def gaussian(mech: Mechanism, value: Any, **kw: Any) -> Any:
            out = original(mech, value, **kw)
            spy.calls.append({"value": to_numpy(value).copy(),
                              "noise": to_numpy(out) - to_numpy(value), **kw})
            return out

        monkeypatch.setattr(Mechanism, "gaussian", gaussian)
        return self


def count_sampled(mech: Mechanism) -> list[int]:
    """Wrap ``mech.sample`` so the sizes of the drawn batches are recorded."""
    sizes: list[int] = []
    original = mech.sample

    def sample(*args: Any, **kw: Any) -> Any:
        batch = original(*args, **kw)
        sizes.append(len(batch))
        return batch

    mech.sample = sample  # type: ignore[method-assign]
    return sizes


# -- clipping -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("clip", [0.1, 1.0, 7.5])
def test_clip_rows_bounds_norms(backend: str, clip: float) -> None:
    be = get_backend(backend)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((40, 6))
    rows[:10] *= 1e6  # far above C
    rows[10:20] *= 1e-3  # below C: untouched
    rows[20] = 0.0  # a zero row must stay zero (no division by zero)
    rows[21] = rows[21] / np.linalg.norm(rows[21]) * clip  # exactly on the boundary
    clipped = to_numpy(clip_rows(be.xp, be.asarray(rows), clip))
    norms = np.linalg.norm(clipped, axis=1)
    assert np.all(np.isfinite(clipped))
    assert np.all(norms <= clip * (1 + 1e-12))
    np.testing.assert_allclose(norms[:10], clip, rtol=1e-12)  # huge rows land on C
    np.testing.assert_allclose(clipped[10:20], rows[10:20], rtol=0, atol=0)  # small untouched
    np.testing.assert_array_equal(clipped[20], np.zeros(6))
    np.testing.assert_allclose(clipped[21], rows[21], rtol=1e-12)
    # clipping only rescales: every row keeps its direction
    for raw, got in zip(rows[:10], clipped[:10], strict=True):
        np.testing.assert_allclose(got, raw / np.linalg.norm(raw) * clip, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(row_norms(be.xp, be.asarray(rows))),
                               np.linalg.norm(rows, axis=1), rtol=1e-12)


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_dp_sgd_clips_before_noise(monkeypatch: pytest.MonkeyPatch, sampling: str) -> None:
    # sigma1 = 1e4: every per-sample gradient has norm ~1e4, far above C = 1
    setup = make_setup("strict_saddle", "numpy", sigma1=1e4)
    clip = 1.0
    raw = to_numpy(setup.oracle.per_sample_grads(setup.oracle.x0, np.arange(setup.instance.n)))
    assert np.linalg.norm(raw, axis=1).min() > 1e3  # the premise: gradients are huge
    spy = GaussianSpy().install(monkeypatch)
    alg = make_algorithm("dp_sgd", setup.instance, clip=clip, steps=10, batch_size=16,
                         sampling=sampling)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.0))
    mech = make_mech(setup.backend)
    sizes = count_sampled(mech)
    run_steps(alg, setup.oracle, plan, mech)
    assert len(spy.calls) == plan.steps
    for call, size in zip(spy.calls, sizes, strict=True):
        # the pre-noise sum of clipped gradients has norm <= |B| C
        assert np.linalg.norm(call["value"]) <= size * clip * (1 + 1e-9)
        assert call["sensitivity"] == (2.0 if sampling == "fixed" else 1.0) * clip
        assert call["sigma"] == plan.sigma
        assert call["batch"] is not None


# -- noise calibration ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("sigma", "sensitivity"), [(1.0, 1.0), (0.7, 3.0), (4.0, 0.05)])
def test_gaussian_noise_std(backend: str, sigma: float, sensitivity: float) -> None:
    be = get_backend(BackendSpec(name=backend, noise="native"))
    mech = make_mech(be, noise_seed=123)
    dim = 200_000
    out = to_numpy(mech.gaussian(be.xp.zeros(dim, dtype=be.asarray(0.0).dtype),
                                 sensitivity=sensitivity, sigma=sigma, tag="t"))
    assert out.shape == (dim,)
    std = sigma * sensitivity
    # relative SE of a sample std is 1/sqrt(2N) ~ 0.16%: 1% is > 6 SE
    assert np.std(out) == pytest.approx(std, rel=0.01)
    assert abs(np.mean(out)) < 5 * std / math.sqrt(dim)
    # the release is recorded with the noise multiplier, not the absolute std
    ((rnd, count),) = mech.ledger.summary()
    assert count == 1
    assert rnd.sampling.scheme == "none"
    assert rnd.releases == (Release("gaussian", "t", sigma=sigma, sensitivity=sensitivity),)


@pytest.mark.parametrize("backend", BACKENDS)
def test_native_noise_streams_are_seeded(backend: str) -> None:
    be = get_backend(BackendSpec(name=backend, noise="native"))
    a = to_numpy(be.noise_source(5).normal((50,)))
    b = to_numpy(be.noise_source(5).normal((50,)))
    c = to_numpy(be.noise_source(6).normal((50,)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # successive draws of one stream differ
    src = be.noise_source(5)
    assert not np.array_equal(to_numpy(src.normal((50,))), to_numpy(src.normal((50,))))


def test_gaussian_refuses_nonpositive_scale() -> None:
    mech = make_mech(get_backend("numpy"))
    with pytest.raises(ValueError):
        mech.gaussian(np.zeros(3), sensitivity=0.0, sigma=1.0, tag="t")
    with pytest.raises(ValueError):
        mech.gaussian(np.zeros(3), sensitivity=1.0, sigma=0.0, tag="t")


@pytest.mark.parametrize(("algorithm", "sampling"), [("dp_sgd", "poisson"), ("dp_sgd", "fixed"),
                                                     ("noisy_sgd", "poisson")])
def test_run_noise_std_is_sigma_times_sensitivity(monkeypatch: pytest.MonkeyPatch,
                                                  algorithm: str, sampling: str) -> None:
    # d = 4000 coordinates x 20 steps = 80k noise draws: relative SE of the std ~0.25%
    setup = make_setup("nc_least_squares", "numpy", clients=1, base_n=50, d=4000)
    clip, sigma = 0.5, 1.3
    spy = GaussianSpy().install(monkeypatch)
    bound_kw = {"clip": clip} if algorithm == "dp_sgd" else {"bound": clip}
    alg = make_algorithm(algorithm, setup.instance, steps=20, batch_size=8, sampling=sampling,
                         **bound_kw)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=sigma))
    run_steps(alg, setup.oracle, plan, make_mech(setup.backend))
    noise = np.concatenate([c["noise"] for c in spy.calls])
    assert noise.size == 20 * 4000
    sensitivity = (2.0 if sampling == "fixed" else 1.0) * clip
    assert np.std(noise) == pytest.approx(sigma * sensitivity, rel=0.02)
    assert plan.extra.sensitivity == sensitivity


def test_run_noise_reaches_the_iterate() -> None:
    """x_{t+1} = x_t − η (Σ clipped + noise)/B: recover the noise from the iterates."""
    setup = make_setup("strict_saddle", "numpy")
    clip, sigma, lr, batch = 1.0, 2.0, 0.5, 16
    alg = make_algorithm("dp_sgd", setup.instance, clip=clip, steps=30, batch_size=batch,
                         lr=lr)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=sigma))
    mech = make_mech(setup.backend)
    original = mech.sample
    batches: list[np.ndarray] = []

    def sample(*a: Any, **kw: Any) -> Any:
        b = original(*a, **kw)
        batches.append(b.indices)
        return b

    mech.sample = sample  # type: ignore[method-assign]
    steps = run_steps(alg, setup.oracle, plan, mech)
    xs = [to_numpy(setup.oracle.x0)] + [to_numpy(s.x) for s in steps]
    noises = []
    for x_prev, x_next, idx in zip(xs[:-1], xs[1:], batches, strict=True):
        total = (clip_rows(setup.backend.xp, setup.oracle.per_sample_grads(x_prev, idx), clip)
                 .sum(axis=0) if len(idx) else np.zeros_like(x_prev))
        noises.append((x_prev - x_next) * batch / lr - total)
    noise = np.concatenate(noises)
    # 150 draws: a loose (but still ~4 SE) check that the scale is σC, not σC/B or σ/B
    assert np.std(noise) == pytest.approx(sigma * clip, rel=0.25)


# -- accounting from a run's ledger ----------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["dp_sgd", "noisy_sgd"])
@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_ledger_epsilon_equals_plan(algorithm: str, sampling: str) -> None:
    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm(algorithm, setup.instance, steps=30, batch_size=16, sampling=sampling)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.2))
    mech = make_mech(setup.backend)
    run_steps(alg, setup.oracle, plan, mech)
    spent = epsilons(mech.ledger, DELTA)
    assert spent == plan.eps
    assert spent.rdp is not None and math.isfinite(spent.rdp)
    assert spent.gdp is None  # subsampled
    assert spent.pld is not None
    assert spent.pld <= spent.rdp + 1e-9
    # the run's ledger holds exactly T rounds of one release each
    ((rnd, count),) = mech.ledger.summary()
    assert count == plan.steps
    assert rnd.sampling.scheme == sampling
    assert rnd.sampling.rate == pytest.approx(16 / setup.instance.n)
    assert len(rnd.releases) == 1 and rnd.releases[0].sigma == 1.2


def assert_spends(eps: float | None, target: float, method: str) -> None:
    """ε of a calibrated σ: RDP to 1e-5; PLD may be calibrated on a coarser (pessimistic)
    grid, so it spends at most the target and no more than 0.1% less."""
    assert eps is not None
    if method == "pld":
        assert target * (1 - 1e-3) <= eps <= target * (1 + 1e-6), (eps, target)
    else:
        assert eps == pytest.approx(target, rel=1e-5)


@pytest.mark.parametrize(("sampling", "calibration"), [
    ("poisson", "rdp"),
    pytest.param("fixed", "rdp", marks=pytest.mark.slow),  # RDP without replacement: ~3 s
    ("poisson", "pld"),
])
def test_calibrated_run_spends_target(sampling: str, calibration: str) -> None:
    setup = make_setup("strict_saddle", "numpy", n=1000)
    alg = make_algorithm("dp_sgd", setup.instance, steps=50, batch_size=100, sampling=sampling)
    plan = alg.plan(setup.instance,
                    PrivacyTarget(epsilon=1.0, delta=DELTA, calibration=calibration))
    assert plan.calibration == calibration
    assert_spends(getattr(plan.eps, calibration), 1.0, calibration)
    mech = make_mech(setup.backend)
    run_steps(alg, setup.oracle, plan, mech)
    assert epsilon(mech.ledger, DELTA, calibration) == getattr(plan.eps, calibration)


def test_fixed_sampling_pld_is_the_poisson_pair_with_replace_one_sensitivity() -> None:
    """Fixed-size batches without replacement (replace-one): PLD accounts them with the
    dominating pair (q·N(Δ) + (1−q)·N(0), N(0)), the Poisson pair at the replace-one σ."""
    fixed = gaussian_ledger(1.5, 200, 0.05, scheme="fixed")
    poisson = gaussian_ledger(1.5, 200, 0.05, scheme="poisson")
    assert epsilon(fixed, DELTA, "pld") == pytest.approx(epsilon(poisson, DELTA, "pld"))
    # the RDP bound for sampling without replacement (Wang et al. 2019) is looser
    assert epsilon(fixed, DELTA, "rdp") > epsilon(fixed, DELTA, "pld")
    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm("dp_sgd", setup.instance, sampling="fixed")
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, calibration="pld"))
    assert plan.eps.pld == pytest.approx(2.0, rel=2e-3)


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("shift", [0.5, 1.0, 2.0])
def test_without_replacement_pair_dominates_worst_substitution(q: float, shift: float) -> None:
    """A batch holding the replaced record (probability q) moves by ±shift around the rest:
    P = (1−q)N(0) + qN(shift), P' = (1−q)N(0) + qN(−shift). Its hockey-stick divergence is
    below that of the pair PLD uses, (qN(2·shift) + (1−q)N(0), N(0)), at every ε."""
    from scipy.stats import norm

    x = np.linspace(-30, 30, 600_001)
    dx = x[1] - x[0]

    def hockey(p: np.ndarray, r: np.ndarray, eps: float) -> float:
        return float(np.sum(np.maximum(p - math.exp(eps) * r, 0.0)) * dx)

    p = (1 - q) * norm.pdf(x) + q * norm.pdf(x, shift)
    p2 = (1 - q) * norm.pdf(x) + q * norm.pdf(x, -shift)
    q1 = (1 - q) * norm.pdf(x) + q * norm.pdf(x, 2 * shift)
    q2 = norm.pdf(x)
    for eps in (0.05, 0.2, 0.5, 1.0, 2.0):
        assert hockey(p, p2, eps) <= max(hockey(q1, q2, eps), hockey(q2, q1, eps)) + 1e-9


@pytest.mark.parametrize(("sigma", "q", "steps"), [
    (0.8, 0.01, 100), (1.5, 0.04, 500), (3.0, 0.1, 50), (5.0, 0.2, 1000), (1.0, 1.0, 10),
    (2.0, 1.0, 50),
])
def test_pld_at_most_rdp(sigma: float, q: float, steps: int) -> None:
    eps = epsilons(gaussian_ledger(sigma, steps, q), DELTA)
    assert eps.pld is not None and eps.rdp is not None
    assert eps.pld <= eps.rdp + 1e-9
    if q >= 1.0:  # unsampled: PLD is exact to its discretisation
        assert eps.gdp is not None
        assert abs(eps.pld - eps.gdp) < 1e-3


@pytest.mark.parametrize(("method", "q", "steps"), [
    pytest.param("rdp", 0.02, 200, marks=pytest.mark.slow),
    ("rdp", 1.0, 200), ("gdp", 1.0, 200), ("pld", 0.1, 50),
])
def test_calibration_monotone_in_epsilon(method: str, q: float, steps: int) -> None:
    targets = [0.5, 1.0, 2.0, 4.0, 8.0]
    sigmas = [calibrate(lambda s: gaussian_ledger(s, steps, q), e, DELTA, method)
              for e in targets]
    assert all(a > b for a, b in itertools.pairwise(sigmas)), sigmas
    for e, s in zip(targets, sigmas, strict=True):
        assert_spends(epsilon(gaussian_ledger(s, steps, q), DELTA, method), e, method)


def test_pld_calibration_round_trip() -> None:
    sigma = calibrate(lambda s: gaussian_ledger(s, 50, 0.1), 1.0, DELTA, "pld")
    assert_spends(epsilon(gaussian_ledger(sigma, 50, 0.1), DELTA, "pld"), 1.0, "pld")
    # more noise spends less, less noise more
    assert epsilon(gaussian_ledger(sigma * 1.01, 50, 0.1), DELTA) < 1.0
    assert epsilon(gaussian_ledger(sigma / 1.01, 50, 0.1), DELTA) > 1.0


def test_calibrate_refuses_bad_targets() -> None:
    with pytest.raises(ValueError):
        calibrate(lambda s: gaussian_ledger(s, 10), 0.0, DELTA)
    with pytest.raises(ValueError):
        calibrate(lambda s: gaussian_ledger(s, 10), math.inf, DELTA)
    with pytest.raises(ValueError):
        calibrate(lambda s: gaussian_ledger(s, 10), 1.0, 1.5)


def test_special_ledgers() -> None:
    assert epsilons(Ledger(), DELTA).pld == 0.0
    ledger = gaussian_ledger(1.0, 5)
    ledger.record(Sampling(), [Release("nonprivate", "data")])
    assert epsilons(ledger, DELTA).pld == math.inf
    with pytest.raises(ValueError):
        epsilon(gaussian_ledger(1.0, 5), DELTA, "magic")
    with pytest.raises(ValueError):
        epsilon(gaussian_ledger(1.0, 5), 0.0)


def test_mixed_poisson_and_fixed_has_pld_only() -> None:
    ledger = gaussian_ledger(1.0, 5, 0.1, scheme="poisson")
    for rnd, count in gaussian_ledger(1.0, 5, 0.1, scheme="fixed").summary():
        ledger.record(rnd.sampling, list(rnd.releases), count)
    eps = epsilons(ledger, DELTA)
    assert eps.rdp is None and eps.gdp is None  # one RDP accountant has one relation
    assert eps.pld == pytest.approx(epsilon(gaussian_ledger(1.0, 10, 0.1), DELTA, "pld"))


def test_parties_compose_separately_and_the_worst_is_reported() -> None:
    """Local DP: each client's releases compose; other clients' releases do not count."""
    ledger = Ledger()
    for party, count in ((0, 50), (1, 50), (2, 80)):
        ledger.record(Sampling("poisson", 100, rate=0.1, party=party),
                      [Release("gaussian", "v", sigma=1.5, sensitivity=1.0)], count)
    worst = epsilons(gaussian_ledger(1.5, 80, 0.1, n=100), DELTA)
    assert epsilons(ledger, DELTA) == worst


# -- regression constants (anchors/dp_tooling.md §6.5) ---------------------------------------


def test_regression_sigma_1_5_q_0_04() -> None:
    ledger = gaussian_ledger(1.5, 2250, 0.04, n=50_000)
    assert round(epsilon(ledger, 1e-5, "rdp"), 4) == 7.3293
    assert round(epsilon(ledger, 1e-5, "pld"), 4) == 6.7688


def test_regression_rdp_sigma_for_eps_8() -> None:
    sigma = calibrate(lambda s: gaussian_ledger(s, 2250, 0.04, n=50_000), 8.0, 1e-5, "rdp")
    assert round(sigma, 4) == 1.4159


def test_regression_pld_sigma_for_eps_8() -> None:
    sigma = calibrate(lambda s: gaussian_ledger(s, 2250, 0.04, n=50_000), 8.0, 1e-5, "pld")
    # 1.3459 (§6.5) to within the 1e-4 relative slack of a pessimistic calibration grid
    assert abs(sigma - 1.3459) <= 1e-4 * 1.3459 + 5e-5, sigma
    assert_spends(epsilon(gaussian_ledger(sigma, 2250, 0.04, n=50_000), 1e-5, "pld"), 8.0,
                  "pld")


@pytest.mark.slow
def test_regression_pld_sigma_for_eps_8_fine_grid() -> None:
    """The 4-decimal constant, calibrating on the reporting grid (1e-4) itself."""
    import inspect

    kw = {}
    if "discretization" in inspect.signature(calibrate).parameters:
        kw["discretization"] = accounting.PLD_DISCRETIZATION
    sigma = calibrate(lambda s: gaussian_ledger(s, 2250, 0.04, n=50_000), 8.0, 1e-5, "pld",
                      **kw)
    assert round(sigma, 4) == 1.3459


def test_regression_heterogeneous_composition() -> None:
    ledger = Ledger()
    ledger.record(Sampling(), [Release("gaussian", "a", sigma=4.0, sensitivity=1.0)], 10)
    ledger.record(Sampling(), [Release("gaussian", "b", sigma=20.0, sensitivity=1.0)], 100)
    eps = epsilons(ledger, 1e-6)
    assert round(eps.pld, 4) == 4.5298
    assert round(eps.gdp, 4) == 4.5298
    assert round(eps.rdp, 4) == 4.8426


def test_regression_two_gaussians_on_one_poisson_batch() -> None:
    ledger = Ledger()
    ledger.record(Sampling("poisson", 10_000, rate=0.01),
                  [Release("gaussian", "x", sigma=2.0, sensitivity=1.0),
                   Release("gaussian", "y", sigma=6.0, sensitivity=1.0)], 1000)
    ((rnd, _),) = ledger.summary()
    assert round(sigma_eff(rnd), 4) == 1.8974
    eps = epsilons(ledger, 1e-6)
    assert round(eps.rdp, 4) == 0.8375
    assert round(eps.pld, 4) == 0.7711
    assert eps.gdp is None


def test_two_gaussians_through_mechanism_share_a_round() -> None:
    """Two releases on one sampled batch are one round (σ_eff), not two compositions."""
    be = get_backend("numpy")
    mech = Mechanism(be.noise_source(0), np.random.default_rng(0))
    for _ in range(3):
        batch = mech.sample(200, scheme="poisson", rate=0.05)
        mech.gaussian(np.zeros(2), sensitivity=1.0, sigma=2.0, tag="x", batch=batch)
        mech.gaussian(np.zeros(2), sensitivity=1.0, sigma=6.0, tag="y", batch=batch)
    ((rnd, count),) = mech.ledger.summary()
    assert count == 3
    assert [r.tag for r in rnd.releases] == ["x", "y"]
    reference = Ledger()
    reference.record(Sampling("poisson", 200, rate=0.05),
                     [Release("gaussian", "x", 2.0, 1.0), Release("gaussian", "y", 6.0, 1.0)],
                     3)
    assert epsilons(mech.ledger, 1e-6) == epsilons(reference, 1e-6)


@pytest.mark.parametrize(("eps", "mu"), [(0.5, 0.1422), (1.0, 0.2681), (2.0, 0.5016),
                                         (4.0, 0.9249), (8.0, 1.666)])
def test_regression_mu_table(eps: float, mu: float) -> None:
    decimals = len(str(mu).split(".")[1])
    # a single Gaussian with noise multiplier 1/μ spends ε (exact GDP) ...
    got = epsilon(gaussian_ledger(1.0 / mu, 1), 1e-5, "gdp")
    half_ulp = 0.5 * 10.0**-decimals
    lo = epsilon(gaussian_ledger(1.0 / (mu - half_ulp), 1), 1e-5, "gdp")
    hi = epsilon(gaussian_ledger(1.0 / (mu + half_ulp), 1), 1e-5, "gdp")
    assert lo <= eps <= hi, (lo, got, hi)
    # ... and calibrating the exact accountant to ε gives back μ to the table's precision
    sigma = calibrate(lambda s: gaussian_ledger(s, 1), eps, 1e-5, "gdp")
    assert round(1.0 / sigma, decimals) == mu


def test_regression_50_gaussians() -> None:
    eps = epsilons(gaussian_ledger(2.0, 50), 1e-5)
    assert round(eps.pld, 4) == 20.6755
    assert round(eps.rdp, 4) == 22.0199
    assert abs(eps.pld - eps.gdp) < 1e-3


# -- sampling ---------------------------------------------------------------------------------


def test_poisson_rate_matches_q() -> None:
    from scipy.stats import binomtest

    mech = Mechanism(None, np.random.default_rng(2024))
    n, q, rounds = 5000, 0.03, 40
    total = 0
    for _ in range(rounds):
        batch = mech.sample(n, scheme="poisson", rate=q)
        assert len(np.unique(batch.indices)) == len(batch)
        assert np.all((batch.indices >= 0) & (batch.indices < n))
        assert batch.sampling == Sampling("poisson", n, rate=q)
        total += len(batch)
    assert binomtest(total, n * rounds, q).pvalue > 1e-3
    # and a rate far from q is rejected by the same test (the test has power)
    assert binomtest(total, n * rounds, q * 1.1).pvalue < 1e-3


def test_poisson_inclusion_is_per_record() -> None:
    """Every record is included at rate q (not a fixed subset)."""
    mech = Mechanism(None, np.random.default_rng(7))
    n, q, rounds = 50, 0.2, 2000
    hits = np.zeros(n)
    for _ in range(rounds):
        hits[mech.sample(n, scheme="poisson", rate=q).indices] += 1
    freq = hits / rounds
    se = math.sqrt(q * (1 - q) / rounds)
    assert np.all(np.abs(freq - q) < 5 * se)


def test_fixed_size_batches() -> None:
    mech = Mechanism(None, np.random.default_rng(3))
    for size in (1, 7, 64, 100):
        batch = mech.sample(100, scheme="fixed", size=size)
        assert len(batch) == size
        assert len(np.unique(batch.indices)) == size
        assert set(batch.indices.tolist()) <= set(range(100))
        assert batch.sampling == Sampling("fixed", 100, rate=size / 100, size=size)
    with pytest.raises(ValueError):
        mech.sample(100, scheme="fixed", size=101)
    with pytest.raises(ValueError):
        mech.sample(100, scheme="fixed", size=0)
    with pytest.raises(ValueError):
        mech.sample(100, scheme="poisson", rate=0.0)
    with pytest.raises(ValueError):
        mech.sample(100, scheme="bogus")


@pytest.mark.parametrize("scheme", ["poisson", "fixed", "none"])
def test_sampling_from_a_client_stays_in_the_client(scheme: str) -> None:
    mech = Mechanism(None, np.random.default_rng(11))
    client = np.arange(300, 360)
    seen: set[int] = set()
    for _ in range(50):
        batch = mech.sample(client, scheme=scheme, rate=0.3, size=12)
        assert set(batch.indices.tolist()) <= set(client.tolist())
        assert batch.sampling.n == len(client)
        seen |= set(batch.indices.tolist())
        if scheme == "fixed":
            assert len(np.unique(batch.indices)) == 12
        if scheme == "none":
            np.testing.assert_array_equal(batch.indices, client)
    assert len(seen) > 30  # draws cover the client, not one corner of it


def test_sampler_is_reproducible() -> None:
    a = Mechanism(None, np.random.default_rng(5)).sample(1000, scheme="poisson", rate=0.1)
    b = Mechanism(None, np.random.default_rng(5)).sample(1000, scheme="poisson", rate=0.1)
    np.testing.assert_array_equal(a.indices, b.indices)


def test_own_streams_are_the_samplers_first_two_children() -> None:
    """A mechanism given no Laplace or public stream draws them from children 0 and 1 of the
    sampler's seed sequence, spawned on first use: the streams of an eager spawn at
    construction (issue 24), whatever was sampled before."""
    mech = Mechanism(None, np.random.default_rng(9))
    mech.sample(50, scheme="fixed", size=5)
    laplace, public = np.random.default_rng(9).bit_generator.seed_seq.spawn(2)
    assert mech.public.random() == np.random.default_rng(public).random()
    assert mech.laplace_rng.laplace() == np.random.default_rng(laplace).laplace()
    given = np.random.default_rng(1)
    assert Mechanism(None, np.random.default_rng(9), public=given).public is given


def test_gaussian_releases_record_their_parameters() -> None:
    mech = Mechanism(get_backend("numpy").noise_source(0), np.random.default_rng(0))
    batch = mech.sample(100, scheme="fixed", size=10)
    for sigma in (1.5, 1.5, 2.0):
        mech.gaussian(np.zeros(2), sensitivity=np.float64(0.2), sigma=sigma, tag="g",
                      batch=batch)
    assert batch.releases == [Release("gaussian", "g", sigma=1.5, sensitivity=0.2)] * 2 + [
        Release("gaussian", "g", sigma=2.0, sensitivity=0.2)]
    assert all(type(r.sensitivity) is float for r in batch.releases)


# -- ledger ------------------------------------------------------------------------------------


def test_ledger_json_round_trip() -> None:
    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm("dp_sgd", setup.instance, steps=12)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.1))
    mech = make_mech(setup.backend)
    run_steps(alg, setup.oracle, plan, mech)
    mech.gaussian(np.zeros(3), sensitivity=2.0, sigma=5.0, tag="full")  # an unsampled round
    text = json.dumps(mech.ledger.to_json())
    back = Ledger.from_json(json.loads(text))
    assert epsilons(back, DELTA) == epsilons(mech.ledger, DELTA)
    assert sorted(map(repr, back.summary())) == sorted(map(repr, mech.ledger.summary()))
    assert sorted(json.dumps(e, sort_keys=True) for e in back.to_json()) == sorted(
        json.dumps(e, sort_keys=True) for e in json.loads(text))


def test_ledger_groups_identical_rounds() -> None:
    mech = Mechanism(get_backend("numpy").noise_source(0), np.random.default_rng(0))
    for _ in range(5):
        batch = mech.sample(100, scheme="poisson", rate=0.1)
        mech.gaussian(np.zeros(2), sensitivity=1.0, sigma=1.0, tag="g", batch=batch)
    mech.sample(100, scheme="poisson", rate=0.1)  # a batch without release is not a round
    ((_rnd, count),) = mech.ledger.summary()
    assert count == 5
    assert epsilons(mech.ledger, DELTA) == epsilons(
        gaussian_ledger(1.0, 5, 0.1, n=100), DELTA)


# -- noisy_sgd (avdiukhin2024) -------------------------------------------------------------------


def paper_sigma(n: int, batch: int, steps: int, eps: float, delta: float, c2: float = 1.0
                ) -> float:
    return c2 * batch * math.sqrt(steps * math.log(1 / delta)) / (n * eps)


@pytest.mark.parametrize("c2", [1.0, 0.3])
def test_noisy_sgd_paper_sigma_theorem_3_3(c2: float) -> None:
    # n = 500, B = 50, T = 400: σ is a few units, so the PLD figures of the plan are quick
    data = DataSize(n=500, constants={"G": 2.0})

    def sigma(eps: float, steps: int) -> float:
        alg = NoisySGD(NoisySGDParams(steps=steps, batch_size=50, c2=c2))
        return alg.paper_sigma(data, PrivacyTarget(epsilon=eps, delta=1e-5,
                                                   calibration="paper"))

    s = sigma(1.0, 400)
    assert s == pytest.approx(paper_sigma(500, 50, 400, 1.0, 1e-5, c2), rel=1e-12)
    assert sigma(2.0, 400) == pytest.approx(s / 2, rel=1e-12)  # doubling ε halves σ
    assert sigma(1.0, 1600) == pytest.approx(2 * s, rel=1e-12)  # quadrupling T doubles σ

    alg = NoisySGD(NoisySGDParams(steps=400, batch_size=50, c2=c2))
    assert alg.paper_epsilon(data, s, 1e-5) == pytest.approx(1.0, rel=1e-12)
    plan = alg.plan(data, PrivacyTarget(epsilon=1.0, delta=1e-5, calibration="paper"))
    assert plan.calibration == "paper"
    assert plan.sigma == pytest.approx(s, rel=1e-12)
    assert plan.eps_paper == pytest.approx(1.0, rel=1e-12)
    # the tight accountants report what σ really spends (finite, and PLD <= RDP)
    assert plan.eps.pld is not None and plan.eps.pld <= plan.eps.rdp + 1e-9


def test_noisy_sgd_needs_a_bound() -> None:
    setup = make_setup("nc_least_squares", "numpy")  # publishes no G
    alg = make_algorithm("noisy_sgd", None)
    with pytest.raises(ValueError, match="bound"):
        alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.0))


def test_noisy_sgd_records_bound_violations() -> None:
    setup = make_setup("strict_saddle", "numpy")
    # at x0 = 0 every per-sample gradient is σ1 ξ_i (norm 0.5): bound 1e-3 is always exceeded
    alg = make_algorithm("noisy_sgd", setup.instance, bound=1e-3, steps=10)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.0))
    mech = make_mech(setup.backend)
    sizes = count_sampled(mech)
    _, trace = traced(alg, setup.oracle, plan, mech)
    diag = alg.diagnostics(trace)
    assert diag["bound"] == 1e-3
    assert diag["bound_checked"] is True
    assert diag["guarantee_void"] is True
    assert diag["bound_violations"] == sum(sizes) > 0
    assert diag["max_per_sample_grad_norm"] > 0.4


def test_noisy_sgd_partial_violations_are_counted_exactly() -> None:
    setup = make_setup("strict_saddle", "numpy")
    bound = 0.6
    alg = make_algorithm("noisy_sgd", setup.instance, bound=bound, steps=8, lr=0.3)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.0))
    mech = make_mech(setup.backend)
    expected, max_norm = 0, 0.0
    steps = []
    original = mech.sample
    batches: list[np.ndarray] = []

    def sample(*a: Any, **kw: Any) -> Any:
        b = original(*a, **kw)
        batches.append(b.indices)
        return b

    mech.sample = sample  # type: ignore[method-assign]
    steps, trace = traced(alg, setup.oracle, plan, mech)
    xs = [setup.oracle.x0] + [s.x for s in steps[:-1]]
    for x, idx in zip(xs, batches, strict=True):
        if len(idx):
            norms = np.linalg.norm(setup.oracle.per_sample_grads(x, idx), axis=1)
            expected += int((norms > bound).sum())
            max_norm = max(max_norm, float(norms.max()))
    diag = alg.diagnostics(trace)
    assert diag["bound_violations"] == expected
    assert diag["max_per_sample_grad_norm"] == pytest.approx(max_norm, rel=1e-12)
    assert diag["guarantee_void"] is (expected > 0)


def test_noisy_sgd_no_violation_with_published_bound() -> None:
    setup = make_setup("strict_saddle", "numpy")
    alg = make_algorithm("noisy_sgd", setup.instance, steps=30, lr=0.2)
    plan = alg.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.0))
    assert plan.extra.bound == setup.instance.constants["G"]
    _, trace = traced(alg, setup.oracle, plan, make_mech(setup.backend))
    diag = alg.diagnostics(trace)
    assert diag["bound"] == setup.instance.constants["G"]
    assert diag["bound_violations"] == 0
    assert diag["guarantee_void"] is False
    assert 0 < diag["max_per_sample_grad_norm"] <= setup.instance.constants["G"]


def test_noisy_sgd_unchecked_bound() -> None:
    setup = make_setup("strict_saddle", "numpy")
    checked = make_algorithm("noisy_sgd", setup.instance, steps=10)
    unchecked = make_algorithm("noisy_sgd", setup.instance, steps=10, check_bound=False)
    target = PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=1.0)
    xs = []
    for alg in (checked, unchecked):
        plan = alg.plan(setup.instance, target)
        steps, trace = traced(alg, setup.oracle, plan, make_mech(setup.backend))
        xs.append([to_numpy(s.x) for s in steps])
    assert unchecked.diagnostics(trace) == {"bound": setup.instance.constants["G"],
                                            "bound_checked": False}
    # mean gradient × |B| equals the per-sample sum up to rounding
    np.testing.assert_allclose(xs[0], xs[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_noisy_sgd_equals_dp_sgd_when_bound_holds(backend: str) -> None:
    """avdiukhin2024 claim T2 (Lemma 3.2): Alg. 2 = Alg. 1 step for step when ‖∇f_i‖ ≤ C."""
    setup = make_setup("strict_saddle", backend)
    g = setup.instance.constants["G"]
    target = PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=0.8)
    runs = {}
    for name, kw in (("noisy_sgd", {"bound": g}), ("dp_sgd", {"clip": g})):
        alg = make_algorithm(name, setup.instance, steps=25, lr=0.3, **kw)
        plan = alg.plan(setup.instance, target)
        steps, trace = traced(alg, setup.oracle, plan, make_mech(setup.backend))
        runs[name] = [to_numpy(s.x) for s in steps]
        if name == "noisy_sgd":
            assert alg.diagnostics(trace)["bound_violations"] == 0
            noisy_plan = plan
        else:
            assert plan.eps == noisy_plan.eps  # same privacy spent
    np.testing.assert_array_equal(np.array(runs["noisy_sgd"]), np.array(runs["dp_sgd"]))


def test_noisy_sgd_differs_from_dp_sgd_when_clipping_bites() -> None:
    setup = make_setup("strict_saddle", "numpy")
    target = PrivacyTarget(epsilon=2.0, delta=DELTA, sigma=0.8)
    finals = []
    for name, kw in (("noisy_sgd", {"bound": 0.1}), ("dp_sgd", {"clip": 0.1})):
        alg = make_algorithm(name, setup.instance, steps=10, lr=0.3, **kw)
        plan = alg.plan(setup.instance, target)
        finals.append(to_numpy(run_steps(alg, setup.oracle, plan,
                                         make_mech(setup.backend))[-1].x))
    assert not np.allclose(finals[0], finals[1])


@pytest.mark.parametrize("sigma", [0.07, 1.3, 40.0])
@pytest.mark.parametrize("sensitivity", [1.0, 0.37])
@pytest.mark.parametrize("adjacency", ["ADD", "REMOVE"])
@pytest.mark.parametrize("q", [1.0, 0.3, 0.004])
def test_vectorised_gaussian_loss_is_dp_accountings_pointwise_loop(
        sigma: float, sensitivity: float, adjacency: str, q: float) -> None:
    """The Gaussian's δ(ε) grid, its privacy loss inverted on the whole array at once
    (accounting._vectorise_gaussian_loss), has dp-accounting's own bits, with and without
    subsampling; on the grid the library builds a PLD from, and on a wide one."""
    mechanisms = accounting._dpa().pld.privacy_loss_mechanism
    loss = mechanisms.GaussianPrivacyLoss(
        sigma, sensitivity=sensitivity, sampling_prob=q,
        adjacency_type=getattr(mechanisms.AdjacencyType, adjacency))
    bounds = loss.connect_dots_bounds()
    lower, upper = (bounds.epsilon_lower, bounds.epsilon_upper)
    used = np.arange(math.ceil(lower / 1e-3), math.floor(upper / 1e-3) + 1) * 1e-3
    wide = np.concatenate([np.linspace(-30.0, 60.0, 20_001), [0.0, -math.log1p(-min(q, 0.99))]])
    pointwise = mechanisms.AdditiveNoisePrivacyLoss.get_delta_for_epsilon
    for grid in (used, wide):
        assert np.array_equal(loss.get_delta_for_epsilon(grid), pointwise(loss, grid),
                              equal_nan=True)
    assert loss.get_delta_for_epsilon(0.5) == pointwise(loss, 0.5)


def test_contiguous_dictionary_to_list_is_dp_accountings() -> None:
    """A PMF dict holding exactly its index range in order is listed by its values; any other
    dict by dp-accounting's own lookup (accounting._contiguous_dictionary_to_list)."""
    common = accounting._dpa().pld.common
    dense = dict(zip(range(-40, 60), np.linspace(0.0, 1.0, 100), strict=True))
    for d in ({-2: 0.1, -1: 0.2, 0: 0.3, 1: 0.4}, {3: 0.5, 5: 0.25}, {1: 0.5, 0: 0.5},
              {7: 1.0}, dense):
        offset, values = common.dictionary_to_list(d)
        assert offset == min(d)
        assert values == [d.get(i, 0) for i in range(min(d), max(d) + 1)]  # the library's
    assert all(a is b for a, b in zip(common.dictionary_to_list(dense)[1], dense.values(),
                                      strict=True))


def reference_key(ledger: Ledger) -> tuple[tuple[Round, int], ...]:
    """The accountants' view of a ledger as first written (grouped by dataclass value,
    sorted by repr): what the faster accounting._key must give, object for object."""
    stripped: dict[Release, tuple[str, Release]] = {}

    def strip(r: Release) -> tuple[str, Release]:
        if r not in stripped:
            bare = Release(r.kind, "", sigma=r.sigma, epsilon=r.epsilon)
            stripped[r] = (repr(bare), bare)
        return stripped[r]

    counts: Counter[Round] = Counter()
    for rnd, count in ledger.summary():
        releases = tuple(bare for _, bare in sorted(map(strip, rnd.releases),
                                                    key=lambda pair: pair[0]))
        counts[Round(rnd.sampling, releases)] += count
    return tuple(sorted(counts.items(), key=repr))


@pytest.mark.parametrize(("name", "problem"), [
    ("spider_sosp", "strict_saddle"), ("dp_sgd", "strict_saddle"),
    ("prisma", "nc_least_squares"), ("gauss_psgd", "strict_saddle"),
    ("dp_rgda", "ncsc_double_well"), ("private_diff", "ncsc_double_well")])
def test_accounting_key_groups_by_value_in_repr_order(name: str, problem: str) -> None:
    """accounting._key (ungrouped rounds, releases stripped once per object, reprs composed
    from the parts') equals the grouping by value sorted by repr, in value and order, on
    planned and realised ledgers of several algorithms and on a hand-made one with equal
    samplings of distinct objects, a one-release round, counted and open rounds."""
    setup = make_setup(problem)
    algorithm = make_algorithm(name, setup.instance)
    plan = algorithm.plan(setup.instance, PrivacyTarget(epsilon=2.0, delta=DELTA))
    mech = make_mech(setup.backend)
    run_steps(algorithm, setup.oracle, plan, mech)
    made = Ledger()
    made.record(Sampling("poisson", 100, 0.1), [Release("gaussian", "a", 2.0, 1.0)], 3)
    made.record(Sampling("poisson", 100, 0.1), [Release("gaussian", "b", 2.0, 5.0)], 2)
    made.record(Sampling("fixed", 100, size=7), [Release("gaussian", "z", 3.0, 1.0),
                                                 Release("pure", "y", epsilon=0.5)])
    made.open(Batch(np.arange(3), Sampling("fixed", 100, size=7),
                    [Release("pure", "x", epsilon=0.5), Release("gaussian", "w", 3.0, 2.0)]))
    made.open(Batch(np.arange(3), Sampling("none", 100)))
    for ledger in (plan.ledger, mech.ledger, made):
        got, want = accounting._key(ledger), reference_key(ledger)
        assert got == want and list(map(repr, got)) == list(map(repr, want))
        assert all(accounting._round_repr(r.sampling, tuple(map(repr, r.releases)), c)
                   == repr((r, c)) for r, c in got)
