"""Peak memory of a private step's clipped sum against a non-private gradient at batch 256
on the paper-size cifar10_vgg (torch). Each runs once in its own process
(:mod:`bench.micro.memory`); the bytes go to ``extra_info["peak_bytes"]`` with
``metric="peak_bytes"`` (the time is that of the whole process and means nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bench.env import ROOT
from bench.micro.common import MEMORY_BATCH, instance, record, targets

TIMEOUT = 600


def peak(problem: str, kernel: str, device: str, batch: int = MEMORY_BATCH
         ) -> dict[str, int]:
    """:func:`bench.micro.memory.measure` in a fresh interpreter."""
    cmd = [sys.executable, "-m", "bench.micro.memory", problem, kernel,
           "--batch", str(batch), "--device", device]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                          check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("kernel", ["clipped_grad_sum", "grad"])
@pytest.mark.parametrize(("problem", "backend", "device"),
                         targets(("cifar10_vgg",), ("torch",)))
def test_peak_memory(benchmark: Any, problem: str, backend: str, device: str,
                     kernel: str) -> None:
    pytest.importorskip("torch")
    measured: dict[str, int] = {}

    def run() -> None:
        measured.update(peak(problem, kernel, device))

    record(benchmark, run, rounds=1, warmup=False, problem=problem, backend=backend, device=device,
           kernel=kernel, batch=MEMORY_BATCH, d=instance(problem).d, metric="peak_bytes")
    benchmark.extra_info.update(measured)
