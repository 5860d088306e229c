"""Issues 8 and 23: every registered private algorithm passes the exact checks (L0) and the
white-box canary audit (L1); known bugs injected into copies of dp_sgd are each caught by
both; an algorithm that assumes a gradient bound is audited above it.

The registry-driven tests pick up a newly registered algorithm automatically. Seeds are
fixed, so every outcome here is deterministic; the audits' false-alarm rate is α = 1e-3.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from algorithms import ALGORITHMS, Plan, PrivacyTarget, Step, Trace
from algorithms.dp_sgd import DPSGD
from algorithms.premises import NormTracker
from algorithms.privacy.ledger import Batch, Mechanism
from bench.audit import (
    DEFAULT_RUNS,
    PARTS,
    SMOOTHNESS,
    AlgorithmAudit,
    AssumptionAudit,
    AuditRequest,
    assumption_audits,
    audit_algorithm,
    gdp_mu,
)
from bench.canary import (
    SLOT,
    SMOOTHNESS_SETTINGS,
    AuditMechanism,
    ReplayDiverged,
    audit_params,
    audit_problem,
    canary_oracle,
    declared_smoothness,
    exact_checks,
    make_audit,
    power_params,
)
from problems.backend import BackendSpec, get_backend
from problems.oracles import Oracle

PRIVATE = sorted(name for name, cls in ALGORITHMS.items() if cls.private)
RUNS = 1000  # per side, registry-wide
#: per side, quick variants: gross bugs show with a few hundred runs, a halved σ (μ × 2 in
#: the power setting) with two thousand, an unrecorded second release (μ × √2, seen only by
#: the iterates' statistic and its looser bound) and a doubled Poisson rate (in the
#: subsampled setting alone, where only the distribution-free threshold rule gates) with
#: three thousand
QUICK_MUTANT_RUNS = {"no_clipping": 200, "sum_with_mean_scale": 200, "sigma_halved": 2000,
                     "unrecorded_release": 3000, "wrong_rate": 3000}
#: the setting each mutant shows in: a wrong Poisson rate cannot show at q = 1
MUTANT_SETTING = {"wrong_rate": "subsampled"}


# -- the harness -----------------------------------------------------------------------------
@pytest.mark.parametrize("problem", ["strict_saddle", "ncsc_double_well"])
def test_canary_oracle_isolates_the_canary_coordinate(problem: str) -> None:
    base = audit_problem("dp_sgda" if problem == "ncsc_double_well" else "dp_sgd")
    oracle = canary_oracle(base.oracle(get_backend(BackendSpec(name="numpy"))), 7.0)
    x = np.linspace(-0.5, 0.5, oracle.d)
    idx = np.array([3, SLOT, 5])
    rows = oracle.per_sample_grads(x, idx)
    assert rows.shape == (3, oracle.d)
    np.testing.assert_array_equal(rows[1], np.eye(oracle.d)[-1] * 7.0)  # a·e_k exactly
    assert np.all(rows[[0, 2], -1] == 0.0)  # nothing else touches k
    np.testing.assert_allclose(oracle.grad(x, idx), rows.mean(axis=0))
    v = np.ones(oracle.d)
    assert oracle.hvp(x, v, idx)[-1] == 0.0  # the canary is linear
    # the loss changes along k by the canary's slope alone
    e = np.eye(oracle.d)[-1]
    assert float(oracle.loss(x + e, idx) - oracle.loss(x, idx)) == pytest.approx(7.0 / 3)


@pytest.mark.parametrize("kind", ["dirac", "curvature"])
def test_canary_hvps_share_the_base_work_and_keep_every_bit(kind: str) -> None:
    """A canary oracle's hvps (a dense Hessian's d HVPs: the base's share computed together)
    gives each HVP bit for bit as one vector at a time did, over chunks with the slot."""
    base = audit_problem("spider_sosp").oracle(get_backend(BackendSpec(name="numpy")))
    oracle = canary_oracle(base, 2.5, kind)
    oracle.eval_chunk = 4
    rng = np.random.default_rng(5)
    x = oracle.x0 + 0.3 * rng.standard_normal(oracle.d)
    idx = np.array([7, SLOT, 3, 11, 2, 9, 14])
    vectors = [*np.eye(oracle.d), rng.standard_normal(oracle.d)]
    d = base.d

    def one(vec: np.ndarray) -> np.ndarray:  # the per-vector formula before hvps existed
        total = 0.0
        for chunk in (idx[:4], idx[4:]):
            slots, others = chunk[chunk == SLOT], chunk[chunk != SLOT]
            out = oracle._canary_hvp(vec, slots)
            out[:d] += base._hvp_sum(x[:d], vec[:d], others)
            total = total + out
        return total / len(idx)

    for got, vec in zip(oracle.hvps(x, vectors, idx), vectors, strict=True):
        assert np.array_equal(got, one(vec))
        assert np.array_equal(got, oracle.hvp(x, vec, idx))


def test_audit_parts_run_apart_give_the_whole_audit() -> None:
    """``saddlebench audit --jobs`` runs each part of an algorithm's audit as a task of its
    own, in another process and order: assembled, they are the audit run in one piece
    (noisy_sgd: an assumption audit; prisma: a Poisson rate and a declared smoothness)."""
    for name in ("noisy_sgd", "prisma"):
        request = AuditRequest(name, runs=40, training=False)
        parts = {part: pickle.loads(pickle.dumps(request)).part(part)
                 for part in reversed(PARTS)}
        apart = request.assemble([parts[part] for part in PARTS]).to_dict()
        whole = audit_algorithm(name, runs=40, training=False).to_dict()
        assert apart.pop("cpu_seconds") > 0
        whole.pop("cpu_seconds")
        assert json.dumps(apart, sort_keys=True) == json.dumps(whole, sort_keys=True)


def test_replay_refuses_a_diverging_transcript() -> None:
    alg = ALGORITHMS["dp_sgd"](audit_params("dp_sgd"))
    setup = make_audit(alg, audit_problem("dp_sgd"), PrivacyTarget(epsilon=2.0, sigma=1.0))
    recorded, _, _ = setup.run(setup.strength, 0)
    with pytest.raises(ReplayDiverged):
        setup.run(0.0, 0, replay=recorded.emissions[:3])


# -- L0 and L1 over the registry --------------------------------------------------------------
_AUDITS: dict[str, AlgorithmAudit] = {}


def registry_audit(name: str) -> AlgorithmAudit:
    if name not in _AUDITS:
        _AUDITS[name] = audit_algorithm(name, runs=RUNS, training=False)
    return _AUDITS[name]


@pytest.mark.parametrize("name", PRIVATE)
def test_exact_checks_pass_and_reach_the_declared_sensitivity(name: str) -> None:
    report = registry_audit(name).exact
    assert report.passed, report.failures
    # the canary reaches some release's declared sensitivity exactly: the check is tight
    assert report.max_sensitivity_ratio == pytest.approx(1.0, abs=1e-6)
    assert report.directions, "the canary never reached a release"
    assert report.noise_draws >= 200
    assert abs(report.noise_std - 1.0) < 0.15
    claimed, realised = report.eps_claimed.headline, report.eps_realised.headline
    assert claimed is not None and realised is not None and realised <= claimed * (1 + 1e-6)


@pytest.mark.parametrize("name", PRIVATE)
def test_canary_audit_passes(name: str) -> None:
    result = registry_audit(name)
    assert result.canary.passed, result.canary
    assert result.canary_subsampled is None or result.canary_subsampled.passed
    # the true add/remove pair wherever the claim is add/remove (a Poisson round)
    assert (result.canary_removal is not None) is (result.exact.world == "add")
    assert result.canary_removal is None or result.canary_removal.passed
    assert all(r.passed for r in result.exact_variants.values())
    assert result.canary.runs <= 2 * RUNS  # planned from L0's measured leakage
    assert result.eps_claimed["headline"] == pytest.approx(2.0, rel=1e-3)
    assert result.exact_l1 is not None and result.exact_l1.passed, result.exact_l1.failures
    assert all(a.passed for a in result.assumptions), [a.to_dict() for a in result.assumptions]


# -- mutants: copies of dp_sgd with one known bug each ------------------------------------------
class SigmaHalved(DPSGD):
    """Runs with half the calibrated σ (the plan's claim unchanged)."""

    def iterate(self, oracle: Oracle, plan: Plan, mech: Mechanism, trace: Trace
                ) -> Iterator[Step]:
        yield from super().iterate(oracle, dataclasses.replace(plan, sigma=plan.sigma / 2),
                                   mech, trace)


class NoClipping(DPSGD):
    """Sums the raw per-sample gradients."""

    def gradient_sum(self, oracle: Oracle, x: Any, batch: Batch, norms: NormTracker) -> Any:
        return oracle.per_sample_grads(x, batch.indices).sum(axis=0)


class WrongRate(DPSGD):
    """Records Poisson rate q but a second draw doubles the batch."""

    def sample(self, mech: Mechanism, n: int) -> Batch:
        batch = super().sample(mech, n)
        extra = np.flatnonzero(mech.sampler.random(n) < self.params.batch_size / n)
        batch.indices = np.union1d(batch.indices, extra)
        return batch


class UnrecordedRelease(DPSGD):
    """Also perturbs the clipped sum outside the mechanism's ledger and averages the two
    noisy copies (a second release nobody accounts for)."""

    def iterate(self, oracle: Oracle, plan: Plan, mech: Mechanism, trace: Trace
                ) -> Iterator[Step]:
        x, p = oracle.x0, self.params
        norms = NormTracker(oracle.backend, plan.extra.bound)
        std = plan.sigma * plan.extra.sensitivity
        for t in range(plan.steps):
            batch = self.sample(mech, oracle.n)
            total = self.gradient_sum(oracle, x, batch, norms)
            noisy = mech.gaussian(total, sensitivity=plan.extra.sensitivity,
                                  sigma=plan.sigma, tag="grad_sum", batch=batch)
            leaked = mech.perturb(total, std)
            x = x - p.lr * (noisy + leaked) / (2 * p.batch_size)
            yield Step(t + 1, x)


class SumWithMeanScale(DPSGD):
    """Releases the sum with noise for the mean's sensitivity C/B."""

    def iterate(self, oracle: Oracle, plan: Plan, mech: Mechanism, trace: Trace
                ) -> Iterator[Step]:
        x, p = oracle.x0, self.params
        norms = NormTracker(oracle.backend, plan.extra.bound)
        for t in range(plan.steps):
            batch = self.sample(mech, oracle.n)
            total = self.gradient_sum(oracle, x, batch, norms)
            noisy = mech.gaussian(total, sensitivity=plan.extra.sensitivity / p.batch_size,
                                  sigma=plan.sigma, tag="grad_sum", batch=batch)
            x = x - p.lr * noisy / p.batch_size
            yield Step(t + 1, x)


MUTANTS: dict[str, tuple[type[DPSGD], str]] = {
    "sigma_halved": (SigmaHalved, "the run spent"),
    "no_clipping": (NoClipping, "declared sensitivity"),
    "wrong_rate": (WrongRate, "Poisson batches hold"),
    "unrecorded_release": (UnrecordedRelease, "data used outside a recorded release"),
    "sum_with_mean_scale": (SumWithMeanScale, "declared sensitivity"),
}


def mutant_audit(mutant: type[DPSGD], runs: int, subsampled: bool = True,
                 setting: str = "power", planned: bool = True) -> AlgorithmAudit:
    return audit_algorithm("dp_sgd", runs=runs, algorithm=mutant, subsampled=subsampled,
                           setting=setting, training=False, planned=planned)


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_caught_by_the_exact_checks(mutant: str) -> None:
    cls, message = MUTANTS[mutant]
    setup = make_audit(cls(audit_params("dp_sgd")), audit_problem("dp_sgd"),
                       PrivacyTarget(epsilon=2.0, delta=1e-5))
    report = exact_checks(setup, runs=20)
    assert not report.passed
    assert any(message in f for f in report.failures), report.failures


def assert_caught_by_l1(result: AlgorithmAudit, mutant: str) -> None:
    canary = (result.canary_subsampled if mutant in MUTANT_SETTING and result.setting == "power"
              else result.canary)
    assert canary is not None and not canary.passed, canary
    assert canary.eps_lower > canary.eps_claimed if canary.exact_gdp else canary.eps_lb > 0


# The unrecorded release bypasses the mechanism, so the release LLR cannot see it: the
# iterates' statistic does (the output is less noisy than the ledger says). The quick
# variants audit L1 in the one setting each mutant shows in, at exactly their run count (L0's
# measured leakage, which plans the default audit's runs, cannot see a bypassed release).
@pytest.mark.parametrize("mutant", sorted(QUICK_MUTANT_RUNS))
def test_mutant_is_caught_by_the_canary_audit_quick(mutant: str) -> None:
    result = mutant_audit(MUTANTS[mutant][0], QUICK_MUTANT_RUNS[mutant], subsampled=False,
                          setting=MUTANT_SETTING.get(mutant, "power"), planned=False)
    assert_caught_by_l1(result, mutant)
    if mutant == "unrecorded_release":
        assert result.canary.statistic.startswith("iterates")


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_caught_by_the_canary_audit_at_the_default_run_count(mutant: str) -> None:
    """What ``saddlebench audit`` does by default: the power setting, and for dp_sgd's
    Poisson claim the subsampled setting too (the wrong rate shows there)."""
    result = mutant_audit(MUTANTS[mutant][0], DEFAULT_RUNS)
    assert_caught_by_l1(result, mutant)


@pytest.mark.slow
def test_correct_dp_sgd_passes_and_is_tight_at_the_default_run_count() -> None:
    result = mutant_audit(DPSGD, DEFAULT_RUNS)
    assert result.passed, (result.exact.failures, result.canary)
    assert result.canary.exact_gdp and result.canary.ratio is not None
    assert result.canary.ratio >= 0.5  # ε_lb ≥ 1 against the claimed 2


def test_correct_dp_sgd_power_audit_quick() -> None:
    result = mutant_audit(DPSGD, 1000)
    assert result.one_run is not None and result.one_run.problem == "strict_saddle"
    assert result.passed, (result.exact.failures, result.canary)
    assert result.canary.mu_claimed == pytest.approx(gdp_mu(2.0, 1e-5), rel=1e-3)
    assert result.canary.ratio is not None and result.canary.ratio >= 0.3
    assert result.canary_subsampled is not None and result.canary_subsampled.passed


# -- assumption audits ----------------------------------------------------------------------
def test_noisy_sgd_above_its_assumed_bound_leaks_and_says_so() -> None:
    result = audit_algorithm("noisy_sgd", runs=300, training=False)
    assert result.passed  # in regime: the canary has norm C exactly
    assert [a.multiple for a in result.assumptions] == pytest.approx([3.0])
    above = result.assumptions[0]
    assert above.guarantee_void is True and above.flagged
    assert not above.canary.passed and above.canary.eps_lower > 2.0  # beyond the claim
    assert any("declared sensitivity" in f for f in above.exact_failures)


def test_algorithms_that_clip_get_no_assumption_audit() -> None:
    assert audit_algorithm("dp_sgd", runs=20, training=False).assumptions == []


def test_sampling_check_sees_only_the_recorded_rate() -> None:
    """The realised inclusion frequency of the slot over many runs matches q."""
    alg = ALGORITHMS["dp_sgd"](audit_params("dp_sgd"))
    setup = make_audit(alg, audit_problem("dp_sgd"), PrivacyTarget(epsilon=2.0, sigma=1.0))
    hits = trials = 0
    for seed in range(200):
        mech: AuditMechanism = setup.run(0.0, seed)[0]
        hits += sum(int(np.any(b.indices == SLOT)) for b in mech.batches)
        trials += len(mech.batches)
    q = alg.params.batch_size / setup.plan.n
    assert abs(hits / trials - q) < 5 * math.sqrt(q * (1 - q) / trials)


# -- the command and the page ------------------------------------------------------------------
def test_cli_audit_writes_results_and_the_privacy_page(tmp_path: Any) -> None:
    import json

    from saddlebench.cli import main

    assert main(["audit", "dp_sgd", "--runs", "40", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "audit" / "dp_sgd.json").read_text())
    assert record["passed"] and record["exact"]["passed"] and record["canary"]["runs"] == 80
    assert record["eps_claimed"]["pld"] == pytest.approx(2.0, rel=1e-3)
    page = (tmp_path / "report" / "privacy" / "index.html").read_text()
    assert "dp_sgd" in page and "FAIL" not in page
    assert "ε lb ÷ ε" in page and "detects ε ≥" in page and "cannot show" in page
    tex = (tmp_path / "report" / "privacy" / "tables" / "privacy_audit_lower_bounds.tex"
           ).read_text()
    assert r"\toprule" in tex and r"dp\_\allowbreak{}sgd" in tex  # long names may break


def test_privacy_page_marks_failures(tmp_path: Any) -> None:
    import json

    from reports.privacy import build_privacy_page

    result = mutant_audit(NoClipping, 40, subsampled=False)
    (tmp_path / "dp_sgd.json").write_text(json.dumps(result.to_dict()))
    page = (build_privacy_page(tmp_path, tmp_path / "page") / "index.html").read_text()
    assert page.count("FAIL") >= 2 and "declared sensitivity" in page


def test_privacy_page_shows_the_assumption_audits(tmp_path: Any) -> None:
    import json

    from reports.privacy import build_privacy_page

    for name in ("noisy_sgd", "prisma"):
        result = audit_algorithm(name, runs=40, training=False)
        (tmp_path / f"{name}.json").write_text(json.dumps(result.to_dict()))
    page = (build_privacy_page(tmp_path, tmp_path / "page") / "index.html").read_text()
    assert "Assumption audits" in page and "per-sample gradient norm ≤ C" in page
    assert SMOOTHNESS in page and "flagged" in page and "curvature canary" in page
    tex = (tmp_path / "page" / "tables" / "assumption_audits.tex").read_text()
    assert "True" in tex  # guarantee_void


@pytest.mark.parametrize("argv", [["audit", "sgd"], ["audit"], ["audit", "dp_sgd", "--runs", "2"],
                                  ["audit", "nope"]])
def test_cli_audit_refuses_bad_requests(argv: list[str], tmp_path: Any) -> None:
    from saddlebench.cli import main

    assert main([*argv, "--out", str(tmp_path)]) == 2


# -- declared smoothness: the curvature canary ---------------------------------------------------
def test_curvature_canary_reaches_its_curvature_exactly() -> None:
    base = audit_problem("prisma").oracle(get_backend(BackendSpec(name="numpy")))
    oracle = canary_oracle(base, 2.5, "curvature")
    x, x2 = oracle.x0 + 0.3, oracle.x0 - np.linspace(0.0, 1.0, oracle.d)
    idx = np.array([SLOT, 4])
    diff = oracle.per_sample_grads(x, idx)[0] - oracle.per_sample_grads(x2, idx)[0]
    np.testing.assert_allclose(diff, 2.5 * (x - x2))  # ‖Δ∇f‖ = a‖Δx‖, in every direction
    np.testing.assert_array_equal(oracle.per_sample_grads(oracle.x0, idx)[0], 0.0)
    v = np.ones(oracle.d)
    np.testing.assert_allclose(oracle.hvp(x, v, np.array([SLOT])), 2.5 * v)
    assert float(oracle.loss(x, np.array([SLOT]))) == pytest.approx(2.5 / 2 * 0.09 * oracle.d)
    with pytest.raises(ValueError, match="minimisation"):
        canary_oracle(audit_problem("dp_sgda").oracle(get_backend(BackendSpec(name="numpy"))),
                      1.0, "curvature")


def test_assumption_audits_follow_the_declared_attributes() -> None:
    """A smoothness audit wherever the ledger depends on a declared L (PriSMA without C₃),
    a bound audit wherever the algorithm assumes one; no list of names."""
    def smoothness(name: str, settings: dict[str, Any] | None = None) -> float | None:
        instance = audit_problem(name)
        alg = ALGORITHMS[name](power_params(name, instance.n, settings))
        return None if alg.minimax else declared_smoothness(alg, instance)

    declared = {name: smoothness(name, SMOOTHNESS_SETTINGS) for name in PRIVATE}
    assert {name for name, value in declared.items() if value is not None} == {"prisma"}
    assert declared["prisma"] == audit_problem("prisma").constants["L"]
    assert smoothness("prisma") is None  # with C₃ the ledger does not depend on L
    assert {name for name in PRIVATE if ALGORITHMS[name].assumes_bound} == {"noisy_sgd"}


def prisma_smoothness_audits(runs: int) -> list[AssumptionAudit]:
    instance = audit_problem("prisma")
    setup = make_audit(ALGORITHMS["prisma"](power_params("prisma", instance.n)), instance,
                       (2.0, 1e-5))
    return assumption_audits("prisma", ALGORITHMS["prisma"], instance, setup, runs,
                             alpha=1e-3, seed=7, above_bound=(3.0,))


def test_prisma_smoothness_in_regime_passes_and_a_rougher_canary_is_flagged() -> None:
    regime, rough = prisma_smoothness_audits(1500)  # 300 replayed runs a side
    assert (regime.assumption, regime.multiple, rough.multiple) == (SMOOTHNESS, 1.0, 3.0)
    assert regime.passed and not regime.violated and not regime.exact_failures
    assert regime.canary.passed and regime.canary.exact_gdp
    assert rough.violated and rough.guarantee_void is None  # PriSMA reports nothing itself
    assert rough.flagged and rough.passed  # L0 sees the momentum release exceed Δ₁
    assert any("'v' changed by" in f for f in rough.exact_failures), rough.exact_failures
    # the leak is linear in the curvature: 3× the in-regime μ̂, beyond the claim
    assert rough.canary.mu_hat == pytest.approx(3 * regime.canary.mu_hat, rel=0.3)
    assert rough.canary.mu_claimed is not None
    assert rough.canary.mu_hat > rough.canary.mu_claimed > regime.canary.mu_hat


@pytest.mark.slow
def test_prisma_smoothness_audit_at_the_default_run_count() -> None:
    """What ``saddlebench audit prisma`` runs: the rougher canary fails L1 (ε lb above the
    claim), the exact one passes with a non-trivial bound."""
    regime, rough = prisma_smoothness_audits(DEFAULT_RUNS)
    assert regime.passed and regime.canary.ratio is not None and regime.canary.ratio > 0.2
    assert not rough.canary.passed and rough.canary.eps_lower > rough.canary.eps_claimed
