"""Data loaders on tiny files written in the real on-disk formats (no network).

CIFAR: pickled dicts with byte-string keys as in the official python archives; MNIST: IDX
files with their magic numbers and big-endian headers, plain and gzipped; CoLA: a saved
DatasetDict, GLUE's TSVs and the CoLA release's TSVs. Downloads are exercised with fake
torchvision / datasets modules.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import pickle
import struct
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from problems.data import (
    DataCorruptError,
    DataMissingError,
    Split,
    data_root,
    load_cifar,
    load_cola,
    load_mnist,
    subset,
)
from problems.data.cifar import CIFAR10_MD5, VARIANTS
from problems.data.common import md5sum
from problems.data.mnist import (
    FASHION_MNIST,
    IMAGE_MAGIC,
    LABEL_MAGIC,
    MNIST_GZ_MD5,
    IdxDataset,
    load_idx,
    locate,
    verify_gz,
)

N = 7  # images per CIFAR batch file


# ---------------------------------------------------------------- CIFAR files


def write_cifar(root: Path, variant: str = "cifar10", seed: int = 0) -> dict[str, Any]:
    """The official folder under ``root`` with N images per data file; returns the contents."""
    spec = VARIANTS[variant]
    folder = root / spec.folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    contents: dict[str, Any] = {}
    for name in (*spec.train, spec.test):
        data = rng.integers(0, 256, size=(N, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, spec.classes, size=N)]
        entry: dict[bytes, Any] = {b"batch_label": name.encode(), b"data": data,
                                   b"filenames": [f"img_{i}.png".encode() for i in range(N)]}
        if variant == "cifar10":
            entry[b"labels"] = labels
        else:
            entry[b"fine_labels"] = labels
            entry[b"coarse_labels"] = [v // 5 for v in labels]
        _dump(folder / name, entry)
        contents[name] = (data, labels)
    if variant == "cifar10":
        meta = {b"num_cases_per_batch": 10000, b"num_vis": 3072,
                b"label_names": [f"class{i}".encode() for i in range(10)]}
        _dump(folder / "batches.meta", meta)
    else:
        _dump(folder / "meta", {b"fine_label_names": [f"f{i}".encode() for i in range(100)],
                                b"coarse_label_names": [f"c{i}".encode() for i in range(20)]})
    return contents


def _dump(path: Path, obj: Any) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)


def test_cifar10_round_trip(tmp_path: Path) -> None:
    contents = write_cifar(tmp_path)
    split = load_cifar(tmp_path)
    assert split.x_train.shape == (5 * N, 3, 32, 32) and split.x_test.shape == (N, 3, 32, 32)
    assert split.x_train.dtype == np.float32 and split.y_train.dtype == np.int64
    assert split.y_test.dtype == np.int64 and split.classes == 10
    assert split.x_train.min() >= 0.0 and split.x_train.max() <= 1.0
    # image 2 of data_batch_3, green channel, row 5, column 17: byte 1024 + 5·32 + 17
    data, labels = contents["data_batch_3"]
    assert split.x_train[2 * N + 2, 1, 5, 17] == np.float32(data[2, 1024 + 5 * 32 + 17]) / 255
    assert split.y_train[2 * N + 2] == labels[2]
    test_data, test_labels = contents["test_batch"]
    np.testing.assert_array_equal(split.x_test * 255, test_data.reshape(N, 3, 32, 32))
    np.testing.assert_array_equal(split.y_test, test_labels)
    train_labels = [v for name in VARIANTS["cifar10"].train for v in contents[name][1]]
    np.testing.assert_array_equal(split.y_train, train_labels)


def test_cifar100_round_trip_with_root_at_the_folder(tmp_path: Path) -> None:
    contents = write_cifar(tmp_path, "cifar100")
    for root in (tmp_path, tmp_path / "cifar-100-python"):
        split = load_cifar(root, variant="cifar100")
        assert split.x_train.shape == (N, 3, 32, 32) and split.classes == 100
        data, labels = contents["train"]
        assert split.x_train[4, 2, 31, 0] == np.float32(data[4, 2048 + 31 * 32]) / 255
        np.testing.assert_array_equal(split.y_train, labels)
        np.testing.assert_array_equal(split.y_test, contents["test"][1])


def test_cifar_missing_files_are_named_with_full_paths_and_url(tmp_path: Path) -> None:
    write_cifar(tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    (folder / "data_batch_4").unlink()
    (folder / "test_batch").unlink()
    with pytest.raises(DataMissingError) as err:
        load_cifar(tmp_path)
    message = str(err.value)
    assert str(folder / "data_batch_4") in message and str(folder / "test_batch") in message
    assert str(folder / "data_batch_1") not in message
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in message
    assert "download=True" in message
    with pytest.raises(DataMissingError, match=r"cifar-100-python\.tar\.gz") as err:
        load_cifar(tmp_path / "empty", variant="cifar100")
    assert str(tmp_path / "empty" / "cifar-100-python" / "train") in str(err.value)


def test_cifar_unknown_variant(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cifar10"):
        load_cifar(tmp_path, variant="cifar20")


def test_cifar_verify_names_the_corrupted_file(tmp_path: Path) -> None:
    write_cifar(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_1"
    actual = hashlib.md5(path.read_bytes()).hexdigest()
    with pytest.raises(DataCorruptError) as err:
        load_cifar(tmp_path, verify=True)
    assert f"{path}: md5 {actual}, expected {CIFAR10_MD5['data_batch_1']}" in str(err.value)


def test_cifar_bad_batch_is_named(tmp_path: Path) -> None:
    write_cifar(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    path.write_bytes(b"not a pickle")
    with pytest.raises(DataCorruptError, match="data_batch_2"):
        load_cifar(tmp_path)
    _dump(path, {b"data": np.zeros((N, 3072), np.uint8), b"labels": [10] * N})
    with pytest.raises(DataCorruptError, match=r"labels must be in \[0, 10\)"):
        load_cifar(tmp_path)


def fake_module(monkeypatch: pytest.MonkeyPatch, **classes: Any) -> None:
    """Install a fake ``torchvision`` whose ``datasets`` has ``classes``."""
    datasets = types.ModuleType("torchvision.datasets")
    for name, cls in classes.items():
        setattr(datasets, name, cls)
    torchvision = types.ModuleType("torchvision")
    torchvision.datasets = datasets  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchvision", torchvision)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", datasets)


def test_cifar_download_uses_torchvision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def cifar100(root: str, download: bool) -> None:
        calls.append((root, download))
        write_cifar(Path(root), "cifar100")

    fake_module(monkeypatch, CIFAR100=cifar100)
    split = load_cifar(tmp_path / "new", variant="cifar100", download=True)
    assert calls == [(str(tmp_path / "new"), True)] and split.classes == 100
    load_cifar(tmp_path / "new", variant="cifar100", download=True)  # present: no download
    assert len(calls) == 1


def test_cifar_download_without_torchvision(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)
    with pytest.raises(DataMissingError, match="torchvision is not installed"):
        load_cifar(tmp_path, download=True)


def test_data_root_from_argument_environment_or_cache(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_cifar(tmp_path / "env")
    monkeypatch.setenv("SADDLEBENCH_DATA", str(tmp_path / "env"))
    assert data_root(None) == tmp_path / "env" and data_root("x") == Path("x")
    assert load_cifar().x_test.shape == (N, 3, 32, 32)
    monkeypatch.delenv("SADDLEBENCH_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_root(None) == tmp_path / "home" / ".cache" / "saddlebench" / "data"


# ---------------------------------------------------------------- MNIST files


def write_idx(path: Path, array: np.ndarray, magic: int) -> None:
    """``array`` (uint8) as an IDX file; gzipped when ``path`` ends in .gz."""
    raw = struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape)
    raw += array.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw) if path.suffix == ".gz" else raw)


def write_mnist(train_dir: Path, test_dir: Path, gz: bool,
                n: tuple[int, int] = (9, 4)) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    ext = ".gz" if gz else ""
    contents = {}
    for (prefix, folder), size in zip((("train", train_dir), ("t10k", test_dir)), n, strict=True):
        images = rng.integers(0, 256, size=(size, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=size).astype(np.uint8)
        write_idx(folder / f"{prefix}-images-idx3-ubyte{ext}", images, IMAGE_MAGIC)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte{ext}", labels, LABEL_MAGIC)
        contents[prefix] = (images, labels)
    return contents


@pytest.mark.parametrize("layout", ["torchvision-plain", "root-gz", "mixed"])
def test_mnist_round_trip(tmp_path: Path, layout: str) -> None:
    raw = tmp_path / "MNIST" / "raw"
    train_dir, test_dir = {"torchvision-plain": (raw, raw), "root-gz": (tmp_path, tmp_path),
                           "mixed": (raw, tmp_path)}[layout]
    contents = write_mnist(train_dir, test_dir, gz=layout != "torchvision-plain")
    split = load_mnist(tmp_path)
    assert split.x_train.shape == (9, 1, 28, 28) and split.x_test.shape == (4, 1, 28, 28)
    assert split.x_train.dtype == np.float32 and split.y_train.dtype == np.int64
    assert split.classes == 10 and split.x_test.min() >= 0.0 and split.x_test.max() <= 1.0
    images, labels = contents["train"]
    assert split.x_train[3, 0, 20, 7] == np.float32(images[3, 20, 7]) / 255
    np.testing.assert_array_equal(split.x_test[:, 0] * 255, contents["t10k"][0])
    np.testing.assert_array_equal(split.y_train, labels)
    np.testing.assert_array_equal(split.y_test, contents["t10k"][1])


def test_a_split_is_read_once_until_its_files_change(tmp_path: Path) -> None:
    """A worker building run after run gets the split it read (read-only, shared) until a
    file's size or mtime changes; then it reads the new files."""
    write_mnist(tmp_path, tmp_path, gz=False)
    first = load_mnist(tmp_path)
    assert load_mnist(tmp_path) is first and not first.x_train.flags.writeable
    write_mnist(tmp_path, tmp_path, gz=False, n=(5, 4))
    assert load_mnist(tmp_path).x_train.shape == (5, 1, 28, 28)


def test_mnist_missing_files_are_named_with_full_paths_and_url(tmp_path: Path) -> None:
    write_mnist(tmp_path, tmp_path, gz=True)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(DataMissingError) as err:
        load_mnist(tmp_path)
    message = str(err.value)
    assert str(tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte") in message
    assert "train-images" not in message
    assert "https://ossci-datasets.s3.amazonaws.com/mnist/" in message
    assert "download=True" in message


def test_mnist_bad_files_get_clear_errors(tmp_path: Path) -> None:
    write_mnist(tmp_path, tmp_path, gz=False)
    labels = tmp_path / "train-labels-idx1-ubyte"
    write_idx(labels, np.zeros((9, 28, 28), np.uint8), IMAGE_MAGIC)
    with pytest.raises(DataCorruptError,
                       match=r"magic number 0x00000803, expected 0x00000801.*label") as err:
        load_mnist(tmp_path)
    assert str(labels) in str(err.value)
    labels.write_bytes(struct.pack(">II", LABEL_MAGIC, 9) + bytes(5))  # 5 of 9 labels
    with pytest.raises(DataCorruptError, match="the file has 5"):
        load_mnist(tmp_path)
    write_idx(labels, np.zeros(8, np.uint8), LABEL_MAGIC)
    with pytest.raises(DataCorruptError, match="has 8 labels"):
        load_mnist(tmp_path)
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((9, 27, 27), np.uint8), IMAGE_MAGIC)
    with pytest.raises(DataCorruptError, match="28×28"):
        load_mnist(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip")
    with pytest.raises(DataCorruptError, match="not a readable gzip file"):
        load_mnist(tmp_path)


def test_mnist_verify_names_the_file(tmp_path: Path) -> None:
    write_mnist(tmp_path, tmp_path, gz=True)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    with pytest.raises(DataCorruptError) as err:
        load_mnist(tmp_path, verify=True)
    assert f"{path}: md5 " in str(err.value)
    assert MNIST_GZ_MD5["train-images-idx3-ubyte.gz"] in str(err.value)
    write_mnist(tmp_path / "plain", tmp_path / "plain", gz=False)
    with pytest.raises(DataCorruptError, match="has 9 images; the official file has 60000"):
        load_mnist(tmp_path / "plain", verify=True)


def test_mnist_download_uses_torchvision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def mnist(root: str, download: bool) -> None:
        raw = Path(root) / "MNIST" / "raw"
        write_mnist(raw, raw, gz=False)

    fake_module(monkeypatch, MNIST=mnist)
    assert load_mnist(tmp_path, download=True).x_train.shape == (9, 1, 28, 28)
    monkeypatch.setitem(sys.modules, "torchvision", None)
    with pytest.raises(DataMissingError, match="torchvision is not installed"):
        load_mnist(tmp_path / "other", download=True)


# ---------------------------------------------------------------- Fashion-MNIST files


def tiny_fashion(tmp_path: Path, folder: Path) -> IdxDataset:
    """Fashion-MNIST's description with its md5 tables replaced by those of tiny files
    written into ``folder`` (a gzipped copy recompressed as Debian's, so its .gz sum
    differs while the decompressed one matches), and ``folder`` as its system folder."""
    write_mnist(folder, folder, gz=True)
    gz = {p.name: md5sum(p) for p in folder.glob("*.gz")}
    raw = {p.stem: hashlib.md5(gzip.decompress(p.read_bytes())).hexdigest()
           for p in folder.glob("*.gz")}
    for path in folder.glob("*.gz"):  # recompressed: same contents, other .gz bytes
        path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), compresslevel=1,
                                       mtime=1))
    return dataclasses.replace(FASHION_MNIST, gz_md5=gz, raw_md5=raw, system=(folder,))


def test_fashion_mnist_is_found_in_the_system_folder_and_accepted_by_its_contents(
        tmp_path: Path) -> None:
    dataset = tiny_fashion(tmp_path, tmp_path / "usr-share-datasets")
    split = load_idx(dataset, tmp_path / "empty-root")
    assert split.x_train.shape == (9, 1, 28, 28) and split.classes == 10
    found, missing = locate(dataset, tmp_path / "empty-root")
    assert not missing and all(p.parent == tmp_path / "usr-share-datasets"
                               for p in found.values())
    assert all(md5sum(p) != dataset.gz_md5[p.name] for p in found.values())
    verify_gz(dataset, found.values())  # recompressed: accepted by the contents' sums


def test_fashion_mnist_with_wrong_contents_is_rejected_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "system"
    dataset = tiny_fashion(tmp_path, folder)
    path = folder / "t10k-labels-idx1-ubyte.gz"
    write_idx(path, np.ones(4, np.uint8), LABEL_MAGIC)
    found, _ = locate(dataset, tmp_path / "empty-root")
    with pytest.raises(DataCorruptError) as err:
        verify_gz(dataset, found.values())
    assert f"{path}: md5 " in str(err.value)
    assert dataset.gz_md5["t10k-labels-idx1-ubyte.gz"] in str(err.value)


def test_fashion_mnist_missing_names_the_paths_and_the_fetch_command(tmp_path: Path) -> None:
    dataset = dataclasses.replace(FASHION_MNIST, system=(tmp_path / "nowhere",))
    with pytest.raises(DataMissingError) as err:
        load_idx(dataset, tmp_path)
    message = str(err.value)
    assert message.startswith("Fashion-MNIST not found")
    assert str(tmp_path / "FashionMNIST" / "raw" / "train-images-idx3-ubyte") in message
    assert "saddlebench data fetch fashion-mnist" in message
    assert "fashion-mnist.s3-website.eu-central-1.amazonaws.com" in message


def test_fashion_mnist_published_sums_are_zalando_s() -> None:
    assert FASHION_MNIST.gz_md5["train-images-idx3-ubyte.gz"] == \
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d"
    assert FASHION_MNIST.raw_md5["t10k-labels-idx1-ubyte"] == "15d484375f8d13e6eb1aabb0c3f46965"
    assert FASHION_MNIST.system == (Path("/usr/share/datasets/fashion-mnist"),)


# ---------------------------------------------------------------- CoLA files

TRAIN_ROWS = [("gj04", 1, "", "Our friends won't buy this analysis, let alone the next one."),
              ("gj04", 0, "*", "They drank the pub."),
              ("bc01", 1, "", 'He said "hi" to the lady.')]
DEV_ROWS = [("gj04", 0, "*", "The more you eat, the less you want, the fatter you get."),
            ("clc95", 1, "", "Bill left.")]


def write_tsv(path: Path, rows: list[tuple[str, int, str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s}\t{y}\t{m}\t{t}\n" for s, y, m, t in rows), encoding="utf-8")


def check_cola(split: Any, train: list[Any], test: list[Any]) -> None:
    assert split.train_sentences == [r[3] for r in train]
    assert split.test_sentences == [r[3] for r in test]
    np.testing.assert_array_equal(split.y_train, [r[1] for r in train])
    np.testing.assert_array_equal(split.y_test, [r[1] for r in test])
    assert split.y_train.dtype == np.int64 and split.y_test.dtype == np.int64
    assert split.classes == 2


def test_cola_glue_tsv(tmp_path: Path) -> None:
    write_tsv(tmp_path / "CoLA" / "train.tsv", TRAIN_ROWS)
    write_tsv(tmp_path / "CoLA" / "dev.tsv", DEV_ROWS)
    check_cola(load_cola(tmp_path), TRAIN_ROWS, DEV_ROWS)


def test_cola_release_tsv_uses_both_dev_sets(tmp_path: Path) -> None:
    raw = tmp_path / "cola_public" / "raw"
    write_tsv(raw / "in_domain_train.tsv", TRAIN_ROWS)
    write_tsv(raw / "in_domain_dev.tsv", DEV_ROWS[:1])
    write_tsv(raw / "out_of_domain_dev.tsv", DEV_ROWS[1:])
    check_cola(load_cola(tmp_path), TRAIN_ROWS, DEV_ROWS)
    write_tsv(tmp_path / "CoLA" / "train.tsv", TRAIN_ROWS[:1])  # GLUE's layout comes first
    write_tsv(tmp_path / "CoLA" / "dev.tsv", DEV_ROWS)
    check_cola(load_cola(tmp_path), TRAIN_ROWS[:1], DEV_ROWS)


def test_cola_bad_tsv_line_is_named(tmp_path: Path) -> None:
    write_tsv(tmp_path / "CoLA" / "train.tsv", TRAIN_ROWS)
    (tmp_path / "CoLA" / "dev.tsv").write_text("gj04\t1\tonly three columns\n", encoding="utf-8")
    with pytest.raises(DataCorruptError, match=r"dev.tsv, line 1: expected 4"):
        load_cola(tmp_path)


def save_glue_cola(path: Path, train: list[Any], dev: list[Any]) -> None:
    """A DatasetDict shaped like GLUE's CoLA on the Hub (test labels are -1)."""
    datasets = pytest.importorskip("datasets")
    make_dataset_dict(datasets, train, dev).save_to_disk(str(path))


def make_dataset_dict(datasets: Any, train: list[Any], dev: list[Any]) -> Any:
    features = datasets.Features({
        "sentence": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["unacceptable", "acceptable"]),
        "idx": datasets.Value("int32"),
    })

    def part(rows: list[Any], test: bool = False) -> Any:
        return datasets.Dataset.from_dict(
            {"sentence": [r[3] for r in rows], "label": [-1 if test else r[1] for r in rows],
             "idx": list(range(len(rows)))}, features=features)

    return datasets.DatasetDict({"train": part(train), "validation": part(dev),
                                 "test": part(dev, test=True)})


@pytest.mark.parametrize("sub", ["cola", "."])
def test_cola_saved_dataset_dict_comes_first(tmp_path: Path, sub: str) -> None:
    save_glue_cola(tmp_path / sub, TRAIN_ROWS, DEV_ROWS)
    write_tsv(tmp_path / "CoLA" / "train.tsv", TRAIN_ROWS[:1])
    write_tsv(tmp_path / "CoLA" / "dev.tsv", DEV_ROWS[:1])
    check_cola(load_cola(tmp_path), TRAIN_ROWS, DEV_ROWS)


def test_cola_saved_dataset_without_datasets_says_which_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_glue_cola(tmp_path / "cola", TRAIN_ROWS, DEV_ROWS)
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'saddlebench\[nlp\]'"):
        load_cola(tmp_path)


def test_cola_missing_lists_every_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataMissingError) as err:
        load_cola(tmp_path)
    message = str(err.value)
    for path in (tmp_path / "cola" / "dataset_dict.json", tmp_path / "CoLA" / "train.tsv",
                 tmp_path / "CoLA" / "dev.tsv",
                 tmp_path / "cola_public" / "raw" / "in_domain_train.tsv",
                 tmp_path / "cola_public" / "raw" / "in_domain_dev.tsv",
                 tmp_path / "cola_public" / "raw" / "out_of_domain_dev.tsv"):
        assert str(path) in message
    assert "https://dl.fbaipublicfiles.com/glue/data/CoLA.zip" in message
    assert "https://nyu-mll.github.io/CoLA/cola_public_1.1.zip" in message
    assert "pip install 'saddlebench[nlp]'" in message and "download=True" in message
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DataMissingError, match="datasets is not installed"):
        load_cola(tmp_path, download=True)


def test_cola_download_saves_to_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    calls = []

    def load_dataset(path: str, name: str) -> Any:
        calls.append((path, name))
        return make_dataset_dict(datasets, TRAIN_ROWS, DEV_ROWS)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    check_cola(load_cola(tmp_path, download=True), TRAIN_ROWS, DEV_ROWS)
    assert calls == [("nyu-mll/glue", "cola")]
    assert (tmp_path / "cola" / "dataset_dict.json").is_file()
    check_cola(load_cola(tmp_path, download=True), TRAIN_ROWS, DEV_ROWS)
    assert len(calls) == 1


# ---------------------------------------------------------------- subset


def labelled_split() -> Split:
    """Features encode the example's index, so rows can be matched with labels."""
    y_train = np.repeat(np.arange(3), [60, 30, 10]).astype(np.int64)
    y_test = np.repeat(np.arange(3), [5, 3, 2]).astype(np.int64)
    return Split(np.arange(100, dtype=np.float32)[:, None].repeat(2, 1), y_train,
                 np.arange(10, dtype=np.float32)[:, None], y_test, classes=3)


def test_subset_is_stratified_deterministic_and_keeps_input() -> None:
    split = labelled_split()
    before = {f.name: np.copy(getattr(split, f.name)) for f in dataclasses.fields(split)
              if f.name != "classes"}
    a, b = subset(split, 50, 5, seed=3), subset(split, 50, 5, seed=3)
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(split, name), value)
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert getattr(a, name).dtype == value.dtype
    assert np.bincount(a.y_train).tolist() == [30, 15, 5]
    counts = np.bincount(a.y_test, minlength=3)
    assert counts.tolist() in ([3, 1, 1], [2, 2, 1])  # quotas 2.5, 1.5, 1: a tie for the 5th
    rows = a.x_train[:, 0].astype(int)
    assert np.all(np.diff(rows) > 0)  # original order, no repeats
    np.testing.assert_array_equal(a.y_train, split.y_train[rows])
    np.testing.assert_array_equal(a.x_train, split.x_train[rows])
    assert a.classes == 3
    c = subset(split, 50, 5, seed=4)
    assert not np.array_equal(a.x_train, c.x_train)


def test_subset_none_keeps_all_and_rejects_bad_sizes() -> None:
    split = labelled_split()
    full = subset(split, None, 4, seed=0)
    np.testing.assert_array_equal(full.x_train, split.x_train)
    assert len(full.y_test) == 4
    with pytest.raises(ValueError, match=r"n_train must be in \[0, 100\]"):
        subset(split, 101, None, seed=0)
    with pytest.raises(ValueError, match="n_test"):
        subset(split, None, -1, seed=0)
