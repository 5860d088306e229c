"""Text classification with BERT as a flat-parameter problem (avdiukhin2024 Fig. 2b: CoLA).

``cola_bert``: CoLA (binary acceptability) read by :mod:`problems.data.cola` from
``data_dir`` (downloaded there only with ``download: true``, which needs ``datasets``; else a
missing file raises its ``DataMissingError``);
"test" is GLUE's dev set, since CoLA's test labels are hidden (notes §5.1). The model is
bert-base-uncased from ``model_dir`` (a local ``save_pretrained`` directory; the paper's
setting, fully fine-tuned, with a fresh classification head) or, with ``model_dir=None``, a
small randomly initialised BERT on a data-independent character vocabulary
(:func:`~problems.models.bert.char_vocab`): a CPU stand-in, not the paper's model.
Sentences are padded or truncated to ``max_length`` word pieces (CoLA's longest is under 64
for bert-base-uncased). Per-sample gradients of BERT-base are 110M floats each: keep
``chunk_size`` small, and prefer algorithms that need only the batch gradient.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import numpy as np
from annotated_types import Ge

from problems.backend import require
from problems.base import DataSize, Problem, register_problem
from problems.data.cola import TextSplit, load_cola
from problems.data.common import Split, local_path
from problems.params import Count, params
from problems.supervised import (
    ClassificationInstance,
    DataParams,
    EncodedSplit,
    classification_instance,
    subsampled,
)

# The stand-ins for model_dir=None (vocab_size and max_position_embeddings are filled in):
# "small" for CPU runs; "base", bert-base-uncased's sizes (Devlin et al. 2019: 12 layers of
# 768, 12 heads, 3,072 hidden, a 30,522-token table), randomly initialised: its cost and
# memory without the checkpoint (the character vocabulary uses the table's first rows).
BERTS: dict[str, dict[str, Any]] = {
    "small": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 128},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072, "vocab_size": 30522},
}


def load_text(data_dir: str | None, download: bool = False) -> TextSplit:
    """CoLA from ``data_dir``: GLUE's train and dev ("test") sentences (``download``: saved
    there first from the Hugging Face Hub when missing)."""
    return load_cola(data_dir, download=download)


def subsampled_text(split: TextSplit, p: DataParams) -> TextSplit:
    """``split`` cut to ``p.n_train``/``p.n_test`` sentences by the same stratified
    :func:`~problems.data.common.subset` as images (applied to the sentence indices)."""
    indices = Split(np.arange(len(split.y_train)), split.y_train,
                    np.arange(len(split.y_test)), split.y_test, split.classes)
    keep = subsampled(indices, p)
    return dataclasses.replace(
        split, train_sentences=[split.train_sentences[i] for i in keep.x_train],
        y_train=keep.y_train, test_sentences=[split.test_sentences[i] for i in keep.x_test],
        y_test=keep.y_test)


@params
class ColaBertParams(DataParams):
    """``model_dir``: local bert-base-uncased saved with ``save_pretrained`` (relative paths
    are read under the data root; None: a random BERT of ``size``, :data:`BERTS`); ``max_length``:
    word pieces per sentence, [CLS] and [SEP] included; ``download``: fetch CoLA into
    ``data_dir`` when missing (not part of the run id, see :data:`bench.spec.UNHASHED`)."""

    model_dir: str | None = None
    size: Literal["small", "base"] = "small"
    max_length: Annotated[int, Ge(2)] = 64
    chunk_size: Count | None = 8
    eval_chunk: Count = 256
    download: bool = False


@register_problem
class ColaBert(Problem):
    """CoLA with a BERT sequence classifier (avdiukhin2024 Fig. 2b)."""

    name = "cola_bert"
    Params = ColaBertParams
    backends = ("torch",)
    description = ("CoLA (local files; test = GLUE dev), BERT classifier: local "
                   "bert-base-uncased from model_dir, or a small random char-vocab BERT when "
                   "model_dir is None; dropout off, cross-entropy; paper Fig. 2b")

    def build(self, seed: int) -> ClassificationInstance:
        p: ColaBertParams = self.params
        require("transformers", "nlp")
        from problems.models.bert import BertClassifier, char_vocab  # lazy: needs the torch extra

        split = subsampled_text(load_text(p.data_dir, p.download), p)
        if p.model_dir is None:
            vocab = char_vocab()
            config = {"vocab_size": len(vocab), **BERTS[p.size],
                      "max_position_embeddings": p.max_length}
            model = BertClassifier(config=config, vocab=vocab, max_length=p.max_length,
                                   num_labels=split.classes)
        else:
            model = BertClassifier(str(local_path(p.model_dir, p.data_dir, "BERT model folder")),
                                   max_length=p.max_length, num_labels=split.classes)
        encoded = EncodedSplit(model.encode(split.train_sentences), split.y_train,
                               model.encode(split.test_sentences), split.y_test, split.classes)
        return classification_instance(self.name, encoded, model, seed, l2=p.l2,
                                       clients=p.client_indices(split.y_train, p.data_seed),
                                       **p.oracle_kw)

    def size(self) -> DataSize | None:
        return self.params.subsample_size()
