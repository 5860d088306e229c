"""BERT sequence classifier (avdiukhin2024 Fig. 2b: CoLA with pretrained bert-base-uncased).

:class:`BertClassifier` wraps ``transformers``' ``BertForSequenceClassification`` as a
flat-parameter :class:`~problems.models.torch_module.TorchModel`; its features are
``(input_ids, attention_mask)`` integer arrays padded to ``max_length``. Nothing is fetched
from the hub: the model comes either from a local directory written by ``save_pretrained``
(config, weights and vocabulary; the classification head is initialised afresh when the
checkpoint has none) or from a config dict (randomly initialised, with a tokenizer built
from a vocabulary list, e.g. :func:`char_vocab`). Implementation notes:

* eval mode (dropout off), so per-sample losses are deterministic;
* eager attention, and the padding mask is handed to BERT as a ready 4-D additive mask:
  transformers' own mask construction branches on the mask's values, which ``vmap``
  cannot trace, and the SDPA kernel has no batching rule (it would loop per sample);
* position and token-type ids are passed per sample (BERT's defaults broadcast one row
  over the batch), so that book-keeping (problems/ghost.py) sees every embedding per sample.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from problems.backend import require
from problems.models.torch_module import TorchModel

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def char_vocab() -> list[str]:
    """A data-independent WordPiece vocabulary of single characters (and ``##`` pieces):
    special tokens, lower-case letters, digits and ASCII punctuation."""
    chars = string.ascii_lowercase + string.digits + string.punctuation
    return [*SPECIAL_TOKENS, *chars, *(f"##{c}" for c in chars)]


def init_bert(module: nn.Module, std: float = 0.02) -> None:
    """BERT's init (Devlin et al. 2019; transformers' ``_init_weights``): N(0, std²) linear
    and embedding weights, zero biases and padding row, unit/zero LayerNorm."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding) and m.padding_idx is not None:
            nn.init.zeros_(m.weight[m.padding_idx])
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class BertLogits(nn.Module):
    """``(input_ids, attention_mask) -> logits``, the 0/1 mask passed as an additive 4-D mask."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model: Any = model

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        dtype = self.model.bert.embeddings.word_embeddings.weight.dtype
        additive = (1.0 - attention_mask.to(dtype))[:, None, None, :] * torch.finfo(dtype).min
        positions = torch.arange(input_ids.shape[-1], device=input_ids.device)
        return self.model(input_ids=input_ids, attention_mask=additive,
                          position_ids=positions.expand_as(input_ids).contiguous(),
                          token_type_ids=torch.zeros_like(input_ids)).logits


class BertClassifier(TorchModel):
    """BERT for ``num_labels``-way classification from ``model_dir`` or from ``config``."""

    def __init__(self, model_dir: str | None = None, config: Mapping[str, Any] | None = None,
                 max_length: int = 128, num_labels: int = 2,
                 vocab: Sequence[str] | None = None) -> None:
        transformers = require("transformers", "nlp")
        if (model_dir is None) == (config is None):
            raise ValueError("BertClassifier needs exactly one of model_dir and config")
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2 ([CLS] and [SEP]), got {max_length}")
        model: Any
        if model_dir is not None:
            model, self.tokenizer = _from_dir(transformers, Path(model_dir), num_labels)
            head = model.classifier
            reinit = partial(_init_part, head, model.config.initializer_range)
        else:
            assert config is not None
            if vocab is None:
                raise ValueError("a BertClassifier built from a config needs a vocab list")
            cfg = transformers.BertConfig(**{**config, "num_labels": num_labels,
                                             "attn_implementation": "eager"})
            if cfg.vocab_size < len(vocab):
                raise ValueError(f"config vocab_size {cfg.vocab_size} < {len(vocab)} tokens")
            model = transformers.BertForSequenceClassification(cfg)
            self.tokenizer = transformers.BertTokenizer(
                vocab={tok: i for i, tok in enumerate(vocab)})
            reinit = partial(init_bert, std=cfg.initializer_range)
        if max_length > model.config.max_position_embeddings:
            raise ValueError(f"max_length {max_length} exceeds the model's "
                             f"{model.config.max_position_embeddings} positions")
        self.max_length = max_length
        super().__init__(BertLogits(model), sample_ndim=1, reinit=reinit)

    def encode(self, sentences: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask)``, int64, padded or truncated to ``max_length``."""
        enc = self.tokenizer(list(sentences), padding="max_length", truncation=True,
                             max_length=self.max_length, return_tensors="np")
        return (np.asarray(enc["input_ids"], dtype=np.int64),
                np.asarray(enc["attention_mask"], dtype=np.int64))


def _from_dir(transformers: Any, path: Path, num_labels: int) -> tuple[Any, Any]:
    """Model and tokenizer from a local ``save_pretrained`` directory (never the hub)."""
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no BERT model in {path} (config.json missing); save "
                                "bert-base-uncased there with save_pretrained")
    model = transformers.BertForSequenceClassification.from_pretrained(
        path, num_labels=num_labels, local_files_only=True, attn_implementation="eager")
    tokenizer = transformers.BertTokenizer.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def _init_part(part: nn.Module, std: float, module: nn.Module) -> None:
    """Re-initialise ``part`` only (the new classification head), ignoring ``module``."""
    init_bert(part, std)
