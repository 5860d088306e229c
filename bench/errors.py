"""The user-facing error type and how a validation error becomes one line.

:class:`UsageError` is the one exception the CLI reports as a one-line error (exit 2); any
other exception is a bug and shows its traceback. :func:`sentence` turns one pydantic error
into today's wording: the place (``algorithms[1].params.lr``), what is wrong, what is
allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


class UsageError(ValueError):
    """Bad input from the user (an option, a file, a name): reported in one line, exit 2."""


class SpecError(UsageError):
    """An invalid experiment file or run specification."""


YamlPath = tuple[str | int, ...]  # of a value in a YAML document: ("algorithms", 1, "params", "lr")


@dataclass(frozen=True)
class Source:
    """A file's name and the line and column where its YAML put each value."""

    name: str
    marks: Mapping[YamlPath, tuple[int, int]] = field(default_factory=dict)

    def at(self, *path: str | int) -> str:
        """The name, with the line and column of the value at ``path`` (or of the nearest
        enclosing value: a value given alone has no list index) where the YAML gives them."""
        for n in range(len(path), 0, -1):
            if path[:n] in self.marks:
                line, column = self.marks[path[:n]]
                return f"{self.name}: line {line}, column {column}"
        return self.name


def show(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def short(exc: Exception) -> str:
    """An exception's message with any overlong quoted value cut."""
    return re.sub(r"'[^']{80,}'", lambda m: m.group(0)[:40] + "...'", str(exc))


EXPECTED = {"int_type": "an integer", "int_from_float": "an integer", "float_type": "a number",
            "finite_number": "a finite number", "bool_type": "true or false",
            "string_type": "a string", "list_type": "a list", "tuple_type": "a list",
            "dict_type": "a mapping", "model_type": "a mapping", "dataclass_type": "a mapping"}
BOUNDS = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
          "less_than_equal": "<= {le}", "multiple_of": "a multiple of {multiple_of}"}


SPECIFIC = (*BOUNDS, "too_short", "literal_error", "value_error")


def first_error(exc: ValidationError) -> ErrorDetails:
    """The error to report: the first, unless that is one arm of a union (``x | list[x]``)
    and another arm's error says more (a bound, an empty list or a choice beats "expected a
    number")."""
    errors = exc.errors()
    field = errors[0]["loc"][:-1]
    return next((e for e in errors if e["type"] in SPECIFIC
                 and e["loc"][:len(field)] == field), errors[0])


def place(parts: Sequence[str | int]) -> str:
    """``("algorithms", 1, "params", "lr")`` → ``algorithms[1].params.lr``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def sentence(where: str, error: ErrorDetails, described: str | None = None) -> str:
    """One error at ``where`` (a place in the file) as a sentence; ``described``: what the
    field holds (its description), used instead of the error's own words."""
    value, kind, ctx = error.get("input"), error["type"], error.get("ctx", {})
    got = f", got {show(value)}"
    if described:
        return f"{where} must be {described}{got}"
    if kind in BOUNDS:
        bound = {k: f"{v:g}" if isinstance(v, float) else v for k, v in ctx.items()}
        return f"{where} must be {BOUNDS[kind].format(**bound)}{got}"
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", ctx["expected"])
        listed = ", ".join(options[:-1]) + " or " + options[-1] if len(options) > 1 else options[0]
        return f"{where}: unknown {where.rpartition('.')[2]} {show(value)}; choose {listed}"
    if kind == "too_short":
        return f"{where}: empty list; give at least one value"
    if kind == "value_error":
        return f"{where}: {short(ctx['error'])}"
    if kind == "missing":
        return f"{where}: missing"
    if kind in EXPECTED:
        return f"{where}: expected {EXPECTED[kind]}{got}"
    return f"{where}: {error['msg']}{got}"
