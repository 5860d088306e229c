"""liu2024, adaptive-batch SpiderBoost with the tree mechanism: a theory paper without
experiments, so its claims are checked on the suite's designs E1–E4 (notes §5).

Roles (``role:`` in bench/experiments/liu2024/*/): ``e2`` (SOSP vs FOSP methods end to
end), ``e2_uniform`` (E2's FOSP methods at their own output rule, a uniformly random iterate:
claim E2b), ``e3`` (samples to the first certified SOSP over α and ε on the cosine saddle),
``e3_chain`` (the same over α on the gated chain of saddles, ``saddle_chain``), ``e4``
(ablations and the paper's calibration). E1 (Algorithm 2 alone) and the noise part of E4(i)
are studies (bench/studies/liu2024.py) that ``saddlebench reproduce`` runs and stores; the
page only reads them.

Why E2's last iterates cannot separate at quick scale (the page's "why results differ"
gives the numbers): a noisy first-order step from the saddle grows the escape component by
≈ (1 + ηλ) per step, which is also the rate of Algorithm 2's power iteration on I − ηH
(η = 1/M), and the log of the noise enters both escape times alike; any budget that lets
spider_sosp finish one escape (Γ steps) lets DP-SGD's noise carry it off the saddle, and
below that budget spider_sosp cannot escape either. So no FOSP method's last iterate is at
the saddle, and the last-iterate variant (claim E2b-last) names that failed premise. But
the FOSP methods' guarantees are stated for a uniformly random iterate (Ghadimi & Lan
2013's randomized output, the rule of the DP-SGD and SpiderBoost-type FOSP analyses the
paper and Ganesh et al. 2023 build on), and their first 10–30 of 150 iterates are still at
the saddle: claim E2b scores that output rule (``e2_uniform``), where Alg 3-R keeps its
certified output.

Declared constants of the rules:

* ``IOTA`` = 0.05, the failure probability ι of Theorem 3.4 and of spider_sosp (notes
  §2.7): high-probability statements are tested as P(event) > 1 − ι (exact binomial);
* ``SOSP_GRADIENT`` = 1.25: an output is an Õ(α)-SOSP when ‖∇F‖ ≤ 1.25α and
  λ_min ≥ −√(ρα); 1.25 = c_det + 1/c_γ, the gradient a certificate guarantees (the escape
  fires at ‖∇̃‖ ≤ c_det·α, and ‖∇̃ − ∇F‖ ≤ γ = α/c_γ by Lemma 3.14); the theorem's Õ(α)
  allows any constant;
* ``GROWTH_LIMIT`` = 1.5: "does not grow with the phase length" as a ratio of the mean
  noise norm over the last to the first quarter of 256 leaves; flat noise gives 1, the √k
  growth of per-step Gaussian noise gives 2.8 there (a threshold between the two, kept from
  the page before the claims were declared);
* ``CERT_SLOPE`` = −1.8: the worst-case bound of Theorem 3.17 counts T = Õ(BM/γ²) ∝ α⁻²
  steps, and its α-exponent binds only where the steps to the first certificate grow so;
  on testbed A (one saddle level) they do not, so E3 runs on the chain of saddles, whose
  K ∝ α^{−3/2} escapes of Γ ∝ α^{−1/2} steps predict −2; −1.8 allows the ceilings of K
  (issue 37's premise, taken as the issue states it). E3ε needs no such premise: its
  ε-exponent comes from b, b_t ∝ 1/ε at every step, not from the horizon;
* ``PRIVACY_SHARE`` = 3: on the chain, α√d/ε ≥ 3·(BGM)^{1/3} (issue 37: privacy dominates
  the drift threshold κ by ≥ 3×, so the samples follow √d/(εα²) and not the non-private
  1/α³); E3ε's cells need ≥ 1 (its grid was chosen so, tests/test_liu2024.py);
* ``SLACK`` = 0.25 added to E3's exponent 2: the Õ's polylogs over the chain's factor 2 in α.
  The tree depth L = ⌈log₂T⌉ + 1 enters b twice (the calibrated σ ∝ √L, s_g ∝ 1/√L), so
  b ∝ L, and T ∝ α⁻² adds 2 levels to L ≈ 15–17: 0.18 on the slope, rounded up (from these
  formulas, not from the runs; the chain's measured slopes, near 3, are far from 2.25
  either way);
* ``CENSORED_SHARE`` = 0.5: a run that exhausts its data before the first certificate has
  only a lower bound of N (censored); it is excluded from E3's fits and counted, and a
  group that loses more than half its runs so is out of regime (the exclusion would bias
  the slope down, towards the bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.studies.liu2024 import (
    HESSIAN_THIRD,
    e1_escape,
    e4_noise_growth,
    escape_summary,
    noise_summary,
    quarter_growth,
    trials_for,
)
from problems.synthetic.saddle_chain import SaddleChainParams, link
from reports.claims import (
    Claim,
    Control,
    Paper,
    Premise,
    Regime,
    Runs,
    Statistic,
    at_most,
    flag,
)
from reports.figures import colours, save_figure
from reports.paper import (
    PaperResults,
    PaperSections,
    Provenance,
    calibration_table,
    deviations,
    format_mean_se,
    mean_se,
    rates_table,
    settings,
)
from reports.results import Figure
from reports.rules import (
    Always,
    AtLeast,
    AtMost,
    Fraction,
    Sample,
    SlopeAtMost,
    as_float,
    log_slope,
)

SOSP_METHODS = ("spider_sosp", "spider_sosp_paper_tau")
AT_SPENT = "dp_sgd_at_spent_eps"  # E2's control: DP-SGD at about spider_sosp's spent ε
SLOPES = {"this paper (Thm 3.17)": -2.0, "Ganesh et al. 2023 (claimed)": -7 / 3,
          "Tao et al. 2025": -5 / 2}
IOTA = 0.05
SOSP_GRADIENT = 1.25
GROWTH_LIMIT = 1.5
CERT_SLOPE = -1.8
PRIVACY_SHARE = 3.0
SLACK = 0.25
CENSORED_SHARE = 0.5
E1, E4I = "e1_escape", "e4_noise_growth"

RESOLUTIONS = (
    ("Alg. 1 (T1)", "levels 1..log Σ miss the node [1, Σ]", "levels 0..⌈log₂Σ⌉"),
    ("Alg. 1 (T2)", "N(0, σ²) per node", "N(0, σ²I_d), drawn once per node and reused"),
    ("Alg. 3 l.5–8 (A4)", "∇̃_t undefined on refresh steps; a global tree over restarted sums",
     "∇̃_t released on refreshes too; a new tree at every refresh"),
    ("Alg. 3 (A6)", "b_t a function of ‖g_t‖, which needs b_t", "b_t from ‖g_{t−1}‖"),
    ("Alg. 3 l.11 (A7)", "threshold γ log³(BMd/ρω) (~10³·γ)", "c_det·α with c_det = 1"),
    ("Lemma 3.13 (A13)", "σ_tree depends on realised max_t ‖∇̃_t‖/b_t",
     "fixed sensitivity targets s_g, s_H; batches sized to meet them"),
    ("Lemma 3.14 (G1)", "τ = α^{3/2}/(M√ρ) < 1 budgets Γτ < Γ escape releases",
     "K = Γ·max(1, τ) releases per Hessian lifetime; τ paper (a refresh after every "
     "escape) or repaired ⌈κ√ρ/(M√α)⌉"),
    ("App. B.3", "add/remove sensitivities under replace-one DP",
     "replace-one: 2G/b, 2M‖Δx‖/b_t, 2M/b, 2ρ‖Δx‖/b_t"),
    ("§2.7", "constants hidden in Õ(·)", "γ = α/4, ϰ = √(ρα)/4, Ξ = √(α/ρ), "
     "Γ = ⌈2(M/√(ρα)) ln(d/ι)⌉, T = ⌈32BM/α²⌉, κ = max{α√d/ε, (BGM)^{1/3}}, c_v = 1, "
     "ι = 0.05; concentration logs absorbed into c_v"),
    ("Alg. 3 l.25", "all iterates returned, no selection rule",
     "output the anchor of the first failed escape (S1), else the last iterate"),
    ("Thm 3.17", "an Õ(α)-SOSP", f"‖∇F‖ ≤ {SOSP_GRADIENT:g}α (c_det + 1/c_γ, what a "
     "certificate guarantees) and λ_min ≥ −√(ρα)"),
    ("E2", "Ganesh et al. 2023's method", "tao2025's reconstruction dp_spider_at with fixed "
     "batches, without its private selection (label ganesh2023)"),
)
ROLES = {
    "e2": "E2, SOSP vs FOSP methods from the exact saddle, each at its output (Alg 3-R's "
          "certificate, the FOSP methods' last iterate; claims E2a, E2b-last and its control "
          "at spent ε, 1R; Alg 3-R is E2b's reference; the E2 table)",
    "e2_uniform": "E2's FOSP methods at their own output rule, a uniformly random iterate "
                  "(claim E2b; the E2 table)",
    "e3": "E3, samples to the first certified SOSP over α and ε (claims E3, E3ε, 1R; the E3 "
          "table and figure)",
    "e4": "E4, ablations and the paper's calibration at the theorem's and the repaired τ "
          "(claims 1, 1U, 1R, 11; the E4 and calibration tables)",
    "e3_chain": "E3 on the gated chain of saddles (saddle_chain), one suite per α: samples and "
                "steps to the first certificate at the theorem's and the repaired τ (claims "
                "E3, E3-R; the chain table)",
}


# -- per-run quantities -----------------------------------------------------------------------

def _rho(runs: pd.DataFrame) -> pd.Series:
    """ρ of the cosine testbed from each run's parameters (strict_saddle)."""
    return runs["p_prob_lam"] + HESSIAN_THIRD[0] * runs["p_prob_mu"] + \
        HESSIAN_THIRD[1] * runs["p_prob_sigma2"]


def _e2_alpha(results: PaperResults) -> float:
    """The α of E2 (the spider_sosp entries'; the FOSP methods have none)."""
    alphas = results.role_runs("e2").get("p_alg_alpha", pd.Series(dtype=float)).dropna()
    return float(alphas.iloc[0]) if len(alphas) else math.nan


def _sosp(runs: pd.DataFrame, alpha: float) -> np.ndarray:
    """Whether each run's output is an Õ(α)-SOSP (see SOSP_GRADIENT)."""
    if runs.empty:
        return np.array([])
    ok = (runs["final_grad_norm"] <= SOSP_GRADIENT * alpha) & \
        (runs["final_lambda_min"] >= -np.sqrt(_rho(runs) * alpha))
    return ok.to_numpy(float)


def _certified(runs: pd.DataFrame) -> pd.Series:
    if "diag_output" not in runs:
        return pd.Series(False, index=runs.index)
    return runs["diag_output"].eq("certificate")


def _samples(runs: pd.DataFrame) -> pd.Series:
    return runs["diag_samples_used"].astype(float)


def _censored(runs: pd.DataFrame) -> pd.Series:
    """Runs whose N is censored: the data stream ran out before the first certificate (N is
    then only a lower bound, the data cap)."""
    if "diag_stopped" not in runs:
        return pd.Series(False, index=runs.index)
    return ~_certified(runs) & runs["diag_stopped"].eq("data")


def _censoring_note(runs: pd.DataFrame) -> str:
    censored, certified = _censored(runs), _certified(runs)
    other = ~certified & ~censored
    return (f"{int(censored.sum())}/{len(runs)} runs censored at the data cap and "
            f"{int(other.sum())} without a certificate within T, excluded")


T_THM = ("p_alg_c_steps", "p_alg_gap", "plan_c_M", "p_alg_alpha")


def _t_thm(runs: pd.DataFrame) -> pd.Series:
    """Prop. 3.10's horizon T = ⌈c_T·B·M/α²⌉ (B = gap; §2.7), whatever ``steps`` was set."""
    return pd.Series(np.ceil(runs["p_alg_c_steps"] * runs["p_alg_gap"] * runs["plan_c_M"]
                             / runs["p_alg_alpha"] ** 2), index=runs.index)


# -- premises -----------------------------------------------------------------------------------

Check = Callable[[pd.DataFrame, PaperResults], tuple[bool | None, str]]


def _needs(*columns: str) -> Callable[[Check], Check]:
    """A premise check that answers 'not recorded' when a column is missing."""
    def wrap(check: Check) -> Check:
        def guarded(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
            missing = [c for c in columns if c not in runs or runs[c].isna().all()]
            if missing:
                return None, f"{', '.join(missing)} not recorded"
            return check(runs, results)
        return guarded
    return wrap


@_needs("diag_output")
def _all_certified(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    ok = _certified(runs)
    return bool(ok.all()), f"first certificate reached in {int(ok.sum())}/{len(runs)} runs"


@_needs("diag_output", "diag_stopped")
def _censoring_bounded(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """At most CENSORED_SHARE of each α (or ε) group without an observed N (censored at
    the data cap, or no certificate within T): excluding more would bias the fitted slope
    down, in the direction of the upper bound."""
    axis = "p_alg_alpha" if runs["p_alg_alpha"].nunique() > 1 else "epsilon"
    shares = (~_certified(runs)).groupby(runs[axis]).mean()
    worst = float(shares.max()) if len(shares) else 0.0
    return worst <= CENSORED_SHARE, (f"{_censoring_note(runs)}; worst {axis.replace('p_alg_', '')}"
                                      f" group {100 * worst:.0f} % unobserved "
                                      f"(≤ {100 * CENSORED_SHARE:g} % allowed)")


@_needs("diag_stopped")
def _stream_left(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    out = runs["diag_stopped"].eq("data")
    return not bool(out.any()), f"data stream exhausted in {int(out.sum())}/{len(runs)} runs"


def _privacy_share(runs: pd.DataFrame) -> pd.Series:
    """κ_priv/κ_np = (α√d/ε)/(BGM)^{1/3}, Lemma 3.16's two drift thresholds (G, M as run)."""
    private = runs["p_alg_alpha"] * np.sqrt(runs["p_prob_d"]) / runs["epsilon"]
    return private / (runs["p_alg_gap"] * runs["plan_c_G"] * runs["plan_c_M"]) ** (1 / 3)


def _privacy_dominates(share: float) -> Check:
    @_needs("p_alg_alpha", "p_prob_d", "plan_c_G", "plan_c_M", "p_alg_gap")
    def check(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
        ratio = _privacy_share(runs)
        below = ratio < share
        floor = (runs["p_alg_gap"] * runs["plan_c_G"] * runs["plan_c_M"]) ** (1 / 3)
        return not bool(below.any()), (
            f"(α√d/ε)/(BGM)^(1/3) = {_span(ratio)} (α√d/ε {_span(ratio * floor)}, "
            f"(BGM)^(1/3) = {_span(floor)}; ≥ {share:g} needed): below in "
            f"{int(below.sum())}/{len(runs)} runs")
    return check


def _certificate_slope(runs: pd.DataFrame) -> tuple[float, float]:
    """(OLS slope of log t_cert on log α over the certified runs, its s.e.)."""
    done = runs[_certified(runs)]
    groups = {as_float(a): part["diag_first_certificate_t"].astype(float).to_numpy()
              for a, part in done.groupby("p_alg_alpha")}
    slope, se, _, _ = log_slope(groups)
    return slope, se


@_needs("diag_first_certificate_t", "diag_output", *T_THM)
def _certificates_scale(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The steps to the first certificate grow like the worst case's T ∝ α⁻² (slope of
    log t_cert on log α ≤ CERT_SLOPE), beside their share of T_thm."""
    slope, se = _certificate_slope(runs)
    if not math.isfinite(slope):
        return None, "too few certified runs for a slope (≥ 3 over ≥ 2 values of α)"
    done = runs[_certified(runs)]
    share = done["diag_first_certificate_t"].astype(float) / _t_thm(done)
    return slope <= CERT_SLOPE, (
        f"slope of log t_cert on log α {slope:+.2f} ± {se:.2f} (≤ {CERT_SLOPE:g} needed; the "
        f"worst case −2); t_cert {_span(done['diag_first_certificate_t'], 'g')} steps, "
        f"{_span(100 * share, '.2g', ' %')} of T_thm, after "
        f"{_span(done['diag_escapes'], 'g')} escapes")


@_needs("diag_escapes")
def _escape_triggers(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    none = runs["diag_escapes"].astype(float) < 1
    return not bool(none.any()), (f"no escape triggered (line 11 never fired) in "
                                  f"{int(none.sum())}/{len(runs)} runs")


def _adaptive_certified(_: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    adaptive = _adaptive(results)
    if adaptive.empty:
        return None, "no adaptive-batch runs"
    certified, text = _all_certified(adaptive, results)
    left, stream = _stream_left(adaptive, results)
    passed = None if certified is None else certified and left is not False
    return passed, f"adaptive batches: {text}; {stream}"


@_needs("diag_output", "plan_c_steps", *T_THM)
def _certificate_or_horizon(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    horizon = _t_thm(runs)
    short = ~_certified(runs) & (runs["plan_c_steps"] < horizon)
    return not bool(short.any()), (
        f"no certificate within T = {runs['plan_c_steps'].min():g} < T_thm = "
        f"{horizon.max():g} steps in {int(short.sum())}/{len(runs)} runs")


def _reference(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """Alg 3-R's E2 runs at the λ of ``runs`` (the comparison's reference)."""
    e2 = results.role_runs("e2")
    if e2.empty or "p_prob_lam" not in runs:
        return e2
    done = e2[(e2["label"] == "spider_sosp") & (e2["status"] == "done")]
    return done[done["p_prob_lam"].isin(runs["p_prob_lam"].unique())]


def _reference_escapes(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    ref = _reference(runs, results)
    if ref.empty or "diag_escapes" not in ref:
        return None, "Alg 3-R's escapes not recorded"
    passed, text = _escape_triggers(ref, results)
    return passed, f"Alg 3-R at this λ: {text}"


def _saddle_holds(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    sosp = _sosp(runs, _e2_alpha(results))
    if not len(sosp):
        return None, "no outputs"
    return bool((sosp < 0.5).any()), (
        f"{int((sosp < 0.5).sum())}/{len(sosp)} outputs of this method are not Õ(α)-SOSPs "
        "(0: its own DP noise escapes the saddle, nothing to separate)")


BOUNDS = "true per-sample constants G, M, ρ for the problem (Assumption 3.1), so that the " \
    "clips at G and M‖Δx‖ never act"
GRADIENT_BOUND = at_most("Assumption 3.1: per-sample gradients ≤ G (O1's clip inactive)",
                         "prem_max_per_sample_norm", "prem_clip_bound", BOUNDS,
                         "largest per-sample ‖∇f‖")
DIFFERENCE_BOUND = at_most(
    "Assumption 3.1: per-sample differences ≤ M‖Δx‖ (O2's clip inactive)",
    "prem_max_per_sample_norm_diff", "prem_clip_bound_diff", BOUNDS,
    "largest per-sample ‖∇f(x) − ∇f(x′)‖/‖x − x′‖")
ASSUMPTION = (GRADIENT_BOUND, DIFFERENCE_BOUND)
CENSORING = Premise(
    f"N observed in ≥ {100 * (1 - CENSORED_SHARE):g} % of each group (runs censored at the "
    "data cap or without a certificate within T are excluded from the fit and counted)",
    _censoring_bounded,
    "a larger n (or horizon), so that most runs reach their first certificate")
ADAPTIVE_CERTIFIED = Premise(
    "the adaptive runs reach their first certificate (their N is observed, not censored)",
    _adaptive_certified, "a larger horizon or data stream for the adaptive runs")
PRIVACY_DOMINATES = Premise(
    "privacy term dominates (κ = α√d/ε ≥ (BGM)^(1/3), Thm 3.17 / Lemma 3.15)",
    _privacy_dominates(1.0),
    "larger d or smaller ε (the paper-scale E3 has d ∈ {16, 64}, ε down to 0.25), so that "
    "α√d/ε exceeds (BGM)^(1/3) and √d/(εα²) exceeds the non-private 1/α³")
PRIVACY_DOMINATES_CHAIN = Premise(
    f"privacy dominates by ≥ {PRIVACY_SHARE:g}× (α√d/ε ≥ {PRIVACY_SHARE:g}·(BGM)^(1/3), "
    "Lemma 3.16's κ)", _privacy_dominates(PRIVACY_SHARE),
    "a chain with a smaller B·G·M or a larger √d/ε: a ρ-Hessian-Lipschitz chain of "
    "K ∝ α^{−3/2} links has B = (K + 1)A with A ≥ 32r³(ρα)^{3/2}/ρ², so (BGM)^{1/3} ≈ 8 here, "
    "and α√d/ε ≥ 24 needs ε ≤ 0.04 at d = 24 (10⁸ samples a run)")
CERTIFICATES_SCALE = Premise(
    f"the horizon binds: steps to the first certificate ∝ α^s with s ≤ {CERT_SLOPE:g} (the "
    "worst case's T = Õ(BM/γ²) ∝ α⁻², Prop. 3.10)", _certificates_scale,
    "more links per α (K ∝ α^{−3/2} with less ceiling) or a wider α range, so that the "
    "escapes, not the descent between them, set the steps")
ESCAPES = Premise(
    "an escape triggers (‖∇̃_t‖ ≤ c_det·α at some t)", _escape_triggers,
    "a start where the private gradient estimate can fall below c_det·α (the saddle), or a "
    "larger horizon")
CERTIFICATE_OR_HORIZON = Premise(
    "the output is a certificate, or the run had the theorem's horizon T_thm = 32·2·M/α²",
    _certificate_or_horizon,
    "a horizon of T_thm steps for runs that end without a failed escape (Prop. 3.10 needs "
    "them for some iterate to be an SOSP)")
REFERENCE_ESCAPES = Premise("Alg 3-R's escape triggers at this λ", _reference_escapes,
                            ESCAPES.remedy)
SADDLE_HOLDS = Premise(
    "the saddle holds this FOSP method in some run (notes §5 E2 caveat)", _saddle_holds,
    "weaker curvature, a shorter horizon or less noise (the notes' hard instance), so that "
    "an FOSP method can end at the saddle")


# -- statistics ---------------------------------------------------------------------------------

def _sosp_share(runs: pd.DataFrame, results: PaperResults) -> Sample:
    return Sample.of(_sosp(runs, _e2_alpha(results)))


def _separation(runs: pd.DataFrame, results: PaperResults) -> Sample:
    alpha = _e2_alpha(results)
    return Sample.of(_sosp(_reference(runs, results), alpha), reference=_sosp(runs, alpha))


def _samples_along(axis: str) -> Statistic:
    """N by ``axis`` over the certified runs; censored runs (data cap) and runs without a
    certificate are excluded and counted in the note (the CENSORING premise bounds them)."""
    def compute(runs: pd.DataFrame, _: PaperResults) -> Sample:
        done = runs[_certified(runs)]
        if done.empty or axis not in done:
            return Sample.along({})
        sample = Sample.along({as_float(k): _samples(part).to_numpy()
                               for k, part in done.groupby(axis)}, unit="samples")
        return replace(sample, note=_censoring_note(runs))
    return Statistic(f"samples to the first certificate by {axis.replace('p_alg_', '')} "
                     "(censored runs excluded, counted)", compute)


def _adaptive(results: PaperResults) -> pd.DataFrame:
    """E4's Alg 3-R runs (adaptive batches, tight calibration): claim 11's reference."""
    e4 = results.role_runs("e4")
    if e4.empty:
        return e4
    return e4[(e4["label"] == "spider_sosp") & (e4["status"] == "done")]


def _fixed_minus_adaptive(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Fixed-batch samples (a lower bound of N where the run stopped before its first
    certificate: conservative for the claim) against the adaptive runs' observed N."""
    adaptive = _adaptive(results)
    censored = _censored(runs)
    cap = f" (N ≥ {_samples(runs[censored]).min():.3g}, the data cap)" if censored.any() else ""
    return Sample.of(_samples(runs), reference=_samples(adaptive[_certified(adaptive)]),
                     unit="samples", note=f"fixed batches censored in {int(censored.sum())}/"
                                          f"{len(runs)} runs{cap}: lower bounds, counted as such")


def _within_target(runs: pd.DataFrame, _: PaperResults) -> Sample:
    if "eps_pld" not in runs or runs.empty:
        return Sample.of([])
    spent = runs["eps_pld"].astype(float)
    return Sample.of((spent <= runs["epsilon"] * (1 + 1e-6)).to_numpy(float),
                     note=f"realised ε (PLD) {spent.min():.3g}–{spent.max():.3g} against a "
                          f"target of {runs['epsilon'].max():g}")


def _gdp_epsilon(mu: float, delta: float) -> float:
    """ε(δ) of μ-GDP: δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def gap(eps: float) -> float:
        return float(norm.cdf(-eps / mu + mu / 2)
                     - math.exp(eps + norm.logcdf(-eps / mu - mu / 2)) - delta)

    return 0.0 if gap(0.0) <= 0 else float(brentq(gap, 0.0, mu * mu + 40 * mu))


def _gdp_mu(eps: float, delta: float) -> float:
    """The μ whose μ-GDP spends ``eps`` at δ."""
    from scipy.optimize import brentq

    return float(brentq(lambda mu: _gdp_epsilon(mu, delta) - eps, 1e-6, 50.0))


def _add_remove(eps: pd.Series, delta: float) -> pd.Series:
    """ε under add/remove adjacency of ledgers whose releases are unsampled Gaussians
    (μ-GDP, exact) accounted with replace-one sensitivities: the paper's sensitivities
    G/b, M/b, … are half of those, so μ halves."""
    return eps.map(lambda e: _gdp_epsilon(_gdp_mu(e, delta) / 2, delta))


def _streams(runs: pd.DataFrame, delta: float) -> str:
    """The worst case per stream: L tree nodes, K escape releases, each at the plan's noise
    over the worst record's sensitivity (μ-GDP), replace-one / add/remove."""
    def both(mu: pd.Series) -> str:
        return (f"{_span(mu.map(lambda m: _gdp_epsilon(m, delta)))}/"
                f"{_span((mu / 2).map(lambda m: _gdp_epsilon(m, delta)))}")

    tree = np.sqrt(runs["plan_c_depth"]) / runs["plan_tree_multiplier"]
    escapes = np.sqrt(runs["plan_escape_releases"]) / runs["plan_escape_multiplier"]
    return f"tree stream {both(tree)}, escape stream {both(escapes)}"


def _theorem_privacy(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Claim 1: realised ε ≤ target per run; the note gives the realised and worst-case ε
    (replace-one/add/remove), per stream, Theorem 2.2's σ at these batches, and claim 1U's
    finding at the same τ beside it."""
    if "eps_pld" not in runs or runs.empty:
        return Sample.of([])
    spent, target = runs["eps_pld"].astype(float), float(runs["epsilon"].max())
    delta = float(runs["delta"].iloc[0])
    factor = 4 * np.sqrt(np.log2(runs["plan_c_steps"]) * math.log(1 / delta))
    short = runs["plan_tree_shortfall"]
    note = (f"realised ledgers ε {_span(spent)} replace-one, "
            f"{_span(_add_remove(runs['eps_gdp'].astype(float), delta))} add/remove "
            f"(target {target:g}); worst case (planned ledger) "
            f"{_span(runs['eps_planned'].astype(float))}/"
            f"{_span(_add_remove(runs['eps_planned'].astype(float), delta))} "
            f"(replace-one/add/remove): {_streams(runs, delta)}. By the paper's own Theorem "
            f"2.2 at these batches σ_tree is {_span(runs['plan_tree_shortfall_o1'], '.2f')}× "
            f"(O1's leaf G/b) to {_span(short, '.2f')}× (the largest O2 leaf) too small, "
            f"ε {_span(target * runs['plan_tree_shortfall_o1'])}–{_span(target * short)}: "
            f"σ = α/√d lacks its factor 4√(log₂T·ln(1/δ)) = {_span(factor)}, which b_t's "
            f"other terms offset {_span(factor / short, '.2g')}×")
    honest = _honest_note(runs, results)
    return Sample.of((spent <= runs["epsilon"] * (1 + 1e-6)).to_numpy(float),
                     note=note + (f". Beside it (claim 1U): {honest}" if honest else ""))


def _honest(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """E4's runs at the theorem's batches with honest (PLD) noise, at the τ of ``runs``."""
    e4 = _done(results, "e4")
    if e4.empty or "p_alg_parameters" not in e4:
        return e4
    return e4[(e4["p_alg_parameters"] == "paper") & (e4["calibration"] == "pld")
              & e4["p_alg_tau"].isin(runs["p_alg_tau"].unique())]


def _in_horizon(runs: pd.DataFrame) -> pd.Series:
    return _certified(runs) & (runs["diag_first_certificate_t"].astype(float) <= _t_thm(runs))


def _horizon_note(runs: pd.DataFrame) -> str:
    return (f"a certificate within T_thm = {_span(_t_thm(runs), 'g')} steps in "
            f"{int(_in_horizon(runs).sum())}/{len(runs)} runs at σ = {_span(runs['sigma'])}× "
            f"the O1 sensitivity; the output's ‖∇F‖ = "
            f"{_span(runs['final_grad_norm'] / runs['p_alg_alpha'], '.2g')}·α after "
            f"{_span(runs['steps'], 'g')} steps and {_span(runs['diag_escapes'], 'g')} escapes")


def _honest_note(runs: pd.DataFrame, results: PaperResults) -> str:
    honest = _honest(runs, results)
    return _horizon_note(honest) if len(honest) else ""


def _certified_in_horizon(runs: pd.DataFrame, _: PaperResults) -> Sample:
    if runs.empty or "diag_output" not in runs:
        return Sample.of([])
    return Sample.of(_in_horizon(runs).to_numpy(float), note=_horizon_note(runs))


def _decrease_at_least_phi(runs: pd.DataFrame, _: PaperResults) -> Sample:
    return Sample.of((runs["decrease"] >= runs["phi"]).to_numpy(float))


def _growth(kind: str) -> Statistic:
    def compute(runs: pd.DataFrame, _: PaperResults) -> Sample:
        return Sample.of(quarter_growth(runs, kind) if len(runs) else [])
    return Statistic(f"{kind} noise: mean ‖noise‖ over the last / the first quarter of the "
                     "leaves, per trial", compute)


# -- claims -------------------------------------------------------------------------------------

def _at_least_one(column: pd.Series) -> pd.Series:
    return column >= 1


def _positive(column: pd.Series) -> pd.Series:
    return column > 0


def _not_paper(column: pd.Series) -> pd.Series:
    return column != "paper"


def _fosp(column: pd.Series) -> pd.Series:
    return ~column.isin((*SOSP_METHODS, AT_SPENT))


def _separation_claim(claim_id: str, role: str, output: str, *controls: Control) -> Claim:
    """E2b at one output rule of the FOSP methods (the runs of ``role``) against Alg 3-R's
    certified outputs in E2 (``_reference``)."""
    return Claim(
        claim_id, f"FOSP methods, scored {output}, end at Õ(α)-SOSPs less often than Alg 3-R "
        "(its certified output; the separation §1.2 is about: they cannot certify curvature)",
        "§1.2 (SOSP vs FOSP)", Runs(roles=(role,), where={"label": _fosp},
                                    by=("label", "p_prob_lam")),
        Statistic("share of Õ(α)-SOSP outputs, Alg 3-R − FOSP method", _separation),
        AtLeast(0.0, "share of SOSPs, Alg 3-R − FOSP"),
        premises=(REFERENCE_ESCAPES, SADDLE_HOLDS), controls=controls, kind="design",
        where="a check of our E2 design (notes §5 E2), not a claim of the paper: §1.2 says "
              "FOSP methods' guarantees do not certify curvature, and states no comparison")


RATE_WHERE = ("§3.2, Theorem 3.17 and Remark 3.18 (and the abstract): α = Õ((√d/(nε))^{1/2} "
              "+ n^{−1/3}), i.e. N(α) = Õ(√d/(εα²)) samples where privacy dominates")


def _rate_claims(claim_id: str, statement: str, runs: Runs, axis: str, rule: SlopeAtMost,
                 premises: tuple[Premise, ...]) -> tuple[Claim, Claim]:
    """A rate claim at the theorem's τ (the paper's) and its twin at our repaired τ (a
    finding about the repair, kind design), side by side."""
    def at(label: str) -> Runs:
        return replace(runs, where={**runs.where, "label": label})

    text = "N = Õ(√d/(εα²)) where privacy dominates (Theorem 3.17, Remark 3.18), an upper bound: "
    return (Claim(claim_id, f"{text}{statement}; at the theorem's τ = α^{{3/2}}/(M√ρ)",
                  "Theorem 3.17 (rate)", at("spider_sosp_paper_tau"), _samples_along(axis),
                  rule, premises=premises, kind="paper", where=RATE_WHERE, headline=True),
            Claim(f"{claim_id}-R", f"{text}{statement}; at our repaired τ = ⌈κ√ρ/(M√α)⌉",
                  "Theorem 3.17 (rate)", at("spider_sosp"), _samples_along(axis), rule,
                  premises=premises, kind="design",
                  where=f"claim {claim_id}'s test of our repaired τ (notes §2.5 G1–G2: one "
                        "refresh per ⌈κ√ρ/(M√α)⌉ escapes): a finding about our repair"))


SADDLES = Runs(study=E1, where={"anchor": "saddle", "ratio": _at_least_one}, by=("d", "ratio"))
E3_PREMISES = (CERTIFICATES_SCALE, PRIVACY_DOMINATES_CHAIN, CENSORING, *ASSUMPTION)
E3_EPS_PREMISES = (PRIVACY_DOMINATES, CENSORING, *ASSUMPTION)

CLAIMS = (
    Claim("7", f"from a saddle with λ_min ≤ −√(ρα), Algorithm 2 moves Ξ within Γ steps with "
          f"probability ≥ 1 − ι (ι = {IOTA:g}), given a (γ, ϰ)-accurate pair",
          "Theorem 3.4", SADDLES, flag("escaped", "escape within Γ"),
          Fraction(1 - IOTA, event="escape within Γ"), kind="paper",
          where="§3.1, Theorem 3.4: from a saddle with ‖∇F‖ ≤ α, given a (γ, ϰ)-accurate pair, "
                "Algorithm 2's output has F(y) − F(x₀) ≤ −Φ with probability ≥ 1 − ι"),
    Claim("8", "an escape that reaches Ξ decreased F by at least Φ = γ^{3/2}/√ρ (Theorem "
          "3.4's Φ without its log factor, so a stricter bar), with probability ≥ 1 − ι",
          "Lemma 3.8", Runs(study=E1, where={"anchor": "saddle", "ratio": _at_least_one,
                                             "escaped": True}, by=("d", "ratio")),
          Statistic("escaped trials with F(x_a) − F(y) ≥ Φ", _decrease_at_least_phi),
          Fraction(1 - IOTA, event="decrease ≥ Φ"), kind="paper",
          where="§3.1, Lemma 3.8: an escape that halts at ‖x_t − x₀‖ ≥ Ξ has "
                "F(x_t) − F(x₀) ≤ −Φ"),
    Claim("S1", f"a failed escape certifies: from strict minima (λ > 0) Algorithm 2 moves Ξ "
          f"with probability ≤ ι = {IOTA:g} (at λ = 0 the anchor is flat and noise alone "
          "can carry it away, so those are left out)", "Theorem 3.4",
          Runs(study=E1, where={"anchor": "minimum", "ratio": _positive}, by=("d", "ratio")),
          flag("escaped", "false escape"), Fraction(IOTA, below=True, event="false escape"),
          kind="design",
          where="the certificate output rule of our Alg 3-R (notes §2.8 S1: the anchor of the "
                "first failed escape; the paper returns every iterate, Alg. 3 l.25, and has "
                "no selection rule), which rests on the contrapositive of Theorem 3.4"),
    Claim("4", f"tree noise does not grow with the phase length (its mean norm over the "
          f"last quarter of 256 leaves is < {GROWTH_LIMIT:g}× that over the first; per-step "
          "Gaussian noise at equal privacy grows like √k, 2.8× there)", "Theorem 2.2 (tree)",
          Runs(study=E4I), _growth("tree"), AtMost(GROWTH_LIMIT, "mean growth"),
          controls=(Control("per-leaf Gaussian noise at equal privacy (σ/√L per leaf)",
                            Runs(study=E4I), f"grows: > {GROWTH_LIMIT:g}× between the "
                            "quarters (√k)", _growth("gaussian"),
                            AtLeast(GROWTH_LIMIT, "mean growth")),),
          kind="paper",
          where="§2.1, Theorem 2.2: for all t ∈ [Σ], ‖TREE(t)‖ ≲ √(d log(1/ι))·σ; §1.2: the "
                "accumulated Gaussian noise Σg_t degrades the estimator, the tree mitigates "
                "it"),
    Claim("E2a", f"Alg 3-R's outputs (the first certificate, else the last iterate) are "
          f"Õ(α)-SOSPs with probability ≥ 1 − ι (ι = {IOTA:g}; ‖∇F‖ ≤ {SOSP_GRADIENT:g}α, "
          "λ_min ≥ −√(ρα)) from the exact saddle", "§1.2 (SOSP vs FOSP)",
          Runs(roles=("e2",), where={"label": list(SOSP_METHODS)}, by=("label", "p_prob_lam")),
          Statistic("outputs that are Õ(α)-SOSPs", _sosp_share),
          Fraction(1 - IOTA, event="Õ(α)-SOSP output"),
          premises=(ESCAPES, CERTIFICATE_OR_HORIZON, *ASSUMPTION), kind="paper",
          where="§3.2, Theorem 3.17: at least one output of Algorithm 3 is an Õ(α)-SOSP; §1.2 "
                "'Fixing the Error': the Hessian-model escape works with single-pass "
                "minibatches", headline=True),
    _separation_claim("E2b", "e2_uniform", "at their own output rule, a uniformly random "
                      "iterate (Ghadimi & Lan 2013; the rule their guarantees are stated "
                      "for)"),
    _separation_claim(
        "E2b-last", "e2", "at their last iterate (E2's outputs; a labelled variant of E2b: "
        "its premise failing is the finding that the saddle holds them only early)",
        Control("DP-SGD at ε = 1, about what spider_sosp spends of its ε = 4 (equal spent "
                "rather than planned ε)", Runs(roles=("e2",), where={"label": AT_SPENT}),
                "its outputs are Õ(α)-SOSPs more often than not: more noise escapes the "
                "saddle sooner", Statistic("outputs that are Õ(α)-SOSPs", _sosp_share),
                Fraction(0.5, event="Õ(α)-SOSP output"))),
    *_rate_claims("E3", "the samples to the first certificate on the gated chain of "
                  "saddles (saddle_chain: the worst-case horizon binds) grow at most like "
                  f"α⁻² as α falls (slope ≤ 2 + {SLACK:g}, the Õ's polylogs)",
                  Runs(roles=("e3_chain",), by=("epsilon", "p_prob_d")), "p_alg_alpha",
                  SlopeAtMost(2.0, axis="α", axis_grows_bound=False, slack=SLACK), E3_PREMISES),
    *_rate_claims("E3ε", "the samples to the first certificate grow at most like 1/ε as ε "
                  "falls (one slope per α and d; b, b_t ∝ 1/ε at every step, so no horizon "
                  "premise)", Runs(roles=("e3",), by=("p_alg_alpha", "p_prob_d")), "epsilon",
                  SlopeAtMost(1.0, axis="ε", axis_grows_bound=False), E3_EPS_PREMISES),
    Claim("11", "adaptive batches need fewer samples to the first certified SOSP than fixed "
          "worst-case batches b_t(G) at equal privacy (difference of means > 0; a fixed-batch "
          "run that stops before its certificate counts the samples it used, a lower bound "
          "of its N, which can only weaken the evidence)",
          "§1 (adaptive batches)", Runs(roles=("e4",), where={"label": "fixed_batches"}),
          Statistic("samples to the first certificate, fixed − adaptive",
                    _fixed_minus_adaptive),
          AtLeast(0.0, "samples, fixed − adaptive"),
          premises=(ADAPTIVE_CERTIFIED, *ASSUMPTION), kind="paper",
          where="§1.2, adaptive batch sizes: a fixed batch must be sized for the worst-case "
                "‖x_t − x_{t−1}‖; B_t ∝ ‖x_t − x_{t−1}‖ 'resolves this paradox' and gives "
                "better results"),
    Claim("1", "Theorem 3.17 as printed is (ε, δ)-DP: its batches b, b_t and noise "
          "σ_tree = σ_t = α/√d spend at most the target ε (at the theorem's τ, and at the "
          "repaired τ). The tree stream decides it: σ = α/√d lacks Theorem 2.2's factor "
          "4√(log₂T·ln(1/δ)); the escape stream (notes G1) spends less",
          "Theorem 3.17 (privacy)",
          Runs(roles=("e4",), where={"p_alg_parameters": "paper", "calibration": "paper"},
               by=("epsilon", "p_alg_tau")),
          Statistic("realised ε (PLD) ≤ target", _theorem_privacy),
          Always("realised ε (PLD) ≤ target ε"), premises=ASSUMPTION, kind="paper",
          where="§3.2, Theorem 3.17: with b, b_t, τ as stated and σ_tree = σ_t = α/√d, "
                "'Algorithm 3 is (ε, δ)-DP'; §2.1, Theorem 2.2: σ = 4s√(log Σ log(1/δ))/ε",
          headline=True),
    Claim("1U", "Theorem 3.17's batches b, b_t with the noise that makes them (ε, δ)-DP "
          "(σ calibrated by PLD on the worst-case ledger) still reach a first certificate "
          f"within T_thm = ⌈32BM/α²⌉ steps with probability ≥ 1 − ι (ι = {IOTA:g})",
          "Theorem 3.17 (privacy)",
          Runs(roles=("e4",), where={"p_alg_parameters": "paper", "calibration": "pld"},
               by=("epsilon", "p_alg_tau")),
          Statistic("runs with a certificate within T_thm", _certified_in_horizon),
          Fraction(1 - IOTA, event="certificate within T_thm"),
          premises=(CERTIFICATE_OR_HORIZON, *ASSUMPTION), kind="design",
          where="Theorem 3.17's utility at its own batches once its noise is honest: whether "
                "claim 1's erratum is repaired by the noise alone (issue 37)"),
    Claim("1R", "Alg 3-R is (ε, δ)-DP: with σ calibrated (PLD) on the planned worst-case "
          "ledger (L tree nodes per leaf, K = Γ·max(1, τ) escape releases per Hessian "
          "lifetime), no run's realised ledger spends more than the target ε",
          "Theorem 3.17 (privacy)",
          Runs(roles=("e2", "e3", "e3_chain", "e4"), where={"algorithm": "spider_sosp",
                                                "calibration": _not_paper}, by=("label",)),
          Statistic("realised ε (PLD) ≤ target", _within_target),
          Always("realised ε (PLD) ≤ target ε"), premises=ASSUMPTION, kind="design",
          where="our Alg 3-R's calibration (notes §2.6: PLD on the planned worst-case ledger) "
                "against its own realised ledgers; not the paper's σ (claim 1)"),
)


# -- sections -----------------------------------------------------------------------------------

def _done(results: PaperResults, role: str) -> pd.DataFrame:
    runs = results.role_runs(role)
    return runs[runs["status"] == "done"] if len(runs) else runs


def _summary(values: pd.Series) -> str:
    return format_mean_se(*mean_se(values))


def _number(value: Any, spec: str) -> str:
    value = float(value)
    return format(value, spec) if math.isfinite(value) else ("∞" if value > 0 else "–")


def _study_provenance(results: PaperResults, name: str) -> Provenance:
    return Provenance(results.scale, computed=f"study {name}, simulated by `saddlebench "
                      f"reproduce` ({trials_for(results.scale)} trials per setting) and "
                      f"stored under studies/liu2024/{results.scale}/{name}.parquet; no runs")


def _e1(results: PaperResults, out: Path) -> tuple[list[dict[str, Any]], list[Figure]]:
    import matplotlib.pyplot as plt

    trials = results.study(E1)
    if trials.empty:
        return [], []
    study = escape_summary(trials)
    provenance = _study_provenance(results, E1)
    rows = [[f"{r['d']}", f"{r['ratio']:g}", str(r["anchor"]), f"{r['escape_rate']:.3f}",
             _number(r["steps_mean"], ".1f"), _number(r["steps_predicted"], ".1f"),
             f"{r['horizon']}", _number(r["decrease_min"], ".4f"), f"{r['phi']:.4f}"]
            for r in study.to_dict("records")]
    table = {"provenance": provenance,
             "title": "E1: Algorithm 2 alone on the cosine saddle",
             "note": f"{int(study['trials'].iloc[0])} trials per row, α = 0.1, γ-accurate g and "
                     "ϰ-accurate H (random errors of norm exactly γ = α/4 and ϰ = √(ρα)/4), "
                     "noise σ = γ/√(d ln(Γ/ι)); λ = ratio·√(ρα). Escape: ‖x − x_a‖ ≥ Ξ within "
                     "Γ steps. Predicted steps (M/λ) ln(√d Ξ M/γ) at rate λ (Lemma 3.9 uses "
                     "λ/2); decrease: the smallest F(x_a) − F(y) over escaped trials, beside "
                     "Φ = γ^{3/2}/√ρ (Thm 3.4 without its log).",
             "columns": ["d", "λ/√(ρα)", "anchor", "P(escape)", "steps", "predicted",
                         "Γ", "min decrease", "Φ"], "rows": rows}
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    colour = colours([str(d) for d in study["d"].unique()])
    for (d, anchor), part in study.groupby(["d", "anchor"]):
        ax.plot(part["ratio"], part["escape_rate"], marker="o", color=colour[str(d)],
                ls="-" if anchor == "saddle" else "--", label=f"d = {d}, {anchor}")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("λ / √(ρα)")
    ax.set_ylabel("P(escape within Γ)")
    ax.legend(fontsize=7)
    figure = Figure(save_figure(fig, out, "e1_escape"), "E1: escape probability of "
                    "Algorithm 2 by curvature, from saddles (solid) and minima (dashed).",
                    provenance)
    return [table], [figure]


def _e2_outputs(results: PaperResults) -> pd.DataFrame:
    """E2's finished runs, each at its output (E2: as the algorithm outputs it, so the
    FOSP methods' last iterate; ``e2_uniform``: their uniformly random iterate), with the
    output rule in ``output``."""
    parts = [_done(results, role).assign(output=name) for role, name in (
        ("e2", "own (certificate or last iterate)"), ("e2_uniform", "uniform iterate"))]
    return pd.concat([p for p in parts if len(p)] or [pd.DataFrame()], ignore_index=True)


def _e2(results: PaperResults) -> list[dict[str, Any]]:
    runs = _e2_outputs(results)
    if runs.empty:
        return []
    alpha = _e2_alpha(results)
    runs = runs.assign(sosp=_sosp(runs, alpha),
                       saddle=runs["final_lambda_min"] < -np.sqrt(_rho(runs) * alpha))
    table = runs.groupby(["p_prob_lam", "output", "label"]).agg(
        sosp=("sosp", "mean"), saddle=("saddle", "mean"), grad=("final_grad_norm", "mean"),
        lam=("final_lambda_min", "mean"), runs=("sosp", "size"), planned=("epsilon", "max"),
        spent=("eps_pld", "max"))
    rows = [[f"{key[0]:g}", str(key[2]), str(key[1]), f"{r['sosp']:.2f}", f"{r['saddle']:.2f}",
             f"{r['grad']:.3g}", f"{r['lam']:.3g}", f"{r['planned']:g}", f"{r['spent']:.3g}",
             f"{r['runs']:g}"]
            for key, r in table.iterrows() if isinstance(key, tuple)]
    return [{"title": "E2: who ends at a saddle?", "provenance": results.provenance(runs),
             "note": f"Fraction of outputs that are Õ(α)-SOSPs (‖∇F‖ ≤ {SOSP_GRADIENT:g}α, "
                     f"α = {alpha:g}, and λ_min ≥ −√(ρα)) and that still have curvature below "
                     "−√(ρα), mean ‖∇F‖ and λ_min, per curvature λ of the saddle the runs "
                     "start at; ε planned (the target every method is calibrated to) and "
                     "spent (the PLD accountant on the realised ledger, largest over runs): "
                     "spider_sosp's planned ledger is its worst case, so it spends less. "
                     "Output: the algorithm's own (Alg 3-R's certificate; the FOSP methods' "
                     "last iterate) or, for the FOSP methods, a uniformly random iterate "
                     "(their guarantees' output rule; claim E2b, the last iterate is its "
                     "variant E2b-last).",
             "columns": ["λ", "method", "output", "Õ(α)-SOSP", "λ_min < −√(ρα)", "‖∇F‖", "λ_min",
                         "ε planned", "ε spent (PLD)", "runs"], "rows": rows}]


def _links(run: pd.Series) -> str:
    """K of a saddle_chain run, from its problem params (– elsewhere)."""
    if run["problem"] != "saddle_chain":
        return "–"
    given: dict[str, Any] = {
        str(k)[len("p_prob_"):]: int(v) if float(v).is_integer() else float(v)
        for k, v in run.items() if str(k).startswith("p_prob_") and pd.notna(v)}
    return f"{link(SaddleChainParams(**given)).links}"  # the frame holds int params as floats


def _e3(results: PaperResults, out: Path) -> tuple[list[dict[str, Any]], list[Figure]]:
    import matplotlib.pyplot as plt

    runs = pd.concat([_done(results, role) for role in ("e3", "e3_chain")], ignore_index=True)
    if runs.empty:
        return [], []
    runs = runs.assign(N=_samples, alpha=runs["p_alg_alpha"], tau=runs["label"].map(_tau_name))
    keys = ["problem", "tau", "alpha", "epsilon"]
    rows = []
    for key, group in runs.groupby(keys):
        done = group[_certified(group)]
        rows.append([str(key[0]), str(key[1]), f"{key[2]:g}", f"{key[3]:g}",
                     _links(group.iloc[0]), f"{group['eps_pld'].max():.3g}",
                     _summary(done["N"]) if len(done) else "–",
                     _summary(done["diag_first_certificate_t"]) if len(done) else "–",
                     f"{_t_thm(group).iloc[0]:g}", f"{len(done)}/{len(group)}"])
    table = {"title": "E3: samples to the first certified SOSP",
             "provenance": results.provenance(runs),
             "note": "N = samples used when the first escape fails (the run stops there), "
                     "the step of that certificate beside Theorem 3.17's horizon T_thm, on "
                     "the cosine saddle (claims E3ε, E3ε-R) and on the gated chain of K "
                     "saddles (claims E3, E3-R), at the theorem's and the repaired τ; ε "
                     "planned (the target σ is calibrated to on the worst-case ledger) and "
                     "spent (PLD on the realised ledger, largest over the runs). "
                     "Predicted slopes of log N in log α: " + ", ".join(
                         f"{k} {v:+.2f}" for k, v in SLOPES.items())
                     + "; in ε −1, while privacy dominates (tested as upper bounds).",
             "columns": ["problem", "τ", "α", "ε planned", "K", "ε spent (PLD)",
                         "N (mean ± s.e.)", "certificate step", "T_thm", "certified"],
             "rows": rows}
    certified = runs[_certified(runs)]
    if certified.empty:
        return [table], []
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    for (problem, tau, e), part in certified.groupby(["problem", "tau", "epsilon"]):
        mean = part.groupby("alpha")["N"].mean()
        ax.plot(mean.index, mean.to_numpy(), marker="o", label=f"{problem}, {tau}, ε = {e:g}")
    grid = np.geomspace(certified["alpha"].min(), certified["alpha"].max(), 10)
    anchor = float(certified["N"].median() * certified["alpha"].median() ** 2)
    ax.plot(grid, anchor * grid**-2.0, "k--", lw=0.8, label="slope −2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("α")
    ax.set_ylabel("samples to the first certificate")
    ax.legend(fontsize=6)
    return [table], [Figure(save_figure(fig, out, "e3_sample_complexity"),
                            "E3: N(α) by instance, τ and ε (log-log) with a slope −2 guide.",
                            results.provenance(runs))]


def _noise_figure(results: PaperResults, out: Path) -> list[Figure]:
    import matplotlib.pyplot as plt

    trials = results.study(E4I)
    if trials.empty:
        return []
    growth = noise_summary(trials)
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for kind in ("tree", "gaussian"):
        ax.plot(growth["leaf"], growth[kind], label=kind)
    ax.set_xlabel("leaves since the last refresh")
    ax.set_ylabel("mean ‖prefix-sum noise‖")
    ax.legend(fontsize=7)
    return [Figure(save_figure(fig, out, "e4_noise_growth"), "E4(i): noise of the released "
                   "prefix sums, tree vs per-leaf Gaussian noise at equal privacy.",
                   _study_provenance(results, E4I))]


def _e4(results: PaperResults) -> list[dict[str, Any]]:
    runs = _done(results, "e4")
    if runs.empty:
        return []
    runs = runs.assign(N=_samples, certified=_certified(runs))
    rows = [[label, cal, _summary(g["N"]), f"{g['certified'].mean():.2f}",
             _summary(g["final_grad_norm"]), _summary(g["final_lambda_min"]),
             f"{g['epsilon'].iloc[0]:g}", f"{g['eps_pld'].max():.3g}"]
            for (label, cal), g in runs.groupby(["label", "calibration"])]
    return [{"title": "E4: ablations and the paper's calibration",
             "provenance": results.provenance(runs),
             "note": "Samples to the first certified SOSP, share certified, output ‖∇F‖ and "
                     "λ_min, the target ε and the largest ε the PLD accountant finds in the "
                     "runs' realised ledgers.",
             "columns": ["variant", "calibration", "N", "certified", "‖∇F‖", "λ_min",
                         "ε target", "ε spent (PLD)"], "rows": rows}]


def _span(values: pd.Series, spec: str = ".3g", unit: str = "") -> str:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        raise ValueError("no runs")
    low, high = format(values.min(), spec), format(values.max(), spec)
    return (low if low == high else f"{low}–{high}") + unit


def _spider(results: PaperResults, *roles: str) -> pd.DataFrame:
    runs = results.role_runs(*roles)
    if runs.empty:
        return runs
    runs = runs[(runs["algorithm"] == "spider_sosp") & (runs["status"] == "done")]
    return runs[runs["calibration"] != "paper"]


def _spent_share(results: PaperResults) -> str:
    runs = _spider(results, "e2", "e3", "e4")
    share = 100 * runs["eps_pld"] / runs["epsilon"]
    return "; ".join(f"{label} {_span(part, '.0f', ' %')}"
                     for label, part in share.groupby(runs["label"])) + " of the target"


def _e2_ratio(results: PaperResults) -> str:
    runs = _spider(results, "e2")
    ratio = runs["p_prob_lam"] / pd.Series(np.sqrt(_rho(runs) * runs["p_alg_alpha"]),
                                           index=runs.index)
    return f"λ/√(ρα) = {_span(ratio, '.2f')} (λ = {_span(runs['p_prob_lam'], 'g')})"


def _fosp_at_saddle(results: PaperResults) -> str:
    runs = _e2_outputs(results)
    fosp = runs[_fosp(runs["label"])]
    alpha = _e2_alpha(results)
    stuck = fosp["final_lambda_min"] < -np.sqrt(_rho(fosp) * alpha)
    horizon = _spider(results, "e2")["diag_escape_horizon"]
    counts = "; ".join(f"{output}: {int(part.sum())}/{len(part)}"
                       for output, part in stuck.groupby(fosp["output"]))
    return (f"FOSP outputs still at the saddle after {_span(fosp['steps'], 'g')} steps, "
            f"{counts}; spider_sosp's escape horizon Γ = {_span(horizon, 'g')} steps")


def _chain_steps(results: PaperResults) -> str:
    """The chain's steps to the first certificate: their slope in α per τ, share of T_thm."""
    runs = _spider(results, "e3_chain")
    parts = []
    for label, part in runs.groupby("label"):
        slope, se = _certificate_slope(part)
        done = part[_certified(part)]
        share = done["diag_first_certificate_t"].astype(float) / _t_thm(done)
        parts.append(f"{_tau_name(str(label))}: slope {slope:+.2f} ± {se:.2f}, "
                     f"{_span(100 * share, '.2g', ' %')} of T_thm")
    return "; ".join(parts) + " (the chain, E3)"


def _e3_privacy(results: PaperResults) -> str:
    parts = []
    for role, name in (("e3", "E3ε (cosine saddle)"), ("e3_chain", "E3 (chain)")):
        runs = _spider(results, role)
        if len(runs):
            private = runs["p_alg_alpha"] * np.sqrt(runs["p_prob_d"]) / runs["epsilon"]
            parts.append(f"{name} {_span(_privacy_share(runs), '.2g')} "
                         f"(α√d/ε = {_span(private)})")
    return "; ".join(parts)


def _e3_tau(results: PaperResults) -> str:
    runs = _spider(results, "e3")
    return "; ".join(f"{_tau_name(str(label))}, ε = {e:g}: τ {_span(g['diag_tau'], 'g')}, "
                     f"σ {_span(g['sigma'])}"
                     for (label, e), g in runs.groupby(["label", "epsilon"]))


def _tau_name(label: str) -> str:
    return "theorem's τ" if label.endswith("paper_tau") else "repaired τ"


def _theorem_sigma(results: PaperResults) -> str:
    """Claim 1's σ_tree over Theorem 2.2's at the theorem's batches."""
    runs = _done(results, "e4")
    runs = runs[runs["calibration"] == "paper"]
    return (f"1/{_span(runs['plan_tree_shortfall'], '.2f')} (the largest O2 leaf) to "
            f"1/{_span(runs['plan_tree_shortfall_o1'], '.2f')} (O1's leaf); realised ε "
            f"{_span(runs['eps_pld'])} against a target of {runs['epsilon'].max():g}")


REGIME = (
    Regime("Theorem 3.17's σ_tree = α/√d over the σ Theorem 2.2 needs at its batches "
           "(claim 1)", "1 (Theorem 3.17: its σ makes Algorithm 3 (ε, δ)-DP)", _theorem_sigma,
           "Theorem 2.2: σ = 4s√(log₂T ln(1/δ))/ε at the paper's add/remove sensitivity s",
           lead=True),
    Regime("noise-to-curvature at the E2 saddle λ/√(ρα)",
           "> 1: a strict saddle that is not an α-SOSP (Thm 3.4, λ_min ≤ −√(ρα))", _e2_ratio),
    Regime("FOSP methods stalled at the saddle (E2)", "some (§1.2: they cannot certify "
           "curvature; notes §5 E2 expects FOSP outputs at the saddle)", _fosp_at_saddle),
    Regime("privacy share κ_priv/κ_np = (α√d/ε)/(BGM)^{1/3}", "≥ 1 where Thm 3.17's "
           f"privacy term dominates (n ≲ d^{{3/2}}/ε³); ≥ {PRIVACY_SHARE:g} asked of E3's chain",
           _e3_privacy, lead=True),
    Regime("steps to the first certificate in α, and their share of T_thm", "∝ α⁻², ≈ 1 in "
           "the worst case the α⁻² rate is about (Prop. 3.10: T = Õ(BM/γ²) steps)",
           _chain_steps, lead=True),
    Regime("spider_sosp's realised ε / target", "1 (Theorem 3.17: (ε, δ)-DP at the target)",
           _spent_share, "planned ledger = worst case: L tree nodes per leaf, K = Γτ escape "
           "releases per Hessian lifetime"),
)


def _why(results: PaperResults) -> dict[str, Any]:
    """"Why our results differ from the paper's": each cause once, with its numbers."""
    def measured(how: Callable[[PaperResults], str]) -> str:
        try:
            return how(results)
        except (KeyError, ValueError, IndexError) as exc:
            return f"not recorded ({type(exc).__name__})"

    def honest(results: PaperResults) -> str:
        runs = _done(results, "e4")
        runs = runs[(runs["p_alg_parameters"] == "paper") & (runs["calibration"] == "pld")]
        return "; ".join(f"τ {tau}: {_horizon_note(g)}" for tau, g in runs.groupby("p_alg_tau"))

    def censored(results: PaperResults) -> str:
        parts = []
        for role in ("e3", "e3_chain", "e4"):
            runs = _done(results, role)
            if len(runs):
                fixed = runs[_censored(runs)]
                parts.append(f"{role.upper()}: {len(fixed)}/{len(runs)} runs censored"
                             + (f" (N ≥ {_samples(fixed).min():.3g})" if len(fixed) else ""))
        return "; ".join(parts)

    rows = [
        ["Theorem 3.17's σ = α/√d lacks Theorem 2.2's factor 4√(log₂T·ln(1/δ)) (claim 1)",
         measured(_theorem_sigma), "claim 1 is decided by the tree stream, with the numbers "
         "in its evidence: a finding about the paper"],
        ["the theorem's batches with honest noise (claim 1U)", measured(honest),
         "σ calibrated to the target on the worst-case ledger swamps the batches' "
         "accuracy: the private gradient never falls below c_det·α, so no escape starts"],
        ["spider_sosp spends part of its budget (claim 1R)", measured(_spent_share),
         "baselines calibrated to the same planned ε spend all of it: E2 compares at equal "
         "planned ε, the table shows both"],
        ["privacy noise alone escapes the saddle (E2)", measured(_fosp_at_saddle),
         "E2b-last out of regime: nothing to separate at the last iterate; noisy "
         "first-order steps escape at rate ≈ ηλ per step like Algorithm 2's power "
         "iteration, so any budget that lets spider_sosp finish one escape (Γ steps) lets "
         "them escape too. Their first iterates are still at the saddle, so E2b scores "
         "their own output rule, a uniformly random iterate"],
        ["E3's α-exponent needs the horizon to bind: on the cosine saddle (one saddle "
         "level) it does not, so E3 runs on the gated chain of saddles",
         measured(_chain_steps), "E3, E3-R: the scaling premise compares this slope with "
         "−2; E3ε, E3ε-R need no horizon premise (b, b_t ∝ 1/ε at every step)"],
        ["privacy share (κ_priv/κ_np, Thm 3.17)", measured(_e3_privacy),
         "E3ε's cells lie where privacy dominates; a ρ-Hessian-Lipschitz chain has "
         "(BGM)^{1/3} ≈ 8, so E3's needs ε ≲ 0.04 (10⁸ samples a run) and stays below"],
        ["the repaired τ = ⌈κ√ρ/(M√α)⌉ grows with κ = α√d/ε (notes G1)", measured(_e3_tau),
         "where privacy dominates, τ ∝ 1/ε: the planned ledger (K = Γτ escape releases) "
         "and σ grow faster than 1/ε, so N falls faster than 1/ε as ε grows (E3ε-R's "
         "slope, a finding about our repair; the theorem's τ refreshes after every escape)"],
        ["data cap (censoring)", measured(censored),
         "censored runs are lower bounds: excluded from E3's fits (counted), kept as lower "
         "bounds in claim 11 (conservative)"],
    ]
    return {"title": "Why our results differ from what the paper leads one to expect",
            "provenance": results.provenance(results.runs),
            "note": "Each cause once, with the numbers measured in these runs; the verdicts "
                    "above are their sum.",
            "columns": ["cause", "measured", "effect on the verdicts"], "rows": rows}


def sections(results: PaperResults, out: Path) -> PaperSections:
    """The page's figures and tables: the rate table, E1–E4 and the calibration table."""
    page = PaperSections(settings=settings(results))
    e1_tables, e1_figures = _e1(results, out)
    e3_tables, e3_figures = _e3(results, out)
    calibration = calibration_table(
        results, "The paper's calibration σ_tree = σ_t = α/√d at Theorem 3.17's batch sizes, "
        "as a multiplier of the O1 sensitivity 2G/b; σ tight is the multiplier the PLD "
        "accountant needs for the same (ε, δ) with the same batches (Lemma 3.14 prints "
        "σ = 2 ln(1/δ)α/√d instead).")
    why = _why(results) if len(results.runs) else None
    page.tables = [t for t in (why, rates_table("liu2024"), *e1_tables, *_e2(results),
                               *e3_tables, *_e4(results), calibration) if t]
    page.figures = [*e1_figures, *e3_figures, *_noise_figure(results, out)]
    page.deviations = deviations([("spider_sosp", "algorithms.spider_sosp", "Deviations")])
    return page


PAPER = Paper(
    key="liu2024",
    title="Adaptive Batch Size for Privately Finding Second-Order Stationary Points",
    source="Liu, Talwar 2024; the paper has no experiments: E1–E4 are the suite's designs",
    claims=CLAIMS,
    roles=ROLES,
    sections=sections,
    resolutions=RESOLUTIONS,
    studies={E1: e1_escape, E4I: e4_noise_growth},
    regime=REGIME,
)
