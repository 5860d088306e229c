"""The report of a plain suite (``saddlebench run``): each method's difference from the
reference method with its 95 % interval, curves over steps, and the ε-paper column only for
methods from a paper."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reports.render import (
    paper_epsilons,
    reference_deltas,
    reference_label,
    training_curves,
)

SEEDS = (0, 1, 2)


def runs_of(label: str, algorithm: str, eps: float, values: list[float], n: int = 1000
            ) -> list[dict[str, object]]:
    return [{"run_id": f"{label}-{eps}-{n}-{s}", "problem": "strict_saddle", "label": label,
             "algorithm": algorithm, "epsilon": eps, "seed": s, "status": "done",
             "p_prob_n": n, "final_grad_norm": v} for s, v in zip(SEEDS, values, strict=True)]


def test_delta_vs_the_reference_is_welchs_interval_per_variant_and_epsilon() -> None:
    ref = [0.10, 0.12, 0.11]
    private = [0.30, 0.36, 0.33]
    runs = pd.DataFrame([*runs_of("sgd", "sgd", math.inf, ref),
                         *runs_of("dp_sgd", "dp_sgd", 2.0, private),
                         *runs_of("sgd", "sgd", math.inf, [1.0, 1.1, 1.2], n=4000),
                         *runs_of("dp_sgd", "dp_sgd", 2.0, [2.0, 2.2, 2.4], n=4000)])
    assert reference_label(runs) == "sgd"
    rows = reference_deltas(runs, "sgd")
    assert [r[0] for r in rows] == ["strict_saddle (n=1000)", "strict_saddle (n=4000)"]
    a, b = np.array(private), np.array(ref)
    va, vb = a.var(ddof=1) / 3, b.var(ddof=1) / 3
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    delta = a.mean() - b.mean()
    assert rows[0][2:] == ["dp_sgd", "ε=2", f"{delta:.3g} [{delta - half:.3g}, "
                                             f"{delta + half:.3g}]", "3 vs 3"]


def test_no_reference_where_every_method_is_private() -> None:
    runs = pd.DataFrame([*runs_of("dp_sgd", "dp_sgd", 2.0, [1.0, 1.1, 1.2]),
                         *runs_of("noisy_sgd", "noisy_sgd", 2.0, [1.0, 1.1, 1.2])])
    assert reference_label(runs) is None


def test_the_paper_epsilon_only_for_methods_from_a_paper() -> None:
    privacy = pd.DataFrame({"label": ["dp_sgd", "momentum"], "eps_paper": [2.2, 2.3]})
    runs = pd.DataFrame({"label": ["dp_sgd", "momentum"],
                         "algorithm": ["dp_sgd", "dp_sgd_momentum"]})  # a plugin, no paper
    out = paper_epsilons(privacy, runs)
    assert out["eps_paper"].iloc[0] == pytest.approx(2.2) and math.isnan(out["eps_paper"].iloc[1])


class Trajectories:
    """A store with trajectories only (what :func:`training_curves` reads)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def trajectories(self) -> pd.DataFrame:
        return self.frame


def test_training_curves_draw_a_panel_per_problem_and_method(tmp_path: Path) -> None:
    runs = pd.DataFrame([*runs_of("sgd", "sgd", math.inf, [0.1, 0.1, 0.1]),
                         *runs_of("dp_sgd", "dp_sgd", 2.0, [0.3, 0.3, 0.3])])
    traj = pd.DataFrame([{"run_id": r, "step": t, "point": "iterate", "loss": 1.0 / (1 + t)}
                         for r in runs["run_id"] for t in (0, 10, 20)])
    name = training_curves(Trajectories(traj), runs, tmp_path)  # type: ignore[arg-type]
    assert name == "curves.png"
    assert all((tmp_path / f).is_file() for f in ("curves.png", "curves.pdf",
                                                  "curves_column.pdf"))
    assert training_curves(Trajectories(pd.DataFrame()), runs, tmp_path) is None  # type: ignore[arg-type]
