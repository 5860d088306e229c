"""Experiment files: a YAML document validated as one model (:mod:`bench.model`) and
expanded into the grid of :class:`~bench.spec.RunSpec` s it names.

Every error names the file, the place in it, the bad key or value and what is allowed. The
grid is problems × their sweeps × algorithms × their sweeps × ε × calibration × backends ×
seeds (a non-private algorithm runs once, at ε = ∞); a tuned entry becomes
:class:`~bench.spec.TuningGroup` s. :func:`grid_size` counts the runs of the same model
before they are expanded.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from algorithms.base import ALGORITHMS, PrivacyTarget
from bench.errors import Source, SpecError, YamlPath, show
from bench.model import (
    ENTRY_KEYS,
    MAX_NAME,
    TOP_KEYS,
    AlgorithmEntry,
    ExperimentFile,
    Privacy,
    ProblemEntry,
    validate,
)
from bench.spec import (
    ComponentSpec,
    Experiment,
    RunSpec,
    TuningGroup,
    TuningRule,
    check_value,
    component,
    component_class,
    instantiate_params,
)
from bench.yamlio import read_yaml, yaml_value
from problems.backend import BackendSpec, unavailable
from problems.base import DataSize, get_problem
from problems.registry import PluginError, did_you_mean, import_plugins

EXPERIMENTS = Path(__file__).resolve().parent / "experiments"  # <paper>/<scale>/*.yaml
#: the experiment folders each scale runs: ``standard`` is ``quick`` and the longer checks
#: of <paper>/standard/ (about an hour on one CPU machine); its page collects both
SCALES = {"quick": ("quick",), "standard": ("quick", "standard"), "paper": ("paper",)}
MAX_RUNS = 10_000  # default grid size above which the CLI asks for confirmation
MAX_RUNS_VAR = "SADDLEBENCH_MAX_RUNS"


def check_backends(experiment: Experiment) -> None:
    """Refuse, before anything runs, a backend that is not installed here or a CUDA
    device this machine does not have (a run on it could only fail)."""
    specs = [*experiment.specs, *(c for g in experiment.groups for c in g.candidates)]
    for backend in dict.fromkeys(s.backend for s in specs):
        problem = unavailable(backend.name, backend.device)
        if problem:
            raise SpecError(f"{experiment.path or experiment.suite}: backend {backend.name} "
                            f"on {backend.device}: {problem}")


def parse_experiment(data: Any, source: str = "<experiment>", path: Path | None = None,
                     max_runs: float = math.inf, marks: Mapping[YamlPath, tuple[int, int]]
                     | None = None) -> Experiment:
    """Validate a loaded YAML document and expand its grid; a grid of more than
    ``max_runs`` runs raises :class:`GridTooLarge` before it is expanded. Errors name the
    line and column of the value (``marks``: see :func:`bench.yamlio.read_yaml`)."""
    src = Source(source, marks or {})
    model = validate(data, src)
    try:
        import_plugins(model.plugins)  # they register the names the entries use
    except PluginError as exc:
        raise SpecError(f"{src.at('plugins')}: {exc}") from None
    size = grid_size(model)
    if size.total > max_runs:
        raise GridTooLarge(source, size, max_runs)
    return expand(model, src, path)


def expand(model: ExperimentFile, src: Source, path: Path | None = None) -> Experiment:
    """The runs of a validated experiment file (see the module docstring)."""
    seeds = model.seed_list()
    problems = [(spec, entry.backend or model.backend or [BackendSpec()])
                for i, entry in enumerate(model.problems)
                for spec in _problems(entry, src, ("problems", i))]
    algorithms = [variant for i, entry in enumerate(model.algorithms)
                  for variant in _variants(model, entry, src, ("algorithms", i))]
    specs, skipped, groups = [], [], []
    for (prob, backends), (cands, label, targets, tuned) in itertools.product(problems,
                                                                             algorithms):
        supported = get_problem(prob.name).backends
        if ALGORITHMS[cands[0].name].minimax and not get_problem(prob.name).minimax:
            skipped.append(f"{cands[0].name} is a minimax algorithm; {prob.name} is not a "
                           "minimax problem, so it is not run there")
            continue
        for backend in backends:
            if backend.name not in supported:
                skipped.append(f"{prob.name} has no {backend.name} backend "
                               f"(it has {', '.join(supported)}); {cands[0].name} not run there")
                continue
            for target in targets:
                runs = [RunSpec(prob, c, target, backend, 0, model.eval, label,
                                plugins=tuple(model.plugins)) for c in cands]
                if tuned:
                    groups.append(TuningGroup(_group_key(runs[0]), tuple(runs), tuple(seeds)))
                else:
                    specs += [dataclasses.replace(runs[0], seed=s) for s in seeds]
    rule = model.tuning
    if rule and set(rule.seeds) & set(seeds):
        raise SpecError(f"{src.at('tuning', 'seeds')}: tuning.seeds "
                        f"{sorted(set(rule.seeds) & set(seeds))} are also run seeds; tune on "
                        "separate seeds (a count gives 1000, 1001, ...)")
    check_sizes([*specs, *(c for g in groups for c in g.candidates)], src)
    return Experiment(suite=model.suite, path=path, specs=list(dict.fromkeys(specs)),
                      description=model.description or "", paper=model.paper,
                      scale=model.scale, roles=tuple(model.role), skipped=sorted(set(skipped)),
                      tuning=rule, groups=groups)


def check_sizes(specs: Iterable[RunSpec], src: Source) -> None:
    """Refuse a batch that cannot be drawn from its problem's data (``batch_size > n``, or
    above a client's share) before anything runs, wherever the problem knows its sizes
    without loading data (:meth:`problems.base.Problem.size`); the algorithm's own
    ``batch_size(data)`` says what fits."""
    sizes: dict[ComponentSpec, DataSize | None] = {}
    for problem, algorithm in dict.fromkeys((s.problem, s.algorithm) for s in specs):
        if problem not in sizes:
            sizes[problem] = get_problem(problem.name)(
                instantiate_params("problem", problem)).size()
        size = sizes[problem]
        if size is None:
            continue
        try:
            ALGORITHMS[algorithm.name](instantiate_params("algorithm", algorithm)).batch_size(size)
        except ValueError as exc:
            raise SpecError(f"{src.name}: {algorithm.name} on {problem.name}: {exc}; lower "
                            "the batch or give the problem more records") from None


def _checked(kind: str, entry: ProblemEntry | AlgorithmEntry, src: Source,
             at: tuple[str, int]) -> str:
    """Check each value an entry (at ``at``) gives, params and sweep and tune lists, at its
    place; the place of the entry, for errors of its combinations."""
    where = f"{src.at(*at)}: {at[0]}[{at[1]}]"
    params_cls = component_class(kind, entry.name, where).Params
    named = f"{at[0]}[{at[1]}] ({entry.name})"
    for key, value in entry.params.items():
        check_value(params_cls, key, value, f"{src.at(*at, 'params', key)}: {named}",
                    f"params.{key}")
    for block, grid in (("sweep", entry.sweep), ("tune", getattr(entry, "tune", {}))):
        for key, values in grid.items():
            for j, value in enumerate(values):
                check_value(params_cls, key, value, f"{src.at(*at, block, key, j)}: {named}",
                            f"{block}.{key}[{j}]")
    return where


def _problems(entry: ProblemEntry, src: Source, at: tuple[str, int]) -> list[ComponentSpec]:
    """A problem entry's variants: its params swept."""
    where = _checked("problem", entry, src, at)
    return [component("problem", entry.name, params, where)
            for params in _product(entry.params, entry.sweep)]


Variant = tuple[list[ComponentSpec], str, list[PrivacyTarget], bool]


def _variants(model: ExperimentFile, entry: AlgorithmEntry, src: Source,
              at: tuple[str, int]) -> list[Variant]:
    """An algorithm entry's variants (its params swept): candidates (several if tuned),
    label, privacy targets, tuned."""
    if entry.tune and model.tuning is None:
        raise SpecError(f"{src.at(*at, 'tune')}: {at[0]}[{at[1]}]: 'tune' needs a top-level "
                        "'tuning' block (allowed keys: "
                        f"{', '.join(TuningRule.__dataclass_fields__)})")
    where = _checked("algorithm", entry, src, at)
    targets = _targets(model, entry, where)
    return [([component("algorithm", entry.name, grid, where)
              for grid in _product(params, entry.tune)], entry.label, targets, bool(entry.tune))
            for params in _product(entry.params, entry.sweep)]


def _privacy(model: ExperimentFile, entry: AlgorithmEntry) -> Privacy:
    """The entry's privacy block: the top-level one with the entry's keys over it."""
    if entry.privacy is None:
        return model.privacy
    return model.privacy.model_copy(update={k: getattr(entry.privacy, k)
                                            for k in entry.privacy.model_fields_set})


def _private(name: str) -> bool:
    return name not in ALGORITHMS or ALGORITHMS[name].private


def _targets(model: ExperimentFile, entry: AlgorithmEntry, where: str) -> list[PrivacyTarget]:
    """Every ε × calibration of the entry's privacy block (a non-private algorithm: one
    target, ε = ∞)."""
    privacy = _privacy(model, entry)
    if not _private(entry.name):
        return [PrivacyTarget(delta=privacy.delta)]
    if privacy.sigma is None and any(math.isinf(eps) for eps in privacy.epsilon):
        raise SpecError(f"{where}: {entry.name} is private; give privacy.epsilon or sigma")
    return [PrivacyTarget(epsilon=eps, delta=privacy.delta, calibration=cal,
                          sigma=privacy.sigma)
            for eps, cal in itertools.product(privacy.epsilon, privacy.calibration)]


def _product(base: Mapping[str, Any], grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the ``grid`` values over the ``base`` params."""
    return [{**base, **dict(zip(grid, combo, strict=True))}
            for combo in itertools.product(*grid.values())]


def _group_key(spec: RunSpec) -> str:
    """A readable name of a tuning group: problem (with its non-default params), entry,
    privacy target, backend."""
    defaults = dataclasses.asdict(get_problem(spec.problem.name).Params())
    changed = ",".join(f"{k}={v}" for k, v in spec.problem.params.items() if defaults[k] != v)
    eps = "nonprivate" if math.isinf(spec.privacy.epsilon) else f"eps={spec.privacy.epsilon:g}"
    return (f"{spec.problem.name}[{changed}]/{spec.display}/{eps}/{spec.privacy.calibration}/"
            f"{spec.backend.name}")


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


def grid_size(model: ExperimentFile) -> GridSize:
    """Count the runs of a validated file (see :class:`GridSize`)."""
    problems = sum(_combinations(e.sweep) * len(e.backend or model.backend or [BackendSpec()])
                   for e in model.problems)
    entries = []
    for entry in model.algorithms:
        privacy = _privacy(model, entry)
        n = _combinations(entry.sweep) * (len(privacy.epsilon) * len(privacy.calibration)
                                          if _private(entry.name) else 1)
        tune = _combinations(entry.tune) if entry.tune else None
        entries.append((entry.name[:MAX_NAME], n, tune))
    tuning_seeds = len(model.tuning.seeds) if model.tuning else 1
    return GridSize(problems, tuple(entries), model.seed_count(), tuning_seeds)


def _combinations(grid: Mapping[str, list[Any]]) -> int:
    """The number of parameter combinations of a ``sweep`` or ``tune`` block."""
    return math.prod(len(values) for values in grid.values())


def load_experiment(path: str | Path, max_runs: float = math.inf,
                    overrides: Iterable[str] = ()) -> Experiment:
    """Read and validate an experiment YAML file, with ``overrides`` (``KEY=VALUE``, see
    :func:`override`) applied first (``max_runs``: see :func:`parse_experiment`)."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"experiment file not found: {p}")
    marks: dict[YamlPath, tuple[int, int]] = {}
    doc = read_yaml(p, marks)
    overrides = list(overrides)
    for item in overrides:
        doc = override(doc, item)
    return parse_experiment(doc, str(p), p, max_runs, None if overrides else marks)


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
        value = yaml_value(raw)
    except yaml.YAMLError:
        raise SpecError(f"{where}: the value is not valid YAML") from None
    if doc is not None and not isinstance(doc, dict):
        raise SpecError(f"{where}: expected a mapping, got {type(doc).__name__} {show(doc)}")
    doc = copy.deepcopy(doc or {})
    if keys[0] not in TOP_KEYS:
        raise SpecError(f"{where}: unknown key {keys[0]!r}"
                        f"{did_you_mean(keys[0], TOP_KEYS)} (allowed: {', '.join(TOP_KEYS)})")
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
