"""Grid-search tuning: the experiment-level feature behind ``tune:`` entries.

A tuned entry expands into :class:`~bench.spec.TuningGroup`s, one per (problem, privacy
target, backend). Every candidate configuration of a group runs at the tuning seeds
(``stage: tune``); the :class:`~bench.spec.TuningRule` picks the candidate with the best
mean final metric over its finished tuning runs (ties: the first in grid order; candidates
whose runs all failed are out); the chosen configuration then runs at the experiment's seeds
as ordinary final runs. A choice on an edge of a numeric param's grid is no evidence that the
grid holds the optimum: with ``extend: N`` the grid grows one step past that edge (geometric
for a positive grid, by the ratio of its two outermost values; else arithmetic) and the new
candidates are tuned, up to N times; a choice still on an edge is recorded (``edges``). The
grid is too large to run every candidate at every tuning seed, ``halving: η`` tunes by
successive halving over the tuning seeds (Jamieson & Talwalkar 2016, with seeds as the
resource): every candidate runs at the first seed, and after each seed only the best ⌈n/η⌉
of the n still in (by their mean so far) run at the next; the choice is the best of those
that ran every seed (the finalists). The
choice, every candidate's score, the edges, the values added and the final runs' ids are
written to the suite (``suite.json``: ``tuning``) and shown by the reports, with the
statement that tuning, as in the papers, is not privacy-accounted.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.spec import RunSpec, SpecError, TuningGroup, TuningRule, component
from bench.store import Store, flatten

RunBatch = Callable[[list[RunSpec], str], list[Any]]
"""Runs specs under a progress title and returns the failed outcomes (``bench.sweep``'s
batch)."""


@dataclass(frozen=True)
class Selection:
    """The outcome of one group: the chosen candidate and every candidate's score."""

    group: TuningGroup
    chosen: RunSpec | None
    scores: tuple[float, ...]
    added: tuple[dict[str, Any], ...] = ()
    finalists: tuple[int, ...] = ()  # the candidates chosen among (their indices)

    @property
    def edges(self) -> dict[str, str]:
        """Numeric tuned params whose chosen value is the grid's smallest ("lower") or
        largest ("upper")."""
        if self.chosen is None:
            return {}
        found = {}
        for param in _varied(self.group):
            values = _grid(self.group, param)
            value = self.chosen.algorithm.params[param]
            if values and value in (values[0], values[-1]):
                found[param] = "lower" if value == values[0] else "upper"
        return found

    def to_dict(self, rule: TuningRule) -> dict[str, Any]:
        tuned = _varied(self.group)
        return {
            "group": self.group.key,
            "rule": rule.describe(),
            "chosen": None if self.chosen is None else
            {k: self.chosen.algorithm.params[k] for k in tuned},
            "candidates": [{"params": {k: c.algorithm.params[k] for k in tuned},
                            "score": None if math.isnan(s) else s,
                            "finalist": i in self.finalists}
                           for i, (c, s) in enumerate(zip(self.group.candidates, self.scores,
                                                          strict=True))],
            "edges": self.edges,
            "extended": list(self.added),
            "run_ids": [] if self.chosen is None else
            [s.digest for s in self.group.final_specs(self.chosen)],
        }


def _varied(group: TuningGroup) -> list[str]:
    """The params that differ across a group's candidates (the tuned ones)."""
    first = group.candidates[0].algorithm.params
    return [k for k in first if any(c.algorithm.params[k] != first[k] for c in group.candidates)]


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _grid(group: TuningGroup, param: str) -> list[float]:
    """The sorted values of a numeric tuned ``param`` ([] if any value is not a number)."""
    values = {c.algorithm.params[param] for c in group.candidates}
    return sorted(values) if len(values) > 1 and all(map(_numeric, values)) else []


def step_past(values: list[float], side: str) -> float | None:
    """The next grid value past ``side`` of sorted ``values``: geometric for a positive grid
    (by the ratio of the two outermost values), else arithmetic; integer grids stay integer.
    None if the step does not leave the grid."""
    low, high = (values[0], values[1]) if side == "lower" else (values[-2], values[-1])
    if low > 0:
        value = low * low / high if side == "lower" else high * high / low
    else:
        value = 2 * low - high if side == "lower" else 2 * high - low
    if all(isinstance(v, int) for v in values):
        value = round(value)
    return None if value in values else value


def most_added(group: TuningGroup) -> int:
    """The most candidates one extension adds to ``group``: one per numeric tuned param."""
    return sum(1 for param in _varied(group) if _grid(group, param))


def extend(selection: Selection) -> Selection | None:
    """``selection``'s group grown by the chosen configuration with each edge param one step
    past its edge (values the algorithm refuses are skipped); None if nothing was added."""
    chosen = selection.chosen
    if chosen is None:
        return None
    group, new, added = selection.group, [], []
    for param, side in selection.edges.items():
        value = step_past(_grid(group, param), side)
        if value is None:
            continue
        try:
            spec = component("algorithm", chosen.algorithm.name,
                             {**chosen.algorithm.params, param: value},
                             group.key)
        except SpecError:
            continue
        new.append(dataclasses.replace(chosen, algorithm=spec))
        added.append({param: value})
    if not new:
        return None
    grown = dataclasses.replace(group, candidates=(*group.candidates, *new))
    return Selection(grown, None, (), (*selection.added, *added))


def tune(groups: list[TuningGroup], rule: TuningRule, store: Store, run: RunBatch,
         title: str) -> tuple[list[Selection], list[Any]]:
    """Tune ``groups``: run the candidates at the tuning seeds (every one at every seed, or by
    successive halving), choose, and while a choice sits on a grid edge (at most
    ``rule.extend`` times) grow that grid and tune the new candidates at every seed; the
    selections and the failed outcomes."""
    if rule.halving:
        finalists, failures = halve(groups, rule, store, run, title)
    else:
        failures = run([s for g in groups for s in g.tuning_specs(rule)],
                       f"{title} tuning ({len(groups)} groups)")
        finalists = [tuple(range(len(g.candidates))) for g in groups]
    selections = [choose(g, rule, store, f) for g, f in zip(groups, finalists, strict=True)]
    for round_ in range(1, rule.extend + 1):
        grown = {i: g for i, sel in enumerate(selections) if (g := extend(sel)) is not None}
        if not grown:
            break
        new = [s for i, sel in grown.items()
               for c in sel.group.candidates[len(selections[i].group.candidates):]
               for s in TuningGroup(sel.group.key, (c,), ()).tuning_specs(rule)]
        failures += run(new, f"{title} grid extension {round_} ({len(grown)} groups on an edge)")
        for i, sel in grown.items():
            among = (*selections[i].finalists,
                     *range(len(selections[i].group.candidates), len(sel.group.candidates)))
            selections[i] = dataclasses.replace(choose(sel.group, rule, store, among),
                                                added=sel.added)
    return selections, failures


def rungs(candidates: int, rule: TuningRule) -> list[int]:
    """How many candidates run at each tuning seed: all at each without halving, else
    ⌈n/η⌉ of the n before."""
    sizes = [candidates]
    for _ in rule.seeds[1:]:
        sizes.append(math.ceil(sizes[-1] / rule.halving) if rule.halving else candidates)
    return sizes


def halve(groups: list[TuningGroup], rule: TuningRule, store: Store, run: RunBatch,
          title: str) -> tuple[list[tuple[int, ...]], list[Any]]:
    """Successive halving over the tuning seeds: each group's candidates still in run at the
    next seed, then the best :func:`rungs` says go on (by their mean so far; every group's
    runs of a seed in one batch). The finalists of each group and the failed outcomes."""
    alive = [tuple(range(len(g.candidates))) for g in groups]
    failures: list[Any] = []
    for k, seed in enumerate(rule.seeds):
        specs = [dataclasses.replace(g.candidates[i], seed=seed, stage="tune")
                 for g, ids in zip(groups, alive, strict=True) for i in ids]
        failures += run(specs, f"{title} tuning, seed {k + 1} of {len(rule.seeds)} "
                               f"({len(groups)} groups, {len(specs)} runs)")
        if k + 1 < len(rule.seeds):
            alive = [best(g, ids, rule, store, rungs(len(g.candidates), rule)[k + 1])
                     for g, ids in zip(groups, alive, strict=True)]
    return alive, failures


def best(group: TuningGroup, ids: tuple[int, ...], rule: TuningRule, store: Store,
         keep: int) -> tuple[int, ...]:
    """The ``keep`` best of ``group``'s candidates ``ids`` by mean final metric so far (those
    whose runs all failed last), in grid order."""
    sign = 1.0 if rule.goal == "min" else -1.0

    def rank(i: int) -> tuple[bool, float, int]:
        s = score(store, group.candidates[i], rule)
        return math.isnan(s), 0.0 if math.isnan(s) else sign * s, i

    return tuple(sorted(sorted(ids, key=rank)[:keep]))


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


def choose(group: TuningGroup, rule: TuningRule, store: Store,
           among: tuple[int, ...] | None = None) -> Selection:
    """The best candidate of ``group`` under ``rule``, among the candidates ``among`` (all
    when None; None if every one failed)."""
    finalists = tuple(range(len(group.candidates))) if among is None else among
    scores = tuple(score(store, c, rule) for c in group.candidates)
    sign = 1.0 if rule.goal == "min" else -1.0
    ranked = [(sign * scores[i], i) for i in finalists if not math.isnan(scores[i])]
    chosen = group.candidates[min(ranked)[1]] if ranked else None
    return Selection(group, chosen, scores, finalists=finalists)
