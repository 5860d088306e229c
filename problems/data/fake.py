"""Stand-ins for the data sets that are files (CIFAR, MNIST, Fashion-MNIST, CoLA), with the
loaders' signatures: the tests and the micro benchmarks patch them over a problem's loader
(:data:`FAKE_DATA`) where the real files are absent. Random content, every class present;
never a result's data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from problems.data.cola import TextSplit
from problems.data.common import Split


def fake_images(variant: str, data_dir: str | None = None, download: bool = False,
                n: int = 48) -> Split:
    """``n`` training and ``n // 2`` test images of ``variant``'s shape, uniform in [0, 1],
    labels cycling through every class."""
    rng = np.random.default_rng(0)
    classes = 100 if variant == "cifar100" else 10
    shape = (1, 28, 28) if variant in ("mnist", "fashion_mnist") else (3, 32, 32)

    def images(m: int) -> np.ndarray:
        return rng.random((m, *shape), dtype=np.float32)

    return Split(images(n), np.arange(n) % classes, images(n // 2),
                 np.arange(n // 2) % classes, classes)


FAKE_SENTENCES = ("The cat sat on the mat.", "Cat the mat on sat.", "She reads books daily.",
                  "Books she daily reads the.", "It rained all day long.", "Rained it day all.")


def fake_text(data_dir: str | None = None, download: bool = False, n: int = 24) -> TextSplit:
    """A tiny stand-in for CoLA: a few (un)grammatical sentences, both labels."""
    sentences = [FAKE_SENTENCES[i % len(FAKE_SENTENCES)] for i in range(n)]
    labels = (np.arange(n) + 1) % 2
    return TextSplit(sentences, labels, sentences[: n // 2], labels[: n // 2])


_IMAGES = "problems.vision.load_images"
#: problem → (the loader to patch, its stand-in)
FAKE_DATA: dict[str, tuple[str, Callable[..., Any]]] = {
    **{name: (_IMAGES, fake_images) for name in (
        "cifar10_cnn", "cifar10_resnet18", "cifar10_vgg", "mnist_mlp", "fashion_mnist_mlp",
        "fashion_mnist_cnn", "fashion_mnist_vgg", "cifar10_mlp", "cifar100_resnet18")},
    "cola_bert": ("problems.text.load_text", fake_text),
}
