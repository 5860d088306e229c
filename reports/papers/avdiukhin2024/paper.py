"""avdiukhin2024, "Noise is All You Need": claims P1–P6 and T1p, T2, T4, T5, T8 (and the
implementation check T1) declared as data; the prose (statements, remedies, captions,
notes) is in ``paper.yaml``, the paper's own measures and the thresholds of its vague
statements (each with its source) in :mod:`.measures`, the figures and tables in
:mod:`.sections`.

Experiment files say which part of the page they feed with ``role:`` (:data:`ROLES`):
``fig1`` / ``fig2`` (test accuracy of noisy SGD over the ε grid beside SGD), ``fig3a``
(training accuracy), ``fig3b`` (C from Lemma 3.2 instead of the empirical C), ``saddle``
(the synthetic check of the theorems on ``strict_saddle``, started at its saddle).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from reports.claims import (
    Claim,
    Control,
    Paper,
    PaperSetting,
    Runs,
    Statistic,
    along,
    numeric,
    per_run,
    span,
)
from reports.papers.avdiukhin2024 import measures
from reports.papers.avdiukhin2024.measures import TEXT
from reports.papers.avdiukhin2024.sections import sections
from reports.results import PaperResults
from reports.rules import Always, AtMost, Fraction, Monotone, NonInferior, Sample

KEY = "avdiukhin2024"
ROLES = {role: TEXT[f"roles.{role}"] for role in TEXT.section("roles")}
RESOLUTIONS = tuple(tuple(text.format_map(TEXT.values) for text in row)
                    for row in TEXT.texts["resolutions"])
Test = Callable[[pd.DataFrame, PaperResults], pd.Series]  # a per-run property

NOISY = {"algorithm": "noisy_sgd"}
EMPIRICAL_C = {**NOISY, "p_alg_bound_rule": lambda c: c.fillna("given").ne("lemma_3_2")}
NOISE_FREE_SGD = {"algorithm": "sgd", "p_prob_sigma1": 0.0, "p_prob_sigma2": 0.0}
PAPER_CALIBRATED = {"algorithm": "noisy_sgd", "calibration": "paper"}
BY_EPSILON = ("problem", "calibration", "epsilon")
SADDLE_BY = ("label", "p_prob_sigma1", "epsilon")
WITHIN_BOUND = TEXT.premise("within_bound", measures.within_bound)
AT_SADDLE = TEXT.premise("at_saddle", measures.at_saddle)
CIFAR10_CNN = PaperSetting(TEXT["settings.cifar10_cnn"], ("cifar10_cnn",))
PAPER_MODELS = PaperSetting(TEXT["settings.paper_models"], (
    "cifar10_cnn", "cifar10_resnet18", "cifar100_resnet18", "cola_bert"))


def _statistic(claim_id: str, compute: Callable[[pd.DataFrame, PaperResults], Sample]
               ) -> Statistic:
    """Claim ``claim_id``'s statistic: the sample ``compute`` returns."""
    return Statistic(TEXT[f"claims.{claim_id}.statistic"], compute)


def _rate(claim_id: str, test: Test) -> Statistic:
    """Claim ``claim_id``'s statistic: the runs for which ``test`` holds (0/1 per run)."""
    return per_run(TEXT[f"claims.{claim_id}.statistic"], test)


def _monotone(claim_id: str, role: str, figure: str, setting: PaperSetting | str,
              metric: str = "test_acc", keep: Any = None) -> Claim:
    """Final accuracy of noisy SGD (empirical C) weakly increasing in ε, for one figure
    (``setting``: one of the sidecar's ``settings``, or the setting itself)."""
    if isinstance(setting, str):
        setting = PaperSetting(TEXT[f"settings.{setting}"], (setting,))
    return TEXT.claim(
        claim_id, figure, Runs((role,), EMPIRICAL_C, by=("problem", "calibration"), keep=keep),
        along(metric, "epsilon", 100, "%"), Monotone(measures.MONOTONE_TOL_PP, axis="ε"),
        kind="paper", setting=setting)


def _control(key: str, test: Test, rule: str) -> Control:
    """Noise-free SGD at the exact saddle, as ``controls.<key>`` expects."""
    return Control(TEXT[f"controls.{key}.name"], Runs(("saddle",), NOISE_FREE_SGD),
                   TEXT[f"controls.{key}.expect"],
                   per_run(TEXT[f"controls.{key}.statistic"], test), Always(rule))


CLAIMS = (
    # -- accuracy (P1–P6: §4, Figures 1–3, Appendix A) ------------------------------------
    TEXT.claim("P3", "Figure 3(a)",
               Runs(measures.EMPIRICAL_ROLES, EMPIRICAL_C, by=BY_EPSILON,
                    keep=measures.judged_data),
               _statistic("P3", measures.share_within_bound),
               Fraction(measures.BOUND_PROB, event="every per-sample norm ≤ C"), kind="paper",
               setting=PAPER_MODELS),
    _monotone("P1", "fig1", "Figure 1(a)", CIFAR10_CNN,
              keep=lambda r: measures.judged_data(r) & measures.trained(r)),
    _monotone("P1b", "fig1b", "Figure 1(b)", "cifar10_resnet18"),
    _monotone("P1c", "fig2a", "Figure 2(a)", "cifar100_resnet18"),
    _monotone("P1d", "fig2b", "Figure 2(b)", "cola_bert"),
    TEXT.claim("P2", "Figure 1(a)",
               Runs(("fig1",), {"algorithm": "dp_sgd", "epsilon": [4.0, 8.0],
                                "calibration": lambda c: c.ne("paper")},
                    by=BY_EPSILON, keep=measures.judged_data),
               _statistic("P2", measures.private_minus_sgd),
               NonInferior(measures.GAP_PP, TEXT["claims.P2.margin"], what="accuracy difference"),
               premises=(TEXT.premise("same_c", measures.same_c),), kind="paper", headline=True,
               setting=CIFAR10_CNN),
    TEXT.claim("P4", "Figure 3(b)",
               Runs(("fig3b",), {**NOISY, "p_alg_bound_rule": "lemma_3_2"}, by=BY_EPSILON),
               _statistic("P4", measures.lemma_minus_empirical),
               AtMost(0.0, what="accuracy difference"), kind="paper", setting=CIFAR10_CNN),
    _monotone("P5", "fig3a", "Figure 3(a)", CIFAR10_CNN, "train_acc"),
    TEXT.claim("P6", "Appendix A",
               Runs(("lr_sweep",), {**NOISY, "p_alg_lr": lambda c: c > measures.PAPER_LR},
                    by=("problem", "epsilon")),
               _rate("P6", measures.failed_to_converge),
               Fraction(measures.WHP, event="no convergence"), include_diverged=True,
               premises=(TEXT.premise("paper_model", measures.paper_model),), kind="paper",
               setting=CIFAR10_CNN),
    # -- theorems (T1, T1p, T2: Theorem 3.3; T4, T5: Theorem 3.4; T8: §3.4) ---------------
    TEXT.claim("T1", "Theorem 3.3",
               Runs((*measures.ACCURACY_ROLES, "saddle"), PAPER_CALIBRATED, by=("problem",)),
               _rate("T1", measures.calibrated),
               Always("σ·(ε − ε_s) = c₂B√(T ln(1/δ))/n and ε spent = ε planned"),
               kind="implementation"),
    TEXT.claim("T1p", "Theorem 3.3",
               Runs((*measures.ACCURACY_ROLES, "saddle"), PAPER_CALIBRATED,
                    by=("problem", "batch_size", "steps", "epsilon")),
               _statistic("T1p", measures.spent),
               Always(f"ε spent ≤ {measures.OVERSPEND:g} × ε target"),
               include_diverged=True, kind="paper", headline=True),
    TEXT.claim("T2", "Theorem 3.3",
               Runs(("saddle",), {**NOISY, "p_alg_select": lambda c: c.astype(object).ne(True)},
                    by=("p_prob_sigma1", "epsilon")),
               _rate("T2", measures.identical), Always("bitwise-equal outputs"),
               premises=(WITHIN_BOUND, TEXT.premise("same_clip", measures.same_clip)),
               kind="paper"),
    TEXT.claim("T4", "Theorem 3.4", Runs(("saddle",), NOISY, by=SADDLE_BY),
               _rate("T4", measures.escaped), Fraction(measures.ESCAPE_PROB, event="escape"),
               premises=(AT_SADDLE,), kind="paper",
               controls=(_control("escape", lambda r, res: ~measures.escaped(r, res),
                                  "output λ_min ≤ −√(ρα)"),)),
    TEXT.claim("T5", "Theorem 3.4", Runs(("saddle",), NOISY, by=SADDLE_BY),
               _rate("T5", lambda r, res: measures.sosp_share(r, res) >= 0.5),
               Fraction(measures.WHP, event="≥ half the iterates are α-SOSPs"),
               premises=(TEXT.premise("horizon", measures.horizon), AT_SADDLE), kind="paper",
               controls=(_control("sosp", lambda r, res: measures.sosp_share(r, res) == 0,
                                  "no α-SOSP iterate"),), headline=True),
    TEXT.claim("T8", "§3.4 (private SOSP selection)",
               Runs(("saddle",), {**NOISY, "p_alg_select": True},
                    by=("p_prob_sigma1", "epsilon")),
               _rate("T8", measures.selected_sosp),
               Fraction(measures.WHP, event="selected a 4α-SOSP"), premises=(WITHIN_BOUND,),
               kind="paper"))

STAND_IN = tuple(next(c for c in CLAIMS if c.id == i) for i in ("P1", "P2", "P3"))  # on digits

# -- regime: the paper's setting beside ours ------------------------------------------------

REGIME = (
    TEXT.regime("noise_to_bound", measures.per_problem(
        measures.noise_per_bound,
        lambda r: (r["calibration"] == "paper") & np.isclose(r["epsilon"], 4.0),
        " (fig1 runs at ε = 4)"), lead=True),
    TEXT.regime("per_pass", measures.per_problem(
        lambda r: span(numeric(r, "n") / numeric(r, "batch_size"))), lead=True),
    TEXT.regime("passes", measures.per_problem(
        lambda r: span(numeric(r, "steps") * numeric(r, "batch_size") / numeric(r, "n")))),
    TEXT.regime("horizon", measures.horizon_ratio))

PAPER = Paper(key=KEY, title=TEXT["title"], source=TEXT["source"], claims=CLAIMS, roles=ROLES,
              sections=partial(sections, stand_in=STAND_IN), resolutions=RESOLUTIONS,
              regime=REGIME, text=TEXT)
