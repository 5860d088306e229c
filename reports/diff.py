"""What changed between two renders of a report, timestamps aside::

    python -m reports.diff OLD_REPORT NEW_REPORT

Compares every text file the report writes (``status.json``, ``latex.json``,
``provenance.json``, the LaTeX tables, the HTML pages, ``report.tex``) line by line, after
dropping the render's own date; figures (PNG, PDF) are listed only when one side lacks
them. Exit status 1 when anything differs: a restructuring that must leave every page's
numbers and verdicts as they were is checked by rendering the same stored results before
and after.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

TEXT = (".json", ".tex", ".html")
FIGURES = (".png", ".pdf")
STAMPS = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC|\\date\{[^}]*\}")


def _lines(path: Path) -> list[str]:
    return STAMPS.sub("<date>", path.read_text(encoding="utf-8")).splitlines()


def differences(old: Path, new: Path, context: int = 1) -> list[str]:
    """One block per file that differs (a unified diff), or that only one side has."""
    files = {p.relative_to(root) for root in (old, new) for p in root.rglob("*")
             if p.suffix in TEXT + FIGURES}
    out = []
    for rel in sorted(files):
        a, b = old / rel, new / rel
        if not (a.exists() and b.exists()):
            out.append(f"only in {'old' if a.exists() else 'new'}: {rel}")
        elif rel.suffix in TEXT and _lines(a) != _lines(b):
            out.append("\n".join(difflib.unified_diff(_lines(a), _lines(b), f"old/{rel}",
                                                      f"new/{rel}", n=context, lineterm="")))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.diff", description=__doc__)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    found = differences(args.old, args.new)
    print("\n".join(found) if found else "no differences (timestamps aside)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
