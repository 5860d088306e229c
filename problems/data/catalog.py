"""Every data set a problem can use, where it is, whether it is genuine, and how to get it
(``saddlebench data``; ``saddlebench data fetch NAME``), and the pre-flight that names a
missing data set before any run starts.

A data set's problems are the registered problems that read it: image problems by their
``variant`` (:mod:`problems.vision`), the digits and CoLA problems by name prefix.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from problems.data.cifar import VARIANTS, cifar_files, verify_cifar
from problems.data.cola import cola_files
from problems.data.common import DataCorruptError, PathArg, data_root, torchvision_download
from problems.data.mnist import FASHION_MNIST, MNIST, IdxDataset, locate, verify_gz

Files = tuple[list[Path], list[Path]]  # (found, missing)


@dataclass(frozen=True)
class DataSet:
    """A data set: its ``key`` (``saddlebench data fetch KEY``), printed ``name``, how its
    problems are recognised (``variant`` or name ``prefix``), its files under a data root,
    its checksum check (raises :class:`DataCorruptError`; None: none published) and how
    to get it."""

    key: str
    name: str
    files: Callable[[Path], Files]
    verify: Callable[[Iterable[Path]], None] | None
    how: str
    variant: str = ""
    prefix: str = ""
    apt: str = ""  # Debian's package that installs it
    torchvision: str = ""  # torchvision.datasets class that downloads it


@dataclass(frozen=True)
class DataStatus:
    """What ``saddlebench data`` prints for one data set."""

    key: str
    name: str
    problems: tuple[str, ...]
    found: bool
    where: str
    checksums: str
    size: int
    how: str


def _idx(dataset: IdxDataset) -> Callable[[Path], Files]:
    def files(base: Path) -> Files:
        found, missing = locate(dataset, base)
        return list(found.values()), [base / dataset.torchvision / "raw" / m for m in missing]
    return files


def _embedded(_: Path) -> Files:
    return [], []


DATASETS = (
    DataSet("digits", "digits (scikit-learn, 8×8)", _embedded, None,
            "embedded in scikit-learn: nothing to fetch", prefix="digits_"),
    DataSet("mnist", "MNIST", _idx(MNIST), functools.partial(verify_gz, MNIST),
            "`pip install torchvision` and `saddlebench data fetch mnist`, or the four .gz "
            f"files from {MNIST.url} into the data root", variant="mnist", torchvision="MNIST"),
    DataSet("fashion-mnist", "Fashion-MNIST", _idx(FASHION_MNIST),
            functools.partial(verify_gz, FASHION_MNIST),
            "`sudo apt-get install dataset-fashion-mnist` (Debian, Ubuntu), or `pip install "
            "torchvision` and `saddlebench data fetch fashion-mnist`, or the four .gz files "
            f"from {FASHION_MNIST.url} into the data root",
            variant="fashion_mnist", apt="dataset-fashion-mnist", torchvision="FashionMNIST"),
    *(DataSet(key, spec.name, functools.partial(cifar_files, variant=key),
              functools.partial(verify_cifar, key),
              f"`pip install torchvision` and `saddlebench data fetch {key}`, or {spec.url} "
              "extracted into the data root", variant=key, torchvision=spec.torchvision)
      for key, spec in VARIANTS.items()),
    DataSet("cola", "CoLA", cola_files, None,
            "GLUE's CoLA.zip or the CoLA release extracted into the data root, or "
            "`pip install 'saddlebench[nlp]'` and download: true", prefix="cola_"),
)


def dataset(key: str) -> DataSet:
    """The data set ``key`` (a clear error naming the known keys)."""
    for d in DATASETS:
        if d.key == key:
            return d
    raise KeyError(f"unknown data set {key!r}; known: {', '.join(d.key for d in DATASETS)}")


def problems_of(d: DataSet) -> tuple[str, ...]:
    """The registered problems that read data set ``d``."""
    from problems.base import PROBLEMS

    return tuple(sorted(name for name, cls in PROBLEMS.items()
                        if (d.variant and getattr(cls, "variant", "") == d.variant)
                        or (d.prefix and name.startswith(d.prefix))))


def dataset_of(problem: type) -> DataSet | None:
    """The data set a problem class reads (None: generated or closed-form data)."""
    name, variant = getattr(problem, "name", ""), getattr(problem, "variant", "")
    return next((d for d in DATASETS if (d.variant and d.variant == variant)
                 or (d.prefix and name.startswith(d.prefix))), None)


def status(d: DataSet, root: PathArg | None = None, check: bool = True) -> DataStatus:
    """Where ``d`` is under the data root, whether its checksums match (``check``), and
    its size on disk."""
    found, missing = d.files(data_root(root))
    if d.files is _embedded:
        return DataStatus(d.key, d.name, problems_of(d), True, "scikit-learn", "embedded", 0,
                          d.how)
    if missing:
        return DataStatus(d.key, d.name, problems_of(d), False, f"missing: {missing[0]}"
                          + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""),
                          "–", 0, d.how)
    checksums = "none published"
    if d.verify is not None and check:
        try:
            d.verify(found)
            checksums = "match"
        except DataCorruptError as err:
            checksums = f"MISMATCH: {str(err).splitlines()[0]}"
    where = ", ".join(sorted({str(p.parent) for p in found}))
    return DataStatus(d.key, d.name, problems_of(d), True, where, checksums,
                      sum(p.stat().st_size for p in found), d.how)


def missing_data(problems: Iterable[tuple[type, PathArg | None]]) -> list[str]:
    """One line per data set the given (problem class, data_dir) pairs need and do not
    find: its name, where it was looked for and the command that gets it."""
    out = []
    for cls, root in dict.fromkeys(problems):
        d = dataset_of(cls)
        if d is None:
            continue
        state = status(d, root, check=False)
        if not state.found:
            out.append(f"{d.name} ({getattr(cls, 'name', cls)}): {state.where}; get it with "
                       f"`saddlebench data fetch {d.key}`" if d.torchvision or d.apt
                       else f"{d.name}: {state.where}; {d.how}")
    return list(dict.fromkeys(out))


def fetch(d: DataSet, root: PathArg | None = None) -> str:
    """Get ``d``: Debian's package where apt-get and root (or password-less sudo) are
    there, else torchvision's download into the data root; the line that says what was
    done. Raises :class:`RuntimeError` with the one line that says what to do instead."""
    before = status(d, root, check=False)
    if before.found:
        return f"{d.name}: already there ({before.where})"
    if d.apt and (sudo := _root_command()) is not None:
        install = [*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends", d.apt]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(install, env=env, check=False).returncode != 0:
            subprocess.run([*sudo, "apt-get", "update", "-qq"], env=env, check=False)
            subprocess.run(install, env=env, check=False)
        after = status(d, root, check=False)
        if after.found:
            return f"{d.name}: installed Debian's {d.apt} ({after.where})"
    if d.torchvision and torchvision_download(d.torchvision, data_root(root)):
        return f"{d.name}: downloaded with torchvision into {data_root(root)}"
    raise RuntimeError(f"cannot fetch {d.name} here"
                       + (f" (no apt-get with root for {d.apt}, " if d.apt else " (")
                       + f"no torchvision): get it by {d.how}")


def _root_command() -> list[str] | None:
    """[] as root, ["sudo", "-n"] where password-less sudo works, None where apt-get or
    both are missing."""
    if shutil.which("apt-get") is None:
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True,
                                               check=False).returncode == 0:
        return ["sudo", "-n"]
    return None
