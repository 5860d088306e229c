"""Image classification with torch networks as flat-parameter problems (avdiukhin2024 §4).

* ``digits_cnn``: the embedded 8×8 digits (1 channel, pixels in [0, 1] as for
  ``digits_mlp``) with a narrow Appendix-A CNN; real data, no files, minutes on a CPU: the
  quick-scale stand-in for Figs. 1a and 3.
* ``cifar10_cnn``: CIFAR-10 with the Appendix-A CNN (Figs. 1a, 3).
* ``cifar10_resnet18``: CIFAR-10 with ResNet-18 from scratch (Fig. 1b).
* ``cifar100_resnet18``: CIFAR-100 with ResNet-18, fine-tuned from local torchvision
  ImageNet weights or from scratch (Fig. 2a).

All networks use GroupNorm where the paper has BatchNorm (per-sample gradients need
per-sample independence; see :mod:`problems.models.cnn` and :mod:`problems.models.resnet`).
CIFAR images are read by :mod:`problems.data.cifar` from ``data_dir`` (downloaded there only
with ``download: true``; else a missing file raises its ``DataMissingError``), optionally subsampled
(``n_train``, ``n_test``, with ``data_seed``) and normalised per channel. Per-sample
gradients are computed ``chunk_size`` samples at a time: a (b, d) block is b·d floats
(64 × 2.27M × 4 B ≈ 580 MB for the CNN), and every vmapped chunk holds its activations.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from typing import Any, ClassVar, Literal, get_args

import numpy as np
from pydantic import PositiveFloat

from problems.backend import require
from problems.base import DataSize, Problem, register_problem
from problems.data.cifar import load_cifar
from problems.data.common import Split, local_path
from problems.data.digits import digits_train_size, load_digits_split
from problems.data.mnist import load_fashion_mnist, load_mnist
from problems.models.mlp import MLP, layer_sizes
from problems.params import Count, Fraction, params
from problems.supervised import (
    ClassificationInstance,
    DataParams,
    OracleParams,
    classification_instance,
    subsampled,
)

Norm = Literal["group", "none"]  # = problems.models.cnn.NORMS (that module needs torch)
Stem = Literal["cifar", "imagenet"]  # = problems.models.resnet.STEMS
Normalize = Literal["dataset", "imagenet", "symmetric", "none"]
NORMS, STEMS = get_args(Norm), get_args(Stem)
# Per-channel mean and std of [0, 1] pixels. CIFAR-10: FFCV's values (notes §5.2, /255).
MEAN_STD: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "symmetric": ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),  # x ↦ 2x − 1: pixels in [−1, 1]
    "mnist": ((0.1307,), (0.3081,)),
    # Fashion-MNIST: computed from its 60,000 training images (0.28604, 0.35302)
    "fashion_mnist": ((0.2860,), (0.3530,)),
}


def load_images(variant: str, data_dir: str | None, download: bool = False) -> Split:
    """CIFAR-10/100, MNIST or Fashion-MNIST (x float32 NCHW in [0, 1], y int64) from
    ``data_dir`` (``download``: missing files fetched there first, with torchvision)."""
    if variant == "mnist":
        return load_mnist(data_dir, download=download)
    if variant == "fashion_mnist":
        return load_fashion_mnist(data_dir, download=download)
    return load_cifar(data_dir, variant=variant, download=download)


def normalized(x: np.ndarray, mean: tuple[float, ...], std: tuple[float, ...]) -> np.ndarray:
    """``(x − mean) / std`` per channel of an NCHW array, in float32."""
    m = np.asarray(mean, dtype=np.float32)[:, None, None]
    s = np.asarray(std, dtype=np.float32)[:, None, None]
    return ((x - m) / s).astype(np.float32)


@params
class ImageParams(DataParams):
    """External images; ``normalize``: per-channel with the data set's ("dataset") or
    ImageNet's ("imagenet") mean and std, to [−1, 1] ("symmetric"), or "none";
    ``download``: fetch missing files into ``data_dir`` with torchvision (not part of the
    run id, see :data:`bench.spec.UNHASHED`; parallel runs may each start a download: run
    one first)."""

    normalize: Normalize = "dataset"
    download: bool = False


def image_split(variant: str, p: ImageParams) -> Split:
    """The (subsampled, normalised) CIFAR or MNIST split for ``p``."""
    split = subsampled(load_images(variant, p.data_dir, p.download), p)
    if p.normalize == "none":
        return split
    mean, std = MEAN_STD[variant if p.normalize == "dataset" else p.normalize]
    channels = split.x_train.shape[1]
    if len(mean) != channels:
        if len({*mean}) > 1 or len({*std}) > 1:
            raise ValueError(f"normalize={p.normalize!r} is per channel for {len(mean)} "
                             f"channels; {variant} images have {channels}")
        mean, std = mean[:1] * channels, std[:1] * channels  # the same for every channel
    return dataclasses.replace(split, x_train=normalized(split.x_train, mean, std),
                               x_test=normalized(split.x_test, mean, std))


@params
class DigitsCNNParams(OracleParams):
    """Appendix-A CNN on digits: channel multiplier, norm, GN groups; digits split."""

    width: PositiveFloat = 0.25
    norm: Norm = "group"
    groups: Count = 16
    test_fraction: Fraction = 0.25
    data_seed: int = 0


@register_problem
class DigitsCNN(Problem):
    """Embedded 8×8 digits with a narrow Appendix-A CNN (stride 1 for 8×8 inputs)."""

    name = "digits_cnn"
    Params = DigitsCNNParams
    backends = ("torch",)
    description = ("sklearn 8x8 digits as 1x8x8 images, avdiukhin2024 App. A CNN (GroupNorm, "
                   "default width 0.25, stride-1 5x5 conv), cross-entropy; quick CPU stand-in for "
                   "CIFAR-10")

    def build(self, seed: int) -> ClassificationInstance:
        p: DigitsCNNParams = self.params
        require("torch", "torch")
        from problems.models.cnn import appendix_cnn  # lazy: needs the torch extra
        from problems.models.torch_module import TorchModel  # lazy: needs the torch extra

        split = load_digits_split(p.test_fraction, p.data_seed)
        split = dataclasses.replace(split, x_train=split.x_train.reshape(-1, 1, 8, 8),
                                    x_test=split.x_test.reshape(-1, 1, 8, 8))
        module = appendix_cnn(1, split.classes, width=p.width, norm=p.norm, groups=p.groups,
                              stride=1, input_size=8)
        return classification_instance(self.name, split, TorchModel(module, sample_ndim=3),
                                       seed, l2=p.l2,
                                       clients=p.client_indices(split.y_train, p.data_seed),
                                       **p.oracle_kw)

    def size(self) -> DataSize:
        p: DigitsCNNParams = self.params
        return p.data_size(digits_train_size(p.test_fraction))


class CifarProblem(Problem):
    """An image split (:func:`image_split`: CIFAR, or Fashion-MNIST) and a torch network
    from :meth:`network` for images of ``channels`` × ``input_size`` × ``input_size``."""

    variant: ClassVar[str]
    channels: ClassVar[int] = 3
    input_size: ClassVar[int] = 32
    backends = ("torch",)

    @abstractmethod
    def network(self, classes: int) -> Any:
        """The :class:`~problems.models.torch_module.TorchModel` for ``classes`` classes."""

    def build(self, seed: int) -> ClassificationInstance:
        p: ImageParams = self.params
        require("torch", "torch")
        split = image_split(self.variant, p)
        return classification_instance(self.name, split, self.network(split.classes), seed,
                                       l2=p.l2,
                                       clients=p.client_indices(split.y_train, p.data_seed),
                                       **p.oracle_kw)

    def size(self) -> DataSize | None:
        return self.params.subsample_size()


@params
class CifarCNNParams(ImageParams):
    """Appendix-A CNN: channel multiplier, norm ("group" | "none") and GN groups."""

    width: PositiveFloat = 1.0
    norm: Norm = "group"
    groups: Count = 16


@register_problem
class Cifar10CNN(CifarProblem):
    """CIFAR-10 with the Appendix-A CNN (avdiukhin2024 Figs. 1a, 3)."""

    name = "cifar10_cnn"
    Params = CifarCNNParams
    variant = "cifar10"
    description = ("CIFAR-10 (local files), avdiukhin2024 App. A CNN with GroupNorm "
                   "(d = 2,274,880 at width 1), cross-entropy; paper Figs. 1a, 3")

    def network(self, classes: int) -> Any:
        from problems.models.cnn import appendix_cnn  # lazy: needs the torch extra
        from problems.models.torch_module import TorchModel  # lazy: needs the torch extra

        p: CifarCNNParams = self.params
        module = appendix_cnn(self.channels, classes, width=p.width, norm=p.norm,
                              groups=p.groups, input_size=self.input_size)
        return TorchModel(module, sample_ndim=3)


@register_problem
class FashionMnistCNN(Cifar10CNN):
    """Fashion-MNIST with the Appendix-A CNN for 28×28×1 images: real images at a paper's
    dimension for avdiukhin2024's figures where CIFAR-10 cannot be had."""

    name = "fashion_mnist_cnn"
    variant = "fashion_mnist"
    channels, input_size = 1, 28
    description = ("Fashion-MNIST (Debian's dataset-fashion-mnist or local IDX files), "
                   "avdiukhin2024 App. A CNN with GroupNorm for 28x28x1 inputs, cross-entropy")


@params
class ResNetParams(ImageParams):
    """ResNet-18: channel multiplier, GN groups, and stem ("cifar" | "imagenet"; None:
    "imagenet" with pretrained weights, else "cifar")."""

    width: PositiveFloat = 1.0
    groups: Count = 32
    stem: Stem | None = None


@register_problem
class Cifar10ResNet18(CifarProblem):
    """CIFAR-10 with ResNet-18 (GroupNorm) from scratch (avdiukhin2024 Fig. 1b)."""

    name = "cifar10_resnet18"
    Params = ResNetParams
    variant = "cifar10"
    description = ("CIFAR-10 (local files), ResNet-18 with GroupNorm instead of BatchNorm, "
                   "CIFAR stem, from scratch (d = 11,173,962), cross-entropy; paper Fig. 1b")

    def network(self, classes: int) -> Any:
        from problems.models.resnet import ResNet18, init_resnet  # lazy: needs the torch extra
        from problems.models.torch_module import TorchModel  # lazy: needs the torch extra

        p: ResNetParams = self.params
        module = ResNet18(classes, width=p.width, groups=p.groups, stem=p.stem or "cifar")
        return TorchModel(module, sample_ndim=3, reinit=init_resnet)


@params
class PretrainedResNetParams(ResNetParams):
    """``weights``: a local torchvision resnet18 state_dict (relative paths are read under
    the data root; None: from scratch)."""

    weights: str | None = None


@register_problem
class Cifar100ResNet18(CifarProblem):
    """CIFAR-100 with ResNet-18 (GroupNorm), fine-tuned from ImageNet weights or from scratch
    (avdiukhin2024 Fig. 2a)."""

    name = "cifar100_resnet18"
    Params = PretrainedResNetParams
    variant = "cifar100"
    description = ("CIFAR-100 (local files), ResNet-18 with GroupNorm; `weights` = local "
                   "torchvision ImageNet resnet18 .pth (BN affine -> GN affine, running stats "
                   "dropped, new 100-way head: not the pretrained function) or None = from "
                   "scratch; paper Fig. 2a")

    def network(self, classes: int) -> Any:
        from problems.models.resnet import (  # lazy: needs the torch extra
            ResNet18,
            init_head,
            init_resnet,
        )
        from problems.models.torch_module import TorchModel  # lazy: needs the torch extra

        p: PretrainedResNetParams = self.params
        stem = p.stem or ("imagenet" if p.weights else "cifar")
        module = ResNet18(classes, width=p.width, groups=p.groups, stem=stem)
        if p.weights is None:
            return TorchModel(module, sample_ndim=3, reinit=init_resnet)
        module.load_pretrained(str(local_path(p.weights, p.data_dir, "pretrained weights")))
        return TorchModel(module, sample_ndim=3, reinit=init_head)


@params
class CifarVGGParams(ImageParams):
    """huang2025's tanh VGG: channel multiplier; pixels scaled to [−1, 1] as DP-FTRL."""

    normalize: Normalize = "symmetric"
    width: PositiveFloat = 1.0


@register_problem
class Cifar10VGG(CifarProblem):
    """CIFAR-10 with the tanh VGG of huang2025 §5(b), usually split over clients (Table 1)."""

    name = "cifar10_vgg"
    Params = CifarVGGParams
    variant = "cifar10"
    description = ("CIFAR-10 (local files), tanh VGG of huang2025 / DP-FTRL (d = 550,570), "
                   "inputs in [-1, 1], cross-entropy; clients by partition; huang2025 Table 1")

    def network(self, classes: int) -> Any:
        from problems.models.torch_module import TorchModel  # lazy: needs the torch extra
        from problems.models.vgg import init_vgg, vgg_tanh  # lazy: needs the torch extra

        p: CifarVGGParams = self.params
        return TorchModel(vgg_tanh(self.channels, classes, self.input_size, width=p.width),
                          sample_ndim=3, reinit=init_vgg)


@register_problem
class FashionMnistVGG(Cifar10VGG):
    """Fashion-MNIST with huang2025's tanh VGG for 28×28×1 images, inputs in [−1, 1]: real
    images for Table 1's claims where CIFAR-10 cannot be had."""

    name = "fashion_mnist_vgg"
    variant = "fashion_mnist"
    channels, input_size = 1, 28
    description = ("Fashion-MNIST (Debian's dataset-fashion-mnist or local IDX files), tanh VGG "
                   "of huang2025 / DP-FTRL for 28x28x1 inputs in [-1, 1], cross-entropy; "
                   "clients by partition")


@params
class ImageMLPParams(ImageParams):
    """tao2025's network: one hidden layer (``hidden`` units, ReLU), Kaiming-uniform weights,
    zero biases, on flattened, normalised images."""

    hidden: Count = 128


class ImageMLP(Problem):
    """Flattened images × the one-hidden-layer ReLU MLP of tao2025 (App. E); torch and jax."""

    Params = ImageMLPParams
    variant: ClassVar[str]
    backends = ("torch", "jax")

    def build(self, seed: int) -> ClassificationInstance:
        p: ImageMLPParams = self.params
        split = image_split(self.variant, p)
        split = dataclasses.replace(split, x_train=split.x_train.reshape(len(split.x_train), -1),
                                    x_test=split.x_test.reshape(len(split.x_test), -1))
        model = MLP(layer_sizes(split.x_train.shape[1], [p.hidden], split.classes),
                    activation="relu", init_scheme="kaiming")
        return classification_instance(self.name, split, model, seed, l2=p.l2,
                                       clients=p.client_indices(split.y_train, p.data_seed),
                                       **p.oracle_kw)

    def size(self) -> DataSize | None:
        return self.params.subsample_size()


@register_problem
class MnistMLP(ImageMLP):
    """MNIST, 784 → 128 (ReLU) → 10 (d = 101,770): tao2025 Figure 1."""

    name = "mnist_mlp"
    variant = "mnist"
    description = ("MNIST (local IDX files), one hidden layer of 128 ReLU units, Kaiming init "
                   "(d = 101,770), clients by partition; tao2025 Fig. 1")


@register_problem
class FashionMnistMLP(ImageMLP):
    """Fashion-MNIST, 784 → 128 (ReLU) → 10 (d = 101,770): tao2025's Figure-1 network on
    real images of MNIST's format and size."""

    name = "fashion_mnist_mlp"
    variant = "fashion_mnist"
    description = ("Fashion-MNIST (Debian's dataset-fashion-mnist or local IDX files), one "
                   "hidden layer of 128 ReLU units, Kaiming init (d = 101,770), clients by "
                   "partition; tao2025's Fig. 1 network on real images")


@register_problem
class Cifar10MLP(ImageMLP):
    """CIFAR-10, 3072 → 128 (ReLU) → 10 (d = 394,634): tao2025 Figure 2."""

    name = "cifar10_mlp"
    variant = "cifar10"
    description = ("CIFAR-10 (local files), one hidden layer of 128 ReLU units, Kaiming init "
                   "(d = 394,634), clients by partition; tao2025 Fig. 2")
