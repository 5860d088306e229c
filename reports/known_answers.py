"""Synthetic run records for known-answer tests of declared claims.

A known-answer test builds runs whose verdict is known (``synthetic_results``), evaluates
one declared claim on them and asserts the verdict; it carries
``@pytest.mark.known_answer("<paper>", "<claim id>")`` so that ``tests/test_claims.py`` can
check that every declared claim of every paper has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from reports.claims import ClaimResult, evaluate
from reports.paper import PaperResults, flag_divergence
from reports.papers import get_paper

RUN_DEFAULTS: dict[str, Any] = {"status": "done", "epsilon": 1.0, "delta": 1e-5,
                                "calibration": "pld", "seed": 0, "problem": "p",
                                "algorithm": "a", "label": "a"}


def synthetic_results(paper: str, runs: Sequence[Mapping[str, Any]],
                      curves: Sequence[Mapping[str, Any]] = (),
                      studies: Mapping[str, pd.DataFrame] | None = None,
                      scale: str = "quick", divergence_factor: float = 100.0
                      ) -> PaperResults:
    """A :class:`PaperResults` from run rows (each needs ``role`` — or a ``suite`` whose
    name is taken as its role — and may omit the columns in :data:`RUN_DEFAULTS`; run ids
    are numbered) and trajectory rows (``run_id``, ``step``, metrics; ``point`` defaults to
    "iterate")."""
    rows = []
    for i, run in enumerate(runs):
        row = {**RUN_DEFAULTS, "run_id": f"r{i}", **run}
        row.setdefault("suite", f"{paper}_{row.get('role', 'suite')}")
        rows.append(row)
    frame = pd.DataFrame(rows)
    roles: dict[str, set[str]] = {}
    for row in rows:
        roles.setdefault(row["suite"], set()).add(str(row.get("role", row["suite"])))
    suites = [{"suite": s, "paper": paper, "scale": scale, "roles": sorted(r)}
              for s, r in roles.items()]
    traj = pd.DataFrame([{"point": "iterate", **c} for c in curves])
    return PaperResults(paper, scale, suites, flag_divergence(frame, traj, divergence_factor),
                        traj, dict(studies or {}))


def verdict_of(paper: str, claim_id: str, results: PaperResults) -> ClaimResult:
    """Evaluate one declared claim of ``paper`` on ``results``."""

    return evaluate(get_paper(paper).claim(claim_id), results)
