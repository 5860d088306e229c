"""The ``saddlebench`` command: list | run | reproduce | account | estimate | audit | report.

Every user error (unknown names, invalid privacy targets, malformed experiment files,
missing extras) ends in one line on stderr naming the problem, and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from algorithms import ALGORITHMS, PrivacyTarget, get_algorithm
from algorithms.base import CALIBRATIONS
from bench.parallel import Outcome, pending, run_specs
from bench.spec import Experiment, RunSpec, SpecError, build_params, load_experiment
from bench.store import Store
from bench.tuning import choose
from problems import PROBLEMS, DataSize
from problems.backend import BACKENDS, MissingExtraError, available_backends

console = Console()
EXPERIMENTS = Path(__file__).resolve().parent / "experiments"


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
    failures = run_experiment(load_experiment(args.experiment), args)
    return 1 if failures else 0


def run_experiment(experiment: Experiment, args: argparse.Namespace) -> list[Outcome]:
    """Run an experiment into ``args.out/<suite>``: its runs, then for tuned entries the
    tuning runs, the choice (bench/tuning.py) and the chosen runs; the failed outcomes."""
    store = Store(Path(args.out) / experiment.suite)
    store.write_suite(experiment)
    for note in experiment.skipped:
        console.print(f"  [yellow]skipped[/]: {note}")
    failures = run_batch(experiment.specs, store, args, f"[bold]{experiment.suite}[/]")
    if experiment.groups and experiment.tuning:
        rule = experiment.tuning
        tuning = [s for g in experiment.groups for s in g.tuning_specs(rule)]
        failures += run_batch(tuning, store, args, f"[bold]{experiment.suite}[/] tuning "
                              f"({len(experiment.groups)} groups)")
        selections = [choose(g, rule, store) for g in experiment.groups]
        finals = [s for sel in selections if sel.chosen for s in sel.group.final_specs(sel.chosen)]
        failures += run_batch(finals, store, args, f"[bold]{experiment.suite}[/] tuned")
        store.write_suite(experiment, finals, [sel.to_dict(rule) for sel in selections])
        for sel in selections:
            if sel.chosen is None:
                console.print(f"  [red]tuning failed[/] {sel.group.key}: every candidate failed")
    return failures


def run_batch(specs: list[RunSpec], store: Store, args: argparse.Namespace,
              title: str) -> list[Outcome]:
    """Run the pending ``specs`` with a progress bar; the failed outcomes."""
    todo = pending(specs, store, force=args.force)
    console.print(f"{title}: {len(specs)} runs ({len(specs) - len(todo)} cached, "
                  f"{len(todo)} to run) -> {store.root}")
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
    return failures


# -- reproduce --------------------------------------------------------------------------

def paper_experiments(paper: str, scale: str) -> list[Path]:
    """The experiment files of a paper at a scale: bench/experiments/<paper>/<scale>/*.yaml."""
    folder = EXPERIMENTS / paper / scale
    files = sorted(folder.glob("*.yaml"))
    if not files:
        known = sorted(p.name for p in EXPERIMENTS.iterdir() if (p / scale).is_dir())
        raise UsageError(f"no {scale} experiments for {paper!r} in {folder} "
                         f"(papers with {scale} experiments: {', '.join(known) or 'none'})")
    return files


def cmd_reproduce(args: argparse.Namespace) -> int:
    from reports.paper import build_paper_page
    from reports.site import build_index

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    papers = (sorted(p.name for p in EXPERIMENTS.iterdir() if (p / args.scale).is_dir())
              if args.all else args.papers)
    if not papers:
        raise UsageError("name at least one paper, or --all")
    start = time.perf_counter()
    plans = {paper: [load_experiment(f) for f in paper_experiments(paper, args.scale)]
             for paper in papers}
    failures = [f for paper in papers for exp in plans[paper] for f in run_experiment(exp, args)]
    for paper in papers:
        page = build_paper_page(paper, args.scale, Path(args.out),
                                Path(args.out) / "report" / paper / args.scale)
        console.print(f"{paper} ({args.scale}): {page / 'index.html'}")
    record_wall_time(Path(args.out), args, papers, time.perf_counter() - start)
    console.print(f"report: {build_index(Path(args.out) / 'report')}")
    return 1 if failures else 0


def record_wall_time(out: Path, args: argparse.Namespace, papers: list[str],
                     seconds: float) -> None:
    """Append this reproduction's wall time to OUT/reproduce_times.jsonl (the runtime page
    shows the latest one; cached runs make a rerun faster, so ``force`` is kept too)."""
    import json
    import os

    from bench.env import git_sha

    entry = {"papers": papers, "all": bool(args.all), "scale": args.scale, "jobs": args.jobs,
             "force": bool(args.force), "wall_s": round(seconds, 1), "cpus": os.cpu_count(),
             "git_sha": git_sha(), "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    with (out / "reproduce_times.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")


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
    table.add_row("ε advanced composition (no amplification)", fmt(plan.eps.advanced))
    table.add_row("ε as the paper computes it", fmt(plan.eps_paper))
    console.print(table)
    return 0


# -- estimate ---------------------------------------------------------------------------

def cmd_estimate(args: argparse.Namespace) -> int:
    from algorithms.noisy_sgd import lemma_3_2_bound
    from bench.spec import component, instantiate_params
    from problems import get_problem
    from problems.backend import BackendSpec, get_backend
    from problems.statistics import start_statistics

    spec = component("problem", args.problem, _param_pairs(args.param), "estimate")
    problem = get_problem(spec.name)(instantiate_params("problem", spec))
    instance = problem.build(args.seed)
    backend = get_backend(BackendSpec(name=args.backend or problem.backends[0]))
    stats = start_statistics(instance.oracle(backend))
    table = Table(title=f"{spec.name} at x0 (seed {args.seed}, n={instance.n}, d={instance.d})")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("smoothness L (max |eig ∇²F(x0)|)", f"{stats.smoothness:.4g}")
    table.add_row("f_max = F(x0)", f"{stats.f_max:.4g}")
    table.add_row("gradient spread σ", f"{stats.grad_std:.4g}")
    table.add_row("max per-sample ‖∇f_i(x0)‖", f"{stats.max_grad_norm:.4g}")
    if args.steps:
        bound = lemma_3_2_bound(stats.smoothness, stats.f_max, stats.grad_std, instance.n,
                                args.steps, args.delta, args.c)
        table.add_row(f"Lemma 3.2 C (T={args.steps}, δ={args.delta:g}, c={args.c:g})",
                      f"{bound:.4g}")
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


# -- audit ------------------------------------------------------------------------------

def cmd_audit(args: argparse.Namespace) -> int:
    import json

    from joblib import Parallel, delayed

    from bench.audit import audit_algorithm
    from bench.env import git_sha
    from reports.privacy import build_privacy_page
    from reports.site import build_index

    private = sorted(name for name, cls in ALGORITHMS.items() if cls.private)
    names = private if args.all else args.algorithms
    if not names:
        raise UsageError("name at least one algorithm, or --all")
    for name in names:
        if not get_algorithm(name).private:
            raise UsageError(f"{name} is not private: there is nothing to audit")
    if args.runs < 4 or args.jobs < 1:
        raise UsageError("--runs must be >= 4 and --jobs >= 1")
    folder = Path(args.out) / "audit"
    folder.mkdir(parents=True, exist_ok=True)
    results = Parallel(n_jobs=args.jobs)(
        delayed(audit_algorithm)(name, args.problem, runs=args.runs, epsilon=args.epsilon,
                                 delta=args.delta)
        for name in names)
    table = Table(title=f"privacy audit ({args.runs} canary runs per side)")
    for col in ("algorithm", "σ", "ε PLD", "ε paper", "L0", "Δ ratio", "FPR ub", "TPR lb",
                "TPR max", "μ lb", "ε lb", "L1"):
        table.add_column(col)
    for result in results:
        record = {**result.to_dict(), "git_sha": git_sha()}
        (folder / f"{result.algorithm}.json").write_text(json.dumps(record, indent=1))
        c, e = result.canary, result.exact

        def verdict(ok: bool) -> str:
            return "pass" if ok else "[red]FAIL[/]"

        table.add_row(result.algorithm, f"{result.sigma:.4g}",
                      f"{result.eps_claimed['headline']:.4g}",
                      "–" if result.eps_paper is None else f"{result.eps_paper:.4g}",
                      verdict(e.passed), f"{e.max_sensitivity_ratio:.4g}", f"{c.fpr_ub:.3f}",
                      f"{c.tpr_lb:.3f}", f"{c.tpr_max:.3f}", f"{c.mu_lb:.3f}",
                      f"{c.eps_lb:.3f}", verdict(c.passed))
        for failure in e.failures:
            console.print(f"  [red]{result.algorithm}[/]: {failure}")
    console.print(table)
    page = build_privacy_page(folder, Path(args.out) / "report" / "privacy")
    console.print(f"privacy page: {page / 'index.html'}")
    build_index(Path(args.out) / "report")
    return 0 if all(r.passed for r in results) else 1


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
    a.add_argument("--calibration", default="pld", choices=CALIBRATIONS)
    a.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="other algorithm parameters")

    rp = sub.add_parser("reproduce", help="run a paper's experiments and write its page")
    rp.add_argument("papers", nargs="*", help="paper keys, e.g. avdiukhin2024")
    rp.add_argument("--all", action="store_true", help="every paper with experiments")
    rp.add_argument("--scale", default="quick", choices=("quick", "paper"))
    rp.add_argument("--out", default="out", help="results root (default: out)")
    rp.add_argument("--jobs", type=int, default=1, help="parallel runs (joblib)")
    rp.add_argument("--force", action="store_true", help="rerun finished runs too")
    rp.add_argument("--no-progress", action="store_true", help="no progress bar")

    es = sub.add_parser("estimate", help="problem statistics at x0 (L, f_max, σ, Lemma 3.2 C)")
    es.add_argument("problem")
    es.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    es.add_argument("--seed", type=int, default=0)
    es.add_argument("--backend", choices=("numpy", "torch", "jax"))
    es.add_argument("--steps", type=int, help="T, for avdiukhin2024's Lemma 3.2 bound")
    es.add_argument("--delta", type=float, default=0.01)
    es.add_argument("--c", type=float, default=1.0, help="Lemma 3.2's absolute constant")

    au = sub.add_parser("audit", help="privacy audit: exact checks and a canary audit")
    au.add_argument("algorithms", nargs="*", help="private algorithm names")
    au.add_argument("--all", action="store_true", help="every private algorithm")
    au.add_argument("--problem", help="problem (default: a small synthetic one)")
    au.add_argument("--runs", type=int, default=1000, help="canary runs per side")
    au.add_argument("--epsilon", type=float, default=2.0, help="target ε σ is calibrated to")
    au.add_argument("--delta", type=float, default=1e-5)
    au.add_argument("--jobs", type=int, default=1, help="algorithms audited in parallel")
    au.add_argument("--out", default="out", help="results root: OUT/audit, OUT/report/privacy")

    rep = sub.add_parser("report", help="HTML + LaTeX report of a results directory")
    rep.add_argument("results", help="a suite directory, e.g. out/smoke")
    rep.add_argument("--out", help="report directory (default: RESULTS/report)")
    return p


COMMANDS = {"list": cmd_list, "run": cmd_run, "reproduce": cmd_reproduce,
            "account": cmd_account, "estimate": cmd_estimate, "report": cmd_report,
            "audit": cmd_audit}


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
