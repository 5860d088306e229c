"""The reference implementations the oracles are timed against, on the same network, data
and parameters: a plain ``torch.nn.Module`` backward (non-private) and Opacus's
``GradSampleModule`` with the clipping ``DPOptimizer`` applies (the clipped sum).

The network is the instance's own module (torch-module problems: ``instance.model.module``,
copied) or, for the ``xp`` MLP, the equivalent stack of ``nn.Linear`` layers; either way its
parameters are set to the flat vector ``x``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

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
    mode (Opacus only records activations in training mode; the networks here have no
    dropout or BatchNorm, so both modes compute the same function)."""
    model = instance.model
    if isinstance(model, MLP):
        module: nn.Module = mlp_module(model, x)
    else:
        module = copy.deepcopy(model.module)  # type: ignore[union-attr]
        nn.utils.vector_to_parameters(torch.as_tensor(x, dtype=torch.float32),
                                      module.parameters())
    return module.float().to(device).train()


def batch(oracle: Oracle, size: int) -> tuple[Any, Any]:
    """(features, one-hot labels) of the first ``size`` samples, as the torch oracle sees
    them."""
    assert isinstance(oracle, TorchOracle)
    features, onehot = oracle.batch(np.arange(size))
    return features, onehot


def module_grad(module: nn.Module, features: Any, onehot: Any) -> Any:
    """The non-private gradient of the mean cross-entropy, flattened."""
    module.zero_grad(set_to_none=True)
    F.cross_entropy(module(features), onehot).backward()
    return torch.cat([p.grad.reshape(-1) for p in module.parameters()])  # type: ignore[union-attr]


def grad_sample_module(module: nn.Module) -> nn.Module:
    """Opacus's per-sample-gradient wrapper (hooks) for a summed loss."""
    from opacus import GradSampleModule

    return GradSampleModule(module, loss_reduction="sum")


def opacus_clipped_sum(gsm: nn.Module, features: Any, onehot: Any, clip: float) -> Any:
    """Σ_i of the per-sample gradients clipped at ``clip``, as Opacus computes it: forward,
    backward of the summed loss (per-sample gradients in ``p.grad_sample``), per-sample
    norms over all parameters, clip factors and the weighted sum (``DPOptimizer``'s
    ``clip_and_accumulate``), flattened."""
    gsm.zero_grad(set_to_none=True)
    F.cross_entropy(gsm(features), onehot, reduction="sum").backward()
    samples = [p.grad_sample for p in gsm.parameters()]  # type: ignore[attr-defined]
    norms = torch.stack([g.reshape(len(g), -1).norm(2, dim=-1) for g in samples], dim=1)
    factors = (clip / (norms.norm(2, dim=1) + OPACUS_EPS)).clamp(max=1.0)
    return torch.cat([torch.einsum("i,i...", factors, g).reshape(-1) for g in samples])
