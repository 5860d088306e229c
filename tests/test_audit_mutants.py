"""Issue 40 item 3: the planted bugs that passed every check before the difference canary,
the y-canary and the dispersion test, each caught with its expected message: fixed-size
batches recorded as Poisson, ada_dp_spider's O2 (difference) clip removed, the y-side clip
removed (dp_sgda, dp_rgda) and spider_sosp's tree nodes noised at half σ. The quick variants
run L0 alone in the setting it catches them in; the slow ones, the whole audit at the
default run count. (The older mutants of dp_sgd are in test_privacy_audit.py.)"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import algorithms.ada_dp_spider as ada
import algorithms.minimax as minimax
import algorithms.spider_sosp as spider_sosp
from algorithms import ALGORITHMS, PrivacyTarget
from algorithms.dp_sgd import DPSGD
from algorithms.privacy.ledger import Batch, Mechanism
from algorithms.privacy.tree import TreeSums, tree_nodes
from bench.audit import DEFAULT_RUNS, AlgorithmAudit, AuditRequest, audit_algorithm
from bench.canary import audit_params, audit_problem, exact_checks, make_audit
from problems.clipping import clip_rows_and_norms


class FixedSizeAsPoisson(DPSGD):
    """Samples exactly B records but records Poisson(B/n) (ε 6.07 spent against 2)."""

    def sample(self, mech: Mechanism, n: int) -> Batch:
        batch = super().sample(mech, n)
        batch.indices = np.sort(mech.sampler.choice(n, self.params.batch_size, replace=False))
        return batch


def y_unclipped_release_pair(mech: Mechanism, xp: Any, gx: Any, gy: Any, *, bound: float,
                             batch: Batch, sigma: float, tag: str, norms: Any = None,
                             scale: float = 1.0) -> tuple[Any, Any]:
    """:func:`algorithms.minimax.release_pair` with the y-partials' clip removed (their
    declared sensitivity kept)."""
    sensitivity = 2.0 * bound / len(batch)
    mean_x = xp.mean(clip_rows_and_norms(xp, gx, bound)[0], axis=0)
    return (mech.gaussian(mean_x, sensitivity=sensitivity, sigma=sigma, tag=f"{tag}_x",
                          batch=batch),
            mech.gaussian(xp.mean(gy, axis=0), sensitivity=sensitivity, sigma=sigma,
                          tag=f"{tag}_y", batch=batch))


def o2_unclipped(clipped: Callable[..., Any]) -> Callable[..., Any]:
    """ada_dp_spider's client means with the difference (O2) clip removed."""
    def means(oracle: Any, batches: Any, x: Any, x_prev: Any, clip: float, *rest: Any,
              **kw: Any) -> Any:
        return clipped(oracle, batches, x, x_prev, clip if x_prev is None else math.inf,
                       *rest, **kw)

    return means


class HalfSigmaTree(TreeSums):
    """Tree nodes drawn at σ/2, declared (and accounted) at σ."""

    def noise(self, t: int, like: Any) -> Any:
        total = None
        for node in tree_nodes(t):
            if node not in self._noise:
                self._noise[node] = self.sigma / 2 * self.mech.noise.normal(tuple(like.shape))
                self._attach(node)
            total = self._noise[node] if total is None else total + self._noise[node]
        self._evict(t)
        return total


#: mutant → (algorithm, the patch it needs (module, name, value) or None, the algorithm class
#: override or None, the L0 report that catches it, the expected message)
MUTANTS: dict[str, tuple[str, tuple[Any, str, Any] | None, type | None, str, str]] = {
    "fixed_size_as_poisson": ("dp_sgd", None, FixedSizeAsPoisson, "dirac",
                              "Poisson batch sizes disperse"),
    "o2_clip_removed": ("ada_dp_spider", (ada, "clipped_client_means",
                                          o2_unclipped(ada.clipped_client_means)), None,
                        "difference", "release 'O2' changed by"),
    "y_clip_removed_dp_sgda": ("dp_sgda", (minimax, "release_pair", y_unclipped_release_pair),
                               None, "dirac", "release 'grad_y' changed by"),
    "y_clip_removed_dp_rgda": ("dp_rgda", (minimax, "release_pair", y_unclipped_release_pair),
                               None, "difference", "_y' changed by"),
    "tree_node_half_sigma": ("spider_sosp", (spider_sosp, "TreeSums", HalfSigmaTree), None,
                             "dirac", "noise std"),
}


def planted(mutant: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """Plant ``mutant``: (the algorithm's name, the class to audit)."""
    name, patch, cls, _, _ = MUTANTS[mutant]
    if patch is not None:
        monkeypatch.setattr(*patch)
    return name, cls or ALGORITHMS[name]


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_caught_by_the_exact_checks(mutant: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    name, cls = planted(mutant, monkeypatch)
    _, _, _, canary, message = MUTANTS[mutant]
    setup = make_audit(cls(audit_params(name)), audit_problem(name),
                       PrivacyTarget(epsilon=2.0, delta=1e-5), canary=canary)
    report = exact_checks(setup, runs=20)
    assert any(message in f for f in report.failures), report.failures


@pytest.mark.parametrize("name", ["dp_sgd", "dp_sgda", "dp_rgda", "ada_dp_spider"])
def test_the_correct_algorithms_pass_the_same_checks(name: str) -> None:
    for canary in ("dirac", "difference"):
        setup = make_audit(ALGORITHMS[name](audit_params(name)), audit_problem(name),
                           PrivacyTarget(epsilon=2.0, delta=1e-5), canary=canary)
        report = exact_checks(setup, runs=20)
        assert report.passed, (canary, report.failures)


def failures(result: AlgorithmAudit) -> list[str]:
    return [f for r in (result.exact, result.exact_l1, result.exact_difference)
            if r is not None for f in r.failures]


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_fails_the_audit_at_the_default_run_count(mutant: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """What ``saddlebench audit`` runs by default catches every planted bug (L0 here)."""
    name, cls = planted(mutant, monkeypatch)
    result = audit_algorithm(name, runs=DEFAULT_RUNS, algorithm=cls, training=False)
    assert not result.passed
    assert any(MUTANTS[mutant][-1] in f for f in failures(result)), failures(result)
    if mutant == "fixed_size_as_poisson":  # L1 too, with the true add/remove pair
        assert result.canary_removal is not None and not result.canary_removal.passed


@pytest.mark.parametrize("cls", [FixedSizeAsPoisson, DPSGD])
def test_the_true_add_remove_pair_catches_fixed_batches_recorded_as_poisson(cls: type) -> None:
    """L1 with the slot removed (n − 1 records) and an anti-canary background, as the default
    audit runs it (3,000 runs a side in the subsampled setting): a fixed-size batch shows 2a
    where the claim allows a, so the threshold rule sees more than the claimed curve; the
    correct Poisson DP-SGD passes the same test. (The zero-record pair of L0 and the other
    L1s cannot see it: there the canary and the zero record each take a batch place.)"""
    result = AuditRequest("dp_sgd", runs=DEFAULT_RUNS, algorithm=cls).part("removal")[0]
    assert result is not None and result.exact_gdp is False
    assert result.runs // 2 == 3000
    assert result.passed is (cls is DPSGD), result
    if cls is FixedSizeAsPoisson:
        assert result.tpr_lb > result.tpr_max and result.eps_lb > 0
