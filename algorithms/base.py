"""The one interface every algorithm implements.

``plan(data, target)`` is the untimed calibration: it turns a privacy target into a noise
multiplier σ (``calibration: paper`` follows the paper's own formula, ``pld``/``rdp`` are
tight numerical calibrations) and predicts the ledger the run will fill, so the plan
carries ε as the paper computes it (``eps_paper``) and ε from each accountant.
``iterate(oracle, plan, mech)`` is the timed generator that yields x_t; all privacy noise
and all data sampling go through ``mech``. ``output()`` is the point the paper outputs.
Metrics never flow back into an algorithm.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from algorithms.privacy.accounting import Epsilons, calibrate, epsilons
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


@dataclass
class Plan:
    """The untimed result of calibration: σ, schedule sizes and the ε figures."""

    sigma: float
    steps: int
    batch_size: float
    n: int
    target: PrivacyTarget
    calibration: str
    eps: Epsilons
    eps_paper: float | None
    ledger: Ledger = field(repr=False)
    extra: dict[str, Any] = field(default_factory=dict)

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
            "extra": self.extra,
        }


@dataclass
class Step:
    """One yielded iterate: step count t (1-based), x_t, and for single-pass algorithms the
    passes over the data used so far (the runner also evaluates at every completed pass)."""

    t: int
    x: Any
    epoch: float | None = None


class Algorithm(ABC):
    """Base class: subclasses set ``name``, ``paper``, ``Params`` and the three hooks."""

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
    #: ["bound"]``) instead of clipping (the audit's canary then has exactly that norm)
    assumes_bound: ClassVar[bool] = False
    #: settings that keep a run small where generic small steps and batches do not fit
    #: (tests, benchmarks and audits start from :meth:`small_params`)
    small: ClassVar[dict[str, Any]] = {}
    #: the utility rate the paper's theorem claims (None: the algorithm declares none)
    rate: ClassVar[Rate | None] = None
    #: the :data:`~algorithms.premises.PREMISES` keys :meth:`premise_data` always records
    premises: ClassVar[tuple[str, ...]] = ("steps_taken",)
    Params: ClassVar[type]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "iterate" in cls.__dict__ and not getattr(cls.__dict__["iterate"], "_counted",
                                                     False):
            cls.iterate = _counted(cls.__dict__["iterate"])  # type: ignore[method-assign]

    @classmethod
    def small_params(cls, settings: Mapping[str, Any], **overrides: Any) -> Any:
        """``Params`` from the entries of ``settings`` it has fields for, then :attr:`small`,
        then ``overrides``."""
        names = {f.name for f in fields(cls.Params)}
        return cls.Params(**{**{k: v for k, v in settings.items() if k in names}, **cls.small,
                             **overrides})

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()
        self._x: Any = None
        self._steps_taken = 0

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
        """σ from the paper's own calibration formula."""
        raise NotImplementedError(f"{self.name} has no paper calibration; use pld or rdp")

    def paper_epsilon(self, data: DataInfo, sigma: float, delta: float) -> float | None:
        """ε the paper's analysis claims for σ (None where the paper gives no formula)."""
        return None

    def plan_extra(self, data: DataInfo) -> dict[str, Any]:
        """Values resolved from the data at plan time that ``iterate`` needs (e.g. C)."""
        return {}

    @abstractmethod
    def iterate(self, oracle: Oracle, plan: Plan, mech: Mechanism) -> Iterator[Step]:
        """Run the algorithm, yielding every iterate x_1..x_T (timed)."""

    # -- shared -------------------------------------------------------------------------
    def plan(self, data: DataInfo, target: PrivacyTarget) -> Plan:
        """Calibrate σ for ``target`` and predict the privacy spent (untimed)."""
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
        extra = self.plan_extra(data)
        if calibration == "paper":
            extra.update(self._tight_comparison(data, target, sigma))
        return Plan(sigma=sigma, steps=steps, batch_size=batch, n=data.n, target=target,
                    calibration=calibration, eps=eps, eps_paper=eps_paper, ledger=ledger,
                    extra=extra)

    def _tight_comparison(self, data: DataInfo, target: PrivacyTarget,
                          sigma: float) -> dict[str, Any]:
        """σ a tight accountant needs for the same target, beside the paper's σ."""
        for method in ("pld", "rdp"):
            try:
                tight = calibrate(lambda s: self.planned_ledger(data, s), target.epsilon,
                                  target.delta, method)
            except ValueError:
                continue
            return {"sigma_tight": tight, "sigma_tight_method": method,
                    "noise_ratio_tight_over_paper": tight / sigma}
        return {}

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

    def output(self) -> Any:
        """The point the paper outputs (default: the last iterate)."""
        if self._x is None:
            raise RuntimeError(f"{self.name}.output() called before iterate()")
        return self._x

    def diagnostics(self) -> dict[str, Any]:
        """Per-run facts worth reporting (e.g. voided guarantees); JSON-serialisable."""
        return {}

    @property
    def steps_taken(self) -> int:
        """Iterations of the latest run so far (the t of its last yielded iterate)."""
        return self._steps_taken

    def premise_data(self) -> dict[str, Any]:
        """The run's :data:`~algorithms.premises.PREMISES` entries (JSON-serialisable): every
        key of :attr:`premises`, the value None only where nothing was measured. Valid
        mid-run too (a diverged run records what was gathered). Subclasses extend it."""
        return {"steps_taken": self._steps_taken}


def _counted(iterate: Callable[..., Iterator[Step]]) -> Callable[..., Iterator[Step]]:
    """``iterate`` that also keeps the t of the last yielded step in ``_steps_taken`` (for
    :meth:`Algorithm.premise_data`); an ``iterate`` that delegates to its parent's sets the
    same value twice."""
    @functools.wraps(iterate)
    def counted(self: Algorithm, oracle: Oracle, plan: Plan, mech: Mechanism
                ) -> Iterator[Step]:
        self._steps_taken = 0
        for step in iterate(self, oracle, plan, mech):
            self._steps_taken = step.t
            yield step

    counted._counted = True  # type: ignore[attr-defined]
    return counted


ALGORITHMS: Registry[type[Algorithm]] = Registry("algorithm")
register_algorithm = ALGORITHMS.register
get_algorithm = ALGORITHMS.lookup
