"""Executing many RunSpecs: in process, or in parallel with joblib (loky).

Workers write their own results (atomically) into the store, so the submitting process
may die without losing finished runs. Cluster executors (Dask, SLURM) join here later.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.runner import run_one
from bench.spec import RunSpec
from bench.store import Store


@dataclass(frozen=True)
class Outcome:
    """What the submitting process learns about one finished run."""

    run_id: str
    status: str
    error: str | None
    label: str


def run_and_store(spec: RunSpec, root: str | Path) -> Outcome:
    """Run ``spec`` and write its record into the store at ``root`` (in the worker)."""
    record = run_one(spec)
    Store(root).write(record)
    return Outcome(record.run_id, record.status, record.error, spec.display)


def pending(specs: Iterable[RunSpec], store: Store, force: bool = False) -> list[RunSpec]:
    """The specs without a reusable result."""
    return [s for s in specs if force or not store.is_finished(s)]


def run_specs(specs: list[RunSpec], store: Store, jobs: int = 1,
              on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run every spec, ``jobs`` at a time; ``on_done`` sees each outcome as it arrives."""
    outcomes: list[Outcome] = []

    def collect(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)

    if jobs == 1 or len(specs) <= 1:
        for spec in specs:
            collect(run_and_store(spec, store.root))
        return outcomes

    from joblib import Parallel, delayed, parallel_config

    threads = max(1, (os.cpu_count() or 1) // jobs)
    with parallel_config(backend="loky", inner_max_num_threads=threads):
        results = Parallel(n_jobs=jobs, return_as="generator_unordered")(
            delayed(run_and_store)(spec, str(store.root)) for spec in specs
        )
        for outcome in results:
            collect(outcome)
    return outcomes
