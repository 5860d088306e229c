"""Supervised classification problems: a data split × a flat-parameter model.

The training loss is the mean softmax cross-entropy (plus an optional ½·l2·‖x‖²) over the
training split; test loss and accuracy are measured on the held-out split. These problems
run on torch and jax (autodiff); there is no closed form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from problems.backend import Backend
from problems.base import Instance, Problem, register_problem
from problems.data.digits import Split, load_digits_split
from problems.models.mlp import MLP, cross_entropy, layer_sizes
from problems.oracles import BatchLoss, Oracle, autodiff_oracle


@dataclass
class ClassificationInstance(Instance):
    """A :class:`Split` and an :class:`MLP`-like model with ``logits(xp, x, features)``."""

    split: Split | None = None
    model: MLP | None = None
    l2: float = 0.0
    _test: dict[int, tuple[Oracle, Any]] = field(default_factory=dict, repr=False)

    def _onehot(self, y: np.ndarray) -> np.ndarray:
        assert self.split is not None
        return np.eye(self.split.classes)[y]

    def losses_fn(self, backend: Backend) -> BatchLoss:
        xp, model, l2 = backend.xp, self.model, self.l2
        assert model is not None

        def losses(x: Any, features: Any, onehot: Any) -> Any:
            loss = cross_entropy(xp, model.logits(xp, x, features), onehot)
            return loss + 0.5 * l2 * xp.sum(x * x) if l2 else loss

        return losses

    def oracle(self, backend: Backend) -> Oracle:
        assert self.split is not None
        s = self.split
        return autodiff_oracle(backend, self.losses_fn(backend),
                               (s.x_train, self._onehot(s.y_train)), x0=self.x0,
                               clients=self.clients)

    def evaluate_test(self, backend: Backend, x: Any) -> dict[str, float]:
        assert self.split is not None and self.model is not None
        s = self.split
        key = id(backend)
        if key not in self._test:
            self._test[key] = (
                autodiff_oracle(backend, self.losses_fn(backend),
                                (s.x_test, self._onehot(s.y_test)), x0=self.x0),
                backend.asarray(s.x_test),
            )
        oracle, features = self._test[key]
        logits = backend.to_numpy(self.model.logits(backend.xp, x, features))
        return {
            "test_loss": float(backend.to_numpy(oracle.loss(x))),
            "test_acc": float(np.mean(np.argmax(logits, axis=1) == s.y_test)),
        }


@dataclass(frozen=True)
class DigitsMLPParams:
    hidden: int = 32
    activation: str = "tanh"
    test_fraction: float = 0.25
    l2: float = 0.0
    data_seed: int = 0

    def __post_init__(self) -> None:
        if self.hidden < 1:
            raise ValueError("digits_mlp needs hidden >= 1")
        if self.l2 < 0:
            raise ValueError("digits_mlp needs l2 >= 0")


@register_problem
class DigitsMLP(Problem):
    """scikit-learn digits (real data, embedded) with a one-hidden-layer MLP."""

    name = "digits_mlp"
    Params = DigitsMLPParams
    backends = ("torch", "jax")
    description = "sklearn 8x8 digits, one-hidden-layer MLP, cross-entropy (torch, jax)"

    def build(self, seed: int) -> ClassificationInstance:
        p: DigitsMLPParams = self.params
        split = load_digits_split(p.test_fraction, p.data_seed)
        model = MLP(layer_sizes(split.x_train.shape[1], [p.hidden], split.classes),
                    activation=p.activation)
        return ClassificationInstance(
            name=self.name,
            n=len(split.y_train),
            d=model.n_params,
            x0=model.init(np.random.default_rng(seed)),
            constants={"classes": split.classes, "n_test": len(split.y_test)},
            split=split,
            model=model,
            l2=p.l2,
        )
