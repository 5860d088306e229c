"""CIFAR-10 and CIFAR-100 from the official python archives, in torchvision's layout.

``<root>/cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta}`` or
``<root>/cifar-100-python/{train, test, meta}``; ``root`` may also be that folder itself.
Each data file is a pickle (load only files you trust) of a dict with ``b"data"``, an
(N, 3072) uint8 array whose rows are 3×32×32 images (channel-first, row-major), and the
labels: ``b"labels"`` (CIFAR-10) or ``b"fine_labels"`` (CIFAR-100).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from problems.data.common import (
    DataCorruptError,
    PathArg,
    Split,
    data_root,
    missing_error,
    torchvision_download,
    torchvision_hint,
    verify_default,
    verify_files,
)

# md5 sums from torchvision/datasets/cifar.py (pytorch/vision: CIFAR10 and CIFAR100's
# train_list, test_list and meta).
CIFAR10_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
    "batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
}
CIFAR100_MD5 = {
    "train": "16019d7e3df5f24257cddd939b257f8d",
    "test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
    "meta": "7973b15100ade9c7d40fb424638fde48",
}


@dataclass(frozen=True)
class CifarVariant:
    """Where one CIFAR variant lives and how its files are keyed."""

    name: str
    folder: str
    url: str
    train: tuple[str, ...]
    test: str
    label_key: bytes
    classes: int
    torchvision: str  # the torchvision.datasets class that downloads it
    md5: dict[str, str]  # every file of the folder (data and meta)
    examples: dict[str, int]  # images in each official data file


VARIANTS = {
    "cifar10": CifarVariant(
        name="CIFAR-10", folder="cifar-10-batches-py",
        url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        train=tuple(f"data_batch_{i}" for i in range(1, 6)), test="test_batch",
        label_key=b"labels", classes=10, torchvision="CIFAR10", md5=CIFAR10_MD5,
        examples=dict.fromkeys((*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"),
                               10_000),
    ),
    "cifar100": CifarVariant(
        name="CIFAR-100", folder="cifar-100-python",
        url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        train=("train",), test="test",
        label_key=b"fine_labels", classes=100, torchvision="CIFAR100", md5=CIFAR100_MD5,
        examples={"train": 50_000, "test": 10_000},
    ),
}


def load_cifar(root: PathArg | None = None, variant: str = "cifar10",
               verify: bool | None = None, download: bool = False) -> Split:
    """CIFAR-10/100 as float32 NCHW images in [0, 1] (not normalised) and int64 labels.

    ``verify=True`` checks every file against torchvision's md5 sums; None (default) checks
    each data file that holds the official number of images (see
    :mod:`problems.data.common`); False nothing. ``download=True`` fetches missing files
    with torchvision (installed separately).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown CIFAR variant {variant!r}; choose one of {sorted(VARIANTS)}")
    spec, base, verify = VARIANTS[variant], data_root(root), verify_default(verify)
    folder = _folder(base, spec)
    if _missing(folder, spec) and download and torchvision_download(spec.torchvision, base):
        folder = base / spec.folder
    if missing := _missing(folder, spec):
        how = (f"Download {spec.url} and extract it into {base} (it unpacks to "
               f"{base / spec.folder}), {torchvision_hint(download)}")
        raise missing_error(spec.name, missing, how)
    if verify:
        _verify(spec, (folder / name for name in spec.md5))
    x_train, y_train = _read(folder, spec.train, spec, verify is None)
    x_test, y_test = _read(folder, (spec.test,), spec, verify is None)
    return Split(x_train, y_train, x_test, y_test, classes=spec.classes)


def _folder(base: Path, spec: CifarVariant) -> Path:
    """``base`` itself where it is the batches folder, else ``base/<folder>``."""
    if base.name == spec.folder or any((base / name).is_file() for name in spec.md5):
        return base
    return base / spec.folder


def _missing(folder: Path, spec: CifarVariant) -> list[Path]:
    return [folder / name for name in spec.md5 if not (folder / name).is_file()]


def cifar_files(base: Path, variant: str) -> tuple[list[Path], list[Path]]:
    """(found, missing) files of a CIFAR ``variant`` under the data root ``base``."""
    spec = VARIANTS[variant]
    folder = _folder(base, spec)
    missing = _missing(folder, spec)
    return [folder / name for name in spec.md5 if folder / name not in missing], missing


def verify_cifar(variant: str, paths: Iterable[Path]) -> None:
    """Check a CIFAR ``variant``'s files against torchvision's md5 sums."""
    _verify(VARIANTS[variant], paths)


def _verify(spec: CifarVariant, paths: Iterable[Path]) -> None:
    """Check ``paths`` against torchvision's md5 sums."""
    verify_files(((p, spec.md5[p.name]) for p in paths),
                 f"from {spec.url} (or pass download=True with torchvision installed)")


def _read(folder: Path, names: tuple[str, ...], spec: CifarVariant,
          verify_official: bool) -> tuple[np.ndarray, np.ndarray]:
    """Images (n, 3, 32, 32) float32 in [0, 1] and int64 labels of the batch files ``names``;
    with ``verify_official``, a file with the official number of images is checksummed."""
    batches = [_read_batch(folder / name, spec) for name in names]
    _verify(spec, (folder / name for name, (data, _) in zip(names, batches, strict=True)
                   if verify_official and len(data) == spec.examples[name]))
    data = np.concatenate([b[0] for b in batches])
    x = data.reshape(-1, 3, 32, 32).astype(np.float32) / np.float32(255)
    return x, np.concatenate([b[1] for b in batches])


def _read_batch(path: Path, spec: CifarVariant) -> tuple[np.ndarray, np.ndarray]:
    """The uint8 (N, 3072) data and int64 labels of one pickled batch, validated."""
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f, encoding="bytes")
        data, labels = np.asarray(entry[b"data"]), np.asarray(entry[spec.label_key], np.int64)
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as err:
        raise DataCorruptError(
            f"{path} is not a {spec.name} batch (a pickled dict with keys b'data' and "
            f"{spec.label_key!r}): {err!r}"
        ) from err
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        bad = (f" with {np.count_nonzero(~np.isfinite(data)):,} NaN/inf values"
               if data.dtype.kind in "fc" else "")
        raise DataCorruptError(f"{path}: b'data' must be uint8 of shape (N, 3072) (the official "
                               f"pixels), got {data.dtype} {data.shape}{bad}; download "
                               f"{spec.url} again")
    if labels.shape != (len(data),):
        raise DataCorruptError(f"{path}: {len(data)} images but labels of shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= spec.classes):
        raise DataCorruptError(f"{path}: labels must be in [0, {spec.classes}), "
                               f"got [{labels.min()}, {labels.max()}]")
    return data, labels
