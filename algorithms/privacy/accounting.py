"""Privacy accounting of a :class:`~algorithms.privacy.ledger.Ledger` with dp-accounting.

Every run reports three figures (anchors/dp_tooling.md §6.1):

* ``pld``: dp-accounting's PLD accountant (value discretisation 1e-4, coarser for very
  small σ; see :func:`_pld_discretization`), the headline number;
* ``rdp``: dp-accounting's RDP accountant, the number most papers print (Abadi et al.'s
  moments accountant is RDP); fixed-size rounds use ``SampledWithoutReplacementDpEvent``
  under REPLACE_ONE;
* ``gdp``: exact μ-GDP, when every release is an unsampled Gaussian:
  μ² = Σ_rounds count · Σ_i σ_i⁻², ε = ``get_epsilon_gaussian(1/μ, δ)``;
* ``advanced``: the textbook bound papers calibrate with (xu2026 App. D): every round a
  Gaussian mechanism of the whole data set (no amplification by sampling), made
  (ε₀, δ₀)-DP by the classical formula ε₀ = √(2 ln(1.25/δ₀))/σ (Dwork & Roth 2014, Thm. A.1;
  the analytic Gaussian ε₀(δ₀) of Balle & Wang 2018 where that formula is invalid, ε₀ > 1),
  composed over the k rounds by the advanced composition theorem (Dwork, Rothblum & Vadhan
  2010; heterogeneous form of Kairouz et al. 2015, Thm. 3.5) with δ' = δ/2, δ₀ = δ/(2k),
  or by basic composition where that is smaller. Always loose; a reference number only.

Each figure is ``None`` where its accountant has no event for the ledger. Releases on one
batch are collapsed to σ_eff = (Σ σ_i⁻²)^(−½) before subsampling (exact; §2.6 item 2).

Pure ε-DP releases (AboveThreshold) are added by basic composition, ε_total = ε_Gaussian(δ)
+ Σ ε_pure: a valid upper bound at the same δ (dp-accounting 0.6.0 has no event for a
generic ε-DP mechanism); ``gdp`` is then None.

Fixed-size batches drawn without replacement (replace-one adjacency, σ relative to the
replace-one sensitivity): RDP uses ``SampledWithoutReplacementDpEvent`` (Wang, Balle &
Kasiviswanathan 2019, what papers use); PLD uses the dominating pair of subsampling
without replacement under substitution, (q·N(Δ, s²) + (1−q)·N(0, s²), N(0, s²)) with
q = b/n (Zhu, Dong & Wang 2022, Thm. 10; the same amplification as Poisson sampling under
add/remove, Balle, Barthe & Gaboardi 2018), i.e. ``PoissonSampledDpEvent(b/n, ·)`` with the
replace-one σ. tests/test_privacy.py checks that pair against worst-case mixtures.

Distributed algorithms tag each batch with its ``party`` (client): a record belongs to one
client and only that client's releases depend on it, so ε is computed per party and the
largest is reported (local, record-level DP).

Single-use (``disjoint``) batches compose in parallel within a pass: a record pays for one
batch per pass, so each pass counts as the least noisy of its batches, unsampled (no
amplification is claimed); passes compose sequentially.
"""

from __future__ import annotations

import hashlib
import logging
import math
import numbers
import os
import pickle
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import cached_property, lru_cache
from operator import itemgetter
from pathlib import Path
from typing import Any

from algorithms.privacy import ledger as ledger_module
from algorithms.privacy.ledger import Ledger, Release, Round, Sampling

PLD_DISCRETIZATION = 1e-4
CALIBRATION_DISCRETIZATION = 1e-3
METHODS = ("pld", "rdp", "gdp", "advanced")


class _QuietRdpOrders(logging.Filter):
    """dp-accounting logs every fractional RDP order it drops (it then ignores them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to converge" not in record.getMessage()


logging.getLogger("absl").addFilter(_QuietRdpOrders())


@lru_cache(maxsize=1)
def _dpa() -> Any:
    try:
        import dp_accounting
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "dp-accounting is missing; install it with: pip install --no-deps dp-accounting==0.6.0"
        ) from exc
    _vectorise_gaussian_loss(dp_accounting.pld.privacy_loss_mechanism)
    _contiguous_dictionary_to_list(dp_accounting.pld.common)
    return dp_accounting


def _contiguous_dictionary_to_list(common: Any) -> None:
    """dp-accounting's ``common.dictionary_to_list`` (a PMF's {loss index: mass} as an offset
    and a list) looks every index of the range up in the dict. A dense PMF's dict holds
    exactly the range, in order (the connect-the-dots PLD is built that way): then its
    values are that list, the same objects, without a lookup each (tested)."""
    general = common.dictionary_to_list
    if getattr(general, "_saddlebench", False):
        return

    def dictionary_to_list(input_dictionary: Any) -> tuple[int, list[Any]]:
        keys = list(input_dictionary)
        if keys and keys == list(range(keys[0], keys[0] + len(keys))):
            return keys[0], list(input_dictionary.values())
        listed: tuple[int, list[Any]] = general(input_dictionary)
        return listed

    dictionary_to_list._saddlebench = True  # type: ignore[attr-defined]
    common.dictionary_to_list = dictionary_to_list


def _vectorise_gaussian_loss(mechanisms: Any) -> None:
    """Evaluate the Gaussian's inverse privacy loss on the whole ε grid at once.

    dp-accounting 0.6.0 builds a PLD from δ(ε) on a grid of up to 3e5 points
    (``PLD_MAX_GRID``) and inverts the privacy loss point by point in Python: the largest
    single cost of the main job's accounting (half of a run's CPU at xu2026's ε = 128).
    Here the library's own steps (:func:`_inverse_losses`) run on the array: affine without
    subsampling, and with it the same numpy log/exp/log1p the library applies to each
    point's scalar, so every δ keeps its bits (tests/test_privacy.py checks it against the
    library's loop). Replace-one losses, and grids where the library would raise, keep its
    loop.
    """
    loss = mechanisms.GaussianPrivacyLoss
    if getattr(loss, "_saddlebench_vectorised", False):
        return
    pointwise = loss.get_delta_for_epsilon
    add, remove = mechanisms.AdjacencyType.ADD, mechanisms.AdjacencyType.REMOVE

    def get_delta_for_epsilon(self: Any, epsilon: Any) -> Any:
        if self.adjacency_type not in (add, remove):
            return pointwise(self, epsilon)
        import numpy as np

        is_scalar = isinstance(epsilon, numbers.Number)
        epsilons = np.array([epsilon]) if is_scalar else np.asarray(epsilon)
        deltas = np.zeros_like(epsilons, dtype=float)
        q = self.sampling_prob
        if q == 1.0:
            inverse = np.full_like(epsilons, True, dtype=bool)
        elif self.adjacency_type is add:
            inverse = epsilons < -math.log1p(-q)
        else:
            inverse = epsilons > math.log1p(-q)
            deltas[~inverse] = -np.expm1(epsilons[~inverse])
        x_cutoffs = _inverse_losses(self, epsilons[inverse], self.adjacency_type is add)
        if x_cutoffs is None:
            return pointwise(self, epsilon)
        deltas[inverse] = (self.mu_upper_cdf(x_cutoffs)
                           - np.exp(epsilons[inverse] + self.mu_lower_log_cdf(x_cutoffs)))
        deltas = np.clip(deltas, 0, 1)
        return float(deltas[0]) if is_scalar else deltas

    loss.get_delta_for_epsilon = get_delta_for_epsilon
    loss._saddlebench_vectorised = True


def _inverse_losses(loss: Any, losses: Any, add: bool) -> Any:
    """dp-accounting's ``inverse_privacy_loss`` of a Gaussian at every privacy loss of
    ``losses`` (ADD or REMOVE adjacency), step for step as its scalar code; None where that
    code would raise (the caller then runs it)."""
    import numpy as np

    without = (loss._inverse_privacy_loss_without_subsampling_add if add
               else loss._inverse_privacy_loss_without_subsampling_remove)
    q = loss.sampling_prob
    if q == 1.0:
        return np.asarray(without(losses), dtype=float)
    # the privacy loss without subsampling, ∓log(a·e^(∓loss) + c) with a = 1/q, c = 1 − 1/q
    # (common.log_a_times_exp_b_plus_c: a > 0 > c, so log(e^d − e^log(−c)), d = b + log a)
    limit = -math.log(1 - q) if add else math.log(1 - q)
    close = np.fromiter((math.isclose(v, limit) for v in losses.tolist()), bool, len(losses))
    b = -losses if add else losses
    a, c = 1 / q, 1 - 1 / q
    d, log_minus_c = b + np.log(a), np.log(-c)
    if np.any(~close & ((losses > limit) if add else (losses <= limit))) or np.any(
            ~close & (b != 0) & (log_minus_c >= d)):
        return None
    with np.errstate(all="ignore"):  # the close points' values are replaced below
        logs = np.where(b == 0, np.log(a + c), d + np.log1p(-np.exp(log_minus_c - d)))
    x_cutoffs = np.asarray(without(-logs if add else logs), dtype=float)
    x_cutoffs[close] = without(math.inf if add else -math.inf)
    return x_cutoffs


@dataclass(frozen=True)
class Epsilons:
    """ε of one ledger at one δ from each accountant (None: not applicable)."""

    delta: float
    pld: float | None
    rdp: float | None
    gdp: float | None
    advanced: float | None = None

    @property
    def headline(self) -> float | None:
        """PLD where it applies, else RDP."""
        return self.pld if self.pld is not None else self.rdp

    def voided(self) -> Epsilons:
        """No guarantee at all: ε = ∞ from every accountant (a run that broke an assumption
        its claim rests on, e.g. noisy SGD's gradient bound C)."""
        return Epsilons(self.delta, math.inf, math.inf, math.inf, math.inf)

    def to_dict(self) -> dict[str, float | None]:
        return {**asdict(self), "headline": self.headline}


def sigma_eff(rnd: Round) -> float:
    """The single Gaussian noise multiplier equivalent to a round's releases."""
    return float(sum(r.sigma**-2 for r in rnd.releases) ** -0.5)


def _round_event(rnd: Round, method: str) -> Any:
    dpa = _dpa()
    gauss = dpa.GaussianDpEvent(sigma_eff(rnd))
    s = rnd.sampling
    if s.scheme == "poisson" or (s.scheme == "fixed" and method == "pld"):
        return dpa.PoissonSampledDpEvent(s.rate, gauss)
    if s.scheme == "fixed":
        return dpa.SampledWithoutReplacementDpEvent(s.n, s.size, gauss)
    return gauss


def to_dp_event(rounds: list[tuple[Round, int]], method: str = "rdp") -> Any:
    """The dp-accounting event of one party's ledger summary, for ``method``."""
    dpa = _dpa()
    return dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(_round_event(r, method), c)
                                for r, c in rounds])


def _kinds(rnd: Round) -> set[str]:
    return {r.kind for r in rnd.releases}


def cache_dir() -> Path | None:
    """Where accountant results persist across processes: $SADDLEBENCH_CACHE (``off``
    disables), else ~/.cache/saddlebench. Calibration probes the same ledgers in every
    worker and every rerun; a PLD evaluation costs up to seconds, a cache hit milliseconds."""
    setting = os.environ.get("SADDLEBENCH_CACHE", str(Path.home() / ".cache" / "saddlebench"))
    return None if setting == "off" else Path(setting) / "accounting" / _code_version()


@lru_cache(maxsize=1)
def _code_version() -> str:
    """Cached results are valid for this accounting code and this dp-accounting only."""
    import importlib.metadata

    digest = hashlib.sha256(importlib.metadata.version("dp-accounting").encode())
    for module in (__file__, ledger_module.__file__):
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()[:12]


@lru_cache(maxsize=1)
def _disk() -> Any:
    import joblib

    return joblib.Memory(location=cache_dir(), verbose=0)


class Rounds(tuple[tuple[Round, int], ...]):
    """A ledger's rounds as the accountants see them (:func:`_key`), whose hash and digest
    are computed once: the in-memory caches hash their key on every call, and a tuple of a
    few thousand frozen dataclasses rehashes every field each time."""

    def __hash__(self) -> int:
        if "_hash" not in self.__dict__:
            self.__dict__["_hash"] = tuple.__hash__(self)
        return int(self.__dict__["_hash"])

    def __reduce__(self) -> tuple[type[Rounds], tuple[tuple[tuple[Round, int], ...]]]:
        return Rounds, (tuple(self),)

    @cached_property
    def digest(self) -> str:
        """The disk cache's key: sha256 of the rounds' C pickle (joblib's own pure-Python
        hashing of a ledger of many distinct rounds cost more than the accountant)."""
        return hashlib.sha256(pickle.dumps(tuple(self), protocol=4)).hexdigest()


@lru_cache(maxsize=4096)
def _epsilon(rounds: Rounds, delta: float, method: str,
             discretization: float) -> float | None:
    """ε of a ledger summary, memoised in memory and (see :func:`cache_dir`) on disk."""
    if cache_dir() is None:
        return _epsilon_uncached(rounds, delta, method, discretization)
    return _disk_epsilon()(rounds.digest, rounds, delta, method, discretization)


@lru_cache(maxsize=1)
def _disk_epsilon() -> Any:
    return _disk().cache(_epsilon_of_digest, ignore=["rounds"])


def _epsilon_of_digest(digest: str, rounds: tuple[tuple[Round, int], ...], delta: float,
                       method: str, discretization: float) -> float | None:
    """:func:`_epsilon_uncached`, cached on disk under ``digest`` (``rounds``'s)."""
    return _epsilon_uncached(rounds, delta, method, discretization)


def _epsilon_uncached(rounds: tuple[tuple[Round, int], ...], delta: float, method: str,
                      discretization: float) -> float | None:
    """The largest ε over parties (clients); each party's rounds compose."""
    if not rounds:
        return 0.0
    values = [_party_epsilon(p, delta, method, discretization) for p in _parties(rounds)]
    return None if any(v is None for v in values) else max(values)  # type: ignore[type-var]


@lru_cache(maxsize=64)
def _parties(rounds: tuple[tuple[Round, int], ...]
             ) -> frozenset[tuple[tuple[Round, int], ...]]:
    """The distinct parties' ledgers (rounds with the party number cleared); memoised, as
    every accountant of :func:`epsilons` asks for the same ledger's (sorting thousands of
    rounds by their repr cost a spider_sosp run more than hashing them)."""
    parties: dict[int, list[tuple[Round, int]]] = {}
    for rnd, count in rounds:
        anonymous = replace(rnd, sampling=replace(rnd.sampling, party=0))
        parties.setdefault(rnd.sampling.party, []).append((anonymous, count))
    return frozenset(tuple(sorted(p, key=repr)) for p in parties.values())


def _split_kinds(rounds: tuple[tuple[Round, int], ...]
                 ) -> tuple[list[tuple[Round, int]], float] | None:
    """A party's Gaussian rounds (passes of disjoint batches merged) and its total pure ε;
    None when it uses data without noise."""
    if any("nonprivate" in _kinds(r) for r, _ in rounds):
        return None
    pure = sum(c * x.epsilon for r, c in rounds for x in r.releases if x.kind == "pure")
    if (sum(1 for r, _ in rounds if _kinds(r) == {"gaussian"})
            + sum(1 for r, _ in rounds if "pure" in _kinds(r)) != len(rounds)):
        raise ValueError("a round mixes pure and gaussian releases; record them separately")
    return _parallel([(r, c) for r, c in rounds if _kinds(r) == {"gaussian"}]), float(pure)


def _party_epsilon(rounds: tuple[tuple[Round, int], ...], delta: float, method: str,
                   discretization: float) -> float | None:
    split = _split_kinds(rounds)
    if split is None:
        return math.inf
    gaussian, pure = split
    if method == "gdp" and pure:
        return None
    if not gaussian:
        return pure
    eps = _gaussian_epsilon(gaussian, delta, method, discretization)
    return None if eps is None else eps + pure


def privacy_profile(ledger: Ledger, grid: list[float],
                    discretization: float = PLD_DISCRETIZATION) -> list[float]:
    """δ(ε) on ``grid`` by the PLD accountant, the largest over parties: a party's Gaussian
    rounds composed as for ε (disjoint passes in parallel), its pure releases added by
    basic composition, δ(ε) = δ_Gauss(ε − ε_pure). The claimed trade-off curve of an
    audit (anchors dp_tooling.md §2.6 item 3)."""
    profile = [0.0] * len(grid)
    for party in _parties(_key(ledger)):
        split = _split_kinds(party)
        if split is None:
            return [1.0] * len(grid)
        gaussian, pure = split
        if not gaussian:
            deltas = [0.0 if e >= pure else 1.0 for e in grid]
        else:
            accountant = _dpa().pld.PLDAccountant(
                value_discretization_interval=_pld_discretization(gaussian, discretization))
            accountant.compose(to_dp_event(gaussian, "pld"))
            deltas = [float(accountant.get_delta(e - pure)) if e >= pure else 1.0
                      for e in grid]
        profile = [max(a, b) for a, b in zip(profile, deltas, strict=True)]
    return profile


def _parallel(rounds: list[tuple[Round, int]]) -> list[tuple[Round, int]]:
    """Parallel composition of ``disjoint`` rounds: within one pass every record is in at
    most one batch, so the worst record of a pass pays only for the least noisy batch
    (smallest σ_eff), released from the whole data set. Other rounds pass through."""
    other = [(r, c) for r, c in rounds if r.sampling.scheme != "disjoint"]
    worst: dict[int, Round] = {}
    for rnd, _ in rounds:
        if rnd.sampling.scheme == "disjoint":
            epoch = rnd.sampling.epoch
            if epoch not in worst or sigma_eff(rnd) < sigma_eff(worst[epoch]):
                worst[epoch] = rnd
    passes = Counter(Round(Sampling(), (Release("gaussian", "pass", sigma=sigma_eff(w)),))
                     for w in worst.values())
    return other + list(passes.items())


PLD_MAX_GRID = 3e5
#: Below this noise multiplier one round sampled at rate q ≥ 10δ alone costs ε > 100 at δ
#: (its privacy-loss tail gives δ(100) ≈ q), so PLD and RDP report ε = inf without building
#: their (huge) grids: the σ → 0 "non-private" reference runs.
SIGMA_FLOOR = 0.05


def _pld_discretization(listed: list[tuple[Round, int]], requested: float) -> float:
    """The PLD value discretisation: ``requested``, coarsened so that the least noisy round's
    privacy loss (spanning about μ² + 20μ, μ = 1/σ_eff) fits in ``PLD_MAX_GRID`` points.

    Tiny σ would otherwise need grids of many GB and minutes; a coarser grid is pessimistic,
    so the ε reported stays a valid upper bound (and is large in that regime anyway).
    """
    mu = 1.0 / min(sigma_eff(r) for r, _ in listed)
    return max(requested, (mu * mu + 20.0 * mu) / PLD_MAX_GRID)


def _gaussian_epsilon(listed: list[tuple[Round, int]], delta: float, method: str,
                      discretization: float) -> float | None:
    schemes = {r.sampling.scheme for r, _ in listed}
    if method == "gdp":
        if schemes != {"none"}:
            return None
        mu = math.sqrt(sum(c * sum(x.sigma**-2 for x in r.releases) for r, c in listed))
        return float(_dpa().get_epsilon_gaussian(1.0 / mu, delta))
    if method == "advanced":
        return advanced_composition([(sigma_eff(r), c) for r, c in listed], delta)
    if any(sigma_eff(r) < SIGMA_FLOOR and r.sampling.rate >= 10 * delta for r, _ in listed):
        return math.inf
    dpa = _dpa()
    if method == "pld":
        accountant = dpa.pld.PLDAccountant(
            value_discretization_interval=_pld_discretization(listed, discretization))
    elif method == "rdp":
        if {"fixed", "poisson"} <= schemes:
            return None
        rel = dpa.NeighboringRelation
        relation = rel.REPLACE_ONE if "fixed" in schemes else rel.ADD_OR_REMOVE_ONE
        accountant = dpa.rdp.RdpAccountant(neighboring_relation=relation)
    else:
        raise ValueError(f"unknown accountant {method!r}; choose one of {METHODS}")
    try:
        accountant.compose(to_dp_event(listed, method))
        return float(accountant.get_epsilon(delta))
    except (ValueError, OverflowError, MemoryError) as exc:
        # noise so small that the accountant's grid explodes: ε is unbounded for all purposes
        logging.getLogger(__name__).warning("%s accountant failed (%s); reporting ε = inf",
                                            method, exc)
        return math.inf


def gaussian_mechanism_epsilon(sigma: float, delta: float) -> float:
    """ε of one Gaussian mechanism with noise multiplier σ at δ: the classical
    √(2 ln(1.25/δ))/σ where it is valid (≤ 1), else the analytic Gaussian value."""
    classical = math.sqrt(2.0 * math.log(1.25 / delta)) / sigma
    return classical if classical <= 1.0 else float(_dpa().get_epsilon_gaussian(sigma, delta))


def advanced_composition(rounds: list[tuple[float, int]], delta: float) -> float:
    """ε(δ) of k = Σ counts Gaussian mechanisms (multiplier σ, count) under the advanced
    composition theorem: δ' = δ/2, each mechanism (ε_i, δ/(2k))-DP,
    ε = √(2 ln(1/δ') Σ ε_i²) + Σ ε_i(e^{ε_i} − 1), or Σ ε_i (basic) if smaller."""
    k = sum(count for _, count in rounds)
    delta0 = delta / (2.0 * k)
    per_call = [(gaussian_mechanism_epsilon(sigma, delta0), count) for sigma, count in rounds]
    basic = sum(c * e for e, c in per_call)
    if max(e for e, _ in per_call) > 50.0:  # e^ε₀ overflows; basic composition is smaller
        return float(basic)
    advanced = (math.sqrt(2.0 * math.log(2.0 / delta) * sum(c * e * e for e, c in per_call))
                + sum(c * e * math.expm1(e) for e, c in per_call))
    return float(min(basic, advanced))


def _key(ledger: Ledger) -> Rounds:
    """The ledger as accountants see it: releases without tags and sensitivities (σ is
    already relative to Δ), so rounds that differ only there (e.g. SPIDER differences
    whose clip scales with the step) merge into one self-composed event; each round's
    releases, and the rounds, in the order of their repr.

    Built without hashing a dataclass per release (a run records a few thousand): each
    release object is stripped once (by identity, its bare form shared by value) and the
    rounds are grouped by their sampling object and their releases' reprs, then merged by
    value; the sort key is the repr of (round, count), composed of the parts' cached reprs.
    """
    bare_of_value: dict[tuple[str, float, float], tuple[str, Release]] = {}
    bare_of_id: dict[int, tuple[str, Release]] = {}

    def strip(r: Release) -> tuple[str, Release]:
        entry = bare_of_id.get(id(r))
        if entry is None:
            value = (r.kind, r.sigma, r.epsilon)
            entry = bare_of_value.get(value)
            if entry is None:
                bare = Release(r.kind, "", sigma=r.sigma, epsilon=r.epsilon)
                entry = bare_of_value[value] = (repr(bare), bare)
            bare_of_id[id(r)] = entry
        return entry

    grouped: dict[tuple[int, tuple[str, ...]], list[Any]] = {}
    for sampling, releases, count in ledger.rounds():
        pairs = sorted(map(strip, releases), key=itemgetter(0))
        reprs = tuple(text for text, _ in pairs)
        entry = grouped.get((id(sampling), reprs))
        if entry is None:
            grouped[id(sampling), reprs] = [sampling, reprs, tuple(b for _, b in pairs), count]
        else:
            entry[3] += count
    merged: dict[Round, list[Any]] = {}  # equal rounds of distinct sampling objects
    for sampling, reprs, releases, count in grouped.values():
        rnd = Round(sampling, releases)
        if rnd in merged:
            merged[rnd][2] += count
        else:
            merged[rnd] = [sampling, reprs, count]
    keyed = [(_round_repr(sampling, reprs, count), (rnd, count))
             for rnd, (sampling, reprs, count) in merged.items() if count > 0]
    return Rounds(item for _, item in sorted(keyed, key=itemgetter(0)))


def _round_repr(sampling: Sampling, releases: tuple[str, ...], count: int) -> str:
    """``repr((Round(sampling, bare releases), count))`` from the releases' reprs."""
    inner = ", ".join(releases) + ("," if len(releases) == 1 else "")
    return f"(Round(sampling={sampling!r}, releases=({inner})), {count!r})"


def ledger_rounds(ledger: Ledger) -> list[tuple[Round, int]]:
    """The ledger's rounds as the accountants see them (see :func:`_key`)."""
    return list(_key(ledger))


def epsilon(ledger: Ledger, delta: float, method: str = "pld",
            discretization: float = PLD_DISCRETIZATION) -> float | None:
    """ε(δ) of ``ledger`` from one accountant (None where it has no event).

    ``discretization`` is the PLD value discretisation interval; coarser is faster and
    pessimistic (it never reports less ε than the finer grid).
    """
    _check_delta(delta)
    return _epsilon(_key(ledger), float(delta), method, discretization)


def epsilons(ledger: Ledger, delta: float) -> Epsilons:
    """ε(δ) from PLD, RDP, exact GDP and advanced composition."""
    _check_delta(delta)
    key = _key(ledger)
    return Epsilons(delta, *(_epsilon(key, float(delta), m, PLD_DISCRETIZATION)
                             for m in METHODS))


def calibrate(make_ledger: Callable[[float], Ledger], epsilon_target: float, delta: float,
              method: str = "pld", rtol: float = 1e-7,
              discretization: float = CALIBRATION_DISCRETIZATION) -> float:
    """The noise multiplier σ at which ``make_ledger(σ)`` spends ε(δ) = ``epsilon_target``.

    ε is decreasing in σ: bracket by doubling/halving from σ = 1, then Brent's method.
    PLD probes use a coarser discretisation (default 1e-3, about 8× faster than the 1e-4
    of reported figures); being pessimistic, it gives a σ that spends at most the target
    at 1e-4 (within about 1e-4 relative).
    """
    from scipy.optimize import brentq

    _check_target(epsilon_target, delta)

    def gap(sigma: float) -> float:
        eps = epsilon(make_ledger(sigma), delta, method, discretization)
        if eps is None:
            raise ValueError(f"the {method} accountant has no event for this algorithm's ledger")
        return eps - epsilon_target

    lo = hi = 1.0
    if gap(1.0) > 0:
        while gap(hi) > 0:
            lo, hi = hi, hi * 2.0
            if hi > 1e8:
                raise ValueError(f"no noise multiplier below 1e8 reaches epsilon={epsilon_target}")
    else:
        while gap(lo) <= 0:
            lo, hi = lo / 2.0, lo
            if lo < 1e-6:
                raise ValueError(f"epsilon={epsilon_target} needs a noise multiplier below 1e-6")
    return float(brentq(gap, lo, hi, rtol=rtol, xtol=1e-12))


def _check_delta(delta: float) -> None:
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")


def _check_target(epsilon_target: float, delta: float) -> None:
    if not epsilon_target > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon_target}")
    if math.isinf(epsilon_target):
        raise ValueError("epsilon = inf needs no calibration (the algorithm is non-private)")
    _check_delta(delta)
