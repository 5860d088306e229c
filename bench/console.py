"""The commands' console: rich on a terminal, plain uncut lines in a log (light to import:
``saddlebench --help`` and ``list`` print through it)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


class LogConsole(Console):
    """The command's console. On a terminal: rich output fitted to its width. Elsewhere (a
    log file, a pipe), where rich would cut everything at 80 columns: tables as plain
    lines (:func:`plain_table`), and no line cut or wrapped."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.is_terminal:
            objects = tuple(plain_table(o) if isinstance(o, Table) else o for o in objects)
            kwargs.setdefault("soft_wrap", True)
        super().print(*objects, **kwargs)


def plain_table(table: Table) -> Text:
    """``table`` as plain lines: ``# title``, the header, a line per row, cells separated by
    `` | `` (plain text, markup removed)."""
    def plain(cell: Any) -> str:
        text = cell if isinstance(cell, Text) else Text.from_markup(str(cell))
        return text.plain.replace("\n", " ")

    columns = [[plain(c.header), *map(plain, c.cells)] for c in table.columns]
    lines = [" | ".join(row) for row in zip(*columns, strict=True)]
    return Text("\n".join([f"# {plain(table.title)}"] * bool(table.title) + lines))


console = LogConsole()
