"""Name → class registries (algorithms, problems), with errors that list the choices."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(dict[str, T], Generic[T]):
    """Classes registered by their ``name`` attribute."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def register(self, cls: Any) -> Any:
        """Class decorator: make ``cls`` available by ``cls.name``."""
        if cls.name in self:
            raise ValueError(f"{self.kind} {cls.name!r} registered twice")
        self[cls.name] = cls
        return cls

    def lookup(self, name: str) -> T:
        """The class registered as ``name``; the error lists every registered name."""
        try:
            return self[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}; registered {self.kind}s: "
                             f"{', '.join(sorted(self))}") from None
