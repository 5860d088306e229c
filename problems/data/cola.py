"""CoLA (Corpus of Linguistic Acceptability): sentences labelled 1 (acceptable) or 0.

GLUE's CoLA test labels are hidden (the Hugging Face "test" split has label −1), so, as in
the papers, the "test" split here is GLUE's dev/validation set (1,043 sentences: the
in-domain and the out-of-domain dev sets) and "train" is GLUE's train set (8,551).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from problems.data.common import DataCorruptError, DataMissingError, PathArg, data_root

GLUE_URL = "https://dl.fbaipublicfiles.com/glue/data/CoLA.zip"
COLA_URL = "https://nyu-mll.github.io/CoLA/cola_public_1.1.zip"
GLUE_HUB = "nyu-mll/glue"  # GLUE on the Hugging Face Hub (formerly "glue")
NLP_EXTRA = "pip install 'saddlebench[nlp]'"


@dataclass(frozen=True)
class TextSplit:
    """A labelled train/test split of sentences; labels int64."""

    train_sentences: list[str]
    y_train: np.ndarray
    test_sentences: list[str]
    y_test: np.ndarray
    classes: int = 2


def load_cola(root: PathArg | None = None, download: bool = False) -> TextSplit:
    """CoLA train and dev ("test") sentences from the first layout found under ``root``.

    (a) a ``datasets`` DatasetDict saved with ``save_to_disk`` at ``<root>/cola`` or
    ``<root>`` (splits "train" and "validation", columns "sentence" and "label");
    (b) GLUE's ``<root>/CoLA/{train,dev}.tsv``; (c) the CoLA release's
    ``<root>/cola_public/raw/{in_domain_train,in_domain_dev,out_of_domain_dev}.tsv``.
    TSVs have four tab-separated columns and no header: source, label, original mark,
    sentence. With none found, ``download=True`` saves GLUE's CoLA from the Hugging Face
    Hub as (a) at ``<root>/cola`` (needs ``datasets``).
    """
    base = data_root(root)
    for folder in (base / "cola", base):
        if (folder / "dataset_dict.json").is_file():
            return _from_saved(folder)
    for train, test in _tsv_layouts(base):
        if all(p.is_file() for p in (*train, *test)):
            return TextSplit(*_read_tsvs(train), *_read_tsvs(test))
    if download and (datasets := _datasets()) is not None:
        datasets.load_dataset(GLUE_HUB, "cola").save_to_disk(str(base / "cola"))
        return _from_saved(base / "cola")
    raise _missing(base, download)


def _tsv_layouts(base: Path) -> list[tuple[list[Path], list[Path]]]:
    """(train files, test files) of GLUE's layout and of the CoLA release's."""
    glue, raw = base / "CoLA", base / "cola_public" / "raw"
    return [
        ([glue / "train.tsv"], [glue / "dev.tsv"]),
        ([raw / "in_domain_train.tsv"], [raw / "in_domain_dev.tsv", raw / "out_of_domain_dev.tsv"]),
    ]


def cola_files(base: Path) -> tuple[list[Path], list[Path]]:
    """(found, missing) files of the first complete CoLA layout under ``base`` (missing:
    GLUE's layout, where none is complete)."""
    for folder in (base / "cola", base):
        if (folder / "dataset_dict.json").is_file():
            return [folder / "dataset_dict.json"], []
    layouts = _tsv_layouts(base)
    for train, test in layouts:
        if all(p.is_file() for p in (*train, *test)):
            return [*train, *test], []
    train, test = layouts[0]
    return [], [p for p in (*train, *test) if not p.is_file()]


def _missing(base: Path, download: bool) -> DataMissingError:
    glue, release = (", ".join(str(p) for p in (*train, *test))
                     for train, test in _tsv_layouts(base))
    note = " (download=True was given, but datasets is not installed)" if download else ""
    return DataMissingError(
        f"CoLA not found. Put one of these layouts under {base}:\n"
        f"  (a) a datasets DatasetDict saved with save_to_disk (splits train and validation): "
        f"{base / 'cola' / 'dataset_dict.json'} or {base / 'dataset_dict.json'}\n"
        f"  (b) GLUE's CoLA ({GLUE_URL}, extracted into {base}): {glue}\n"
        f"  (c) the CoLA release ({COLA_URL}, extracted into {base}): {release}\n"
        f"or install datasets ({NLP_EXTRA}) and pass download=True{note}."
    )


def _datasets() -> Any:
    """The ``datasets`` module, or None where it is not installed."""
    try:
        import datasets
    except ImportError:
        return None
    return datasets


def _from_saved(folder: Path) -> TextSplit:
    """Train and validation splits of the DatasetDict saved at ``folder``."""
    datasets = _datasets()
    if datasets is None:
        raise ModuleNotFoundError(
            f"{folder} holds a saved Hugging Face dataset; reading it needs datasets: {NLP_EXTRA}"
        )
    saved = datasets.load_from_disk(str(folder))
    parts = []
    for name in ("train", "validation"):
        if name not in saved or not {"sentence", "label"} <= set(saved[name].column_names):
            raise DataCorruptError(f"{folder}: need splits train and validation with columns "
                                   f"sentence and label, got {saved}")
        labels = np.asarray(list(saved[name]["label"]), np.int64)
        if not np.isin(labels, (0, 1)).all():
            raise DataCorruptError(f"{folder} [{name}]: labels must be 0 or 1 (GLUE's test "
                                   f"split has -1), got {np.unique(labels)}")
        parts.append((list(saved[name]["sentence"]), labels))
    (train_sentences, y_train), (test_sentences, y_test) = parts
    return TextSplit(train_sentences, y_train, test_sentences, y_test)


def _read_tsvs(paths: list[Path]) -> tuple[list[str], np.ndarray]:
    """Sentences and int64 labels of the CoLA TSV files ``paths``, concatenated."""
    sentences: list[str] = []
    labels: list[int] = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 4 or fields[1] not in ("0", "1"):
                raise DataCorruptError(
                    f"{path}, line {number}: expected 4 tab-separated columns (source, label 0 "
                    f"or 1, original mark, sentence), got {line!r}"
                )
            labels.append(int(fields[1]))
            sentences.append(fields[3])
    return sentences, np.asarray(labels, np.int64)

