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

import dataclasses
import difflib
import importlib
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points, packages_distributions
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


#: every registry, so that a failed import can take back what it registered
REGISTRIES: list[Registry[Any]] = []


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Undo every registration made inside the block if it raises: a module that fails to
    import registers nothing, however far it got."""
    saved = [(r, dict(r), {k: list(v) for k, v in r.clashes.items()}) for r in REGISTRIES]
    try:
        yield
    except BaseException:
        for registry, entries, clashes in saved:
            registry.clear()
            registry.update(entries)
            registry.clashes = clashes
        raise


def import_plugins(modules: Iterable[str]) -> None:
    """Import each named module (registering what it declares, or nothing if it fails)."""
    for name in modules:
        try:
            with all_or_nothing():
                importlib.import_module(name)
        except ImportError as exc:
            raise PluginError(f"plugin {name!r} cannot be imported ({exc}); install it, or "
                              "put its folder on PYTHONPATH") from None
        except Exception as exc:  # any error of outside code: name it, register nothing
            raise PluginError(f"plugin {name!r} fails on import: {type(exc).__name__}: "
                              f"{exc}") from None


def load_entry_points(group: str) -> list[Any]:
    """Load every entry point of ``group`` (importing its module); what they point to. One
    that fails to import is skipped with a warning naming it, and registers nothing, so a
    broken or half-removed plugin never stops the rest (reports of its runs render from
    their stored specs)."""
    loaded = []
    for ep in entry_points(group=group):
        try:
            with all_or_nothing():
                loaded.append(ep.load())
        except Exception as exc:  # any error of outside code: skip it, say so
            warnings.warn(f"plugin entry point {ep.name!r} ({ep.value}, group {group}) cannot "
                          f"be loaded and is skipped: {type(exc).__name__}: {exc}",
                          PluginWarning, stacklevel=2)
    return loaded


def package(cls: Any) -> str:
    """The top-level package that defines ``cls``: the qualifier of its name."""
    return str(cls.__module__).partition(".")[0]


def origin(cls: Any) -> str:
    """Where ``cls`` comes from, for errors: its package and the distribution installing it."""
    dists = packages_distributions().get(package(cls))
    where = f"distribution {', '.join(dists)}" if dists else "not installed"
    return f"{package(cls)} ({cls.__module__}, {where})"


def params_problem(cls: Any) -> str | None:
    """Why ``cls.Params`` cannot hold its params (None: it can). A plain frozen dataclass is
    accepted; one deriving from a validated Params would skip its base's checks."""
    params_cls = getattr(cls, "Params", None)
    if params_cls is None:
        return None
    label = getattr(params_cls, "__qualname__", repr(params_cls))
    fix = ("decorate it with @params (from problems.params import params) instead of "
           "@dataclass(frozen=True)")
    if not dataclasses.is_dataclass(params_cls):
        return f"{label} is not a dataclass; {fix}"
    if hasattr(params_cls, "__pydantic_fields__") and \
            "__pydantic_fields__" not in vars(params_cls):
        return (f"{label} is a plain dataclass deriving from a validated "
                f"Params, whose checks it would skip; {fix}")
    return None


class Registry(dict[str, T], Generic[T]):
    """Classes registered by their ``name`` attribute; ``plugins()`` adds those of installed
    distributions' entry points (group ``saddlebench.<kind>s``).

    A name registered by two packages is kept under each qualified name, ``package:name``
    (listed so); the bare name is then an error naming both. A qualified name is accepted
    for any class (``algorithms:sgd``)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self._loaded = False
        self.clashes: dict[str, list[T]] = {}  # name → the classes of several packages
        REGISTRIES.append(self)

    def register(self, cls: Any) -> Any:
        """Class decorator: make ``cls`` available by ``cls.name`` (``package:name`` where
        another package registered that name too)."""
        name = cls.name
        if problem := params_problem(cls):
            raise TypeError(f"{self.kind} {name!r}: Params: {problem}")
        held = self.clashes.get(name, [self[name]] if name in self else [])
        if any(package(c) == package(cls) for c in held if not same_class(c, cls)):
            raise ValueError(f"{self.kind} {name!r} registered twice in {package(cls)}")
        builtin = next((c for c in held if package(c) in BUILT_IN), None)
        if builtin is not None and not same_class(builtin, cls):
            raise ValueError(f"{self.kind} {name!r} is built in ({builtin.__module__}); give "
                             f"the one in {cls.__module__} another name")
        held = [c for c in held if not same_class(c, cls)] + [cls]
        if len(held) == 1:
            self[name] = cls
            return cls
        self.pop(name, None)
        self.clashes[name] = held
        for c in held:
            self[f"{package(c)}:{name}"] = c
        return cls

    def plugins(self) -> Registry[T]:
        """This registry after loading its entry points (once)."""
        if not self._loaded:
            self._loaded = True
            load_entry_points(GROUP.format(kind=self.kind))
        return self

    def __missing__(self, name: str) -> T:
        """A qualified name (``package:name``), or a name an entry point registers; a name
        two packages register is an error naming both and the qualified names."""
        if not self._loaded:
            return self.plugins()[name]
        if name in self.clashes:
            held = self.clashes[name]
            raise ValueError(
                f"{self.kind} {name!r} is registered by {len(held)} plugins: "
                f"{'; '.join(origin(c) for c in held)}; choose one by its qualified name "
                f"({' or '.join(repr(f'{package(c)}:{name}') for c in held)}), or uninstall "
                "the others")
        qualifier, sep, bare = name.partition(":")
        if sep and bare in self and package(self[bare]) == qualifier:
            return self[bare]
        raise KeyError(name)

    def lookup(self, name: str) -> T:
        """The class registered as ``name`` (looked for among the plugins too); the error
        lists every registered name."""
        try:
            return self[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}{did_you_mean(name, self)}; "
                             f"registered {self.kind}s: "
                             f"{', '.join(sorted(self))} (outside code: see README, "
                             "Compare your own method)") from None


#: the packages of saddlebench's own classes: their names are reserved
BUILT_IN = ("algorithms", "problems")


def same_class(a: Any, b: Any) -> bool:
    """The same class, or the same definition imported again (a reload)."""
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)
