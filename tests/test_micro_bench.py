"""The micro benchmarks compare like with like: the Opacus clipped sum and the plain module
gradient (bench/micro/reference.py) equal the oracles' on the same network and batch, and
the peak-memory probe (bench/micro/memory.py) returns bytes. And the micro suite itself,
outside ``testpaths``, still runs: every benchmark body once (``--benchmark-disable``)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from conftest import make_setup, to_numpy

from bench.env import ROOT, cpu_model
from problems.backend import BackendSpec

torch = pytest.importorskip("torch")
reference = pytest.importorskip("bench.micro.reference")

TORCH32 = BackendSpec(name="torch", dtype="float32")
BATCH, CLIP = 8, 0.05


@pytest.mark.parametrize("kernel", ["opacus_clipped_sum", "opacus_ghost_clipped_sum"])
@pytest.mark.parametrize("problem", ["digits_mlp", "cifar10_vgg", "cola_bert"])
@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
@pytest.mark.filterwarnings("ignore:Using a non-full backward hook")
def test_opacus_clipped_sums_match_the_oracle(problem: str, kernel: str) -> None:
    """Opacus's per-sample and ghost clipped sums equal the oracle's book-keeping one on the
    same network (BERT: embeddings, LayerNorm and dropout off included)."""
    pytest.importorskip("opacus")
    s = make_setup(problem, TORCH32)
    ours = to_numpy(s.oracle.clipped_grad_sum(s.oracle.x0, np.arange(BATCH), CLIP))
    call = reference.reference_kernel(s.instance, s.oracle, kernel, BATCH, CLIP)
    theirs = to_numpy(call())
    if problem == "digits_mlp":  # nn.Linear stores weights transposed: same entries
        ours, theirs = np.sort(ours), np.sort(theirs)
    np.testing.assert_allclose(theirs, ours, rtol=1e-3, atol=1e-6)


def test_module_gradient_matches_the_oracle() -> None:
    s = make_setup("cifar10_vgg", TORCH32)
    features, onehot = reference.batch(s.oracle, BATCH)
    module = reference.torch_module(s.instance, s.instance.x0)
    np.testing.assert_allclose(to_numpy(reference.module_grad(module, features, onehot)),
                               to_numpy(s.oracle.grad(s.oracle.x0, np.arange(BATCH))),
                               rtol=1e-3, atol=1e-6)


def test_mlp_module_computes_the_same_logits() -> None:
    s = make_setup("digits_mlp", TORCH32)
    features, _ = reference.batch(s.oracle, BATCH)
    module = reference.torch_module(s.instance, s.instance.x0)
    expected = s.instance.model.logits(s.backend.xp, s.oracle.x0, features)
    np.testing.assert_allclose(to_numpy(module(features).detach()), to_numpy(expected),
                               rtol=1e-4, atol=1e-5)


def test_the_cpu_is_named_by_its_model(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9R45\nflags\t: avx2\n")
    assert cpu_model(cpuinfo) == "AMD EPYC 9R45"
    assert cpu_model(tmp_path / "missing")  # no cpuinfo: what platform knows


def test_peak_memory_probe() -> None:
    from bench.micro.memory import measure

    out = measure("digits_mlp", "clipped_grad_sum", BATCH, "cpu")
    assert out["peak_bytes"] >= 0 and out["baseline_bytes"] > 0


#: the only reasons a micro benchmark may skip here: the ``gpu`` ones on a machine without,
#: the Fashion-MNIST ones where its files are absent
GPU_SKIP, DATA_SKIP = "no CUDA GPU", "data missing"
#: the quick selection: every digits_mlp benchmark and the VGG's steps (which build it on
#: fake images); the slow test runs the rest
QUICK = "digits_mlp or (cifar10_vgg and test_step)"


def run_micro(keyword: str, junit: Path) -> list[ET.Element]:
    """``pytest bench/micro --benchmark-disable -k KEYWORD`` in a fresh interpreter (its
    conftest and cached oracles stay out of this session); the test cases of its report."""
    pytest.importorskip("pytest_benchmark")
    pytest.importorskip("jax")
    pytest.importorskip("opacus")
    cmd = [sys.executable, "-m", "pytest", "bench/micro", "--benchmark-disable", "-q",
           "-p", "no:cacheprovider", "-k", keyword, f"--junitxml={junit}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return list(ET.parse(junit).iter("testcase"))


def assert_all_ran(cases: list[ET.Element]) -> None:
    """Some benchmarks ran, and every skip is a GPU benchmark on a machine without one or
    one whose data set is absent."""
    skips = {c.get("name"): s.get("message", "") for c in cases for s in c.iter("skipped")}
    assert len(cases) > len(skips)
    assert all(GPU_SKIP in message or DATA_SKIP in message for message in skips.values()), skips


def test_micro_suite_runs_quick(tmp_path: Path) -> None:
    """The :data:`QUICK` micro benchmarks: kernels, steps and the Opacus reference on the
    MLP; dp_sgd and sgd steps on the VGG."""
    assert_all_ran(run_micro(QUICK, tmp_path / "micro.xml"))


@pytest.mark.slow
def test_micro_suite_runs_the_rest(tmp_path: Path) -> None:
    """Every other micro benchmark: the paper-size VGG's kernels, its Opacus reference and
    peak memory (about 30 s of CPU)."""
    assert_all_ran(run_micro(f"not ({QUICK})", tmp_path / "micro.xml"))
