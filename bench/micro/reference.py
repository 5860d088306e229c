"""The reference implementations the oracles are timed against, on the same network, data
and parameters: a plain ``torch.nn.Module`` backward (non-private), Opacus's
``GradSampleModule`` with the clipping ``DPOptimizer`` applies (the clipped sum), and
Opacus's ghost clipping (``GradSampleModuleFastGradientClipping``: per-sample norms from
hooks, then a second backward of the loss reweighted by the clip factors).

The network is the instance's own module (torch-module problems: ``instance.model.module``,
copied) or, for the ``xp`` MLP, the equivalent stack of ``nn.Linear`` layers; either way its
parameters are set to the flat vector ``x``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from bench.micro.common import CLIP, REFERENCE_KERNELS, Setup, oracle_kernel, setup
from problems.models.mlp import MLP
from problems.oracles import Oracle, TorchOracle
from problems.supervised import ClassificationInstance

OPACUS_EPS = 1e-6  # DPOptimizer's per_sample_clip_factor = C / (‖g_i‖ + 1e-6), capped at 1


def mlp_module(model: MLP, x: np.ndarray) -> nn.Sequential:
    """``model`` as ``nn.Linear`` layers holding the flat parameters ``x`` (weights are
    stored (in, out) in ``x``, so ``nn.Linear.weight`` is their transpose)."""
    layers: list[nn.Module] = []
    offset, last = 0, len(model.shapes) - 1
    for i, ((fan_in, fan_out), bias) in enumerate(model.shapes):
        linear = nn.Linear(fan_in, fan_out)
        w = x[offset : offset + fan_in * fan_out].reshape(fan_in, fan_out)
        offset += fan_in * fan_out
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(w.T))
            linear.bias.copy_(torch.as_tensor(x[offset : offset + bias]))
        offset += bias
        layers.append(linear)
        if i < last:
            layers.append(nn.Tanh() if model.activation == "tanh" else nn.ReLU())
    return nn.Sequential(*layers)


def torch_module(instance: ClassificationInstance, x: np.ndarray, device: str = "cpu",
                 ) -> nn.Module:
    """A fresh float32 module computing the instance's logits at parameters ``x``, in train
    mode (Opacus only records activations in training mode) with every dropout at p = 0
    (the oracles' models run in eval mode, dropout off; none has BatchNorm), so both modes
    compute the same function."""
    model = instance.model
    if isinstance(model, MLP):
        module: nn.Module = mlp_module(model, x)
    else:
        module = copy.deepcopy(model.module)  # type: ignore[union-attr]
        nn.utils.vector_to_parameters(torch.as_tensor(x, dtype=torch.float32),
                                      module.parameters())
    for sub in module.modules():
        if isinstance(sub, nn.Dropout):
            sub.p = 0.0
    return module.float().to(device).train()


def batch(oracle: Oracle, size: int) -> tuple[Any, Any]:
    """(features, one-hot labels) of the first ``size`` samples, as the torch oracle sees
    them; features a tensor, or a tuple of them (BERT's ids and mask)."""
    assert isinstance(oracle, TorchOracle)
    *features, onehot = oracle.batch(np.arange(size))
    return (features[0] if len(features) == 1 else tuple(features)), onehot


def _logits(module: nn.Module, features: Any) -> Any:
    """The module on one feature tensor or a tuple of them (BERT's ids and mask)."""
    return module(*features) if isinstance(features, tuple) else module(features)


def flat_grad(module: nn.Module) -> Any:
    """The parameters' ``.grad``, flattened (zeros where a parameter got none)."""
    return torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad).reshape(-1)
                      for p in module.parameters()])


def module_grad(module: nn.Module, features: Any, onehot: Any) -> Any:
    """The non-private gradient of the mean cross-entropy, flattened."""
    module.zero_grad(set_to_none=True)
    F.cross_entropy(_logits(module, features), onehot).backward()
    return flat_grad(module)


def grad_sample_module(module: nn.Module) -> nn.Module:
    """Opacus's per-sample-gradient wrapper (hooks) for a summed loss (``strict=False``:
    BERT's id buffers are constants, not state that mixes samples)."""
    from opacus import GradSampleModule

    return GradSampleModule(module, loss_reduction="sum", strict=False)


def ghost_clipping_module(module: nn.Module, clip: float) -> nn.Module:
    """Opacus's ghost-clipping wrapper for a summed loss, clipping at ``clip``."""
    from opacus.grad_sample import GradSampleModuleFastGradientClipping

    return GradSampleModuleFastGradientClipping(module, loss_reduction="sum", strict=False,
                                                max_grad_norm=clip, use_ghost_clipping=True)


def opacus_ghost_clipped_sum(gsm: Any, features: Any, onehot: Any) -> Any:
    """Σ_i of the per-sample gradients clipped at the wrapper's ``max_grad_norm``, as
    Opacus's ``DPTensorFastGradientClipping.backward`` computes it: a backward of the
    summed loss (the hooks take the per-sample norms), the clip factors, and a second
    backward of the per-sample losses weighted by them with the hooks off; flattened."""
    gsm.zero_grad(set_to_none=True)
    losses = F.cross_entropy(_logits(gsm, features), onehot, reduction="none")
    losses.sum().backward(retain_graph=True)
    coefficients = gsm.get_clipping_coef()
    gsm.zero_grad(set_to_none=True)
    gsm.disable_hooks()
    try:
        (coefficients.to(losses.device) * losses).sum().backward()
    finally:
        gsm.enable_hooks()
    return flat_grad(gsm)


def opacus_clipped_sum(gsm: nn.Module, features: Any, onehot: Any, clip: float) -> Any:
    """Σ_i of the per-sample gradients clipped at ``clip``, as Opacus computes it: forward,
    backward of the summed loss (per-sample gradients in ``p.grad_sample``), per-sample
    norms over all parameters, clip factors and the weighted sum (``DPOptimizer``'s
    ``clip_and_accumulate``), flattened."""
    gsm.zero_grad(set_to_none=True)
    F.cross_entropy(_logits(gsm, features), onehot, reduction="sum").backward()
    samples = [p.grad_sample for p in gsm.parameters()]  # type: ignore[attr-defined]
    norms = torch.stack([g.reshape(len(g), -1).norm(2, dim=-1) for g in samples], dim=1)
    factors = (clip / (norms.norm(2, dim=1) + OPACUS_EPS)).clamp(max=1.0)
    return torch.cat([torch.einsum("i,i...", factors, g).reshape(-1) for g in samples])



def reference_kernel(instance: ClassificationInstance, oracle: Oracle, kernel: str,
                     batch_size: int, clip: float, device: str = "cpu") -> Callable[[], Any]:
    """One of :data:`REFERENCE_KERNELS` at x0 on the first ``batch_size`` samples, on a
    fresh module holding the instance's parameters."""
    module = torch_module(instance, instance.x0, device)
    features, onehot = batch(oracle, batch_size)
    if kernel == "module_grad":
        return lambda: module_grad(module, features, onehot)
    if kernel == "opacus_clipped_sum":
        gsm = grad_sample_module(module)
        return lambda: opacus_clipped_sum(gsm, features, onehot, clip)
    ghost = ghost_clipping_module(module, clip)
    return lambda: opacus_ghost_clipped_sum(ghost, features, onehot)


def kernel_call(problem: str, kernel: str, batch_size: int, device: str = "cpu"
                ) -> tuple[Setup, Callable[[], Any]]:
    """``problem``'s torch setup on ``device`` and a call of ``kernel`` at x0 on its first
    ``batch_size`` samples: an oracle kernel (:data:`~bench.micro.common.ORACLE_KERNELS`)
    or a reference one (:data:`REFERENCE_KERNELS`)."""
    s = setup(problem, "torch", device)
    if kernel in REFERENCE_KERNELS:
        return s, reference_kernel(s.instance, s.oracle, kernel,  # type: ignore[arg-type]
                                   batch_size, CLIP, device)
    return s, oracle_kernel(s.oracle, kernel, batch_size)
