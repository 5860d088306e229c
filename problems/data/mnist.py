"""MNIST from its four IDX files, in torchvision's layout or on their own.

``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
``t10k-labels-idx1-ubyte``, each plain or gzipped (``.gz``), in ``<root>/MNIST/raw/``
(where torchvision puts them) or in ``<root>/``. An IDX file is a big-endian uint32 magic
number ``0x0000TTNN`` (``TT = 0x08``: unsigned bytes; ``NN``: the number of dimensions),
``NN`` big-endian uint32 sizes, then the data in row-major order.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from collections.abc import Iterable
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

URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
MIRROR = "http://yann.lecun.com/exdb/mnist/"
IMAGE_MAGIC, LABEL_MAGIC = 0x00000803, 0x00000801
# (images, labels, number of examples in the official files) per split
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60_000),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10_000),
}
# md5 sums of the .gz files, from torchvision/datasets/mnist.py (pytorch/vision:
# MNIST.resources). torchvision publishes none for the extracted files, so verify=True
# checks their example counts instead, and the default check covers .gz files only.
MNIST_GZ_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


def load_mnist(root: PathArg | None = None, verify: bool | None = None,
               download: bool = False) -> Split:
    """MNIST as float32 (n, 1, 28, 28) images in [0, 1] and int64 labels, 10 classes.

    ``verify=True`` checks ``.gz`` files against torchvision's md5 sums and every file's
    example count against the official one; None (default) checks the ``.gz`` files of a
    split with the official example count (see :mod:`problems.data.common`); False nothing.
    ``download=True`` fetches missing files with torchvision (installed separately).
    """
    verify = verify_default(verify)
    base = data_root(root)
    found, missing = _locate(base)
    if missing and download and torchvision_download("MNIST", base):
        found, missing = _locate(base)
    if missing:
        raw = base / "MNIST" / "raw"
        how = (f"Download {', '.join(f'{name}.gz' for name in missing)} from {URL} (or {MIRROR}) "
               f"into {raw} or {base} (plain or .gz), {torchvision_hint(download)}")
        raise missing_error("MNIST", [raw / f"{name}[.gz]" for name in missing], how)
    if verify:
        _verify_gz(found.values())
    x_train, y_train = _read_split(found, "train", verify)
    x_test, y_test = _read_split(found, "test", verify)
    return Split(x_train, y_train, x_test, y_test, classes=10)


def _locate(base: Path) -> tuple[dict[str, Path], list[str]]:
    """The path of each IDX file found under ``base`` and the names of those not found."""
    found, missing = {}, []
    for name in (name for images, labels, _ in FILES.values() for name in (images, labels)):
        candidates = [folder / f"{name}{ext}"
                      for folder in (base / "MNIST" / "raw", base) for ext in ("", ".gz")]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            missing.append(name)
        else:
            found[name] = path
    return found, missing


def _verify_gz(paths: Iterable[Path]) -> None:
    """Check the ``.gz`` files among ``paths`` against torchvision's md5 sums."""
    verify_files(((p, MNIST_GZ_MD5[p.name]) for p in paths if p.suffix == ".gz"),
                 f"from {URL} (or pass download=True with torchvision installed)")


def _read_split(found: dict[str, Path], split: str,
                verify: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """Images (n, 1, 28, 28) float32 in [0, 1] and int64 labels of one split, validated."""
    images_name, labels_name, official = FILES[split]
    images = read_idx(found[images_name], IMAGE_MAGIC)
    labels = read_idx(found[labels_name], LABEL_MAGIC).astype(np.int64)
    if images.shape[1:] != (28, 28):
        raise DataCorruptError(f"{found[images_name]}: images must be 28×28, "
                               f"got {images.shape[1:]}")
    if len(labels) != len(images):
        raise DataCorruptError(f"{found[labels_name]} has {len(labels)} labels but "
                               f"{found[images_name]} has {len(images)} images")
    if labels.size and labels.max() > 9:
        raise DataCorruptError(f"{found[labels_name]}: labels must be in [0, 9], "
                               f"got {labels.max()}")
    if verify and len(images) != official:
        raise DataCorruptError(f"{found[images_name]} has {len(images)} images; "
                               f"the official file has {official}")
    if verify is None and len(images) == official:
        _verify_gz((found[images_name], found[labels_name]))
    return images[:, None].astype(np.float32) / np.float32(255), labels


def read_idx(path: Path, magic: int) -> np.ndarray:
    """The uint8 array in the (plain or ``.gz``) IDX file ``path``; its magic must be ``magic``."""
    try:
        with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as f:
            raw = f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise DataCorruptError(f"{path} is not a readable gzip file: {err}") from err
    got = struct.unpack(">I", raw[:4])[0] if len(raw) >= 4 else None
    if got != magic:
        shown = "none (file too short)" if got is None else f"0x{got:08x}"
        kind = "image" if magic == IMAGE_MAGIC else "label"
        raise DataCorruptError(f"{path}: IDX magic number {shown}, expected 0x{magic:08x} "
                               f"(not an MNIST {kind} file)")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataCorruptError(f"{path}: IDX header truncated ({len(raw)} bytes)")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    if len(raw) - header != math.prod(shape):
        raise DataCorruptError(f"{path}: header says {shape} = {math.prod(shape)} bytes of "
                               f"data, the file has {len(raw) - header}")
    return np.frombuffer(raw, np.uint8, offset=header).reshape(shape)
