"""Per-paper report pages: one module per paper key, each exporting ``PAPER`` (a
:class:`reports.claims.Paper`)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reports.claims import Paper

FOLDER = Path(__file__).resolve().parent


def paper_keys() -> list[str]:
    """The keys of every paper with a page module."""
    return sorted(p.stem for p in FOLDER.glob("*.py") if not p.stem.startswith("_"))


def get_paper(key: str) -> Paper:
    """The declared :class:`~reports.claims.Paper` of ``key``."""
    if key not in paper_keys():
        raise KeyError(f"no paper page module for {key!r} (known: {', '.join(paper_keys())})")
    paper: Paper = importlib.import_module(f"reports.papers.{key}").PAPER
    if paper.key != key:
        raise ValueError(f"reports/papers/{key}.py declares Paper key {paper.key!r}")
    return paper
