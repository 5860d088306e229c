"""RunSpec (one run, hashable digest) and experiment files (YAML → grid of RunSpecs).

An experiment file is validated on load; every error names the file, the place in it,
the bad key or value and what is allowed. The grid is
problems × their sweeps × algorithms × their sweeps × ε × calibration × backends × seeds
(a non-private algorithm runs once, at ε = ∞). Params are completed with their defaults
before hashing, so ``{}`` and the explicit defaults give the same run id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import itertools
import json
import math
import os
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from algorithms.base import ALGORITHMS, CALIBRATIONS, PrivacyTarget, get_algorithm
from problems.backend import BackendSpec
from problems.base import get_problem

SCHEMA = 1
METRICS = ("loss", "grad_norm", "lambda_min", "test", "train")
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_NAME = 100  # characters of a name or label
MAX_FILE_BYTES = 1_000_000  # of an experiment file
MAX_NODES = 100_000  # YAML nodes of an experiment file, with aliases expanded
MAX_POINTS = 100_000  # evaluation points of a run
MAX_RUNS = 10_000  # default grid size above which the CLI asks for confirmation
MAX_RUNS_VAR = "SADDLEBENCH_MAX_RUNS"
INT_LIMIT = 2**63  # integers (seeds, steps, sizes) must fit a signed 64-bit integer


class SpecError(ValueError):
    """An invalid experiment file or run specification."""


def _show(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


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
        return body

    @property
    def digest(self) -> str:
        """Run id: hash of the canonical spec (labels included: they are stored with it)."""
        body = self.to_dict()
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
            raise SpecError(f"{where}: unknown parameter {_show(key)} "
                            f"(allowed: {', '.join(names)})")
        if isinstance(value, int) and abs(value) >= INT_LIMIT:
            raise SpecError(f"{where}: parameter {key!r} = {value:.3g} is too large "
                            "(integers must be below 2^63)")
        ok, coerced = _type_ok(value, hints[key])
        if not ok:
            raise SpecError(f"{where}: parameter {key!r} must be {_type_name(hints[key])}"
                            f"{' (finite)' if 'float' in _type_name(hints[key]) else ''}, "
                            f"got {_show(value)}")
        kwargs[key] = coerced
    try:
        return params_cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise SpecError(f"{where}: {_short(exc)}") from None


def component(kind: str, name: Any, params: Mapping[str, Any] | None, where: str) -> ComponentSpec:
    """A validated :class:`ComponentSpec` with its params completed by the defaults."""
    if not isinstance(name, str):
        raise SpecError(f"{where}: 'name' must be a string, got {_show(name)}")
    if len(name) > MAX_NAME or not name.isprintable():
        raise SpecError(f"{where}: 'name' {_show(name, 40)} is not a {kind} name; "
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


# -- experiment files -----------------------------------------------------------------

TOP_KEYS = ("suite", "description", "paper", "scale", "role", "seeds", "privacy", "backend", "eval",
            "tuning", "problems", "algorithms")
ENTRY_KEYS = {"problems": ("name", "params", "sweep", "backend"),
              "algorithms": ("name", "label", "params", "sweep", "tune", "privacy")}
TUNING_KEYS = ("metric", "goal", "seeds", "extend")
TUNING_SEED0 = 1000  # a count of tuning seeds means 1000, 1001, ...: apart from run seeds
TUNING_METRICS = ("loss", "grad_norm", "lambda_min", "test_acc", "test_loss", "train_acc")
PRIVACY_KEYS = ("epsilon", "delta", "calibration", "sigma")
EVAL_KEYS = ("points", "metrics", "final", "schedule")


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping, got {type(value).__name__} "
                        f"{_show(value)}")
    return dict(value)


def _check_keys(d: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    allowed = tuple(allowed)
    for key in d:
        if key not in allowed:
            raise SpecError(f"{where}: unknown key {_show(key)} (allowed: {', '.join(allowed)})")


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _values(value: Any, where: str) -> list[Any]:
    """:func:`_as_list`, refusing an empty list (it would silently drop the whole grid)."""
    values = _as_list(value)
    if not values:
        raise SpecError(f"{where}: empty list; give at least one value")
    return values


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise SpecError(f"{where}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise SpecError(f"{where}: expected a number, got {_show(value)}") from None


def _privacies(raw: Any, where: str) -> list[PrivacyTarget]:
    """Expand a privacy block (lists of ε / calibration) into single targets."""
    d = _mapping(raw, where)
    _check_keys(d, PRIVACY_KEYS, where)
    eps = [_number(e, f"{where}.epsilon")
           for e in _values(d.get("epsilon", math.inf), f"{where}.epsilon")]
    cals = _values(d.get("calibration", "pld"), f"{where}.calibration")
    for cal in cals:
        if cal not in CALIBRATIONS:
            raise SpecError(f"{where}.calibration: unknown calibration {_show(cal)} "
                            f"(choose {', '.join(CALIBRATIONS)})")
    delta = _number(d.get("delta", 1e-5), f"{where}.delta")
    sigma = d.get("sigma")
    sigma = None if sigma is None else _number(sigma, f"{where}.sigma")
    try:
        return [PrivacyTarget(epsilon=e, delta=delta, calibration=c, sigma=sigma)
                for e, c in itertools.product(eps, cals)]
    except ValueError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _backends(raw: Any, where: str) -> list[BackendSpec]:
    out = []
    for i, item in enumerate(_values(raw if raw is not None else "numpy", where)):
        spot = f"{where}[{i}]"
        fields_ = {"name": item} if isinstance(item, str) else _mapping(item, spot)
        _check_keys(fields_, ("name", "device", "dtype", "noise"), spot)
        try:
            out.append(BackendSpec(**fields_))
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{spot}: {_short(exc)}{_device_hint(fields_)}") from None
    return out


def _short(exc: Exception) -> str:
    """An exception's message with any overlong quoted value cut."""
    return re.sub(r"'[^']{80,}'", lambda m: m.group(0)[:40] + "...'", str(exc))


def _device_hint(fields_: Mapping[str, Any]) -> str:
    """How to pick one GPU of several, for a device such as ``cuda:7``."""
    device = str(fields_.get("device", ""))
    if re.fullmatch(r"cuda:\d+", device):
        return (f" (to run on GPU {device[5:]}, set CUDA_VISIBLE_DEVICES={device[5:]} "
                "and use device: cuda)")
    return ""


def check_backends(experiment: Experiment) -> None:
    """Refuse, before anything runs, a backend that is not installed here or a CUDA
    device this machine does not have (a run on it could only fail)."""
    specs = [*experiment.specs, *(c for g in experiment.groups for c in g.candidates)]
    for backend in dict.fromkeys(s.backend for s in specs):
        problem = _backend_problem(backend)
        if problem:
            raise SpecError(f"{experiment.path or experiment.suite}: backend {backend.name} "
                            f"on {backend.device}: {problem}")


def _backend_problem(backend: BackendSpec) -> str | None:
    """Why ``backend`` cannot run on this machine (None: it can)."""
    if backend.name == "numpy":
        return None
    if importlib.util.find_spec(backend.name) is None:
        return (f"{backend.name} is not installed; pip install 'saddlebench[{backend.name}]', "
                "or choose another backend")
    if backend.device != "cuda":
        return None
    module = importlib.import_module(backend.name)
    try:
        found = bool(module.cuda.is_available() if backend.name == "torch"
                     else module.devices("gpu"))
    except RuntimeError:  # jax without a GPU platform
        found = False
    return None if found else (f"{backend.name} sees no CUDA GPU on this machine (devices: "
                               "cpu); set device: cpu, or run it on a machine with a GPU")


def _seeds(raw: Any, where: str) -> list[int]:
    if raw is None:
        return [0]
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 1:
            raise SpecError(f"{where}: seeds must be >= 1 (a count) or a list, got {raw}")
        return list(range(raw))
    seeds = _as_list(raw)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise SpecError(f"{where}: seeds must be a count or a list of integers, "
                        f"got {_show(raw)}")
    if not all(0 <= s < INT_LIMIT for s in seeds):
        raise SpecError(f"{where}: seeds must be in [0, 2^63), got {_show(raw)}")
    return seeds


def _sweep(base: Mapping[str, Any], raw: Any, where: str) -> list[dict[str, Any]]:
    """Cartesian product of the ``sweep`` lists over the base params."""
    sweep = _mapping(raw, where)
    if not sweep:
        return [dict(base)]
    keys = list(sweep)
    values = [_values(sweep[k], f"{where}.{k}") for k in keys]
    return [{**base, **dict(zip(keys, combo, strict=True))} for combo in itertools.product(*values)]


def _eval(raw: Any, where: str) -> EvalSpec:
    d = _mapping(raw, where)
    _check_keys(d, EVAL_KEYS, where)
    points = d.get("points", 10)
    if not isinstance(points, int) or isinstance(points, bool) or not 2 <= points <= MAX_POINTS:
        raise SpecError(f"{where}.points must be an integer in [2, {MAX_POINTS:,}], "
                        f"got {_show(points)}")
    try:
        return EvalSpec(points=points,
                        metrics=tuple(_as_list(d.get("metrics", ["loss", "grad_norm", "test"]))),
                        final=tuple(_as_list(d.get("final", []))),
                        schedule=str(d.get("schedule", "log")))
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{where}: {exc}") from None


def parse_experiment(data: Any, source: str = "<experiment>", path: Path | None = None,
                     max_runs: float = math.inf) -> Experiment:
    """Validate a loaded YAML document and expand its grid; a grid of more than
    ``max_runs`` runs raises :class:`GridTooLarge` before it is expanded."""
    if data is None:
        raise SpecError(f"{source}: empty; an experiment needs suite, problems and algorithms "
                        "(see README, Experiment files)")
    doc = _mapping(data, source)
    _check_keys(doc, TOP_KEYS, source)
    suite = doc.get("suite")
    if not isinstance(suite, str) or not SUITE_NAME.match(suite):
        raise SpecError(f"{source}: 'suite' must be a name of at most 100 letters, digits, "
                        f"'_', '-' or '.', got {_show(suite)}")
    for key in ("description", "paper", "scale"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise SpecError(f"{source}: '{key}' must be a string, got {_show(doc[key])}")
    for key in ("problems", "algorithms"):
        if not isinstance(doc.get(key), list) or not doc[key]:
            raise SpecError(f"{source}: '{key}' must be a non-empty list of entries")
    roles = _roles(doc.get("role"), source)
    size = grid_size(doc, source)
    if size.total > max_runs:
        raise GridTooLarge(source, size, max_runs)
    seeds = _seeds(doc.get("seeds"), f"{source}: seeds")
    privacy_default = _mapping(doc.get("privacy"), f"{source}: privacy")
    backends_default = doc.get("backend")
    evaluation = _eval(doc.get("eval"), f"{source}: eval")

    problems = []
    for i, entry in enumerate(doc["problems"]):
        where = f"{source}: problems[{i}]"
        e = _mapping(entry, where)
        _check_keys(e, ENTRY_KEYS["problems"], where)
        backends = _backends(e.get("backend", backends_default), f"{where}.backend")
        base = _mapping(e.get("params"), f"{where}.params")
        for params in _sweep(base, e.get("sweep"), f"{where}.sweep"):
            problems.append((component("problem", e.get("name"), params, where), backends))

    algorithms = []
    for i, entry in enumerate(doc["algorithms"]):
        where = f"{source}: algorithms[{i}]"
        e = _mapping(entry, where)
        _check_keys(e, ENTRY_KEYS["algorithms"], where)
        privacy = {**privacy_default, **_mapping(e.get("privacy"), f"{where}.privacy")}
        base = _mapping(e.get("params"), f"{where}.params")
        label = e.get("label", "")
        if not isinstance(label, str) or len(label) > MAX_NAME or not label.isprintable():
            raise SpecError(f"{where}.label: expected a printable string of at most {MAX_NAME} "
                            f"characters, got {_show(label)}")
        tune = _mapping(e.get("tune"), f"{where}.tune")
        if tune and "tuning" not in doc:
            raise SpecError(f"{where}: 'tune' needs a top-level 'tuning' block "
                            f"(allowed keys: {', '.join(TUNING_KEYS)})")
        for params in _sweep(base, e.get("sweep"), f"{where}.sweep"):
            candidates = [component("algorithm", e.get("name"), grid, where)
                          for grid in _sweep(params, tune, f"{where}.tune")]
            targets = _privacies(privacy, f"{where}.privacy")
            private = get_algorithm(candidates[0].name).private
            if not private:
                targets = [PrivacyTarget(delta=targets[0].delta)]
            if private and any(math.isinf(t.epsilon) and t.sigma is None for t in targets):
                raise SpecError(f"{where}: {candidates[0].name} is private; give "
                                "privacy.epsilon or sigma")
            algorithms.append((candidates, label, targets, bool(tune)))

    specs, skipped, groups = [], [], []
    for (prob, backends), (cands, label, targets, tuned) in itertools.product(problems,
                                                                             algorithms):
        supported = get_problem(prob.name).backends
        if get_algorithm(cands[0].name).minimax and not get_problem(prob.name).minimax:
            skipped.append(f"{cands[0].name} is a minimax algorithm; {prob.name} is not a "
                           "minimax problem, so it is not run there")
            continue
        for backend in backends:
            if backend.name not in supported:
                skipped.append(f"{prob.name} has no {backend.name} backend "
                               f"(it has {', '.join(supported)}); {cands[0].name} not run there")
                continue
            for target in targets:
                runs = [RunSpec(prob, c, target, backend, 0, evaluation, label) for c in cands]
                if tuned:
                    groups.append(TuningGroup(_group_key(runs[0]), tuple(runs), tuple(seeds)))
                else:
                    specs += [dataclasses.replace(runs[0], seed=s) for s in seeds]
    unique = list(dict.fromkeys(specs))
    rule = _tuning(doc.get("tuning"), f"{source}: tuning") if "tuning" in doc else None
    if rule and set(rule.seeds) & set(seeds):
        raise SpecError(f"{source}: tuning.seeds {sorted(set(rule.seeds) & set(seeds))} are also "
                        "run seeds; tune on separate seeds (a count gives 1000, 1001, ...)")
    return Experiment(suite=suite, path=path, specs=unique,
                      description=str(doc.get("description", "")), paper=doc.get("paper"),
                      scale=doc.get("scale"), roles=roles, skipped=sorted(set(skipped)),
                      tuning=rule, groups=groups)


def _roles(value: Any, source: str) -> tuple[str, ...]:
    """``role:`` — one name or a list of names of the parts of its paper's page the suite
    feeds (declared by the paper's ``Paper.roles``; checked by the paper tests)."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and SUITE_NAME.match(n) for n in names):
        raise SpecError(f"{source}: 'role' must be a name or a non-empty list of names, got "
                        f"{_show(value)}")
    return tuple(dict.fromkeys(names))


def _group_key(spec: RunSpec) -> str:
    """A readable name of a tuning group: problem (with its non-default params), entry,
    privacy target, backend."""
    defaults = dataclasses.asdict(get_problem(spec.problem.name).Params())
    changed = ",".join(f"{k}={v}" for k, v in spec.problem.params.items() if defaults[k] != v)
    eps = "nonprivate" if math.isinf(spec.privacy.epsilon) else f"eps={spec.privacy.epsilon:g}"
    return (f"{spec.problem.name}[{changed}]/{spec.display}/{eps}/{spec.privacy.calibration}/"
            f"{spec.backend.name}")


def _tuning(raw: Any, where: str) -> TuningRule:
    d = _mapping(raw, where)
    _check_keys(d, TUNING_KEYS, where)
    metric = d.get("metric", "grad_norm")
    if metric not in TUNING_METRICS:
        raise SpecError(f"{where}.metric: unknown metric {metric!r} "
                        f"(choose {', '.join(TUNING_METRICS)})")
    raw_seeds = d.get("seeds", 1)
    seeds = (list(range(TUNING_SEED0, TUNING_SEED0 + raw_seeds)) if isinstance(raw_seeds, int)
             else _seeds(raw_seeds, f"{where}.seeds"))
    try:
        return TuningRule(metric=metric, goal=str(d.get("goal", "min")), seeds=tuple(seeds),
                          extend=d.get("extend", 0))
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None


# -- grid size ------------------------------------------------------------------------

class GridTooLarge(SpecError):
    """An experiment expands to more runs than allowed without confirmation."""

    def __init__(self, source: str, size: GridSize, limit: float) -> None:
        super().__init__(f"{source}: the grid has {size.describe()}, more than the limit of "
                         f"{limit:,.0f}; pass --yes to run it anyway, raise --max-runs (or "
                         f"${MAX_RUNS_VAR}), or shrink the sweeps")
        self.size = size
        self.limit = limit


@dataclass(frozen=True)
class GridSize:
    """The runs an experiment expands to, counted from the file without expanding it: an
    upper bound (duplicates and skipped problem-algorithm pairs are not subtracted).

    ``problems``: problem variants (each entry's sweep × backends); ``entries``: per
    algorithm entry (sweep × privacy targets, tune grid or None, its name); the runs of an
    entry per problem variant are sweep × privacy × seeds, plus sweep × privacy × tune ×
    tuning seeds for a tuned one."""

    problems: int
    entries: tuple[tuple[str, int, int | None], ...]
    seeds: int
    tuning_seeds: int

    def per_problem(self) -> int:
        return sum(n * (self.seeds + (tune or 0) * self.tuning_seeds)
                   for _, n, tune in self.entries)

    @property
    def total(self) -> int:
        return self.problems * self.per_problem()

    def describe(self) -> str:
        parts = [f"{name} {n:,}" + (f" (tune grid {tune:,} × {self.tuning_seeds} tuning seeds)"
                                    if tune else "")
                 for name, n, tune in self.entries]
        return (f"{self.total:,} runs = {self.problems:,} problem variants (sweeps × backends) "
                f"× {self.per_problem():,} runs each ({self.seeds:,} seeds × algorithm "
                f"variants, sweeps × ε × calibrations: {', '.join(parts)})")


def grid_limit(given: int | None = None) -> int:
    """The grid size above which the CLI asks for confirmation: ``given`` (--max-runs),
    else ``$SADDLEBENCH_MAX_RUNS``, else 10,000."""
    if given is not None:
        if given < 1:
            raise SpecError(f"--max-runs must be >= 1, got {given}")
        return given
    raw = os.environ.get(MAX_RUNS_VAR)
    if raw is None:
        return MAX_RUNS
    if not raw.isdigit() or int(raw) < 1:
        raise SpecError(f"${MAX_RUNS_VAR} must be a positive integer, got {_show(raw)}; "
                        "unset it for the default of 10,000")
    return int(raw)


def grid_size(doc: Mapping[str, Any], source: str) -> GridSize:
    """Count the runs of a validated top level (see :class:`GridSize`)."""
    problems = 0
    for i, entry in enumerate(doc["problems"]):
        e = _mapping(entry, f"{source}: problems[{i}]")
        backends = e.get("backend", doc.get("backend"))
        problems += (_combinations(e.get("sweep"), f"{source}: problems[{i}].sweep")
                     * len(_as_list(backends if backends is not None else "numpy")))
    privacy = _mapping(doc.get("privacy"), f"{source}: privacy")
    entries = []
    for i, entry in enumerate(doc["algorithms"]):
        where = f"{source}: algorithms[{i}]"
        e = _mapping(entry, where)
        name = e.get("name")
        targets = {**privacy, **_mapping(e.get("privacy"), f"{where}.privacy")}
        private = not isinstance(name, str) or name not in ALGORITHMS or ALGORITHMS[name].private
        n = _combinations(e.get("sweep"), f"{where}.sweep") * (
            len(_as_list(targets.get("epsilon"))) * len(_as_list(targets.get("calibration")))
            if private else 1)
        tune = _combinations(e.get("tune"), f"{where}.tune") if e.get("tune") else None
        entries.append((str(name)[:MAX_NAME], n, tune))
    raw_seeds, raw_tuning = doc.get("seeds", 1), _mapping(doc.get("tuning"), source)
    return GridSize(problems, tuple(entries), _count(raw_seeds), _count(raw_tuning.get("seeds", 1)))


def _combinations(raw: Any, where: str) -> int:
    """The number of parameter combinations of a ``sweep`` or ``tune`` block."""
    return math.prod(len(_as_list(v)) for v in _mapping(raw, where).values())


def _count(seeds: Any) -> int:
    """How many seeds a count or a list names."""
    return seeds if isinstance(seeds, int) and not isinstance(seeds, bool) else len(_as_list(seeds))


def load_experiment(path: str | Path, max_runs: float = math.inf) -> Experiment:
    """Read and validate an experiment YAML file (``max_runs``: see :func:`parse_experiment`)."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"experiment file not found: {p}")
    return parse_experiment(read_yaml(p), str(p), p, max_runs)


def read_yaml(p: Path) -> Any:
    """The YAML document in ``p``, refusing what PyYAML would take silently: files over
    1 MB, text that is not UTF-8, duplicate keys, and aliases that expand to more than
    100,000 nodes (a "billion laughs" bomb)."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SpecError(f"{p}: cannot read it ({exc.strerror}); check its permissions") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"{p}: {len(raw):,} bytes, more than an experiment file may have "
                        f"({MAX_FILE_BYTES:,}); split it into several files")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, set()) > MAX_NODES:
            raise SpecError(f"{p}: its aliases expand to more than {MAX_NODES:,} YAML nodes "
                            "(or refer to themselves); write the values out instead")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = (" ".join(filter(None, (getattr(exc, "context", None),
                                         getattr(exc, "problem", None))))
                   or str(exc).splitlines()[0])
        raise SpecError(f"{p}:{place}: malformed YAML: {problem}") from None
    except RecursionError:
        raise SpecError(f"{p}: nested too deeply to be an experiment file") from None
    finally:
        loader.dispose()


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys (it would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:  # unhashable: the base class says so
                continue
            if earlier is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {_show(key)} (first at line "
                    f"{earlier.start_mark.line + 1}); keep one of them", key_node.start_mark)
        return super().construct_mapping(node, deep)


def _expanded_size(node: yaml.Node, memo: dict[int, int], active: set[int]) -> int:
    """The number of nodes under ``node`` with every alias expanded (capped past
    :data:`MAX_NODES`); a recursive alias counts as too many."""
    if id(node) in memo:
        return memo[id(node)]
    if id(node) in active:
        return MAX_NODES + 1
    active.add(id(node))
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    total = 1
    for child in children:
        total += _expanded_size(child, memo, active)
        if total > MAX_NODES:
            break
    active.discard(id(node))
    memo[id(node)] = total
    return total
