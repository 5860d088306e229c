"""Supervised classification problems: a data split × a flat-parameter model.

The training loss is the mean softmax cross-entropy (plus an optional ½·l2·‖x‖²) over the
training split; test loss and accuracy are measured on the held-out split. These problems
run on torch and jax (autodiff); there is no closed form. The model is anything with
``n_params``, ``init(rng)`` and ``logits(xp, x, features)`` (:class:`ClassifierModel`): the
``xp`` MLP here, or a torch module (:mod:`problems.models.torch_module`, used by
:mod:`problems.vision` and :mod:`problems.text`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, Self

import numpy as np
from annotated_types import Ge, Lt
from pydantic import NonNegativeFloat, PositiveFloat, model_validator

from problems.backend import Backend, JaxBackend, TorchBackend
from problems.base import DataSize, Instance, Problem, register_problem
from problems.data.common import Split, subset
from problems.data.digits import digits_train_size, load_digits_split
from problems.data.generated import generated_split
from problems.models.mlp import MLP, Activation, Init, cross_entropy, layer_sizes
from problems.oracles import BatchLoss, Oracle, autodiff_oracle
from problems.params import Count, Fraction, params
from problems.partition import Scheme, partition

EVAL_CHUNK = 4096  # samples per forward pass in accuracy (the oracles' default eval_chunk)

Features = np.ndarray | tuple[np.ndarray, ...]
"""One feature array, or several aligned ones (e.g. token ids and attention mask)."""


class ClassifierModel(Protocol):
    """A flat-parameter model: :class:`MLP`, or a torch module via ``TorchModel``."""

    @property
    def n_params(self) -> int: ...

    def init(self, rng: np.random.Generator) -> np.ndarray: ...

    def logits(self, xp: Any, x: Any, features: Any) -> Any: ...


@dataclass(frozen=True)
class EncodedSplit:
    """A :class:`Split` whose features are a tuple of aligned arrays (e.g. ids and mask)."""

    x_train: tuple[np.ndarray, ...]
    y_train: np.ndarray
    x_test: tuple[np.ndarray, ...]
    y_test: np.ndarray
    classes: int


def _as_tuple(features: Features) -> tuple[np.ndarray, ...]:
    return features if isinstance(features, tuple) else (features,)


def _unpack(features: Sequence[Any]) -> Any:
    """What ``logits`` receives: the array itself when there is one, else the tuple."""
    return features[0] if len(features) == 1 else tuple(features)


def _to_backend(backend: Backend, a: np.ndarray) -> Any:
    """Features on the backend: integer arrays (token ids) stay integer."""
    return backend.as_index(a) if np.issubdtype(a.dtype, np.integer) else backend.asarray(a)


@dataclass
class ClassificationInstance(Instance):
    """A :class:`Split` (or :class:`EncodedSplit`) and a model with ``logits(xp, x, features)``.

    ``oracle_kw`` goes to every oracle (e.g. ``chunk_size`` and ``eval_chunk`` to bound
    the memory of per-sample gradients and of full-data means for large networks).
    """

    split: Split | EncodedSplit | None = None
    model: ClassifierModel | None = None
    l2: float = 0.0
    oracle_kw: dict[str, Any] = field(default_factory=dict)
    _test: dict[int, Oracle] = field(default_factory=dict, repr=False)

    def _onehot(self, y: np.ndarray) -> np.ndarray:
        assert self.split is not None
        return np.eye(self.split.classes)[y]

    def losses_fn(self, backend: Backend) -> BatchLoss:
        xp, model, l2 = backend.xp, self.model, self.l2
        assert model is not None

        def losses(x: Any, *batch: Any) -> Any:
            *features, onehot = batch
            loss = cross_entropy(xp, model.logits(xp, x, _unpack(features)), onehot)
            return loss + 0.5 * l2 * xp.sum(x * x) if l2 else loss

        return losses

    def _oracle(self, backend: Backend, features: Features, y: np.ndarray, **kw: Any) -> Oracle:
        data = (*_as_tuple(features), self._onehot(y))
        losses = self.losses_fn(backend)
        if isinstance(backend, TorchBackend) and not self.l2:
            from problems.ghost import (  # lazy: needs the torch extra
                BookkeepingOracle,
                bookkeeping_tracer,
            )

            trace = bookkeeping_tracer(self.model, losses)
            if trace is not None:  # clipped sums by book-keeping (an L2 term is per sample)
                return BookkeepingOracle(backend, losses, data, trace=trace, x0=self.x0,
                                         **self.oracle_kw, **kw)
        if isinstance(backend, JaxBackend) and isinstance(self.model, MLP) and not self.l2:
            kw["mlp_shapes"] = self.model.shapes  # clipped sums by book-keeping
        return autodiff_oracle(backend, losses, data, x0=self.x0, kernel_key=self._loss_key(),
                               **self.oracle_kw, **kw)

    def _loss_key(self) -> Hashable | None:
        """What determines :meth:`losses_fn` (its kernels may be shared by every instance
        with the same key): the model when it is a frozen dataclass, compared by value."""
        params = getattr(type(self.model), "__dataclass_params__", None)
        if params is None or not params.frozen:
            return None
        return (type(self).__qualname__, self.model, self.l2)

    def oracle(self, backend: Backend) -> Oracle:
        assert self.split is not None
        return self._oracle(backend, self.split.x_train, self.split.y_train,
                            clients=self.clients)

    def held_out_oracle(self, backend: Backend) -> Oracle:
        """An oracle on the test split, started at the same x₀ (data the training set's
        privacy guarantee does not cover)."""
        assert self.split is not None
        key = id(backend)
        if key not in self._test:
            self._test[key] = self._oracle(backend, self.split.x_test, self.split.y_test)
        return self._test[key]

    def evaluate_test(self, backend: Backend, x: Any) -> dict[str, float]:
        assert self.split is not None
        s = self.split
        return {
            "test_loss": float(backend.to_numpy(self.held_out_oracle(backend).loss(x))),
            "test_acc": self._accuracy(backend, x, s.x_test, s.y_test),
        }

    def evaluate_train(self, backend: Backend, x: Any) -> dict[str, float]:
        assert self.split is not None
        return {"train_acc": self._accuracy(backend, x, self.split.x_train, self.split.y_train)}

    def _accuracy(self, backend: Backend, x: Any, features: Features, y: np.ndarray) -> float:
        """Top-1 accuracy, ``eval_chunk`` samples at a time."""
        assert self.model is not None
        step = self.oracle_kw.get("eval_chunk", EVAL_CHUNK)
        hits = 0
        for start in range(0, len(y), step):
            chunk = [_to_backend(backend, f[start : start + step]) for f in _as_tuple(features)]
            logits = backend.to_numpy(self.model.logits(backend.xp, x, _unpack(chunk)))
            hits += int(np.sum(np.argmax(logits, axis=1) == y[start : start + step]))
        return hits / len(y)


def classification_instance(name: str, split: Split | EncodedSplit, model: ClassifierModel,
                            seed: int, l2: float = 0.0,
                            clients: list[np.ndarray] | None = None, **oracle_kw: Any
                            ) -> ClassificationInstance:
    """The instance for ``split`` × ``model``, started at ``model.init`` seeded by ``seed``."""
    return ClassificationInstance(
        name=name,
        n=len(split.y_train),
        d=model.n_params,
        x0=model.init(np.random.default_rng(seed)),
        constants={"classes": split.classes, "n_test": len(split.y_test)},
        clients=clients or [],
        split=split,
        model=model,
        l2=l2,
        oracle_kw=oracle_kw,
    )


@params
class ClientParams:
    """How the training set is spread over ``clients`` (see :mod:`problems.partition`)."""

    clients: Count = 1
    partition: Scheme = "iid"
    dirichlet_alpha: PositiveFloat = 0.5

    def client_indices(self, labels: np.ndarray, seed: int) -> list[np.ndarray]:
        """The partition of a training set with ``labels`` (one client: all samples)."""
        return partition(labels, self.clients, self.partition, self.dirichlet_alpha, seed)

    def data_size(self, n: int) -> DataSize:
        """``n`` with the clients' sizes where the scheme fixes them (i.i.d. and sorted cut
        near-equal parts; Dirichlet shares are drawn from the labels: unknown)."""
        return DataSize(n) if self.partition == "dirichlet" else DataSize.split(n, self.clients)


@params
class OracleParams(ClientParams):
    """Loss and memory knobs of torch-network problems: ``l2`` weight; per-sample gradients
    ``chunk_size`` samples at a time (None: all at once; "auto": as many as a memory budget
    allows, ``problems.oracles.auto_chunk``); full-data means and test metrics
    ``eval_chunk`` samples at a time; the clients of :class:`ClientParams`."""

    l2: NonNegativeFloat = 0.0
    chunk_size: Count | Literal["auto"] | None = "auto"
    eval_chunk: Count = 1024

    @property
    def oracle_kw(self) -> dict[str, Any]:
        return {"chunk_size": self.chunk_size, "eval_chunk": self.eval_chunk}


@params
class DataParams(OracleParams):
    """External data: its directory (None: the loader's default), optional subsample sizes
    (None: the whole split) drawn with ``data_seed``."""

    data_dir: str | None = None
    n_train: Count | None = None
    n_test: Count | None = None
    data_seed: int = 0

    def subsample_size(self) -> DataSize | None:
        """The sizes of an ``n_train`` subsample (None: the whole local split, unknown until
        it is read)."""
        return None if self.n_train is None else self.data_size(self.n_train)


def subsampled(split: Any, p: DataParams) -> Any:
    """``split`` cut to ``p.n_train``/``p.n_test`` samples by ``problems.data.common.subset``."""
    if p.n_train is None and p.n_test is None:
        return split
    return subset(split, p.n_train, p.n_test, p.data_seed)


@params
class DigitsMLPParams(ClientParams):
    hidden: Count = 32
    activation: Activation = "tanh"
    init: Init = "glorot"
    test_fraction: Fraction = 0.25
    l2: NonNegativeFloat = 0.0
    data_seed: int = 0


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
                    activation=p.activation, init_scheme=p.init)
        return classification_instance(self.name, split, model, seed, l2=p.l2,
                                       clients=p.client_indices(split.y_train, p.data_seed))

    def size(self) -> DataSize:
        p: DigitsMLPParams = self.params
        return p.data_size(digits_train_size(p.test_fraction))


@params
class SyntheticMLPParams(DigitsMLPParams):
    """The MLP of :class:`DigitsMLPParams` on :func:`~problems.data.generated.generated_split`
    data (defaults: MNIST's size and dimension, 60,000 + 10,000 samples in 784 features)."""

    n_train: Count = 60_000
    n_test: Count = 10_000
    features: Count = 784
    informative: Annotated[int, Ge(2)] = 32
    classes: Annotated[int, Ge(2)] = 10
    clusters: Count = 2
    class_sep: PositiveFloat = 1.0
    flip: Annotated[float, Ge(0), Lt(1)] = 0.0

    @model_validator(mode="after")
    def _room_for_the_classes(self) -> Self:
        if self.informative > self.features or self.classes * self.clusters > 2 ** self.informative:
            raise ValueError("synthetic_mlp needs informative <= features and "
                             "classes * clusters <= 2**informative")
        return self


@register_problem
class SyntheticMLP(Problem):
    """Generated classification data of a real set's size (synthetic, not images) with the
    one-hidden-layer MLP of ``digits_mlp``."""

    name = "synthetic_mlp"
    Params = SyntheticMLPParams
    backends = ("torch", "jax")
    description = ("generated classification set (sklearn make_classification; synthetic "
                   "stand-in of MNIST's size and dimension by default), one-hidden-layer MLP, "
                   "cross-entropy (torch, jax)")

    def build(self, seed: int) -> ClassificationInstance:
        p: SyntheticMLPParams = self.params
        split = generated_split(p.n_train, p.n_test, p.features, p.informative, p.classes,
                                p.clusters, p.class_sep, p.flip, p.data_seed)
        model = MLP(layer_sizes(p.features, [p.hidden], p.classes),
                    activation=p.activation, init_scheme=p.init)
        return classification_instance(self.name, split, model, seed, l2=p.l2,
                                       clients=p.client_indices(split.y_train, p.data_seed))

    def size(self) -> DataSize:
        p: SyntheticMLPParams = self.params
        return p.data_size(p.n_train)
