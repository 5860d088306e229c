"""The ``saddlebench`` command: list | run | account | report.

Every user error (unknown names, invalid privacy targets, malformed experiment files,
missing extras) ends in one line on stderr naming the problem, and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from algorithms import ALGORITHMS, PrivacyTarget, get_algorithm
from bench.parallel import Outcome, pending, run_specs
from bench.spec import SpecError, build_params, load_experiment
from bench.store import Store
from problems import PROBLEMS, DataSize
from problems.backend import BACKENDS, MissingExtraError, available_backends

console = Console()


class UsageError(ValueError):
    """A command-line mistake."""


# -- list -------------------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    algs = Table(title="algorithms")
    for col in ("name", "paper", "private", "reference"):
        algs.add_column(col)
    for name, cls in sorted(ALGORITHMS.items()):
        algs.add_row(name, cls.paper, "yes" if cls.private else "no", cls.reference)
    probs = Table(title="problems")
    for col in ("name", "backends", "description"):
        probs.add_column(col)
    for name, pcls in sorted(PROBLEMS.items()):
        probs.add_row(name, ", ".join(pcls.backends), pcls.description)
    backs = Table(title="backends")
    backs.add_column("name")
    backs.add_column("installed")
    avail = available_backends()
    for name in BACKENDS:
        backs.add_row(name, "yes" if avail[name] else f"no (pip install 'saddlebench[{name}]')")
    for table in (algs, probs, backs):
        console.print(table)
    return 0


# -- run --------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    experiment = load_experiment(args.experiment)
    store = Store(Path(args.out) / experiment.suite)
    store.write_suite(experiment)
    todo = pending(experiment.specs, store, force=args.force)
    cached = len(experiment.specs) - len(todo)
    console.print(f"[bold]{experiment.suite}[/]: {len(experiment.specs)} runs "
                  f"({cached} cached, {len(todo)} to run) -> {store.root}")
    for note in experiment.skipped:
        console.print(f"  [yellow]skipped[/]: {note}")
    counts: Counter[str] = Counter()
    failures: list[Outcome] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[counts]}"), TimeRemainingColumn(),
                  console=console, disable=args.no_progress or not todo) as progress:
        task = progress.add_task("running", total=len(todo), counts="")

        def on_done(outcome: Outcome) -> None:
            counts[outcome.status] += 1
            if outcome.status == "error":
                failures.append(outcome)
            progress.update(task, advance=1,
                            counts=" ".join(f"{k}={v}" for k, v in sorted(counts.items())))

        run_specs(todo, store, jobs=args.jobs, on_done=on_done)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to run"
    console.print(f"finished: {summary}; results in {store.root}")
    for f in failures:
        console.print(f"  [red]error[/] {f.run_id} ({f.label}): {f.error}")
    return 1 if failures else 0


# -- account ----------------------------------------------------------------------------

def _param_pairs(pairs: Sequence[str]) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param expects KEY=VALUE, got {pair!r}")
        out[key] = yaml.safe_load(value)
    return out


def cmd_account(args: argparse.Namespace) -> int:
    cls = get_algorithm(args.algorithm)
    if args.n < 1:
        raise UsageError(f"--n must be >= 1, got {args.n}")
    if (args.sigma is None) == (args.epsilon is None) and cls.private:
        raise UsageError("give exactly one of --sigma (to get ε) or --epsilon (to calibrate σ)")
    given = _param_pairs(args.param)
    if args.batch is not None:
        given["batch_size"] = args.batch
    if args.steps is not None:
        given["steps"] = args.steps
    params = build_params(cls.Params, given, f"algorithm {cls.name}")
    algorithm = cls(params)
    target = PrivacyTarget(epsilon=args.epsilon if args.epsilon is not None else math.inf,
                           delta=args.delta, calibration=args.calibration, sigma=args.sigma)
    plan = algorithm.plan(DataSize(n=args.n), target)
    table = Table(title=f"{cls.name}: n={args.n}, T={plan.steps}, batch={plan.batch_size:g}, "
                        f"δ={args.delta:g}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("noise multiplier σ", f"{plan.sigma:.6g} ({plan.calibration})")

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.6g}"

    table.add_row("ε PLD (tight)", fmt(plan.eps.pld))
    table.add_row("ε RDP", fmt(plan.eps.rdp))
    table.add_row("ε exact GDP", fmt(plan.eps.gdp) if plan.eps.gdp is not None
                  else "n/a (subsampled)")
    table.add_row("ε as the paper computes it", fmt(plan.eps_paper))
    console.print(table)
    return 0


# -- report -----------------------------------------------------------------------------

def cmd_report(args: argparse.Namespace) -> int:
    from reports.render import build_report

    root = Path(args.results)
    if not (root / "runs").is_dir():
        raise UsageError(f"no results in {root} (expected {root / 'runs'}/); "
                         "run `saddlebench run EXPERIMENT` first")
    out = build_report(root, Path(args.out) if args.out else None)
    console.print(f"report written: {out / 'index.html'}")
    return 0


# -- main -------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saddlebench",
                                description="Benchmarks for DP non-convex optimisation.")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="registered algorithms, problems and backends")

    r = sub.add_parser("run", help="run an experiment grid into out/<suite>")
    r.add_argument("experiment", help="experiment YAML file")
    r.add_argument("--out", default="out", help="results root (default: out)")
    r.add_argument("--jobs", type=int, default=1, help="parallel runs (joblib)")
    r.add_argument("--force", action="store_true", help="rerun finished runs too")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")

    a = sub.add_parser("account", help="ε of an algorithm's plan, or σ for a target ε")
    a.add_argument("--algorithm", required=True)
    a.add_argument("--n", type=int, required=True, help="data set size")
    a.add_argument("--batch", type=int, help="batch size")
    a.add_argument("--steps", type=int, help="iterations T")
    a.add_argument("--sigma", type=float, help="noise multiplier (gives ε)")
    a.add_argument("--epsilon", type=float, help="target ε (gives σ)")
    a.add_argument("--delta", type=float, default=1e-5)
    a.add_argument("--calibration", default="pld", choices=("pld", "rdp", "paper"))
    a.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="other algorithm parameters")

    rep = sub.add_parser("report", help="HTML + LaTeX report of a results directory")
    rep.add_argument("results", help="a suite directory, e.g. out/smoke")
    rep.add_argument("--out", help="report directory (default: RESULTS/report)")
    return p


COMMANDS = {"list": cmd_list, "run": cmd_run, "account": cmd_account, "report": cmd_report}


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (SpecError, UsageError, MissingExtraError, ValueError, FileNotFoundError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"saddlebench: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
