"""The ``Params`` dataclasses of problems and algorithms: frozen, and validated by pydantic
against the constraints their fields declare (``lr: PositiveFloat``,
``sampling: Literal["poisson", "fixed"]``, ``iota: Annotated[float, Gt(0), Lt(1)]``).

The declared types and constraints are the single source: constructing a Params checks them
(strictly: no str → number coercion, finite floats only, no unknown fields), the experiment
model (``bench.model``) reads them for its errors and its JSON schema. A rule joining
several fields is one ``@model_validator(mode="after")`` on the class, its message naming
the fields.
"""

from __future__ import annotations

from typing import Annotated, TypeVar, cast

from annotated_types import Ge, Gt, Le, Lt
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass
from typing_extensions import dataclass_transform

PARAMS_CONFIG = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid")

Count = Annotated[int, Ge(1)]
Fraction = Annotated[float, Gt(0), Lt(1)]  # in (0, 1)
Proportion = Annotated[float, Gt(0), Le(1)]  # in (0, 1]

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def params(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen Params dataclass validated against its declared constraints."""
    return cast(type[T], dataclass(frozen=True, config=PARAMS_CONFIG)(cls))
