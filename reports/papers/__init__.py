"""Per-paper report pages: one module per paper key, each exporting ``PAPER`` (a
:class:`reports.claims.Paper`), plus the papers of installed plugins (entry points in the
group ``saddlebench.papers``, each pointing to a ``Paper``)."""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from problems.registry import load_entry_points

if TYPE_CHECKING:
    from reports.claims import Paper

FOLDER = Path(__file__).resolve().parent
GROUP = "saddlebench.papers"


@lru_cache(maxsize=1)
def plugin_papers() -> dict[str, Paper]:
    """The papers that installed distributions declare (group ``saddlebench.papers``)."""
    return {paper.key: paper for paper in load_entry_points(GROUP)}


def builtin_keys() -> list[str]:
    return sorted(p.stem for p in FOLDER.glob("*.py") if not p.stem.startswith("_"))


def paper_keys() -> list[str]:
    """The keys of every paper: those with a page module here, and the plugins'."""
    return sorted({*builtin_keys(), *plugin_papers()})


def get_paper(key: str) -> Paper:
    """The declared :class:`~reports.claims.Paper` of ``key``."""
    if key in plugin_papers() and key not in builtin_keys():
        return plugin_papers()[key]
    if key not in builtin_keys():
        raise KeyError(f"no paper page module for {key!r} (known: {', '.join(paper_keys())})")
    paper: Paper = importlib.import_module(f"reports.papers.{key}").PAPER
    if paper.key != key:
        raise ValueError(f"reports/papers/{key}.py declares Paper key {paper.key!r}")
    return paper
