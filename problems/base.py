"""Problem, Instance and Oracle: what is optimised.

A :class:`Problem` is a registered generator with a frozen ``Params`` dataclass. Its
``build(seed)`` returns an :class:`Instance`: the data (numpy, on the host), the dimension
``d``, the initial point, known constants (gradient bound ``G``, smoothness ``L``, saddle
location, ...) and the clients. ``Instance.oracle(backend)`` gives the backend's
:class:`~problems.oracles.Oracle` over the training data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from problems.backend import BACKENDS, Backend
from problems.oracles import Oracle
from problems.registry import Registry


class DataInfo(Protocol):
    """What calibration may know about the data: public sizes and constants."""

    @property
    def n(self) -> int: ...

    @property
    def d(self) -> int: ...

    @property
    def constants(self) -> Mapping[str, Any]: ...

    @property
    def clients(self) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class DataSize:
    """A :class:`DataInfo` without data (for ``saddlebench account`` and the size checks of
    experiment files). ``clients``: index ranges of the clients' sizes where they are known
    (empty: unknown, or one client)."""

    n: int
    d: int = 0
    constants: Mapping[str, Any] = field(default_factory=dict)
    clients: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def split(cls, n: int, clients: int) -> DataSize:
        """``n`` records cut into ``clients`` near-equal parts (``np.array_split``'s sizes)."""
        return cls(n, clients=np.array_split(np.arange(n), clients))


@dataclass
class Instance(ABC):
    """One built problem: data, start point, constants and clients."""

    name: str
    n: int
    d: int
    x0: np.ndarray
    constants: dict[str, Any] = field(default_factory=dict)
    clients: list[np.ndarray] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.clients:
            self.clients = [np.arange(self.n)]

    @abstractmethod
    def oracle(self, backend: Backend) -> Oracle:
        """The training-data oracle on ``backend``."""

    def evaluate_test(self, backend: Backend, x: Any) -> dict[str, float]:
        """Held-out metrics (test loss, accuracy); empty where there is no test set."""
        return {}

    def evaluate_train(self, backend: Backend, x: Any) -> dict[str, float]:
        """Training-set metrics beyond the loss (accuracy); empty where they do not apply."""
        return {}

    def lambda_min(self, x: np.ndarray) -> float | None:
        """Closed-form λ_min(∇²F(x)) where the problem has one (else None)."""
        return None


class Problem(ABC):
    """A registered problem generator."""

    name: ClassVar[str]
    Params: ClassVar[type]
    backends: ClassVar[tuple[str, ...]] = BACKENDS
    description: ClassVar[str] = ""
    #: True when the oracle is a MinimaxOracle (f(x, y); metrics on Φ(x) = max_y f)
    minimax: ClassVar[bool] = False

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()

    @abstractmethod
    def build(self, seed: int) -> Instance:
        """The instance for run seed ``seed`` (data may use a fixed ``data_seed``)."""

    def size(self) -> DataSize | None:
        """The training set's public sizes (``n``; the clients' where the partition fixes
        them) from the params alone, without building: experiment files are checked against
        them (``batch_size > n``) before anything runs. None (the default): known only once
        the data are loaded."""
        return None


PROBLEMS: Registry[type[Problem]] = Registry("problem")
register_problem = PROBLEMS.register
get_problem = PROBLEMS.lookup
