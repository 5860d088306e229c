"""Results as data: every stored run of a suite folder, or of every suite under a results
root, as tidy pandas frames.

>>> from bench.results import load
>>> res = load("out/smoke")                  # a suite folder, or a root such as "out"
>>> res.runs[["label", "epsilon", "seed", "final_loss"]]     # one row per run
>>> res.curves().query("metric == 'loss'")   # long form: run columns × step × metric

``runs`` has one row per run: the spec (problem, algorithm, label, ε, δ, calibration,
backend, seed, params as ``p_prob_*`` / ``p_alg_*``), status, the privacy figures
(``eps_*``, σ), the premise data (``prem_*``), final metrics (``final_*``), timings and
the suite. ``trajectories`` has one row per evaluation point of each run (``run_id``,
``step``, the metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.store import Store

ID_COLUMNS = ("run_id", "suite", "problem", "algorithm", "label", "epsilon", "calibration",
              "backend", "seed")


@dataclass(frozen=True)
class Results:
    """The runs and trajectories of one or more suites."""

    runs: pd.DataFrame
    trajectories: pd.DataFrame

    def curves(self) -> pd.DataFrame:
        """The trajectories in long form (``step``, ``metric``, ``value``) with each run's
        identifying columns, ready for ``seaborn.relplot(x="step", y="value", ...)``."""
        if self.trajectories.empty:
            return pd.DataFrame(columns=[*ID_COLUMNS, "step", "metric", "value"])
        values = [c for c in self.trajectories if c not in ("run_id", "step", "point",
                                                              "time_s")]
        numeric = [c for c in values if pd.api.types.is_numeric_dtype(self.trajectories[c])]
        long = self.trajectories.melt(id_vars=["run_id", "step"], value_vars=numeric,
                                      var_name="metric", value_name="value").dropna(
                                          subset=["value"])
        keys = [c for c in ID_COLUMNS if c in self.runs]
        return self.runs[keys].merge(long, on="run_id", how="inner")


def load(path: str | Path, stage: str | None = "final") -> Results:
    """The results under ``path``: a suite folder (with ``runs/``) or a results root whose
    sub-folders are suites. ``stage``: "final" runs (default), "tune" runs, or None for
    both."""
    root = Path(path)
    folders = [root] if (root / "runs").is_dir() else sorted(
        p.parent for p in root.glob("*/suite.json"))
    if not folders:
        raise FileNotFoundError(f"no results in {root}: expected a suite folder (with runs/) "
                                "or a results root (with <suite>/suite.json)")
    runs, curves = [], []
    for folder in folders:
        store = Store(folder)
        frame, trajectories = store.runs_and_trajectories(stage)
        if frame.empty:
            continue
        runs.append(frame.assign(suite=folder.name))
        if not trajectories.empty:
            curves.append(trajectories[trajectories["run_id"].isin(frame["run_id"])])
    return Results(pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
                   pd.concat(curves, ignore_index=True) if curves else pd.DataFrame())
