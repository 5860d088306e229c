"""avdiukhin2024's own measures: the thresholds its claims are decided at (each with its
source), the prose filled with them (:data:`TEXT`), and the per-run quantities, premise
checks and statistics the claims name, each a formula over the run frame with the paper's
place."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from problems.synthetic.strict_saddle import StrictSaddleParams
from reports.claims import (
    finished,
    numeric,
    of_problems,
    paired_or_welch,
    real_else_stand_in,
    span,
    truthy,
)
from reports.prose import Prose
from reports.results import PaperResults
from reports.rules import Sample

PAPER_DELTA = 0.01  # §4: δ = 0.01
GAP_PP = 5.0  # P2: "close to SGD" is not quantified; notes §7 propose a gap ≤ 5 pp: the
#               non-inferiority margin (declared before the runs)
MONOTONE_TOL_PP = 1.0  # P1/P5: the paper reads monotonicity off mean curves on a 0–100 %
#                        axis; a fall under 1 pp is not a visible reversal there (our choice)
SADDLE_ALPHA = 1.0  # α of T4/T5 on strict_saddle (saddle.yaml: the saddle is an FOSP, not an
#                     α-SOSP, and T = T_thm); the §3.4 selection (T8) uses its runs' own α
ESCAPE_PROB = 1 / 3  # T4: Lemma B.11 escapes a strict saddle with probability ≥ 1/3
WHP = 0.5  # T5/T8: "with high probability" is not quantified; we test the weakest reading
#            P > 1/2, which 10 seeds can decide (10/10 rejects P ≤ 1/2 at p = 0.001)
BOUND_PROB = 1 - PAPER_DELTA  # P3: Lemma 3.2's event fails with probability ≤ δ
T1_RTOL = 1e-9  # T1: σ·ε against Theorem 3.3 to rounding
OVERSPEND = 1.01  # T1p: ε spent > 1.01 × target overspends (the PLD accountant is a tight
#                   upper bound; the 1 % is the shared findings' a-priori overspend threshold,
#                   reports/paper.py findings(overspend=1.01))
PAPER_LR = 0.1  # §4 / App. A: lr 0.1, "the largest value which still achieves convergence"
ACCURACY_ROLES = ("fig1", "fig1b", "fig2a", "fig2b", "fig3a", "fig3b")
EMPIRICAL_ROLES = ("fig1", "fig1b", "fig2a", "fig2b")
# The paper's CIFAR-10 setting; B and epochs are not stated: FFCV's defaults, as notes §3
PAPER_SETTING: dict[str, Any] = {"n": 50_000, "batch_size": 512, "epochs": 24, "delta": 0.01,
                                 "d": 2_274_880}
PAPER_STEPS = PAPER_SETTING["epochs"] * (PAPER_SETTING["n"] // PAPER_SETTING["batch_size"])
STRICT = StrictSaddleParams()  # strict_saddle's defaults (λ, μ, σ₂ where a run omits them)
# Real images: problem -> data set. Fashion-MNIST with the Appendix-A CNN for 28×28×1 (the
# paper's normalised network, GroupNorm for BatchNorm); P1-P3 read these runs wherever they
# ran, and the digits stand-in only where none did.
REAL_DATA = {"fashion_mnist_cnn": "Fashion-MNIST"}
PAPER_MODEL_NAME = "cifar10_cnn"


def noise_to_bound(epsilon: float) -> float:
    """√d·Δ/C = √d·σ/B = √d·c₂√(T ln(1/δ))/(nε) of the paper's CIFAR-10 CNN setting
    (Theorem 3.3's Δ, §4's setting)."""
    s = PAPER_SETTING
    return math.sqrt(s["d"]) * math.sqrt(PAPER_STEPS * math.log(1 / s["delta"])) / (
        s["n"] * epsilon)


TEXT = Prose.load(
    Path(__file__).with_name("paper.yaml"), GAP_PP=GAP_PP, MONOTONE_TOL_PP=MONOTONE_TOL_PP,
    WHP=WHP, BOUND_PROB=BOUND_PROB, PAPER_LR=PAPER_LR, ESCAPE_PROB=ESCAPE_PROB,
    SADDLE_ALPHA=SADDLE_ALPHA, EXCESS=OVERSPEND - 1, S=PAPER_SETTING,
    PAPER_STEPS=PAPER_STEPS, NOISE_TO_BOUND=noise_to_bound(4.0),
    PER_PASS=PAPER_SETTING["n"] / PAPER_SETTING["batch_size"],
    PASSES=PAPER_STEPS * PAPER_SETTING["batch_size"] / PAPER_SETTING["n"])


# -- which runs ----------------------------------------------------------------------------

def bound_rule(runs: pd.DataFrame) -> pd.Series:
    """How each run chose C: ``lemma_3_2`` (Figure 3(b)) or ``given`` (the empirical C)."""
    return runs.get("p_alg_bound_rule", pd.Series("given", index=runs.index)).fillna("given")


def empirical(pool: pd.DataFrame) -> pd.DataFrame:
    """The noisy SGD runs of ``pool`` with the empirical C (App. A), not Lemma 3.2's."""
    return pool[(pool["algorithm"] == "noisy_sgd") & ~bound_rule(pool).eq("lemma_3_2")] \
        if len(pool) else pool


def is_real(runs: pd.DataFrame) -> pd.Series:
    """Runs on real images at 28×28 with the paper's CNN (:data:`REAL_DATA`)."""
    return of_problems(runs, REAL_DATA)


def judged_data(runs: pd.DataFrame) -> pd.Series:
    """The runs P1-P3 read: those on real images wherever any ran, else the stand-in's (a
    stand-in's verdict is never the one presented where real images ran)."""
    return real_else_stand_in(is_real(runs))


def trained(runs: pd.DataFrame) -> pd.Series:
    """Runs whose output is the last iterate (no §3.4 selection): the figures' accuracy."""
    return ~truthy(runs, "p_alg_select")


def _reference(runs: pd.DataFrame, candidates: pd.DataFrame, keys: tuple[str, ...]
               ) -> pd.DataFrame:
    """The finished ``candidates`` alike ``runs`` in ``keys`` and every problem parameter."""
    pool = finished(candidates)
    if pool.empty or runs.empty:
        return pool
    mask = pd.Series(True, index=pool.index)
    for key in (*keys, *(c for c in runs if str(c).startswith("p_prob_"))):
        if key in pool and key in runs:
            values = runs[key].dropna().unique()
            mask &= pool[key].isin(values) if len(values) else pool[key].isna()
    return pool[mask]


# -- per-sample norms against C (Lemma 3.2, Appendix A) ------------------------------------

def norms(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run: the largest per-sample norm seen, C, whether some norm exceeded C and
    whether the norms were measured at all (premise columns, else noisy_sgd's diagnostics)."""
    largest = numeric(runs, "prem_max_per_sample_norm").combine_first(
        numeric(runs, "diag_max_per_sample_grad_norm"))
    bound = numeric(runs, "prem_clip_bound").combine_first(numeric(runs, "diag_bound"))
    fraction = numeric(runs, "prem_clipped_fraction")
    void = runs["diag_guarantee_void"].astype(object) if "diag_guarantee_void" in runs else \
        pd.Series(None, index=runs.index, dtype=object)
    over = (fraction > 0).where(fraction.notna(), void.eq(True).where(void.notna(),
                                                                      largest > bound))
    measured = fraction.notna() | void.notna() | largest.notna()
    return pd.DataFrame({"largest": largest, "bound": bound, "over": over.astype(bool),
                         "measured": measured}, index=runs.index)


def within_bound(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The DP guarantee holds: no per-sample norm exceeded C (Lemma 3.2's event)."""
    seen = norms(runs).query("measured")
    if seen.empty:
        return None, "per-sample norms not recorded"
    over = seen[seen["over"]]
    held = over.empty
    shown = seen if held else over
    return held, TEXT.fill(f"evidence.{'within' if held else 'over'}_bound", runs=len(seen),
                           over=len(over), largest=shown["largest"].max(), C=span(shown["bound"]))


def share_within_bound(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """P3 (Appendix A, Figure 3(a)): 1 per run whose per-sample norms all stayed ≤ C."""
    seen = norms(runs).query("measured")
    note = (f"largest per-sample norm {seen['largest'].max():.3g} vs C = {span(seen['bound'])}"
            if len(seen) else "")
    return Sample.of((~seen["over"]).to_numpy(float), note=note)


# -- accuracy (§4, Figures 1–3, Appendix A) -------------------------------------------------

def _accuracy(runs: pd.DataFrame) -> np.ndarray:
    return numeric(runs, "final_test_acc").to_numpy(float) * 100


def private_minus_sgd(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """P2 (§4, Figure 1(a)): final test accuracy of the private runs minus non-private
    SGD's (same problem, T, B and lr), in pp, paired by seed (same data and
    initialisation); the note says how much Algorithm 1 clipped."""
    pool = results.role_runs("fig1")
    sgd = _reference(runs, pool[pool["algorithm"] == "sgd"],
                     ("problem", "steps", "batch_size", "p_alg_lr")) if len(pool) else pool
    clipped = numeric(runs, "prem_clipped_fraction").dropna() * 100
    if len(clipped) and math.isclose(clipped.min(), clipped.max(), rel_tol=1e-3):
        clipped = clipped.nsmallest(1)  # one number where the runs agree to 0.1 %
    note = f"Algorithm 1 clipped {span(clipped)} % of per-sample gradients" \
        if len(clipped) else ""
    private, reference = (pd.Series(_accuracy(r), index=r["seed"].to_numpy())
                          for r in (runs, sgd))
    return paired_or_welch(private, reference, unit="pp", note=note)


def same_c(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """P2's premise: Algorithm 1 clips at the empirical C of the noisy SGD runs of its
    problem."""
    noisy = empirical(results.role_runs("fig1"))
    bounds = norms(_reference(runs, noisy, ("problem",)))["bound"].dropna()
    clip = numeric(runs, "p_alg_clip").dropna()
    if bounds.empty or clip.empty:
        return None, "no noisy SGD run with the empirical C on this problem"
    same = np.isclose(clip.to_numpy()[:, None], bounds.to_numpy()[None, :]).all()
    return bool(same), f"Algorithm 1 clips at {span(clip)}, noisy SGD's C = {span(bounds)}"


def lemma_minus_empirical(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """P4 (Appendix A, Figure 3(b)): test accuracy with C from Lemma 3.2 minus with the
    empirical C (same problem, calibration, ε, T and batch), in pp."""
    alike = _reference(runs, empirical(results.role_runs(*EMPIRICAL_ROLES)),
                       ("problem", "calibration", "epsilon", "steps", "batch_size"))
    return Sample.of(_accuracy(runs), reference=_accuracy(alike).tolist(), unit="pp")


def paper_model(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """P6's premise (Appendix A): the largest stable learning rate is a property of the
    loss's curvature, so P6 is about the paper's own model and data; no dimensionless match
    on a stand-in exists (the CIFAR-10 CNN's smoothness is not reported)."""
    problems = sorted(set(runs["problem"].astype(str))) if "problem" in runs else []
    return set(problems) <= {PAPER_MODEL_NAME}, TEXT.fill(
        "evidence.paper_model", problems=", ".join(problems) or "nothing", model=PAPER_MODEL_NAME)


def failed_to_converge(runs: pd.DataFrame, _: PaperResults) -> pd.Series:
    """P6 (Appendix A): diverged, or the final training loss not below the initial one."""
    return truthy(runs, "diverged") | (numeric(runs, "loss_growth") >= 1.0)


# -- Theorem 3.3's calibration and privacy -------------------------------------------------

def _ledger_epsilon(runs: pd.DataFrame) -> pd.Series:
    """ε spent by each run's ledger (PLD): a run that voided its guarantee records ε = ∞
    (its norms broke the bound C: P3's subject), so its ledger is read at the plan's ε,
    which the ledger of every other run is checked to equal (T1)."""
    spent = numeric(runs, "eps_pld")
    if "diag_guarantee_void" not in runs:
        return spent
    return spent.where(~runs["diag_guarantee_void"].eq(True), numeric(runs, "eps_planned"))


def calibrated(runs: pd.DataFrame, _: PaperResults) -> pd.Series:
    """T1: σ·(ε − ε_s) = c₂ B √(T ln(1/δ)) / n (Theorem 3.3) recomputed from the run's n, B,
    T, δ, c₂, and the realised ledger spends the planned ε (PLD)."""
    select_eps = numeric(runs, "p_alg_select_epsilon", 0.0).where(truthy(runs, "p_alg_select"), 0.0)
    product = numeric(runs, "sigma") * (numeric(runs, "epsilon") - select_eps)
    theorem = (numeric(runs, "p_alg_c2", 1.0) * numeric(runs, "batch_size")
               * np.sqrt(numeric(runs, "steps") * np.log(1 / numeric(runs, "delta")))
               / numeric(runs, "n"))
    formula = np.isclose(product, theorem, rtol=T1_RTOL, atol=0)
    planned, spent = numeric(runs, "eps_planned"), _ledger_epsilon(runs)
    ledger = planned.isna() | spent.isna() | np.isclose(spent, planned, rtol=1e-6, atol=0)
    return ledger & formula


def spent(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """T1p (Theorem 3.3 via Theorem 3.1): per run, ε spent (PLD accountant at the run's δ)
    within 1 % of the target ε, with the ratio, the c₂ that would spend exactly ε and
    Theorem 3.1's c₁ in the note (a diverged run spends its ε all the same; a void run is
    read at its ledger's planned ε, :func:`_ledger_epsilon`)."""
    eps, target = _ledger_epsilon(runs), numeric(runs, "epsilon")
    recorded = eps.notna()
    ratio = (eps / target)[recorded]
    c2 = numeric(runs, "plan_noise_ratio_tight_over_paper").dropna()
    c1 = (target / numeric(runs, "plan_abadi_max_epsilon")).dropna()
    note = "".join(TEXT.fill(f"evidence.{key}", spent=span(eps[recorded]), ratio=span(ratio),
                             c=span(c))
                   for key, c in (("spent", ratio), ("spent_c2", c2), ("spent_c1", c1))
                   if len(c)) if recorded.any() else "ε spent (PLD) not recorded"
    return Sample.of((ratio <= OVERSPEND).to_numpy(float), note=note)


# -- Theorem 3.4 on strict_saddle ----------------------------------------------------------

def rho(runs: pd.DataFrame) -> pd.Series:
    """ρ of strict_saddle: λ + 0.859μ + 0.770σ₂ (the problem's constant)."""
    formula = (numeric(runs, "p_prob_lam", STRICT.lam)
               + 0.859 * numeric(runs, "p_prob_mu", STRICT.mu)
               + 0.770 * numeric(runs, "p_prob_sigma2", STRICT.sigma2))
    return numeric(runs, "plan_rho").combine_first(formula)


def t_thm(runs: pd.DataFrame) -> pd.Series:
    """T_thm = 64 f_max/(ηα²) of Theorem 3.4, f_max = F(x₀) − F* = 2λ at the saddle."""
    return 64 * 2 * numeric(runs, "p_prob_lam", STRICT.lam) / (
        numeric(runs, "p_alg_lr") * SADDLE_ALPHA**2)


def escaped(runs: pd.DataFrame, _: PaperResults) -> pd.Series:
    """T4 (Lemma B.11): the output's λ_min > −√(ρα): it is not at the strict saddle any
    more."""
    return numeric(runs, "final_lambda_min") > -np.sqrt(rho(runs) * SADDLE_ALPHA)


def _iterates(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """The evaluated iterates (with step) of ``runs``, with each run's ρ."""
    traj = results.trajectories
    if traj.empty or "run_id" not in runs or not {"grad_norm", "lambda_min"} <= set(traj):
        return pd.DataFrame(columns=["run_id", "step", "grad_norm", "lambda_min", "rho"])
    rows = traj[(traj["point"] == "iterate") & traj["run_id"].isin(runs["run_id"])]
    per_run = pd.Series(rho(runs).to_numpy(), index=runs["run_id"].to_numpy())
    return rows.assign(rho=rows["run_id"].map(per_run))


def sosp_share(runs: pd.DataFrame, results: PaperResults) -> pd.Series:
    """T5 (Theorem 3.4): per run, the share of its evaluated iterates after x₀ that are
    α-SOSPs (‖∇F‖ < α and λ_min > −√(ρα))."""
    rows = _iterates(runs, results)
    rows = rows[rows["step"] > 0]
    sosp = (rows["grad_norm"] < SADDLE_ALPHA) & (
        rows["lambda_min"] > -np.sqrt(rows["rho"] * SADDLE_ALPHA))
    return runs["run_id"].map(sosp.groupby(rows["run_id"]).mean()).dropna()


def at_saddle(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """x₀ is a strict saddle that is not an α-SOSP: ‖∇F(x₀)‖ < α, λ_min(x₀) ≤ −√(ρα)."""
    start = _iterates(runs, results)
    start = start[start["step"] == 0]
    if start.empty or start["lambda_min"].isna().all():
        return None, "λ_min(x₀) not recorded"
    edge = -np.sqrt(start["rho"] * SADDLE_ALPHA)
    ok = (start["grad_norm"] < SADDLE_ALPHA) & (start["lambda_min"] <= edge)
    return bool(ok.all()), TEXT.fill(
        "evidence.at_saddle", grad=start["grad_norm"].max(), edge=edge.max(),
        lam=start["lambda_min"].max(), ok=int(ok.sum()), runs=len(ok))


def horizon(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """T ≥ T_thm = 64 f_max/(ηα²) (Theorem 3.4), f_max = F(x₀) − F* = 2λ at the saddle."""
    needed, lr = t_thm(runs), numeric(runs, "p_alg_lr")
    steps = numeric(runs, "prem_steps_taken").combine_first(numeric(runs, "steps"))
    if needed.isna().all() or steps.isna().all():
        return None, "T or η not recorded"
    short = steps < needed
    recorded = numeric(runs, "prem_horizon").dropna()
    return not bool(short.any()), TEXT.fill(
        "evidence.horizon", T=span(steps), sign="<" if short.any() else "≥", needed=needed.max(),
        lr=span(lr), f_max=span(2 * numeric(runs, "p_prob_lam", STRICT.lam)),
        short=int(short.sum()) if short.any() else len(runs), runs=len(runs),
        note=TEXT.fill("evidence.recorded", T=span(recorded)) if len(recorded) else "")


def selected_sosp(runs: pd.DataFrame, _: PaperResults) -> pd.Series:
    """T8 (§3.4): the selection passed and returned a 4α-SOSP: ‖∇F‖ < 4α,
    λ_min > −√(4ρα)."""
    alpha = numeric(runs, "p_alg_alpha", SADDLE_ALPHA)
    four = (numeric(runs, "final_grad_norm") < 4 * alpha) & (
        numeric(runs, "final_lambda_min") > -np.sqrt(rho(runs) * 4 * alpha))
    return truthy(runs, "diag_selection_passed") & four


# -- Algorithm 2 against Algorithm 1 (§3.1, Theorem 3.3's proof) ----------------------------

PAIR_KEYS = ("seed", "epsilon", "calibration", "steps", "batch_size", "p_alg_lr")


def _partners(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """Each noisy SGD run beside its Algorithm-1 partner (dp_sgd with the same seed, ε,
    problem and schedule); ``clip`` and ``C`` for the premise."""
    pool = results.role_runs("saddle")
    clipped = finished(pool[pool["algorithm"] == "dp_sgd"]) if len(pool) else pool
    if clipped.empty or runs.empty:
        return pd.DataFrame()
    keys = [k for k in (*PAIR_KEYS, *(c for c in runs if str(c).startswith("p_prob_")))
            if k in clipped and k in runs]
    seen = norms(clipped)
    right = clipped.assign(clip=numeric(clipped, "p_alg_clip"),
                           clip_over=seen["over"] & seen["measured"])
    return runs.assign(C=norms(runs)["bound"]).merge(right, on=keys, suffixes=("", "_clip"))


def same_clip(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """T2's premise: Algorithm 1 clips at the same C and never clips."""
    pairs = _partners(runs, results)
    if pairs.empty:
        return False, "no Algorithm-1 (dp_sgd) run with the same seed, ε and problem"
    clipped = pairs["clip_over"].astype(bool)
    ok = np.isclose(pairs["clip"], pairs["C"], rtol=1e-12, atol=0) & ~clipped
    return bool(ok.all()), TEXT.fill(
        "evidence.same_clip", clip=span(pairs["clip"]), C=span(pairs["C"]),
        active=int(clipped.sum()), ok=int(ok.sum()), runs=len(pairs))


def identical(runs: pd.DataFrame, results: PaperResults) -> pd.Series:
    """T2: per pair, the final loss, gradient norm and λ_min of both runs are bitwise
    equal."""
    pairs = _partners(runs, results)
    same = pd.Series(True, index=pairs.index)
    for metric in ("final_loss", "final_grad_norm", "final_lambda_min"):
        if metric in pairs and f"{metric}_clip" in pairs:
            a, b = pairs[metric], pairs[f"{metric}_clip"]
            same &= (a == b) | (a.isna() & b.isna())
    return same


# -- the regime: our setting's side --------------------------------------------------------

def per_problem(value: Callable[[pd.DataFrame], str], at: Any = None,
                tail: str = "") -> Callable[[PaperResults], str]:
    """A regime row's measured side: ``value`` of the noisy SGD fig1 runs (those ``at``
    keeps), one per problem (real images, stand-in), then ``tail``."""
    def measured(results: PaperResults) -> str:
        runs = results.role_runs("fig1")
        if runs.empty:
            raise ValueError("no Figure 1 runs")
        runs = runs[runs["algorithm"] == "noisy_sgd"]
        runs = runs[at(runs)] if at is not None else runs
        return "; ".join(f"{REAL_DATA.get(str(p), f'{p!s} (stand-in)')}: {value(part)}"
                         for p, part in runs.groupby("problem")) + tail

    return measured


def noise_per_bound(runs: pd.DataFrame) -> str:
    """√d·σ/B (= √d·Δ/C) of ``runs``, with their d and n."""
    d = numeric(runs, "plan_d")
    value = np.sqrt(d) * numeric(runs, "sigma") / numeric(runs, "batch_size")
    return f"{span(value.dropna())} (d = {span(d)}, n = {span(numeric(runs, 'n'))})"


def horizon_ratio(results: PaperResults) -> str:
    """T / T_thm of the saddle runs' noisy SGD without the §3.4 selection."""
    runs = results.role_runs("saddle")
    runs = runs[(runs["algorithm"] == "noisy_sgd") & trained(runs)]
    return f"{span((numeric(runs, 'steps') / t_thm(runs)).dropna())} (α = {SADDLE_ALPHA:g})"
