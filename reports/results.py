"""A paper's results and what its module contributes to its page: the types every report
module shares, below :mod:`reports.claims` (which evaluates claims on them) and
:mod:`reports.paper` (which collects and renders them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypedDict

import numpy as np
import pandas as pd

#: where a run's metric is read: its scored output (``final_<metric>``, the output rule's
#: point), its last evaluated iterate x_T, or the best (least) evaluated iterate after x₀
At = Literal["output", "last", "best"]


@dataclass
class PaperResults:
    """Every run of one paper at one scale: one row per run, and all trajectory rows."""

    paper: str
    scale: str
    suites: list[dict[str, Any]]
    runs: pd.DataFrame
    trajectories: pd.DataFrame
    studies: dict[str, pd.DataFrame] = field(default_factory=dict)
    roles: frozenset[str] | None = None  # the paper's declared roles (None: not checked)

    def suite_runs(self, name: str) -> pd.DataFrame:
        return self.runs[self.runs["suite"] == name] if not self.runs.empty else self.runs

    def role_suites(self, *roles: str) -> list[str]:
        """The suites whose experiment files declare one of ``roles``; KeyError for a role
        the paper does not declare (a section reading a misspelt role fails, even with no
        runs, instead of showing nothing)."""
        if self.roles is not None and set(roles) - self.roles:
            raise KeyError(f"{self.paper}: roles {sorted(set(roles) - self.roles)} are not "
                           f"declared (declared: {', '.join(sorted(self.roles))})")
        return [m["suite"] for m in self.suites if set(m.get("roles") or ()) & set(roles)]

    def role_runs(self, *roles: str) -> pd.DataFrame:
        """Every run of the suites playing one of ``roles``."""
        suites = self.role_suites(*roles)
        if self.runs.empty:
            return self.runs
        return self.runs[self.runs["suite"].isin(suites)]

    def at(self, runs: pd.DataFrame, metric: str, at: At = "output") -> pd.Series:
        """``metric`` of each of ``runs`` (aligned with them) where :data:`At` says: the
        output's ``final_<metric>``; else read from the evaluated iterates of the trajectory
        (nan where a run has none): the last one's, or the least after step 0 (the best
        iterate a theorem bounds, not an output the algorithm returns)."""
        if at == "output":
            column = f"final_{metric}"
            return runs[column].astype(float) if column in runs \
                else pd.Series(np.nan, index=runs.index)
        traj = self.trajectories
        if runs.empty or traj.empty or metric not in traj:
            return pd.Series(np.nan, index=runs.index, dtype=float)
        its = traj[(traj["point"] == "iterate") & traj["run_id"].isin(runs["run_id"])]
        per_run = (its.sort_values("step").groupby("run_id")[metric].last() if at == "last"
                   else its[its["step"] > 0].groupby("run_id")[metric].min())
        return runs["run_id"].map(per_run).astype(float)

    def study(self, name: str) -> pd.DataFrame:
        """The rows of a stored study (empty if ``reproduce`` has not run it)."""
        return self.studies.get(name, pd.DataFrame())

    def provenance(self, runs: pd.DataFrame | None = None) -> Provenance:
        """Where the numbers computed from ``runs`` (default: every run) come from."""
        return Provenance.of(self.runs if runs is None else runs, self.scale)

    def curves(self, suite: str, points: tuple[str, ...] = ("iterate",)) -> pd.DataFrame:
        """Trajectory rows of a suite (iterates only, or those of ``points``), joined with
        their run's settings."""
        runs = self.suite_runs(suite)
        if runs.empty or self.trajectories.empty:
            return pd.DataFrame()
        keep = ["run_id", "problem", "algorithm", "label", "epsilon", "calibration", "seed",
                "status", "steps", "n", "batch_size",
                *(c for c in runs if str(c).startswith("p_prob_"))]
        traj = self.trajectories[self.trajectories["point"].isin(points)]
        return traj.merge(runs[[c for c in keep if c in runs]], on="run_id")


@dataclass(frozen=True)
class Provenance:
    """The runs behind a table or figure: their ids and suites, the git commits and code
    fingerprints that produced them, the package versions, and the scale."""

    scale: str
    run_ids: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    git_shas: tuple[str, ...] = ()
    code: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    computed: str = ""  # for numbers no run produced: how they were obtained

    @classmethod
    def of(cls, runs: pd.DataFrame, scale: str) -> Provenance:
        def values(column: str) -> tuple[str, ...]:
            return tuple(sorted({str(v) for v in runs[column].dropna()})) if column in runs \
                else ()
        return cls(scale, run_ids=values("run_id"), suites=values("suite"),
                   git_shas=values("git_sha"), code=values("code"), versions=values("versions"))

    def summary(self) -> str:
        """One line: run count, suites, commits, code, scale (versions are listed apart)."""
        if not self.run_ids:
            return " · ".join(t for t in (self.computed or "no runs",
                                          self.scale and f"scale {self.scale}") if t)
        return (f"{len(self.run_ids)} runs · suites {', '.join(self.suites)} · git "
                f"{', '.join(s[:10] for s in self.git_shas) or 'unknown'} · code "
                f"{', '.join(self.code) or 'unknown'} · scale {self.scale}")


@dataclass(frozen=True)
class Figure:
    path: str
    caption: str
    provenance: Provenance | None = None  # default: every run of the page


class Table(TypedDict, total=False):
    """A page table: its ``title``, ``note``, ``columns`` and rows of cell texts; where its
    numbers come from (``provenance``; default: every run of the page) and the run ids
    behind each row (``row_runs``, shown per row)."""

    title: Required[str]
    note: Required[str]
    columns: Required[list[str]]
    rows: Required[list[list[str]]]
    provenance: Provenance
    row_runs: list[list[str]]


@dataclass
class PaperSections:
    """What a paper module contributes to its page."""

    settings: list[tuple[str, str]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    deviations: list[tuple[str, str]] = field(default_factory=list)  # (algorithm, text)
    # {kind, what, numbers}: findings beside the claims' (e.g. a sensitivity check that
    # qualifies a verdict), listed after them at the top of the page
    findings: list[dict[str, str]] = field(default_factory=list)
