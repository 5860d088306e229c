"""Real data sets: digits (embedded), MNIST, CIFAR-10/100, CoLA."""

from problems.data.cifar import load_cifar
from problems.data.cola import TextSplit, load_cola
from problems.data.common import (
    DataCorruptError,
    DataMissingError,
    Split,
    data_root,
    subset,
    verify_files,
)
from problems.data.digits import load_digits_split
from problems.data.mnist import load_mnist

__all__ = [
    "DataCorruptError",
    "DataMissingError",
    "Split",
    "TextSplit",
    "data_root",
    "load_cifar",
    "load_cola",
    "load_digits_split",
    "load_mnist",
    "subset",
    "verify_files",
]
