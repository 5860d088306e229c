"""What every data loader shares: the data root, the split types, errors, md5 checks, subsets.

Loaders read the formats users already have on disk (torchvision's and Hugging Face's
layouts, the official archives); they download only when asked (``download=True``) and
otherwise fail with a :class:`DataMissingError` that names every file, where it goes and
where to get it.

Checksums (the md5 sums torchvision publishes for the official files) are checked by
``verify``: True checks every file that has one; False none; None (the default) checks a
file that claims to be the official one, i.e. holds the official number of examples, so a
corrupted download fails while small files in the same format (tests, subsets) load.
``SADDLEBENCH_VERIFY_DATA=0`` turns the default check off.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ENV_VAR = "SADDLEBENCH_DATA"
VERIFY_VAR = "SADDLEBENCH_VERIFY_DATA"
DEFAULT_ROOT = Path("~/.cache/saddlebench/data")

PathArg = str | os.PathLike[str]


@dataclass(frozen=True)
class Split:
    """A labelled train/test split; features are float, labels int."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int


class DataMissingError(FileNotFoundError):
    """A data set is not on disk; the message names the files, where they go, how to get them."""


class DataCorruptError(ValueError):
    """A data file is on disk but is not what it should be (md5, header, shape or labels)."""


def data_root(root: PathArg | None) -> Path:
    """``root``, else ``$SADDLEBENCH_DATA``, else ``~/.cache/saddlebench/data``."""
    if root is None:
        root = os.environ.get(ENV_VAR) or DEFAULT_ROOT
    return Path(root).expanduser()


def local_path(path: str, data_dir: PathArg | None, what: str) -> Path:
    """A user-given file or folder: ``~`` expanded, relative paths under the data root;
    a clear :class:`DataMissingError` when it is not there."""
    resolved = Path(path).expanduser()
    if not resolved.is_absolute():
        resolved = data_root(data_dir) / resolved
    if not resolved.exists():
        raise DataMissingError(f"{what} not found: {resolved} (relative paths are read under "
                               f"the data root {data_root(data_dir)}; set data_dir or "
                               "$SADDLEBENCH_DATA, or give an absolute path)")
    return resolved


def missing_error(dataset: str, expected: Iterable[Path], how: str) -> DataMissingError:
    """The error for ``dataset`` with the full ``expected`` paths and ``how`` to get them."""
    files = "\n".join(f"  {p}" for p in expected)
    return DataMissingError(f"{dataset} not found. Missing files:\n{files}\n{how}")


def torchvision_download(name: str, root: Path) -> bool:
    """Fetch into ``root`` with ``torchvision.datasets.<name>``; False without torchvision."""
    try:
        from torchvision import datasets
    except ImportError:
        return False
    root.mkdir(parents=True, exist_ok=True)
    getattr(datasets, name)(str(root), download=True)
    return True


def torchvision_hint(download: bool) -> str:
    """How to let torchvision fetch the files (and why ``download=True`` could not)."""
    hint = "or install torchvision (pip install torchvision) and pass download=True"
    return hint + (" (download=True was given, but torchvision is not installed)."
                   if download else ".")

def md5sum(path: Path, chunk: int = 1 << 20) -> str:
    """The hex md5 digest of the file at ``path``."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_default(verify: bool | None) -> bool | None:
    """``verify``, with None (check files claiming to be official) turned off by
    ``SADDLEBENCH_VERIFY_DATA=0``."""
    if verify is None and os.environ.get(VERIFY_VAR, "").lower() in ("0", "false", "no", "off"):
        return False
    return verify


def verify_files(paths_with_md5: Iterable[tuple[Path, str]], how: str = "") -> None:
    """Raise :class:`DataCorruptError` naming every file whose md5 is not the expected one
    (the first in the first line) and ``how`` to get the files again."""
    bad = [(p, md5, actual) for p, md5 in paths_with_md5 if (actual := md5sum(p)) != md5]
    if bad:
        lines = "\n".join(f"  {p}: md5 {actual}, expected {md5}" for p, md5, actual in bad)
        raise DataCorruptError(
            f"{bad[0][0]} is corrupted or not the official file (md5 {bad[0][2]}, expected "
            f"{bad[0][1]}; {len(bad)} file(s) in all): delete it and download it again"
            f"{' ' + how if how else ''}; verify=False or {VERIFY_VAR}=0 skips this check "
            f"for files changed on purpose\n{lines}"
        )


def subset(split: Split, n_train: int | None, n_test: int | None, seed: int) -> Split:
    """A seeded, class-stratified subset of ``n_train`` / ``n_test`` examples (None: all).

    Each class keeps its share of the examples (largest remainders, ties broken at random);
    examples within a class are drawn at random; the kept examples stay in their original
    order and dtypes. ``split`` is not modified.
    """
    rng_train, rng_test = np.random.default_rng(seed).spawn(2)
    keep_train = _stratified(split.y_train, n_train, rng_train, "n_train")
    keep_test = _stratified(split.y_test, n_test, rng_test, "n_test")
    return dataclasses.replace(
        split,
        x_train=split.x_train[keep_train], y_train=split.y_train[keep_train],
        x_test=split.x_test[keep_test], y_test=split.y_test[keep_test],
    )


def _stratified(y: np.ndarray, n: int | None, rng: np.random.Generator,
                name: str) -> slice | np.ndarray:
    """Sorted indices of a stratified sample of ``n`` labels from ``y`` (a full slice for None)."""
    if n is None:
        return slice(None)
    if not 0 <= n <= len(y):
        raise ValueError(f"{name} must be in [0, {len(y)}], got {n}")
    labels, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    quota = n * counts / len(y)
    take = np.floor(quota).astype(np.int64)
    order = rng.permutation(len(labels))  # random tie-break among equal remainders
    order = order[np.argsort(-(quota - take)[order], kind="stable")]
    take[order[: n - take.sum()]] += 1
    chosen = [rng.choice(np.flatnonzero(inverse == k), size=t, replace=False)
              for k, t in enumerate(take)]
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, np.int64)

