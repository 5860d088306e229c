"""A sweep: an experiment's runs, tuning and chosen runs, executed into a store on an
executor with a progress bar, failures listed (the CLI's ``run`` and ``reproduce`` call
:func:`run_experiment`)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import closing
from dataclasses import dataclass
from typing import TypeVar

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from bench.console import LogConsole as LogConsole  # the command's console
from bench.console import console
from bench.executors import Executor, LocalExecutor
from bench.experiment import check_backends
from bench.parallel import Outcome, pending, stored_outcome
from bench.spec import Experiment, RunSpec
from bench.store import Store
from bench.tuning import tune

T = TypeVar("T")


def run_experiment(experiment: Experiment, store: Store, executor: Executor, *,
                   force: bool = False, collect: bool = False, bar: Progress | None = None
                   ) -> list[Outcome]:
    """Run an experiment into ``store`` on ``executor``: its runs, then for tuned entries the
    tuning runs, the choice (bench/tuning.py) and the chosen runs; the failed outcomes.
    ``force`` reruns finished runs; ``collect`` submits nothing and reports what the store
    holds; ``bar``: the progress display its batches add their lines to (none: hidden).
    Backends and devices this machine lacks are refused first (local executor)."""
    if isinstance(executor, LocalExecutor) and not collect:
        check_backends(experiment)
    batch = Batch(store, executor, force, collect, bar)
    store.write_suite(experiment)
    for note in experiment.skipped:
        console.print(f"  [yellow]skipped[/]: {note}")
    rule = experiment.tuning
    report_damage(store, known_specs(experiment), collect)
    title = f"[bold]{experiment.suite}[/]"
    failures = batch(experiment.specs, title)
    if experiment.groups and rule:
        selections, failed = tune(experiment.groups, rule, store, batch, title)
        failures += failed
        finals = [s for sel in selections if sel.chosen for s in sel.group.final_specs(sel.chosen)]
        failures += batch(finals, f"{title} tuned")
        store.write_suite(experiment, finals, [sel.to_dict(rule) for sel in selections])
        for sel in selections:
            if sel.chosen is None:
                console.print(f"  [red]tuning failed[/] {sel.group.key}: every candidate failed")
    return failures


class Interrupted(KeyboardInterrupt):
    """Sweeps stopped by Ctrl-C; the message says what is stored and how to run the rest."""


#: experiments run at once on a local executor with several workers (threads sharing its
#: pool): while one chooses its tuned runs or finishes its last ones, the other's runs keep
#: the workers busy. Every run's result is the same in any order (its seeds are its own).
OVERLAP = 2


def run_experiments(runs: Sequence[tuple[Experiment, Store]], executor: Executor, *,
                    force: bool = False, collect: bool = False, progress: bool = True
                    ) -> list[Outcome]:
    """:func:`run_experiment` for each (experiment, store); the failed outcomes. On a local
    executor with several workers :data:`OVERLAP` experiments run at once, elsewhere one
    after another. Ctrl-C stops them (the executor cancels what is not finished) with
    :class:`Interrupted`."""
    shared = (executor if isinstance(executor, LocalExecutor) and executor.jobs > 1
              and not collect and len(runs) > 1 else None)
    try:
        with progress_bar(executor, progress) as bar:
            def one(pair: tuple[Experiment, Store]) -> list[Outcome]:
                return run_experiment(*pair, executor, force=force, collect=collect, bar=bar)

            done = (map(one, runs) if shared is None
                    else overlapped(one, runs, OVERLAP, shared))
            return [failure for failures in done for failure in failures]
    except KeyboardInterrupt:
        raise Interrupted(interruption(runs, force)) from None


def overlapped(one: Callable[[T], list[Outcome]], items: Sequence[T], together: int,
               executor: LocalExecutor) -> list[list[Outcome]]:
    """``one`` of each item, ``together`` at a time in threads, results in order. Any
    exception (Ctrl-C in this thread) cancels the executor's runs, so the other threads end
    soon, and is raised once they have."""
    with ThreadPoolExecutor(max_workers=together) as threads:
        futures = [threads.submit(one, item) for item in items]
        try:
            for future in as_completed(futures):
                future.result()  # the first exception is raised as it happens
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            executor.cancel()
            raise


def interruption(runs: Sequence[tuple[Experiment, Store]], force: bool) -> str:
    """How many of the experiments' runs are stored, where, and how to run the rest (a
    rerun runs only the runs without a result)."""
    stored = total = 0
    for experiment, store in runs:
        specs = known_specs(experiment)
        total += len(specs)
        stored += len(specs) - len(pending(specs, store))
    where = os.path.commonpath([str(store.root) for _, store in runs]) if runs else "."
    again = "the same command without --force" if force else "the same command"
    return (f"interrupted: {stored} of {total} runs done (stored in {where}); rerun {again} "
            f"to run the remaining {total - stored}")


def known_specs(experiment: Experiment) -> list[RunSpec]:
    """The runs an experiment names before it runs: its runs and its tuned entries' tuning
    runs (their chosen runs are known after tuning)."""
    rule = experiment.tuning
    return [*experiment.specs,
            *(s for g in experiment.groups for s in g.tuning_specs(rule))] if rule \
        else list(experiment.specs)


def report_damage(store: Store, specs: list[RunSpec], collect: bool) -> None:
    """Say which stored results of ``specs`` are damaged (corrupt or truncated files): they
    count as not run, so they are recomputed (with --collect: reported missing)."""
    damaged = store.check(s.digest for s in specs)
    if damaged:
        shown = "; ".join(map(str, damaged[:3])) + (" ..." if len(damaged) > 3 else "")
        action = "counted as missing" if collect else "recomputing"
        console.print(f"  [yellow]{len(damaged)} corrupt results found: {action}[/] "
                      f"({escape(shown)})")


@dataclass(frozen=True)
class Batch:
    """Runs a list of specs into ``store`` on ``executor`` under a progress title and
    returns the failed outcomes (with ``collect``: only reports what the store holds)."""

    store: Store
    executor: Executor
    force: bool = False
    collect: bool = False
    bar: Progress | None = None

    def __call__(self, specs: list[RunSpec], title: str) -> list[Outcome]:
        if self.collect:
            return collect_batch(specs, self.store, title)
        todo = pending(specs, self.store, force=self.force)
        console.print(f"{title}: {len(specs)} runs ({len(specs) - len(todo)} cached, "
                      f"{len(todo)} to run) -> {self.store.root}")
        counts: Counter[str] = Counter()
        failures: list[Outcome] = []
        bar = self.bar or Progress(disable=True)
        if todo:
            task = bar.add_task(f"{Text.from_markup(title).plain} ({self.executor.name})",
                                total=len(todo), counts=counts)
            with closing(self.executor.submit_all(todo, self.store.root)) as outcomes:
                for outcome in outcomes:
                    counts[outcome.status] += 1
                    failures += [outcome] if outcome.status == "error" else []
                    bar.advance(task)
            bar.remove_task(task)
        summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to run"
        console.print(f"finished: {summary}; results in {self.store.root}")
        print_failures(failures, self.store)
        return failures


def progress_bar(executor: Executor, show: bool = True) -> Progress:
    """One line per batch running on a terminal, never wrapped: the bar takes the width the
    text leaves. Hidden elsewhere (a log has the summary lines) and when not ``show``."""
    return Progress(TextColumn("{task.description}", table_column=Column(no_wrap=True)),
                    BarColumn(bar_width=None), MofNCompleteColumn(), Tally(executor),
                    TimeRemainingColumn(), console=console,
                    disable=not (show and console.is_terminal))


class Tally(ProgressColumn):
    """Runs in flight (as far as the executor can tell), then the task's finished runs by
    status (its ``counts`` field)."""

    def __init__(self, executor: Executor) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.executor = executor

    def render(self, task: Task) -> Text:
        counts: Counter[str] = task.fields.get("counts", Counter())
        shown = {"running": self.executor.running, **counts, "failed": counts["error"]}
        return Text(" ".join(f"{k}={v}" for k, v in shown.items() if k != "error"))


def collect_batch(specs: list[RunSpec], store: Store, title: str) -> list[Outcome]:
    """Report which ``specs`` are finished, failed or missing in the store (submits
    nothing); the failed outcomes."""
    stored = [stored_outcome(spec, store) for spec in specs]
    failures = [o for o in stored if o is not None and o.status == "error"]
    missing = stored.count(None)
    console.print(f"{title}: {len(specs)} runs: {len(specs) - missing - len(failures)} "
                  f"finished, {len(failures)} failed, {missing} missing -> {store.root}")
    print_failures(failures, store)
    return failures


def print_failures(failures: list[Outcome], store: Store) -> None:
    """Each failed run with its error's first and last lines."""
    if failures:
        console.print(f"[red]{len(failures)} failed[/] (tracebacks: info.traceback in "
                      f"{store.runs_dir.name}/RUN_ID.json; a rerun retries them):")
    for f in failures:
        lines = [line for line in (f.error or "no message").splitlines() if line.strip()]
        shown = lines if len(lines) <= 3 else [lines[0], "...", *lines[-2:]]
        console.print(f"  [red]error[/] {f.run_id} ({escape(f.label)}): "
                      + escape("\n      ".join(shown)))
