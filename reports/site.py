"""The report's front page: every paper page with the status of its checkable claims (held,
not held, not run), and links to the privacy and runtime pages where they exist.

It reads what the page builders leave in the report folder (``<paper>/<scale>/status.json``,
``privacy/index.html``, ``runtime/index.html``) and is rebuilt by every command that writes
one of them.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reports.paper import STATUSES
from reports.render import html_env


def paper_statuses(report: Path) -> list[dict[str, Any]]:
    """One entry per paper page under ``report``: title, scale, runs, claims and counts."""
    pages = []
    for path in sorted(report.glob("*/*/status.json")):
        status = json.loads(path.read_text())
        counts = Counter(c["status"] for c in status["claims"])
        pages.append({**status, "href": f"{path.parent.relative_to(report).as_posix()}/",
                      "counts": [counts.get(s, 0) for s in STATUSES]})
    return pages


def build_index(report: Path) -> Path:
    """Write ``report/index.html``; returns its path."""
    report.mkdir(parents=True, exist_ok=True)
    extra = [(name, f"{name}/") for name in ("privacy", "runtime")
             if (report / name / "index.html").exists()]
    html = html_env().get_template("site.html.j2").render(
        papers=paper_statuses(report), statuses=STATUSES, extra=extra,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    path = report / "index.html"
    path.write_text(html)
    return path
