"""One RunSpec → one RunRecord: timed ``iterate`` loop, untimed evaluation.

The clock runs only inside ``next(iterate)``; at each evaluation step the device is
synchronised, the clock stopped, metrics computed, and the clock restarted. Seeds derive
from the RunSpec's seed alone (not the algorithm), so algorithms compared under one seed
see the same initial point and, where they sample alike, the same batches. The point a run
is scored at is chosen by :class:`OutputRule` (``eval.output``).
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from algorithms.base import Plan, Step, Trace, get_algorithm
from algorithms.privacy.accounting import epsilons
from algorithms.privacy.ledger import Mechanism
from algorithms.sosp_selection import Reservoir
from bench import env
from bench.fingerprint import fingerprint
from bench.metrics import evaluate, finite
from bench.spec import RunSpec, instantiate_params
from problems.backend import Backend, get_backend
from problems.base import get_problem
from problems.registry import import_plugins

STATUSES = ("done", "diverged", "error", "skipped")


@dataclass
class RunRecord:
    """The outcome of one run: trajectory rows plus everything needed to trust them."""

    spec: RunSpec
    status: str = "done"
    error: str | None = None
    plan: dict[str, Any] | None = None
    eps: dict[str, Any] | None = None
    ledger: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    #: the algorithm's premise data (algorithms/premises.py), also for diverged runs
    premises: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.spec.digest

    def sidecar(self) -> dict[str, Any]:
        """The JSON sidecar written next to the trajectory."""
        return {
            "run_id": self.run_id,
            "spec": self.spec.to_dict(),
            "status": self.status,
            "error": self.error,
            "plan": self.plan,
            "eps": self.eps,
            "ledger": self.ledger,
            "diagnostics": self.diagnostics,
            "premises": self.premises,
            "timings": self.timings,
            "info": self.info,
            "environment": self.environment,
            "final": self.rows[-1] if self.rows else {},
        }


def eval_steps(total: int, points: int, schedule: str = "log") -> set[int]:
    """Evaluation steps in 1..T, log- or linearly spaced, always including 1 and T."""
    space = np.geomspace if schedule == "log" else np.linspace
    grid = np.unique(np.round(space(1, max(total, 1), points)).astype(int))
    return {int(s) for s in grid} | {total}


def run_one(spec: RunSpec) -> RunRecord:
    """Execute ``spec``; failures become records (status ``error``), never exceptions."""
    record = RunRecord(spec, environment=env.environment(spec.backend))
    started = time.perf_counter()
    try:
        import_plugins(spec.plugins)  # outside code, in whichever process runs this
        code, parts = fingerprint(spec)
        record.environment.update(code=code, code_parts=parts)
        _execute(spec, record)
    except Exception as exc:  # a failing run must never take a sweep down
        record.status = "error"
        record.error = f"{type(exc).__name__}: {exc}"
        record.info["traceback"] = traceback.format_exc(limit=20)
    record.timings["wall_s"] = time.perf_counter() - started
    return record


def repeats(measured: tuple[int, Any, tuple[str, ...]], step: int, x: Any,
            names: tuple[str, ...], backend: Any) -> bool:
    """Whether the point ``x`` at ``step`` is the iterate just evaluated with the metrics
    ``names`` (an output that is the last iterate: its metrics, λ_min among them, are not
    computed twice)."""
    last_step, last_x, last_names = measured
    return (last_step == step and set(names) == set(last_names)
            and (last_x is x or np.array_equal(backend.to_numpy(last_x), backend.to_numpy(x))))


class OutputRule:
    """The point a run is scored at (``eval.output``): the algorithm's own output where it
    sets one (:attr:`Trace.output`, e.g. spider_sosp's certified anchor); else, under
    ``algorithm``, its last iterate, and under ``uniform_iterate`` x_t with t uniform on
    1..T for the T steps actually taken: the randomized output of Ghadimi & Lan 2013, the
    rule the first-order guarantees of DP-SGD-type methods are stated for (E_t‖∇F(x_t)‖²
    over a uniform t). t is drawn online by reservoir sampling (Algorithm R: x_t is kept
    with probability 1/t), so a run that stops early is handled and one iterate is held, by
    reference (yielded iterates are never modified: dp_spider_at's candidates rely on it
    too). The draws are public randomness from ``rng`` alone: the runner gives it its own
    child of the run's SeedSequence, apart from the streams the algorithm uses."""

    def __init__(self, rule: str, rng: np.random.Generator) -> None:
        self.kept = Reservoir(1, rng) if rule == "uniform_iterate" else None

    def offer(self, step: Step) -> None:
        if self.kept is not None:
            self.kept.offer((step.t, step.x))

    def output(self, trace: Trace) -> tuple[Any, dict[str, Any]]:
        """The output point and what produced it: the rule and, for an iterate, its t."""
        if trace.output is not None:
            return trace.output, {"rule": "algorithm"}
        if self.kept is not None and self.kept.items():
            t, x = self.kept.items()[0]
            return x, {"rule": "uniform_iterate", "step": t}
        return trace.point(), {"rule": "last_iterate", "step": trace.steps_taken}


def mechanism(seed: int, backend: Backend) -> tuple[Mechanism, np.random.SeedSequence]:
    """A run's randomness from its seed: the mechanism's noise, sampling, Laplace and public
    streams, and the seed of the output index's draw (the fifth child; spawn(5)[:4] ==
    spawn(4), so the mechanism's four streams are those runs had before it). Studies that
    replay a run use it too."""
    noise, sampling, laplace, public, output = np.random.SeedSequence(seed).spawn(5)
    mech = Mechanism(backend.noise_source(int(noise.generate_state(1)[0])),
                     np.random.default_rng(sampling), laplace=np.random.default_rng(laplace),
                     public=np.random.default_rng(public))
    return mech, output


def _execute(spec: RunSpec, record: RunRecord) -> None:
    backend = get_backend(spec.backend)
    problem = get_problem(spec.problem.name)(instantiate_params("problem", spec.problem))
    algorithm = get_algorithm(spec.algorithm.name)(instantiate_params("algorithm", spec.algorithm))

    t0 = time.perf_counter()
    instance = problem.build(spec.seed)
    oracle = instance.oracle(backend)
    plan: Plan[Any] = algorithm.plan(instance, spec.privacy)
    record.plan = plan.to_dict()
    record.timings["setup_s"] = time.perf_counter() - t0

    mech, output = mechanism(spec.seed, backend)

    schedule = eval_steps(plan.steps, spec.eval.points, spec.eval.schedule)
    iterate_s = eval_s = 0.0
    measured: tuple[int, Any, tuple[str, ...]] | None = None  # the last iterate evaluated

    def measure(step: int, x: Any, point: str, names: tuple[str, ...],
                epoch: float | None = None) -> bool:
        nonlocal eval_s, measured
        e0 = time.perf_counter()
        ok = finite(x, oracle)
        row: dict[str, Any] = {"step": step, "time_s": iterate_s, "point": point}
        if epoch is not None:
            row["epoch"] = epoch
        if ok and measured is not None and repeats(measured, step, x, names, backend):
            row.update({k: v for k, v in record.rows[-1].items() if k not in row})
        elif ok:
            row.update(evaluate(instance, oracle, x, names))
            ok = all(math.isfinite(v) for k, v in row.items() if k in ("loss", "grad_norm"))
        measured = (step, x, names) if point == "iterate" else None
        record.rows.append(row)
        eval_s += time.perf_counter() - e0
        return ok

    names = spec.eval.metrics
    rule = OutputRule(spec.eval.output, np.random.default_rng(output))
    last_t, last_epoch, passes = 0, None, 0
    with np.errstate(all="ignore"):
        measure(0, oracle.x0, "iterate", names)
        trace = Trace()
        steps = algorithm.run(oracle, plan, mech, trace)
        healthy = True
        while True:
            c0 = time.perf_counter()
            step = next(steps, None)
            due = step is not None and (step.t in schedule or (
                step.epoch is not None and int(step.epoch) > passes))
            if step is not None and due:
                backend.sync(step.x)
            iterate_s += time.perf_counter() - c0
            if step is None:
                break
            last_t, last_epoch = step.t, step.epoch
            rule.offer(step)
            if due:
                passes = int(step.epoch) if step.epoch is not None else passes
                last = step.t == plan.steps
                healthy = measure(step.t, step.x, "iterate", names + (spec.eval.final if last
                                                                       else ()), step.epoch)
                if not healthy:
                    break
        if healthy:
            point, record.info["output"] = rule.output(trace)
            healthy = measure(last_t, point, "output", names + spec.eval.final, last_epoch)

    record.status = "done" if healthy else "diverged"
    record.ledger = mech.ledger.to_json()
    record.diagnostics = algorithm.diagnostics(trace)
    void = record.diagnostics.get("void_reason")  # an assumption of the claim failed: ε = ∞
    spent = epsilons(mech.ledger, spec.privacy.delta)
    record.eps = {**(spent.voided() if void else spent).to_dict(), "paper": plan.eps_paper,
                  "target": spec.privacy.epsilon,  # ∞: not private (JSON: "inf")
                  **({"void": void} if void else {})}
    record.premises = algorithm.premise_data(trace)
    record.timings.update(iterate_s=iterate_s, eval_s=eval_s)
