"""The one-run audit (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1)
training run"): m canaries, each in the data set with probability 1/2, and a single run.

Every canary is a Dirac gradient canary on a coordinate of its own (:class:`~bench.canary.
CanaryOracle` with m slots): a present canary's record has loss a·x_{d+i} (add/remove; an
absent one is the zero record), or ±a at random (replace-one claims). After the run the
auditor scores canary i by −x_{d+i} of the output (the update moves against a present
canary's gradient), guesses "present" for the k highest scores and "absent" for the k
lowest, and counts its correct guesses v of r = 2k. Under (ε, δ)-DP (Theorem 3.1 / the
paper's Algorithm 2)

    P[v' ≥ v] ≤ P[Bin(r, e^ε/(1 + e^ε)) ≥ v] + 2mδ · max_{i ≥ 1} P[v > Bin(r, ·) ≥ v − i]/i,

so the largest ε whose p-value is below 1 − confidence is a lower bound. k runs over
:data:`GUESS_FRACTIONS` of m with the confidence split among them (Bonferroni). One run
makes this cheap, but it audits all m canaries at once, so its bound is looser than the
white-box audit's (the paper: tight only as ε grows, or with many more canaries).

Because it costs one run, it also audits real training (:func:`training_one_run`,
:data:`TRAINING`: dp_sgd on the digits MLP, torch): the canaries are Dirac gradients on
distinct coordinates of the model's own parameters (the paper's white-box gradient
canaries), appended to the data as m extra records, and canary i scores −(x_T − x_0) on its
coordinate (the model's own gradients there are noise to the auditor).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from algorithms import ALGORITHMS, Algorithm, Trace
from algorithms.privacy.ledger import Mechanism
from bench.canary import (
    AuditSetup,
    ModelCanaryOracle,
    audit_problem,
    calibrated_plan,
    default_strength,
    make_audit,
    power_params,
    world,
)
from problems import PROBLEMS
from problems.backend import BackendSpec, get_backend, unavailable
from problems.base import DataSize

CANARIES = 1000
#: k = fraction·m/2 guesses on each side
GUESS_FRACTIONS = (0.1, 0.2, 0.5, 1.0)
CONFIDENCE = 0.95  # the paper's


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[at least v of r guesses correct] for an (ε, δ)-DP algorithm with m canaries."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    q = 1 / (1 + math.exp(-epsilon))  # the accuracy of ε-DP randomised response
    beta = float(stats.binom.sf(v - 1, r, q))
    below = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, q))  # P[v > Bin ≥ v − i]
    alpha = float(np.max(below / np.arange(1, v + 1))) if v > 0 else 0.0
    return min(1.0, beta + 2 * m * delta * alpha)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, confidence: float) -> float:
    """The largest ε (to 1e-4) whose p-value stays below 1 − ``confidence`` (0 if none)."""
    level = 1 - confidence
    if p_value(m, r, v, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, r, v, high, delta) < level:
        low, high = high, 2 * high
    while high - low > 1e-4:
        mid = (low + high) / 2
        low, high = (mid, high) if p_value(m, r, v, mid, delta) < level else (low, mid)
    return low


@dataclass(frozen=True)
class OneRunAudit:
    """The guessing game's outcome at its best k, on ``problem``."""

    canaries: int
    guesses: int
    correct: int
    eps_lb: float
    confidence: float
    eps_claimed: float | None
    problem: str = ""

    @property
    def ratio(self) -> float | None:
        return self.eps_lb / self.eps_claimed if self.eps_claimed else None

    @property
    def passed(self) -> bool:
        return self.eps_claimed is None or self.eps_lb <= self.eps_claimed

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "passed": self.passed}


def guessing_game(scores: np.ndarray, present: np.ndarray, delta: float,
                  confidence: float = CONFIDENCE) -> tuple[int, int, float]:
    """(r, v, ε_lb) of the best k: guess the k highest scores present, the k lowest absent."""
    m, order = len(scores), np.argsort(-scores)
    level = 1 - (1 - confidence) / len(GUESS_FRACTIONS)
    best = (0, 0, 0.0)
    for fraction in GUESS_FRACTIONS:
        k = max(1, int(fraction * m / 2))
        correct = int(present[order[:k]].sum() + (~present[order[-k:]]).sum())
        eps = epsilon_lower_bound(m, 2 * k, correct, delta, level)
        if eps > best[2] or best[0] == 0:
            best = (2 * k, correct, eps)
    return best


def one_run(setup: AuditSetup, canaries: int, seed: int, confidence: float) -> OneRunAudit:
    """Draw which canaries are present, run once, play the guessing game."""
    rng = np.random.default_rng(seed)
    present = rng.random(canaries) < 0.5
    absent = -1.0 if setup.world == "replace" else 0.0
    values = setup.strength * np.where(present, 1.0, absent)
    _, _, out = setup.run(values, seed)
    scores = -np.asarray(out)[setup.base.d: setup.base.d + canaries]
    r, v, eps = guessing_game(scores, present, setup.plan.target.delta, confidence)
    return OneRunAudit(canaries, r, v, eps, confidence, setup.plan.eps.headline,
                       setup.instance.name)


def one_run_audit(name: str, *, canaries: int = CANARIES, epsilon: float = 2.0,
                  delta: float = 1e-5, seed: int = 0, confidence: float = CONFIDENCE,
                  algorithm: Callable[[Any], Algorithm] | None = None) -> OneRunAudit:
    """Algorithm ``name`` (or ``algorithm``, e.g. a mutant) in the power setting on 2m
    records, calibrated for (``epsilon``, ``delta``), audited with one run."""
    make = algorithm if algorithm is not None else ALGORITHMS.lookup(name)
    instance = audit_problem(name, n=2 * canaries)
    alg = make(power_params(name, instance.n))
    setup = make_audit(alg, instance, (epsilon, delta), canaries=canaries)
    return one_run(setup, canaries, seed, confidence)


#: real training the one-run audit also runs: algorithm → (problem, its params, the
#: algorithm's params, backend); dp_sgd on the digits MLP at the quick suites' settings
TRAINING: dict[str, tuple[str, dict[str, Any], dict[str, Any], BackendSpec]] = {
    "dp_sgd": ("digits_mlp", {}, {"lr": 0.1, "steps": 300, "batch_size": 64, "clip": 1.0},
               BackendSpec(name="torch", dtype="float32")),
}


def training_one_run(name: str, *, canaries: int = CANARIES, epsilon: float = 2.0,
                     delta: float = 1e-5, seed: int = 0, confidence: float = CONFIDENCE,
                     algorithm: Callable[[Any], Algorithm] | None = None,
                     **overrides: Any) -> OneRunAudit | None:
    """One run of real training (:data:`TRAINING`; None where ``name`` has none, or its
    backend is not installed here): m Dirac
    canaries on distinct coordinates of the model's own parameters, appended to the data,
    each present with probability ½ (:class:`~bench.canary.ModelCanaryOracle`), σ calibrated
    for (``epsilon``, ``delta``) on the n + m records; canary i scores −(x_T − x_0) on its
    coordinate. ``overrides``: algorithm parameters (e.g. fewer steps in tests)."""
    if name not in TRAINING:
        return None
    problem, problem_params, params, spec = TRAINING[name]
    if unavailable(spec.name, spec.device) is not None:
        return None
    alg = (algorithm if algorithm is not None else ALGORITHMS.lookup(name))(
        ALGORITHMS.lookup(name).Params(**{**params, **overrides}))
    cls = PROBLEMS[problem]
    instance = cls(cls.Params(**problem_params)).build(seed)
    n = instance.n + canaries
    plan = calibrated_plan(alg, DataSize(n=n, d=instance.d, constants=instance.constants,
                                         clients=[np.arange(n)]), epsilon, delta)
    rng = np.random.default_rng(seed)
    present = rng.random(canaries) < 0.5
    absent = -1.0 if world(plan) == "replace" else 0.0
    values = default_strength(alg, plan) * np.where(present, 1.0, absent)
    backend = get_backend(spec)
    oracle = ModelCanaryOracle(instance.oracle(backend), values,
                               rng.choice(instance.d, canaries, replace=False))
    noise, sampling = np.random.SeedSequence(seed).spawn(2)
    mech = Mechanism(backend.noise_source(int(noise.generate_state(1)[0])),
                     np.random.default_rng(sampling))
    trace = Trace()
    for _ in alg.run(oracle, plan, mech, trace):
        pass
    moved = backend.to_numpy(trace.point()) - backend.to_numpy(oracle.x0)
    r, v, eps = guessing_game(-moved[oracle.coords], present, delta, confidence)
    return OneRunAudit(canaries, r, v, eps, confidence, plan.eps.headline, problem)
