"""Developer sessions: tests, lint, typecheck, bench, gpu, asv, reproduce, report.

Every session installs into its own virtualenv torch 2.13.0 (a CPU wheel where the
machine has one; a newer pin pulls a multi-GB CUDA build) and the package with the extras
the session needs (:func:`install`).
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True

TORCH = "torch==2.13.0"


def install(session: nox.Session, extras: str) -> None:
    """torch and the package with ``extras``, without byte-compiling every installed module
    (pip's default: about a minute on one core for torch, jax, scipy and pandas, most of
    them never imported). The session's processes write the bytecode of the modules they
    import, once, under the virtualenv, whatever PYTHONDONTWRITEBYTECODE says outside."""
    venv = session.virtualenv.location
    if venv:
        session.env["PYTHONDONTWRITEBYTECODE"] = ""  # empty: unset, for Python
        session.env["PYTHONPYCACHEPREFIX"] = os.path.join(venv, "pycache")
    session.install("--no-compile", TORCH, "-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The quick test suite (pass `-- -m slow` for the slow tests, `-- -m ''` for all)."""
    install(session, "all")
    session.install("--no-deps", "-e", "examples/plugin")  # tests/test_example_plugin.py
    args = session.posargs or ["-m", "not slow"]
    session.run("pytest", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, and the import contracts of pyproject.toml (import-linter: the rooms' layers,
    no cycles between sibling modules)."""
    session.install("ruff>=0.5", "import-linter>=2.1")
    session.run("ruff", "check", ".")
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    install(session, "all,lint")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """pytest-benchmark micro benchmarks of the hot kernels (bench/micro) into
    out/bench/micro.json, issue 9's ratios, the throughput table the bill before a run
    reads (bench/throughput.json: its measured steps per second), and the runtime page
    out/report/runtime."""
    install(session, "all")
    session.run("pytest", "bench/micro", "--benchmark-only", "-p", "no:cacheprovider",
                "--benchmark-json", "out/bench/micro.json", *session.posargs)
    session.run("python", "-m", "bench.micro.ratios", "out/bench/micro.json",
                "--out", "out/bench/ratios.json")
    session.run("python", "-m", "bench.bill", "out/bench/micro.json")
    session.run("python", "-m", "reports.runtime", "out/bench/micro.json",
                "--out", "out/report/runtime")


@nox.session
def gpu(session: nox.Session) -> None:
    """The GPU check (bench/gpu_check.py), on a machine with a CUDA GPU: the cuda tests, the
    cuda micro benchmarks at the papers' batches and short paper-scale runs; stores its
    figures (bench/micro/measured/gpu.json) for the runtime page (PyPI's Linux torch wheel
    carries CUDA)."""
    install(session, "all")
    session.run("python", "-m", "bench.gpu_check", "--out", "out/gpu", "--store",
                *session.posargs)
    # the paper files' GPU steps (bench/micro/test_paper_steps.py) price `--estimate`
    session.run("python", "-m", "bench.bill", "out/gpu/micro_cuda.json")


@nox.session
def asv(session: nox.Session) -> None:
    """asv suites in this environment (bench/asv), then the HTML dashboard (.asv/html);
    pass asv arguments after --."""
    install(session, "all")
    session.run("asv", "machine", "--yes")
    # results are saved only against a commit: uncommitted changes count as HEAD's
    session.run("asv", "run", "--python=same", "--quick", "--show-stderr",
                "--set-commit-hash=HEAD", *session.posargs)
    session.run("asv", "publish")  # -> .asv/html/index.html


@nox.session
def reproduce(session: nox.Session) -> None:
    """The main job: the privacy audit of every private algorithm and every paper's quick
    reproduction, which ends by building the whole report (out/report: HTML, LaTeX and,
    where pdflatex is installed, report.pdf). The smoke experiment is ``nox -s smoke``.

    It installs only what it runs: torch, jax and the report's plotting, not the test,
    benchmark, cluster, NLP and browser extras (install 48 s from a warm pip
    cache)."""
    install(session, "torch,jax,reports")
    # real images (Debian's package where apt and root are there, else torchvision); where
    # neither is, the suites that need them say "not run: data missing" with the fix
    session.run("saddlebench", "data", "fetch", "fashion-mnist", success_codes=[0, 2])
    # the audit of every private algorithm beside the runs, in the same two workers
    session.run("saddlebench", "reproduce", "--all", "--scale", "quick", "--jobs", "2",
                "--audit")


@nox.session
def smoke(session: nox.Session) -> None:
    """The foundation's smoke experiment (three algorithms on three problems over four ε, no
    paper's claim) and its report: out/smoke/report/ (about a minute on 2 cores)."""
    install(session, "torch,jax,reports")
    session.run("saddlebench", "run", "bench/experiments/smoke.yaml", "--jobs", "2")
    session.run("saddlebench", "report", "out/smoke")


@nox.session
def report(session: nox.Session) -> None:
    """Rebuild a report from stored results: nox -s report -- out/<suite>."""
    install(session, "reports")
    session.run("saddlebench", "report", *(session.posargs or ["out/smoke"]))
