"""tao2025's own measures over the run frame: Theorem 1's α-SOSP test (Definition 2) and its
violation α̂, the oracles' noise (O1: Algorithm 2 line 5; O2: the recursion's step), Remark 4's
threshold, how often each method's escape test fires, and the premise checks, statistics and
regime readings the declaration (:mod:`reports.papers.tao2025.paper`) names. Its prose is
``paper.yaml`` (:data:`TEXT`); App. E's settings and the E0 study are
``bench/studies/tao2025.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.studies import tao2025 as app_e
from bench.studies.tao2025 import PAPER_CHI, PAPER_D, PAPER_DATA, PAPER_N, paper_d
from reports.claims import (
    Premise,
    Statistic,
    difference,
    finished,
    numeric,
    of_problems,
    paired_or_welch,
    per_run,
    real_else_stand_in,
)
from reports.paper import median_range
from reports.prose import Prose
from reports.results import PaperResults
from reports.rules import AtLeast, Sample

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
T10_MARGIN = 0.1  # of α = 4χ: a share this code declared negligible a priori
Q_PAPER = 3  # Lemma 2: the output is an α-SOSP w.p. ≥ 1 − (7/8)^Q per trigger at a saddle
SOSP_PROBABILITY = math.floor(100 * (1 - (7 / 8) ** Q_PAPER)) / 100  # 0.33
REMARK4_EXPONENT = 6 / 13  # Remark 4: α′ ≲ α only for d ≤ (√m n ε)^(6/13)
PAPER_NOISE = 2 * app_e.PAPER_SIGMA * math.sqrt(PAPER_D) / app_e.PAPER_B1  # ‖ĝ‖ at App. E
PAPER_GAIN = 2 * app_e.PAPER_SIGMA * app_e.PAPER_LR * math.sqrt(PAPER_D) / app_e.PAPER_B2
# Real images: problem -> (data set, input features, the paper's lr); Fashion-MNIST has
# MNIST's format and size (MNIST itself is not packaged for Debian).
REAL_DATA = {"mnist_mlp": ("MNIST", *PAPER_DATA["MNIST"]),
             "fashion_mnist_mlp": ("Fashion-MNIST", *PAPER_DATA["MNIST"]),
             "cifar10_mlp": ("CIFAR-10", *PAPER_DATA["CIFAR-10"])}
# (fired, tests) of each method's escape test: Gauss-PSGD's trigger, the baseline's injection
TESTS = {OURS: ("diag_triggers", "diag_trigger_tests"),
         BASELINE: ("diag_escape_injections", "diag_injection_tests")}

TEXT = Prose.load(
    Path(__file__).with_name("paper.yaml"), O2_GAIN_MAX=O2_GAIN_MAX,
    LR_REGIME_CAP=LR_REGIME_CAP, Q_PAPER=Q_PAPER, E6_TOLERANCE_PP=E6_TOLERANCE_PP,
    SOSP_PROBABILITY=SOSP_PROBABILITY, T10_MARGIN=T10_MARGIN,
    TRIGGER_SEEDS=app_e.TRIGGER_SEEDS, PAPER_CHI=PAPER_CHI, TRIGGER=3 * PAPER_CHI,
    PAPER_NOISE=PAPER_NOISE, NOISE_OVER_TRIGGER=PAPER_NOISE / (3 * PAPER_CHI),
    NOISE_LESS_G=PAPER_NOISE - 1, PAPER_GAIN=PAPER_GAIN, PAPER_D=PAPER_D,
    PAPER_PER_REFRESH=app_e.PAPER_KAPPA / (app_e.PAPER_LR * PAPER_NOISE) ** 2,
    PAPER_RATE=math.sqrt(PAPER_D) / PAPER_N, PAPER_STEPS=PAPER_N / app_e.PAPER_B2,
    CIFAR_D=paper_d(PAPER_DATA["CIFAR-10"][0]))
# E1's statistic and rule, which also give the horizon check's gaps and intervals: the
# final accuracy of Gauss-PSGD − the baseline's, paired by seed (same data subset and start)
E1_GAP = difference("test_acc", OURS, BASELINE, 100, "pp")
E1_RULE = AtLeast(0.0, "accuracy gap")
Verdict = tuple[bool | None, str]
Found = tuple[bool | None, dict[str, Any]] | None  # a premise's outcome and what it shows


# -- measures on run rows -----------------------------------------------------------------

def of(runs: pd.DataFrame, label: str) -> pd.DataFrame:
    """The runs of ``label`` (none where the frame has no labels)."""
    return runs[runs["label"] == label] if "label" in runs else runs.iloc[0:0]


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
    """(√m n ε)^(6/13), n the records per client (Remark 4): T9's scope is d above it."""
    m = _clients(runs)
    return (np.sqrt(m) * numeric(runs, "p_prob_n") / m * runs["epsilon"].astype(float)
            ) ** REMARK4_EXPONENT


def above_threshold(runs: pd.DataFrame) -> pd.Series:
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
    """Norm of the averaged O1 privacy noise over the clip G: 2σ√(d/m)/b₁ (Algorithm 2
    line 5, averaged over m clients by Algorithm 3)."""
    return 2 * numeric(runs, "sigma") * np.sqrt(dimension(runs) / _clients(runs)) \
        / numeric(runs, "p_alg_batch_refresh")


def o2_gain(runs: pd.DataFrame) -> pd.Series:
    """O2 noise added per recursion step over ‖ĝ‖ (‖Δx‖ = η‖ĝ‖): 2σMη√(d/m)/b₂."""
    return 2 * numeric(runs, "sigma") * numeric(runs, "p_alg_diff_clip") \
        * numeric(runs, "p_alg_lr") * np.sqrt(dimension(runs) / _clients(runs)) \
        / numeric(runs, "p_alg_batch_diff")


def is_real(runs: pd.DataFrame) -> pd.Series:
    """Runs on real images at the paper's d (:data:`REAL_DATA`)."""
    return of_problems(runs, REAL_DATA)


def judged_data(runs: pd.DataFrame) -> pd.Series:
    """The Figures runs E3 and E6 read: on real images wherever any ran, else the stand-in."""
    return real_else_stand_in(is_real(runs))


def data_name(problem: str) -> str:
    return REAL_DATA[problem][0] if problem in REAL_DATA else f"{problem} (stand-in)"


def _pairs(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` of Gauss-PSGD and the baseline side by side, paired by seed."""
    return pd.concat({side: of(runs, label).set_index("seed")[column] for side, label in
                      (("ours", OURS), ("base", BASELINE))}, axis=1, join="inner").astype(float)


def identical_pairs(runs: pd.DataFrame) -> tuple[int, int]:
    """Seed pairs whose final test accuracy and loss are identical, and all seed pairs."""
    acc, loss = _pairs(runs, "final_test_acc"), _pairs(runs, "final_test_loss")
    same = (acc["ours"] == acc["base"]) & (loss["ours"] == loss["base"])
    return int(same.sum()), len(same)


def fired(runs: pd.DataFrame, label: str) -> tuple[float, str]:
    """The pooled share of ``label``'s escape tests that fired, and how it reads."""
    hits, total = (numeric(runs, column) for column in TESTS[label])
    known = total > 0
    if not known.any():
        return math.nan, "not recorded"
    rate, each = float(hits[known].sum() / total[known].sum()), hits[known] / total[known]
    return rate, (f"{100 * rate:.0f} % (runs {100 * each.min():.0f}–{100 * each.max():.0f} %, "
                  f"{int(known.sum())} runs)")


def fired_of(runs: pd.DataFrame, label: str) -> str:
    """'k/n': ``label``'s escape tests that fired over its tests, '–' without its runs."""
    part = of(runs, label)
    hits, tests = (numeric(part, column).sum() for column in TESTS[label])
    return "–" if part.empty else f"{hits:.0f}/{tests:.0f}"


def tuned_lr(results: PaperResults, role: str = TUNING) -> dict[str, tuple[float, str]]:
    """algorithm -> (lr chosen by the ``role`` tuning suite, grid edge it sits on or "")."""
    return {str(entry["group"]).split("/")[1]: (float(entry["chosen"]["lr"]),
                                                (entry.get("edges") or {}).get("lr", ""))
            for meta in results.suites if role in (meta.get("roles") or ())
            for entry in meta.get("tuning") or ()
            if (entry.get("chosen") or {}).get("lr") is not None}


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


# -- premise checks: (passed, the values ``premises.<key>.measured`` shows), None unrecorded --

def premise(key: str, check: Callable[[pd.DataFrame, PaperResults], Found]) -> Premise:
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


def at_paper_settings(rows: pd.DataFrame, _: PaperResults) -> Found:
    """The E0 study ran at App. E's d, χ, b₁, n per client, passes and calibration."""
    paper = {"d": sorted(paper_d(f) for f, _ in PAPER_DATA.values()), "chi": [PAPER_CHI],
             "b1": [app_e.PAPER_B1], "n_per_client": [PAPER_N],
             "passes": [app_e.PAPER_PASSES], "calibration": ["paper"]}
    if rows.empty or not set(paper) <= set(rows):
        return None
    found = {column: sorted(set(rows[column])) for column in paper}
    return found == paper, {"found": "; ".join(
        f"{column} " + ", ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in values)
        for column, values in found.items())}


def learns(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Mean final test accuracy at least :data:`LEARNS` (twice chance)."""
    acc = numeric(runs, "final_test_acc").dropna()
    mean = float(acc.mean())
    return None if acc.empty else (mean >= LEARNS, {**_span(100 * acc), "mean": 100 * mean,
                                                    "bound": 100 * LEARNS})


def trigger_can_fire(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Gauss-PSGD's O1 noise norm below the escape test's 3χ (Algorithm 1) in every run."""
    ours = of(runs, OURS)
    noise, limit = numeric(ours, "diag_noise_norm_o1"), numeric(ours, "diag_trigger_threshold")
    if noise.isna().all() or limit.isna().all():
        return None
    above = noise >= limit
    return not bool(above.any()), {**_span(noise), "runs": len(ours), "limit": limit.max(),
                                   "above": int(above.sum()),
                                   "fired": int(numeric(ours, "diag_triggers").fillna(0).sum())}


def selective(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Both methods' escape tests fire at a rate inside :data:`SELECTIVE`."""
    (ours, ours_text), (base, base_text) = (fired(of(runs, label), label)
                                            for label in (OURS, BASELINE))
    passed = None if math.isnan(ours) or math.isnan(base) else all(
        SELECTIVE[0] < r < SELECTIVE[1] for r in (ours, base))
    return passed, {"ours": ours_text, "base": base_text, "low": 100 * SELECTIVE[0],
                    "high": 100 * SELECTIVE[1]}


def recursion_runs(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Every run takes some O2 (SPIDER recursion) steps (Algorithm 2)."""
    diff, refresh = numeric(runs, "diag_differences"), numeric(runs, "diag_refreshes")
    never = diff.fillna(0) == 0
    return None if diff.isna().all() else (not bool(never.any()), {
        "refreshes": int(refresh.sum()), "differences": int(diff.sum()),
        "never": int(never.sum()), "runs": len(runs)})


def methods_differ(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Some seed pair's final test accuracy or loss differs between the methods."""
    same, pairs = identical_pairs(runs)
    return (same < pairs, {"same": same, "pairs": pairs}) if pairs else None


def room_to_escape(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Every run takes at least one escape episode's Q·Γ steps (Algorithm 1)."""
    ours = of(runs, OURS)
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


def n_per_client_fixed(runs: pd.DataFrame, _: PaperResults) -> Found:
    """The records per client stay fixed as m grows (Option A, App. E)."""
    per = per_client(runs).dropna()
    if per.empty:
        return None
    fixed = float(per.max()) <= 1.01 * float(per.min())
    by_m = per.groupby(numeric(runs, "p_prob_clients")).mean()
    return fixed, {"by_m": ", ".join(f"{v:.0f} (m = {m:g})" for m, v in by_m.items()),
                   "option_b": "" if fixed else TEXT["premises.option_a.b"]}


def sosp_exit(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Every Gauss-PSGD output is Theorem 1's x̃ (SOSP exit, or data spent mid-escape)."""
    ours = of(runs, OURS)
    if "diag_termination" not in ours or ours["diag_termination"].isna().all():
        return None
    ends = ours["diag_termination"].value_counts()
    exited = int(sum(ends.get(end, 0) for end in ("sosp", "data (escape)", "steps (escape)")))
    return exited == len(ours), {"exited": exited, "runs": len(ours), "ends": ", ".join(
        f"{k}: {v}" for k, v in ends.items())}


def paper_rounds(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Q is Lemma 2's :data:`Q_PAPER`, which the rule's probability assumes."""
    q = numeric(of(runs, OURS), "p_alg_escape_rounds").dropna()
    return None if q.empty else (bool((q == Q_PAPER).all()), {
        "q": ", ".join(f"{v:g}" for v in sorted(set(q)))})


def rounds_ran(runs: pd.DataFrame, _: PaperResults) -> Found:
    """Some escape round ran (the trigger fired)."""
    ours = of(runs, OURS)
    rounds = numeric(ours, "diag_escape_rounds")
    return None if rounds.isna().all() else (bool(rounds.sum() > 0), {
        "rounds": int(rounds.sum()), "triggers": int(numeric(ours, "diag_triggers").sum()),
        "runs": len(ours)})


def anchor_is_saddle(runs: pd.DataFrame, _: PaperResults) -> Found:
    """λ_min < 0 at every escape anchor x̃ (Lemma 1's strict saddle)."""
    lam = numeric(runs, "prem_anchor_lambda_min")
    return None if lam.isna().all() else (bool((lam < 0).all()), _span(lam))


def within(suffix: str) -> Callable[[pd.DataFrame, PaperResults], Found]:
    """Per-sample norms within the clip (Assumption 1; G: ``suffix`` "", M·‖Δx‖: "_diff")."""
    def check(runs: pd.DataFrame, _: PaperResults) -> Found:
        worst = numeric(runs, f"prem_max_per_sample_norm{suffix}")
        limit = numeric(runs, f"prem_clip_bound{suffix}")
        over = worst > limit * (1 + 1e-6)
        return None if worst.isna().all() else (not bool(over.any()), {
            "worst": worst.max(), "limit": limit.max(), "over": int(over.sum()),
            "runs": len(runs)})

    return check


def o2_gain_small(runs: pd.DataFrame, _: PaperResults) -> Found:
    """The O2 gain at most :data:`O2_GAIN_MAX` in every run."""
    gain = o2_gain(runs).dropna()
    return None if gain.empty else (bool((gain <= O2_GAIN_MAX).all()), _span(gain))


def paper_run(runs: pd.DataFrame, _: PaperResults) -> Verdict:
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


def above_remark4(runs: pd.DataFrame, _: PaperResults) -> Found:
    """d above Remark 4's threshold (√m n ε)^(6/13)."""
    if "p_prob_d" not in runs:
        return None
    d, threshold = float(runs["p_prob_d"].max()), float(remark4_threshold(runs).max())
    return d > threshold, {"d": d, "threshold": threshold}


def lr_is_tuned(runs: pd.DataFrame, results: PaperResults) -> Verdict:
    """Each method's lr is the tuning suite's choice, inside its grid or at the regime cap."""
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


def only_on(real: bool, inner: Premise) -> Premise:
    """``inner`` on real images (or on the stand-in); vacuous, and said so, elsewhere."""
    scope = "real images" if real else "the stand-in"

    def check(runs: pd.DataFrame, results: PaperResults) -> Verdict:
        if bool(is_real(runs).all()) != real:
            return True, f"does not apply: not {scope}"
        return inner.check(runs, results)

    return Premise(f"on {scope}: {inner.name}", check, inner.remedy)


# -- statistics ---------------------------------------------------------------------------

def trigger_bound(rows: pd.DataFrame, _: PaperResults) -> Sample:
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


def widening(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """The per-seed accuracy gap at this m against the gap at m = 1 (same cell otherwise)."""
    every, first = finished(results.role_runs(FIGURES)), runs.iloc[0]
    ref = every[(every["p_prob_clients"] == 1) & (every["problem"] == first["problem"])
                & (every["calibration"] == first["calibration"])
                & np.isclose(every["epsilon"], float(first["epsilon"]))]
    return Sample.of(_gap_at(runs), _gap_at(ref).tolist(), unit="pp")


def _by_seed(runs: pd.DataFrame, label: str, values: pd.Series) -> pd.Series:
    """``values`` (aligned with ``runs``) of the runs of ``label``, indexed by seed."""
    mine = runs["label"] == label
    return pd.Series(values[mine].to_numpy(float), index=runs.loc[mine, "seed"])


def first_pass_loss(runs: pd.DataFrame, results: PaperResults) -> Sample:
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
                   lambda runs, _: is_sosp(mine := of(runs, label), 4 * run_chi(mine)))


def escape_rounds(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """One value per escape round: 1 if it reached ‖x − x̃‖ ≥ R (Lemma 1 / Corollary 1)."""
    ours = of(runs, OURS)
    rounds = int(numeric(ours, "diag_escape_rounds").fillna(0).sum())
    escapes = int(numeric(ours, "diag_escapes").fillna(0).sum())
    return Sample.of([1.0] * escapes + [0.0] * (rounds - escapes), note=TEXT.fill(
        "statistics.escape_rounds", rounds=rounds, runs=len(ours)))


def extra_noise_cost(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """α̂/α (α = 4χ) with [29]'s extra escape noise against without, paired by seed (§5.2)."""
    cost = violation(runs) / (4 * run_chi(runs))
    return paired_or_welch(_by_seed(runs, EXTRA, cost), _by_seed(runs, OURS, cost), unit="α")


def never_fired(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """Per Gauss-PSGD run: 1 if its escape test ‖ĝ‖ ≤ 3χ never fired."""
    ours = of(runs, OURS)
    noise, limit = numeric(ours, "diag_noise_norm_o1"), numeric(ours, "diag_trigger_threshold")
    return Sample.of((numeric(ours, "diag_triggers") == 0).to_numpy(float), note=TEXT.fill(
        "statistics.never_fired", low=noise.min(), high=noise.max(), limit=limit.max(),
        tests=numeric(ours, "diag_trigger_tests").sum(), runs=len(ours)))


def selection_cost(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """α̂ of Algorithm 4's selected output against Gauss-PSGD's direct output (Remark 4)."""
    return Sample.of(violation(of(runs, ALG4)).dropna(),
                     violation(of(runs, OURS)).dropna().tolist())


# -- the regime: our side of each row ------------------------------------------------------

def _figure_runs(results: PaperResults) -> pd.DataFrame:
    """The finished Gauss-PSGD runs of the Figures (the stand-in and real images)."""
    runs = finished(results.role_runs(FIGURES, FIGURES_REAL))
    if runs.empty or "diag_refreshes" not in runs:
        raise KeyError("no finished Figures runs")
    return of(runs, OURS)


def _per_data(results: PaperResults, row: Callable[[pd.DataFrame], str]) -> str:
    """``row`` of the Figures' Gauss-PSGD runs of each data (the stand-in, real images)."""
    return "; ".join(f"{data_name(str(problem))}{row(part)}"
                     for problem, part in _figure_runs(results).groupby("problem"))


def per_data(quantity: Callable[[pd.DataFrame], pd.Series]) -> Callable[[PaperResults], str]:
    """A regime row's measured side: the median, range and runs of ``quantity`` per data."""
    return lambda results: _per_data(
        results, lambda part: f": {median_range(quantity(part), runs=True)}")


def ratio(top: str, bottom: str) -> Callable[[pd.DataFrame], pd.Series]:
    """Column ``top`` over column ``bottom``, run by run."""
    return lambda runs: numeric(runs, top) / numeric(runs, bottom)


def calls_per(column: str) -> Callable[[pd.DataFrame], pd.Series]:
    """Oracle calls (O1 + O2) per unit of ``column`` (refreshes, passes)."""
    return lambda runs: _calls(runs) / numeric(runs, column)


def rate(runs: pd.DataFrame) -> pd.Series:
    """√d/(nε) per client (Theorem 3's private term is its 2/5 power)."""
    return np.sqrt(dimension(runs)) / (per_client(runs) * runs["epsilon"].astype(float))


def data_used(results: PaperResults) -> str:
    """What each Figures problem is (data, d, records per client) and which claims read it."""
    return _per_data(results, lambda part: TEXT.fill(
        "regime.data.ours", d=dimension(part).max(), n=per_client(part).max(),
        claims=TEXT["regime.data." + ("real" if is_real(part).all() else "stand_in")]))
