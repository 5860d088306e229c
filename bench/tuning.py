"""Grid-search tuning: the experiment-level feature behind ``tune:`` entries.

A tuned entry expands into :class:`~bench.spec.TuningGroup`s, one per (problem, privacy
target, backend). Every candidate configuration of a group runs at the tuning seeds
(``stage: tune``); the :class:`~bench.spec.TuningRule` picks the candidate with the best
mean final metric over its finished tuning runs (ties: the first in grid order; candidates
whose runs all failed are out); the chosen configuration then runs at the experiment's seeds
as ordinary final runs. The choice and every candidate's score are written to the suite
(``suite.json``: ``tuning``) and shown by the reports, with the statement that tuning, as in
the papers, is not privacy-accounted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.spec import RunSpec, TuningGroup, TuningRule
from bench.store import Store, flatten


@dataclass(frozen=True)
class Selection:
    """The outcome of one group: the chosen candidate and every candidate's score."""

    group: TuningGroup
    chosen: RunSpec | None
    scores: tuple[float, ...]

    def to_dict(self, rule: TuningRule) -> dict[str, Any]:
        tuned = _varied(self.group)
        return {
            "group": self.group.key,
            "rule": rule.describe(),
            "chosen": None if self.chosen is None else
            {k: self.chosen.algorithm.params[k] for k in tuned},
            "candidates": [{"params": {k: c.algorithm.params[k] for k in tuned},
                            "score": None if math.isnan(s) else s}
                           for c, s in zip(self.group.candidates, self.scores, strict=True)],
        }


def _varied(group: TuningGroup) -> list[str]:
    """The params that differ across a group's candidates (the tuned ones)."""
    first = group.candidates[0].algorithm.params
    return [k for k in first if any(c.algorithm.params[k] != first[k] for c in group.candidates)]


def score(store: Store, candidate: RunSpec, rule: TuningRule) -> float:
    """Mean final metric over the candidate's finished tuning runs (NaN if none finished)."""
    values = []
    for seed in rule.seeds:
        side = store.sidecar(RunSpec.from_dict({**candidate.to_dict(), "seed": seed,
                                                "stage": "tune"}).digest)
        if side and side.get("status") == "done":
            value = flatten(side).get(f"final_{rule.metric}")
            if value is not None and math.isfinite(value):
                values.append(float(value))
    return float(np.mean(values)) if values else math.nan


def choose(group: TuningGroup, rule: TuningRule, store: Store) -> Selection:
    """The best candidate of ``group`` under ``rule`` (None if every candidate failed)."""
    scores = tuple(score(store, c, rule) for c in group.candidates)
    sign = 1.0 if rule.goal == "min" else -1.0
    ranked = [(sign * s, i) for i, s in enumerate(scores) if not math.isnan(s)]
    chosen = group.candidates[min(ranked)[1]] if ranked else None
    return Selection(group, chosen, scores)
