"""Hostile input: malformed and adversarial experiment files, huge grids, bad numbers,
backends and devices this machine lacks, corrupted data files.

Every case ends in a clear error naming the fix (through the CLI: one stderr line and exit
status 2) and leaves what is already stored byte-identical. tests/test_spec_and_cli.py
covers the basic cases (unknown names and keys, wrong types, ε ≤ 0, δ ∉ (0, 1)).
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import os
import pickle
import re
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from test_store_robustness import failing

import bench.store
import problems.backend
from bench.experiment import GridTooLarge, load_experiment, parse_experiment
from bench.spec import SpecError
from problems.data import DataCorruptError, load_cifar, load_mnist
from problems.data.cifar import CIFAR10_MD5, VARIANTS
from problems.data.mnist import IMAGE_MAGIC, LABEL_MAGIC, MNIST_GZ_MD5
from saddlebench.cli import main

GOOD = """\
suite: tiny
seeds: 2
eval: {points: 3, metrics: [loss]}
problems:
  - name: strict_saddle
    params: {d: 5, n: 200}
algorithms:
  - name: sgd
    params: {lr: 0.05, steps: 10, batch_size: 16}
"""


def doc(**overrides: Any) -> dict[str, Any]:
    out = yaml.safe_load(GOOD)
    out.update(overrides)
    return out


def sgd(**params: Any) -> dict[str, Any]:
    return {"name": "sgd", "params": {"lr": 0.05, "steps": 10, "batch_size": 16, **params}}


def dp_sgd(**params: Any) -> dict[str, Any]:
    return {"name": "dp_sgd", "params": {"lr": 0.05, "steps": 10, "batch_size": 16, **params}}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, " ".join(captured.out.split()), captured.err


def one_error(code: int, err: str, *fragments: str) -> str:
    """Exit 2, one line 'saddlebench: error: ...' holding every fragment, of sane length."""
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("saddlebench: error: ") and len(line) < 800, line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# -- adversarial YAML --------------------------------------------------------------------

BOMB = "suite: tiny\na: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True))

YAML_CASES = {
    "duplicate top-level key": (GOOD + "seeds: 5\n", ["line 10", "duplicate key 'seeds'",
                                                      "first at line 2", "keep one"]),
    "duplicate nested key": (GOOD.replace("lr: 0.05,", "lr: 0.05, lr: 9,"),
                             ["duplicate key 'lr'", "line 9"]),
    "billion laughs": (BOMB, ["aliases expand to more than 100,000 YAML nodes"]),
    "recursive alias": ("suite: &s [*s]\n", ["refer to themselves"]),
    "top-level list": ("- suite: tiny\n", ["expected a mapping, got list"]),
    "top-level scalar": ("just words\n", ["expected a mapping, got str"]),
    "empty file": ("", ["empty; an experiment needs suite, problems and algorithms"]),
    "python tag": ("suite: !!python/object/apply:os.system [echo hi]\n",
                   ["malformed YAML", "constructor"]),
    "two documents": (GOOD + "---\n" + GOOD, ["malformed YAML", "single document"]),
    "deep nesting": ("suite: " + "[" * 5000 + "]" * 5000 + "\n", ["nested too deeply"]),
}


@pytest.mark.parametrize("case", list(YAML_CASES))
def test_adversarial_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          case: str) -> None:
    text, fragments = YAML_CASES[case]
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    start = time.perf_counter()
    code, _, err = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"))
    one_error(code, err, str(path), *fragments)
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "out").exists()


def test_bytes_that_are_not_a_small_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_bytes(GOOD.encode() + b"# \xff\xfe\n")
    with pytest.raises(SpecError, match=r"not UTF-8 text \(byte \d+\); save it as UTF-8"):
        load_experiment(path)
    path.write_text(GOOD + "#" * 1_000_001 + "\n")
    with pytest.raises(SpecError, match=r"[\d,]+ bytes, more than an experiment file may "
                                        r"have \(1,000,000\); split it"):
        load_experiment(path)


def test_aliases_and_merge_keys_still_work(tmp_path: Path) -> None:
    """Legitimate reuse (as in xu2026's files) is neither a bomb nor a duplicate key."""
    path = tmp_path / "exp.yaml"
    path.write_text(GOOD.replace("params: {lr: 0.05, steps: 10, batch_size: 16}",
                                 "params: &p {lr: 0.05, steps: 10, batch_size: 16}\n"
                                 "  - name: sgd\n    label: faster\n"
                                 "    params: {<<: *p, lr: 0.1}"))
    exp = load_experiment(path)
    assert [s.algorithm.params["lr"] for s in exp.specs] == [0.05, 0.05, 0.1, 0.1]


# -- bad values ------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
VALUE_CASES: list[tuple[dict[str, Any], str]] = [
    ({"privacy": {"epsilon": NAN}, "algorithms": [dp_sgd()]}, "epsilon must be > 0, got nan"),
    ({"privacy": {"epsilon": -1}, "algorithms": [dp_sgd()]}, "epsilon must be > 0"),
    ({"privacy": {"epsilon": INF}, "algorithms": [dp_sgd()]}, "give privacy.epsilon or sigma"),
    ({"privacy": {"epsilon": []}, "algorithms": [dp_sgd()]}, "epsilon: empty list"),
    ({"privacy": {"epsilon": "1e-3x"}, "algorithms": [dp_sgd()]}, "expected a number"),
    ({"privacy": {"epsilon": 1, "delta": NAN}, "algorithms": [dp_sgd()]}, "delta must be in"),
    ({"privacy": {"epsilon": 1, "sigma": -1}, "algorithms": [dp_sgd()]}, "sigma must be > 0"),
    ({"privacy": {"epsilon": 1, "calibration": []}, "algorithms": [dp_sgd()]},
     "calibration: empty list"),
    ({"seeds": [-1]}, "'seeds' must be a count or a list of integers in [0, 2^63)"),
    ({"seeds": [2**64]}, "'seeds' must be a count or a list of integers in [0, 2^63)"),
    ({"seeds": 1.5}, "'seeds' must be a count or a list of integers"),
    ({"seeds": "3"}, "'seeds' must be a count or a list of integers"),
    ({"algorithms": [sgd(steps=0)]}, "algorithms[0] (sgd): params.steps must be >= 1, got 0"),
    ({"algorithms": [sgd(batch_size=-4)]}, "params.batch_size must be >= 1, got -4"),
    ({"algorithms": [sgd(steps=10**30)]}, "params.steps = 1e+30 is too large"),
    ({"algorithms": [sgd(steps="ten")]}, "params.steps: expected an integer, got 'ten'"),
    ({"algorithms": [sgd(lr=NAN)]}, "params.lr: expected a finite number, got nan"),
    ({"algorithms": [sgd(lr=-INF)]}, "params.lr: expected a finite number"),
    ({"problems": [{"name": "strict_saddle", "params": {"n": 0}}]},
     "problems[0] (strict_saddle): params.n must be >= 2"),
    ({"problems": [{"name": "strict_saddle", "params": {"n": 4, "clients": 5}}]},
     "problems[0] (strict_saddle): params: strict_saddle needs clients <= n"),
    ({"eval": {"points": 2.5}}, "eval.points must be an integer in [2, 100,000], got 2.5"),
    ({"eval": {"points": 10**9}}, "eval.points must be an integer in [2, 100,000]"),
    ({"problems": [{"name": "strict\u202esaddle\x00💥"}]}, "is not a problem name"),
    ({"problems": [{"name": "x" * 100_000}]}, "(100,002 characters)"),
    ({"algorithms": [{**sgd(), "label": "a\nb\x1b[31m"}]}, "label must be a printable string"),
    ({"algorithms": [{**sgd(), "label": "y" * 5000}]}, "at most 100 characters"),
    ({"suite": "s" * 101}, "'suite' must be a name of at most 100"),
    ({"description": {"a": 1}}, "'description' must be a string"),
    ({"algorithms": [{**sgd(), "sweep": {"lr": []}}]}, "sweep.lr: empty list"),
    ({"backend": []}, "backend: empty list"),
    ({"tuning": {"seeds": 0}, "algorithms": [{**sgd(), "tune": {"lr": [0.1, 0.2]}}]},
     "tuning.seeds: empty list"),
]


@pytest.mark.parametrize(("patch", "fragment"), VALUE_CASES,
                         ids=[f[:40] for _, f in VALUE_CASES])
def test_bad_values_are_refused_with_a_short_message(patch: dict[str, Any],
                                                     fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_experiment(doc(**patch), "src.yaml")
    message = str(err.value)
    assert fragment in message and message.startswith("src.yaml"), message
    assert len(message) < 600 and "\n" not in message


@pytest.mark.parametrize(("where", "fragment"), [("top", "src.yaml: privacy.delta"),
                                                 ("entry", "algorithms[0].privacy.delta")])
def test_a_privacy_error_names_the_block_it_is_in(where: str, fragment: str) -> None:
    bad = {"epsilon": 1, "delta": "tiny"}
    patch = ({"privacy": bad, "algorithms": [dp_sgd()]} if where == "top" else
             {"algorithms": [{**dp_sgd(), "privacy": bad}]})
    with pytest.raises(SpecError, match=re.escape(fragment)):
        parse_experiment(doc(**patch), "src.yaml")


# -- huge grids ------------------------------------------------------------------------


def grid(tmp_path: Path, lrs: int, seeds: int) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(doc(seeds=seeds, algorithms=[
        {**sgd(), "sweep": {"lr": [0.01 * (i + 1) for i in range(lrs)]}}])))
    return path


def test_huge_grid_is_counted_before_it_is_expanded() -> None:
    """10^14 runs: refused at once, with the size and its breakdown."""
    huge = doc(seeds=10**6, problems=[{"name": "strict_saddle",
                                       "sweep": {"d": list(range(2, 102))}}],
               algorithms=[{**sgd(), "sweep": {"lr": [0.1] * 1000, "steps": [5] * 1000}}])
    start = time.perf_counter()
    with pytest.raises(GridTooLarge) as err:
        parse_experiment(huge, "huge.yaml", max_runs=10_000)
    assert time.perf_counter() - start < 1
    assert err.value.size.total == 100 * 10**6 * 10**6
    assert ("100,000,000,000,000 runs = 100 problem variants (sweeps × backends) × "
            "1,000,000,000,000 runs each (1,000,000 seeds × algorithm variants") in str(err.value)
    assert "sgd 1,000,000" in str(err.value)


def test_tuned_grid_counts_tuning_runs() -> None:
    tuned = doc(seeds=3, tuning={"seeds": 2}, privacy={"epsilon": [1, 2]},
                algorithms=[{**dp_sgd(), "tune": {"lr": [0.1, 0.2, 0.3]}}, sgd()])
    exp = parse_experiment(tuned)
    with pytest.raises(GridTooLarge) as err:
        parse_experiment(tuned, max_runs=20)
    # dp_sgd: 2 ε × (3 candidates × 2 tuning seeds + 3 seeds); sgd: 3 seeds
    assert err.value.size.total == 2 * (3 * 2 + 3) + 3 == (
        len(exp.specs) + sum(len(g.candidates) * 2 + len(g.seeds) for g in exp.groups))
    assert "dp_sgd 2 (tune grid 3 × 2 tuning seeds)" in str(err.value)


def test_grid_above_the_limit_needs_confirmation(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path, out = grid(tmp_path, lrs=3, seeds=2), tmp_path / "out"
    code, _, err = run_cli(capsys, "run", str(path), "--out", str(out), "--max-runs", "5")
    one_error(code, err, "the grid has 6 runs = 1 problem variants", "sgd 3",
              "more than the limit of 5", "pass --yes", "--max-runs", "SADDLEBENCH_MAX_RUNS")
    assert not out.exists()
    monkeypatch.setenv("SADDLEBENCH_MAX_RUNS", "4")
    one_error(*run_cli(capsys, "run", str(path), "--out", str(out))[::2], "limit of 4")
    monkeypatch.setenv("SADDLEBENCH_MAX_RUNS", "many")
    one_error(*run_cli(capsys, "run", str(path), "--out", str(out))[::2],
              "$SADDLEBENCH_MAX_RUNS must be a positive integer, got 'many'")
    one_error(*run_cli(capsys, "run", str(path), "--out", str(out), "--max-runs", "0")[::2],
              "--max-runs must be >= 1")
    assert not out.exists()
    code, text, err = run_cli(capsys, "run", str(path), "--out", str(out), "--yes",
                              "--no-progress")
    assert code == 0 and "6 runs (0 cached, 6 to run)" in text, err


@pytest.mark.parametrize("answer", [False, True])
def test_grid_above_the_limit_asks_on_a_terminal(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 answer: bool) -> None:
    asked = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("rich.prompt.Confirm.ask",
                        lambda prompt, **kw: asked.append(prompt) or answer)
    path, out = grid(tmp_path, lrs=3, seeds=1), tmp_path / "out"
    code, text, err = run_cli(capsys, "run", str(path), "--out", str(out), "--max-runs", "2",
                              "--no-progress")
    assert asked == ["run all 3 runs?"] and "the grid has 3 runs" in text
    if answer:
        assert code == 0 and "3 to run" in text, err
    else:
        one_error(code, err, "not confirmed; nothing was run")
        assert not out.exists()


# -- backends and devices ----------------------------------------------------------------


def backend_doc(backend: Any) -> dict[str, Any]:
    return doc(problems=[{"name": "strict_saddle", "params": {"d": 5, "n": 200},
                          "backend": backend}])


def test_unknown_backend_and_indexed_device_at_parse() -> None:
    with pytest.raises(SpecError, match="unknown backend 'tpu'; choose one of numpy, torch, "
                                        "jax"):
        parse_experiment(backend_doc("tpu"), "src.yaml")
    with pytest.raises(SpecError) as err:
        parse_experiment(backend_doc({"name": "torch", "device": "cuda:7"}), "src.yaml")
    assert ("unknown device 'cuda:7'; choose one of cpu, cuda (to run on GPU 7, set "
            "CUDA_VISIBLE_DEVICES=7 and use device: cuda)") in str(err.value)


def test_cuda_without_a_gpu_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(backend_doc({"name": "torch", "device": "cuda"})))
    code, _, err = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"))
    one_error(code, err, "backend torch on cuda: torch sees no CUDA GPU on this machine",
              "set device: cpu")
    assert not (tmp_path / "out").exists()


def test_backend_not_installed_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = problems.backend.importlib.util.find_spec
    monkeypatch.setattr(problems.backend.importlib.util, "find_spec",
                        lambda name, *a: None if name == "jax" else real(name, *a))
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(backend_doc("jax")))
    code, _, err = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"))
    one_error(code, err, "backend jax on cpu: jax is not installed; pip install "
                         "'saddlebench[jax]'")
    assert not (tmp_path / "out").exists()


# -- data files ------------------------------------------------------------------------


def write_cifar10(root: Path, n: int = 7, test_n: int | None = None,
                  data: np.ndarray | None = None, labels: int | None = None) -> Path:
    """A CIFAR-10 folder: n images per training file, ``test_n`` (or ``data``) in
    test_batch, ``labels`` labels there (default: one per image)."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    for name in (*VARIANTS["cifar10"].train, "test_batch", "batches.meta"):
        size = n if name != "test_batch" else (test_n or n)
        batch = np.zeros((size, 3072), np.uint8) if data is None or name != "test_batch" \
            else data
        count = len(batch) if labels is None or name != "test_batch" else labels
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": batch, b"labels": [1] * count}, f, protocol=2)
    return folder / "test_batch"


def test_cifar_file_of_official_size_must_match_its_checksum(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test_batch with the official 10,000 images that is not the official file (a
    corrupted download) fails by default; small files in the same format load."""
    path = write_cifar10(tmp_path, test_n=10_000)
    actual = hashlib.md5(path.read_bytes()).hexdigest()
    with pytest.raises(DataCorruptError) as err:
        load_cifar(tmp_path)
    first = str(err.value).splitlines()[0]
    for fragment in (f"{path} is corrupted or not the official file", f"md5 {actual}",
                     f"expected {CIFAR10_MD5['test_batch']}", "download it again from "
                     "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                     "verify=False or SADDLEBENCH_VERIFY_DATA=0 skips"):
        assert fragment in first, (fragment, first)
    assert "data_batch_1" not in str(err.value)  # 7 images: not claimed official
    assert load_cifar(tmp_path, verify=False).x_test.shape == (10_000, 3, 32, 32)
    monkeypatch.setenv("SADDLEBENCH_VERIFY_DATA", "0")
    assert len(load_cifar(tmp_path).y_test) == 10_000
    monkeypatch.delenv("SADDLEBENCH_VERIFY_DATA")
    write_cifar10(tmp_path / "small")
    assert len(load_cifar(tmp_path / "small").y_test) == 7


def test_mnist_gz_of_official_size_must_match_its_checksum(tmp_path: Path) -> None:
    def idx(name: str, array: np.ndarray, magic: int, gz: bool) -> None:
        raw = struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.tobytes()
        (tmp_path / (name + ".gz" * gz)).write_bytes(gzip.compress(raw, 1) if gz else raw)

    idx("train-images-idx3-ubyte", np.zeros((9, 28, 28), np.uint8), IMAGE_MAGIC, True)
    idx("train-labels-idx1-ubyte", np.zeros(9, np.uint8), LABEL_MAGIC, True)
    idx("t10k-images-idx3-ubyte", np.zeros((10_000, 28, 28), np.uint8), IMAGE_MAGIC, True)
    idx("t10k-labels-idx1-ubyte", np.zeros(10_000, np.uint8), LABEL_MAGIC, True)
    with pytest.raises(DataCorruptError) as err:
        load_mnist(tmp_path)
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    assert str(err.value).startswith(f"{path} is corrupted or not the official file")
    assert MNIST_GZ_MD5[path.name] in str(err.value) and "ossci-datasets" in str(err.value)
    assert "train-images" not in str(err.value)
    assert len(load_mnist(tmp_path, verify=False).y_test) == 10_000


@pytest.mark.parametrize(("data", "labels", "fragment"), [
    (np.full((4, 3072), np.nan), None, "got float64 (4, 3072) with 12,288 NaN/inf values"),
    (np.r_[np.zeros((3, 3072)), np.full((1, 3072), np.inf)].astype(np.float32), None,
     "with 3,072 NaN/inf values"),
    (np.zeros((4, 3000), np.uint8), None, "got uint8 (4, 3000)"),
    (np.zeros((4, 3072), np.uint8), 3, "4 images but labels of shape (3,)"),
])
def test_cifar_bad_values_and_shapes_name_the_file(tmp_path: Path, data: np.ndarray,
                                                   labels: int | None, fragment: str) -> None:
    path = write_cifar10(tmp_path, data=data, labels=labels)
    with pytest.raises(DataCorruptError) as err:
        load_cifar(tmp_path)
    assert str(err.value).startswith(f"{path}:") and fragment in str(err.value)


# -- nothing already stored is lost ---------------------------------------------------


def test_hostile_input_never_touches_stored_results(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert run_cli(capsys, "run", str(good), "--out", str(out), "--no-progress")[0] == 0
    before = snapshot(out)
    assert len([k for k in before if k.endswith(".parquet")]) == 2

    def attempt(text: str, *extra: str) -> None:
        """Run ``text`` (the good file itself where it is GOOD) against the stored suite."""
        path = good if text == GOOD else tmp_path / "hostile.yaml"
        path.write_text(text)
        code, _, err = run_cli(capsys, "run", str(path), "--out", str(out), "--no-progress",
                               *extra)
        one_error(code, err)
        after = snapshot(out)
        assert [k for k in {*before, *after} if before.get(k) != after.get(k)] == [], text

    for text, _ in YAML_CASES.values():
        attempt(text)
    for patch, _ in VALUE_CASES[:12]:
        attempt(yaml.safe_dump(doc(**patch)))
    attempt(GOOD.replace("seeds: 2", "seeds: 20000"))  # above the default limit
    attempt(GOOD, "--max-runs", "1")
    attempt(yaml.safe_dump(backend_doc("tpu")))
    attempt(yaml.safe_dump(backend_doc({"name": "torch", "device": "cuda:7"})))

    for err in (errno.ENOSPC, errno.EACCES, errno.EROFS):  # a forced rerun on a bad disk
        with monkeypatch.context() as m:
            m.setattr(tempfile, "mkstemp", failing(tempfile.mkstemp, err))
            attempt(GOOD, "--force")
        with monkeypatch.context() as m:  # suite.json is written, the runs' files fail
            m.setattr(bench.store.os, "fsync", failing(os.fsync, err, after=1))
            attempt(GOOD, "--force")
