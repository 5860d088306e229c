"""Experiment files: a validated YAML document expanded into the grid of
:class:`~bench.spec.RunSpec` s it names.

Every error names the file, the place in it, the bad key or value and what is allowed. The
grid is problems × their sweeps × algorithms × their sweeps × ε × calibration × backends ×
seeds (a non-private algorithm runs once, at ε = ∞); a tuned entry becomes
:class:`~bench.spec.TuningGroup` s. :func:`grid_size` counts the runs before expanding them.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from algorithms.base import ALGORITHMS, CALIBRATIONS, PrivacyTarget, get_algorithm
from bench.spec import (
    INT_LIMIT,
    MAX_NAME,
    MAX_POINTS,
    EvalSpec,
    Experiment,
    RunSpec,
    SpecError,
    TuningGroup,
    TuningRule,
    component,
    short,
    show,
)
from bench.yamlio import read_yaml
from problems.backend import BackendSpec, unavailable
from problems.base import get_problem
from problems.registry import PluginError, import_plugins

EXPERIMENTS = Path(__file__).resolve().parent / "experiments"  # <paper>/<scale>/*.yaml
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_RUNS = 10_000  # default grid size above which the CLI asks for confirmation
MAX_RUNS_VAR = "SADDLEBENCH_MAX_RUNS"

TOP_KEYS = ("suite", "description", "paper", "scale", "role", "plugins", "seeds", "privacy",
            "backend", "eval", "tuning", "problems", "algorithms")
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
                        f"{show(value)}")
    return dict(value)


def _check_keys(d: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    allowed = tuple(allowed)
    for key in d:
        if key not in allowed:
            raise SpecError(f"{where}: unknown key {show(key)} (allowed: {', '.join(allowed)})")


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
        raise SpecError(f"{where}: expected a number, got {show(value)}") from None


def _privacies(raw: Any, where: str) -> list[PrivacyTarget]:
    """Expand a privacy block (lists of ε / calibration) into single targets."""
    d = _mapping(raw, where)
    _check_keys(d, PRIVACY_KEYS, where)
    eps = [_number(e, f"{where}.epsilon")
           for e in _values(d.get("epsilon", math.inf), f"{where}.epsilon")]
    cals = _values(d.get("calibration", "pld"), f"{where}.calibration")
    for cal in cals:
        if cal not in CALIBRATIONS:
            raise SpecError(f"{where}.calibration: unknown calibration {show(cal)} "
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
            raise SpecError(f"{spot}: {short(exc)}{_device_hint(fields_)}") from None
    return out


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
        problem = unavailable(backend.name, backend.device)
        if problem:
            raise SpecError(f"{experiment.path or experiment.suite}: backend {backend.name} "
                            f"on {backend.device}: {problem}")


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
                        f"got {show(raw)}")
    if not all(0 <= s < INT_LIMIT for s in seeds):
        raise SpecError(f"{where}: seeds must be in [0, 2^63), got {show(raw)}")
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
                        f"got {show(points)}")
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
                        f"'_', '-' or '.', got {show(suite)}")
    for key in ("description", "paper", "scale"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise SpecError(f"{source}: '{key}' must be a string, got {show(doc[key])}")
    for key in ("problems", "algorithms"):
        if not isinstance(doc.get(key), list) or not doc[key]:
            raise SpecError(f"{source}: '{key}' must be a non-empty list of entries")
    roles = _roles(doc.get("role"), source)
    plugins = _plugins(doc.get("plugins"), source)
    size = grid_size(doc, source)
    if size.total > max_runs:
        raise GridTooLarge(source, size, max_runs)
    seeds = _seeds(doc.get("seeds"), f"{source}: seeds")
    privacy_default = _mapping(doc.get("privacy"), f"{source}: privacy")
    _privacies(privacy_default, f"{source}: privacy")  # its errors are reported here
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
                            f"characters, got {show(label)}")
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
                runs = [RunSpec(prob, c, target, backend, 0, evaluation, label,
                                plugins=plugins) for c in cands]
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


def _names(value: Any, source: str, key: str, pattern: re.Pattern[str], what: str
           ) -> tuple[str, ...]:
    """``key:`` — one ``what`` or a non-empty list of them, each matching ``pattern``
    (duplicates dropped, order kept)."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and pattern.match(n) for n in names):
        raise SpecError(f"{source}: '{key}' must be a {what} or a non-empty list of {what}s, "
                        f"got {show(value)}")
    return tuple(dict.fromkeys(names))


def _plugins(value: Any, source: str) -> tuple[str, ...]:
    """``plugins:`` — modules of outside code to import (registering their algorithms and
    problems) before the file is read; every run imports them again where it executes."""
    names = _names(value, source, "plugins", MODULE_NAME, "module name")
    try:
        import_plugins(names)
    except PluginError as exc:
        raise SpecError(f"{source}: {exc}") from None
    return names


def _roles(value: Any, source: str) -> tuple[str, ...]:
    """``role:`` — one name or a list of names of the parts of its paper's page the suite
    feeds (declared by the paper's ``Paper.roles``; checked by the paper tests)."""
    return _names(value, source, "role", SUITE_NAME, "name")


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
        raise SpecError(f"${MAX_RUNS_VAR} must be a positive integer, got {show(raw)}; "
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


def load_experiment(path: str | Path, max_runs: float = math.inf,
                    overrides: Iterable[str] = ()) -> Experiment:
    """Read and validate an experiment YAML file, with ``overrides`` (``KEY=VALUE``, see
    :func:`override`) applied first (``max_runs``: see :func:`parse_experiment`)."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"experiment file not found: {p}")
    doc = read_yaml(p)
    for item in overrides:
        doc = override(doc, item)
    return parse_experiment(doc, str(p), p, max_runs)


def override(doc: Any, item: str) -> dict[str, Any]:
    """``doc`` with one command-line override applied: ``PATH=VALUE``, VALUE read as YAML.
    PATH is a dotted key (``seeds``, ``privacy.epsilon``); in ``problems`` and
    ``algorithms`` the second part picks the entries by name, label or index
    (``algorithms.dp_sgd.lr``), and a key that is not an entry key is a param
    (``algorithms.dp_sgd.lr`` = ``algorithms.dp_sgd.params.lr``). The result is validated
    like the file."""
    where = f"--set {item[:80]}"
    path, sep, raw = item.partition("=")
    keys = path.split(".")
    if not sep or not all(keys):
        raise SpecError(f"{where}: expected PATH=VALUE, e.g. seeds=5 or algorithms.dp_sgd.lr=0.05")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise SpecError(f"{where}: the value is not valid YAML") from None
    doc = copy.deepcopy(_mapping(doc, where))
    if keys[0] not in TOP_KEYS:
        raise SpecError(f"{where}: unknown key {keys[0]!r} (allowed: {', '.join(TOP_KEYS)})")
    if keys[0] in ENTRY_KEYS and len(keys) > 2:
        entries = [e for i, e in enumerate(doc.get(keys[0]) or []) if isinstance(e, dict)
                   and keys[1] in (str(i), e.get("name"), e.get("label"))]
        if not entries:
            raise SpecError(f"{where}: no {keys[0]} entry named, labelled or numbered "
                            f"{keys[1]!r}")
        rest = keys[2:] if keys[2] in ENTRY_KEYS[keys[0]] else ["params", *keys[2:]]
        for entry in entries:
            _set(entry, rest, value, where)
    else:
        _set(doc, keys, value, where)
    return doc


def _set(node: dict[str, Any], keys: list[str], value: Any, where: str) -> None:
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise SpecError(f"{where}: {key!r} is not a mapping")
        node = child
    node[keys[-1]] = value
