"""A ``torch.nn.Module`` as a flat-parameter model (ARCHITECTURE.md: parameters are flat vectors).

:class:`TorchModel` gives a module the model protocol of
:class:`~problems.supervised.ClassificationInstance` (``n_params``, ``init``, ``logits``):
``logits(xp, x, features)`` cuts the flat vector ``x`` into views shaped like the module's
named parameters and evaluates the module with ``torch.func.functional_call``, so the
oracle's ``vmap(grad)`` differentiates with respect to ``x`` directly. Buffers are passed
explicitly alongside, on the device of ``x`` and, if floating, in its dtype. So every
floating tensor the module computes with has the dtype of ``x`` (float64 runs are float64
throughout) while the module itself is never moved: moving it (``module.to``) inside the
oracle's transforms corrupts its parameters.

Per-sample gradients require per-sample independence, so BatchNorm is refused (use
GroupNorm); the module is kept in eval mode (dropout off), which makes losses deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

Reinit = Callable[[nn.Module], None]
"""Re-initialises a module's parameters in place from torch's (seeded) global generator."""


def reset_all(module: nn.Module) -> None:
    """Every submodule's own default init (``reset_parameters``), in module order."""
    for m in module.modules():
        reset = getattr(m, "reset_parameters", None)
        if callable(reset):
            reset()


def refuse_batchnorm(module: nn.Module) -> None:
    """Raise if ``module`` holds a BatchNorm layer (it couples the samples of a batch)."""
    bad = [name for name, m in module.named_modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if bad:
        raise ValueError(f"BatchNorm layers {bad} mix the samples of a batch, so per-sample "
                         "gradients are ill-defined; use GroupNorm")


class TorchModel:
    """Flat-parameter view of ``module``; one sample has ``sample_ndim`` feature axes."""

    def __init__(self, module: nn.Module, sample_ndim: int, reinit: Reinit = reset_all) -> None:
        refuse_batchnorm(module)
        self.module = module.eval()
        self.sample_ndim = sample_ndim
        self.reinit = reinit
        self._layout = [(name, tuple(p.shape), p.numel()) for name, p in module.named_parameters()]
        self._buffers: dict[str, torch.Tensor] = dict(module.named_buffers())

    @property
    def n_params(self) -> int:
        return sum(numel for _, _, numel in self._layout)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """``reinit`` under a torch seed drawn from ``rng`` (torch's global generator is
        left as it was); the module's parameters, flattened."""
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(int(rng.integers(2**63 - 1)))
            self.reinit(self.module)
        return self.flatten().astype(np.float64)

    def flatten(self) -> np.ndarray:
        """The module's current parameters as one flat numpy vector (the layout of ``x``)."""
        params = [p.detach().reshape(-1).cpu() for p in self.module.parameters()]
        return torch.cat(params).numpy()

    def unflatten(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of the flat vector ``x`` shaped like the module's named parameters.

        One ``split`` (not one slice per parameter): its backward concatenates the
        parameter gradients, where each slice's backward would add a zero-padded length-d
        copy (O(#params · d) per sample).
        """
        parts = x.split([numel for _, _, numel in self._layout])
        return {name: part.view(shape)
                for (name, shape, _), part in zip(self._layout, parts, strict=True)}

    def logits(self, xp: Any, x: torch.Tensor, features: Any) -> torch.Tensor:
        """Module output at parameters ``x``; ``features`` is a tensor or a tuple of tensors,
        batched or one sample (as inside ``vmap``)."""
        feats = features if isinstance(features, tuple) else (features,)
        single = feats[0].ndim == self.sample_ndim
        if single:
            feats = tuple(f.unsqueeze(0) for f in feats)
        buffers = {name: b.to(device=x.device, dtype=x.dtype if b.is_floating_point() else None)
                   for name, b in self._buffers.items()}
        state = {**self.unflatten(x), **buffers}
        out = torch.func.functional_call(self.module, state, feats)
        return out.squeeze(0) if single else out
