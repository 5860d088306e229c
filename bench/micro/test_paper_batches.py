"""The papers' networks at the papers' batch sizes on a GPU (issue 39): the private clipped
sum (book-keeping) against the plain ``nn.Module`` backward and Opacus's ghost clipping,
and peak memory at bert-base's sizes. CUDA only (marked ``gpu``): on CPU these sizes take
minutes per call; the CPU ratios are the smaller benchmarks beside this file.

Batches: avdiukhin2024's CNN, VGG and ResNet-18 at 512 (CIFAR-10 shapes on random images),
tao2025's Fashion-MNIST MLP at 256 (its b₁), BERT at 32 (the small random one, and
bert-base's sizes at 128 word pieces on a few sentences)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.micro.common import REFERENCE_KERNELS, gpu_param, instance, record, synced
from bench.micro.test_reference import reference_call

pytestmark = [pytest.mark.benchmark(max_time=1.0),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]

PAPER_BATCHES = {"fashion_mnist_mlp": 256, "cifar10_cnn": 512, "cifar10_vgg": 512,
                 "cifar10_resnet18": 512, "cola_bert": 32, "cola_bert_base": 32}
ROUNDS = 10
KERNELS = ("clipped_grad_sum", *REFERENCE_KERNELS)
MEMORY = {"cola_bert_base": ("clipped_grad_sum", "module_grad", "opacus_ghost_clipped_sum")}
CUDA = [gpu_param(problem, "torch") for problem in PAPER_BATCHES]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(("problem", "backend", "device"), CUDA)
def test_paper_batch(benchmark: Any, problem: str, backend: str, device: str, kernel: str
                     ) -> None:
    batch = PAPER_BATCHES[problem]
    s, call = reference_call(problem, device, kernel, batch)
    record(benchmark, synced(s.backend, call), rounds=ROUNDS, problem=problem,
           backend=backend, device=device, kernel=kernel, batch=batch, d=s.oracle.d)


@pytest.mark.parametrize("kernel", MEMORY["cola_bert_base"])
@pytest.mark.parametrize(("problem", "backend", "device"), [gpu_param("cola_bert_base", "torch")])
def test_paper_batch_memory(benchmark: Any, problem: str, backend: str, device: str,
                            kernel: str) -> None:
    """Peak CUDA memory of one call, each in a fresh interpreter (:mod:`bench.micro.memory`)."""
    from bench.micro.test_memory import peak

    measured: dict[str, int] = {}
    record(benchmark, lambda: measured.update(peak(problem, kernel, device,
                                                   PAPER_BATCHES[problem])),
           rounds=1, warmup=False, problem=problem, backend=backend, device=device,
           kernel=kernel, batch=PAPER_BATCHES[problem], d=instance(problem).d,
           metric="peak_bytes")
    benchmark.extra_info.update(measured)
