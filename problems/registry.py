"""Name → class registries (algorithms, problems), with errors that list the choices, and
the plugins that add to them.

Outside code registers its classes the way built-in code does (``@register_algorithm``,
``@register_problem``) in a module that is imported either

* through an **entry point** of an installed distribution, in the group
  ``saddlebench.algorithms``, ``saddlebench.problems`` or ``saddlebench.papers``
  (``my_pkg.algos = "my_pkg.algos"`` under ``[project.entry-points."saddlebench.algorithms"]``
  in its pyproject.toml): loaded the first time a name is not found, or the registry is
  listed; or
* by name, from an experiment file's ``plugins: [my_pkg.algos]`` (code that is not
  installed but importable), which every executor imports before running.
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")
GROUP = "saddlebench.{kind}s"  # entry-point group of a registry's plugins


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the choices closest to a misspelt ``name`` (at most
    three), to append to an error message; empty where none is close."""
    close = [repr(c) for c in difflib.get_close_matches(str(name), list(choices), n=3)]
    if not close:
        return ""
    return f" (did you mean {', '.join(close[:-1])}{' or ' if close[1:] else ''}{close[-1]}?)"


class PluginWarning(UserWarning):
    """An installed plugin that cannot be loaded (skipped)."""


class PluginError(ImportError):
    """A plugin module that cannot be imported."""


def import_plugins(modules: Iterable[str]) -> None:
    """Import each named module (registering what it declares)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise PluginError(f"plugin {name!r} cannot be imported ({exc}); install it, or "
                              "put its folder on PYTHONPATH") from None


def load_entry_points(group: str) -> list[Any]:
    """Load every entry point of ``group`` (importing its module); what they point to. One
    that fails to import is skipped with a warning naming it, so a broken or half-removed
    plugin never stops the rest (reports of its runs render from their stored specs)."""
    loaded = []
    for ep in entry_points(group=group):
        try:
            loaded.append(ep.load())
        except Exception as exc:  # any error of outside code: skip it, say so
            warnings.warn(f"plugin entry point {ep.name!r} ({ep.value}, group {group}) cannot "
                          f"be loaded and is skipped: {type(exc).__name__}: {exc}",
                          PluginWarning, stacklevel=2)
    return loaded


class Registry(dict[str, T], Generic[T]):
    """Classes registered by their ``name`` attribute; ``plugins()`` adds those of installed
    distributions' entry points (group ``saddlebench.<kind>s``)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self._loaded = False

    def register(self, cls: Any) -> Any:
        """Class decorator: make ``cls`` available by ``cls.name``."""
        if cls.name in self and self[cls.name] is not cls:
            raise ValueError(f"{self.kind} {cls.name!r} registered twice")
        self[cls.name] = cls
        return cls

    def plugins(self) -> Registry[T]:
        """This registry after loading its entry points (once)."""
        if not self._loaded:
            self._loaded = True
            load_entry_points(GROUP.format(kind=self.kind))
        return self

    def lookup(self, name: str) -> T:
        """The class registered as ``name`` (looked for among the plugins too); the error
        lists every registered name."""
        if name not in self:
            self.plugins()
        try:
            return self[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}{did_you_mean(name, self)}; "
                             f"registered {self.kind}s: "
                             f"{', '.join(sorted(self))} (outside code: see README, "
                             "Compare your own method)") from None
