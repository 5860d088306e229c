"""The result store under damage, concurrency and failing disks.

A damaged run (bad or truncated sidecar, missing, truncated or swapped trajectory) is
skipped by readers with a warning, listed by ``Store.check`` and recomputed by the next
run; two processes writing one store at once leave it consistent; a disk that is full,
read-only or not ours gives one clear error line and leaves nothing half-written.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import bench.store
from bench.experiment import load_experiment, parse_experiment
from bench.runner import RunRecord, run_one
from bench.store import CorruptResultWarning, Store, StoreError
from saddlebench.cli import main

ROOT = Path(__file__).resolve().parent.parent


def tiny_doc(seeds: Any = 2, suite: str = "tiny") -> dict[str, Any]:
    """A few fast non-private runs on a small strict saddle."""
    return {"suite": suite, "seeds": seeds, "eval": {"points": 3, "metrics": ["loss"]},
            "problems": [{"name": "strict_saddle", "params": {"d": 5, "n": 200}}],
            "algorithms": [{"name": "sgd", "params": {"lr": 0.05, "steps": 10,
                                                      "batch_size": 16}}]}


def write_yaml(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, " ".join(captured.out.split()), captured.err


def one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("saddlebench: error: ")
    return line


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def records() -> list[RunRecord]:
    specs = parse_experiment(tiny_doc(seeds=3)).specs
    return [run_one(s) for s in specs]


@pytest.fixture
def store(tmp_path: Path, records: list[RunRecord]) -> Store:
    store = Store(tmp_path / "tiny")
    for record in records:
        store.write(record)
    return store


# -- damaged results ------------------------------------------------------------------


def damage_sidecar(path: Path, how: str) -> None:
    side = json.loads(path.read_text())
    path.write_text({"truncated": path.read_text()[:50],
                     "not json": "{'run_id': nope",
                     "missing keys": json.dumps({"run_id": side["run_id"], "status": "done"}),
                     "wrong run": json.dumps({**side, "run_id": "0" * 16}),
                     "a list": "[1, 2]"}[how])


@pytest.mark.parametrize("how", ["truncated", "not json", "missing keys", "wrong run",
                                 "a list"])
def test_damaged_sidecar_is_skipped_listed_and_not_reused(store: Store,
                                                          records: list[RunRecord],
                                                          how: str) -> None:
    bad = records[1]
    damage_sidecar(store.sidecar_path(bad.run_id), how)
    (damage,) = store.check()
    assert damage.run_id == bad.run_id and damage.path == store.sidecar_path(bad.run_id)
    with pytest.warns(CorruptResultWarning, match=rf"skipped 1 damaged.*{bad.run_id}\.json"):
        runs = store.runs()
    assert sorted(runs["run_id"]) == sorted(r.run_id for r in records if r is not bad)
    with pytest.warns(CorruptResultWarning):
        assert set(store.trajectories()["run_id"]) == set(runs["run_id"])
    assert not store.is_finished(bad.spec) and store.sidecar(bad.run_id) is None
    assert store.is_finished(records[0].spec)


@pytest.mark.parametrize("how", ["truncated", "missing", "another run's", "garbage"])
def test_damaged_trajectory_is_skipped_listed_and_not_reused(store: Store,
                                                             records: list[RunRecord],
                                                             how: str) -> None:
    bad, other = records[0], records[2]
    path = store.trajectory_path(bad.run_id)
    if how == "missing":
        path.unlink()
    else:
        path.write_bytes({"truncated": path.read_bytes()[:-100], "garbage": b"PAR1 nope",
                          "another run's": store.trajectory_path(other.run_id).read_bytes()
                          }[how])
    (damage,) = store.check()
    assert damage.path == path
    assert ("missing" if how == "missing" else "SHA-256") in damage.reason
    with pytest.warns(CorruptResultWarning, match=rf"{bad.run_id}\.parquet"):
        traj = store.trajectories()
    assert bad.run_id not in set(traj["run_id"]) and other.run_id in set(traj["run_id"])
    with pytest.warns(CorruptResultWarning):
        assert bad.run_id not in set(store.runs()["run_id"])
    assert not store.is_finished(bad.spec)


def test_sidecar_without_digest_still_checks_the_parquet(store: Store,
                                                        records: list[RunRecord]) -> None:
    """Sidecars written before the digest was recorded: the Parquet must at least read."""
    for record in records[:2]:
        side_path = store.sidecar_path(record.run_id)
        side = json.loads(side_path.read_text())
        del side["trajectory"]
        side_path.write_text(json.dumps(side))
    path = store.trajectory_path(records[1].run_id)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    assert store.is_finished(records[0].spec)
    (damage,) = store.check()
    assert damage.run_id == records[1].run_id and "unreadable Parquet" in damage.reason


def test_clean_store_reads_without_warnings(store: Store, records: list[RunRecord]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(store.runs()) == len(records) and store.check() == []
        assert len(store.trajectories()) == sum(len(r.rows) for r in records)


def test_damaged_suite_json_is_reported_and_rewritten(tmp_path: Path) -> None:
    experiment = parse_experiment(tiny_doc())
    store = Store(tmp_path / "tiny")
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "suite.json").write_text('{"suite": "ti')
    with pytest.warns(CorruptResultWarning, match="suite.json is damaged"):
        assert store.suite() == {"suite": "tiny"}
    with pytest.warns(CorruptResultWarning):
        store.write_suite(experiment)
    assert store.suite()["run_ids"] == [s.digest for s in experiment.specs]


def test_rerun_recomputes_damaged_results(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = write_yaml(tmp_path / "exp.yaml", tiny_doc(seeds=3))
    out = tmp_path / "out"
    assert run_cli(capsys, "run", str(path), "--out", str(out), "--no-progress")[0] == 0
    store = Store(out / "tiny")
    ids = sorted(p.stem for p in store.runs_dir.glob("*.json"))
    damage_sidecar(store.sidecar_path(ids[0]), "truncated")
    traj = store.trajectory_path(ids[1])
    traj.write_bytes(traj.read_bytes()[:20])
    intact = store.sidecar_path(ids[2]).read_bytes()
    code, text, err = run_cli(capsys, "run", str(path), "--out", str(out), "--no-progress")
    assert code == 0, err
    assert "2 corrupt results found: recomputing" in text
    assert f"{ids[0]}.json (not valid JSON" in text and f"{ids[1]}.parquet" in text
    assert "1 cached, 2 to run" in text
    assert store.check() == []
    assert store.sidecar_path(ids[2]).read_bytes() == intact  # the intact run is reused
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(store.runs()["run_id"]) == ids


# -- concurrent writers -----------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from bench.runner import run_one
    from bench.experiment import load_experiment
    from bench.store import Store
    experiment, root, name = sys.argv[1:]
    record = run_one(load_experiment(experiment).specs[0])
    Path(root, f"ready-{name}").touch()
    while len(list(Path(root).glob("ready-*"))) < 2:  # start together
        time.sleep(0.01)
    end, i = time.monotonic() + 1.5, 0
    while time.monotonic() < end:
        i += 1
        record.rows[-1]["time_s"] = float(i)  # every write different bytes
        record.timings["writer"] = name
        Store(root).write(record)
    """)


def spawn(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *argv], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    return out


def test_two_processes_writing_one_run_never_show_a_mixed_pair(tmp_path: Path) -> None:
    """Two processes rewrite one run for 1.5 s while this one keeps checking it: without
    the store's lock a reader (or the other writer) could pair one write's sidecar with
    another's trajectory; with it, every pair seen and the final one match."""
    path = write_yaml(tmp_path / "exp.yaml", tiny_doc(seeds=1))
    (tmp_path / "tiny").mkdir()
    procs = [spawn("-c", WRITER, str(path), str(tmp_path / "tiny"), name) for name in "ab"]
    store, seen, checks = Store(tmp_path / "tiny"), [], 0
    while any(proc.poll() is None for proc in procs):
        seen += store.check()
        checks += 1
    for proc in procs:
        finish(proc)
    assert seen == [] and store.check() == [] and checks > 10
    (spec,) = load_experiment(path).specs
    assert store.is_finished(spec)
    assert not list(store.runs_dir.glob(".*.tmp"))


def test_overlapping_sweeps_into_one_suite(tmp_path: Path) -> None:
    """Two experiment files naming the same suite, with overlapping seeds, run at once:
    every run is stored once and intact, and suite.json lists the runs of both."""
    first = write_yaml(tmp_path / "a.yaml", tiny_doc(seeds=[0, 1, 2, 3]))
    second = write_yaml(tmp_path / "b.yaml", tiny_doc(seeds=[2, 3, 4, 5]))
    out = tmp_path / "out"
    procs = [spawn("-m", "saddlebench.cli", "run", str(p), "--out", str(out), "--no-progress")
             for p in (first, second)]
    for proc in procs:
        finish(proc)
    store = Store(out / "tiny")
    expected = {s.digest for p in (first, second) for s in load_experiment(p).specs}
    assert store.check() == []
    assert {p.stem for p in store.runs_dir.glob("*.json")} == expected
    meta = json.loads((out / "tiny" / "suite.json").read_text())
    assert sorted(meta["run_ids"]) == sorted(expected)
    assert not list(store.runs_dir.glob(".*.tmp"))


def test_suite_json_merges_what_another_sweep_wrote(tmp_path: Path) -> None:
    store = Store(tmp_path / "tiny")
    first, second = (parse_experiment(tiny_doc(seeds=s)) for s in ([0, 1], [1, 2]))
    store.write_suite(first, tuning=[{"group": "g1", "chosen": {"lr": 1}}])
    store.write_suite(second, tuning=[{"group": "g1", "chosen": {"lr": 2}},
                                      {"group": "g2", "chosen": None}])
    meta = store.suite()
    ids = [s.digest for s in [*first.specs, *second.specs]]
    assert meta["run_ids"] == list(dict.fromkeys(ids))
    assert meta["tuning"] == [{"group": "g1", "chosen": {"lr": 2}},
                              {"group": "g2", "chosen": None}]


# -- failing disks ----------------------------------------------------------------------


def failing(real: Callable[..., Any], err: int, after: int = 0) -> Callable[..., Any]:
    """``real``, failing with ``err`` from its ``after + 1``-th call on (a disk that fills up,
    a folder that is not writable: these tests run as root, whom chmod does not stop)."""
    calls = []

    def call(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if len(calls) > after:
            raise OSError(err, os.strerror(err))
        return real(*args, **kwargs)
    return call


@pytest.mark.parametrize("after", [0, 1])
def test_disk_full_leaves_stored_files_untouched(store: Store, records: list[RunRecord],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 after: int) -> None:
    """Failing on the trajectory (after=0) or on the sidecar (after=1): nothing replaced."""
    before = snapshot(store.root)
    record = records[0]
    record.rows[-1]["time_s"] += 1.0  # a rewrite with different bytes
    monkeypatch.setattr(bench.store.os, "fsync", failing(os.fsync, errno.ENOSPC, after))
    with pytest.raises(StoreError, match="disk full; free space or choose another --out"):
        store.write(record)
    assert snapshot(store.root) == before  # no temporary file left, nothing replaced


@pytest.mark.parametrize(("err", "words"), [
    (errno.ENOSPC, "disk full; free space or choose another --out"),
    (errno.EDQUOT, "disk quota exceeded; free space"),
    (errno.EACCES, "permission denied; make it writable or choose another --out"),
    (errno.EROFS, "read-only file system; choose another --out"),
])
def test_write_errors_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch, err: int,
                                      words: str) -> None:
    """The suite's first write already fails: one line, exit 2, no results folder content."""
    path = write_yaml(tmp_path / "exp.yaml", tiny_doc())
    monkeypatch.setattr(tempfile, "mkstemp", failing(tempfile.mkstemp, err))
    code, _, stderr = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"),
                              "--no-progress")
    line = one_error_line(code, stderr)
    assert f"cannot write results to {tmp_path / 'out' / 'tiny' / 'suite.json'}: {words}" in line
    assert [p.name for p in (tmp_path / "out" / "tiny").iterdir()] == [".lock"]


def test_disk_full_during_a_sweep_keeps_finished_runs(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """suite.json and the first run are written, then the disk fills: exit 2 naming the
    run's file, the first run intact, no partial file of the second."""
    path = write_yaml(tmp_path / "exp.yaml", tiny_doc(seeds=2))
    monkeypatch.setattr(bench.store.os, "fsync", failing(os.fsync, errno.ENOSPC, after=3))
    code, _, stderr = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"),
                              "--no-progress")
    line = one_error_line(code, stderr)
    assert "runs" in line and ".parquet: disk full" in line
    store = Store(tmp_path / "out" / "tiny")
    assert len(list(store.runs_dir.glob("*.json"))) == 1 and store.check() == []
    assert not list(store.runs_dir.glob(".*"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_real_read_only_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_yaml(tmp_path / "exp.yaml", tiny_doc())
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o500)
    try:
        code, _, stderr = run_cli(capsys, "run", str(path), "--out", str(out), "--no-progress")
    finally:
        out.chmod(0o700)
    assert "permission denied; make it writable or choose another --out" in \
        one_error_line(code, stderr)
    assert list(out.iterdir()) == []


# -- file modes -----------------------------------------------------------------------


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process umask set to the test's parameter, restored afterwards."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077], indirect=True)
def test_results_get_ordinary_modes_under_the_umask(tmp_path: Path, records: list[RunRecord],
                                                    umask: int) -> None:
    """Results, suite.json and the lock are 0o666 less the umask (0644 under 022), folders
    0o777 less it: colleagues on a shared file system can read them (mkstemp's 0600 not)."""
    assert bench.store.umask() == umask
    store = Store(tmp_path / "out" / "tiny")
    store.write_suite(parse_experiment(tiny_doc()))
    store.write(records[0])
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    folders = [tmp_path / "out", *(p for p in (tmp_path / "out").rglob("*") if p.is_dir())]
    assert {p.name for p in files} >= {"suite.json", ".lock", f"{records[0].run_id}.json",
                                       f"{records[0].run_id}.parquet"}
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in files} == {
        p.name: oct(0o666 & ~umask) for p in files}
    assert {oct(p.stat().st_mode & 0o777) for p in folders} == {oct(0o777 & ~umask)}
