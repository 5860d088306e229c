"""The experiment file as one typed model (pydantic v2), its errors and its JSON schema.

:class:`ExperimentFile` is a file's normalised content: one value or a list becomes a list,
a backend name becomes a :class:`~problems.backend.BackendSpec`, a count of seeds stays a
count. Its blocks declare their types and constraints once; ``eval`` and ``tuning`` are
:class:`EvalSpec` and :class:`TuningRule`, which the runs keep (pydantic dataclasses, as
the components' Params: ``problems.params``). A component's ``params`` are checked against
its own Params (``bench.spec.check_value``) when the grid is expanded
(:mod:`bench.experiment`), as the entries' names are only known then (plugins).

:func:`validate` turns the first validation error into one :class:`~bench.errors.SpecError`
line: the file, the place (``algorithms[1].privacy.delta``), what is wrong, what is allowed.
:func:`json_schema` is what ``saddlebench schema`` prints, for editors' completion.
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from annotated_types import Ge, Gt, Lt, MaxLen, MinLen
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeInt,
    Strict,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo

from algorithms.base import ALGORITHMS, CALIBRATIONS, PrivacyTarget
from bench.errors import Source, SpecError, first_error, place, sentence, show
from problems.backend import BACKENDS, BackendSpec
from problems.base import PROBLEMS
from problems.registry import did_you_mean

MAX_NAME = 100  # characters of a name or label
MAX_POINTS = 100_000  # evaluation points of a run
INT_LIMIT = 2**63  # integers (seeds, steps, sizes) must fit a signed 64-bit integer
TUNING_SEED0 = 1000  # a count of tuning seeds means 1000, 1001, ...: apart from run seeds
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")

Metric = Literal["loss", "grad_norm", "lambda_min", "test", "train"]
TuningMetric = Literal["loss", "grad_norm", "lambda_min", "test_acc", "test_loss", "train_acc"]
Seed = Annotated[int, Strict(), Field(ge=0, lt=INT_LIMIT)]
# blocks of an experiment file (eval:, tuning:): a mapping there; strict values (Strict())
BLOCK_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)


def _as_list(value: Any) -> Any:
    """One value or a list of them, as a list."""
    return list(value) if isinstance(value, list | tuple) else [value]


def _tuning_seeds(value: Any) -> Any:
    """A count of tuning seeds (1000, 1001, ...) or the seeds, as a list."""
    if isinstance(value, int) and not isinstance(value, bool):
        return list(range(TUNING_SEED0, TUNING_SEED0 + value))
    return _as_list(value)


def one_or_list(item: Any) -> BeforeValidator:
    """Metadata of ``Annotated[list[item], ...]``: one ``item`` is read as a list of one."""
    return BeforeValidator(_as_list, json_schema_input_type=item | list[item])


def _epsilons(value: Any) -> Any:
    """One ε or a list, as a list; ``inf`` as stored runs write it is ∞ (not private)."""
    return [math.inf if eps == "inf" else eps for eps in _as_list(value)]


def _no_default(schema: dict[str, Any]) -> None:
    """Leave a default JSON cannot write (∞) out of the schema."""
    schema.pop("default", None)


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("not printable")
    return text


def _one_of(value: str, allowed: tuple[str, ...], what: str) -> str:
    """``value`` if it is one of ``allowed`` (the owner's constant: the schema's enum too)."""
    if value not in allowed:
        raise ValueError(f"unknown {what} {show(value)}; choose {', '.join(allowed)}")
    return value


def _backend(value: Any) -> Any:
    """A backend entry (a name, or a mapping of BackendSpec's fields) as a BackendSpec."""
    fields = {"name": value} if isinstance(value, str) else value
    if not isinstance(fields, Mapping):
        return fields  # pydantic says what is expected
    allowed = BackendSpec.__dataclass_fields__
    unknown = [k for k in fields if k not in allowed]
    if unknown:
        raise ValueError(f"unknown key {show(unknown[0])} (allowed: {', '.join(allowed)})")
    device = str(fields.get("device", ""))
    hint = (f" (to run on GPU {device[5:]}, set CUDA_VISIBLE_DEVICES={device[5:]} and use "
            "device: cuda)" if re.fullmatch(r"cuda:\d+", device) else "")
    try:
        return BackendSpec(**fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{exc}{hint}") from None


@pydantic_dataclass(frozen=True, config=BLOCK_CONFIG)
class EvalSpec:
    """Which metrics are measured, at how many steps, spaced how (``final``: last only), and
    at which output point: ``algorithm`` (the algorithm's own output, else its last
    iterate) or ``uniform_iterate`` (the output rule of first-order analyses, Ghadimi & Lan
    2013: where the algorithm sets no output of its own, x_t with t uniform on the steps
    taken; :class:`bench.runner.OutputRule`)."""

    points: Annotated[int, Strict(), Field(ge=2, le=MAX_POINTS,
                                           description="an integer in [2, 100,000]")] = 10
    metrics: Annotated[tuple[Metric, ...], BeforeValidator(_as_list)] = ("loss", "grad_norm",
                                                                       "test")
    final: Annotated[tuple[Metric, ...], BeforeValidator(_as_list)] = ()
    schedule: Literal["log", "linear"] = "log"
    output: Literal["algorithm", "uniform_iterate"] = "algorithm"


@pydantic_dataclass(frozen=True, config=BLOCK_CONFIG)
class TuningRule:
    """How a tuned entry's configuration is chosen: the best mean final ``metric`` over the
    tuning ``seeds`` (a count: 1000, 1001, ...); ``extend``: grid extensions past an edge;
    ``halving``: successive halving over the tuning seeds (:func:`bench.tuning.halve`)."""

    metric: TuningMetric = "grad_norm"
    goal: Literal["min", "max"] = "min"
    seeds: Annotated[tuple[Seed, ...], BeforeValidator(_tuning_seeds),
                     Field(min_length=1)] = (TUNING_SEED0,)
    extend: Annotated[NonNegativeInt, Strict()] = 0
    halving: Annotated[int, Strict(), Field(ge=2)] | None = None

    def describe(self) -> str:
        return (f"the configuration with the {'lowest' if self.goal == 'min' else 'highest'} "
                f"mean final {self.metric} over tuning seeds {list(self.seeds)} (separate from "
                f"the reported seeds){self._halving()}{self._extension()}; tuning is not "
                "privacy-accounted")

    def _halving(self) -> str:
        return (f", by successive halving: every candidate runs at the first tuning seed, and "
                f"after each seed the best 1/{self.halving} (by their mean so far) run at the "
                "next" if self.halving else "")

    def _extension(self) -> str:
        return (f"; a choice on a grid edge extends the grid one step past it, up to "
                f"{self.extend} times" if self.extend else "")


B = TypeVar("B", bound="Block")


class Block(BaseModel):
    """A mapping in the file: unknown keys are refused with the allowed ones listed; an
    empty value (``privacy:``) is an empty mapping."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _a_mapping_of_known_keys(cls, data: Any) -> Any:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a mapping, got {type(data).__name__} {show(data)}")
        for key in data:
            if key not in cls.model_fields:
                raise ValueError(f"unknown key {show(key)}"
                                 f"{did_you_mean(str(key), cls.model_fields)} "
                                 f"(allowed: {', '.join(cls.model_fields)})")
        return data


Backend = Annotated[BackendSpec, BeforeValidator(_backend,
                                                json_schema_input_type=str | dict[str, str])]
Backends = Annotated[list[Backend], one_or_list(Backend), MinLen(1), Field(
    description="a backend name (" + ", ".join(BACKENDS) + ") or a mapping of name, device, "
    "dtype, noise; or a non-empty list of them")]
Values = Annotated[list[Any], one_or_list(Any), MinLen(1)]
Grid = dict[str, Values]  # param -> its values (sweep, tune)
Label = Annotated[str, MaxLen(MAX_NAME), AfterValidator(_printable),
                  Field(description=f"a printable string of at most {MAX_NAME} characters")]
Epsilon = Annotated[float, Gt(0)]
Calibration = Annotated[str, AfterValidator(lambda c: _one_of(c, CALIBRATIONS, "calibration")),
                        Field(json_schema_extra={"enum": list(CALIBRATIONS)})]
SuiteName = Annotated[str, Field(pattern=SUITE_NAME.pattern)]
ModuleName = Annotated[str, Field(pattern=MODULE_NAME.pattern)]


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


class Privacy(Block):
    """The privacy targets: every ε × every calibration (``.inf``: not private), or a
    noise multiplier ``sigma`` instead of calibration."""

    epsilon: Annotated[list[Epsilon], BeforeValidator(_epsilons, json_schema_input_type=(
        Epsilon | list[Epsilon])), MinLen(1), Field(json_schema_extra=_no_default)] = [math.inf]
    delta: Annotated[float, Gt(0), Lt(1), Field(description="in (0, 1)")] = 1e-5
    calibration: Annotated[list[Calibration], one_or_list(Calibration), MinLen(1)] = ["pld"]
    sigma: Annotated[float, Gt(0)] | None = None


class ProblemEntry(Block):
    """A registered problem, its params, a sweep over them (param: values) and its
    backends (default: the top-level ``backend``, else numpy)."""

    name: str
    params: dict[str, Any] = {}
    sweep: Grid = {}
    backend: Backends | None = None


class AlgorithmEntry(Block):
    """A registered algorithm, its label, params, a sweep and a tuning grid over them
    (param: values), and privacy keys over the top-level block."""

    name: str
    label: Label = ""
    params: dict[str, Any] = {}
    sweep: Grid = {}
    tune: Grid = {}
    privacy: Privacy | None = None


class ExperimentFile(Block):
    """An experiment file (README, Experiment files)."""

    suite: Annotated[str, Field(pattern=SUITE_NAME.pattern, description=(
        "a name of at most 100 letters, digits, '_', '-' or '.'"))]
    description: Annotated[str | None, Field(description="a string")] = None
    paper: Annotated[str | None, Field(description="a string")] = None
    scale: Annotated[str | None, Field(description="a string")] = None
    role: Annotated[list[SuiteName], one_or_list(SuiteName), MinLen(1), AfterValidator(_unique),
                    Field(description="a name or a non-empty list of names")] = []
    plugins: Annotated[list[ModuleName], one_or_list(ModuleName), MinLen(1),
                       AfterValidator(_unique), Field(
        description="a module name or a non-empty list of module names")] = []
    seeds: Annotated[Annotated[int, Ge(1), Lt(INT_LIMIT)] | Annotated[list[Seed], MinLen(1)],
                     Field(description="a count or a list of integers in [0, 2^63)")] = 1
    privacy: Privacy = Privacy()
    backend: Backends | None = None
    eval: EvalSpec = EvalSpec()
    tuning: TuningRule | None = None
    problems: Annotated[list[ProblemEntry], MinLen(1),
                        Field(description="a non-empty list of entries")]
    algorithms: Annotated[list[AlgorithmEntry], MinLen(1),
                          Field(description="a non-empty list of entries")]

    def seed_list(self) -> list[int]:
        """The run seeds: a count n means 0, ..., n − 1."""
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def seed_count(self) -> int:
        return self.seeds if isinstance(self.seeds, int) else len(self.seeds)


TOP_KEYS = tuple(ExperimentFile.model_fields)
ENTRY_KEYS = {"problems": tuple(ProblemEntry.model_fields),
              "algorithms": tuple(AlgorithmEntry.model_fields)}


def validate(data: Any, source: Source) -> ExperimentFile:
    """The validated, normalised model of a loaded YAML document (errors: one line each)."""
    if data is None:
        raise SpecError(f"{source.name}: empty; an experiment needs suite, problems and "
                        "algorithms (see README, Experiment files)")
    return checked(ExperimentFile, data, source)


def checked(model: type[B], data: Any, source: Source) -> B:
    """``data`` validated as ``model``; the first error as a :class:`SpecError` line naming
    the file, the line and column, and the place."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = first_error(exc)
        if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            *parent, key = error["loc"]
            parts, _ = locate(model, tuple(parent), data)
            allowed = _fields(model, tuple(parent))
            raise SpecError(f"{source.at(*parts)}: {place(parts) or 'top level'}: unknown key "
                            f"{show(key)}{did_you_mean(str(key), allowed)} "
                            f"(allowed: {', '.join(allowed)})") from None
        parts, described = locate(model, error["loc"], data)
        where = (f"'{parts[0]}'" if described and len(parts) == 1 and model is ExperimentFile
                 else place(parts))
        spot = f"{source.at(*parts)}: {where}" if where else source.name
        raise SpecError(sentence(spot, error, described)) from None


def privacy_target(epsilon: float, delta: float, calibration: str,
                   sigma: float | None) -> PrivacyTarget:
    """A command line's privacy target, checked as a file's ``privacy`` block."""
    p = checked(Privacy, {"epsilon": epsilon, "delta": delta, "calibration": calibration,
                          "sigma": sigma}, Source("privacy"))
    return PrivacyTarget(p.epsilon[0], p.delta, p.calibration[0], p.sigma)


def locate(model: type, loc: tuple[str | int, ...], data: Any
           ) -> tuple[list[str | int], str | None]:
    """The path in the file (``data``) of an error's ``loc`` and the description of the
    field it is in (None if that field has none, or the error is inside an entry of a list
    of blocks). Paths under a described field stop at the field; a value given alone where
    a list is allowed has no index."""
    parts: list[str | int] = []
    described, kept = None, 0
    current: Any = model
    for part in loc:
        fields: dict[str, FieldInfo] = getattr(current, "__pydantic_fields__", {})
        if isinstance(part, str) and part in fields:
            info = fields[part]
            described, kept = info.description, len(parts) + 1
            current = _inner(info.annotation)
        elif not ((isinstance(part, int) and isinstance(data, list))
                  or (isinstance(part, str) and current is dict)):
            continue  # a union arm's tag, or the index of a value given alone
        parts.append(part)
        if isinstance(part, int) and hasattr(current, "__pydantic_fields__"):
            described = None  # inside an entry of a list: the entry's own error speaks
        data = data.get(part) if isinstance(data, Mapping) else (
            data[part] if isinstance(data, list) and isinstance(part, int)
            and part < len(data) else None)
    return (parts[:kept] if described else parts), described


def _fields(model: type, loc: tuple[str | int, ...]) -> list[str]:
    """The keys of the block at ``loc``."""
    current: Any = model
    for part in loc:
        fields = getattr(current, "__pydantic_fields__", {})
        if part in fields:
            current = _inner(fields[part].annotation)
    return list(getattr(current, "__pydantic_fields__", {}))


def _inner(annotation: Any) -> Any:
    """The model (or ``dict``) an annotation holds, through lists, unions and Annotated."""
    origin = typing.get_origin(annotation)
    if origin is dict:
        return dict
    if origin in (list, tuple, typing.Union, types.UnionType, Annotated):
        for arg in typing.get_args(annotation):
            inner = _inner(arg)
            if inner is not None:
                return inner
        return None
    return annotation if hasattr(annotation, "__pydantic_fields__") else None


# -- JSON schema ----------------------------------------------------------------------

def json_schema() -> dict[str, Any]:
    """The JSON schema of experiment files, with each registered component's params (by
    ``name``: ``if``/``then``) for editors' completion and checks."""
    schema = ExperimentFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    for entry, registry in (("ProblemEntry", PROBLEMS), ("AlgorithmEntry", ALGORITHMS)):
        classes: Mapping[str, Any] = registry.plugins()
        block = schema["$defs"][entry]
        block["properties"]["name"] = {"anyOf": [{"enum": sorted(classes)}, {"type": "string"}],
                                       "description": "a registered name (saddlebench list)"}
        block["allOf"] = [{"if": {"properties": {"name": {"const": name}}, "required": ["name"]},
                           "then": {"properties": _component(cls.Params, block["properties"])}}
                          for name, cls in sorted(classes.items())]
    return schema


def _component(params_cls: type, properties: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` (each field's schema), ``sweep`` and ``tune`` (one value or a list)."""
    fields = TypeAdapter(params_cls).json_schema()["properties"]
    grid = {"type": "object", "additionalProperties": False,
            "properties": {k: {"anyOf": [v, {"type": "array", "items": v, "minItems": 1}]}
                           for k, v in fields.items()}}
    out = {"params": {"type": "object", "additionalProperties": False, "properties": fields},
           "sweep": grid}
    if "tune" in properties:
        out["tune"] = grid
    return out
