"""Where runs execute: here or in local worker processes, on Dask, or as SLURM job arrays.

An executor sends each spec to a worker that runs it and writes its record into the store
itself (:func:`bench.parallel.run_and_store`: atomic, the sidecar last), and yields an
:class:`~bench.parallel.Outcome` per run as runs finish. The submitting process may die
without losing finished runs: rerunning the experiment submits exactly the runs without a
finished result, and ``--collect`` reports what the store holds. A worker that raises or
dies yields a failed outcome and writes nothing, so that run is retried on the next rerun.
When the submitting process stops early (Ctrl-C, or the outcomes are closed), every
executor cancels the runs not yet finished: local workers are killed, Dask futures and
SLURM jobs cancelled; what finished stays stored. Dask and submitit are the ``cluster``
extra, imported only when used.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, as_completed, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import yaml

# imported here, before any thread can: sweeps and the studies beside them submit to the
# pool from threads, and two threads importing loky at once can deadlock on its modules
from joblib.externals.loky import get_reusable_executor, process_executor
from joblib.externals.loky.process_executor import BrokenProcessPool

from algorithms import ALGORITHMS
from bench.errors import UsageError
from bench.parallel import Outcome, run_and_store, stored_outcome
from bench.spec import RunSpec
from bench.store import Store
from problems.backend import require
from problems.registry import did_you_mean

EXECUTORS = ("local", "dask", "slurm")
T = TypeVar("T")
Outcomes = Generator[Outcome, None, None]  # what submit_all yields, as runs finish


class Executor(Protocol):
    """Runs specs somewhere; ``running``: runs in flight now, as far as it can tell."""

    name: ClassVar[str]
    running: int

    def submit_all(self, specs: Sequence[RunSpec], root: str | Path) -> Outcomes:
        """Run every spec into the store at ``root``; each outcome as its run finishes."""
        ...


def failed(spec: RunSpec, exc: BaseException) -> Outcome:
    """The outcome of a run whose worker raised or died (it wrote no record)."""
    return Outcome(spec.digest, "error", f"{type(exc).__name__}: {exc}", spec.display)


def result(handle: Any, spec: RunSpec) -> Outcome:
    """The outcome behind a dask future or a submitit job: its own, or a failed one."""
    try:
        return handle.result()
    except Exception as exc:  # the worker raised, died, timed out or was cancelled
        return failed(spec, exc)


# thread pools of the numerical libraries, capped per worker so that jobs × threads ≤ cores
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# glibc malloc in the workers (read at process start, ignored elsewhere; a user's own
# setting wins): temporaries up to 32 MiB come from the heap instead of a fresh mmap per
# call, whose page faults cost matrix_sensing runs about a fifth of their CPU (same results)
MALLOC_VARIABLES = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
                    "MALLOC_TRIM_THRESHOLD_": str(128 * 2**20)}
# idle seconds before a local worker exits: long enough to outlast the pauses between an
# experiment's batches (loky warns when an idle worker exits just as a run is submitted)
IDLE_S = 300
# growth past its size after the first run at which loky replaces a worker as leaking (its
# default, 300 MB, is less than importing jax or torch on a later run plus their compiled
# kernels: each replacement imports them again and recompiles)
LEAK_BYTES = 4 * 2**30


def _worker_init() -> None:
    """In each local worker: ignore Ctrl-C (a terminal sends it to the workers too; the
    submitting process stops them) and raise loky's leak threshold to ``LEAK_BYTES``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    process_executor._MAX_MEMORY_LEAK_SIZE = LEAK_BYTES


def worker_pool(jobs: int) -> Any:
    """The reusable loky pool of ``jobs`` local workers (kept between calls): numerical
    thread pools capped so that jobs × threads ≤ cores, glibc malloc settings, this
    process's import path (plugins found on it, see problems.registry) and
    :func:`_worker_init`. A changed setting starts a fresh pool."""
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    env = {**{name: threads for name in THREAD_VARIABLES},
           **{name: os.environ.get(name, value) for name, value in MALLOC_VARIABLES.items()},
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    pool = get_reusable_executor(max_workers=jobs, env=env, timeout=IDLE_S,
                                 initializer=_worker_init)
    _HANDED_OUT[:] = [pool]
    return pool


_HANDED_OUT: list[Any] = []  # the pool worker_pool last returned in this process


def release_workers() -> None:
    """Stop this process's local workers without waiting for them: at the end of a command,
    when every result is in. An interpreter that exits with the pool alive joins its workers,
    which hold torch and jax: 3–9 s of a command's wall time, measured."""
    for pool in _HANDED_OUT:
        pool.shutdown(wait=False, kill_workers=True)
    _HANDED_OUT.clear()


def map_in_workers(calls: Sequence[Callable[[], T]], jobs: int, *, shared: bool = False
                   ) -> list[T]:
    """Each call's result, in order: here (``jobs`` = 1) or in :func:`worker_pool`'s
    workers (the runs' pool, reused warm), no more of them than calls unless ``shared``
    (a sweep's pool of ``jobs`` in use beside them: the same pool, not a resized one); the
    first error is raised."""
    if jobs == 1 or len(calls) <= 1:
        return [call() for call in calls]
    pool = worker_pool(jobs if shared else min(jobs, len(calls)))
    return [future.result() for future in [pool.submit(call) for call in calls]]



def finished_in_workers(calls: Sequence[Callable[[], T]], jobs: int) -> Iterator[tuple[int, T]]:
    """(index, result) of each call as it finishes: here, in order (``jobs`` = 1), or in
    :func:`worker_pool`'s workers (no more of them than calls), so that a caller can report
    progress; the first error is raised."""
    if jobs == 1 or len(calls) <= 1:
        for i, call in enumerate(calls):
            yield i, call()
        return
    pool = worker_pool(min(jobs, len(calls)))
    futures = {pool.submit(call): i for i, call in enumerate(calls)}
    for future in as_completed(futures):
        yield futures[future], future.result()


@dataclass
class LocalExecutor:
    """In this process (``jobs=1``), else in ``jobs`` loky worker processes, with at most
    ``jobs`` runs of each :meth:`submit_all` in flight (several threads may submit at once:
    the pool runs ``jobs`` at a time). A killed worker breaks the pool: the runs then in
    flight that did not reach the store are reported failed, and the rest go on in a fresh
    pool. :meth:`cancel` stops every submission."""

    name: ClassVar[str] = "local"

    jobs: int = 1
    running: int = 0
    cancelled: bool = False

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {self.jobs}")

    def submit_all(self, specs: Sequence[RunSpec], root: str | Path) -> Outcomes:
        where = str(Path(root).resolve())
        if self.jobs == 1 or len(specs) <= 1:
            for spec in specs:
                self.running = 1
                yield run_and_store(spec, where)
            self.running = 0
        else:
            yield from self._pool(specs, where)

    def cancel(self) -> None:
        """Submit nothing more (in any thread) and kill the workers: the runs in flight are
        lost, the finished ones stay stored."""
        self.cancelled = True
        if self.jobs > 1:
            worker_pool(self.jobs).shutdown(wait=False, kill_workers=True)

    def _pool(self, specs: Sequence[RunSpec], where: str) -> Iterator[Outcome]:
        queue = list(reversed(specs))
        flight: dict[Future[Outcome], RunSpec] = {}
        try:
            while (queue or flight) and not self.cancelled:
                pool = worker_pool(self.jobs)
                while queue and len(flight) < self.jobs:
                    spec = queue.pop()
                    flight[pool.submit(run_and_store, spec, where)] = spec
                    self.running += 1
                done, _ = wait(flight, return_when=FIRST_COMPLETED)
                for future in done:
                    spec = flight.pop(future)
                    self.running -= 1
                    try:
                        yield future.result()
                    except BrokenProcessPool as exc:  # a worker died: its run (or a
                        kept = stored_outcome(spec, Store(where))  # neighbour's)
                        yield kept if kept is not None and kept.status != "error" \
                            else failed(spec, exc)
        finally:
            self.running -= len(flight)
            if flight:  # stopped early: the runs in flight would finish unwatched
                pool.shutdown(wait=False, kill_workers=True)


@dataclass
class DaskExecutor:
    """On a Dask cluster: ``local:N`` starts N single-threaded worker processes here (and
    closes them afterwards), ``tcp://HOST:PORT`` connects to a running scheduler, whose
    workers must see ``root`` at the same path and run the same code. A run whose worker
    dies is rescheduled (up to dask's ``distributed.scheduler.allowed-failures``)."""

    name: ClassVar[str] = "dask"

    cluster: str
    running: int = 0

    def __post_init__(self) -> None:
        kind, _, n = self.cluster.partition(":")
        if not ((kind == "local" and n.isdigit() and int(n) >= 1) or "://" in self.cluster):
            raise UsageError(f"--cluster must be local:N (N >= 1 workers started here) or a "
                             f"scheduler address such as tcp://HOST:8786, got {self.cluster!r}")

    def submit_all(self, specs: Sequence[RunSpec], root: str | Path) -> Outcomes:
        distributed = require("distributed", "cluster")
        where = str(Path(root).resolve())
        with self._client(distributed) as client:
            futures = {client.submit(run_and_store, spec, where, pure=False): spec
                       for spec in specs}
            finished = distributed.as_completed(list(futures))
            try:
                while futures:
                    self.running = min(len(futures), sum(client.nthreads().values()))
                    future = next(finished)
                    yield result(future, futures.pop(future))
            finally:
                if futures:  # stopped early: a scheduler would run them for nobody
                    client.cancel(list(futures))
        self.running = 0

    @contextmanager
    def _client(self, distributed: Any) -> Iterator[Any]:
        if not self.cluster.startswith("local:"):
            try:
                client = distributed.Client(self.cluster, timeout="10s")
            except OSError as exc:
                raise UsageError(f"cannot reach the dask scheduler at {self.cluster} ({exc}); "
                                 "start one with `dask scheduler` and workers with `dask "
                                 "worker ADDRESS`, or check the address") from exc
            with client:
                yield client
            return
        with distributed.LocalCluster(n_workers=int(self.cluster[6:]), threads_per_worker=1,
                                      processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            yield client


# submitit's shared parameters for every run, before the resources file's
DEFAULT_RESOURCES: dict[str, Any] = {"timeout_min": 60, "mem_gb": 8, "cpus_per_task": 2}
ARRAY_LIMIT = 1000  # tasks per job array: SLURM's default MaxArraySize is 1001


@dataclass
class SlurmExecutor:
    """SLURM job arrays through submitit, one per distinct resource request (and per
    ``ARRAY_LIMIT`` runs); submitit's logs and pickles go to ROOT/.submitit.
    ``max_concurrent`` caps the running tasks of each array (SLURM's ``--array=...%N``).
    ``cluster="local"`` runs the same code on submitit's local executor (the tests)."""

    name: ClassVar[str] = "slurm"

    resources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_concurrent: int | None = None
    cluster: str = "slurm"
    poll_s: float = 5.0
    running: int = 0

    def __post_init__(self) -> None:
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise UsageError(f"--max-concurrent must be >= 1, got {self.max_concurrent}")

    def resources_for(self, spec: RunSpec) -> dict[str, Any]:
        """Built-in defaults (one GPU for cuda runs), then the resources' ``default``, then
        its entry for the spec's algorithm."""
        return {**DEFAULT_RESOURCES, "gpus_per_node": int(spec.backend.device == "cuda"),
                **self.resources.get("default", {}), **self.resources.get(spec.algorithm.name, {})}

    def submit_all(self, specs: Sequence[RunSpec], root: str | Path) -> Outcomes:
        submitit = require("submitit", "cluster")
        where = Path(root).resolve()
        groups: dict[str, list[RunSpec]] = {}
        for spec in specs:
            groups.setdefault(json.dumps(self.resources_for(spec), sort_keys=True), []).append(spec)
        arrays = [(self._executor(submitit, where, json.loads(key)), group)
                  for key, group in groups.items()]
        jobs: dict[Any, RunSpec] = {}
        for executor, group in arrays:
            for start in range(0, len(group), ARRAY_LIMIT):
                chunk = group[start:start + ARRAY_LIMIT]
                handles = executor.map_array(run_and_store, chunk, [str(where)] * len(chunk))
                jobs.update(zip(handles, chunk, strict=True))
        yield from self._wait(jobs)

    def _executor(self, submitit: Any, where: Path, params: dict[str, Any]) -> Any:
        try:
            executor = submitit.AutoExecutor(folder=where / ".submitit", cluster=self.cluster)
            executor.update_parameters(**params, slurm_array_parallelism=self.max_concurrent)
        except RuntimeError as exc:  # no sbatch/srun here
            raise UsageError(f"--executor slurm: {exc}") from exc
        except (NameError, AssertionError) as exc:
            raise UsageError(f"invalid SLURM resources {params}: {exc}") from exc
        return executor

    def _wait(self, jobs: dict[Any, RunSpec]) -> Iterator[Outcome]:
        try:
            while jobs:
                done = [job for job in jobs if job.done()]
                for job in done:
                    yield result(job, jobs.pop(job))
                self.running = sum(job.state == "RUNNING" for job in jobs)
                if jobs and not done:
                    time.sleep(self.poll_s)
        finally:
            for job in jobs:  # stopped early: the rest stays queued otherwise (scancel)
                job.cancel(check=False)
        self.running = 0


def load_resources(path: str | Path) -> dict[str, dict[str, Any]]:
    """A ``--slurm-resources`` file: ``default`` and algorithm names, each mapped to submitit
    parameters, e.g. ``dp_sgd: {gpus_per_node: 1, mem_gb: 32, slurm_partition: gpu}``."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UsageError(f"{path}: expected 'default' and algorithm names, each mapped to "
                         "submitit parameters, e.g. 'dp_sgd: {gpus_per_node: 1, mem_gb: 32}'")
    unknown = sorted(set(data) - {"default", *ALGORITHMS})
    if unknown:
        raise UsageError(f"{path}: unknown algorithm(s) {', '.join(map(str, unknown))}"
                         f"{did_you_mean(unknown[0], ALGORITHMS)} "
                         f"(known: default, {', '.join(sorted(ALGORITHMS))})")
    return data
