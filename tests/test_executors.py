"""Executors (bench/executors.py) with real engines: joblib, a Dask LocalCluster, submitit's
local executor; workers that die; resuming a killed sweep; ``--collect``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.progress import Task

from bench import env, executors, fingerprint
from bench.executors import DaskExecutor, LocalExecutor, SlurmExecutor, load_resources
from bench.experiment import load_experiment
from bench.spec import RunSpec
from bench.store import Store
from bench.sweep import Tally
from problems.backend import MissingExtraError
from saddlebench.cli import main

pytest.importorskip("distributed")
pytest.importorskip("submitit")

SADDLE = {"name": "strict_saddle", "params": {"d": 5, "n": 200}, "backend": "numpy"}
SGD = {"name": "sgd", "params": {"lr": 0.05, "steps": 20, "batch_size": 16}}


def experiment(tmp_path: Path, name: str = "tiny", **overrides: Any) -> Path:
    """A small experiment file: tiny sgd and dp_sgd runs (σ given: no calibration)."""
    doc: dict[str, Any] = {
        "suite": name, "seeds": 2, "privacy": {"epsilon": 2, "sigma": 1.0},
        "eval": {"points": 3, "metrics": ["loss", "grad_norm"]}, "problems": [SADDLE],
        "algorithms": [SGD, {"name": "dp_sgd", "params": {**SGD["params"], "clip": 1.0}}],
        **overrides}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(autouse=True)
def fresh_fingerprint() -> None:
    """Workers compute the code fingerprint afresh; so does this process, per test (the
    sources may change between tests while one develops)."""
    fingerprint.clear()
    env._static.cache_clear()


def slow_experiment(tmp_path: Path, runs: int = 6) -> Path:
    """Runs of about half a second each: long enough to kill something mid-run."""
    return experiment(tmp_path, "slow", seeds=runs, privacy={"epsilon": "inf"},
                      eval={"points": 3, "metrics": ["loss"]},
                      algorithms=[{"name": "sgd", "params": {"lr": 0.01, "steps": 8000,
                                                             "batch_size": 16}}])


def specs_of(path: Path) -> list[RunSpec]:
    return load_experiment(path).specs


def finals(store: Store) -> dict[str, tuple[str, float, float]]:
    """Run id -> (status, final loss, final gradient norm), from the sidecars."""
    return {s["run_id"]: (s["status"], s["final"]["loss"], s["final"]["grad_norm"])
            for s in store.sidecars()}


def stored(store: Store) -> dict[str, str]:
    """Run id -> status of every run in the store (what workers wrote, whatever the code
    fingerprint: the sources may be edited while the tests run)."""
    return {s["run_id"]: s["status"] for s in store.sidecars()}


def mtimes(store: Store) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in store.runs_dir.glob("*.json")}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), err


# -- engines ------------------------------------------------------------------------------


def test_dask_local_cluster_matches_the_local_executor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = experiment(tmp_path)
    for name, options in (("local", []), ("dask", ["--executor", "dask", "--cluster", "local:2"])):
        code, text, _ = cli(capsys, "run", str(path), "--out", str(tmp_path / name),
                            "--no-progress", *options)
        assert code == 0 and "0 cached, 4 to run" in text and "finished: 4 done" in text
    local, dask = Store(tmp_path / "local" / "tiny"), Store(tmp_path / "dask" / "tiny")
    assert sorted(finals(dask)) == sorted(s.digest for s in specs_of(path))
    assert finals(dask) == finals(local)  # seeded runs: the same numbers wherever they run


def test_submitit_local_executor_runs_a_sweep(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executors, "ARRAY_LIMIT", 1)  # one job array per run
    specs = specs_of(experiment(tmp_path, seeds=1))
    store = Store(tmp_path / "out")
    executor = SlurmExecutor({"default": {"timeout_min": 5, "mem_gb": 1}}, max_concurrent=2,
                             cluster="local", poll_s=0.2)
    outcomes = list(executor.submit_all(specs, store.root))
    assert sorted(o.run_id for o in outcomes) == sorted(s.digest for s in specs)
    assert {o.status for o in outcomes} == {"done"}
    assert stored(store) == {spec.digest: "done" for spec in specs}
    assert any((store.root / ".submitit").glob("*_log.out"))  # submitit's logs, by the store
    assert executor.running == 0


def test_slurm_resources_per_algorithm(tmp_path: Path) -> None:
    spec = specs_of(experiment(tmp_path))[-1]  # dp_sgd
    gpu = RunSpec.from_dict({**spec.to_dict(), "backend": {"name": "torch", "device": "cuda"}})
    path = tmp_path / "resources.yaml"
    path.write_text("default: {mem_gb: 4, slurm_partition: cpu}\n"
                    "dp_sgd: {mem_gb: 32, timeout_min: 240}\n")
    executor = SlurmExecutor(load_resources(path))
    assert executor.resources_for(spec) == {"timeout_min": 240, "mem_gb": 32, "cpus_per_task": 2,
                                            "gpus_per_node": 0, "slurm_partition": "cpu"}
    assert executor.resources_for(gpu)["gpus_per_node"] == 1  # cuda runs get a GPU
    path.write_text("dp_sdg: {mem_gb: 32}\n")
    with pytest.raises(ValueError, match=r"unknown algorithm.*dp_sdg"):
        load_resources(path)
    bad = SlurmExecutor({"default": {"memory": 4}}, cluster="local")
    with pytest.raises(ValueError, match="invalid SLURM resources"):
        next(bad.submit_all([spec], tmp_path / "out"))


# -- workers that die ---------------------------------------------------------------------


def test_dask_reschedules_the_run_of_a_killed_worker(tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    specs = specs_of(slow_experiment(tmp_path, runs=4))
    store = Store(tmp_path / "out")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = DaskExecutor(cluster.scheduler_address)  # connects like tcp://HOST:PORT
        outcomes = executor.submit_all(specs, store.root)
        got = [next(outcomes)]
        busy = next(w for w, keys in client.processing().items() if keys)
        victim = client.run(os.getpid, workers=[busy])[busy]
        os.kill(victim, signal.SIGKILL)  # mid-run: its nanny restarts it, dask reschedules
        got += list(outcomes)
        assert victim not in client.run(os.getpid).values()
    assert sorted(o.run_id for o in got) == sorted(s.digest for s in specs)
    assert {o.status for o in got} == {"done"}
    assert stored(store) == {spec.digest: "done" for spec in specs}


def test_killed_worker_loses_only_the_runs_in_flight(tmp_path: Path) -> None:
    import psutil

    specs = specs_of(slow_experiment(tmp_path))
    store = Store(tmp_path / "out")
    outcomes = LocalExecutor(jobs=2).submit_all(specs, store.root)
    got = [next(outcomes)]
    workers = [p for p in psutil.Process().children()
               if "popen_loky" in " ".join(p.cmdline())]
    workers[0].kill()
    got += list(outcomes)
    assert sorted(o.run_id for o in got) == sorted(s.digest for s in specs)
    failed = {o.run_id for o in got if o.status == "error"}
    assert 1 <= len(failed) <= 2  # at most the jobs in flight when the worker died
    assert all("TerminatedWorkerError" in (o.error or "") for o in got if o.status == "error")
    assert stored(store) == {s.digest: "done" for s in specs if s.digest not in failed}


def test_killed_sweep_resumes_with_exactly_the_missing_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = slow_experiment(tmp_path)
    out = tmp_path / "out"
    store = Store(out / "slow")
    sweep = subprocess.Popen([sys.executable, "-m", "saddlebench.cli", "run", str(path), "--out",
                              str(out), "--no-progress"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(mtimes(store)) < 2 and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(sweep.pid, signal.SIGKILL)  # the submitting process and its run, mid-sweep
    sweep.wait()
    kept = mtimes(store)
    assert 2 <= len(kept) < 6
    for name in kept:  # what a killed sweep leaves is complete
        side = json.loads((store.runs_dir / name).read_text())
        assert side["status"] == "done" and store.trajectory_path(side["run_id"]).is_file()
    (store.runs_dir / ".deadbeef.json.x1y2.tmp").write_text('{"run_id": "dead')  # torn write
    assert len(store.runs()) == len(kept)

    code, text, _ = cli(capsys, "run", str(path), "--out", str(out), "--no-progress")
    assert code == 0
    assert f"{len(kept)} cached, {6 - len(kept)} to run" in text
    assert {k: v for k, v in mtimes(store).items() if k in kept} == kept  # not rerun
    assert stored(store) == {spec.digest: "done" for spec in specs_of(path)}


# -- the CLI ------------------------------------------------------------------------------


def test_collect_reports_without_running(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    failing = {"name": "noisy_sgd", "params": {"steps": 5}}  # no bound G on this problem
    problem = {"name": "nc_least_squares", "params": {"clients": 2, "base_n": 50, "d": 5},
               "backend": "numpy"}
    path = experiment(tmp_path, problems=[problem], privacy={"epsilon": 1},
                      algorithms=[SGD, failing])
    out = tmp_path / "out"
    store = Store(out / "tiny")
    code, text, _ = cli(capsys, "run", str(path), "--out", str(out), "--collect")
    assert code == 0 and "4 runs: 0 finished, 0 failed, 4 missing" in text
    assert not store.runs_dir.exists()

    code, text, _ = cli(capsys, "run", str(path), "--out", str(out), "--no-progress")
    assert code == 1 and "2 failed" in text and "error" in text
    sgd = next(s for s in specs_of(path) if s.algorithm.name == "sgd")
    store.sidecar_path(sgd.digest).unlink()
    before = mtimes(store)
    code, text, _ = cli(capsys, "run", str(path), "--out", str(out), "--collect")
    assert code == 1  # failed runs are failures
    assert "4 runs: 1 finished, 2 failed, 1 missing" in text
    assert text.count("error ") == 2 and "noisy_sgd" in text
    assert mtimes(store) == before  # nothing ran

    code, text, _ = cli(capsys, "run", str(path), "--out", str(out), "--no-progress")
    assert "1 cached, 3 to run" in text  # the missing run and the failed ones


def test_experiments_overlap_on_local_workers_with_the_same_results(tmp_path: Path) -> None:
    """Several experiments on a local executor with two workers run two at a time (threads
    sharing the pool): every run's result is the one a sequential sweep stores."""
    from bench.sweep import run_experiments

    files = [experiment(tmp_path, name, seeds=3) for name in ("one", "two", "three")]
    results = {}
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        pairs = [(load_experiment(f), Store(root / f.stem)) for f in files]
        assert run_experiments(pairs, LocalExecutor(jobs), progress=False) == []
        results[jobs] = [finals(store) for _, store in pairs]
    assert results[1] == results[2] and all(len(r) == 6 for r in results[2])


def test_ctrl_c_in_overlapped_experiments_cancels_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interruption in one overlapped experiment cancels the executor: the slow one
    beside it stops early (its finished runs stored) and the sweep says what is stored."""
    import bench.sweep

    real = bench.sweep.run_experiment

    def run_experiment(experiment: Any, store: Store, executor: Any, **kw: Any) -> Any:
        if experiment.suite == "tiny":
            time.sleep(1.0)  # the slow experiment's first runs are in flight
            raise KeyboardInterrupt
        return real(experiment, store, executor, **kw)

    monkeypatch.setattr(bench.sweep, "run_experiment", run_experiment)
    slow, tiny = load_experiment(slow_experiment(tmp_path, 12)), load_experiment(
        experiment(tmp_path))
    executor = LocalExecutor(2)
    slow_store = Store(tmp_path / "out" / "slow")
    with pytest.raises(bench.sweep.Interrupted, match=r"interrupted: .* runs done"):
        bench.sweep.run_experiments([(slow, slow_store), (tiny, Store(tmp_path / "out" / "t"))],
                                    executor, progress=False)
    assert executor.cancelled and len(stored(slow_store)) < 12


def test_tally_shows_running_and_failed() -> None:
    executor = LocalExecutor(jobs=2)
    executor.running = 2
    counts = Counter({"done": 3, "error": 1})
    task = Task(0, "tiny (local)", 10, 4, _get_time=time.monotonic, fields={"counts": counts})
    assert str(Tally(executor).render(task)) == "running=2 done=3 failed=1"


@pytest.mark.parametrize(("argv", "message"), [
    (["--executor", "dask"], "needs --cluster"),
    (["--executor", "dask", "--cluster", "local:0"], "--cluster must be local:N"),
    (["--executor", "dask", "--cluster", "somehost"], "--cluster must be local:N"),
    (["--cluster", "local:2"], "--cluster applies to --executor dask"),
    (["--max-concurrent", "4"], "applies to --executor slurm"),
    (["--executor", "slurm", "--max-concurrent", "0"], "--max-concurrent must be >= 1"),
    (["--executor", "dask", "--cluster", "tcp://127.0.0.1:9"], "cannot reach the dask scheduler"),
])
def test_bad_executor_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              argv: list[str], message: str) -> None:
    code, _, err = cli(capsys, "run", str(experiment(tmp_path)), "--out",
                       str(tmp_path / "out"), "--no-progress", *argv)
    assert code == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize(("module", "executor"), [
    ("distributed", DaskExecutor("local:1")), ("submitit", SlurmExecutor(cluster="local"))])
def test_missing_extra_names_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         module: str, executor: Any) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'saddlebench\[cluster\]'"):
        next(executor.submit_all(specs_of(experiment(tmp_path)), tmp_path / "out"))


def _pid() -> int:
    return os.getpid()


def test_released_workers_are_stopped_and_a_later_pool_is_fresh() -> None:
    """The ``saddlebench`` command stops its workers on the way out (``cli.entry``) instead
    of joining them at interpreter exit."""
    first = set(executors.map_in_workers([_pid, _pid], 2))
    executors.release_workers()
    for pid in first:  # killed: gone within a few seconds, without waiting on the pool
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"worker {pid} is still alive")
    assert not first & set(executors.map_in_workers([_pid, _pid], 2))
    executors.release_workers()
