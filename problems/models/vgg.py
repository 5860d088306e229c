"""The tanh VGG-style CNN of huang2025 §5(b) ("the same as in Kairouz et al. 2021b").

Layer by layer (notes §5(b), from google-research/DP-FTRL ``nn.py``, ``vgg128``)::

    Conv 3→32 3×3 p1, tanh;  Conv 32→32, tanh;   MaxPool 2     32×16×16
    Conv 32→64, tanh;        Conv 64→64, tanh;   MaxPool 2     64×8×8
    Conv 64→128, tanh;       Conv 128→128, tanh; MaxPool 2     128×4×4
    Flatten → Linear 2048→128, tanh → Linear 128→10

d = 550,570 for 3×32×32 inputs and 10 classes. No normalisation layers. Initialisation as
DP-FTRL's: convolution weights N(0, 1/fan_in) with fan_in = 9·C_in, linear weights
Xavier-normal, zero biases (notes §5(b); PriSMA's own code could not be consulted).
``in_channels``/``input_size`` let the same network run on 1×8×8 digits (8 → 4 → 2 → 1, so
the flattened map has 128 features instead of 2,048).
"""

from __future__ import annotations

import math

from torch import nn

CHANNELS = (32, 64, 128)


def vgg_tanh(in_channels: int = 3, num_classes: int = 10, input_size: int = 32,
             width: float = 1.0, hidden: int = 128) -> nn.Sequential:
    """The network; ``width`` scales every channel count."""
    layers: list[nn.Module] = []
    size, channels = input_size, in_channels
    for base in CHANNELS:
        out = max(1, round(base * width))
        layers += [nn.Conv2d(channels, out, 3, padding=1), nn.Tanh(),
                   nn.Conv2d(out, out, 3, padding=1), nn.Tanh()]
        channels = out
        if size >= 2:
            layers.append(nn.MaxPool2d(2))
            size //= 2
    layers += [nn.Flatten(), nn.Linear(channels * size * size, hidden), nn.Tanh(),
               nn.Linear(hidden, num_classes)]
    return nn.Sequential(*layers)


def init_vgg(module: nn.Module) -> None:
    """DP-FTRL's initialisation: N(0, 1/fan_in) convolutions, Xavier-normal linear layers."""
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d):
            fan_in = layer.in_channels * math.prod(layer.kernel_size)
            nn.init.normal_(layer.weight, 0.0, 1.0 / math.sqrt(fan_in))
        elif isinstance(layer, nn.Linear):
            nn.init.xavier_normal_(layer.weight)
        if isinstance(layer, nn.Conv2d | nn.Linear) and layer.bias is not None:
            nn.init.zeros_(layer.bias)
