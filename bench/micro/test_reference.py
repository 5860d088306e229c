"""Opacus side by side with the oracles, on the same network, parameters, batch and clip:
the clipped sum through ``GradSampleModule`` (``kernel="opacus_clipped_sum"``), through
ghost clipping (``"opacus_ghost_clipped_sum"``) and the plain ``nn.Module`` backward
(``"module_grad"``)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.micro.common import BATCH, REFERENCE_KERNELS, ROUNDS, record, synced, targets

pytestmark = [pytest.mark.benchmark(max_time=0.5),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]

PROBLEMS = ("digits_mlp", "cifar10_vgg")
TORCH = targets(PROBLEMS, ("torch",))


def reference_call(problem: str, device: str, kernel: str, batch: int) -> Any:
    """:func:`bench.micro.reference.kernel_call`, skipped without torch (or without Opacus
    for its kernels)."""
    pytest.importorskip("torch")
    if kernel.startswith("opacus"):
        pytest.importorskip("opacus")
    from bench.micro.reference import kernel_call

    return kernel_call(problem, kernel, batch, device)


@pytest.mark.parametrize("kernel", REFERENCE_KERNELS)
@pytest.mark.parametrize(("problem", "backend", "device"), TORCH)
def test_reference(benchmark: Any, problem: str, backend: str, device: str, kernel: str
                   ) -> None:
    s, call = reference_call(problem, device, kernel, BATCH)
    record(benchmark, synced(s.backend, call), rounds=ROUNDS[problem], problem=problem,
           backend=backend, device=device, kernel=kernel, batch=BATCH, d=s.oracle.d)
