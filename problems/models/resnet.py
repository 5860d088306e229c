"""ResNet-18 (He et al. 2016; BasicBlock × [2,2,2,2]) with GroupNorm (avdiukhin2024 Figs. 1b, 2a).

Module names follow torchvision's ``resnet18`` (``conv1``, ``bn1``, ``layerX.Y.bn2``,
``layerX.0.downsample.{0,1}``, ``fc``) so its ``state_dict`` maps key for key; the ``bn*``
and ``downsample.1`` modules are GroupNorm here. Choices and deviations:

* **GroupNorm, not BatchNorm** (notes §6 pitfall 2): BN mixes the samples of a batch, so
  per-sample gradients are ill-defined. We use ``gcd(groups, channels)`` groups, default 32
  (Wu & He 2018; Opacus' ``ModuleValidator.fix`` uses the same). Parameter counts are those
  of the BN network (11,173,962 for 10 classes with the CIFAR stem).
* **stem**: ``"cifar"`` (default; 3×3 conv, stride 1, no max-pool: the usual CIFAR
  ResNet-18, since the paper does not say) or ``"imagenet"`` (7×7 conv, stride 2, max-pool;
  what torchvision's pretrained weights need).
* **pretrained weights** (:meth:`ResNet18.load_pretrained`): conv weights are copied, BN's
  affine weight and bias become GroupNorm's, BN running statistics are dropped, and ``fc``
  is replaced by a fresh ``num_classes`` head. GroupNorm normalises with per-sample group
  statistics instead of BN's running ImageNet statistics, so **the loaded network is not
  the pretrained function** — only its weights are reused; this must be stated wherever the
  CIFAR-100 fine-tuning results are reported.
* ``width`` scales every channel count (for small tests); the pretrained path needs 1.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import Tensor, nn

from problems.models.cnn import channels

STEMS = ("cifar", "imagenet")
BN_STATS = ("running_mean", "running_var", "num_batches_tracked")


def group_norm(c: int, groups: int) -> nn.GroupNorm:
    return nn.GroupNorm(math.gcd(groups, c), c)


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with an identity (or 1×1-conv) shortcut."""

    def __init__(self, cin: int, cout: int, stride: int, groups: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = group_norm(cout, groups)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = group_norm(cout, groups)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            group_norm(cout, groups))

    def forward(self, x: Tensor) -> Tensor:
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class ResNet18(nn.Module):
    """ResNet-18 with GroupNorm; see the module docstring for ``stem``, ``groups``, ``width``."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, *, width: float = 1.0,
                 groups: int = 32, stem: str = "cifar") -> None:
        super().__init__()
        if stem not in STEMS:
            raise ValueError(f"unknown stem {stem!r}; choose one of {', '.join(STEMS)}")
        if width <= 0 or groups < 1:
            raise ValueError("ResNet18 needs width > 0 and groups >= 1")
        c = [channels(64 * 2**i, width) for i in range(4)]
        if stem == "cifar":
            self.conv1 = nn.Conv2d(in_channels, c[0], 3, stride=1, padding=1, bias=False)
            self.maxpool: nn.Module = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(in_channels, c[0], 7, stride=2, padding=3, bias=False)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.bn1 = group_norm(c[0], groups)
        self.relu = nn.ReLU()
        self.layer1 = self._layer(c[0], c[0], 1, groups)
        self.layer2 = self._layer(c[0], c[1], 2, groups)
        self.layer3 = self._layer(c[1], c[2], 2, groups)
        self.layer4 = self._layer(c[2], c[3], 2, groups)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(c[3], num_classes)

    @staticmethod
    def _layer(cin: int, cout: int, stride: int, groups: int) -> nn.Sequential:
        return nn.Sequential(BasicBlock(cin, cout, stride, groups),
                             BasicBlock(cout, cout, 1, groups))

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))

    def load_pretrained(self, path: str | Path) -> None:
        """Weights from a local torchvision ``resnet18`` state_dict (BN → GN, new ``fc``)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no pretrained ResNet-18 weights at {path}; pass the path "
                                    "of a torchvision resnet18 state_dict (.pth) file")
        given = torch.load(path, map_location="cpu", weights_only=True)
        given = {k: v for k, v in given.items()
                 if not k.startswith("fc.") and k.rsplit(".", 1)[-1] not in BN_STATS}
        own = {k: v for k, v in self.state_dict().items() if not k.startswith("fc.")}
        missing, unexpected = sorted(own.keys() - given.keys()), sorted(given.keys() - own.keys())
        if missing or unexpected:
            raise ValueError(f"{path} is not a torchvision resnet18 state_dict: missing keys "
                             f"{missing}, unexpected keys {unexpected}")
        wrong = [f"{k}: {tuple(given[k].shape)} vs {tuple(v.shape)}"
                 for k, v in own.items() if given[k].shape != v.shape]
        if wrong:
            raise ValueError(f"{path}: shapes differ from this model (pretrained weights need "
                             f"stem='imagenet', width=1, in_channels=3): {wrong}")
        with torch.no_grad():
            for k, v in own.items():
                v.copy_(given[k])
        self.fc.reset_parameters()


def init_resnet(module: nn.Module) -> None:
    """torchvision's ResNet init: Kaiming-normal (fan-out) convs, unit/zero norm affine,
    PyTorch's default for the linear head."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.GroupNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            m.reset_parameters()


def init_head(module: nn.Module) -> None:
    """Re-initialise only the ``fc`` head (fine-tuning from pretrained weights)."""
    assert isinstance(module, ResNet18)
    module.fc.reset_parameters()
