"""The command line as a user meets it: Ctrl-C, --version, help, suggestions, tables in logs.

No user action may end in a traceback: Ctrl-C during a sweep stops it with one line saying
what is stored and how to run the rest (exit status 130), and the rerun runs only the
missing runs.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from saddlebench.cli import main

ROOT = Path(__file__).resolve().parent.parent


def many_runs(tmp_path: Path, seeds: int = 12) -> Path:
    """An experiment of ``seeds`` short runs (a fraction of a second each)."""
    doc = {"suite": "many", "seeds": seeds, "eval": {"points": 3, "metrics": ["loss"]},
           "problems": [{"name": "strict_saddle", "params": {"d": 5, "n": 200}}],
           "algorithms": [{"name": "sgd", "params": {"lr": 0.05, "steps": 3000,
                                                     "batch_size": 16}}]}
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def interrupt_sweep(argv: list[str], runs: Path, after: int) -> subprocess.CompletedProcess[str]:
    """Run ``saddlebench ARGV`` in a subprocess and send it SIGINT (Ctrl-C) once ``after``
    results are stored in ``runs``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    proc = subprocess.Popen([sys.executable, "-m", "saddlebench.cli", *argv], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as a terminal's Ctrl-C would find it, whatever pytest inherited
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while len(glob.glob(str(runs / "*.json"))) < after and proc.poll() is None:
        assert time.monotonic() < deadline, "the sweep stored nothing"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_ctrl_c_stops_cleanly_and_the_rerun_runs_only_the_missing_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: int) -> None:
    experiment, out = many_runs(tmp_path), tmp_path / "out"
    runs = out / "many" / "runs"
    argv = ["run", str(experiment), "--out", str(out), "--jobs", str(jobs)]
    stopped = interrupt_sweep(argv, runs, after=2)
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stdout + stopped.stderr
    (line,) = stopped.stderr.strip().splitlines()
    match = re.fullmatch(r"saddlebench: interrupted: (\d+) of 12 runs done \(stored in (.+)\); "
                         r"rerun the same command to run the remaining (\d+)", line)
    assert match, line
    done = int(match[1])
    assert Path(match[2]) == out / "many" and 2 <= done < 12 and int(match[3]) == 12 - done
    kept = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert len(kept) == done  # what finished is stored, nothing half-written beside it
    assert main([*argv[:-1], "1", "--no-progress"]) == 0
    assert f"12 runs ({done} cached, {12 - done} to run)" in capsys.readouterr().out
    assert {n: t for n, t in ((p.name, p.stat().st_mtime_ns) for p in runs.glob("*.json"))
            if n in kept} == kept  # the finished runs were not run again
    assert len(list(runs.glob("*.json"))) == 12


def test_ctrl_c_with_force_says_to_rerun_without_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """In process: a KeyboardInterrupt raised by the second run."""
    import bench.executors

    calls: list[Any] = []

    def run_and_store(spec: Any, root: Any) -> Any:
        calls.append(spec)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(spec, root)

    real = bench.executors.run_and_store
    monkeypatch.setattr(bench.executors, "run_and_store", run_and_store)
    code = main(["run", str(many_runs(tmp_path, seeds=3)), "--out", str(tmp_path / "out"),
                 "--force", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 130
    assert err.strip() == (f"saddlebench: interrupted: 1 of 3 runs done (stored in "
                           f"{tmp_path / 'out' / 'many'}); rerun the same command without "
                           "--force to run the remaining 2")


def test_ctrl_c_outside_a_sweep_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import saddlebench.cli

    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(saddlebench.cli.COMMANDS, "list", interrupted)
    assert main(["list"]) == 130
    assert capsys.readouterr().err == "saddlebench: interrupted\n"


# -- --version ---------------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"saddlebench {importlib.metadata.version('saddlebench')}\n"


# -- help, suggestions ----------------------------------------------------------------------


def test_help_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: quick)" in text and "(default: 1)" in text  # --scale, --jobs
    assert "(default: False)" not in text and "(default: None)" not in text
    assert text.count("(default: out)") == 1


@pytest.mark.parametrize(("argv", "suggested"), [
    (["account", "--algorithm", "dp_sdg", "--n", "100", "--sigma", "1"], "'dp_sgd'"),
    (["estimate", "strict_sadle"], "'strict_saddle'"),
    (["reproduce", "avdiukhin2042"], "'avdiukhin2024'"),
])
def test_misspelt_names_get_a_suggestion(capsys: pytest.CaptureFixture[str], argv: list[str],
                                         suggested: str) -> None:
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"(did you mean {suggested}" in line


def test_did_you_mean() -> None:
    from problems.registry import did_you_mean

    assert did_you_mean("lrr", ["lr", "steps", "batch_size"]) == " (did you mean 'lr'?)"
    assert did_you_mean("dp_sdg", ["dp_sgd", "dp_sgda", "sgd", "dp_rgda"]) == (
        " (did you mean 'dp_sgd', 'dp_sgda' or 'dp_rgda'?)")
    assert did_you_mean("zzz", ["lr", "steps"]) == ""


# -- output in logs ---------------------------------------------------------------------------


def test_tables_in_a_log_are_plain_and_uncut(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a terminal (captured): no box, no 80-column cut ("dp_…"), one line per row."""
    from algorithms import ALGORITHMS

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "│" not in out
    lines = out.splitlines()
    assert "# algorithms" in lines and "name | paper | private | reference" in lines
    for name, cls in ALGORITHMS.items():
        assert f"{name} | {cls.paper} | {'yes' if cls.private else 'no'} | {cls.reference}" \
            in lines


@pytest.mark.parametrize("width", [60, 80, 200])
def test_progress_line_fits_the_terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    import io
    from collections import Counter

    import bench.sweep
    from bench.executors import LocalExecutor

    console = bench.sweep.LogConsole(force_terminal=True, width=width, file=io.StringIO(),
                                     record=True)
    monkeypatch.setattr(bench.sweep, "console", console)
    bar = bench.sweep.progress_bar(LocalExecutor(2))
    bar.advance(bar.add_task("a_suite tuned (local)", total=10_000,
                             counts=Counter(done=1234, error=5)), 1239)
    console.print(bar.get_renderable())
    (line,) = console.export_text().splitlines()
    assert len(line) <= width and "running=0 done=1234 failed=5" in line


def test_progress_is_hidden_in_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(many_runs(tmp_path, seeds=2)), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"many: 2 runs (0 cached, 2 to run) -> {tmp_path / 'many'}",
                   f"finished: 2 done; results in {tmp_path / 'many'}"]


# -- data download ------------------------------------------------------------------------------


@pytest.mark.parametrize(("problem", "loader"), [("cifar10_cnn", "load_cifar"),
                                                 ("mnist_mlp", "load_mnist"),
                                                 ("cola_bert", "load_cola")])
def test_download_is_a_param_outside_the_run_id(monkeypatch: pytest.MonkeyPatch,
                                                problem: str, loader: str) -> None:
    """``download: true`` (which the missing-data error suggests) is accepted in a file,
    reaches the loader, and leaves the run id of the same run without it."""
    import problems.text
    import problems.vision
    from bench.experiment import parse_experiment
    from bench.spec import instantiate_params
    from problems import get_problem

    def doc(**params: Any) -> dict[str, Any]:
        return {"suite": "s", "problems": [{"name": problem, "params": params,
                                            "backend": "torch"}],
                "algorithms": [{"name": "sgd"}]}

    (plain,) = parse_experiment(doc()).specs
    (fetching,) = parse_experiment(doc(download=True)).specs
    assert fetching.problem.params["download"] is True
    assert fetching.digest == plain.digest == parse_experiment(doc(download=False)).specs[0].digest

    seen: list[bool] = []

    def fake(*args: Any, download: bool = False, **kwargs: Any) -> Any:
        seen.append(download)
        raise FileNotFoundError("stop here")

    module = problems.text if loader == "load_cola" else problems.vision
    monkeypatch.setattr(module, loader, fake)
    instance = get_problem(problem)(instantiate_params("problem", fetching.problem))
    with pytest.raises(FileNotFoundError, match="stop here"):
        instance.build(0)
    assert seen == [True]


@pytest.mark.parametrize(("problem", "algorithm", "message"), [
    ({"name": "digits_mlp", "backend": "torch"}, {"name": "sgd", "params": {"batch_size": 2000}},
     "sgd on digits_mlp: batch_size 2000 exceeds n = 1347"),
    ({"name": "strict_saddle", "params": {"n": 100}},
     {"name": "dp_sgd", "params": {"batch_size": 101}}, "exceeds n = 100"),
    ({"name": "nc_least_squares", "params": {"clients": 10, "base_n": 100}},
     {"name": "prisma", "params": {"batch_size": 150}},
     "prisma on nc_least_squares: batch_size 150 exceeds the smallest client's 100 samples"),
    ({"name": "synthetic_mlp", "params": {"n_train": 500, "clients": 4}, "backend": "torch"},
     {"name": "prisma", "params": {"batch_size": 200}}, "the smallest client's 125 samples"),
])
def test_a_batch_larger_than_the_data_is_refused_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], problem: dict[str, Any],
        algorithm: dict[str, Any], message: str) -> None:
    """``batch_size > n`` (or above a client's share) is a usage error at validation, for
    every problem that knows its sizes without loading data; nothing runs."""
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"suite": "big", "seeds": 2, "problems": [problem],
                                    "privacy": {"epsilon": 1, "delta": 1e-5},
                                    "algorithms": [algorithm]}))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_problem_sizes_match_the_built_data() -> None:
    """:meth:`Problem.size` gives the n and client sizes that :meth:`build` produces."""
    from problems import get_problem

    for name, params in [("digits_mlp", {"clients": 3}), ("digits_cnn", {}),
                         ("strict_saddle", {"n": 300, "clients": 7}),
                         ("nc_least_squares", {"clients": 3, "base_n": 20, "dup": 2}),
                         ("synthetic_mlp", {"n_train": 300, "n_test": 50, "clients": 2}),
                         ("matrix_sensing", {}), ("ncsc_double_well", {})]:
        cls = get_problem(name)
        problem = cls(cls.Params(**params))
        size, built = problem.size(), problem.build(0)
        assert size is not None and size.n == built.n, name
        assert not size.clients or [len(c) for c in size.clients] == [len(c) for c in
                                                                        built.clients], name


# -- data sets and the pre-flight -----------------------------------------------------------


def test_data_lists_every_data_set_with_where_checksums_and_how(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from test_data_loaders import tiny_fashion

    from problems.data import catalog
    from problems.data.mnist import FASHION_MNIST

    tiny = tiny_fashion(tmp_path, tmp_path / "system")
    fashion = dataclasses.replace(catalog.dataset("fashion-mnist"),
                                  files=catalog._idx(tiny),
                                  verify=lambda paths: catalog.verify_gz(tiny, paths))
    monkeypatch.setattr(catalog, "DATASETS", tuple(
        fashion if d.key == "fashion-mnist" else d for d in catalog.DATASETS))
    assert main(["data", "--root", str(tmp_path / "root")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for key in ("digits", "mnist", "fashion-mnist", "cifar10", "cifar100", "cola"):
        assert f"{key} |" in out or f"{key} " in out
    assert str(tmp_path / "system") in out and "match" in out
    assert "fashion_mnist_cnn, fashion_mnist_mlp, fashion_mnist_vgg" in out
    assert f"missing: {tmp_path / 'root' / 'MNIST' / 'raw' / 'train-images-idx3-ubyte'}" in out
    assert FASHION_MNIST.name == "Fashion-MNIST"


def test_data_fetch_says_what_to_do_in_one_line(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)
    assert main(["data", "fetch", "cifar10", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot fetch CIFAR-10 here (no torchvision)" in err[0]
    assert main(["data", "fetch", "nope"]) == 2
    assert "known: digits, mnist, fashion-mnist" in capsys.readouterr().err
    assert main(["data", "fetch", "digits"]) == 0
    assert "already there" in capsys.readouterr().out


def test_a_suite_whose_data_are_missing_stops_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "needs_mnist.yaml"
    path.write_text(yaml.safe_dump({
        "suite": "needs_mnist", "seeds": 3,
        "problems": [{"name": "mnist_mlp", "backend": "torch",
                      "params": {"data_dir": str(tmp_path / "empty")}}],
        "algorithms": [{"name": "sgd", "params": {"steps": 2}}]}))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("saddlebench: error: needs_mnist: not run: data missing: MNIST")
    assert "saddlebench data fetch mnist" in err[0]
    assert not (tmp_path / "out" / "needs_mnist" / "runs").exists()


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    (tmp_path / "suite" / "runs").mkdir(parents=True)
    assert main(["report", str(tmp_path / "suite")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["saddlebench: error: matplotlib is not installed; install it with: pip "
                   "install 'saddlebench[reports]'"]
