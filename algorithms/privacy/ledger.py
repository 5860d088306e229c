"""The release ledger and the mechanism object every algorithm draws through.

All privacy noise and all data sampling go through :class:`Mechanism`:

* ``mech.sample(...)`` draws a batch (host indices) and opens a *round* that records how it
  was sampled (Poisson rate q, fixed size without replacement, or the whole data);
* ``mech.pool(...)`` hands out *disjoint* batches: a pass over a shuffled copy of the data
  where every record is used at most once, for ``epochs`` passes (single-use SPIDER
  oracles; privacy by parallel composition within a pass);
* ``mech.gaussian(value, sensitivity=Δ, sigma=σ, batch=...)`` adds N(0, (σΔ)² I) on the
  backend's device and records the release in the batch's round (or in a round of its own
  when ``batch`` is None: a release computed from the whole data set);
* ``mech.charged(value, std=..., charges=[(batch, Δ), ...])`` adds N(0, std² I) to one vector
  that depends on several batches' records, recording a release (multiplier std/Δ_b) in each;
* ``mech.exact(value, batch=...)`` records a non-private use of data (ε = ∞);
* ``mech.above_threshold(queries, ...)`` runs AboveThreshold (Dwork & Roth 2014, Alg. 1)
  over lazily evaluated queries and records one pure ε-DP release, whatever the number
  of queries it looked at.

Every noisy, data-dependent output leaves through :meth:`Mechanism.emit` (the identity
here): the privacy audit (``bench/canary.py``) overrides it to record each release with its
noise-free value and declared sensitivity, and to replay a transcript on a neighbouring
data set.

``mech.public`` is a generator for randomness that touches no data (candidate times, start
vectors of eigen-solvers): it needs no accounting and leaves the noise and sampling
streams untouched.

``sensitivity`` is the L2 sensitivity of ``value`` under the neighbouring relation its
round implies: add/remove-one for Poisson and unsampled rounds, replace-one for fixed-size
batches drawn without replacement (dp-accounting's only event for those). The ledger
stores ``sigma = std / Δ`` (the noise multiplier) for each release, so an accountant never
sees σ divided by the wrong sensitivity (anchors/dp_tooling.md §2.6 item 1).

Releases that share a round are accounted as one Gaussian of the concatenated vector,
σ_eff = (Σ σ_i⁻²)^(−½), which is exact for jointly Gaussian releases on one batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

import numpy as np

Scheme = Literal["none", "poisson", "fixed", "disjoint"]
SCHEMES: tuple[str, ...] = ("none", "poisson", "fixed", "disjoint")


@dataclass(frozen=True)
class Sampling:
    """How a round's batch was drawn from a population of ``n`` records.

    ``party`` names a group of records whose releases are separate from every other
    group's (a client under local DP, or a held-out subset): ε is accounted per group.
    ``epoch`` numbers the pass of a ``disjoint`` pool (each record once per pass).
    """

    scheme: str = "none"
    n: int = 0
    rate: float = 1.0
    size: int = 0
    party: int = 0
    epoch: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown sampling scheme {self.scheme!r}; choose {SCHEMES}")


KINDS = ("gaussian", "pure", "nonprivate")


@dataclass(frozen=True)
class Release:
    """One release.

    ``gaussian``: noise multiplier ``sigma`` and L2 ``sensitivity``; ``pure``: an
    ``epsilon``-DP mechanism (δ = 0) as a whole; ``nonprivate``: data used without noise.
    """

    kind: str
    tag: str
    sigma: float = 0.0
    sensitivity: float = 0.0
    epsilon: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown release kind {self.kind!r}; choose {KINDS}")


#: the per-call records of :class:`Mechanism`, built once per distinct value (both are
#: immutable; an audit draws millions of identical ones); ``typed``: 60 and 60.0 stay apart
_sampling = lru_cache(maxsize=1024, typed=True)(Sampling)
_release = lru_cache(maxsize=1024, typed=True)(Release)


@dataclass(frozen=True)
class Round:
    sampling: Sampling
    releases: tuple[Release, ...]


@dataclass
class Batch:
    """Indices drawn by :meth:`Mechanism.sample` and the releases made from them."""

    indices: np.ndarray
    sampling: Sampling
    releases: list[Release] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.indices)


class Ledger:
    """Every round of a run; :meth:`summary` groups identical rounds with their counts."""

    def __init__(self) -> None:
        self._open: list[tuple[Sampling, list[Release]]] = []
        self._counted: Counter[Round] = Counter()

    def open(self, batch: Batch) -> Batch:
        """Track a sampled batch; its releases are attached to it as they happen."""
        self._open.append((batch.sampling, batch.releases))  # shares the releases list
        return batch

    def record(self, sampling: Sampling, releases: list[Release], count: int = 1) -> None:
        """Record ``count`` identical rounds."""
        self._counted[Round(sampling, tuple(releases))] += count

    def rounds(self) -> Iterator[tuple[Sampling, Sequence[Release], int]]:
        """Every recorded round with releases as (sampling, releases, count), ungrouped and
        unhashed (what :meth:`summary` groups)."""
        for rnd, count in self._counted.items():
            if rnd.releases:
                yield rnd.sampling, rnd.releases, count
        for sampling, releases in self._open:
            if releases:
                yield sampling, releases, 1

    def summary(self) -> list[tuple[Round, int]]:
        """Distinct rounds with how often each occurred (rounds without releases dropped)."""
        counts: Counter[Round] = Counter()
        for sampling, releases, count in self.rounds():
            counts[Round(sampling, tuple(releases))] += count
        return [(r, c) for r, c in counts.items() if c > 0]

    def to_json(self) -> list[dict[str, Any]]:
        """The rounds as plain dicts (what ``dataclasses.asdict`` gives, built once per
        distinct sampling or release: a run repeats a few thousand of them)."""
        plain: dict[Sampling | Release, dict[str, Any]] = {}

        def fields_of(x: Sampling | Release) -> dict[str, Any]:
            if x not in plain:
                plain[x] = {name: getattr(x, name) for name in x.__dataclass_fields__}
            return dict(plain[x])

        return [{"sampling": fields_of(r.sampling), "releases": [fields_of(x) for x in r.releases],
                 "count": c} for r, c in self.summary()]

    @classmethod
    def from_summary(cls, rounds: list[tuple[Round, int]]) -> Ledger:
        """A ledger holding ``count`` copies of each round (plans, ``account``)."""
        ledger = cls()
        for rnd, count in rounds:
            ledger.record(rnd.sampling, list(rnd.releases), count)
        return ledger

    @classmethod
    def from_json(cls, data: list[dict[str, Any]]) -> Ledger:
        return cls.from_summary([
            (Round(Sampling(**e["sampling"]), tuple(Release(**r) for r in e["releases"])),
             int(e["count"]))
            for e in data
        ])


class Pool:
    """Single-use sampling: batches are consecutive slices of a per-pass permutation.

    A request that the rest of the current pass cannot fill starts the next pass (the
    remainder is left unused); after ``epochs`` passes :meth:`take` returns None.
    """

    def __init__(self, mech: Mechanism, population: np.ndarray, epochs: int, party: int) -> None:
        if epochs < 1:
            raise ValueError(f"a pool needs epochs >= 1, got {epochs}")
        self.mech, self.population, self.epochs, self.party = mech, population, epochs, party
        self.epoch, self.cursor, self.used = 0, 0, 0
        self.order = mech.sampler.permutation(population)

    @property
    def progress(self) -> float:
        """Passes completed, as a fraction (samples used / n)."""
        return self.used / len(self.population)

    def take(self, size: int) -> Batch | None:
        """The next ``size`` unused records of this pass (None once the budget is spent)."""
        n = len(self.population)
        if not 0 < size <= n:
            raise ValueError(f"a disjoint batch needs 0 < size <= {n}, got {size}")
        if self.epoch >= self.epochs:
            return None
        if self.cursor + size > n:
            self.epoch, self.cursor = self.epoch + 1, 0
            self.used = self.epoch * n
            if self.epoch >= self.epochs:
                return None
            self.order = self.mech.sampler.permutation(self.population)
        chosen = np.sort(self.order[self.cursor:self.cursor + size])
        self.cursor += size
        self.used += size
        sampling = _sampling("disjoint", n, rate=size / n, size=size, party=self.party,
                             epoch=self.epoch)
        return self.mech.ledger.open(Batch(chosen, sampling))


class Mechanism:
    """Draws batches and Gaussian noise, recording both in a :class:`Ledger`."""

    def __init__(self, noise: Any, sampler: np.random.Generator,
                 ledger: Ledger | None = None, laplace: np.random.Generator | None = None,
                 public: np.random.Generator | None = None) -> None:
        self.noise = noise
        self.sampler = sampler
        self.ledger = ledger if ledger is not None else Ledger()
        self._laplace, self._public = laplace, public

    @cached_property
    def _spawned(self) -> tuple[np.random.Generator, np.random.Generator]:
        """Children 0 and 1 of the sampler's seed sequence: the Laplace and public streams
        where the caller gave none, spawned on first use (an audit's thousands of runs
        mostly draw from neither)."""
        seeds = self.sampler.bit_generator.seed_seq.spawn(2)  # type: ignore[attr-defined]
        return np.random.default_rng(seeds[0]), np.random.default_rng(seeds[1])

    @property
    def laplace_rng(self) -> np.random.Generator:
        """The stream of AboveThreshold's Laplace noise."""
        return self._laplace or self._spawned[0]

    @property
    def public(self) -> np.random.Generator:
        """Randomness that touches no data (module docstring)."""
        return self._public or self._spawned[1]

    def sample(self, population: int | np.ndarray, *, scheme: str,
               rate: float | None = None, size: int | None = None, party: int = 0) -> Batch:
        """A batch from ``population`` (a size, or an index array such as one client's data,
        whose number ``party`` identifies it for per-client accounting)."""
        pop = (np.arange(population) if isinstance(population, (int, np.integer))
               else np.asarray(population))
        n = len(pop)
        if scheme == "poisson":
            if rate is None or not 0.0 < rate <= 1.0:
                raise ValueError(f"poisson sampling needs a rate in (0, 1], got {rate}")
            chosen = pop[self.sampler.random(n) < rate]
            sampling = _sampling("poisson", n, rate=float(rate), party=party)
        elif scheme == "fixed":
            if size is None or not 0 < size <= n:
                raise ValueError(f"fixed-size sampling needs 0 < size <= {n}, got {size}")
            chosen = pop[np.sort(self.sampler.choice(n, size=size, replace=False))]
            sampling = _sampling("fixed", n, rate=size / n, size=int(size), party=party)
        elif scheme == "none":
            chosen = pop
            sampling = _sampling("none", n, rate=1.0, size=n, party=party)
        else:
            raise ValueError(f"unknown sampling scheme {scheme!r}; choose {SCHEMES}")
        return self.ledger.open(Batch(chosen, sampling))

    def pool(self, population: int | np.ndarray, *, epochs: int, party: int = 0) -> Pool:
        """Disjoint batches from ``population``: ``epochs`` shuffled passes, each record at
        most once per pass."""
        pop = (np.arange(population) if isinstance(population, (int, np.integer))
               else np.asarray(population))
        return Pool(self, pop, epochs, party)

    def gaussian(self, value: Any, *, sensitivity: float, sigma: float, tag: str,
                 batch: Batch | list[Batch] | None = None) -> Any:
        """``value`` + N(0, (σ·Δ)² I), recorded against ``batch`` (or the whole data).

        With a list of batches (one per client), ``value`` stacks one row per batch and each
        row is a separate release from its batch (noise drawn in one call).
        """
        if sensitivity <= 0 or sigma <= 0:
            raise ValueError(f"gaussian release {tag!r} needs sensitivity > 0 and sigma > 0")
        release = _release("gaussian", tag, sigma=float(sigma), sensitivity=float(sensitivity))
        batches = batch if isinstance(batch, list) else [batch]
        for b in batches:
            self._attach(release, b)
        std = sigma * sensitivity
        noisy = value + std * self.noise.normal(tuple(value.shape))
        return self.emit(noisy, tag=tag, value=value, base=None, std=std,
                         charges=[(b, release.sensitivity) for b in batches],
                         rows=isinstance(batch, list))

    def charged(self, value: Any, *, std: float, tag: str,
                charges: list[tuple[Batch, float]]) -> Any:
        """``value`` + N(0, std² I) where ``value`` depends on the records of several batches,
        with L2 sensitivity Δ_b in batch b: each batch records a release of multiplier
        std/Δ_b (spider_sosp's escape direction, charged to its Hessian's batches)."""
        if std <= 0 or not charges or min(s for _, s in charges) <= 0:
            raise ValueError(f"charged release {tag!r} needs std > 0 and sensitivities > 0")
        for b, s in charges:
            self._attach(Release("gaussian", tag, sigma=std / s, sensitivity=s), b)
        noisy = value + std * self.noise.normal(tuple(value.shape))
        return self.emit(noisy, tag=tag, value=value, base=None, std=std, charges=charges)

    def emit(self, output: Any, *, tag: str, value: Any, base: Any, std: float,
             charges: Sequence[tuple[Batch | None, float]], rows: bool = False) -> Any:
        """The exit of every noisy data-dependent output: ``output`` = ``base`` (earlier
        releases' data, None if none) + ``value`` + N(0, std² I), where ``value`` has L2
        sensitivity Δ in each charged batch (one row per charge with ``rows``; for
        AboveThreshold, ``output`` is the chosen index, ``value`` the query values and
        ``std`` 0). Here the identity; the privacy audit overrides it."""
        return output

    def perturb(self, value: Any, std: float) -> Any:
        """``value`` + N(0, std² I) that depends on no data (an escape perturbation): drawn
        from the noise stream, recorded nowhere, since it costs no privacy."""
        return value + std * self.noise.normal(tuple(value.shape))

    def exact(self, value: Any, *, tag: str, batch: Batch | None = None) -> Any:
        """Record a release of ``value`` without noise (a non-private step)."""
        self._attach(Release("nonprivate", tag), batch)
        return value

    def above_threshold(self, queries: Iterable[Callable[[], float]], *, threshold: float,
                        sensitivity: float, epsilon: float, tag: str,
                        below: bool = True, party: int = 0) -> int | None:
        """AboveThreshold: index of the first query past the noisy threshold, or None.

        Threshold noise Lap(2Δ/ε), query noise Lap(4Δ/ε) (Dwork & Roth 2014, Theorem 3.23);
        ε-DP for any number of queries, each of sensitivity Δ. With ``below`` the test is
        q + ν < T̂ (the symmetric "below threshold" form). Queries are evaluated lazily, so
        nothing after the first success is computed.
        """
        if sensitivity <= 0 or epsilon <= 0:
            raise ValueError(f"above_threshold {tag!r} needs sensitivity > 0 and epsilon > 0")
        self.ledger.record(Sampling(party=party), [Release(
            "pure", tag, sensitivity=float(sensitivity), epsilon=float(epsilon))])
        rng = self.laplace_rng
        noisy_threshold = threshold + rng.laplace(0.0, 2.0 * sensitivity / epsilon)
        values: list[float] = []
        chosen = None
        for j, query in enumerate(queries):
            values.append(query())
            noisy = values[-1] + rng.laplace(0.0, 4.0 * sensitivity / epsilon)
            if (noisy < noisy_threshold) if below else (noisy >= noisy_threshold):
                chosen = j
                break
        return self.emit(chosen, tag=tag, value=np.asarray(values), base=None, std=0.0,
                         charges=[(None, float(sensitivity))])

    def _attach(self, release: Release, batch: Batch | None) -> None:
        if batch is None:
            self.ledger.record(Sampling("none"), [release])
        else:
            batch.releases.append(release)
