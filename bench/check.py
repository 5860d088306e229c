"""``saddlebench check``: the pre-flight of outside code, like ``benchopt test``.

A target is a registered algorithm or problem name, or a plugin (an importable module, or
an installed distribution: everything its entry points register). Each class gets

* the **conformance** checks every built-in class passes (``tests/test_conformance.py``
  calls the same functions): an algorithm plans without touching itself, returns its
  declared extras, keeps no per-run state on ``self``, and yields finite iterates of the
  right shape that move, the same ones for the same seeds, with the premise data it
  declares; a problem builds the same instance for the same seed, with a start of shape
  (d,);
* a **tiny run** through the runner (what ``saddlebench run`` executes) on each backend it
  claims that is installed: an algorithm on its audit problem, a problem under SGD (and
  DP-SGD or DP-SGDA);
* for a private algorithm, the **audit's exact checks** (L0, :func:`bench.canary.exact_checks`:
  replayed neighbours, declared sensitivities, noise and accounting).

Each failure is one line naming what broke; nothing stops at the first.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib.util
import inspect
import json
import math
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution
from typing import Any

import numpy as np
from rich.markup import escape

from algorithms import ALGORITHMS, Algorithm, Extras, Plan, PrivacyTarget, Step, Trace
from algorithms.premises import PREMISES
from algorithms.privacy.ledger import Mechanism
from bench.canary import (
    AUDIT_DATA,
    AUDIT_PROBLEMS,
    audit_params,
    audit_problem,
    exact_checks,
    make_audit,
)
from bench.errors import UsageError
from bench.model import EvalSpec
from bench.runner import run_one
from bench.spec import ComponentSpec, RunSpec, component
from problems import PROBLEMS, Instance
from problems.backend import BACKENDS, BackendSpec, get_backend, unavailable
from problems.registry import GROUP, Registry, import_plugins

EPSILON, DELTA = 2.0, 1e-5  # the exact checks calibrate σ to them
#: the algorithms a problem is checked under (the first ones registered)
UNDER = {False: ("sgd", "dp_sgd"), True: ("dp_sgda",)}


@dataclass
class Check:
    """One check of one class: what it covers, and its failures (none: passed)."""

    what: str
    failures: list[str] = field(default_factory=list)
    skipped: str = ""

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class Report:
    """The checks of one registered class."""

    kind: str
    name: str
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def target_of(private: bool) -> PrivacyTarget:
    """The target of the tiny runs: σ = 1 given (no calibration) where private."""
    return PrivacyTarget(EPSILON, DELTA, sigma=1.0) if private else PrivacyTarget()


# -- conformance: algorithms ---------------------------------------------------------------

def methods(cls: type) -> Iterator[tuple[str, ast.FunctionDef]]:
    """(qualified name, AST) of ``plan``/``iterate`` and every method they may reach through
    ``self`` (all methods of ``cls`` and its bases, but the ``__init__``s), nested functions
    included."""
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "abc", "typing"):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name != "__init__":
                yield f"{klass.__name__}.{node.name}", node


def self_assignments(cls: type) -> list[str]:
    """Where a method other than ``__init__`` assigns to ``self.<attr>`` (or
    ``self.<attr>[...]``): per-run state kept on the algorithm."""
    bad = []
    for qualname, func in methods(cls):
        for node in ast.walk(func):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign)
                       else [])
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Attribute | ast.Subscript) and \
                            isinstance(leaf.value, ast.Name) and leaf.value.id == "self":
                        bad.append(f"{qualname} assigns to self (line {leaf.lineno})")
    return bad


def plan_failures(alg: Algorithm, data: Instance, target: PrivacyTarget) -> list[str]:
    """``plan`` returns a :class:`Plan` with the declared extras, JSON-serialisable, and
    leaves the algorithm as it was."""
    cls = type(alg)
    failures = [] if issubclass(cls.Extras, Extras) and dataclasses.is_dataclass(cls.Extras) \
        else [f"Extras {cls.Extras!r} is not an Extras dataclass"]
    before = copy.deepcopy(vars(alg))
    plan = alg.plan(data, target)
    if not isinstance(plan, Plan):
        return [*failures, f"plan returned {type(plan).__name__}, not a Plan"]
    if type(plan.extra) is not cls.Extras:
        failures.append(f"plan.extra is {type(plan.extra).__name__}, declared "
                        f"{cls.Extras.__name__}")
    if vars(alg).keys() != before.keys() or any(vars(alg)[k] != v for k, v in before.items()):
        failures.append("plan changed the algorithm's attributes")
    try:
        json.dumps(plan.to_dict(), default=str)
    except (TypeError, ValueError) as exc:
        failures.append(f"plan.to_dict() is not JSON: {exc}")
    if alg.private and not (plan.eps.headline is not None and 0 < plan.eps.headline < math.inf):
        failures.append(f"a private plan spends ε = {plan.eps.headline}")
    if not alg.private and plan.eps.headline != math.inf:
        failures.append(f"a non-private plan spends ε = {plan.eps.headline}")
    return failures


def iterate_failures(plan: Plan, steps: list[Step], trace: Trace, mech: Mechanism,
                     x0: Any) -> list[str]:
    """The iterates: numbered 1, 2, ..., as many as planned (fewer where the data run out),
    arrays of x0's type and shape, finite, moving; an output; a recorded release."""
    failures = []
    if [s.t for s in steps] != list(range(1, len(steps) + 1)):
        failures.append(f"steps are numbered {[s.t for s in steps][:5]}..., not 1, 2, ...")
    if not 1 <= len(steps) <= plan.steps:
        failures.append(f"{len(steps)} steps yielded, {plan.steps} planned")
    for s in steps:
        if type(s.x) is not type(x0) or tuple(s.x.shape) != tuple(x0.shape):
            failures.append(f"step {s.t}: x is {type(s.x).__name__} of shape "
                            f"{tuple(getattr(s.x, 'shape', ()))}, x0 {type(x0).__name__} of "
                            f"shape {tuple(x0.shape)}")
            break
        if not np.all(np.isfinite(numpy(s.x))):
            failures.append(f"step {s.t}: x is not finite")
            break
    if steps and np.array_equal(numpy(steps[-1].x), numpy(x0)):
        failures.append("the iterate never moves")
    try:
        out = trace.point()
        if tuple(out.shape) != tuple(x0.shape) or not np.all(np.isfinite(numpy(out))):
            failures.append("the output is not a finite point of x0's shape")
    except RuntimeError as exc:
        failures.append(f"no output: {exc}")
    if not mech.ledger.summary():
        failures.append("the run recorded no release")
    return failures


def numpy(a: Any) -> np.ndarray:
    """Any backend's array as a numpy array."""
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def run_steps(alg: Algorithm, instance: Instance, backend: str, target: PrivacyTarget,
              seeds: tuple[int, int] = (1, 2)) -> tuple[Plan, list[Step], Trace, Mechanism, Any]:
    """Plan and run ``alg`` on ``instance``'s oracle on ``backend`` (noise, sampling seeds)."""
    be = get_backend(BackendSpec(name=backend))
    oracle = instance.oracle(be)
    plan = alg.plan(instance, target)
    mech = Mechanism(be.noise_source(seeds[0]), np.random.default_rng(seeds[1]))
    trace = Trace()
    return plan, list(alg.run(oracle, plan, mech, trace)), trace, mech, oracle.x0


def algorithm_conformance(name: str) -> list[Check]:
    cls = ALGORITHMS.lookup(name)
    instance = audit_problem(name)
    alg = cls(audit_params(name))
    target = target_of(cls.private)
    checks = [guarded("no per-run state on self", lambda: self_assignments(cls)),
              guarded("plan", lambda: plan_failures(alg, instance, target))]

    def iterates() -> list[str]:
        plan, steps, trace, mech, x0 = run_steps(alg, instance, "numpy", target)
        again = run_steps(alg, instance, "numpy", target)[1]
        same = len(steps) == len(again) and all(
            np.array_equal(numpy(a.x), numpy(b.x)) for a, b in zip(steps, again, strict=False))
        return iterate_failures(plan, steps, trace, mech, x0) + (
            [] if same else ["two runs with the same seeds differ"])

    checks.append(guarded("iterates (numpy, twice)", iterates))
    return checks


# -- conformance: problems -------------------------------------------------------------------

def problem_conformance(name: str) -> list[Check]:
    cls = PROBLEMS.lookup(name)

    def declared() -> list[str]:
        failures = [f"backend {b!r} is not one of {', '.join(BACKENDS)}"
                    for b in cls.backends if b not in BACKENDS]
        return failures + ([] if cls.backends else ["declares no backend"])

    def built() -> list[str]:
        problem = cls(cls.Params())
        first, second = problem.build(0), problem.build(0)
        failures = []
        if not isinstance(first, Instance):
            return [f"build returned {type(first).__name__}, not an Instance"]
        if np.shape(first.x0) != (first.d,) or not np.all(np.isfinite(first.x0)):
            failures.append(f"x0 has shape {np.shape(first.x0)}, d = {first.d}")
        if not np.array_equal(first.x0, second.x0):
            failures.append("two builds with the same seed differ")
        size = problem.size()
        if size is not None and size.n != first.n:
            failures.append(f"size() says n = {size.n}, the built instance {first.n}")
        return failures

    return [guarded("backends declared", declared), guarded("build (seed 0, twice)", built)]


# -- tiny runs, exact checks ------------------------------------------------------------------

def tiny_run(problem: ComponentSpec, algorithm: ComponentSpec, private: bool,
             backend: str) -> Check:
    """One short run through the runner; its premise data in the vocabulary. A run that
    diverges passes (noted): the audit's step size need not suit every problem."""
    what = f"tiny run: {algorithm.name} on {problem.name}, {backend}"
    if reason := unavailable(backend):
        return Check(what, skipped=reason)
    privacy = target_of(private)
    record = run_one(RunSpec(problem, algorithm, privacy, BackendSpec(name=backend), seed=0,
                             eval=EvalSpec(points=2, metrics=("loss",))))
    if record.status == "diverged":  # the pipeline ran: a step size too large for the problem
        what += " (diverged at the audit's step size: the run itself completed)"
    elif record.status != "done":
        return Check(what, [f"{record.status}: {record.error}"])
    unknown = sorted(set(record.premises) - set(PREMISES))
    return Check(what, [f"premise data outside the vocabulary: {unknown}"] if unknown else [])


def algorithm_runs(name: str) -> list[Check]:
    cls = ALGORITHMS.lookup(name)
    problem, params = AUDIT_PROBLEMS[cls.minimax]
    prob = component("problem", problem, {**params, **AUDIT_DATA.get(name, {})}, "check")
    alg = component("algorithm", name, dataclasses.asdict(audit_params(name)),
                    "check")
    return [tiny_run(prob, alg, cls.private, b) for b in PROBLEMS[problem].backends]


def problem_runs(name: str) -> list[Check]:
    cls = PROBLEMS.lookup(name)
    prob = component("problem", name, {}, "check")
    checks = []
    for under in UNDER[cls.minimax]:
        alg = component("algorithm", under,
                        dataclasses.asdict(audit_params(under)), "check")
        checks += [tiny_run(prob, alg, ALGORITHMS[under].private, b) for b in cls.backends]
    return checks


def exact(name: str) -> Check:
    """The audit's exact checks (L0) of a private algorithm, on its audit problem."""
    def failures() -> list[str]:
        setup = make_audit(ALGORITHMS.lookup(name)(audit_params(name)), audit_problem(name),
                           (EPSILON, DELTA))
        return exact_checks(setup, runs=5).failures

    return guarded("the audit's exact checks (L0, 5 runs)", failures)


def guarded(what: str, run: Callable[[], list[str]]) -> Check:
    """``run``'s failures; an exception it raises is one failure."""
    try:
        return Check(what, run())
    except Exception as exc:  # outside code: any error is a finding
        return Check(what, [f"{type(exc).__name__}: {exc}"])


# -- targets ---------------------------------------------------------------------------------

def resolve(target: str) -> list[tuple[str, str]]:
    """(kind, name) of what ``target`` names: a registered name, else everything a module
    (and its submodules) or an installed distribution registers."""
    registries: dict[str, Registry[Any]] = {"algorithm": ALGORITHMS.plugins(),
                                             "problem": PROBLEMS.plugins()}
    named = [(kind, target) for kind, reg in registries.items() if _known(reg, target)]
    if named:
        return named
    modules = _modules(target)
    found = [(kind, key) for kind, reg in registries.items() for key, cls in sorted(reg.items())
             if any(cls.__module__ == m or cls.__module__.startswith(f"{m}.") for m in modules)]
    if not found:
        raise UsageError(f"{target!r} is neither a registered algorithm or problem nor a "
                         "plugin that registers one (saddlebench list shows the names)")
    return found


def _known(registry: Registry[Any], name: str) -> bool:
    try:
        registry[name]
    except KeyError:
        return False
    return True


def _modules(target: str) -> list[str]:
    """The modules of distribution ``target``'s entry points, else module ``target``
    (imported: it registers its classes)."""
    try:
        points = distribution(target).entry_points
    except PackageNotFoundError:
        try:
            if importlib.util.find_spec(target) is None:
                return []
            import_plugins([target])
        except (ImportError, ValueError) as exc:  # a parent package missing, or a broken one
            raise UsageError(str(exc)) from None
        return [target]
    groups = {GROUP.format(kind=k) for k in ("algorithm", "problem")}
    return [ep.module for ep in points if ep.group in groups]


def check(kind: str, name: str) -> Report:
    """Every check of one registered class."""
    if kind == "algorithm":
        checks = algorithm_conformance(name) + algorithm_runs(name)
        if ALGORITHMS.lookup(name).private:
            checks.append(exact(name))
    else:
        checks = problem_conformance(name) + problem_runs(name)
    return Report(kind, name, checks)


def check_targets(targets: list[str], say: Callable[[str], None]) -> list[Report]:
    """The reports of every class the targets name, each check said as it finishes."""
    reports = []
    for kind, name in dict.fromkeys(pair for t in targets for pair in resolve(t)):
        cls = ALGORITHMS[name] if kind == "algorithm" else PROBLEMS[name]
        say(f"{kind} {name} ({cls.__module__})")
        report = check(kind, name)
        for c in report.checks:
            verdict = "skipped" if c.skipped else "pass" if c.passed else "[red]FAIL[/]"
            say(f"  {verdict}: {c.what}{f' ({c.skipped})' if c.skipped else ''}")
            for failure in c.failures:
                say(f"    {escape(failure)}")
        reports.append(report)
    passed = sum(r.passed for r in reports)
    say(f"{passed} of {len(reports)} passed")
    return reports
