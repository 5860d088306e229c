"""The one interface every algorithm implements: typed params, a pure plan/iterate pair.

An algorithm is ``Algorithm[P, E]``: ``self.params: P`` (its frozen ``Params`` dataclass,
read from the generic argument) and nothing else on ``self``.

``plan(data, target)`` is the untimed calibration: it turns a privacy target into a noise
multiplier σ (``calibration: paper`` follows the paper's own formula or the paper's
accountant, :attr:`Algorithm.paper_accountant`; ``pld``/``rdp`` are tight numerical
calibrations) and predicts the ledger the run will fill, so the plan carries ε as the paper
computes it (``eps_paper``) and ε from each accountant, and in ``plan.extra: E`` (a frozen
:class:`Extras` dataclass) everything ``iterate`` needs that was resolved from the data.
``iterate(oracle, plan, mech, trace)`` is the timed generator that yields x_t; all privacy
noise and all data sampling go through ``mech``; everything else the run gathers (norms
against the clips, counters, the paper's output where it is not the last iterate) goes into
the per-run :class:`Trace`, which ``premise_data`` and ``diagnostics`` read.
Metrics never flow back into an algorithm.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin

from algorithms.premises import CLIP_SUFFIXES, NormTracker, clip_keys, clip_premises
from algorithms.privacy.accounting import Epsilons, calibrate, epsilon, epsilons
from algorithms.privacy.ledger import Ledger, Mechanism, Release, Sampling
from problems.base import DataInfo
from problems.oracles import Oracle
from problems.registry import Registry

CALIBRATIONS = ("pld", "rdp", "advanced", "paper")


@dataclass(frozen=True)
class PrivacyTarget:
    """What a run must guarantee: (ε, δ) and how σ is chosen.

    ``epsilon = inf`` marks a non-private run. ``sigma`` (a noise multiplier), when given,
    overrides calibration: the plan then reports the ε that σ spends.
    """

    epsilon: float = math.inf
    delta: float = 1e-5
    calibration: str = "pld"
    sigma: float | None = None

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon}")
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(
                f"unknown calibration {self.calibration!r}; choose one of {', '.join(CALIBRATIONS)}"
            )
        if self.sigma is not None and not self.sigma > 0:
            raise ValueError(f"sigma must be > 0, got {self.sigma}")


OBJECTIVES = ("population", "empirical")
STATIONARITIES = ("first", "second")


@dataclass(frozen=True)
class Rate:
    """The utility rate a paper's theorem claims for an algorithm.

    The bound on ‖∇F‖ (first order) or on α of an α-SOSP (second order) is
    Õ(n^{-b} + (√d/(nε))^a): ``privacy_exponent`` is a, ``sample_exponent`` is b (None where
    the bound has no such term, e.g. an empirical-risk bound or a non-private method).
    ``source`` names the theorem and the paper key; ``note`` any caveat.
    """

    objective: str
    stationarity: str
    privacy_exponent: float | None
    sample_exponent: float | None
    source: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.stationarity not in STATIONARITIES:
            raise ValueError(
                f"stationarity must be one of {STATIONARITIES}, got {self.stationarity!r}"
            )
        for name in ("privacy_exponent", "sample_exponent"):
            value = getattr(self, name)
            if value is not None and not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1] or None, got {value}")
        if not self.source.strip():
            raise ValueError("source must name the theorem and the paper")


@dataclass(frozen=True)
class Extras:
    """What an algorithm's plan resolves from the data for ``iterate`` (e.g. C); each
    algorithm subclasses it as a frozen dataclass. :meth:`to_dict` is what the sidecar stores
    under ``plan.extra``: every field, except those whose ``metadata`` is :data:`INTERNAL`,
    and those whose ``metadata`` is :data:`OPTIONAL` while they are None."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("internal") or (f.metadata.get("optional") and value is None):
                continue
            out[f.name] = value
        return out


#: ``field(metadata=INTERNAL)``: an :class:`Extras` field ``iterate`` needs that the sidecar
#: does not store
INTERNAL: Mapping[str, bool] = MappingProxyType({"internal": True})
#: ``field(default=None, metadata=OPTIONAL)``: an :class:`Extras` field stored only where the
#: plan resolved it (not None)
OPTIONAL: Mapping[str, bool] = MappingProxyType({"optional": True})


@dataclass(frozen=True)
class NoExtras(Extras):
    """The extras of an algorithm whose plan resolves nothing beyond σ and T."""


E = TypeVar("E", bound=Extras)
P = TypeVar("P")


@dataclass(frozen=True)
class TightSigma:
    """Under ``calibration: paper``: the σ a tight accountant needs for the same target."""

    sigma: float
    method: str
    ratio: float

    def to_dict(self) -> dict[str, Any]:
        return {"sigma_tight": self.sigma, "sigma_tight_method": self.method,
                "noise_ratio_tight_over_paper": self.ratio}


@dataclass(frozen=True)
class Plan(Generic[E]):
    """The untimed result of calibration: σ, schedule sizes, the ε figures and the
    algorithm's :class:`Extras`."""

    sigma: float
    steps: int
    batch_size: float
    n: int
    target: PrivacyTarget
    calibration: str
    eps: Epsilons
    eps_paper: float | None
    ledger: Ledger = field(repr=False)
    extra: E
    #: the tight accountant's σ beside the paper's (``calibration: paper`` only)
    tight: TightSigma | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sigma": self.sigma,
            "steps": self.steps,
            "batch_size": self.batch_size,
            "n": self.n,
            "target": asdict(self.target),
            "calibration": self.calibration,
            "eps": self.eps.to_dict(),
            "eps_paper": self.eps_paper,
            "ledger": self.ledger.to_json(),
            "extra": {**self.extra.to_dict(), **(self.tight.to_dict() if self.tight else {})},
        }


@dataclass
class Step:
    """One yielded iterate: step count t (1-based), x_t, and for single-pass algorithms the
    passes over the data used so far (the runner also evaluates at every completed pass)."""

    t: int
    x: Any
    epoch: float | None = None


@dataclass
class Trace:
    """Everything one run gathers besides its iterates: created by the caller of
    :meth:`Algorithm.run`, filled by ``iterate``, read by :meth:`Algorithm.premise_data` and
    :meth:`Algorithm.diagnostics` (valid mid-run too: a diverged run records what was
    gathered). Nothing of a run is kept on the algorithm."""

    #: the last yielded iterate (x₀ before the first)
    last: Any = None
    #: the point the paper outputs where it is not the last iterate (set by ``iterate``)
    output: Any = None
    #: the t of the last yielded iterate
    steps_taken: int = 0
    #: the run's clips, suffix → tracker (:data:`~algorithms.premises.CLIP_SUFFIXES`)
    clips: dict[str, NormTracker | None] = field(default_factory=dict)
    #: per-run values the premise data and diagnostics report (counters, measured bounds)
    facts: dict[str, Any] = field(default_factory=dict)
    #: the algorithm's own per-run object where it keeps one (e.g. its SPIDER estimator)
    state: Any = None

    def point(self) -> Any:
        """The run's output: :attr:`output` where the algorithm set one, else the last
        iterate."""
        if self.output is not None:
            return self.output
        if self.last is None:
            raise RuntimeError("Trace.point() before the run started")
        return self.last


class Algorithm(ABC, Generic[P, E]):
    """Base class: subclasses set ``name``, ``paper``, the generic arguments (their
    ``Params`` and ``Extras`` dataclasses) and the hooks."""

    name: ClassVar[str]
    paper: ClassVar[str]
    reference: ClassVar[str] = ""
    private: ClassVar[bool] = True
    #: True when the algorithm needs a minimax oracle (per-sample partials in x and y)
    minimax: ClassVar[bool] = False
    #: instance constants the algorithm needs (e.g. true per-sample bounds G, L, ρ)
    needs: ClassVar[tuple[str, ...]] = ()
    #: True when a run may stop before T because its (single-use) data run out
    data_limited: ClassVar[bool] = False
    #: True when privacy rests on an assumed per-sample gradient bound (``plan.extra
    #: .bound``) instead of clipping (the audit's canary then has exactly that norm)
    assumes_bound: ClassVar[bool] = False
    #: settings that keep a run small where generic small steps and batches do not fit
    #: (tests, benchmarks and audits start from :meth:`small_params`)
    small: ClassVar[dict[str, Any]] = {}
    #: the utility rate the paper's theorem claims (None: the algorithm declares none)
    rate: ClassVar[Rate | None] = None
    #: the :data:`~algorithms.premises.PREMISES` keys :meth:`premise_data` always records
    premises: ClassVar[tuple[str, ...]] = ("steps_taken",)
    #: the accountant the paper calibrates with over :meth:`planned_ledger` (``rdp``,
    #: ``advanced``); None where the paper has its own formula (an override of
    #: :meth:`paper_sigma` / :meth:`paper_epsilon`) or none
    paper_accountant: ClassVar[str | None] = None
    #: the params and extras dataclasses (from the generic arguments ``Algorithm[P, E]``)
    Params: ClassVar[type]
    Extras: ClassVar[type[Extras]] = NoExtras

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            origin, args = get_origin(base), get_args(base)
            if isinstance(origin, type) and issubclass(origin, Algorithm) and \
                    not any(isinstance(a, TypeVar) for a in args):
                cls.Params, cls.Extras = args

    @classmethod
    def small_params(cls, settings: Mapping[str, Any], **overrides: Any) -> Any:
        """``Params`` from the entries of ``settings`` it has fields for, then :attr:`small`,
        then ``overrides``."""
        names = {f.name for f in fields(cls.Params)}
        return cls.Params(**{**{k: v for k, v in settings.items() if k in names}, **cls.small,
                             **overrides})

    def __init__(self, params: P | None = None) -> None:
        self.params: P = params if params is not None else self.Params()

    # -- hooks ------------------------------------------------------------------------
    @abstractmethod
    def steps(self, data: DataInfo) -> int:
        """Number of iterations T."""

    @abstractmethod
    def batch_size(self, data: DataInfo) -> float:
        """(Expected) batch size."""

    def planned_ledger(self, data: DataInfo, sigma: float) -> Ledger:
        """The releases a run with noise multiplier σ will record (private algorithms)."""
        raise NotImplementedError

    def paper_sigma(self, data: DataInfo, target: PrivacyTarget) -> float:
        """σ from the paper's own calibration: :attr:`paper_accountant` over the planned
        ledger, or the paper's formula (an override)."""
        if self.paper_accountant is None:
            raise NotImplementedError(f"{self.name} has no paper calibration; use pld or rdp")
        return calibrate(lambda s: self.planned_ledger(data, s), target.epsilon, target.delta,
                         self.paper_accountant)

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        """ε the paper's analysis claims for σ: :attr:`paper_accountant`'s, or the paper's
        formula (an override); None where the paper gives neither."""
        if self.paper_accountant is None:
            return None
        return epsilon(self.planned_ledger(data, sigma), delta, self.paper_accountant)

    @abstractmethod
    def extras(self, data: DataInfo, target: PrivacyTarget, sigma: float) -> E:
        """Values resolved from the data at plan time that ``iterate`` needs (e.g. C)."""

    @abstractmethod
    def iterate(self, oracle: Oracle, plan: Plan[E], mech: Mechanism,
                trace: Trace) -> Iterator[Step]:
        """Run the algorithm, yielding every iterate x_1..x_T (timed); per-run state goes
        into ``trace``."""

    # -- shared -------------------------------------------------------------------------
    def resolved(self, data: DataInfo, target: PrivacyTarget) -> Algorithm[P, E]:
        """The algorithm as it runs on ``data`` under ``target``, where its sizes follow from
        them (e.g. a schedule from the theorem): a new instance; by default itself."""
        return self

    def plan(self, data: DataInfo, target: PrivacyTarget) -> Plan[E]:
        """Calibrate σ for ``target`` and predict the privacy spent (untimed)."""
        return self.resolved(data, target).calibrated(data, target)

    def calibrated(self, data: DataInfo, target: PrivacyTarget) -> Plan[E]:
        """:meth:`plan` of a :meth:`resolved` algorithm."""
        steps, batch = self.steps(data), self.batch_size(data)
        if not self.private:
            ledger, sigma = self.nonprivate_ledger(), 0.0
            calibration = "none"
        else:
            if math.isinf(target.epsilon) and target.sigma is None:
                raise ValueError(f"{self.name} is private: give a finite epsilon or a sigma")
            sigma, calibration = self._sigma(data, target)
            ledger = self.planned_ledger(data, sigma)
        eps = epsilons(ledger, target.delta)
        eps_paper = self.paper_epsilon(data, sigma, target.delta) if self.private else math.inf
        extra = self.extras(data, target, sigma)
        tight = self._tight_sigma(data, target, sigma) if calibration == "paper" else None
        return Plan(sigma=sigma, steps=steps, batch_size=batch, n=data.n, target=target,
                    calibration=calibration, eps=eps, eps_paper=eps_paper, ledger=ledger,
                    extra=extra, tight=tight)

    def _tight_sigma(self, data: DataInfo, target: PrivacyTarget,
                     sigma: float) -> TightSigma | None:
        """σ a tight accountant needs for the same target, beside the paper's σ."""
        for method in ("pld", "rdp"):
            try:
                tight = calibrate(lambda s: self.planned_ledger(data, s), target.epsilon,
                                  target.delta, method)
            except ValueError:
                continue
            return TightSigma(tight, method, tight / sigma)
        return None

    def _sigma(self, data: DataInfo, target: PrivacyTarget) -> tuple[float, str]:
        if target.sigma is not None:
            return float(target.sigma), "given"
        if target.calibration == "paper":
            return float(self.paper_sigma(data, target)), "paper"
        sigma = calibrate(lambda s: self.planned_ledger(data, s), target.epsilon, target.delta,
                          target.calibration)
        return sigma, target.calibration

    def nonprivate_ledger(self) -> Ledger:
        ledger = Ledger()
        ledger.record(Sampling(), [Release("nonprivate", "data")])
        return ledger

    def run(self, oracle: Oracle, plan: Plan[E], mech: Mechanism,
            trace: Trace) -> Iterator[Step]:
        """:meth:`iterate`, keeping each yielded step's t and x in ``trace`` (what the
        runner, the audit and the tests call)."""
        trace.last = oracle.x0
        for step in self.iterate(oracle, plan, mech, trace):
            trace.steps_taken, trace.last = step.t, step.x
            yield step

    def diagnostics(self, trace: Trace) -> dict[str, Any]:
        """Per-run facts worth reporting (e.g. voided guarantees); JSON-serialisable."""
        return {}

    def premise_data(self, trace: Trace) -> dict[str, Any]:
        """The run's :data:`~algorithms.premises.PREMISES` entries (JSON-serialisable): every
        key of :attr:`premises`, the value None only where nothing was measured; the clips
        declared there read from ``trace.clips``, the other keys from ``trace.facts``.
        Valid mid-run too (a diverged run records what was gathered)."""
        clips = clip_premises({s: trace.clips.get(s) for s in ("", *CLIP_SUFFIXES)
                               if clip_keys(s)[0] in self.premises})
        values = {**trace.facts, **clips, "steps_taken": trace.steps_taken}
        return {key: values.get(key) for key in self.premises}


ALGORITHMS: Registry[type[Algorithm]] = Registry("algorithm")
register_algorithm = ALGORITHMS.register
get_algorithm = ALGORITHMS.lookup
