"""The run model: :class:`RunSpec` (one run; its digest is the run id), the components and
evaluation it names, an :class:`Experiment` (the runs a file expands to, see
:mod:`bench.experiment`) and its tuning types. Params are completed with their defaults
before hashing, so ``{}`` and the explicit defaults give the same run id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from algorithms.base import PrivacyTarget, get_algorithm
from problems.backend import BackendSpec
from problems.base import get_problem

SCHEMA = 1
METRICS = ("loss", "grad_norm", "lambda_min", "test", "train")
MAX_NAME = 100  # characters of a name or label
MAX_POINTS = 100_000  # evaluation points of a run
INT_LIMIT = 2**63  # integers (seeds, steps, sizes) must fit a signed 64-bit integer
# problem params that say how to obtain the data, not what is computed: stored with the
# spec, left out of its run id (so adding them kept every earlier run id)
UNHASHED = ("download",)


class SpecError(ValueError):
    """An invalid experiment file or run specification."""


def show(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def short(exc: Exception) -> str:
    """An exception's message with any overlong quoted value cut."""
    return re.sub(r"'[^']{80,}'", lambda m: m.group(0)[:40] + "...'", str(exc))


@dataclass(frozen=True)
class ComponentSpec:
    """A registered component (problem or algorithm) and its complete params."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}


SCHEDULES = ("log", "linear")


@dataclass(frozen=True)
class EvalSpec:
    """Which metrics are measured, at how many steps, spaced how (``final``: last only)."""

    points: int = 10
    metrics: tuple[str, ...] = ("loss", "grad_norm", "test")
    final: tuple[str, ...] = ()
    schedule: str = "log"

    def __post_init__(self) -> None:
        if self.points < 2:
            raise SpecError(f"eval.points must be >= 2, got {self.points}")
        if self.schedule not in SCHEDULES:
            raise SpecError(f"unknown eval.schedule {self.schedule!r}; choose {SCHEDULES}")
        for name in (*self.metrics, *self.final):
            if name not in METRICS:
                raise SpecError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines one run; its digest is the run id and the cache key."""

    problem: ComponentSpec
    algorithm: ComponentSpec
    privacy: PrivacyTarget
    backend: BackendSpec
    seed: int
    eval: EvalSpec = EvalSpec()
    label: str = ""
    stage: str = "final"
    plugins: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        body = {
            "problem": self.problem.to_dict(),
            "algorithm": self.algorithm.to_dict(),
            "privacy": _jsonable(dataclasses.asdict(self.privacy)),
            "backend": dataclasses.asdict(self.backend),
            "seed": self.seed,
            "eval": {k: list(v) if isinstance(v, tuple) else v
                     for k, v in dataclasses.asdict(self.eval).items()},
            "label": self.label,
        }
        if self.stage != "final":
            body["stage"] = self.stage  # tuning runs; final runs keep their historical ids
        if self.plugins:
            body["plugins"] = list(self.plugins)  # outside modules the run imports first
        return body

    @property
    def digest(self) -> str:
        """Run id: hash of the canonical spec (labels included: they are stored with it)."""
        body = self.to_dict()
        body["problem"]["params"] = {k: v for k, v in body["problem"]["params"].items()
                                     if k not in UNHASHED}
        body["schema"] = SCHEMA
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.digest)

    @property
    def display(self) -> str:
        return self.label or self.algorithm.name

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        privacy = dict(d["privacy"])
        privacy["epsilon"] = float(privacy["epsilon"])
        return cls(
            problem=ComponentSpec(d["problem"]["name"], d["problem"]["params"]),
            algorithm=ComponentSpec(d["algorithm"]["name"], d["algorithm"]["params"]),
            privacy=PrivacyTarget(**privacy),
            backend=BackendSpec(**d["backend"]),
            seed=int(d["seed"]),
            eval=EvalSpec(points=d["eval"]["points"], metrics=tuple(d["eval"]["metrics"]),
                          final=tuple(d["eval"]["final"]),
                          schedule=d["eval"].get("schedule", "log")),
            label=d.get("label", ""),
            stage=d.get("stage", "final"),
            plugins=tuple(d.get("plugins", ())),
        )


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    """inf as the string 'inf' so specs round-trip through strict JSON."""
    return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


@dataclass
class Experiment:
    """A loaded experiment file: the suite name, its runs and what was left out.

    ``specs`` are the runs known up front; entries with a ``tune`` grid add
    :class:`~bench.tuning.TuningGroup`s whose final runs are chosen after their tuning runs.
    """

    suite: str
    path: Path | None
    specs: list[RunSpec]
    description: str = ""
    paper: str | None = None
    scale: str | None = None
    roles: tuple[str, ...] = ()  # what the suite feeds on its paper's page (``role:``)
    skipped: list[str] = field(default_factory=list)
    tuning: TuningRule | None = None
    groups: list[TuningGroup] = field(default_factory=list)


@dataclass(frozen=True)
class TuningRule:
    """How a tuned entry's configuration is chosen: the best mean final ``metric``."""

    metric: str = "grad_norm"
    goal: str = "min"
    seeds: tuple[int, ...] = (1000,)
    extend: int = 0

    def __post_init__(self) -> None:
        if self.goal not in ("min", "max"):
            raise SpecError(f"tuning.goal must be min or max, got {self.goal!r}")
        if not self.seeds:
            raise SpecError("tuning.seeds must name at least one seed")
        if not isinstance(self.extend, int) or isinstance(self.extend, bool) or self.extend < 0:
            raise SpecError(f"tuning.extend must be an integer >= 0, got {self.extend!r}")

    def describe(self) -> str:
        return (f"the configuration with the {'lowest' if self.goal == 'min' else 'highest'} "
                f"mean final {self.metric} over tuning seeds {list(self.seeds)} (separate from "
                f"the reported seeds){self._extension()}; tuning is not privacy-accounted")

    def _extension(self) -> str:
        return (f"; a choice on a grid edge extends the grid one step past it, up to "
                f"{self.extend} times" if self.extend else "")


@dataclass(frozen=True)
class TuningGroup:
    """One tuned entry at one (problem, privacy, backend): its candidate configurations, each
    run at the tuning seeds, and the seeds its chosen configuration then runs at."""

    key: str
    candidates: tuple[RunSpec, ...]
    seeds: tuple[int, ...]

    def tuning_specs(self, rule: TuningRule) -> list[RunSpec]:
        return [dataclasses.replace(c, seed=s, stage="tune") for c in self.candidates
                for s in rule.seeds]

    def final_specs(self, chosen: RunSpec) -> list[RunSpec]:
        return [dataclasses.replace(chosen, seed=s) for s in self.seeds]


# -- params ---------------------------------------------------------------------------

def _type_ok(value: Any, annotation: Any) -> tuple[bool, Any]:
    """Whether ``value`` fits ``annotation`` (int → float allowed); the coerced value."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arm in typing.get_args(annotation):
            ok, coerced = _type_ok(value, arm)
            if ok:
                return True, coerced
        return False, value
    if annotation is type(None):
        return value is None, value
    if annotation is bool:
        return isinstance(value, bool), value
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if annotation is float:
        if isinstance(value, str):  # YAML 1.1 reads 1e-5 as a string
            try:
                value = float(value)
            except ValueError:
                return False, value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return math.isfinite(value), float(value)
        return False, value
    if annotation is str:
        return isinstance(value, str), value
    if origin is tuple:
        if isinstance(value, (list, tuple)):
            return True, tuple(value)
        return False, value
    return True, value


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", str(annotation)).replace("NoneType", "None")


def build_params(params_cls: type, given: Mapping[str, Any] | None, where: str) -> Any:
    """Construct a Params dataclass from a mapping, with errors naming ``where``."""
    given = dict(given or {})
    hints = typing.get_type_hints(params_cls)
    names = [f.name for f in dataclasses.fields(params_cls)]
    kwargs = {}
    for key, value in given.items():
        if key not in names:
            raise SpecError(f"{where}: unknown parameter {show(key)} "
                            f"(allowed: {', '.join(names)})")
        if isinstance(value, int) and abs(value) >= INT_LIMIT:
            raise SpecError(f"{where}: parameter {key!r} = {value:.3g} is too large "
                            "(integers must be below 2^63)")
        ok, coerced = _type_ok(value, hints[key])
        if not ok:
            raise SpecError(f"{where}: parameter {key!r} must be {_type_name(hints[key])}"
                            f"{' (finite)' if 'float' in _type_name(hints[key]) else ''}, "
                            f"got {show(value)}")
        kwargs[key] = coerced
    try:
        return params_cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise SpecError(f"{where}: {short(exc)}") from None


def component(kind: str, name: Any, params: Mapping[str, Any] | None, where: str) -> ComponentSpec:
    """A validated :class:`ComponentSpec` with its params completed by the defaults."""
    if not isinstance(name, str):
        raise SpecError(f"{where}: 'name' must be a string, got {show(name)}")
    if len(name) > MAX_NAME or not name.isprintable():
        raise SpecError(f"{where}: 'name' {show(name, 40)} is not a {kind} name; "
                        "`saddlebench list` shows the registered ones")
    try:
        cls = get_problem(name) if kind == "problem" else get_algorithm(name)
    except ValueError as exc:
        raise SpecError(f"{where}: {exc}") from None
    obj = build_params(cls.Params, params, f"{where} ({name})")
    return ComponentSpec(name, _jsonable(dataclasses.asdict(obj)))


def instantiate_params(kind: str, spec: ComponentSpec) -> Any:
    """The Params object of a stored :class:`ComponentSpec`."""
    cls = get_problem(spec.name) if kind == "problem" else get_algorithm(spec.name)
    params = {k: (math.inf if v == "inf" else v) for k, v in spec.params.items()}
    return build_params(cls.Params, params, f"{kind} {spec.name}")


