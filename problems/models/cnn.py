"""The CNN of avdiukhin2024 Appendix A (notes §5.3), with GroupNorm in place of BatchNorm.

Layer by layer (CIFAR-10, 3×32×32 input; channels scale with ``width``)::

    conv_bn(3, 64, k3, s1, p1)                                   64×32×32
    conv_bn(64, 128, k5, s2, p2)                                128×16×16
    Residual(conv_bn(128, 128), conv_bn(128, 128))              128×16×16
    conv_bn(128, 256, k3, s1, p1)                               256×16×16
    MaxPool2d(2)                                                256×8×8
    Residual(conv_bn(256, 256), conv_bn(256, 256))              256×8×8
    conv_bn(256, 128, k3, s1, p0)                               128×6×6
    AdaptiveMaxPool2d(1), Flatten, Linear(128, 10, bias=False), Mul(0.2)

``conv_bn`` is Conv2d(bias=False) → norm → ReLU (FFCV defaults k3, s1, p1). Deviations:

* **norm**: the paper uses BatchNorm, which mixes the samples of a batch, so per-sample
  gradients (and the sensitivity argument) are ill-defined (notes §6 pitfall 2). We use
  GroupNorm with ``gcd(groups, channels)`` groups (default 16, as De et al. 2022 for DP
  training on CIFAR-10); its affine weight and bias count the same as BN's, so d = 2,274,880
  as in the paper. ``norm="none"`` drops the normalisation layers.
* **small inputs** (``stride``): the stride of the 5×5 convolution. With the paper's 2, an
  8×8 image shrinks to 4 → 2 (pool) → 0 (the unpadded 3×3), so the 8×8 digits use
  ``stride=1``: 8 → 8 → 4 → 2 → 1. Parameter counts do not depend on the stride.
"""

from __future__ import annotations

import math

from torch import Tensor, nn

NORMS = ("group", "none")


class Residual(nn.Module):
    """``x + m(x)``."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: Tensor) -> Tensor:
        return x + self.module(x)


class Mul(nn.Module):
    """``weight · x`` (fixed logit scaling, not trained)."""

    def __init__(self, weight: float) -> None:
        super().__init__()
        self.weight = weight

    def forward(self, x: Tensor) -> Tensor:
        return x * self.weight


def channels(c: int, width: float) -> int:
    """``c`` scaled by ``width``, at least 1."""
    return max(1, round(c * width))


def norm_layer(c: int, norm: str, groups: int) -> nn.Module:
    """GroupNorm over ``gcd(groups, c)`` groups, or Identity for ``norm="none"``."""
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; choose one of {', '.join(NORMS)}")
    return nn.GroupNorm(math.gcd(groups, c), c) if norm == "group" else nn.Identity()


def conv_bn(ci: int, co: int, k: int = 3, s: int = 1, p: int = 1, *, norm: str = "group",
            groups: int = 16) -> nn.Sequential:
    """Conv2d(bias=False) → norm → ReLU (the paper's ``conv_bn`` with its norm swapped)."""
    return nn.Sequential(nn.Conv2d(ci, co, k, stride=s, padding=p, bias=False),
                         norm_layer(co, norm, groups), nn.ReLU(inplace=False))


def feature_size(size: int, stride: int = 2) -> int:
    """Spatial size entering the AdaptiveMaxPool for a ``size``×``size`` input."""
    size = (size - 1) // stride + 1  # 5×5 conv, padding 2
    return size // 2 - 2             # MaxPool2d(2), then the unpadded 3×3 conv


def appendix_cnn(in_channels: int = 3, num_classes: int = 10, *, width: float = 1.0,
                 norm: str = "group", groups: int = 16, stride: int = 2,
                 input_size: int = 32) -> nn.Sequential:
    """The Appendix-A network as an ``nn.Sequential`` (see the module docstring)."""
    if width <= 0 or groups < 1 or stride < 1:
        raise ValueError("appendix_cnn needs width > 0, groups >= 1 and stride >= 1")
    if feature_size(input_size, stride) < 1:
        raise ValueError(f"a {input_size}x{input_size} input vanishes in the CNN with "
                         f"stride={stride}; use stride=1 for inputs smaller than 16x16")
    c64, c128, c256 = (channels(c, width) for c in (64, 128, 256))

    def cb(ci: int, co: int, k: int = 3, s: int = 1, p: int = 1) -> nn.Sequential:
        return conv_bn(ci, co, k, s, p, norm=norm, groups=groups)

    return nn.Sequential(
        cb(in_channels, c64, k=3, s=1, p=1),
        cb(c64, c128, k=5, s=stride, p=2),
        Residual(nn.Sequential(cb(c128, c128), cb(c128, c128))),
        cb(c128, c256, k=3, s=1, p=1),
        nn.MaxPool2d(2),
        Residual(nn.Sequential(cb(c256, c256), cb(c256, c256))),
        cb(c256, c128, k=3, s=1, p=0),
        nn.AdaptiveMaxPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(c128, num_classes, bias=False),
        Mul(0.2),
    )
