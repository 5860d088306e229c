"""MNIST and Fashion-MNIST from their four IDX files, in torchvision's layout, on their own,
or (Fashion-MNIST) where Debian's ``dataset-fashion-mnist`` installs them.

``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
``t10k-labels-idx1-ubyte``, each plain or gzipped (``.gz``), in ``<root>/MNIST/raw/``
(where torchvision puts them) or in ``<root>/``. An IDX file is a big-endian uint32 magic
number ``0x0000TTNN`` (``TT = 0x08``: unsigned bytes; ``NN``: the number of dimensions),
``NN`` big-endian uint32 sizes, then the data in row-major order.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import math
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from problems.data.common import (
    DataCorruptError,
    PathArg,
    Split,
    data_root,
    md5sum,
    missing_error,
    torchvision_download,
    torchvision_hint,
    verify_default,
    verify_files,
)

IMAGE_MAGIC, LABEL_MAGIC = 0x00000803, 0x00000801
# (images, labels, number of examples in the official files) per split
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60_000),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10_000),
}


@dataclass(frozen=True)
class IdxDataset:
    """A data set in MNIST's four IDX files: its ``name`` as tables print it, the
    torchvision class that downloads it (and writes ``<root>/<torchvision>/raw/``), where
    to get it, the publisher's md5 sums of the ``.gz`` files, the md5 sums of the
    decompressed files (they identify a recompressed copy, such as Debian's), the folders
    a system package installs it into (searched after the data root) and the command that
    fetches it."""

    name: str
    torchvision: str
    url: str
    gz_md5: Mapping[str, str]
    raw_md5: Mapping[str, str] = field(default_factory=dict)
    system: tuple[Path, ...] = ()
    fetch: str = ""


# md5 sums of the .gz files, from torchvision/datasets/mnist.py (pytorch/vision:
# MNIST.resources). torchvision publishes none for the extracted files, so verify=True
# checks their example counts instead, and the default check covers .gz files only.
MNIST = IdxDataset(
    "MNIST", "MNIST", "https://ossci-datasets.s3.amazonaws.com/mnist/ (or "
    "http://yann.lecun.com/exdb/mnist/)", {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"})
MNIST_GZ_MD5 = MNIST.gz_md5
# Zalando's md5 sums of the .gz files (zalandoresearch/fashion-mnist README, the same in
# torchvision's FashionMNIST.resources) and of the decompressed files (torchvision's former
# raw_data list): Debian's dataset-fashion-mnist recompresses the files, so their .gz sums
# differ while their contents are Zalando's.
FASHION_MNIST = IdxDataset(
    "Fashion-MNIST", "FashionMNIST", "http://fashion-mnist.s3-website.eu-central-1."
    "amazonaws.com/", {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310"}, {
        "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
        "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
        "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
        "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965"},
    system=(Path("/usr/share/datasets/fashion-mnist"),),
    fetch="saddlebench data fetch fashion-mnist")


def load_mnist(root: PathArg | None = None, verify: bool | None = None,
               download: bool = False) -> Split:
    """MNIST as float32 (n, 1, 28, 28) images in [0, 1] and int64 labels, 10 classes
    (:func:`load_idx`)."""
    return load_idx(MNIST, root, verify, download)


def load_fashion_mnist(root: PathArg | None = None, verify: bool | None = None,
                       download: bool = False) -> Split:
    """Fashion-MNIST (Zalando's 28×28 grey article images, MNIST's format) as float32
    (n, 1, 28, 28) images in [0, 1] and int64 labels, 10 classes (:func:`load_idx`); found
    without configuration where Debian's ``dataset-fashion-mnist`` installs it."""
    return load_idx(FASHION_MNIST, root, verify, download)


def load_idx(dataset: IdxDataset, root: PathArg | None = None, verify: bool | None = None,
             download: bool = False) -> Split:
    """``dataset`` from its IDX files under the data root (or a system folder).

    ``verify=True`` checks ``.gz`` files against the publisher's md5 sums (or, for a
    recompressed copy, their contents against the decompressed sums) and every file's
    example count against the official one; None (default) checks the ``.gz`` files of a
    split with the official example count (see :mod:`problems.data.common`); False nothing.
    ``download=True`` fetches missing files with torchvision (installed separately).
    """
    verify = verify_default(verify)
    base = data_root(root)
    found, missing = locate(dataset, base)
    if missing and download and torchvision_download(dataset.torchvision, base):
        found, missing = locate(dataset, base)
    if missing:
        raw = base / dataset.torchvision / "raw"
        how = (f"Download {', '.join(f'{name}.gz' for name in missing)} from {dataset.url} "
               f"into {raw} or {base} (plain or .gz), "
               + (f"run `{dataset.fetch}`, " if dataset.fetch else "")
               + torchvision_hint(download))
        raise missing_error(dataset.name, [raw / f"{name}[.gz]" for name in missing], how)
    stats = {name: path.stat() for name, path in found.items()}
    key = (dataset.name, verify, *sorted((name, str(found[name]), st.st_mtime_ns, st.st_size)
                                         for name, st in stats.items()))
    if key not in _LOADED:
        if verify:
            verify_gz(dataset, found.values())
        x_train, y_train = _read_split(dataset, found, "train", verify)
        x_test, y_test = _read_split(dataset, found, "test", verify)
        for array in (x_train, y_train, x_test, y_test):
            array.setflags(write=False)  # shared by every later load of the same files
        _LOADED.clear()  # one data set at a time: 220 MB of float32 images
        _LOADED[key] = Split(x_train, y_train, x_test, y_test, classes=10)
    return _LOADED[key]


#: the last split :func:`load_idx` read, by the files it read (path, mtime, size): a worker
#: builds one run after another on the same images (a reload was 0.5–0.8 s of a 1–10 s run)
_LOADED: dict[tuple[object, ...], Split] = {}


def locate(dataset: IdxDataset, base: Path) -> tuple[dict[str, Path], list[str]]:
    """The path of each IDX file of ``dataset`` found under ``base`` (torchvision's folder,
    then ``base`` itself) or in a system folder, and the names of those not found."""
    folders = (base / dataset.torchvision / "raw", base, *dataset.system)
    found, missing = {}, []
    for name in (name for images, labels, _ in FILES.values() for name in (images, labels)):
        candidates = [folder / f"{name}{ext}" for folder in folders for ext in ("", ".gz")]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            missing.append(name)
        else:
            found[name] = path
    return found, missing


def verify_gz(dataset: IdxDataset, paths: Iterable[Path]) -> None:
    """Check the ``.gz`` files among ``paths`` against the publisher's md5 sums; a file
    whose sum differs passes when its decompressed contents have the published sum."""
    bad = [p for p in paths if p.suffix == ".gz" and not _genuine(dataset, p)]
    verify_files(((p, dataset.gz_md5[p.name]) for p in bad),
                 f"from {dataset.url} (or pass download=True with torchvision installed)")


def _genuine(dataset: IdxDataset, path: Path) -> bool:
    """Whether the ``.gz`` file ``path`` is the publisher's, or a recompressed copy of it."""
    if md5sum(path) == dataset.gz_md5[path.name]:
        return True
    raw = dataset.raw_md5.get(path.stem)
    return raw is not None and _decompressed_md5(path, path.stat().st_mtime_ns) == raw


@functools.lru_cache(maxsize=16)
def _decompressed_md5(path: Path, mtime_ns: int) -> str:
    """The md5 of the decompressed contents of ``path`` (cached per file version)."""
    digest = hashlib.md5(usedforsecurity=False)
    try:
        with gzip.open(path) as f:
            while block := f.read(1 << 20):
                digest.update(block)
    except (gzip.BadGzipFile, EOFError, zlib.error):
        return ""
    return digest.hexdigest()


def _read_split(dataset: IdxDataset, found: dict[str, Path], split: str,
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
        verify_gz(dataset, (found[images_name], found[labels_name]))
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
