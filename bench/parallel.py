"""What runs in a worker, and what the submitting process knows about runs.

Workers write their own results (atomically) into the store, so the submitting process
may die without losing finished runs; bench/executors.py sends the runs to workers (in
process, joblib, Dask, SLURM), and rerunning an experiment submits exactly the runs without
a finished result.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def stored_outcome(spec: RunSpec, store: Store) -> Outcome | None:
    """What the store holds for ``spec``: a reusable result or a failed run (status
    ``error``); None when it is missing (never run, unfinished, or from other code)."""
    side = store.sidecar(spec.digest)
    if side is None or (side.get("status") != "error" and not store.is_finished(spec)):
        return None
    return Outcome(spec.digest, side["status"], side.get("error"), spec.display)
