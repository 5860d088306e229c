"""The ``saddlebench`` command: list | run | reproduce | account | estimate | audit | report |
schema | data.

Every user error (unknown names, invalid privacy targets, malformed experiment files,
missing extras) is a :class:`~bench.errors.UsageError`: one line on stderr naming the
problem, and exit status 2. Any other exception is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # each command imports what it uses: --help and --version import nothing
    from rich.table import Table

    from bench.bill import Bill
    from bench.executors import Executor
    from bench.parallel import Outcome
    from bench.spec import Experiment
    from bench.store import Store

# -- list -------------------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from algorithms import ALGORITHMS
    from bench.console import console
    from problems import PROBLEMS
    from problems.backend import BACKENDS, unavailable

    algs = Table(title="algorithms")
    for col in ("name", "paper", "private", "reference"):
        algs.add_column(col)
    for name, cls in sorted(ALGORITHMS.plugins().items()):
        algs.add_row(name, cls.paper, "yes" if cls.private else "no", cls.reference)
    probs = Table(title="problems")
    for col in ("name", "backends", "description"):
        probs.add_column(col)
    for name, pcls in sorted(PROBLEMS.plugins().items()):
        probs.add_row(name, ", ".join(pcls.backends), pcls.description)
    backs = Table(title="backends")
    backs.add_column("name")
    backs.add_column("installed")
    for name in BACKENDS:  # installed: found, not imported (torch and jax take seconds)
        backs.add_row(name, "yes" if unavailable(name) is None
                      else f"no (pip install 'saddlebench[{name}]')")
    for table in (algs, probs, backs, papers_table()):
        console.print(table)
    return 0


def papers_table() -> Table:
    """Every declared paper: its title, source and the roles its experiment files play (read
    without importing the page modules: :func:`reports.papers.paper_info`)."""
    from rich.table import Table

    from reports.papers import paper_info, paper_keys

    table = Table(title="papers")
    for col in ("key", "title", "source", "roles"):
        table.add_column(col)
    for key in paper_keys(loaded=False):
        info = paper_info(key)
        table.add_row(key, info.title, info.source, ", ".join(info.roles))
    return table


# -- run --------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    from bench.errors import UsageError
    from bench.store import Store

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.estimate:
        print_bills([load_experiment_unchecked(args.experiment, args)])
        return 0
    experiment = load_checked(args.experiment, args)
    if args.explain_cache:
        explain_cache(experiment, Store(Path(args.out) / experiment.suite))
        return 0
    failures = sweep([experiment], args, make_executor(args))
    return 1 if failures else 0


def explain_cache(experiment: Experiment, store: Store) -> None:
    """Say, per method and problem, which runs would be reused and why the others would run
    (runs nothing; tuned entries' tuning runs included)."""
    from collections import Counter

    from rich.table import Table

    from bench.console import console
    from bench.sweep import known_specs

    reasons = Counter((s.display, s.problem.name, store.explain(s))
                      for s in known_specs(experiment))
    table = Table(title=f"{experiment.suite}: the cache, run by run")
    for col in ("method", "problem", "runs", "why"):
        table.add_column(col)
    for (method, problem, why), n in sorted(reasons.items()):
        table.add_row(method, problem, str(n), why)
    console.print(table)


def sweep(experiments: list[Experiment], args: argparse.Namespace, executor: Executor,
          strict: bool = True) -> list[Outcome]:
    """:func:`bench.sweep.run_experiments` into ``--out/<suite>`` with the CLI's options,
    after the data pre-flight (:func:`with_data`)."""
    from bench.store import Store
    from bench.sweep import run_experiments

    ready = with_data(experiments, strict and not args.collect)
    return run_experiments([(e, Store(Path(args.out) / e.suite)) for e in ready],
                           executor, force=args.force, collect=args.collect,
                           progress=not args.no_progress)


def with_data(experiments: list[Experiment], strict: bool) -> list[Experiment]:
    """The experiments whose data sets are on disk, checked before any run starts; each
    other is one line, "not run: data missing", with the fix — an error when ``strict``
    (``run``), else left out (``reproduce``: the other suites run)."""
    from rich.markup import escape

    from bench.console import console
    from bench.errors import UsageError
    from bench.sweep import known_specs
    from problems import get_problem
    from problems.data.catalog import missing_data

    ready = []
    for e in experiments:
        missing = missing_data((get_problem(s.problem.name), s.problem.params.get("data_dir"))
                               for s in known_specs(e) if not s.problem.params.get("download"))
        if not missing:
            ready.append(e)
            continue
        line = f"{e.suite}: not run: data missing: {'; '.join(missing)}"
        if strict:
            raise UsageError(line)
        console.print(escape(line))
    return ready


def load_checked(path: str | Path, args: argparse.Namespace) -> Experiment:
    """An experiment file whose grid, if larger than --max-runs, the user confirmed (with
    --yes, or at a prompt on a terminal)."""
    from rich.markup import escape
    from rich.prompt import Confirm

    from bench.console import console
    from bench.errors import UsageError
    from bench.experiment import GridTooLarge, grid_limit, load_experiment

    try:
        return load_experiment(path, math.inf if args.yes else grid_limit(args.max_runs),
                               getattr(args, "set", ()))
    except GridTooLarge as exc:
        if not sys.stdin.isatty():
            raise
        console.print(escape(str(exc)))
        if not Confirm.ask(f"run all {exc.size.total:,} runs?", default=False):
            raise UsageError("not confirmed; nothing was run") from None
        return load_experiment(path, overrides=getattr(args, "set", ()))


def load_experiment_unchecked(path: str | Path, args: argparse.Namespace) -> Experiment:
    """An experiment file, at any grid size (for --estimate: nothing runs)."""
    from bench.experiment import load_experiment

    return load_experiment(path, overrides=getattr(args, "set", ()))


def print_bills(experiments: list[Experiment], by: str = "") -> None:
    """The bill of each experiment (:mod:`bench.bill`), then the total (per paper ``by``:
    their ``paper`` field); runs nothing."""
    from collections import defaultdict

    from rich.markup import escape
    from rich.table import Table

    from bench.bill import bill, describe, read_table, total
    from bench.console import console

    table = read_table()
    bills = [bill(e, table) for e in experiments]
    for b in bills:
        rows = Table(title=escape(os.path.relpath(b.path)))
        for col in ("stage", "problem · algorithm · device (batch)", "runs", "steps",
                    "throughput", "hours"):
            rows.add_column(col)
        for w in b.work:
            rows.add_row(w.stage, escape(w.shape), f"{w.runs:,}", f"{w.steps:,}",
                         escape("; ".join(sorted(w.rates))) or "missing",
                         f"{w.hours:,.2f}" if w.priced else f"≥ {w.hours:,.2f}")
        console.print(rows)
        for line in describe(b):
            console.print(escape(f"  {line}"))
    groups: dict[str, list[Bill]] = defaultdict(list)
    for e, b in zip(experiments, bills, strict=True):
        groups[(getattr(e, by) or "") if by else ""].append(b)
    for name, members in groups.items():
        console.print(escape(total(members, name)))
    if len(groups) > 1:
        console.print(escape(total(bills)))


def make_executor(args: argparse.Namespace) -> Executor:
    """The executor ``--executor`` and its options name (a cluster starts only when runs
    are submitted)."""
    from bench.errors import UsageError
    from bench.executors import DaskExecutor, LocalExecutor, SlurmExecutor, load_resources

    for option, owner in (("cluster", "dask"), ("slurm_resources", "slurm"),
                          ("max_concurrent", "slurm")):
        if getattr(args, option) is not None and args.executor != owner:
            raise UsageError(f"--{option.replace('_', '-')} applies to --executor {owner}")
    if args.executor == "dask":
        if args.cluster is None:
            raise UsageError("--executor dask needs --cluster local:N or tcp://HOST:PORT")
        return DaskExecutor(args.cluster)
    if args.executor == "slurm":
        resources = load_resources(args.slurm_resources) if args.slurm_resources else {}
        return SlurmExecutor(resources, args.max_concurrent)
    return LocalExecutor(args.jobs)


# -- reproduce --------------------------------------------------------------------------

def experiment_folder(paper: str) -> Path:
    """Where a paper's experiment files are: its Paper's ``experiments`` (a plugin's), else
    bench/experiments/<paper>."""
    from bench.experiment import EXPERIMENTS
    from reports.papers import get_paper, paper_keys

    declared = get_paper(paper).experiments if paper in paper_keys() else None
    return declared or EXPERIMENTS / paper


def reproducible(scale: str) -> list[str]:
    """The papers with experiment files at ``scale`` (built in and plugins)."""
    from bench.experiment import EXPERIMENTS, SCALES
    from reports.papers import paper_keys

    def has(folder: Path) -> bool:
        return any((folder / name).is_dir() for name in SCALES[scale])

    found = {p.name for p in EXPERIMENTS.iterdir() if has(p)}
    return sorted(found | {k for k in paper_keys() if has(experiment_folder(k))})


def paper_experiments(paper: str, scale: str) -> list[Path]:
    """The experiment files of a paper at a scale: <its folder>/<folder>/*.yaml for each
    folder the scale runs (``bench.experiment.SCALES``)."""
    from bench.errors import UsageError
    from bench.experiment import SCALES
    from problems.registry import did_you_mean

    folder = experiment_folder(paper) / scale
    files = [f for name in SCALES[scale]
             for f in sorted((experiment_folder(paper) / name).glob("*.yaml"))]
    if not files:
        raise UsageError(f"no {scale} experiments for {paper!r}"
                         f"{did_you_mean(paper, reproducible(scale))} in {folder} "
                         f"(papers with {scale} experiments: "
                         f"{', '.join(reproducible(scale)) or 'none'})")
    return files


def require_reports() -> None:
    """The report draws with matplotlib and seaborn (the ``reports`` extra): one line naming
    the extra where they are missing, before any run or page."""
    from problems.backend import require

    for module in ("matplotlib", "seaborn"):
        require(module, "reports")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from bench.console import console
    from bench.errors import UsageError
    from bench.executors import map_in_workers

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    papers = reproducible(args.scale) if args.all else args.papers
    if not papers:
        raise UsageError("name at least one paper, or --all")
    if args.estimate:
        print_bills([load_experiment_unchecked(f, args) for paper in papers
                     for f in paper_experiments(paper, args.scale)], by="paper")
        return 0
    require_reports()
    from reports.papers import get_paper, paper_keys
    from reports.site import build_site

    start = time.perf_counter()
    plans = {paper: [load_checked(f, args) for f in paper_experiments(paper, args.scale)]
             for paper in papers}
    executor = make_executor(args)
    studies = [] if args.collect else [
        functools.partial(paper_study, paper, name, args.scale, Path(args.out))
        for paper in papers if paper in paper_keys() for name in get_paper(paper).studies]
    with ThreadPoolExecutor(max_workers=2) as beside:
        # the audit and the studies need no run: in the same local workers, queued before
        # the runs (no core idles between the audit's last parts and the first runs)
        audited = (beside.submit(audit, audit_all(args.jobs, args.out))
                   if args.audit and not args.collect else None)
        studied = beside.submit(map_in_workers, studies, args.jobs, shared=True)
        failures = sweep([exp for paper in papers for exp in plans[paper]], args, executor,
                         strict=False)
        for path in studied.result():
            console.print(f"study: {path}")
        audits = audited.result() if audited is not None else []
    if not args.collect:
        record_wall_time(Path(args.out), args, papers, time.perf_counter() - start)
    index = build_site(Path(args.out), [(paper, args.scale) for paper in papers],
                       pdf=not args.no_pdf, jobs=args.jobs)
    for paper in papers:
        console.print(f"{paper} ({args.scale}): {index.parent / paper / args.scale}/index.html")
    console.print(f"report: {index}")
    return 1 if failures or not all(a.passed for a in audits) else 0


def paper_study(paper: str, name: str, scale: str, out: Path) -> Path:
    """A simulation paper ``paper``'s page needs beyond the run grid (study ``name``),
    stored under OUT/studies/ (pages only read them); a task for a worker."""
    from reports.claims import run_study
    from reports.papers import get_paper

    return run_study(get_paper(paper), name, scale, out)


def record_wall_time(out: Path, args: argparse.Namespace, papers: list[str],
                     seconds: float) -> None:
    """Append this reproduction's wall time to OUT/reproduce_times.jsonl (the runtime page
    shows the latest one; cached runs make a rerun faster, so ``force`` is kept too)."""
    from bench.env import cpu_model, git_sha

    entry = {"papers": papers, "all": bool(args.all), "audit": bool(args.audit),
             "scale": args.scale, "jobs": args.jobs,
             "force": bool(args.force), "wall_s": round(seconds, 1), "cpus": os.cpu_count(),
             "cpu": cpu_model(),
             "git_sha": git_sha(), "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    with (out / "reproduce_times.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")


# -- account ----------------------------------------------------------------------------

def _param_pairs(pairs: Sequence[str]) -> dict[str, Any]:
    from bench.errors import UsageError
    from bench.yamlio import yaml_value

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param expects KEY=VALUE, got {pair!r}")
        out[key] = yaml_value(value)
    return out


def cmd_account(args: argparse.Namespace) -> int:
    from rich.table import Table

    from bench.console import console
    from bench.errors import UsageError
    from bench.model import privacy_target
    from bench.spec import build_params, component_class
    from problems import DataSize

    cls = component_class("algorithm", args.algorithm, "--algorithm")
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
    target = privacy_target(args.epsilon if args.epsilon is not None else math.inf,
                            args.delta, args.calibration, args.sigma)
    try:
        plan = algorithm.plan(DataSize(n=args.n), target)
    except ValueError as exc:  # params the data cannot serve (a batch larger than n, ...)
        raise UsageError(f"{cls.name} on n={args.n}: {exc}") from None
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
    from rich.table import Table

    from algorithms.noisy_sgd import lemma_3_2_bound
    from bench.console import console
    from bench.errors import UsageError
    from bench.spec import component, instantiate_params
    from problems import get_problem
    from problems.backend import BackendSpec, MissingExtraError, get_backend
    from problems.data.common import DataMissingError
    from problems.statistics import start_statistics

    spec = component("problem", args.problem, _param_pairs(args.param), "estimate")
    problem = get_problem(spec.name)(instantiate_params("problem", spec))
    try:  # data or an extra this machine lacks
        instance = problem.build(args.seed)
        backend = get_backend(BackendSpec(name=args.backend or problem.backends[0]))
    except (MissingExtraError, DataMissingError) as exc:
        raise UsageError(str(exc)) from None
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
    """A suite folder (``runs/`` inside): its report. A results root: the whole site."""
    from bench.console import console
    from bench.errors import UsageError

    root = Path(args.results)
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    require_reports()
    from reports.index import update_readme
    from reports.render import build_report
    from reports.site import build_site

    if (root / "runs").is_dir():
        out = build_report(root, Path(args.out) if args.out else None)
        console.print(f"report written: {out / 'index.html'}")
        return 0
    if not any(root.glob("*/suite.json")) and not any((root / "audit").glob("*.json")):
        raise UsageError(f"no results in {root}: expected a suite folder (with runs/) or a "
                         "results root (with <suite>/suite.json or audit/); run `saddlebench "
                         "reproduce` or `saddlebench run EXPERIMENT` first")
    if args.out:
        raise UsageError("--out applies to a suite folder; a results root's site is written "
                         "to RESULTS/report")
    index = build_site(root, pdf=not args.no_pdf, jobs=args.jobs,
                       progress=functools.partial(console.print, markup=False))
    console.print(f"report written: {index}")
    if args.readme:
        update_readme(Path(args.readme), index.parent)
        console.print(f"status matrix written into {args.readme}")
    return 0


# -- audit ------------------------------------------------------------------------------

def cmd_audit(args: argparse.Namespace) -> int:
    from bench.console import console
    from reports.privacy import build_privacy_page
    from reports.site import finish_site

    results = audit(args)
    page = build_privacy_page(Path(args.out) / "audit", Path(args.out) / "report" / "privacy")
    finish_site(page.parent, pdf=False)
    console.print(f"privacy page: {page / 'index.html'}")
    return 0 if all(r.passed for r in results) else 1


def audit(args: argparse.Namespace) -> list[Any]:
    """The audits ``args`` asks for (``saddlebench audit``'s arguments), over ``args.jobs``
    local workers, each stored as OUT/audit/<algorithm>.json and printed in one table."""
    from rich.table import Table

    from algorithms import ALGORITHMS
    from bench.audit import ABOVE_BOUND, AuditRequest, run_audits
    from bench.console import console
    from bench.env import git_sha
    from bench.errors import UsageError
    from bench.spec import component_class

    private = sorted(name for name, cls in ALGORITHMS.plugins().items() if cls.private)
    names = private if args.all else args.algorithms
    if not names:
        raise UsageError("name at least one algorithm, or --all")
    for name in names:
        if not component_class("algorithm", name, "audit").private:
            raise UsageError(f"{name} is not private: there is nothing to audit")
    if args.runs < 4 or args.jobs < 1:
        raise UsageError("--runs must be >= 4 and --jobs >= 1")
    folder = Path(args.out) / "audit"
    folder.mkdir(parents=True, exist_ok=True)
    requests = [AuditRequest(name, args.problem, runs=args.runs, epsilon=args.epsilon,
                             delta=args.delta, setting=args.setting,
                             above_bound=tuple(args.above_bound or ABOVE_BOUND))
                for name in names]
    results = run_audits(requests, args.jobs, functools.partial(console.print, markup=False))
    table = Table(title=f"privacy audit (L1: at most {args.runs} canary runs per side, planned "
                        f"from L0's leakage; {args.setting} setting)")
    for col in ("algorithm", "ε claimed", "L0", "μ lb", "ε lb", "ε lb ÷ ε", "detects ε ≥",
                "L1", "L1 runs a side", "one-run ε lb", "in training", "CPU s"):
        table.add_column(col)
    for result in results:
        record = {**result.to_dict(), "git_sha": git_sha()}
        (folder / f"{result.algorithm}.json").write_text(json.dumps(record, indent=1))
        c, e = result.canary, result.exact

        def verdict(ok: bool) -> str:
            return "pass" if ok else "[red]FAIL[/]"

        def number(value: float | None, digits: int = 3) -> str:
            return "–" if value is None else f"{value:.{digits}g}"

        l1 = c.passed and (result.canary_subsampled is None or result.canary_subsampled.passed)
        table.add_row(result.algorithm, number(result.eps_claimed["headline"], 4),
                      verdict(result.exact_passed),
                      number(c.mu_lb_gdp if c.exact_gdp else c.mu_lb),
                      number(c.eps_lower), number(c.ratio), number(c.eps_detectable),
                      verdict(l1), str(c.runs // 2),
                      number(result.one_run.eps_lb if result.one_run else None),
                      number(result.one_run_training.eps_lb if result.one_run_training
                             else None), f"{result.cpu_seconds:.0f}")
        for failure in e.failures + (result.exact_l1.failures if result.exact_l1 else []):
            console.print(f"  [red]{result.algorithm}[/]: {failure}")
        for x in result.assumptions:
            flag = ("flagged" if x.flagged else "[red]NOT flagged[/]") if x.violated else (
                f"in regime: {verdict(x.passed)}")
            console.print(f"  {result.algorithm}, {x.assumption} at {x.multiple:.3g}× "
                          f"({flag}): ε lb {x.canary.eps_lower:.3g} (claim "
                          f"{number(x.canary.eps_claimed)}); guarantee_void = "
                          f"{x.guarantee_void}")
    console.print(table)
    return results


def audit_all(jobs: int, out: str) -> argparse.Namespace:
    """``saddlebench audit --all --jobs JOBS --out OUT``'s arguments, its defaults included."""
    au = argparse.ArgumentParser()
    audit_arguments(au)
    return au.parse_args(["--all", "--jobs", str(jobs), "--out", out])


# -- check ------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> int:
    """The pre-flight of each target's algorithms and problems (:mod:`bench.check`) and the
    common checks of its papers (:mod:`reports.check`); exit status 1 if one fails."""
    from bench.check import check_targets, resolve
    from bench.console import console
    from bench.errors import UsageError
    from reports.check import check_paper, paper_targets

    papers = {t: paper_targets(t) for t in args.targets}

    def has_classes(target: str) -> bool:
        try:
            return bool(resolve(target))
        except UsageError:
            if papers[target]:
                return False
            raise

    reports = check_targets([t for t in args.targets if has_classes(t)], say=console.print)
    for key in dict.fromkeys(k for keys in papers.values() for k in keys):
        report = check_paper(key)
        console.print(f"paper {key}")
        for c in report.checks:
            console.print(f"  {'pass' if c.passed else '[red]FAIL[/]'}: {c.what}")
            for failure in c.failures:
                console.print(f"    {failure}", markup=False)
        reports.append(report)
    return 0 if all(r.passed for r in reports) else 1


# -- main -------------------------------------------------------------------------------

def add_execution_options(p: argparse.ArgumentParser) -> None:
    """The options of run and reproduce: where results go, where runs execute."""
    from bench.executors import EXECUTORS

    p.add_argument("--out", default="out", help="results root (default: out)")
    p.add_argument("--executor", default="local", choices=EXECUTORS,
                   help="where runs execute: local (this machine, --jobs processes; default), "
                        "dask, slurm (submitit)")
    p.add_argument("--jobs", type=int, default=1, help="parallel runs with --executor local")
    p.add_argument("--cluster", metavar="local:N|tcp://HOST:PORT", help="with --executor "
                   "dask: start N local workers, or connect to a running scheduler")
    p.add_argument("--slurm-resources", metavar="YAML", help="with --executor slurm: submitit "
                   "parameters for 'default' and per algorithm, e.g. 'dp_sgd: {gpus_per_node: "
                   "1, mem_gb: 32}' (built in: 60 min, 8 GB, 2 CPUs, a GPU for cuda runs)")
    p.add_argument("--max-concurrent", type=int, metavar="N", help="with --executor slurm: at "
                   "most N tasks of a job array run at once")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--force", action="store_true", help="rerun finished runs too")
    again.add_argument("--collect", action="store_true", help="submit nothing: report which "
                       "runs are finished, failed or missing in the store")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_grid_options(p: argparse.ArgumentParser) -> None:
    """How large a grid may be before run and reproduce ask for confirmation; the bill."""
    p.add_argument("--estimate", action="store_true", help="run nothing: print the runs, "
                   "tuning runs and steps per file, and the GPU- or CPU-hours they take at "
                   "the throughputs measured in bench/throughput.json (missing ones named)")
    p.add_argument("--max-runs", type=int, metavar="N", help="ask before running a grid of "
                   "more than N runs (default: $SADDLEBENCH_MAX_RUNS, else 10,000)")
    p.add_argument("--yes", action="store_true", help="run a grid above --max-runs without "
                   "asking")


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends each option's text with its default, unless it has none (None, False,
    empty) or the text names it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or default in (None, argparse.SUPPRESS, [])
                or default is False or "default" in text):
            return action.help
        return f"{text} (default: %(default)s)".lstrip()


class Parser(argparse.ArgumentParser):
    """The command's argument parser (its subcommands' too): help shows the defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"formatter_class": DefaultsFormatter, **kwargs})


def run_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("experiment", help="experiment YAML file")
    r.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a value of the file, validated like it (repeatable): "
                        "seeds=5, privacy.epsilon=[1,2], algorithms.dp_sgd.lr=0.05")
    r.add_argument("--explain-cache", action="store_true",
                   help="run nothing: say which runs would be reused and why the others "
                        "would run (no result, failed, or which code changed)")
    add_execution_options(r)
    add_grid_options(r)


def account_arguments(a: argparse.ArgumentParser) -> None:
    from algorithms.base import CALIBRATIONS

    a.add_argument("--algorithm", required=True, help="algorithm name (saddlebench list)")
    a.add_argument("--n", type=int, required=True, help="data set size")
    a.add_argument("--batch", type=int, help="batch size")
    a.add_argument("--steps", type=int, help="iterations T")
    a.add_argument("--sigma", type=float, help="noise multiplier (gives ε)")
    a.add_argument("--epsilon", type=float, help="target ε (gives σ)")
    a.add_argument("--delta", type=float, default=1e-5, help="target δ")
    a.add_argument("--calibration", default="pld", choices=CALIBRATIONS,
                   help="how σ is calibrated to --epsilon")
    a.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="other algorithm parameters")


def reproduce_arguments(rp: argparse.ArgumentParser) -> None:
    rp.add_argument("papers", nargs="*", help="paper keys, e.g. avdiukhin2024")
    rp.add_argument("--all", action="store_true", help="every paper with experiments")
    rp.add_argument("--scale", default="quick", choices=("quick", "standard", "paper"),
                    help="quick: minutes on a CPU; standard: quick and the longer checks, "
                         "about an hour on a CPU; paper: the papers' settings")
    add_execution_options(rp)
    add_grid_options(rp)
    rp.add_argument("--no-pdf", action="store_true", help="write report.tex, do not run "
                    "pdflatex")
    rp.add_argument("--audit", action="store_true", help="also audit every private "
                    "algorithm (saddlebench audit --all, beside the runs in the same "
                    "workers; the report's privacy page)")


def estimate_arguments(es: argparse.ArgumentParser) -> None:
    es.add_argument("problem", help="problem name (saddlebench list)")
    es.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="problem parameters (repeatable)")
    es.add_argument("--seed", type=int, default=0, help="the instance's seed")
    es.add_argument("--backend", choices=("numpy", "torch", "jax"),
                    help="default: the problem's first backend")
    es.add_argument("--steps", type=int, help="T, for avdiukhin2024's Lemma 3.2 bound")
    es.add_argument("--delta", type=float, default=0.01, help="δ of Lemma 3.2's bound")
    es.add_argument("--c", type=float, default=1.0, help="Lemma 3.2's absolute constant")


def audit_arguments(au: argparse.ArgumentParser) -> None:
    from bench.audit import DEFAULT_RUNS, SETTINGS

    au.add_argument("algorithms", nargs="*", help="private algorithm names")
    au.add_argument("--all", action="store_true", help="every private algorithm")
    au.add_argument("--problem", help="problem (default: a small synthetic one)")
    au.add_argument("--runs", type=int, default=DEFAULT_RUNS,
                    help="at most this many canary runs per side (L1 plans fewer where L0's "
                         "measured leakage shows they suffice)")
    au.add_argument("--setting", choices=SETTINGS, default="power",
                    help="L1's setting: power (full batches, few steps; default) or "
                         "subsampled (L0's small batches)")
    au.add_argument("--above-bound", type=float, action="append", metavar="MULTIPLE",
                    help="canary norm, as a multiple of C, of the assumption audit of an "
                         "algorithm that assumes a bound (repeatable; default 3, e.g. add the "
                         "largest per-sample norm seen in real runs ÷ C)")
    au.add_argument("--epsilon", type=float, default=2.0, help="target ε σ is calibrated to")
    au.add_argument("--delta", type=float, default=1e-5, help="target δ")
    au.add_argument("--jobs", type=int, default=1, help="algorithms audited in parallel")
    au.add_argument("--out", default="out", help="results root: OUT/audit, OUT/report/privacy")


def report_arguments(rep: argparse.ArgumentParser) -> None:
    rep.add_argument("results", help="a results root (e.g. out: the whole site, into "
                                     "out/report) or one suite folder (e.g. out/smoke)")
    rep.add_argument("--out", help="a suite's report directory (default: RESULTS/report)")
    rep.add_argument("--readme", metavar="README", help="also write the status matrix into "
                     "README's status-matrix block")
    rep.add_argument("--no-pdf", action="store_true", help="write report.tex, do not run "
                     "pdflatex")
    rep.add_argument("--jobs", type=int, default=1, help="pages built in parallel processes")


def data_arguments(da: argparse.ArgumentParser) -> None:
    da.add_argument("action", nargs="?", choices=("list", "fetch"), default="list")
    da.add_argument("name", nargs="?", help="with fetch: the data set, e.g. fashion-mnist")
    da.add_argument("--root", help="the data root (default: $SADDLEBENCH_DATA, else "
                                   "~/.cache/saddlebench/data)")


def check_arguments(ch: argparse.ArgumentParser) -> None:
    ch.add_argument("targets", nargs="+", metavar="PLUGIN_OR_NAME",
                    help="a registered algorithm or problem name, or a plugin: an importable "
                         "module or an installed distribution (all it registers)")


def no_arguments(p: argparse.ArgumentParser) -> None:
    """A command without arguments."""


class Usage(NamedTuple):
    """A command's one-line help and what adds its arguments."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None] = no_arguments


USAGE = {
    "list": Usage("registered algorithms, problems and backends"),
    "run": Usage("run an experiment grid into out/<suite>", run_arguments),
    "account": Usage("ε of an algorithm's plan, or σ for a target ε", account_arguments),
    "reproduce": Usage("run a paper's experiments and write its page", reproduce_arguments),
    "estimate": Usage("problem statistics at x0 (L, f_max, σ, Lemma 3.2 C)",
                      estimate_arguments),
    "audit": Usage("privacy audit: exact checks and a canary audit", audit_arguments),
    "report": Usage("rebuild the HTML + LaTeX report from stored results", report_arguments),
    "schema": Usage("the JSON schema of experiment files, for editors: saddlebench schema > "
                    "experiment.schema.json"),
    "data": Usage("the data sets problems read: where they are, whether their checksums "
                  "match, how to get them; `data fetch NAME` gets one", data_arguments),
    "check": Usage("pre-flight of an outside algorithm or problem: the conformance checks, "
                   "a tiny run on each backend it claims, the audit's exact checks",
                   check_arguments),
}


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser, with the arguments of ``command`` only (None: of every command):
    those of some commands read constants of heavy modules."""
    p = Parser(prog="saddlebench", description="Benchmarks for DP non-convex optimisation.")
    p.add_argument("--version", action="version",
                   version=f"%(prog)s {importlib.metadata.version('saddlebench')}")
    sub = p.add_subparsers(dest="command", required=True)
    for name, usage in USAGE.items():
        s = sub.add_parser(name, help=usage.help)
        if command in (None, name):
            usage.arguments(s)
    return p


def cmd_data(args: argparse.Namespace) -> int:
    """List every data set (where, checksums, size, problems, how to get it), or fetch one."""
    from rich.markup import escape
    from rich.table import Table

    from bench.console import console
    from bench.errors import UsageError
    from problems.data.catalog import DATASETS, dataset, fetch, status
    from problems.data.common import data_root

    if args.action == "fetch":
        if not args.name:
            raise UsageError("name the data set to fetch, e.g. saddlebench data fetch "
                             "fashion-mnist (saddlebench data lists them)")
        try:
            console.print(escape(fetch(dataset(args.name), args.root)))
        except (KeyError, RuntimeError) as exc:
            raise UsageError(str(exc).strip("'\"")) from None
        return 0
    table = Table(title=f"data sets (data root: {data_root(args.root)})")
    for column in ("data set", "found", "where", "checksums", "size", "problems", "get it"):
        table.add_column(column, overflow="fold")
    for d in DATASETS:
        st = status(d, args.root)
        table.add_row(escape(st.key), "yes" if st.found else "no", escape(st.where),
                      escape(st.checksums), f"{st.size / 2**20:.1f} MB" if st.size else "–",
                      escape(", ".join(st.problems)), escape(st.how))
    console.print(table)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from bench.model import json_schema

    print(json.dumps(json_schema(), indent=1))
    return 0


COMMANDS = {"list": cmd_list, "run": cmd_run, "reproduce": cmd_reproduce,
            "account": cmd_account, "estimate": cmd_estimate, "report": cmd_report,
            "audit": cmd_audit, "schema": cmd_schema, "data": cmd_data, "check": cmd_check}


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # the command is the first word: before it come only --help and --version
    args = parser(next((a for a in argv if not a.startswith("-")), "")).parse_args(argv)
    from bench.errors import UsageError
    from problems.backend import MissingExtraError

    try:
        return COMMANDS[args.command](args)
    except (UsageError, MissingExtraError) as exc:  # anything else is a bug: its traceback shows
        return fail(exc)
    except KeyboardInterrupt as exc:  # Ctrl-C: one line (a sweep's says what is stored)
        print(f"saddlebench: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130


def entry() -> int:
    """The ``saddlebench`` command: :func:`main`, then the local workers stopped at once
    (:func:`bench.executors.release_workers`; in-process callers of :func:`main`, as the
    tests, keep theirs warm)."""
    try:
        return main()
    finally:
        executors = sys.modules.get("bench.executors")  # imported only where work ran
        if executors is not None:
            executors.release_workers()


def fail(exc: Exception) -> int:
    """Print the first line of ``exc`` as the one error line; exit status 2."""
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    print(f"saddlebench: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
