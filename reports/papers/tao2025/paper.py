"""tao2025, Gauss-PSGD over an adaptive DP-SPIDER oracle (and its distributed form):
whether Figures 1-2 can show the escape mechanism at the paper's own settings (E0, a study),
Figures 1-2 (accuracy and loss per pass; claims E1-E6), Theorem 1 on a strict saddle (T4),
the escape probability of Lemma 1 / Corollary 1 (T5) and Remark 4's price of private
selection in high dimension (T9), declared once as :data:`PAPER`; its prose (statements,
premises, roles, regime, tables, captions) is in ``tao2025.yaml``, App. E's settings and
the E0 study in ``bench/studies/tao2025.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.studies import tao2025 as app_e
from bench.studies.tao2025 import PAPER_CHI, PAPER_D, PAPER_DATA, PAPER_N, paper_d, trigger_study
from reports.claims import (
    Control,
    Paper,
    PaperSetting,
    Premise,
    Regime,
    Runs,
    Statistic,
    along,
    difference,
    numeric,
    paired_or_welch,
    per_run,
    stand_in_findings,
)
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import calibration_table, deviations, settings
from reports.prose import Prose
from reports.results import Figure, PaperResults, PaperSections, Provenance
from reports.rules import Always, AtLeast, AtMost, Fraction, NonInferior, Rule, Sample, Trend

OURS, BASELINE, ALG4 = "gauss_psgd", "dp_spider_at", "dp_spider_at+alg4"
EXTRA = "gauss_psgd+escape_noise"  # T10: Gauss-PSGD with [29]'s extra escape noise
FIGURES, FIGURES_REAL, REFERENCES = "figures", "figures_real", "references"
TUNING, HORIZON, HORIZON_TUNING = "tuning", "horizon", "horizon_tuning"
CHI_SWEEP, CHI_SELECT, SADDLE, SELECTION = "chi_sweep", "chi_select", "saddle", "selection"
# The claims' regime: the O2 gain 2σMη√(d/m)/b₂ (the paper's ≈ 0.05) ≤ O2_GAIN_MAX in every
# Figures cell, which on the quick stand-in caps η at LR_REGIME_CAP (ε = 0.5, m = 1); the
# in-regime tuning grid stops at that cap, so a choice there is the constrained optimum.
O2_GAIN_MAX, LR_REGIME_CAP = 0.5, 0.1
CHANCE = 0.10  # 10 classes; a model "learns" at twice chance (the paper's curves: 60-90 %)
LEARNS = 2 * CHANCE
E6_TOLERANCE_PP = 1.0  # E6: a fall < 1 pp per doubling of m is no fall (declared a priori)
SELECTIVE = (0.05, 0.95)  # the comparison claims' regime: each escape test fires this often
PAPER_NOISE = 2 * app_e.PAPER_SIGMA * math.sqrt(PAPER_D) / app_e.PAPER_B1  # ‖ĝ‖ at App. E
PAPER_GAIN = 2 * app_e.PAPER_SIGMA * app_e.PAPER_LR * math.sqrt(PAPER_D) / app_e.PAPER_B2
# Real images: problem -> (data set, input features, the paper's lr); Fashion-MNIST has
# MNIST's format and size (MNIST itself is not packaged for Debian).
REAL_DATA = {"mnist_mlp": ("MNIST", *PAPER_DATA["MNIST"]),
             "fashion_mnist_mlp": ("Fashion-MNIST", *PAPER_DATA["MNIST"]),
             "cifar10_mlp": ("CIFAR-10", *PAPER_DATA["CIFAR-10"])}
TRIGGER_STUDY = "paper_scale_trigger"
T10_MARGIN = 0.1  # of α = 4χ: a share this code declared negligible a priori
ESCAPE_PROBABILITY = 1 / 8  # Corollary 1
Q_PAPER = 3  # Lemma 2: the output is an α-SOSP w.p. ≥ 1 − (7/8)^Q per trigger at a saddle
SOSP_PROBABILITY = math.floor(100 * (1 - (7 / 8) ** Q_PAPER)) / 100  # 0.33
REMARK4_EXPONENT = 6 / 13  # Remark 4: α′ ≲ α only for d ≤ (√m n ε)^(6/13)
# (fired, tests) of each method's escape test: Gauss-PSGD's trigger, the baseline's injection
TESTS = {OURS: ("diag_triggers", "diag_trigger_tests"),
         BASELINE: ("diag_escape_injections", "diag_injection_tests")}
DASHES = ("-", "--", ":", "-.")  # Figures 1-2: one per number of clients m
SETTING_KEYS = ["problem", "calibration", "p_prob_clients", "epsilon", "p_alg_epochs"]

TEXT = Prose.load(
    __file__, O2_GAIN_MAX=O2_GAIN_MAX, LR_REGIME_CAP=LR_REGIME_CAP, Q_PAPER=Q_PAPER,
    E6_TOLERANCE_PP=E6_TOLERANCE_PP, SOSP_PROBABILITY=SOSP_PROBABILITY, T10_MARGIN=T10_MARGIN,
    TRIGGER_SEEDS=app_e.TRIGGER_SEEDS, PAPER_CHI=PAPER_CHI, TRIGGER=3 * PAPER_CHI,
    PAPER_NOISE=PAPER_NOISE, NOISE_OVER_TRIGGER=PAPER_NOISE / (3 * PAPER_CHI),
    NOISE_LESS_G=PAPER_NOISE - 1, PAPER_GAIN=PAPER_GAIN, PAPER_D=PAPER_D,
    PAPER_PER_REFRESH=app_e.PAPER_KAPPA / (app_e.PAPER_LR * PAPER_NOISE) ** 2,
    PAPER_RATE=math.sqrt(PAPER_D) / PAPER_N, PAPER_STEPS=PAPER_N / app_e.PAPER_B2,
    CIFAR_D=paper_d(PAPER_DATA["CIFAR-10"][0]))
Verdict = tuple[bool | None, str]
Found = tuple[bool | None, dict[str, Any]] | None  # a premise's outcome and what it shows


# -- measures on run rows -----------------------------------------------------------------

def _of(runs: pd.DataFrame, label: str) -> pd.DataFrame:
    return runs[runs["label"] == label] if "label" in runs else runs.iloc[0:0]


def _done(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "done"] if not runs.empty else runs


def _rho(runs: pd.DataFrame) -> pd.Series:
    """The cosine saddle's Hessian-Lipschitz constant ρ ≤ λ + 0.859μ + 0.770σ₂."""
    return numeric(runs, "p_prob_lam") + 0.859 * numeric(runs, "p_prob_mu") \
        + 0.770 * numeric(runs, "p_prob_sigma2").fillna(0.0)


def run_chi(runs: pd.DataFrame) -> pd.Series:
    """Each run's χ (Theorem 1's α = 4χ): used, else set, else a third of γ_small = 3χ."""
    return numeric(runs, "diag_chi").fillna(numeric(runs, "p_alg_chi")).fillna(
        numeric(runs, "diag_trigger_threshold") / 3)


def is_sosp(runs: pd.DataFrame, alpha: pd.Series | float) -> pd.Series:
    """‖∇F(x)‖ ≤ α and λ_min(∇²F(x)) ≥ −√(ρα) (Definition 2)."""
    return (numeric(runs, "final_grad_norm") <= alpha) & (
        numeric(runs, "final_lambda_min") >= -np.sqrt(_rho(runs) * alpha))


def violation(runs: pd.DataFrame) -> pd.Series:
    """α̂(x) = max(‖∇F‖, max(0, −λ_min)²/ρ): x is an α-SOSP iff α̂ ≤ α (liu2024 notes §5)."""
    curvature = np.maximum(0.0, -numeric(runs, "final_lambda_min")) ** 2 / _rho(runs)
    return np.maximum(numeric(runs, "final_grad_norm"), curvature)


def _clients(runs: pd.DataFrame) -> pd.Series:
    return numeric(runs, "p_prob_clients").fillna(1.0)


def remark4_threshold(runs: pd.DataFrame) -> pd.Series:
    """(√m n ε)^(6/13), n the records per client: T9's scope is d above it."""
    m = _clients(runs)
    return (np.sqrt(m) * numeric(runs, "p_prob_n") / m * runs["epsilon"].astype(float)
            ) ** REMARK4_EXPONENT


def _above_threshold(runs: pd.DataFrame) -> pd.Series:
    return numeric(runs, "p_prob_d") > remark4_threshold(runs)


def _calls(runs: pd.DataFrame) -> pd.Series:
    return numeric(runs, "diag_refreshes") + numeric(runs, "diag_differences")


def per_client(runs: pd.DataFrame) -> pd.Series:
    """Records each client trains on: ``records`` (Option A) where set, else n/m."""
    return numeric(runs, "p_alg_records").fillna(numeric(runs, "n") / _clients(runs))


def dimension(runs: pd.DataFrame) -> pd.Series:
    """d: the problem's, else Gauss-PSGD's record, else the MLP's on real images."""
    features = runs["problem"].map(lambda p: REAL_DATA.get(p, ("", math.nan, 0.0))[1]) \
        if "problem" in runs else pd.Series(math.nan, index=runs.index)
    hidden = numeric(runs, "p_prob_hidden")
    return numeric(runs, "p_prob_d").fillna(numeric(runs, "diag_d")).fillna(
        (features.astype(float) + 1) * hidden + (hidden + 1) * 10)


def o1_noise_to_signal(runs: pd.DataFrame) -> pd.Series:
    """Norm of the averaged O1 privacy noise over the clip G: 2σ√(d/m)/b₁."""
    return 2 * numeric(runs, "sigma") * np.sqrt(dimension(runs) / _clients(runs)) \
        / numeric(runs, "p_alg_batch_refresh")


def o2_gain(runs: pd.DataFrame) -> pd.Series:
    """O2 noise added per recursion step over ‖ĝ‖ (‖Δx‖ = η‖ĝ‖): 2σMη√(d/m)/b₂."""
    return 2 * numeric(runs, "sigma") * numeric(runs, "p_alg_diff_clip") \
        * numeric(runs, "p_alg_lr") * np.sqrt(dimension(runs) / _clients(runs)) \
        / numeric(runs, "p_alg_batch_diff")


def is_real(runs: pd.DataFrame) -> pd.Series:
    """Runs on real images at the paper's d (:data:`REAL_DATA`)."""
    return runs["problem"].isin(REAL_DATA) if "problem" in runs else pd.Series(
        False, index=runs.index)


def judged_data(runs: pd.DataFrame) -> pd.Series:
    """The Figures runs E3 and E6 read: on real images wherever any ran, else the stand-in."""
    real = is_real(runs)
    return real if real.any() else ~real


def _pairs(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` of Gauss-PSGD and the baseline side by side, paired by seed."""
    return pd.concat({side: _of(runs, label).set_index("seed")[column] for side, label in
                      (("ours", OURS), ("base", BASELINE))}, axis=1, join="inner").astype(float)


def identical_pairs(runs: pd.DataFrame) -> tuple[int, int]:
    """Seed pairs whose final test accuracy and loss are identical, and all seed pairs."""
    acc, loss = _pairs(runs, "final_test_acc"), _pairs(runs, "final_test_loss")
    same = (acc["ours"] == acc["base"]) & (loss["ours"] == loss["base"])
    return int(same.sum()), len(same)


def _fired(runs: pd.DataFrame, label: str) -> tuple[float, str]:
    """The pooled share of ``label``'s escape tests that fired, and how it reads."""
    hits, total = (numeric(runs, column) for column in TESTS[label])
    known = total > 0
    if not known.any():
        return math.nan, "not recorded"
    rate, each = float(hits[known].sum() / total[known].sum()), hits[known] / total[known]
    return rate, (f"{100 * rate:.0f} % (runs {100 * each.min():.0f}–{100 * each.max():.0f} %, "
                  f"{int(known.sum())} runs)")


def _fired_of(runs: pd.DataFrame, label: str) -> str:
    """'k/n': ``label``'s escape tests that fired over its tests, '–' without its runs."""
    part = _of(runs, label)
    fired, tests = (numeric(part, column).sum() for column in TESTS[label])
    return "–" if part.empty else f"{fired:.0f}/{tests:.0f}"


def tuned_lr(results: PaperResults, role: str = TUNING) -> dict[str, tuple[float, str]]:
    """algorithm -> (lr chosen by the ``role`` tuning suite, grid edge it sits on or "")."""
    return {str(entry["group"]).split("/")[1]: (float(entry["chosen"]["lr"]),
                                                (entry.get("edges") or {}).get("lr", ""))
            for meta in results.suites if role in (meta.get("roles") or ())
            for entry in meta.get("tuning") or ()
            if (entry.get("chosen") or {}).get("lr") is not None}


# -- premises -----------------------------------------------------------------------------

def _premise(key: str, check: Callable[[pd.DataFrame, PaperResults], Found]) -> Premise:
    """Premise ``key``: ``check`` is None where not recorded (``premises.<key>.missing``),
    else (passed, the values ``premises.<key>.measured`` shows)."""
    def checked(runs: pd.DataFrame, results: PaperResults) -> Verdict:
        found = check(runs, results)
        if found is None:
            return None, TEXT[f"premises.{key}.missing"]
        return found[0], TEXT.fill(f"premises.{key}.measured", **found[1])

    return TEXT.premise(key, checked)


def _span(values: pd.Series) -> dict[str, Any]:
    return {"low": values.min(), "high": values.max(), "runs": len(values)}


def _at_paper_settings(rows: pd.DataFrame, _: PaperResults) -> Found:
    paper = {"d": sorted(paper_d(f) for f, _ in PAPER_DATA.values()), "chi": [PAPER_CHI],
             "b1": [app_e.PAPER_B1], "n_per_client": [PAPER_N],
             "passes": [app_e.PAPER_PASSES], "calibration": ["paper"]}
    if rows.empty or not set(paper) <= set(rows):
        return None
    found = {column: sorted(set(rows[column])) for column in paper}
    return found == paper, {"found": "; ".join(
        f"{column} " + ", ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in values)
        for column, values in found.items())}


def _learns(runs: pd.DataFrame, _: PaperResults) -> Found:
    acc = numeric(runs, "final_test_acc").dropna()
    mean = float(acc.mean())
    return None if acc.empty else (mean >= LEARNS, {**_span(100 * acc), "mean": 100 * mean,
                                                    "bound": 100 * LEARNS})


def _trigger_can_fire(runs: pd.DataFrame, _: PaperResults) -> Found:
    ours = _of(runs, OURS)
    noise, limit = numeric(ours, "diag_noise_norm_o1"), numeric(ours, "diag_trigger_threshold")
    if noise.isna().all() or limit.isna().all():
        return None
    above = noise >= limit
    return not bool(above.any()), {**_span(noise), "runs": len(ours), "limit": limit.max(),
                                   "above": int(above.sum()),
                                   "fired": int(numeric(ours, "diag_triggers").fillna(0).sum())}


def _selective(runs: pd.DataFrame, _: PaperResults) -> Found:
    (ours, ours_text), (base, base_text) = (_fired(_of(runs, label), label)
                                            for label in (OURS, BASELINE))
    passed = None if math.isnan(ours) or math.isnan(base) else all(
        SELECTIVE[0] < r < SELECTIVE[1] for r in (ours, base))
    return passed, {"ours": ours_text, "base": base_text, "low": 100 * SELECTIVE[0],
                    "high": 100 * SELECTIVE[1]}


def _recursion_runs(runs: pd.DataFrame, _: PaperResults) -> Found:
    diff, refresh = numeric(runs, "diag_differences"), numeric(runs, "diag_refreshes")
    never = diff.fillna(0) == 0
    return None if diff.isna().all() else (not bool(never.any()), {
        "refreshes": int(refresh.sum()), "differences": int(diff.sum()),
        "never": int(never.sum()), "runs": len(runs)})


def _methods_differ(runs: pd.DataFrame, _: PaperResults) -> Found:
    same, pairs = identical_pairs(runs)
    return (same < pairs, {"same": same, "pairs": pairs}) if pairs else None


def _room_to_escape(runs: pd.DataFrame, _: PaperResults) -> Found:
    ours = _of(runs, OURS)
    episode = numeric(ours, "p_alg_escape_steps") * numeric(ours, "p_alg_escape_rounds")
    taken = numeric(runs, "prem_steps_taken")
    steps = taken if taken.notna().any() else _calls(runs)
    if steps.isna().all() or episode.isna().all():
        return None
    cap = numeric(runs, "prem_data_exhausted_at")
    short = steps < float(episode.max())
    return not bool(short.any()), {
        **_span(steps), "need": float(episode.max()), "short": int(short.sum()),
        "cap": TEXT.fill("premises.room.cap", t=cap.min()) if cap.notna().any() else ""}


def _n_per_client_fixed(runs: pd.DataFrame, _: PaperResults) -> Found:
    per = per_client(runs).dropna()
    if per.empty:
        return None
    fixed = float(per.max()) <= 1.01 * float(per.min())
    by_m = per.groupby(numeric(runs, "p_prob_clients")).mean()
    return fixed, {"by_m": ", ".join(f"{v:.0f} (m = {m:g})" for m, v in by_m.items()),
                   "option_b": "" if fixed else TEXT["premises.option_a.b"]}


def _sosp_exit(runs: pd.DataFrame, _: PaperResults) -> Found:
    ours = _of(runs, OURS)
    if "diag_termination" not in ours or ours["diag_termination"].isna().all():
        return None
    ends = ours["diag_termination"].value_counts()
    exited = int(sum(ends.get(end, 0) for end in ("sosp", "data (escape)", "steps (escape)")))
    return exited == len(ours), {"exited": exited, "runs": len(ours), "ends": ", ".join(
        f"{k}: {v}" for k, v in ends.items())}


def _paper_rounds(runs: pd.DataFrame, _: PaperResults) -> Found:
    q = numeric(_of(runs, OURS), "p_alg_escape_rounds").dropna()
    return None if q.empty else (bool((q == Q_PAPER).all()), {
        "q": ", ".join(f"{v:g}" for v in sorted(set(q)))})


def _rounds_ran(runs: pd.DataFrame, _: PaperResults) -> Found:
    ours = _of(runs, OURS)
    rounds = numeric(ours, "diag_escape_rounds")
    return None if rounds.isna().all() else (bool(rounds.sum() > 0), {
        "rounds": int(rounds.sum()), "triggers": int(numeric(ours, "diag_triggers").sum()),
        "runs": len(ours)})


def _anchor_is_saddle(runs: pd.DataFrame, _: PaperResults) -> Found:
    lam = numeric(runs, "prem_anchor_lambda_min")
    return None if lam.isna().all() else (bool((lam < 0).all()), _span(lam))


def _within(suffix: str) -> Callable[[pd.DataFrame, PaperResults], Found]:
    """Per-sample norms within the clip (G: ``suffix`` "", M·‖Δx‖: "_diff")."""
    def check(runs: pd.DataFrame, _: PaperResults) -> Found:
        worst = numeric(runs, f"prem_max_per_sample_norm{suffix}")
        limit = numeric(runs, f"prem_clip_bound{suffix}")
        over = worst > limit * (1 + 1e-6)
        return None if worst.isna().all() else (not bool(over.any()), {
            "worst": worst.max(), "limit": limit.max(), "over": int(over.sum()),
            "runs": len(runs)})

    return check


def _o2_gain_small(runs: pd.DataFrame, _: PaperResults) -> Found:
    gain = o2_gain(runs).dropna()
    return None if gain.empty else (bool((gain <= O2_GAIN_MAX).all()), _span(gain))


def _paper_run(runs: pd.DataFrame, _: PaperResults) -> Verdict:
    """d, n per client, χ and lr against App. E's for the setting's network."""
    features, lr = REAL_DATA[str(runs["problem"].iloc[0])][1:]
    paper = {"d": paper_d(features), "n per client": PAPER_N, "χ": PAPER_CHI, "lr": lr}
    found = {"d": dimension(runs), "n per client": per_client(runs), "χ": run_chi(runs),
             "lr": numeric(runs, "p_alg_lr")}
    parts, ok = [], True
    for name, values in found.items():
        values = values.dropna()
        if values.empty:
            return None, f"{name} not recorded"
        ok &= bool(np.isclose(values, paper[name], rtol=1e-9, atol=0).all())
        parts.append(f"{name} {', '.join(f'{v:,g}' for v in sorted(set(values)))} (paper "
                     f"{paper[name]:,g})")
    return ok, "; ".join(parts)


def _above_remark4(runs: pd.DataFrame, _: PaperResults) -> Found:
    if "p_prob_d" not in runs:
        return None
    d, threshold = float(runs["p_prob_d"].max()), float(remark4_threshold(runs).max())
    return d > threshold, {"d": d, "threshold": threshold}


def _lr_is_tuned(runs: pd.DataFrame, results: PaperResults) -> Verdict:
    chosen = tuned_lr(results)
    if not chosen:
        return None, "no tuning suite ran"
    parts, ok = [], True
    for algorithm, part in runs.groupby("algorithm"):
        lrs = sorted(set(numeric(part, "p_alg_lr").dropna()))
        lr, edge = chosen.get(str(algorithm), (math.nan, ""))
        at_cap = edge == "upper" and math.isclose(lr, LR_REGIME_CAP)
        ok &= lrs == [lr] and (not edge or at_cap)
        parts.append(f"{algorithm}: lr {', '.join(f'{v:g}' for v in lrs)} vs tuned {lr:g}"
                     + (" (the regime cap: constrained optimum)" if at_cap else
                        f" (on the {edge} grid edge)" if edge else ""))
    return ok, "; ".join(parts)


def only_on(real: bool, premise: Premise) -> Premise:
    """``premise`` on real images (or on the stand-in); vacuous, and said so, elsewhere."""
    scope = "real images" if real else "the stand-in"

    def check(runs: pd.DataFrame, results: PaperResults) -> Verdict:
        if bool(is_real(runs).all()) != real:
            return True, f"does not apply: not {scope}"
        return premise.check(runs, results)

    return Premise(f"on {scope}: {premise.name}", check, premise.remedy)


PAPER_SETTINGS_P = _premise("paper_settings", _at_paper_settings)
SELECTIVE_P = _premise("selective", _selective)
LEARNS_P = _premise("learns", _learns)
TRIGGER_P = _premise("trigger", _trigger_can_fire)
RECURSION_P = _premise("recursion", _recursion_runs)
DIFFER_P = _premise("differ", _methods_differ)
ROOM_P = _premise("room", _room_to_escape)
OPTION_A_P = _premise("option_a", _n_per_client_fixed)
SOSP_EXIT_P = _premise("sosp_exit", _sosp_exit)
ROUNDS_P = _premise("rounds", _paper_rounds)
RAN_P = _premise("ran", _rounds_ran)
ANCHOR_P = _premise("anchor", _anchor_is_saddle)
BOUND_P = _premise("bound", _within(""))
SMOOTH_P = _premise("smooth", _within("_diff"))
O2_GAIN_P = _premise("o2_gain", _o2_gain_small)
PAPER_RUN_P = TEXT.premise("paper_run", _paper_run)
REMARK4_P = _premise("remark4", _above_remark4)
LR_TUNED_P = TEXT.premise("lr_tuned", _lr_is_tuned)
ENGAGED = (TRIGGER_P, RECURSION_P, O2_GAIN_P, ROOM_P)  # Gauss-PSGD's own mechanism acts
COMPARE = (LEARNS_P, LR_TUNED_P, *ENGAGED, DIFFER_P, SELECTIVE_P)
# E3 and E6 on real images at the paper's own settings (where the escape test cannot fire,
# claim E0, as in the paper's own runs), else on the stand-in in its declared regime
FIGURES_REGIME = (LEARNS_P, only_on(True, PAPER_RUN_P), only_on(False, LR_TUNED_P),
                  only_on(False, TRIGGER_P), RECURSION_P, O2_GAIN_P, ROOM_P)


# -- statistics ---------------------------------------------------------------------------

def _trigger_bound(rows: pd.DataFrame, _: PaperResults) -> Sample:
    """Per draw of the study: can the escape test fire on an O1 answer (‖ξ̄‖ − G ≤ 3χ)?"""
    if "can_fire" not in rows or rows.empty:
        return Sample.of([])
    cell = rows[(rows["data"] == "MNIST") & np.isclose(rows["epsilon"], 1.0)
                & (rows["clients"] == 1)]
    cell = cell if not cell.empty else rows
    return Sample.of(rows["can_fire"].astype(float).to_numpy(), note=TEXT.fill(
        "statistics.trigger_bound", one=cell.iloc[0], drawn_min=cell["noise_norm"].min(),
        drawn_max=cell["noise_norm"].max(), draws=len(rows), b1_max=rows["b1_max"].min(),
        bound_min=rows["lower_bound"].min(), bound_max=rows["lower_bound"].max(),
        least=rows.sort_values("lower_bound").iloc[0]))


def _gap_at(runs: pd.DataFrame) -> np.ndarray:
    """Per seed: Gauss-PSGD's final test accuracy − the baseline's, in pp."""
    pairs = _pairs(runs, "final_test_acc")
    return (100 * (pairs["ours"] - pairs["base"])).to_numpy(float)


def _widening(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """The per-seed accuracy gap at this m against the gap at m = 1 (same cell otherwise)."""
    every, first = results.role_runs(FIGURES), runs.iloc[0]
    ref = every[(every["p_prob_clients"] == 1) & (every["status"] == "done")
                & (every["problem"] == first["problem"])
                & (every["calibration"] == first["calibration"])
                & np.isclose(every["epsilon"], float(first["epsilon"]))]
    if "diverged" in ref:
        ref = ref[~ref["diverged"].astype(bool)]
    return Sample.of(_gap_at(runs), _gap_at(ref).tolist(), unit="pp")


def per_pass(rows: pd.DataFrame, upto: float | None = None) -> pd.DataFrame:
    """Iterate rows at whole passes (epochs rounded: evaluations fall just after each pass).
    A run that returned its output before pass ``upto`` (default: the last pass any run
    reached), as Gauss-PSGD returns x̃ at the SOSP exit, is evaluated at that output at
    every later pass (notes §6: the curve stays flat), so that no mean over runs drops it."""
    rows = rows[rows["epoch"].notna()].assign(epoch=rows["epoch"].round())
    iterates = rows[rows["point"] == "iterate"]
    last = iterates["epoch"].max() if upto is None else upto
    reached = iterates.groupby("run_id")["epoch"].max()
    carried = [{**output, "point": "iterate", "epoch": float(epoch)}
               for output in rows[rows["point"] == "output"].drop_duplicates(
                   "run_id", keep="last").to_dict("records")
               for epoch in np.arange(reached.get(output["run_id"], -1.0) + 1, last + 1)]
    return pd.concat([iterates, pd.DataFrame(carried)], ignore_index=True) if carried \
        else iterates


def _by_seed(runs: pd.DataFrame, label: str, values: pd.Series) -> pd.Series:
    """``values`` (aligned with ``runs``) of the runs of ``label``, indexed by seed."""
    mine = runs["label"] == label
    return pd.Series(values[mine].to_numpy(float), index=runs.loc[mine, "seed"])


def _first_pass_loss(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Test loss after one pass (or at an earlier output), Gauss-PSGD − baseline."""
    traj = results.trajectories
    if traj.empty or "epoch" not in traj:
        return Sample.of([])
    rows = per_pass(traj[traj["run_id"].isin(runs["run_id"])], upto=1)
    rows = rows[rows["epoch"].eq(1)]
    first = rows.sort_values("step").drop_duplicates("run_id").set_index("run_id")["test_loss"]
    meta = runs.set_index("run_id").reindex(first.index)
    return paired_or_welch(_by_seed(meta, OURS, first), _by_seed(meta, BASELINE, first))


def output_is_sosp(label: str) -> Statistic:
    """Per run of ``label``: its output is an α-SOSP at Theorem 1's α = 4χ (its own χ)."""
    return per_run("output is an α-SOSP, α = 4χ",
                   lambda runs, _: is_sosp(mine := _of(runs, label), 4 * run_chi(mine)))


def _escape_rounds(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """One value per escape round: 1 if it reached ‖x − x̃‖ ≥ R."""
    ours = _of(runs, OURS)
    rounds = int(numeric(ours, "diag_escape_rounds").fillna(0).sum())
    escapes = int(numeric(ours, "diag_escapes").fillna(0).sum())
    return Sample.of([1.0] * escapes + [0.0] * (rounds - escapes), note=TEXT.fill(
        "statistics.escape_rounds", rounds=rounds, runs=len(ours)))


def _extra_noise_cost(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """α̂/α (α = 4χ) with [29]'s extra escape noise against without, paired by seed."""
    cost = violation(runs) / (4 * run_chi(runs))
    return paired_or_welch(_by_seed(runs, EXTRA, cost), _by_seed(runs, OURS, cost), unit="α")


def _never_fired(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """Per Gauss-PSGD run: 1 if its escape test ‖ĝ‖ ≤ 3χ never fired."""
    ours = _of(runs, OURS)
    noise, limit = numeric(ours, "diag_noise_norm_o1"), numeric(ours, "diag_trigger_threshold")
    return Sample.of((numeric(ours, "diag_triggers") == 0).to_numpy(float), note=TEXT.fill(
        "statistics.never_fired", low=noise.min(), high=noise.max(), limit=limit.max(),
        tests=numeric(ours, "diag_trigger_tests").sum(), runs=len(ours)))


def _selection_cost(runs: pd.DataFrame, _: PaperResults) -> Sample:
    return Sample.of(violation(_of(runs, ALG4)).dropna(),
                     violation(_of(runs, OURS)).dropna().tolist())


# -- claims -------------------------------------------------------------------------------

PER_CELL = ("problem", "calibration", "epsilon", "p_prob_clients")
BOTH = {"label": [OURS, BASELINE]}
# E1, E2 and E5 read the Figures and the χ settings where the escape test can select (decided
# before those runs: the selectivity premise, not their outcome, says which are in regime)
COMPARED = Runs((FIGURES, CHI_SELECT), BOTH, (*PER_CELL, "p_alg_chi_scale"))
SADDLE_CELL = ("epsilon", "p_prob_d")
SELECTION_PAIR, SELECTION_CELL = {"label": [OURS, ALG4]}, ("epsilon", "p_prob_clients", "p_prob_d")
SELECTION_COST = Statistic("α̂ of Algorithm 4's output − α̂ of Gauss-PSGD's", _selection_cost)
SOSP_RULE = Fraction(SOSP_PROBABILITY, event="output is an α-SOSP (α = 4χ)")
FIG = "Figures 1–2"
FIGURES_SETTING = PaperSetting(TEXT["setting"], ("mnist_mlp", "cifar10_mlp"))
ON_FIGURES: dict[str, Any] = {"kind": "paper", "setting": FIGURES_SETTING}
# E1's statistic and rule, which also give the horizon check's gaps and intervals: the
# final accuracy of Gauss-PSGD − the baseline's, paired by seed (same data subset and start)
E1_GAP = difference("test_acc", OURS, BASELINE, 100, "pp")
E1_RULE = AtLeast(0.0, "accuracy gap")


def _control(claim_id: str, runs: Runs, statistic: Statistic, rule: Rule) -> Control:
    return Control(TEXT[f"claims.{claim_id}.control.name"], runs,
                   TEXT[f"claims.{claim_id}.control.expect"], statistic, rule)


def _saddle(*labels: str) -> Runs:
    return Runs((SADDLE,), {"label": labels[0] if len(labels) == 1 else list(labels)},
                SADDLE_CELL)


CLAIMS = (
    TEXT.claim("E0", FIG, Runs(study=TRIGGER_STUDY), Statistic(
        "the escape test can fire on an O1 answer (‖ĝ‖ ≥ ‖ξ̄‖ − G ≤ 3χ)", _trigger_bound),
        Always("‖ξ̄‖ − G ≤ 3χ (the test can fire)"), (PAPER_SETTINGS_P,),
        controls=(_control("E0", Runs((FIGURES, FIGURES_REAL), {"label": OURS},
                                      ("problem", "p_prob_clients", "p_alg_epochs"),
                                      keep=is_real),
                           Statistic("the escape test never fired in the run", _never_fired),
                           Always("the escape test never fired")),),
        kind="paper", headline=True),
    TEXT.claim("E1", FIG, COMPARED, E1_GAP, E1_RULE, COMPARE, headline=True, **ON_FIGURES),
    TEXT.claim("E2", FIG, COMPARED, difference("test_loss", OURS, BASELINE),
               AtMost(0.0, "loss gap"), COMPARE, **ON_FIGURES),
    TEXT.claim("E3", FIG, Runs((FIGURES, FIGURES_REAL), BOTH,
                               ("problem", "calibration", "p_prob_clients", "label",
                                "p_alg_epochs"), keep=judged_data),
               along("test_acc", "epsilon", 100, "pp"), Trend(True, "ε"), FIGURES_REGIME,
               **ON_FIGURES),
    TEXT.claim("E4", FIG, Runs((FIGURES,), {**BOTH, "p_prob_clients": lambda m: m > 1},
                               PER_CELL),
               Statistic("accuracy gap at m − gap at m = 1 (pp)", _widening),
               AtLeast(0.0, "gap difference"), COMPARE, **ON_FIGURES),
    TEXT.claim("E5", FIG, COMPARED, Statistic(
        "test loss after the first pass, Gauss-PSGD − baseline", _first_pass_loss),
        AtMost(0.0, "loss gap"), COMPARE, **ON_FIGURES),
    TEXT.claim("E6", FIG, Runs((FIGURES, FIGURES_REAL), {"label": OURS},
                               ("problem", "calibration", "epsilon", "p_alg_epochs"),
                               keep=judged_data),
               along("test_acc", "p_prob_clients", 100, "pp"),
               Trend(True, "m", E6_TOLERANCE_PP, TEXT["sources.e6"]),
               (*FIGURES_REGIME, OPTION_A_P), kind="design", setting=FIGURES_SETTING),
    TEXT.claim("T4", "Theorem 1 (second order)", _saddle(OURS), output_is_sosp(OURS),
               SOSP_RULE, (SOSP_EXIT_P, TRIGGER_P, ROUNDS_P, BOUND_P, SMOOTH_P),
               controls=(_control("T4", _saddle(BASELINE), output_is_sosp(BASELINE),
                                  SOSP_RULE),),
               kind="paper", headline=True),
    TEXT.claim("T5", "Lemma 1 / Corollary 1 (escape)", _saddle(OURS),
               Statistic("escape rounds that escape", _escape_rounds),
               Fraction(ESCAPE_PROBABILITY, event="a Γ-descent escapes"),
               (RAN_P, ANCHOR_P, BOUND_P, SMOOTH_P), kind="paper"),
    TEXT.claim("T10", "§5.2 (no extra noise)", _saddle(OURS, EXTRA),
               Statistic("(α̂ with extra escape noise − α̂ without)/α, paired by seed",
                         _extra_noise_cost),
               NonInferior(T10_MARGIN, TEXT["sources.t10"], what="α̂ difference / α"),
               (RAN_P, BOUND_P, SMOOTH_P), kind="design"),
    TEXT.claim("T9", "Remark 4 (selection)",
               Runs((SELECTION,), SELECTION_PAIR, SELECTION_CELL, keep=_above_threshold),
               SELECTION_COST, AtLeast(0.0, "α̂ difference"), (REMARK4_P, BOUND_P, SMOOTH_P),
               controls=(_control("T9", Runs((SELECTION,), SELECTION_PAIR, SELECTION_CELL,
                                             keep=lambda runs: ~_above_threshold(runs)),
                                  SELECTION_COST, AtMost(0.0, "α̂ difference")),),
               kind="paper", headline=True),
)


# -- the regime ---------------------------------------------------------------------------

def _figure_runs(results: PaperResults) -> pd.DataFrame:
    """The finished Gauss-PSGD runs of the Figures (the stand-in and real images)."""
    runs = _done(results.role_runs(FIGURES, FIGURES_REAL))
    if runs.empty or "diag_refreshes" not in runs:
        raise KeyError("no finished Figures runs")
    return _of(runs, OURS)


def _data_name(problem: str) -> str:
    return REAL_DATA[problem][0] if problem in REAL_DATA else f"{problem} (stand-in)"


def _per_data(results: PaperResults, row: Callable[[pd.DataFrame], str]) -> str:
    """``row`` of the Figures' Gauss-PSGD runs of each data (the stand-in, real images)."""
    return "; ".join(f"{_data_name(str(problem))}{row(part)}"
                     for problem, part in _figure_runs(results).groupby("problem"))


def _ours(quantity: Callable[[pd.DataFrame], pd.Series]) -> Callable[[PaperResults], str]:
    """A regime row's measured side: the median and range of ``quantity`` per data."""
    def span(v: pd.Series) -> str:
        v = v.dropna()
        return f": {v.median():.3g} (range {v.min():.3g}–{v.max():.3g}, {len(v)} runs)"

    return lambda results: _per_data(results, lambda part: span(quantity(part)))


def _data_used(results: PaperResults) -> str:
    """What each Figures problem is (data, d, records per client) and which claims read it."""
    return _per_data(results, lambda part: TEXT.fill(
        "regime.data.ours", d=dimension(part).max(), n=per_client(part).max(),
        claims=TEXT["regime.data." + ("real" if is_real(part).all() else "stand_in")]))


def _regime(key: str, ours: Callable[[PaperResults], str], lead: bool = False) -> Regime:
    return Regime(TEXT[f"regime.{key}.quantity"], TEXT[f"regime.{key}.paper"], ours,
                  TEXT.get(f"regime.{key}.note"), lead)


REGIME = (
    _regime("noise_over_trigger", _ours(lambda r: numeric(r, "diag_noise_norm_o1")
                                        / numeric(r, "diag_trigger_threshold")), lead=True),
    _regime("trigger_rate", _ours(lambda r: numeric(r, "diag_triggers")
                                  / numeric(r, "diag_trigger_tests")), lead=True),
    _regime("o1", _ours(o1_noise_to_signal)),
    _regime("o2_gain", _ours(o2_gain)),
    _regime("per_refresh", _ours(lambda r: _calls(r) / numeric(r, "diag_refreshes"))),
    _regime("rate", _ours(lambda r: np.sqrt(dimension(r)) / (
        per_client(r) * r["epsilon"].astype(float)))),
    _regime("per_pass", _ours(lambda r: _calls(r) / numeric(r, "diag_epochs_used"))),
    _regime("passes", _ours(lambda r: numeric(r, "diag_epochs_used"))),
    _regime("per_client", _ours(per_client)),
    _regime("data", _data_used),
)


# -- figures ------------------------------------------------------------------------------

def _references(results: PaperResults, eps: float, problem: str) -> list[Line]:
    """Final test accuracy of SGD and DP-SGD at ``eps`` on ``problem``, and chance."""
    runs = _done(results.role_runs(REFERENCES))
    if not runs.empty and "final_test_acc" in runs:
        runs = runs[(runs["problem"] == problem) & ((runs["algorithm"] == "sgd") | np.isclose(
            runs["epsilon"].astype(float), eps))]
    means = runs.groupby("algorithm")["final_test_acc"].mean() if "final_test_acc" in runs \
        else pd.Series(dtype=float)
    return [*(Line(float(acc), f"{name} (reference)", style=style) for (name, acc), style
              in zip(means.items(), ("-.", ":"), strict=False)),
            Line(CHANCE, colour="lightgrey", style="-")]


def _curve_panel(rows: pd.DataFrame, metric: str, title: str, lines: list[Line],
                 legend: bool) -> Panel:
    """Mean ``metric`` per pass, one line per method (its colour) and m (its dash)."""
    ms, colour, series = sorted(rows["m"].unique()), colours([OURS, BASELINE]), []
    for (label, m), grp in rows.groupby(["label", "m"]):
        mean = grp.groupby("epoch")[metric].mean()
        series.append(Series(f"{label}, m={m}", mean.index.to_numpy(), mean, marker="",
                             colour=colour.get(str(label)), line=DASHES[ms.index(m) % 4]))
    return Panel(series, "pass over the data (epoch)", metric.replace("_", " "), title,
                 lines=lines, legend=legend)


def _figure_1_2(results: PaperResults, suite: str, out: Path) -> list[Figure]:
    """Figures 1-2 regenerated per calibration: accuracy (top) and loss (bottom) per ε."""
    curves = results.curves(suite, points=("iterate", "output"))
    if curves.empty or "epoch" not in curves:
        return []
    curves = per_pass(_done(curves))
    figures = []
    for cal, part in curves.assign(m=curves["p_prob_clients"]).groupby("calibration"):
        eps_values, problem = sorted(part["epsilon"].unique()), str(part["problem"].iloc[0])
        panels = [_curve_panel(part[part["epsilon"] == eps], metric, f"ε = {eps:g}",
                               _references(results, float(eps), problem) if top else [],
                               legend=top and i == 0)
                  for metric, top in (("test_acc", True), ("test_loss", False))
                  for i, eps in enumerate(eps_values)]
        name = draw(Plot(panels, columns=len(eps_values), panel_inches=(4, 3.2), dpi=120), out,
                    f"{suite}_{cal}")
        figures.append(Figure(name, TEXT.fill("figures.curves", suite=suite, calibration=cal),
                              results.provenance(results.suite_runs(suite))))
    return figures


def _dimension_figure(results: PaperResults, out: Path) -> list[Figure]:
    """α-SOSP outputs by d over every selection suite (T9 and its control)."""
    every = results.role_runs(SELECTION)
    runs = _done(every)
    if runs.empty or "p_prob_d" not in runs:
        return []
    runs = runs.assign(sosp=is_sosp(runs, float(4 * run_chi(_of(runs, OURS)).median())))
    table = runs.groupby(["p_prob_d", "label"])["sosp"].mean().unstack()
    colour = colours(list(table.columns))
    panel = Panel([Series(label, table.index.to_numpy(), table[label], colour=colour[label])
                   for label in table.columns], "dimension d",
                  "fraction of outputs that are 4χ-SOSPs", xscale="log2",
                  lines=[Line(float(remark4_threshold(runs).iloc[0]), "(√m n ε)^(6/13)",
                              style="--", vertical=True)])
    name = draw(Plot([panel], panel_inches=(4.6, 3.4)), out, "selection_by_dimension")
    counts = runs[runs["label"] == ALG4].groupby("p_prob_d").size()
    return [Figure(name, TEXT.fill("figures.selection", counts=", ".join(
        f"{n} at d = {d:g}" for d, n in counts.items())), results.provenance(every))]


# -- tables and findings ------------------------------------------------------------------

def _trigger_table(results: PaperResults) -> dict[str, Any] | None:
    """Claim E0's arithmetic per cell of the Figures' settings (study paper_scale_trigger)."""
    rows = results.study(TRIGGER_STUDY)
    if rows.empty:
        return None
    table = []
    for (name, eps, m), part in rows.groupby(["data", "epsilon", "clients"], sort=False):
        first = part.iloc[0]
        table.append([str(name), f"{first['d']:,}", f"{eps:g}", f"{m:g}", f"{first['sigma']:.2f}",
                      f"{first['eps_pld']:.2f}", f"{first['noise_formula']:.2f}",
                      f"{part['noise_norm'].min():.2f}–{part['noise_norm'].max():.2f}",
                      f"{part['lower_bound'].min():.2f}", f"{first['threshold']:g}",
                      f"{part['b1_max'].min():.0f}"])
    return TEXT.table("trigger", table,
                      Provenance(results.scale, computed=f"study {TRIGGER_STUDY}"))


def _real_runs(results: PaperResults) -> pd.DataFrame:
    runs = _done(results.role_runs(FIGURES, FIGURES_REAL))
    runs = runs[is_real(runs)] if not runs.empty else runs
    return runs.assign(noise=o1_noise_to_signal(runs) * numeric(runs, "p_alg_grad_clip"),
                       limit=3 * run_chi(runs))


def _real_table(results: PaperResults) -> dict[str, Any] | None:
    """The escape test on real images at the paper's settings, per setting."""
    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        (problem, cal, m, eps, passes), (same, pairs) = cell, identical_pairs(part)
        return [_data_name(str(problem)), str(cal), f"{m:g}", f"{eps:g}", f"{passes:g}",
                f"{part['sigma'].median():.2f}", f"{part['noise'].median():.3g}",
                f"{part['limit'].median():g}", f"{(part['noise'] / part['limit']).median():,.0f}",
                _fired_of(part, OURS), _fired_of(part, BASELINE),
                f"{same}/{pairs}" if pairs else "–",
                f"{100 * _of(part, OURS)['final_test_acc'].mean():.1f} %"]

    runs = _real_runs(results)
    return None if runs.empty else TEXT.grouped("real", runs, SETTING_KEYS, row,
                                                results.provenance(runs))


def _real_findings(results: PaperResults) -> list[dict[str, str]]:
    """The escape test on real images (every run), and the stand-in's E3 and E6 verdicts."""
    runs = _real_runs(results)
    if runs.empty:
        return []
    ratio = runs["noise"] / runs["limit"]
    same, pairs = np.sum([identical_pairs(part) for _, part in runs.groupby(SETTING_KEYS)],
                         axis=0)
    fired = numeric(runs, "diag_triggers").sum() + numeric(runs, "diag_escape_injections").sum()
    names = ", ".join(sorted({_data_name(str(p)) for p in runs["problem"]}))
    return [{"kind": TEXT["findings.real.kind"],
             "what": TEXT.fill("findings.real.what", names=names),
             "numbers": TEXT.fill("findings.real.numbers", noise_min=runs["noise"].min(),
                                  noise_max=runs["noise"].max(), limit=runs["limit"].max(),
                                  ratio_min=ratio.min(), ratio_max=ratio.max(), runs=len(runs),
                                  ours=_fired_of(runs, OURS), base=_fired_of(runs, BASELINE),
                                  same=same, pairs=pairs, reading=TEXT[
                                      "findings.real." + ("silent" if fired == 0 else "fired")])},
            *stand_in_findings((c for c in CLAIMS if c.id in ("E3", "E6")), results,
                               lambda r: ~is_real(r), TEXT["findings.real.stand_in"])]


def _gap(part: pd.DataFrame, results: PaperResults) -> str:
    """E1's gap (pp) over ``part`` with the 95 % interval of its own statistic and rule."""
    decision = E1_RULE.decide(E1_GAP.compute(part, results))
    low, high = decision.interval
    return f"{decision.estimate:+.1f}" + (f" [{low:+.1f}, {high:+.1f}]"
                                          if math.isfinite(low) else "")


def _horizon_cells(results: PaperResults) -> pd.DataFrame:
    """The Figures and horizon runs (``judged``) at the m the horizon check ran."""
    long = results.role_runs(HORIZON)
    if long.empty or "final_test_acc" not in long:
        return long
    runs = pd.concat([results.role_runs(FIGURES).assign(judged=FIGURES),
                      long.assign(judged=HORIZON)])
    return runs[(runs["status"] == "done") & runs["p_prob_clients"].isin(
        long["p_prob_clients"].unique())]


def _stopped(ours: pd.DataFrame) -> int:
    """Gauss-PSGD runs that ended at the SOSP exit (x̃ certified)."""
    return int((ours["diag_termination"] == "sosp").sum()) if "diag_termination" in ours \
        else 0


def _horizon_table(results: PaperResults) -> dict[str, Any] | None:
    """E1's comparison at the judged horizon and at the longer one, per cell."""
    tuned = {FIGURES: tuned_lr(results), HORIZON: tuned_lr(results, HORIZON_TUNING)}

    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        (eps, m, passes, role), ours = cell, _of(part, OURS)
        choice = tuned[str(role)].get(OURS)
        return [f"{eps:g}", f"{m:g}", f"{passes:g}", f"{ours['p_alg_lr'].iloc[0]:g}"
                + (f" (tuned {choice[0]:g})" if choice else " (not tuned)"),
                f"{100 * ours['final_test_acc'].mean():.1f} %",
                f"{100 * _of(part, BASELINE)['final_test_acc'].mean():.1f} %",
                _gap(part, results), f"{_stopped(ours)}/{len(ours)}"]

    runs = _horizon_cells(results)
    return None if runs.empty else TEXT.grouped(
        "horizon", runs, ["epsilon", "p_prob_clients", "p_alg_epochs", "judged"], row,
        results.provenance(runs))


def _horizon_finding(results: PaperResults) -> list[dict[str, str]]:
    """The horizon check beside E1's verdict: each cell's gap at the longer horizon."""
    runs = _horizon_cells(results)
    long = runs[runs["judged"] == HORIZON] if not runs.empty else runs
    if long.empty:
        return []
    cells = []
    for (eps, m), part in long.groupby(["epsilon", "p_prob_clients"]):
        ours = _of(part, OURS)
        stops = _stopped(ours)
        cells.append(f"ε = {eps:g}, m = {m:g}: {_gap(part, results)} pp" + (
            f" (Gauss-PSGD stopped at the SOSP exit in {stops}/{len(ours)})" if stops else ""))
    passes = ", ".join(f"{p:g}" for p in sorted(long["p_alg_epochs"].unique()))
    return [{"kind": TEXT["findings.horizon.kind"],
             "what": TEXT.fill("findings.horizon.what", passes=passes),
             "numbers": TEXT.fill("findings.horizon.numbers", cells="; ".join(cells))}]


def _escape_table(results: PaperResults) -> dict[str, Any] | None:
    """Gauss-PSGD's escape statistics per (suite, label, ε, calibration), means per run."""
    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        mean = {c: part[f"diag_{c}"].mean() for c in ("triggers", "escape_rounds", "escapes",
                                                      "refreshes", "differences",
                                                      "noise_norm_o1")}
        share = part["diag_escape_steps"] / (part["diag_refreshes"] + part["diag_differences"])
        return [cell[0], str(cell[1]), f"{cell[2]:g}", cell[3], f"{mean['triggers']:.2f}",
                f"{mean['escape_rounds']:.2f}", f"{mean['escapes']:.2f}",
                f"{100 * share.mean():.1f}%",
                f"{mean['refreshes']:.1f} / {mean['differences']:.1f}",
                f"{mean['noise_norm_o1']:.3g}", f"{part['diag_trigger_threshold'].iloc[0]:.3g}",
                ", ".join(f"{k}: {v}" for k, v in part["diag_termination"].value_counts().items())]

    runs = results.runs
    if runs.empty or "diag_triggers" not in runs:
        return None
    ours = runs[(runs["algorithm"] == OURS) & (runs["status"] == "done")]
    return TEXT.grouped("escape", ours, ["suite", "label", "epsilon", "calibration"], row,
                        results.provenance(ours))


def _chi_table(results: PaperResults) -> dict[str, Any] | None:
    """The χ sweep: how often each method's escape test fires, per (suite, label, χ)."""
    def row(cell: tuple[Any, ...], part: pd.DataFrame) -> list[str]:
        (suite, label, scale), ours = cell, part["algorithm"].eq(OURS).all()
        fixed = part["p_alg_chi"].notna().all() if "p_alg_chi" in part else False
        acted = numeric(part, "diag_escapes" if ours else "diag_escape_injections")
        ends = part["diag_termination"].dropna().value_counts() \
            if "diag_termination" in part else pd.Series(dtype=int)
        return [str(suite).removeprefix("tao2025_quick_"), str(label),
                "paper χ = 0.01" if fixed else f"χ = {scale:g}·ψ̂",
                f"{part['chi_used'].median():.3g}",
                f"{numeric(part, 'diag_noise_norm_o1').median():.3g}",
                _fired(part, OURS if ours else BASELINE)[1],
                f"{acted.mean():.1f} {'escapes' if ours else 'injections'}",
                ", ".join(f"{k}: {v}" for k, v in ends.items()) or "–",
                f"{100 * part['final_test_acc'].mean():.1f} %"]

    runs = _done(results.role_runs(CHI_SWEEP, CHI_SELECT))
    if runs.empty or "diag_trigger_tests" not in runs:
        return None
    return TEXT.grouped("chi", runs.assign(chi_used=run_chi(runs)),
                        ["suite", "label", "p_alg_chi_scale"], row, results.provenance(runs),
                        dropna=False)


def _saddle_table(results: PaperResults) -> dict[str, Any] | None:
    """Every method's outputs from the strict saddle, judged at Gauss-PSGD's α = 4χ."""
    runs = _done(results.role_runs(SADDLE))
    if runs.empty or "final_lambda_min" not in runs:
        return None
    alpha = float(4 * run_chi(_of(runs, OURS)).median())
    runs = runs.assign(sosp=is_sosp(runs, alpha), violation=violation(runs))
    rows = [[str(label), str(len(part)), f"{int(part['sosp'].sum())}/{len(part)}",
             f"{part['final_grad_norm'].mean():.3g}", f"{part['final_lambda_min'].mean():.3g}",
             f"{part['violation'].mean():.3g}"] for label, part in runs.groupby("label")]
    return TEXT.table("saddle", rows, results.provenance(runs), alpha=alpha)


def sections(results: PaperResults, out: Path) -> PaperSections:
    """Figures 1-2 and selection by d; the escape test, χ, saddle and ε tables; findings."""
    found = PaperSections(settings=settings(results))
    trigger = _trigger_table(results)  # a study: no run needed
    found.tables += [trigger] if trigger else []
    if results.runs.empty:
        return found
    for suite in results.role_suites(FIGURES, FIGURES_REAL, HORIZON):
        found.figures += _figure_1_2(results, suite, out)
    found.figures += _dimension_figure(results, out)
    found.findings += _real_findings(results) + _horizon_finding(results)
    found.tables += [table for table in (
        _real_table(results), _horizon_table(results), _escape_table(results),
        _chi_table(results), _saddle_table(results),
        calibration_table(results, TEXT["tables.calibration"])) if table]
    found.deviations = deviations([(name, f"algorithms.{name}", "Deviations")
                                   for name in (OURS, "ada_dp_spider", BASELINE)])
    return found


PAPER = Paper(
    key="tao2025", title=TEXT["title"], source=TEXT["source"],
    url="https://arxiv.org/abs/2505.15647", claims=CLAIMS,
    roles={role: TEXT[f"roles.{role}"] for role in TEXT.section("roles")},
    sections=sections, resolutions=tuple(
        (TEXT[f"resolutions.{key}.where"], TEXT[f"resolutions.{key}.paper"],
         TEXT[f"resolutions.{key}.ours"]) for key in TEXT.section("resolutions")),
    studies={TRIGGER_STUDY: trigger_study}, regime=REGIME, text=TEXT)
