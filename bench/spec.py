"""The run model: :class:`RunSpec` (one run; its digest is the run id), the components and
evaluation it names, an :class:`Experiment` (the runs a file expands to, see
:mod:`bench.experiment`) and its tuning types. Params are completed with their defaults
before hashing, so ``{}`` and the explicit defaults give the same run id.

:func:`build_params` checks a component's params against the constraints its Params
declares (``problems.params``), each value at its place.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from algorithms.base import PrivacyTarget, get_algorithm
from bench.errors import SpecError, first_error, sentence, short, show
from bench.model import INT_LIMIT, MAX_NAME, EvalSpec, TuningRule
from problems.backend import BackendSpec
from problems.base import get_problem
from problems.params import PARAMS_CONFIG
from problems.registry import did_you_mean

SCHEMA = 1
# problem params that say how to obtain the data, not what is computed: stored with the
# spec, left out of its run id (so adding them kept every earlier run id)
UNHASHED = ("download",)


@dataclass(frozen=True)
class ComponentSpec:
    """A registered component (problem or algorithm) and its complete params, as Python
    values (∞ is ``math.inf``; only the JSON form spells it "inf"), with the validated
    (frozen) Params object they were built from where :func:`component` built them, so that
    a worker does not validate again what the parent validated."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    #: the validated Params object (None: read back from a sidecar or written by hand, and
    #: validated by :func:`instantiate_params`); compared and hashed by ``params`` alone
    typed: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": _jsonable(dict(self.params))}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ComponentSpec:
        return cls(d["name"], {k: _from_json(v) for k, v in d["params"].items()})

    def __hash__(self) -> int:  # params is a dict: hash its canonical JSON
        return hash(json.dumps(self.to_dict(), sort_keys=True, default=str))


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
                     for k, v in dataclasses.asdict(self.eval).items()
                     if k != "output" or v != "algorithm"},  # runs before it keep their ids
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
            problem=ComponentSpec.from_dict(d["problem"]),
            algorithm=ComponentSpec.from_dict(d["algorithm"]),
            privacy=PrivacyTarget(**privacy),
            backend=BackendSpec(**d["backend"]),
            seed=int(d["seed"]),
            eval=EvalSpec(points=d["eval"]["points"], metrics=tuple(d["eval"]["metrics"]),
                          final=tuple(d["eval"]["final"]),
                          schedule=d["eval"].get("schedule", "log"),
                          output=d["eval"].get("output", "algorithm")),
            label=d.get("label", ""),
            stage=d.get("stage", "final"),
            plugins=tuple(d.get("plugins", ())),
        )


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    """inf as the string 'inf' so specs round-trip through strict JSON."""
    return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


def _from_json(value: Any) -> Any:
    """:func:`_jsonable`'s inverse for one value."""
    return math.inf if value == "inf" else value


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

@functools.cache
def _adapter(params_cls: type, key: str) -> TypeAdapter[Any]:
    """The validator of one field of a Params class, with the constraints it declares (a
    plain dataclass, e.g. a plugin's, is checked against its annotations)."""
    fields = getattr(params_cls, "__pydantic_fields__", None)
    if fields is None:
        return TypeAdapter(typing.get_type_hints(params_cls, include_extras=True)[key],
                           config=PARAMS_CONFIG)
    info = fields[key]
    declared: Any = (Annotated[(info.annotation, *info.metadata)] if info.metadata
                     else info.annotation)
    return TypeAdapter(declared, config=PARAMS_CONFIG)


def check_value(params_cls: type, key: str, value: Any, where: str, place: str) -> None:
    """Check one value against the declared type and constraints of its field (cross-field
    rules aside); errors name ``where`` and the ``place`` (``params.lr``, ``sweep.lr[2]``)."""
    names = [f.name for f in dataclasses.fields(params_cls)]
    if key not in names:
        raise SpecError(f"{where}: unknown parameter {show(key)}"
                        f"{did_you_mean(str(key), names)} (allowed: {', '.join(names)})")
    if isinstance(value, int) and abs(value) >= INT_LIMIT:
        raise SpecError(f"{where}: {place} = {value:.3g} is too large (integers must be below "
                        "2^63)")
    try:
        _adapter(params_cls, key).validate_python(value)
    except ValidationError as exc:
        raise SpecError(sentence(f"{where}: {place}", first_error(exc))) from None


def build_params(params_cls: type, given: Mapping[str, Any] | None, where: str) -> Any:
    """Construct a Params dataclass from a mapping, with errors naming ``where``."""
    given = dict(given or {})
    for key, value in given.items():
        check_value(params_cls, key, value, where, f"params.{key}")
    try:
        return params_cls(**given)
    except ValidationError as exc:  # a rule joining several fields
        raise SpecError(sentence(f"{where}: params", first_error(exc))) from None
    except ValueError as exc:  # a plain dataclass's own check
        raise SpecError(f"{where}: params: {short(exc)}") from None


def component(kind: str, name: Any, params: Mapping[str, Any] | None, where: str) -> ComponentSpec:
    """A validated :class:`ComponentSpec` with its params completed by the defaults."""
    obj = build_params(component_class(kind, name, where).Params, params, f"{where} ({name})")
    return ComponentSpec(name, dataclasses.asdict(obj), obj)


def component_class(kind: str, name: Any, where: str) -> Any:
    """The registered problem or algorithm class called ``name``."""
    if not isinstance(name, str):
        raise SpecError(f"{where}: 'name' must be a string, got {show(name)}")
    if len(name) > MAX_NAME or not name.isprintable():
        raise SpecError(f"{where}: 'name' {show(name, 40)} is not a {kind} name; "
                        "`saddlebench list` shows the registered ones")
    try:
        return get_problem(name) if kind == "problem" else get_algorithm(name)
    except ValueError as exc:
        raise SpecError(f"{where}: {short(exc)}") from None


def instantiate_params(kind: str, spec: ComponentSpec) -> Any:
    """The Params object of a :class:`ComponentSpec`: the one it was validated as while its
    params are still those, else built and validated from them (a spec read back from a
    sidecar, written by hand, or whose params were replaced)."""
    if spec.typed is not None and dataclasses.asdict(spec.typed) == dict(spec.params):
        return spec.typed
    cls = get_problem(spec.name) if kind == "problem" else get_algorithm(spec.name)
    return build_params(cls.Params, spec.params, f"{kind} {spec.name}")
