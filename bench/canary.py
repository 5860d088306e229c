"""The white-box canary harness of the privacy audit (issue 8; anchors dp_tooling.md §6.4).

**The canary.** :class:`CanaryOracle` wraps a numpy problem's oracle and appends one
coordinate k that no record touches, except record ``SLOT``: its loss is a·x_k, so its
gradient is exactly a·e_k (the Dirac gradient canary of Nasr et al. 2021/2023). Two data
sets differ in the slot alone: the canary (+a) against a zero record (add/remove: the zero
record releases nothing) or against the anti-canary (−a, replace-one; used when no round is
Poisson-sampled, since the suite declares replace-one sensitivities for every other
scheme). Those pairs keep n, so that L0 can replay a run on the neighbour; L1 also runs the
*true add/remove pair* where the claim is add/remove (:func:`removal_oracle`, world
"remove"): the slot removed (n − 1 records) against the canary, every other record an
anti-canary, so that a fixed-size batch (the canary displaces an anti-canary: 2a) differs
from a Poisson one (a). ``a`` is far above any clip (``ADVERSARIAL_NORM``), or the assumed
bound of an algorithm that does not clip (``Algorithm.assumes_bound``, e.g. noisy_sgd). On a
minimax problem the slot also has a y-coordinate of its own (:class:`CanaryMinimaxOracle`, the
*y-canary*): F = a·(x_k + y_j) reaches the y-partials' releases too. A linear canary's
gradient *difference* is 0, so releases of differences (SPIDER's O2, dp_rgda's increments,
PriSMA's momentum corrections) are reached by the *difference canary*
(:class:`DifferenceCanaryOracle`: the Dirac canary plus a/2·‖x − x₀‖², whose gradient
difference between two points is a‖x − x′‖).

**Recording.** :class:`AuditMechanism` overrides :meth:`Mechanism.emit`, the exit of every
noisy data-dependent output (Gaussian releases, tree prefix sums, escape directions,
AboveThreshold), and its ledger keeps every batch drawn.

**L0, exact** (:func:`exact_checks`). A run on the canary data set is recorded; the same
seeds then *replay* its transcript on the neighbouring set: every release returns the
recorded output, so the algorithm's state follows the same path, and

* the noise-free value of every release may change by at most its declared sensitivity
  in the batches that hold the slot (and not at all elsewhere): the sensitivity test under
  adaptive composition;
* the iterates, the output and the batches must be bitwise identical: everything the
  algorithm does with data passes through a recorded release (an unrecorded use shows);
* the recorded noise, divided by its declared std, has mean 0 and std 1;
* the realised ledger spends at most the ε the plan claims (PLD), PLD ≤ RDP, PLD ≈ exact
  GDP where it applies; realised Poisson batch sizes match q (binomial z-test) and disperse
  as binomials (χ² over every batch of every run: fixed-size batches recorded as Poisson
  fail it), fixed batches have their size, disjoint batches never repeat a record within a
  pass.

L0 also learns each release tag's canary direction (the normalised change of its value),
which the score uses, how fully the canary reaches each tag, and the μ of a run's
transcript between the neighbours (``mu_reached``: the leakage this canary can show).

**L1, statistical** (:func:`canary_observations`, then :func:`bench.audit.audit`). Thousands
of runs on each data set, each observed white-box (Nasr et al. 2023): every release and
every iterate. A run's observation is (i) the claimed-parameter log-likelihood ratio of its
releases projected on their tag's canary direction, summed over releases: Σ (Δm − Δ²/2)/s²
for a release of std s and sensitivity Δ, log(1 − q + q·e^{(Δm − Δ²/2)/s²}) for a Poisson
round of rate q; (ii) the canary coordinate of every iterate and of the output (what the
algorithm lets out, so a release that bypasses the mechanism shows there). The statistics
are in :mod:`bench.audit`. The audit's power comes from its *setting*
(:data:`POWER_SETTINGS`): full batches (q = 1, where the optimal statistic is Gaussian and
the GDP fit exact) and few steps.

**Assumptions** (:func:`make_audit`'s ``strength``, ``canary``). An algorithm that does
not clip (``assumes_bound``) is audited in regime with a canary of norm exactly C, and also
with a canary above C (a violated assumption: L1 then measures what a run that meets such a
record really leaks, and the algorithm's own ``guarantee_void`` diagnostic must say so). An
algorithm whose privacy rests on a declared smoothness L (:func:`declared_smoothness`) is
audited with the *curvature canary* (:class:`CurvatureCanaryOracle`: loss a/2·‖x − x₀‖², so
‖∇f(x) − ∇f(x′)‖ = a‖x − x′‖ exactly) at a = L (the bound reached) and a = 3L (rougher than
declared: L0 must see a release move beyond its declared sensitivity). Its releases move in
a direction of their own each run, so L1 scores it by the exact LLR of a run and its replay
(:func:`replay_observation`).

**Real training** (:class:`ModelCanaryOracle`): the one-run audit also inserts Dirac
canaries into a real model's own coordinates (any backend), as extra records.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from scipy import stats

from algorithms import ALGORITHMS, Algorithm, Plan, PrivacyTarget, Trace
from algorithms.privacy.accounting import Epsilons, epsilons
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Sampling
from problems import PROBLEMS, Instance
from problems.backend import Backend, BackendSpec, get_backend
from problems.base import DataSize
from problems.minimax import MinimaxOracle
from problems.oracles import Oracle

SLOT = 0
ADVERSARIAL_NORM = 1e3
#: small problems the audit runs on by default (minimax algorithms need a minimax problem)
AUDIT_PROBLEMS: dict[bool, tuple[str, dict[str, Any]]] = {
    False: ("strict_saddle", {"d": 5, "n": 64}),
    True: ("ncsc_double_well", {"d": 3, "d_y": 4, "n": 60}),
}
#: short runs with small batches: the audit needs thousands of them
AUDIT_SETTINGS: dict[str, Any] = {"steps": 8, "batch_size": 16, "lr": 0.05,
                                  "batch_refresh": 16, "batch_diff": 8}
#: L1's default setting, chosen for power (Nasr et al. 2023): the batch parameters of
#: :data:`FULL_BATCH` set to n (q = 1: nothing is subsampled, so the composed mechanism is
#: exactly GDP and its optimal statistic Gaussian) and few steps (cheap runs); one inner
#: step (dp_rgda: later inner increments difference the partials at one x, so no record's
#: x-part moves there, and the claim's μ would be spent on nothing)
POWER_SETTINGS: dict[str, Any] = {**AUDIT_SETTINGS, "steps": 4, "inner_steps": 1}
FULL_BATCH = ("batch_size", "batch_refresh", "batch_diff")
#: the smoothness audit's setting (with :data:`POWER_SETTINGS`): without C₃ PriSMA's
#: momentum correction has sensitivity LηC₂ (huang2025 Algorithm 1). η and C₂ make the
#: server clip bind (steps of ηC₂, where a canary of curvature L reaches LηC₂), a small γ
#: puts most of the sensitivity 2(γC₁ + (1 − γ)LηC₂)/b on that term, and C₁ keeps a canary
#: of curvature 3L unclipped over the audited steps (3L·3ηC₂ ≤ C₁ on the default problem)
SMOOTHNESS_SETTINGS: dict[str, Any] = {"clip3": None, "gamma": 0.05, "clip1": 0.7,
                                       "lr": 1.0, "clip2": 0.05}
#: default-problem sizes for algorithms whose batches follow from ε (Alg 3-R's b ≈ 400 at
#: ε = 2: a single pass needs a few thousand records)
AUDIT_DATA: dict[str, dict[str, Any]] = {"spider_sosp": {"n": 2000}}
#: the default minimisation problem with no gradient or curvature of its own (no noise
#: terms, λ = μ = 1e-6: ∇F = 0 exactly, ∇²F ≈ 0). A Dirac canary moves a query of the whole
#: data's gradient norm only at second order over a background with a gradient (the two are
#: orthogonal), at first order here: where it may not exceed an assumed bound C (noisy_sgd's
#: §3.4 selection), this is the only way to reach that query. C is then given (this
#: problem's own G is 1.4e-6): :data:`FLAT_BOUND`
FLAT_PARAMS: dict[str, Any] = {"lam": 1e-6, "mu": 1e-6, "sigma1": 0.0, "sigma2": 0.0}
FLAT_BOUND = 1.0
TOLERANCE = 1e-6
#: what the slots hold: one value (slot SLOT), or one per slot 0..m−1
CanaryValues = float | Sequence[float] | np.ndarray


# -- the canary data set ------------------------------------------------------------------
def _width(coords: np.ndarray) -> int:
    """How many canary coordinates the slots' ``coords`` need."""
    return int(np.max(coords)) + 1 if np.size(coords) else 0


class CanaryOracle(Oracle):
    """``base`` in the first d coordinates plus one canary coordinate per slot: record i <
    m (m = len(``values``), one value for the audit's single SLOT) has loss
    ``values[i]``·x_{d+i} alone (numpy backend). Many slots serve the one-run audit."""

    def __init__(self, base: Oracle, values: CanaryValues, coords: np.ndarray | None = None,
                 clients: Sequence[np.ndarray] | None = None, **kw: Any) -> None:
        if base.backend.name != "numpy":
            raise ValueError("the canary audit runs on the numpy backend")
        self.values = np.atleast_1d(np.asarray(values, dtype=float))
        self.coords = np.arange(len(self.values)) if coords is None else np.asarray(coords)
        width = _width(self.coords)
        super().__init__(base.backend, n=base.n if clients is None else sum(map(len, clients)),
                         d=base.d + width,
                         x0=np.append(np.asarray(base.x0, dtype=float), np.zeros(width)),
                         clients=base.clients if clients is None else clients, **kw)
        self.base = base

    #: the slot's loss: LINEAR·a·x_k + CURVED·a/2·‖x − x₀‖² (a Dirac canary is linear)
    LINEAR, CURVED = 1.0, 0.0

    # the slots' own records: their gradients written into rows ``at`` of ``out`` (zeros)
    def _put_canary_rows(self, out: np.ndarray, at: np.ndarray, x: np.ndarray,
                         slots: np.ndarray) -> None:
        out[at] = self.CURVED * self.values[slots, None] * (np.asarray(x) - self.x0)[None, :]
        out[at, self.base.d + self.coords[slots]] += self.LINEAR * self.values[slots]

    def _canary_loss(self, x: np.ndarray, slots: np.ndarray) -> float:
        x = np.asarray(x)
        return float(self.LINEAR * np.dot(self.values[slots],
                                          x[self.base.d + self.coords[slots]])
                     + self.CURVED * self.values[slots].sum() * np.sum((x - self.x0) ** 2) / 2)

    def _canary_hvp(self, v: np.ndarray, slots: np.ndarray) -> np.ndarray:
        return self.CURVED * self.values[slots].sum() * np.array(v, dtype=float)

    def _slots(self, idx: np.ndarray) -> np.ndarray:
        return np.asarray(idx) < len(self.values)

    def _rows(self, x: np.ndarray, rows: np.ndarray, idx: np.ndarray,
              at: np.ndarray) -> np.ndarray:
        """The base records' ``rows`` with the canary coordinates appended, the rows ``at``
        (the slots among ``idx``) replaced by the canary's."""
        out = np.zeros((len(idx), self.d))
        out[:, : self.base.d] = rows
        if at.size:
            out[at, : self.base.d] = 0.0
            self._put_canary_rows(out, at, x, idx[at])
        return out

    def per_sample_grads(self, x: Any, idx: np.ndarray) -> Any:
        idx = np.asarray(idx)
        return self._rows(x, self.base.per_sample_grads(x[: self.base.d], idx), idx,
                          np.flatnonzero(self._slots(idx)))

    def _split(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the slots among ``idx``, its other records)."""
        idx = np.asarray(idx)
        slots = self._slots(idx)
        return idx[slots], idx[~slots]

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        slots, others = self._split(idx)
        base = self.base._loss_sum(x[: self.base.d], others) if len(others) else 0.0
        return base + self._canary_loss(x, slots)

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        return self.per_sample_grads(x, idx).sum(axis=0)

    def _hvp_sum(self, x: Any, v: Any, idx: np.ndarray) -> Any:
        return self._hvp_sums(x, [v], idx)[0]

    def _hvp_sums(self, x: Any, vectors: Sequence[Any], idx: np.ndarray) -> Any:
        """The base's share of every vector computed together (:meth:`Oracle.hvps`)."""
        slots, others = self._split(idx)
        out = np.stack([self._canary_hvp(np.asarray(v), slots) for v in vectors])
        if len(others):
            d = self.base.d
            out[:, :d] += self.base._hvp_sums(x[:d], [v[:d] for v in vectors], others)
        return out


class CurvatureCanaryOracle(CanaryOracle):
    """The curvature canary (smoothness audits): record i < m has loss
    ``values[i]``/2·‖x − x₀‖² over every coordinate, so its gradient difference between
    any two points is exactly ``values[i]``·(x − x′): a per-sample smoothness of
    |``values[i]``|, reached everywhere. Its gradient at x₀ is 0."""

    LINEAR, CURVED = 0.0, 1.0


class DifferenceCanaryOracle(CanaryOracle):
    """The difference canary: the Dirac and the curvature canary in one record, loss
    a·x_k + a/2·‖x − x₀‖². Its gradient is never small (a Dirac part of norm a) and its
    gradient difference between two points is a·(x − x′): at a far above every clip it
    reaches the declared sensitivity of gradient releases *and* of gradient-difference
    releases (SPIDER's O2, PriSMA's momentum corrections), where a linear canary's
    difference is 0. Its releases move in a direction of their own each run (scored by
    :func:`replay_observation`)."""

    LINEAR, CURVED = 1.0, 1.0


class CanaryMinimaxOracle(CanaryOracle, MinimaxOracle):
    """The canary on a minimax problem, on both sides: a slot's F is ``value``·(x_k + y_j),
    on a coordinate of its own in x and in y (the *y-canary*), so it reaches the y-partials'
    releases as fully as the x-partials' (a release of ∇_y F that skips its clip shows).
    Π_Y leaves the canary coordinates free; the best response y*(x) is the base problem's
    (with the slots' base records) and 0 there: the same in both worlds."""

    base: MinimaxOracle

    def __init__(self, base: MinimaxOracle, values: CanaryValues,
                 coords: np.ndarray | None = None,
                 clients: Sequence[np.ndarray] | None = None) -> None:
        width = _width(np.arange(np.atleast_1d(values).size) if coords is None else coords)
        super().__init__(base, values, coords, clients, d_y=base.d_y + width,
                         y0=np.append(np.asarray(base.y0, dtype=float), np.zeros(width)))

    def per_sample_partials(self, x: Any, y: Any, idx: np.ndarray) -> tuple[Any, Any]:
        idx = np.asarray(idx)
        gx, gy = self.base.per_sample_partials(x[: self.base.d], y[: self.base.d_y], idx)
        at = np.flatnonzero(self._slots(idx))
        rows_y = np.zeros((len(idx), self.d_y))
        rows_y[:, : self.base.d_y] = gy
        if at.size:  # −a/2·‖y − y₀‖² keeps F concave in y
            values = self.values[idx[at]]
            rows_y[at] = -self.CURVED * values[:, None] * (
                np.asarray(y) - np.asarray(self.y0))[None, :]
            rows_y[at, self.base.d_y + self.coords[idx[at]]] += self.LINEAR * values
        return self._rows(x, gx, idx, at), rows_y

    def best_response(self, x: Any) -> Any:
        return np.append(self.base.best_response(x[: self.base.d]),
                         np.zeros(self.d_y - self.base.d_y))

    def project_y(self, y: Any) -> Any:
        return np.append(self.base.project_y(y[: self.base.d_y]), y[self.base.d_y:])


class DifferenceCanaryMinimaxOracle(CanaryMinimaxOracle):
    """The difference canary on a minimax problem: F = a(x_k + y_j) + a/2·‖x − x₀‖² −
    a/2·‖y − y₀‖², reaching the partials' releases and their differences' on both sides."""

    LINEAR, CURVED = 1.0, 1.0


class ModelCanaryOracle(Oracle):
    """Dirac gradient canaries in a real model (any backend; the one-run audit of real
    training, Steinke, Nasr & Jagielski 2023 §6): ``base``'s n records, then one record per
    canary, whose gradient is ``values[i]``·e_{``coords[i]``} on a coordinate of the
    model's own parameters (0: the canary is absent)."""

    def __init__(self, base: Oracle, values: np.ndarray, coords: np.ndarray) -> None:
        n = base.n + len(values)
        super().__init__(base.backend, n=n, d=base.d, x0=base.x0, clients=[np.arange(n)])
        self.base = base
        self.values = np.asarray(values, dtype=float)
        self.coords = np.asarray(coords)

    def _canaries(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the base records of ``idx``, the canary numbers of the others)."""
        idx = np.asarray(idx)
        own = idx < self.base.n
        return idx[own], idx[~own] - self.base.n

    def _canary_sum(self, canaries: np.ndarray, weights: np.ndarray) -> Any:
        dense = np.zeros(self.d)
        np.add.at(dense, self.coords[canaries], weights)
        return self.backend.asarray(dense)

    def clipped_grad_sum_and_norms(self, x: Any, idx: np.ndarray, clip: float
                                   ) -> tuple[Any, Any]:
        """The base oracle's own clipped sum (no per-sample gradients materialised where it
        avoids them) plus the canaries' clipped Dirac gradients."""
        own, canaries = self._canaries(idx)
        values = self.values[canaries]
        norms = np.abs(values)
        clipped = values * np.minimum(1.0, clip / np.maximum(norms, 1e-300))
        total, seen = self._canary_sum(canaries, clipped), self.backend.asarray(norms)
        if len(own):
            base_total, base_seen = self.base.clipped_grad_sum_and_norms(x, own, clip)
            total, seen = base_total + total, self.xp.concat([base_seen, seen])
        return total, seen

    def clipped_grad_sum(self, x: Any, idx: np.ndarray, clip: float) -> Any:
        return self.clipped_grad_sum_and_norms(x, idx, clip)[0]

    def per_sample_grads(self, x: Any, idx: np.ndarray) -> Any:
        idx = np.asarray(idx)
        own, canaries = self._canaries(idx)
        dense = np.zeros((len(canaries), self.d))
        dense[np.arange(len(canaries)), self.coords[canaries]] = self.values[canaries]
        parts = [self.base.per_sample_grads(x, own)] if len(own) else []
        rows = self.xp.concat([*parts, self.backend.asarray(dense)])
        placed = np.concatenate([np.flatnonzero(idx < self.base.n),
                                 np.flatnonzero(idx >= self.base.n)])  # row k is idx[placed[k]]
        return rows[self.backend.as_index(np.argsort(placed))]

    def _loss_sum(self, x: Any, idx: np.ndarray) -> Any:
        own, canaries = self._canaries(idx)
        coords = self.backend.as_index(self.coords[canaries])
        canary = self.xp.sum(self.backend.asarray(self.values[canaries]) * x[coords])
        return self.base._loss_sum(x, own) + canary if len(own) else canary

    def _grad_sum(self, x: Any, idx: np.ndarray) -> Any:
        own, canaries = self._canaries(idx)
        canary = self._canary_sum(canaries, self.values[canaries])
        return self.base._grad_sum(x, own) + canary if len(own) else canary

    def _hvp_sum(self, x: Any, v: Any, idx: np.ndarray) -> Any:
        own, _ = self._canaries(idx)
        return self.base._hvp_sum(x, v, own) if len(own) else self.xp.zeros_like(x)


#: the canary kinds: a Dirac gradient on a coordinate of its own (on x and y for minimax), a
#: curvature canary (smoothness audits), or both in one record (the difference canary)
CANARIES = ("dirac", "curvature", "difference")


def canary_oracle(base: Oracle, values: CanaryValues, kind: str = "dirac",
                  curved: float = 1.0, coords: np.ndarray | None = None,
                  clients: Sequence[np.ndarray] | None = None) -> CanaryOracle:
    """``base`` with the slot holding the canary (``values`` = +a), the zero record (0) or
    the anti-canary (−a); a sequence fills slots 0..m−1 (the one-run audit), each on a
    canary coordinate of its own unless ``coords`` says which (:func:`removal_oracle`: all
    on one). ``clients``: the data set's records by client (default ``base``'s: n records).
    ``kind``: one of :data:`CANARIES` (a curvature canary only on a minimisation problem);
    ``curved``: the difference canary's curvature as a multiple of a."""
    if kind not in CANARIES:
        raise ValueError(f"unknown canary {kind!r}; choose one of {CANARIES}")
    if isinstance(base, MinimaxOracle):
        if kind == "curvature":
            raise ValueError("the curvature canary is for minimisation problems")
        minimax = DifferenceCanaryMinimaxOracle if kind == "difference" else CanaryMinimaxOracle
        oracle: CanaryOracle = minimax(base, values, coords, clients)
    else:
        oracle = {"dirac": CanaryOracle, "curvature": CurvatureCanaryOracle,
                  "difference": DifferenceCanaryOracle}[kind](base, values, coords, clients)
    if kind == "difference":
        oracle.CURVED = curved
    return oracle


def removal_oracle(base: Oracle, value: float, background: float, kind: str = "dirac",
                   curved: float = 1.0) -> CanaryOracle:
    """The true add/remove pair's data sets (issue 40): every record but the slot is an
    anti-canary (−``background`` on the one canary coordinate, nothing else), the slot holds
    the canary (``value``) or, at ``value`` 0, is removed: n − 1 records, one fewer in the
    client that held it. A batch of a fixed size b then shows the removal (b anti-canaries
    against the canary and b − 1 of them: a shift of 2a where Poisson sampling shows a)."""
    keep = np.ones(base.n, dtype=bool)
    keep[SLOT] = value != 0
    values = np.where(np.arange(base.n) == SLOT, value, -background)[keep]
    renumbered = np.cumsum(keep) - 1
    clients = [renumbered[c[keep[c]]] for c in map(np.asarray, base.clients)]
    return canary_oracle(base, values, kind, curved, coords=np.zeros(len(values), dtype=int),
                         clients=clients)


def canary_data(instance: Instance, canaries: int = 1) -> DataSize:
    """What calibration sees of the canary data set: the instance with one more coordinate
    per canary."""
    return DataSize(n=instance.n, d=instance.d + canaries, constants=instance.constants,
                    clients=instance.clients)


# -- recording ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Charge:
    """One batch an emission depends on: its sensitivity there and whether it holds the
    slot (a whole-data release holds it)."""

    sensitivity: float
    holds_slot: bool
    party: int
    sampling: Sampling


@dataclass
class Emission:
    """One noisy output with what the algorithm declared about it."""

    tag: str
    output: Any
    value: np.ndarray
    noise: np.ndarray | None
    std: float
    charges: list[Charge]
    rows: bool


class ReplayDiverged(RuntimeError):
    """The replayed run asked for a different release than the recorded one."""


class AuditLedger(Ledger):
    """A ledger that also keeps every batch drawn (sampling checks)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[Batch] = []

    def open(self, batch: Batch) -> Batch:
        self.batches.append(batch)
        return super().open(batch)


def _charge(batch: Batch | None, sensitivity: float) -> Charge:
    if batch is None:
        return Charge(sensitivity, True, 0, Sampling())
    return Charge(sensitivity, bool(np.any(batch.indices == SLOT)), batch.sampling.party,
                  batch.sampling)


class AuditMechanism(Mechanism):
    """A :class:`Mechanism` that records emissions (``keep``), replays a recorded
    transcript (``replay``) and accumulates the L1 score (``directions``: tag → unit
    canary direction of its values)."""

    def __init__(self, noise: Any, sampler: np.random.Generator, *, keep: bool = True,
                 replay: list[Emission] | None = None,
                 directions: dict[str, np.ndarray] | None = None,
                 offsets: Mapping[str, float] | None = None) -> None:
        super().__init__(noise, sampler, ledger=AuditLedger())
        self.keep, self.replay, self.directions = keep, replay, directions or {}
        self.offsets = offsets or {}
        self.emissions: list[Emission] = []
        #: tag → each scored release's projection on its canary direction
        self.projections: dict[str, list[float]] = {}
        self.score = 0.0
        self._next = 0

    def emit(self, output: Any, *, tag: str, value: Any, base: Any, std: float,
             charges: Sequence[tuple[Batch | None, float]], rows: bool = False) -> Any:
        projected = (_projection(np.asarray(output), std, charges, rows, self.directions[tag])
                     if tag in self.directions else None)
        if projected is not None:
            m, batch, delta = projected
            self.projections.setdefault(tag, []).append(m)
            self.score += _llr(m - self.offsets.get(tag, 0.0), std, batch, delta)
        if self.keep:
            noise = None
            if std > 0:
                noise = np.asarray(output) - np.asarray(value) - (
                    0.0 if base is None else np.asarray(base))
            self.emissions.append(Emission(tag, _copy(output), np.array(value, dtype=float),
                                           noise, std, [_charge(b, s) for b, s in charges],
                                           rows))
        if self.replay is None:
            return output
        if self._next >= len(self.replay) or self.replay[self._next].tag != tag:
            expected = (self.replay[self._next].tag if self._next < len(self.replay)
                        else "the end of the run")
            raise ReplayDiverged(f"release {self._next} is {tag!r} on the neighbouring data "
                                 f"set but {expected!r} in the recorded run")
        recorded = self.replay[self._next].output
        self._next += 1
        return _copy(recorded)

    @property
    def batches(self) -> list[Batch]:
        ledger = self.ledger
        assert isinstance(ledger, AuditLedger)
        return ledger.batches


def _copy(output: Any) -> Any:
    return output.copy() if isinstance(output, np.ndarray) else output


def _projection(output: np.ndarray, std: float,
                charges: Sequence[tuple[Batch | None, float]], rows: bool,
                direction: np.ndarray) -> tuple[float, Batch | None, float] | None:
    """(one emission's projection on the canary direction, its batch, its sensitivity):
    party 0's row or charge, a whole-data release being party 0's; None for a pure release
    or one of other parties alone."""
    if std <= 0:
        return None
    mine = [(i, b, s) for i, (b, s) in enumerate(charges) if b is None or b.sampling.party == 0]
    if not mine:
        return None
    i, batch, delta = max(mine, key=lambda ibs: ibs[2])
    values = output[i] if rows else output
    return float(np.dot(np.ravel(values), direction)), batch, delta


def _llr(m: float, std: float, batch: Batch | None, delta: float) -> float:
    """The claimed-parameter LLR of a release whose projection on the canary direction is
    ``m`` (centred on the world without the canary): Gaussian, or Poisson's mixture."""
    shift = (delta * m - delta * delta / 2.0) / (std * std)
    sampling = batch.sampling if batch is not None else None
    if sampling is not None and sampling.scheme == "poisson" and sampling.rate < 1.0:
        q = sampling.rate
        return float(np.logaddexp(math.log1p(-q), math.log(q) + shift))
    return shift


# -- building one audit --------------------------------------------------------------------
@dataclass
class AuditSetup:
    """An algorithm planned on the canary data set of a problem instance."""

    algorithm: Algorithm
    plan: Plan
    instance: Instance
    base: Oracle
    backend: Backend
    #: the canary's size: its gradient norm (Dirac) or its curvature (curvature canary)
    strength: float
    #: the neighbouring data sets (:data:`WORLDS`)
    world: str
    canary: str = "dirac"  # one of CANARIES
    #: the difference canary's curvature (default: its ``strength``)
    curvature: float | None = None
    #: the latest run's trace (its :attr:`diagnostics` are read on demand)
    trace: Trace | None = field(default=None, repr=False)

    @property
    def diagnostics(self) -> dict[str, Any]:
        """The latest run's ``Algorithm.diagnostics()`` (e.g. noisy_sgd's
        ``guarantee_void``)."""
        return {} if self.trace is None else self.algorithm.diagnostics(self.trace)

    @property
    def values(self) -> tuple[float, float]:
        """The slot's value with and without the canary (0: the zero record, or in the
        "remove" world no record)."""
        return self.strength, (-self.strength if self.world == "replace" else 0.0)

    def data(self, value: float | np.ndarray) -> CanaryOracle:
        """The data set whose slot holds ``value`` (slots 0..m−1 the m values of an array),
        in this setup's :attr:`world`."""
        curved = 1.0 if self.curvature is None else self.curvature / self.strength
        if self.world == "remove" and np.ndim(value) == 0:
            return removal_oracle(self.base, float(value), self.strength, self.canary, curved)
        return canary_oracle(self.base, value, self.canary, curved=curved)

    def run(self, value: float | np.ndarray, seed: int, **mech_kw: Any
            ) -> tuple[AuditMechanism, list[np.ndarray], Any]:
        """One run on the data set whose slot holds ``value`` (slots 0..m−1 the m values of
        an array): (mechanism, iterates, output)."""
        algorithm = self.algorithm  # stateless: everything of a run is in its trace
        noise, sampling = np.random.SeedSequence(seed).spawn(2)
        mech = AuditMechanism(self.backend.noise_source(int(noise.generate_state(1)[0])),
                              np.random.default_rng(sampling), **mech_kw)
        trace = self.trace = Trace()
        xs = [np.array(s.x, dtype=float)
              for s in algorithm.run(self.data(value), self.plan, mech, trace)]
        return mech, xs, np.array(trace.point(), dtype=float)


def audit_params(name: str, **overrides: Any) -> Any:
    """Algorithm ``name``'s parameters for audits: short runs, small batches."""
    return ALGORITHMS.lookup(name).small_params(AUDIT_SETTINGS, **overrides)


def power_params(name: str, n: int, settings: Mapping[str, Any] | None = None,
                 **overrides: Any) -> Any:
    """Algorithm ``name``'s parameters for L1 on ``n`` records: :data:`POWER_SETTINGS`, then
    the entries of ``settings`` it has fields for (e.g. :data:`SMOOTHNESS_SETTINGS`)."""
    full = {key: n for key in FULL_BATCH}
    return ALGORITHMS.lookup(name).small_params({**POWER_SETTINGS, **full, **(settings or {})},
                                         **overrides)


def declared_smoothness(algorithm: Algorithm, instance: Instance) -> float | None:
    """The per-sample smoothness L that ``algorithm``'s privacy rests on: its ``smoothness``
    parameter, else the problem's L, where its planned ledger changes with that value (a
    sensitivity derived from L, e.g. PriSMA's LηC₂ without C₃); None where it declares none
    or its privacy does not depend on it."""
    params = algorithm.params
    if "smoothness" not in {f.name for f in fields(params)}:
        return None
    declared = params.smoothness if params.smoothness is not None else (
        instance.constants.get("L"))
    if declared is None:
        return None

    def ledger(smoothness: float) -> list[dict[str, Any]] | None:
        planned = type(algorithm)(dataclasses.replace(params, smoothness=smoothness))
        try:
            return planned.planned_ledger(canary_data(instance), 1.0).to_json()
        except (NotImplementedError, ValueError):
            return None

    at_l = ledger(float(declared))
    return float(declared) if at_l is not None and at_l != ledger(2 * float(declared)) else None


def audit_problem(name: str, problem: str | None = None, **params: Any) -> Instance:
    """The instance an audit of algorithm ``name`` runs on (default: ``AUDIT_PROBLEMS``)."""
    default, default_params = AUDIT_PROBLEMS[ALGORITHMS.lookup(name).minimax]
    chosen = problem or default
    if chosen == default:
        params = {**default_params, **AUDIT_DATA.get(name, {}), **params}
    cls = PROBLEMS[chosen]
    return cls(cls.Params(**params)).build(0)


def calibrated_plan(algorithm: Algorithm, data: DataSize, epsilon: float,
                    delta: float) -> Plan:
    """``algorithm``'s plan with σ calibrated for (ε, δ) by PLD (RDP where PLD has no
    event)."""
    try:
        return algorithm.plan(data, PrivacyTarget(epsilon=epsilon, delta=delta,
                                                  calibration="pld"))
    except ValueError as exc:
        if "no event" not in str(exc):
            raise
    return algorithm.plan(data, PrivacyTarget(epsilon=epsilon, delta=delta,
                                              calibration="rdp"))


def make_audit(algorithm: Algorithm, instance: Instance,
               target: PrivacyTarget | tuple[float, float], strength: float | None = None,
               canaries: int = 1, canary: str = "dirac") -> AuditSetup:
    """Plan ``algorithm`` on ``instance``'s canary data set (``canaries`` canary slots) for
    ``target`` (or (ε, δ): :func:`calibrated_plan`); the canary (``canary``, one of
    :data:`CANARIES`) has size ``strength``, else the assumed bound C of an algorithm that
    does not clip, else :data:`ADVERSARIAL_NORM`. A difference canary is as curved as it is
    large, except where the algorithm ``needs`` the problem's smoothness L (its sensitivities
    rest on per-sample bounds it does not enforce, e.g. spider_sosp's Hessian): curvature L
    there (rougher is the assumption audits' business)."""
    if not algorithm.private:
        raise ValueError(f"{algorithm.name} is not private: there is nothing to audit")
    missing = [k for k in algorithm.needs if k not in instance.constants]
    if missing:
        raise ValueError(f"{algorithm.name} needs the constants {missing}, which "
                         f"{instance.name} lacks; pick a problem that declares them")
    if algorithm.minimax and not PROBLEMS[instance.name].minimax:
        raise ValueError(f"{algorithm.name} is a minimax algorithm; audit it on a minimax "
                         "problem (e.g. ncsc_double_well)")
    backend = get_backend(BackendSpec(name="numpy"))
    data = canary_data(instance, canaries)
    plan = (algorithm.plan(data, target) if isinstance(target, PrivacyTarget)
            else calibrated_plan(algorithm, data, *target))
    if strength is None:
        strength = default_strength(algorithm, plan)
    curvature = (float(instance.constants["L"])
                 if canary == "difference" and "L" in algorithm.needs else None)
    return AuditSetup(algorithm, plan, instance, instance.oracle(backend), backend, strength,
                      world(plan), canary, curvature)


def default_strength(algorithm: Algorithm, plan: Plan) -> float:
    """The canary's size: the assumed bound C of an algorithm that does not clip, else
    :data:`ADVERSARIAL_NORM` (far above any clip)."""
    return float(plan.extra.bound) if algorithm.assumes_bound else ADVERSARIAL_NORM


#: the neighbouring data sets: the canary against the zero record (n kept: what L0 replays),
#: against the anti-canary (replace-one), or removed (the true add/remove pair,
#: :func:`removal_oracle`: n − 1 records, every other one an anti-canary; L1 alone, since
#: its batches cannot be replayed on n records)
WORLDS = ("add", "replace", "remove")


def world(plan: Plan) -> str:
    """"add" (canary against the zero record) where some round is Poisson-sampled, else
    "replace" (against the anti-canary: the suite's replace-one sensitivities)."""
    poisson = any(r.sampling.scheme == "poisson" for r, _ in plan.ledger.summary())
    return "add" if poisson else "replace"


# -- L0 ---------------------------------------------------------------------------------------
@dataclass
class ExactReport:
    """The outcome of the exact checks (see the module docstring)."""

    world: str
    runs: int
    max_sensitivity_ratio: float
    noise_draws: int
    noise_mean: float
    noise_std: float
    eps_claimed: Epsilons
    eps_realised: Epsilons
    directions: dict[str, np.ndarray] = field(repr=False)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    canary: str = "dirac"
    #: release tag → the largest change the canary made there ÷ its declared sensitivity,
    #: on either neighbour (the release kinds this canary reaches, and how fully)
    reached: dict[str, float] = field(default_factory=dict)
    #: √(mean over runs of Σ ‖Δm‖²/s² over the releases): the μ of a run's transcript, given
    #: its batches, between the canary and its neighbour (the leakage this canary measures)
    mu_reached: float = 0.0
    #: every release tag the recorded runs made, reached or not
    released: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {"world": self.world, "runs": self.runs,
                "max_sensitivity_ratio": self.max_sensitivity_ratio,
                "noise_draws": self.noise_draws, "noise_mean": self.noise_mean,
                "noise_std": self.noise_std, "eps_claimed": self.eps_claimed.to_dict(),
                "eps_realised": self.eps_realised.to_dict(), "failures": self.failures,
                "warnings": self.warnings, "passed": self.passed,
                "canary_tags": sorted(self.directions), "canary": self.canary,
                "reached": self.reached, "mu_reached": self.mu_reached,
                "released": self.released}


def exact_checks(setup: AuditSetup, runs: int = 10, seed: int = 0) -> ExactReport:
    """L0 on ``runs`` recorded runs, each replayed on the neighbouring data set (and, for
    replace-one claims, also on the add/remove neighbour: the zero record)."""
    value_in, value_out = setup.values
    neighbours = {setup.world: value_out, **({"add": 0.0} if setup.world == "replace" else {})}
    failures: list[str] = []
    ratios, noise = [0.0], []
    poisson: list[Batch] = []
    diffs: dict[str, np.ndarray] = {}
    reached: dict[str, float] = {}
    released: set[str] = set()
    leaks: list[float] = []
    ledger: Ledger | None = None
    for r in range(runs):
        recorded, xs_in, out_in = setup.run(value_in, seed + r)
        ledger = ledger or recorded.ledger
        released.update(e.tag for e in recorded.emissions)
        noise += [np.ravel(e.noise) / e.std for e in recorded.emissions if e.noise is not None]
        failures += _sampling_failures(r, recorded.batches)
        poisson += [b for b in recorded.batches if b.sampling.scheme == "poisson"]
        for world, value in neighbours.items():
            where = f"run {r} ({world})"
            try:
                replayed, xs_out, out_out = setup.run(value, seed + r,
                                                      replay=recorded.emissions)
            except ReplayDiverged as exc:
                failures.append(f"{where}: {exc}")
                continue
            failures += _replay_failures(where, recorded, replayed, xs_in, xs_out, out_in,
                                         out_out)
            leak = 0.0
            for a, b in zip(recorded.emissions, replayed.emissions, strict=True):
                ratio, direction = _sensitivity(a, b)
                ratios.append(ratio)
                if ratio > 1.0 + TOLERANCE:  # every release, on every neighbour
                    failures.append(f"{where}: release {a.tag!r} changed by {ratio:.4g}× its "
                                    "declared sensitivity")
                if ratio > 0:  # on either neighbour: the anti-canary leaves a norm unchanged
                    reached[a.tag] = max(reached.get(a.tag, 0.0), ratio)
                if world != setup.world:
                    continue
                if direction is not None:
                    diffs.setdefault(a.tag, direction)
                if a.std > 0:
                    leak += float(np.sum((a.value - b.value) ** 2)) / a.std**2
            if world == setup.world:
                leaks.append(leak)
    z = np.concatenate(noise) if noise else np.zeros(0)
    failures += _noise_failures(z) + _dispersion_failures(poisson)
    assert ledger is not None
    claimed, realised = setup.plan.eps, epsilons(ledger, setup.plan.target.delta)
    accounting, warnings = _accounting(claimed, realised)
    return ExactReport(setup.world, runs, max(ratios), int(z.size),
                       float(z.mean()) if z.size else math.nan,
                       float(z.std()) if z.size else math.nan, claimed, realised, diffs,
                       _dedupe(failures + accounting), warnings, setup.canary, reached,
                       math.sqrt(float(np.mean(leaks))) if leaks else 0.0, sorted(released))


def _replay_failures(where: str, recorded: AuditMechanism, replayed: AuditMechanism,
                     xs_in: list[np.ndarray], xs_out: list[np.ndarray], out_in: Any,
                     out_out: Any) -> list[str]:
    """Same transcript ⇒ same batches, iterates and output; else data leaked unrecorded."""
    failures = []
    if len(replayed.emissions) != len(recorded.emissions):
        failures.append(f"{where}: the neighbouring run made {len(replayed.emissions)} "
                        f"releases, the recorded one {len(recorded.emissions)}")
    batches = [b.indices.tolist() for b in recorded.batches]
    if batches != [b.indices.tolist() for b in replayed.batches]:
        failures.append(f"{where}: batches differ between neighbouring data sets under the "
                        "same transcript (sampling depends on data)")
    same = len(xs_in) == len(xs_out) and all(
        np.array_equal(a, b) for a, b in zip(xs_in, xs_out, strict=False))
    if not same or not np.array_equal(out_in, out_out):
        failures.append(f"{where}: iterates differ between neighbouring data sets under the "
                        "same transcript (data used outside a recorded release)")
    return failures


def _sensitivity(a: Emission, b: Emission) -> tuple[float, np.ndarray | None]:
    """(largest change ÷ declared sensitivity, unit direction of the change or None)."""
    if a.std <= 0:  # AboveThreshold: each query moves by at most Δ
        k = min(a.value.size, b.value.size)
        change = float(np.max(np.abs(a.value[:k] - b.value[:k]), initial=0.0))
        return _ratio(change, a.charges[0].sensitivity), None
    rows = list(zip(a.value, b.value, a.charges, strict=True)) if a.rows else [
        (a.value, b.value, None)]
    worst, direction = 0.0, None
    for va, vb, charge in rows:
        change = va - vb
        size = float(np.linalg.norm(change))
        held = [charge] if charge is not None else a.charges
        bound = sum(c.sensitivity for c in held if c.holds_slot)
        worst = max(worst, _ratio(size, bound))
        if size > 1e-12 and (charge is None or charge.party == 0):
            direction = np.ravel(change) / size
    return worst, direction


def _ratio(change: float, bound: float) -> float:
    if change <= 1e-12 * max(1.0, bound):
        return 0.0
    return math.inf if bound <= 0 else change / bound


def _sampling_failures(r: int, batches: list[Batch]) -> list[str]:
    failures = []
    poisson = [b for b in batches if b.sampling.scheme == "poisson"]
    if poisson:
        expected = sum(b.sampling.rate * b.sampling.n for b in poisson)
        var = sum(b.sampling.rate * (1 - b.sampling.rate) * b.sampling.n for b in poisson)
        drawn = sum(len(b) for b in poisson)
        if var > 0 and abs(drawn - expected) > 5 * math.sqrt(var) + 1:
            failures.append(f"run {r}: Poisson batches hold {drawn} records, expected "
                            f"{expected:.1f} ± {math.sqrt(var):.1f} at the recorded rates")
    for b in batches:
        if b.sampling.scheme in ("fixed", "disjoint") and len(b) != b.sampling.size:
            failures.append(f"run {r}: a {b.sampling.scheme} batch holds {len(b)} records, "
                            f"recorded size {b.sampling.size}")
    seen: dict[tuple[int, int], set[int]] = {}
    for b in batches:
        if b.sampling.scheme == "disjoint":
            used = seen.setdefault((b.sampling.party, b.sampling.epoch), set())
            if used & set(b.indices.tolist()):
                failures.append(f"run {r}: a disjoint pass reuses a record")
            used |= set(b.indices.tolist())
    return failures


#: the dispersion test's two-sided false-alarm rate
DISPERSION_ALPHA = 1e-6


def _dispersion_failures(batches: list[Batch]) -> list[str]:
    """Poisson batch sizes vary as binomials: Σ (|B| − nq)² / (nq(1 − q)) over every batch
    of every run is about χ² with one degree per batch. Fixed-size batches recorded as
    Poisson hit nq on the dot and sum to far too little (issue 40); a draw that depends on
    something else, to far too much."""
    spread = [b for b in batches if 0 < b.sampling.rate < 1]
    if len(spread) < 20:
        return []
    expected = np.array([b.sampling.rate * b.sampling.n for b in spread])
    var = expected * (1 - np.array([b.sampling.rate for b in spread]))
    chi2 = float(np.sum((np.array([len(b) for b in spread]) - expected) ** 2 / var))
    low, high = stats.chi2.ppf([DISPERSION_ALPHA / 2, 1 - DISPERSION_ALPHA / 2], len(spread))
    if low <= chi2 <= high:
        return []
    return [f"Poisson batch sizes disperse {chi2 / len(spread):.3g}× as binomial draws at the "
            f"recorded rates would ({len(spread)} batches; χ² {chi2:.1f} outside "
            f"[{low:.1f}, {high:.1f}])"]


def _noise_failures(z: np.ndarray) -> list[str]:
    """Standardised noise must be N(0, 1): mean and std within 5 standard errors."""
    if z.size < 20:
        return []
    failures = []
    if abs(z.mean()) > 5 / math.sqrt(z.size):
        failures.append(f"noise mean {z.mean():.4f} in units of the declared std "
                        f"({z.size} draws)")
    if abs(z.std() - 1.0) > 5 / math.sqrt(2 * z.size):
        failures.append(f"noise std {z.std():.4f} × the declared std ({z.size} draws)")
    return failures


def _accounting(claimed: Epsilons, realised: Epsilons) -> tuple[list[str], list[str]]:
    """The realised ledger against the plan's claim, and the accountants against each other."""
    failures: list[str] = []
    warnings: list[str] = []
    c, s = claimed.headline, realised.headline
    if c is None or s is None:
        failures.append("no accountant has an event for this ledger")
        return failures, warnings
    if s > c * (1 + TOLERANCE) + TOLERANCE:
        failures.append(f"the run spent ε = {s:.4f} (PLD), the plan claims {c:.4f}")
    elif s < 0.99 * c:
        warnings.append(f"the run spent ε = {s:.4f}, less than the plan's {c:.4f} "
                        "(over-claimed; e.g. a run stopped when its data ran out)")
    if realised.pld is not None and realised.rdp is not None and (
            realised.pld > realised.rdp + 1e-3):
        failures.append(f"PLD ε {realised.pld:.4f} exceeds RDP ε {realised.rdp:.4f}")
    if realised.pld is not None and realised.gdp is not None and not (
            realised.gdp - 1e-3 <= realised.pld <= realised.gdp * 1.01 + 1e-2):
        failures.append(f"PLD ε {realised.pld:.4f} disagrees with exact GDP ε "
                        f"{realised.gdp:.4f}")
    return failures, warnings


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# -- L1 ---------------------------------------------------------------------------------------
def observation(setup: AuditSetup, value: float, seed: int,
                directions: dict[str, np.ndarray],
                offsets: Mapping[str, float] | None = None) -> np.ndarray:
    """One run's L1 observation: its release LLR score (each release's projection centred
    on ``offsets``), then the canary coordinate of x_1..x_T (padded with the last when a
    run stops early) and of the output."""
    mech, xs, out = setup.run(value, seed, keep=False, directions=directions,
                              offsets=offsets)
    path = [x[-1] for x in xs][: setup.plan.steps] or [0.0]  # x_0's canary coordinate
    path += [path[-1]] * (setup.plan.steps - len(path))
    return np.array([mech.score, *path, out[-1]])


def replay_observation(setup: AuditSetup, value: float, other: float, seed: int
                       ) -> np.ndarray:
    """One run's exact white-box LLR of the canary world against its neighbour, for canaries
    whose releases move in a direction of their own each run (the curvature canary): the run
    on ``value`` is replayed on ``other``, which gives every release's noise-free value in
    both worlds along the same transcript, and Σ (⟨o − m_out, Δ⟩ − ‖Δ‖²/2)/s² sums over
    releases (Δ = m_in − m_out; Gaussian releases on full batches)."""
    recorded, _, _ = setup.run(value, seed)
    replayed, _, _ = setup.run(other, seed, replay=recorded.emissions)
    canary_first = value == setup.values[0]
    score = 0.0
    for here, there in zip(recorded.emissions, replayed.emissions, strict=True):
        if here.noise is None:
            continue
        residual = np.ravel(here.noise) + np.ravel(here.value) - np.ravel(
            there.value if canary_first else here.value)  # o − m_out
        delta = np.ravel(here.value - there.value) * (1.0 if canary_first else -1.0)
        score += (float(residual @ delta) - float(delta @ delta) / 2) / here.std**2
    return np.array([score])


#: runs without the canary that centre the true add/remove pair's release scores
OFFSET_RUNS = 20


def out_world_offsets(setup: AuditSetup, directions: dict[str, np.ndarray], runs: int,
                      seed: int) -> dict[str, float]:
    """Per release tag, the mean projection of its releases on the canary direction in the
    world without the canary, over ``runs`` runs: where the background moves the canary
    coordinate (the "remove" world's anti-canaries), the release LLR centres on it (0 for
    the other worlds, where nothing else touches that coordinate)."""
    if setup.world != "remove":
        return {}
    seen: dict[str, list[float]] = {}
    for r in range(runs):
        mech, _, _ = setup.run(setup.values[1], seed + r, keep=False, directions=directions)
        for tag, values in mech.projections.items():
            seen.setdefault(tag, []).extend(values)
    return {tag: float(np.mean(values)) for tag, values in seen.items()}


def canary_observations(setup: AuditSetup, directions: dict[str, np.ndarray], runs: int,
                        seed: int = 1_000_000) -> tuple[np.ndarray, np.ndarray]:
    """L1 observations of ``runs`` runs with the canary and ``runs`` without it: runs ×
    (T + 2) (:func:`observation`, centred by :func:`out_world_offsets` on
    :data:`OFFSET_RUNS` runs of their own) for a Dirac canary, runs × 1
    (:func:`replay_observation`) for a curvature canary."""
    value_in, value_out = setup.values
    offsets = out_world_offsets(setup, directions, OFFSET_RUNS, seed + 2 * runs)

    def observe(value: float, other: float, run_seed: int) -> np.ndarray:
        if setup.canary == "dirac":
            return observation(setup, value, run_seed, directions, offsets)
        return replay_observation(setup, value, other, run_seed)

    return (np.array([observe(value_in, value_out, seed + 2 * r) for r in range(runs)]),
            np.array([observe(value_out, value_in, seed + 2 * r + 1) for r in range(runs)]))
