"""pytest hooks of the micro benchmarks: the GPU, package versions and git sha in
pytest-benchmark's ``machine_info``; the folder of ``--benchmark-json`` created; torch's jit
deprecation warning silenced as in the tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bench.env import environment, package_version
from bench.micro.common import cuda_available


def pytest_benchmark_update_machine_info(config: Any, machine_info: dict[str, Any]) -> None:
    """Add ``gpu`` (torch's CUDA device name, or None) and ``saddlebench`` (versions, git
    sha, code fingerprint; :func:`bench.env.environment`)."""
    gpu = None
    if cuda_available():
        import torch

        gpu = torch.cuda.get_device_name()
    env = environment()
    env["versions"] = {**env["versions"], "opacus": package_version("opacus")}
    machine_info.update(gpu=gpu, saddlebench=env, torch_threads=THREADS)


#: torch CPU threads while benchmarking ($SADDLEBENCH_BENCH_THREADS): on a small shared
#: machine two OpenMP threads stall whenever another process takes a core (a 0.7 ms
#: gradient then takes up to 90 ms), which makes same-process ratios meaningless
THREADS = int(os.environ.get("SADDLEBENCH_BENCH_THREADS", "1"))


def pytest_configure(config: pytest.Config) -> None:
    try:
        import torch

        torch.set_num_threads(THREADS)
    except ImportError:
        pass
    target = config.getoption("benchmark_json", None)
    if isinstance(target, (str, os.PathLike)):  # pytest-benchmark < 5 does not create the
        Path(target).parent.mkdir(parents=True, exist_ok=True)  # folder (5 opens the file)
    # torch registers its jvp decompositions with torch.jit.script on first forward-mode use
    config.addinivalue_line(
        "filterwarnings", "ignore:`torch.jit.script` is deprecated:DeprecationWarning")
