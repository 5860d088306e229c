"""Opacus side by side with the oracles: the clipped sum through ``GradSampleModule``
(``kernel="opacus_clipped_sum"``) and the plain ``nn.Module`` backward
(``kernel="module_grad"``), on the same network, parameters, batch and clip."""

from __future__ import annotations

from typing import Any

import pytest

from bench.micro.common import BATCH, CLIP, ROUNDS, record, setup, synced, targets

pytestmark = [pytest.mark.benchmark(max_time=0.5),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]

PROBLEMS = ("digits_mlp", "cifar10_vgg")
TORCH = targets(PROBLEMS, ("torch",))


def _inputs(problem: str, device: str) -> tuple[Any, Any, Any, Any]:
    """The setup, the module at x0 and the batch (features, one-hot labels)."""
    pytest.importorskip("torch")
    from bench.micro import reference

    s = setup(problem, "torch", device)
    module = reference.torch_module(s.instance, s.instance.x0, device)  # type: ignore[arg-type]
    return s, module, *reference.batch(s.oracle, BATCH)


@pytest.mark.parametrize(("problem", "backend", "device"), TORCH)
def test_opacus_clipped_sum(benchmark: Any, problem: str, backend: str, device: str) -> None:
    pytest.importorskip("opacus")
    from bench.micro.reference import grad_sample_module, opacus_clipped_sum

    s, module, features, onehot = _inputs(problem, device)
    gsm = grad_sample_module(module)
    record(benchmark, synced(s.backend, lambda: opacus_clipped_sum(gsm, features, onehot, CLIP)),
           rounds=ROUNDS[problem], problem=problem, backend=backend, device=device,
           kernel="opacus_clipped_sum", batch=BATCH, d=s.oracle.d)


@pytest.mark.parametrize(("problem", "backend", "device"), TORCH)
def test_module_grad(benchmark: Any, problem: str, backend: str, device: str) -> None:
    from bench.micro.reference import module_grad

    s, module, features, onehot = _inputs(problem, device)
    record(benchmark, synced(s.backend, lambda: module_grad(module, features, onehot)),
           rounds=ROUNDS[problem], problem=problem, backend=backend, device=device,
           kernel="module_grad", batch=BATCH, d=s.oracle.d)
