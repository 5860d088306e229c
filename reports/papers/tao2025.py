"""tao2025, Gauss-PSGD over an adaptive DP-SPIDER oracle (and its distributed form):
whether Figures 1-2 can show the escape mechanism at the paper's own settings (E0, a study),
Figures 1-2 (accuracy and loss per pass; claims E1-E6), Theorem 1 on a strict saddle (T4),
the escape probability of Lemma 1 / Corollary 1 (T5) and Remark 4's price of private
selection in high dimension (T9), declared once as :data:`PAPER`.

Roles (``role:`` in the experiment files): ``figures`` (classification over clients and ε),
``references`` (SGD and DP-SGD on the same data), ``tuning`` (the figures' learning rate),
``chi_sweep`` (the escape threshold χ), ``chi_select`` (both methods where the escape test
can select: settings of E1, E2 and E5 beside the Figures'), ``saddle`` (single machine,
started at a strict saddle), ``selection`` (Algorithm 4 vs the direct output over d),
``horizon`` and ``horizon_tuning`` (the figures at a longer horizon and its learning rate: a
sensitivity check set beside E1 and E2, not a claim's setting), ``figures_real`` (Figure 1 at
the paper's own settings on real images: E3 and E6 are judged there wherever such runs
exist, and the escape test's behaviour on real images is read from them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from algorithms.base import Plan, PrivacyTarget
from algorithms.gauss_psgd import GaussPSGD, o1_noise_std
from algorithms.privacy.ledger import Mechanism
from problems.backend import get_backend
from problems.base import DataSize
from problems.models.mlp import MLP, layer_sizes
from reports.claims import (
    Claim,
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
    stand_in_findings,
)
from reports.figures import colours, save_figure, style
from reports.paper import (
    PaperResults,
    PaperSections,
    Provenance,
    calibration_table,
    deviations,
    settings,
)
from reports.results import Figure
from reports.rules import Always, AtLeast, AtMost, Fraction, NonInferior, Sample, Trend

OURS, BASELINE, ALG4 = "gauss_psgd", "dp_spider_at", "dp_spider_at+alg4"
EXTRA = "gauss_psgd+escape_noise"  # T10: Gauss-PSGD with [29]'s extra escape noise
FIGURES, SADDLE, SELECTION = "figures", "saddle", "selection"
REFERENCES, TUNING, CHI_SWEEP = "references", "tuning", "chi_sweep"
CHI_SELECT = "chi_select"  # both methods at χ = 0.35-0.5·ψ̂, where the escape test can select
PRACTICE = "tuning_practice"  # the lr tuned without the regime restriction (reported beside)
HORIZON, HORIZON_TUNING = "horizon", "horizon_tuning"  # E1/E2's sensitivity to the passes
FIGURES_REAL = "figures_real"  # Figure 1 at the paper's own settings on real images
# The claims' regime (declared): the paper's MNIST setting runs the SPIDER recursion with an
# O2 gain 2σMη√(d/m)/b₂ ≈ 0.05 (REGIME below); we require ≤ O2_GAIN_MAX ("well below 1") in
# every Figures cell, which on the quick stand-in caps η at LR_REGIME_CAP (ε = 0.5, m = 1).
# The in-regime tuning grid stops at that cap: a choice there is the constrained optimum.
O2_GAIN_MAX = 0.5
LR_REGIME_CAP = 0.1
# 10 classes (digits, MNIST, CIFAR-10): a model "learns" when its mean final test accuracy
# is at least twice chance (our threshold: the paper's curves reach 60-90 %).
CHANCE = 0.10
LEARNS = 2 * CHANCE
# E6 ("accuracy does not fall as m grows", inferred from "collaborative synergy"): a fall
# of less than 1 pp per doubling of m counts as not falling (our tolerance, declared before
# any E6 run as 1 pp between adjacent m ∈ {1, 2, 5, 10}, each about one doubling; the paper
# draws curves without error bars).
E6_TOLERANCE_PP = 1.0
E6_SOURCE = ("E6_TOLERANCE_PP, this code's a-priori 1 pp tolerance (first declared for "
             "adjacent m, about one doubling each); the paper gives none")
# The comparison claims' regime (declared): the escape test selects, i.e. fires at some tests
# and not at others, for Gauss-PSGD (‖ĝ‖ ≤ 3χ) and the baseline (‖ĝ‖ ≤ γ_small = 3χ) alike.
SELECTIVE = (0.05, 0.95)
# The paper's MNIST setting (App. E): d = 101,770, n = 6,000 per client, η = 1e-3, κ = 0.1,
# χ = 0.01, Def. 8's σ = √(2 ln(1.25/δ))/ε = 4.84 at ε = 1; b₁ = 256, b₂ = 64, M = 1, G = 1
# and 20 passes are the notes' defaults (§6: not stated); ‖ĝ‖ ≈ its O1 noise norm.
PAPER_SIGMA, PAPER_D, PAPER_N, PAPER_LR, PAPER_KAPPA = 4.84, 101_770, 6_000, 1e-3, 0.1
PAPER_B1, PAPER_B2, PAPER_PASSES, PAPER_DELTA = 256, 64, 20, 1e-5
PAPER_CHI = 0.01  # App. E, 'Algorithms'
PAPER_NOISE = 2 * PAPER_SIGMA * math.sqrt(PAPER_D) / PAPER_B1
PAPER_GAIN = 2 * PAPER_SIGMA * PAPER_LR * math.sqrt(PAPER_D) / PAPER_B2
PAPER_PER_REFRESH = PAPER_KAPPA / (PAPER_LR * PAPER_NOISE) ** 2
ASSUMED = "MNIST, ε = 1, m = 1; b₁ = 256, b₂ = 64, M = 1 assumed (not stated)"
# Figures 1-2 (App. E): data set → (input features, lr) of the 784/3072-128-10 ReLU MLP
PAPER_DATA = {"MNIST": (784, 1e-3), "CIFAR-10": (3072, 1e-2)}
# Real images: problem -> (data set, input features, the paper's lr). Fashion-MNIST has
# MNIST's format and size, so the paper's MNIST network and lr apply with the paper's d and,
# at 6,000 images per client, its √d/(nε); MNIST itself is not packaged for Debian.
REAL_DATA = {"mnist_mlp": ("MNIST", *PAPER_DATA["MNIST"]),
             "fashion_mnist_mlp": ("Fashion-MNIST", *PAPER_DATA["MNIST"]),
             "cifar10_mlp": ("CIFAR-10", *PAPER_DATA["CIFAR-10"])}
PAPER_EPSILONS, PAPER_CLIENTS = (0.5, 1.0, 2.0), (1, 2, 5, 10)
TRIGGER_STUDY, TRIGGER_SEEDS = "paper_scale_trigger", 3

# T10 ("extra noise does not improve the output"): non-inferiority at 0.1·α, a fraction of
# the theorem's accuracy α = 4χ this code already declared negligible a priori.
T10_MARGIN = 0.1
T10_SOURCE = ("0.1·α, the share of a theorem's α this code declared negligible before these "
              "runs (xu2026's BINDS = 0.1: below 0.1·α a bound no longer binds)")
# Corollary 1: one Γ-descent from a strict saddle escapes with probability ≥ 1/8.
ESCAPE_PROBABILITY = 1 / 8
# Lemma 2 / Theorem 1 with the paper's Q = 3 escape rounds: a strict saddle survives all Q
# rounds with probability ≤ (7/8)^Q, so the output is an α-SOSP with probability at least
# 1 − (7/8)^3 ≈ 0.33 per trigger at a saddle (the rule's bound; ω is not set in the runs).
Q_PAPER = 3
SOSP_PROBABILITY = math.floor(100 * (1 - (7 / 8) ** Q_PAPER)) / 100  # 0.33
# Remark 4: Algorithm 4's α′ ≲ α only for d ≤ (√m n ε)^(6/13).
REMARK4_EXPONENT = 6 / 13

RESOLUTIONS = (
    ("Alg. 1 step 8 (T1)", "restart writes x_t, which the next oracle call does not read",
     "every escape round restarts the current point at x̃"),
    ("Alg. 1 step 15 (T2)", "returns x_{t−1}; the text and Theorem 1 output x̃", "output x̃"),
    ("Alg. 1 (T3)", "while true, no sample budget",
     "also stop when the data (passes) run out, output the current iterate, log which"),
    ("Alg. 1 (T4)", "SPIDER state across escape restarts unspecified",
     "the first oracle call of every escape round is a forced O1 refresh"),
    ("Alg. 2", "constants c₁, c₂ unspecified", "c₁ = c₂ = 8 with ln(1.25/δ) (Def. 8): "
     "calibration 'paper', every query at the full (ε, δ) as the paper writes it"),
    ("§E", "clipping never mentioned, yet sensitivities need it",
     "per-sample gradients clipped at G, per-sample differences at M‖x_{t−1} − x_{t−2}‖"),
    ("§E", "several epochs while the privacy proof is single-pass",
     "calibration 'paper' keeps the per-query formula (it then spends more than ε: the "
     "accountants say how much); 'advanced' splits passes by advanced composition (our "
     "choice, formerly labelled 'paper'); the quick figures use the tight PLD calibration"),
    ("Theorem 1 / §E", "χ = 0.01 in the experiments while Theorem 1 sets χ ∝ ψ (eq. 5)",
     "χ = ψ̂, the planned noise norm of one averaged O1 answer (eq. 3), for both methods "
     "(γ_small = 3χ); the paper's χ = 0.01 is a labelled variant in the χ sweep"),
    ("§E", "R, b₁, b₂, G, M, epochs, split and n per client not stated",
     "defaults of notes §6 at paper scale (R = √κ, b₁ = 256, b₂ = 64, G = 1, M from a "
     "pilot, 20 passes, Dirichlet(0.5) clients, 6,000 images per client); quick: below"),
    ("§E", "the baseline [29] is described in prose only",
     "reconstruction (notes §3.5): same oracle, small-gradient refresh with extra noise, "
     "frozen period, selection optional and off in the figures"),
    ("Alg. 4", "d × d noisy Hessians per client and iterate",
     "implemented for d ≤ 2,000 over 10 candidates (not all T iterates)"),
    ("Quick scale", "MNIST is not packaged (Debian ships Fashion-MNIST); CIFAR-10 cannot run "
     "on 2 cores in minutes",
     "E3 and E6 on real images at the paper's settings: Fashion-MNIST (MNIST's format and "
     "size) with the paper's 784-128-10 MLP (d = 101,770), 6,000 images per client (i.i.d. "
     "split), χ = 0.01, lr 1e-3, PLD, 2 passes (quick) and 20 (standard); the comparisons "
     "E1, E2, E4, E5 on a SYNTHETIC stand-in (synthetic_mlp: generated data, not images; "
     "d = 442), where χ can be set so that the escape test selects (on real images at the "
     "paper's χ it never fires and both methods run identically), 6,000 records per client, "
     "b₁ = 256, b₂ = 64, 2 passes: the small d keeps the O2 gain per recursion step near "
     "the paper's (regime table)"),
    ("E3, E6 on real images", "premises of the stand-in (lr tuned, escape test can fire)",
     "replaced by the paper's own settings (d, n per client, χ, lr): the paper's Figure 1 "
     "ran where the test cannot fire (claim E0), so E3 and E6 are its claims there"),
    ("Quick scale", "lr: the paper's 1e-3 is not transferable to the stand-in",
     f"tuned alike on 3 seeds over a grid restricted to the claims' regime (O2 gain ≤ "
     f"{O2_GAIN_MAX:g} in every cell: η ≤ {LR_REGIME_CAP:g}); the unconstrained tuning is "
     "reported beside (suite tune_lr_practice) as what a practitioner would pick"),
    ("§E / Theorem 1", "escape radius R not stated; Theorem 1 sets R = Γη·4sχ/ι^2.5",
     "R = 0.5·Γηχ in the Figures (R ∝ Γηχ as in Theorem 1, constant ours), so the noise "
     "can reach it at every σ, d and m; R = 0.3 on the saddle"),
    ("Theorem 1", "α is the result (α = 4χ), not an input",
     "T4 judges each output against α = 4χ from the run's own χ"),
)


# -- helpers on run rows ------------------------------------------------------------------

def _of(runs: pd.DataFrame, label: str) -> pd.DataFrame:
    return runs[runs["label"] == label] if "label" in runs else runs.iloc[0:0]


def _rho(runs: pd.DataFrame) -> pd.Series:
    """The cosine saddle's Hessian-Lipschitz constant ρ ≤ λ + 0.859μ + 0.770σ₂."""
    return numeric(runs, "p_prob_lam") + 0.859 * numeric(runs, "p_prob_mu") \
        + 0.770 * numeric(runs, "p_prob_sigma2").fillna(0.0)


def run_chi(runs: pd.DataFrame) -> pd.Series:
    """Each run's χ: the one it used (``diag_chi``), else its ``chi`` parameter, else a third
    of its escape test's threshold (the baseline's γ_small = 3χ)."""
    return numeric(runs, "diag_chi").fillna(numeric(runs, "p_alg_chi")).fillna(
        numeric(runs, "diag_trigger_threshold") / 3)


def theorem_alpha(runs: pd.DataFrame) -> pd.Series:
    """Theorem 1's accuracy α = 4χ, from each run's χ."""
    return 4 * run_chi(runs)


def is_sosp(runs: pd.DataFrame, alpha: pd.Series | float) -> pd.Series:
    """‖∇F(x)‖ ≤ α and λ_min(∇²F(x)) ≥ −√(ρα) (Definition 2)."""
    return (numeric(runs, "final_grad_norm") <= alpha) & (
        numeric(runs, "final_lambda_min") >= -np.sqrt(_rho(runs) * alpha))


def violation(runs: pd.DataFrame) -> pd.Series:
    """α̂(x) = max(‖∇F‖, max(0, −λ_min)²/ρ): x is an α-SOSP iff α̂ ≤ α (liu2024 notes §5)."""
    curvature = np.maximum(0.0, -numeric(runs, "final_lambda_min")) ** 2 / _rho(runs)
    return np.maximum(numeric(runs, "final_grad_norm"), curvature)


def remark4_threshold(runs: pd.DataFrame) -> pd.Series:
    """(√m n ε)^(6/13) per run, n the records per client."""
    m = numeric(runs, "p_prob_clients").fillna(1.0)
    return (np.sqrt(m) * numeric(runs, "p_prob_n") / m * runs["epsilon"].astype(float)
            ) ** REMARK4_EXPONENT


def steps_taken(runs: pd.DataFrame) -> pd.Series:
    """Steps a run took: ``prem_steps_taken`` where recorded, else its oracle calls."""
    if "prem_steps_taken" in runs and runs["prem_steps_taken"].notna().any():
        return runs["prem_steps_taken"].astype(float)
    return numeric(runs, "diag_refreshes") + numeric(runs, "diag_differences")


def _pairs(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` of Gauss-PSGD and the baseline side by side, paired by seed (same data,
    split and initialisation)."""
    ours = _of(runs, OURS).set_index("seed")[column]
    base = _of(runs, BASELINE).set_index("seed")[column]
    return pd.concat({"ours": ours, "base": base}, axis=1, join="inner").astype(float)


# -- the escape test at the paper's own settings (a study: no training) --------------------

def paper_d(features: int) -> int:
    """d of the paper's one-hidden-layer MLP (128 ReLU units, 10 classes) on ``features``
    inputs: 101,770 for MNIST, 394,634 for CIFAR-10."""
    return MLP(layer_sizes(features, [128], 10), activation="relu", init_scheme="kaiming"
               ).n_params


def paper_gauss_psgd(lr: float) -> GaussPSGD:
    """Gauss-PSGD with the experiments' constants (App. E: χ, κ, Γ, Q, lr) and the notes'
    defaults for what the paper does not state (§6: b₁, b₂, G, M, 20 passes, Option A)."""
    return GaussPSGD(GaussPSGD.Params(
        lr=lr, batch_refresh=PAPER_B1, batch_diff=PAPER_B2, kappa=PAPER_KAPPA, grad_clip=1.0,
        diff_clip=1.0, epochs=PAPER_PASSES, records=PAPER_N, chi=PAPER_CHI, escape_steps=10,
        escape_rounds=3))


def averaged_o1_noise(alg: GaussPSGD, plan: Plan[Any], data: DataSize, seed: int
                      ) -> np.ndarray:
    """ξ̄ of one O1 answer: each client's Gaussian release (σ from the plan, sensitivity
    2G/b₁ as Algorithm 2 line 5) drawn through the mechanism on its first batch, averaged
    as the server does (Algorithm 3); the answer is the clipped mean gradient + ξ̄."""
    p = alg.params
    mech = Mechanism(get_backend("numpy").noise_source(seed), np.random.default_rng(seed))
    batches = [mech.pool(client, epochs=p.epochs, party=j).take(p.batch_refresh)
               for j, client in enumerate(data.clients)]
    noisy = mech.gaussian(np.zeros((len(batches), data.d)), sensitivity=2 * p.grad_clip
                          / p.batch_refresh, sigma=plan.sigma, tag="O1",
                          batch=[b for b in batches if b is not None])
    return np.asarray(noisy).mean(axis=0)


def trigger_study(scale: str) -> pd.DataFrame:
    """Claim E0: Gauss-PSGD planned at the Figures' own settings with the paper's
    calibration (Def. 8 per query) and the accountants, and per (data set, ε, m, seed) the
    averaged noise ξ̄ of an O1 answer drawn through the mechanism. Since the clipped mean
    gradient has norm ≤ G, every O1 answer has ‖ĝ‖ ≥ ‖ξ̄‖ − G whatever the data and the
    iterate (no data or training needed; the same rows at every scale)."""
    rows = []
    for m in PAPER_CLIENTS:
        for eps in PAPER_EPSILONS:
            plan = None  # sizes, passes and (ε, δ) decide it: one for both data sets
            for name, (features, lr) in PAPER_DATA.items():
                alg, d = paper_gauss_psgd(lr), paper_d(features)
                data = DataSize(PAPER_N * m, d=d,
                                clients=np.array_split(np.arange(PAPER_N * m), m))
                plan = plan or alg.plan(data, PrivacyTarget(eps, PAPER_DELTA, "paper"))
                p = alg.params
                formula = o1_noise_std(p, plan.sigma) * math.sqrt(d / m)
                for seed in range(TRIGGER_SEEDS):
                    noise = float(np.linalg.norm(averaged_o1_noise(alg, plan, data, seed)))
                    rows.append({
                        "data": name, "d": d, "epsilon": eps, "clients": m, "seed": seed,
                        "n_per_client": PAPER_N, "lr": lr, "chi": PAPER_CHI,
                        "b1": p.batch_refresh, "G": p.grad_clip, "passes": p.epochs,
                        "calibration": plan.calibration, "sigma": plan.sigma,
                        "eps_pld": plan.eps.pld, "noise_formula": formula,
                        "noise_norm": noise, "lower_bound": noise - p.grad_clip,
                        "threshold": 3 * PAPER_CHI,
                        "can_fire": noise - p.grad_clip <= 3 * PAPER_CHI,
                        # the largest b₁ at which ‖ξ̄‖ − G stays above 3χ (noise ∝ 1/b₁)
                        "b1_max": p.batch_refresh * noise / (p.grad_clip + 3 * PAPER_CHI)})
    return pd.DataFrame(rows)


def _at_paper_settings(rows: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    paper = {"d": sorted(paper_d(f) for f, _ in PAPER_DATA.values()), "chi": [PAPER_CHI],
             "b1": [PAPER_B1], "n_per_client": [PAPER_N], "passes": [PAPER_PASSES],
             "calibration": ["paper"]}
    if rows.empty or not set(paper) <= set(rows):
        return None, "the study's settings not recorded"
    found = {column: sorted(set(rows[column])) for column in paper}
    shown = {column: ", ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in values)
             for column, values in found.items()}
    return found == paper, "; ".join(f"{column} {values}" for column, values in shown.items())


PAPER_SETTINGS_P = Premise(
    "at the Figures' own settings (App. E: d of the MNIST and CIFAR-10 MLPs, χ = 0.01, 6,000 "
    "per client, the paper's calibration; notes §6: b₁ = 256, 20 passes)", _at_paper_settings,
    "plan the study at the paper's settings")


def _trigger_bound(rows: pd.DataFrame, _: PaperResults) -> Sample:
    """Per draw: can the escape test fire on an O1 answer (‖ξ̄‖ − G ≤ 3χ)? With the
    arithmetic at ε = 1, m = 1 on MNIST and the range over every draw."""
    if "can_fire" not in rows or rows.empty:
        return Sample.of([])
    cell = rows[(rows["data"] == "MNIST") & np.isclose(rows["epsilon"], 1.0)
                & (rows["clients"] == 1)]
    one = (cell if not cell.empty else rows).iloc[0]
    drawn = (cell if not cell.empty else rows)["noise_norm"]
    least = rows.sort_values("lower_bound").iloc[0]
    note = (f"O1 noise norm 2σG√d/(b₁√m) = 2·{one['sigma']:.2f}·{one['G']:g}·√{one['d']:,}/"
            f"{one['b1']:g} = {one['noise_formula']:.2f} on {one['data']} at ε = "
            f"{one['epsilon']:g}, m = {one['clients']:g} (drawn through the mechanism: "
            f"{drawn.min():.2f}–{drawn.max():.2f}), so every O1 answer has ‖ĝ‖ ≥ ‖ξ̄‖ − G = "
            f"{one['lower_bound']:.2f} against 3χ = {one['threshold']:g}; over all "
            f"{len(rows)} draws (MNIST, CIFAR-10; ε ∈ {{0.5, 1, 2}}; m ∈ {{1, 2, 5, 10}}) the "
            f"bound is {rows['lower_bound'].min():.2f}–{rows['lower_bound'].max():.1f} (least "
            f"at {least['data']}, ε = {least['epsilon']:g}, m = {least['clients']:g}) and "
            f"stays above 3χ for any b₁ ≤ {rows['b1_max'].min():.0f} (b₁ is not stated). "
            f"The bound needs no data: the clipped mean has norm ≤ G. σ = "
            f"√(2 ln(1.25/δ))/ε (Def. 8, every query at the full ε); over "
            f"{one['passes']:g} passes it spends ε = {one['eps_pld']:.2f} at target "
            f"{one['epsilon']:g} (PLD)")
    return Sample.of(rows["can_fire"].astype(float).to_numpy(), note=note)


# -- premises -----------------------------------------------------------------------------

Check = Callable[[pd.DataFrame, PaperResults], tuple[bool | None, str]]



def _learns(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    acc = numeric(runs, "final_test_acc").dropna()
    if acc.empty:
        return None, "final test accuracy not recorded"
    mean = float(acc.mean())
    return mean >= LEARNS, (f"mean final test accuracy {100 * mean:.1f} % (range "
                            f"{100 * acc.min():.1f}–{100 * acc.max():.1f} %, {len(acc)} runs) "
                            f"vs ≥ {100 * LEARNS:.0f} % (twice chance)")


def _trigger_can_fire(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    ours = _of(runs, OURS)
    noise, limit = numeric(ours, "diag_noise_norm_o1"), numeric(ours, "diag_trigger_threshold")
    if noise.isna().all() or limit.isna().all():
        return None, "O1 noise norm or trigger threshold not recorded"
    above = noise >= limit
    fired = int(numeric(ours, "diag_triggers").fillna(0).sum())
    return not bool(above.any()), (
        f"O1 noise norm {noise.min():.3g}–{noise.max():.3g} vs trigger ‖ĝ‖ ≤ 3χ = "
        f"{limit.max():.3g}: noise above it in {int(above.sum())}/{len(ours)} runs; "
        f"{fired} triggers in all")


def _fired(runs: pd.DataFrame, fired: str, tests: str) -> tuple[float, str]:
    """The share of tests that fired over ``runs`` (pooled), and how it reads."""
    hits, total = numeric(runs, fired), numeric(runs, tests)
    known = total > 0
    if not known.any():
        return math.nan, "not recorded"
    rate = float(hits[known].sum() / total[known].sum())
    each = hits[known] / total[known]
    return rate, (f"{100 * rate:.0f} % (runs {100 * each.min():.0f}–{100 * each.max():.0f} %, "
                  f"{int(known.sum())} runs)")


def _selective(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    ours, ours_text = _fired(_of(runs, OURS), "diag_triggers", "diag_trigger_tests")
    base, base_text = _fired(_of(runs, BASELINE), "diag_escape_injections",
                             "diag_injection_tests")
    text = (f"Gauss-PSGD's trigger rate {ours_text}, the baseline's injection rate "
            f"{base_text} vs both in ({100 * SELECTIVE[0]:.0f} %, {100 * SELECTIVE[1]:.0f} %)")
    if math.isnan(ours) or math.isnan(base):
        return None, text
    return all(SELECTIVE[0] < r < SELECTIVE[1] for r in (ours, base)), text


def _recursion_runs(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    diff, refresh = numeric(runs, "diag_differences"), numeric(runs, "diag_refreshes")
    if diff.isna().all():
        return None, "O1/O2 counts not recorded"
    never = diff.fillna(0) == 0
    return not bool(never.any()), (
        f"{int(refresh.sum())} O1 refreshes and {int(diff.sum())} O2 differences in all; no "
        f"O2 step (every step an O1 refresh) in {int(never.sum())}/{len(runs)} runs")


def identical_pairs(runs: pd.DataFrame) -> tuple[int, int]:
    """Seed pairs (Gauss-PSGD, baseline) of one setting whose final test accuracy and loss
    are identical, and all its seed pairs."""
    acc, loss = _pairs(runs, "final_test_acc"), _pairs(runs, "final_test_loss")
    same = (acc["ours"] == acc["base"]) & (loss["ours"] == loss["base"])
    return int(same.sum()), len(same)


def _methods_differ(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    same, pairs = identical_pairs(runs)
    if not pairs:
        return None, "no seed with both methods"
    return same < pairs, f"final test accuracy and loss identical in {same}/{pairs} seed pairs"


def _room_to_escape(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    ours = _of(runs, OURS)
    episode = numeric(ours, "p_alg_escape_steps") * numeric(ours, "p_alg_escape_rounds")
    steps = steps_taken(runs)
    if steps.isna().all() or episode.isna().all():
        return None, "steps taken not recorded"
    cap = ""
    if "prem_data_exhausted_at" in runs and runs["prem_data_exhausted_at"].notna().any():
        cap = f"; data cap reached at t = {runs['prem_data_exhausted_at'].min():g}"
    need = float(episode.max())
    short = steps < need
    return not bool(short.any()), (f"steps taken {steps.min():g}–{steps.max():g} vs ≥ Q·Γ = "
                                   f"{need:g}: short in {int(short.sum())}/{len(runs)} runs{cap}")


def per_client(runs: pd.DataFrame) -> pd.Series:
    """Records each client trains on: ``records`` (Option A) where set, else n/m."""
    return numeric(runs, "p_alg_records").fillna(
        numeric(runs, "n") / numeric(runs, "p_prob_clients").fillna(1.0))


def _n_per_client_fixed(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    per = per_client(runs).dropna()
    if per.empty:
        return None, "n per client not recorded"
    by_m = per.groupby(numeric(runs, "p_prob_clients")).mean()
    fixed = float(per.max()) <= 1.01 * float(per.min())
    return fixed, "n per client " + ", ".join(f"{v:.0f} (m = {m:g})" for m, v in
                                              by_m.items()) + ("" if fixed else ": Option B")


def _sosp_exit(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    ours = _of(runs, OURS)
    if "diag_termination" not in ours or ours["diag_termination"].isna().all():
        return None, "termination not recorded"
    ends = ours["diag_termination"].value_counts()
    exited = int(ends.get("sosp", 0) + ends.get("data (escape)", 0)
                 + ends.get("steps (escape)", 0))
    return exited == len(ours), (f"the output is x̃ (SOSP exit, or data or steps spent inside an "
                                 f"escape episode) in {exited}/{len(ours)} runs ("
                                 + ", ".join(f"{k}: {v}" for k, v in ends.items()) + ")")


def _paper_rounds(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    q = numeric(_of(runs, OURS), "p_alg_escape_rounds").dropna()
    if q.empty:
        return None, "Q not recorded"
    return bool((q == Q_PAPER).all()), (f"Q = {', '.join(f'{v:g}' for v in sorted(set(q)))} "
                                        f"vs the rule's Q = {Q_PAPER}")


def _rounds_ran(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    ours = _of(runs, OURS)
    rounds = numeric(ours, "diag_escape_rounds")
    if rounds.isna().all():
        return None, "escape rounds not recorded"
    return bool(rounds.sum() > 0), (f"{int(rounds.sum())} escape rounds after "
                                    f"{int(numeric(ours, 'diag_triggers').sum())} triggers in "
                                    f"{len(ours)} runs")


def _anchor_is_saddle(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    if "prem_anchor_lambda_min" not in runs or runs["prem_anchor_lambda_min"].isna().all():
        return None, "λ_min at the escape anchors x̃ not recorded (rounds from any anchor count)"
    lam = runs["prem_anchor_lambda_min"].astype(float)
    return bool((lam < 0).all()), f"λ_min at the anchors {lam.min():.3g}–{lam.max():.3g}"


def _within(suffix: str, bound: str) -> Check:
    """Per-sample norms within a clip's bound (the clip never acted): ``suffix`` "" for
    O1's per-sample gradients against G, "_diff" for O2's differences ÷ ‖Δx‖ against M."""

    def check(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
        column = f"prem_max_per_sample_norm{suffix}"
        if column not in runs or runs[column].isna().all():
            return None, f"largest per-sample norm against {bound} not recorded"
        worst = runs[column].astype(float)
        limit = numeric(runs, f"prem_clip_bound{suffix}")
        over = worst > limit * (1 + 1e-6)
        return not bool(over.any()), (f"largest per-sample norm {worst.max():.3g} vs {bound} = "
                                      f"{limit.max():.3g}: above in {int(over.sum())}/"
                                      f"{len(runs)} runs")

    return check


def _o2_gain_small(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    gain = o2_gain(runs).dropna()
    if gain.empty:
        return None, "O2 gain not computable (σ, M, η, d or b₂ not recorded)"
    return bool((gain <= O2_GAIN_MAX).all()), (
        f"O2 gain 2σMη√(d/m)/b₂ {gain.min():.3g}–{gain.max():.3g} vs ≤ {O2_GAIN_MAX:g} "
        f"(paper's MNIST setting ≈ {PAPER_GAIN:.3f})")


def is_real(runs: pd.DataFrame) -> pd.Series:
    """Runs on real images at the paper's d (:data:`REAL_DATA`)."""
    return runs["problem"].isin(REAL_DATA) if "problem" in runs else pd.Series(
        False, index=runs.index)


def judged_data(runs: pd.DataFrame) -> pd.Series:
    """The Figures runs E3 and E6 read: those on real images wherever any ran, else the
    stand-in's (a stand-in's verdict is never the paper's where real images ran)."""
    real = is_real(runs)
    return real if real.any() else ~real


def only_on(real: bool, premise: Premise) -> Premise:
    """``premise`` on the settings of one kind of data (real images, or the synthetic
    stand-in); vacuous, and said so, on the other (every setting is one problem)."""
    scope = "real images" if real else "the stand-in"

    def check(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
        if bool(is_real(runs).all()) != real:
            return True, f"does not apply: not {scope}"
        return premise.check(runs, results)

    return Premise(f"on {scope}: {premise.name}", check, premise.remedy)


def _paper_run(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """d, n per client, χ and lr against App. E's for the setting's network, both values
    named."""
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


def _above_remark4(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    if "p_prob_d" not in runs:
        return None, "d not recorded"
    d, threshold = float(runs["p_prob_d"].max()), float(remark4_threshold(runs).max())
    return d > threshold, f"d = {d:g} vs (√m n ε)^(6/13) = {threshold:.0f}"


SELECTIVE_P = Premise(
    "the escape test is selective (Gauss-PSGD's trigger rate and the baseline's injection "
    "rate in (5 %, 95 %))", _selective,
    "a χ at which ‖ĝ‖ ≤ 3χ separates small from large estimates (role chi_select: χ = "
    "0.35–0.5·ψ̂ on the stand-in); a test that fires at every call (χ = ψ̂) or never (the "
    "paper's χ = 0.01 at its noise, claim E0) compares no escape mechanism")
LEARNS_P = Premise(
    "the models learn (mean final test accuracy ≥ twice chance)", _learns,
    "a data set and horizon on which the (private) MLP learns: the paper's MNIST/CIFAR-10 "
    "with 6,000 images per client, or more passes / a larger lr on the stand-in")
TRIGGER_P = Premise(
    "the escape trigger can fire (O1 noise norm < 3χ)", _trigger_can_fire,
    "larger refresh batches b₁ (the noise norm is σ·2G√d/(b₁√m)) or a larger χ, so that "
    "‖ĝ‖ ≤ 3χ can happen; else Gauss-PSGD is plain DP-SPIDER and equals the baseline")
RECURSION_P = Premise(
    "the SPIDER recursion runs (some O2 steps)", _recursion_runs,
    "a smaller κ or a smaller step: with drift η²‖ĝ‖² ≥ κ after every step, every call is "
    "an O1 refresh")
DIFFER_P = Premise(
    "the two methods' runs differ (final metrics not identical)", _methods_differ,
    "a regime where the trigger (Gauss-PSGD) or the small-gradient injection (baseline) "
    "acts; identical runs compare nothing of the paper")
ROOM_P = Premise(
    "room for one escape episode (steps taken ≥ Q·Γ)", _room_to_escape,
    "more data per client (Option A) or more passes")
OPTION_A_P = Premise(
    "n per client fixed as m grows (Option A)", _n_per_client_fixed,
    "give every client the same number of records (the paper-scale files do: 6,000 each)")
SOSP_EXIT_P = Premise(
    "the output is Theorem 1's x̃ (SOSP exit, or data spent mid-escape)", _sosp_exit,
    "a longer budget, or a radius R reachable by the noise in Γ steps, so that an escape "
    "test fails and x̃ is returned; a run that ends on its budget outputs the last iterate")
ROUNDS_P = Premise(
    "Q = 3 (the rule's probability 1 − (7/8)^Q assumes the paper's Q)", _paper_rounds,
    "run Q = 3 or declare the rule for the Q run")
RAN_P = Premise(
    "escape rounds ran (the trigger fired)", _rounds_ran,
    "a trigger 3χ above the O1 noise norm at the saddle, so that escape rounds start")
ANCHOR_P = Premise(
    "the escape anchors are strict saddles (Lemma 1)", _anchor_is_saddle,
    "record λ_min at each anchor x̃")
BOUND_P = Premise(
    "per-sample gradients within G (Assumption 1; O1's clip inactive)", _within("", "G"),
    "a clip bound G at or above the problem's per-sample Lipschitz constant")
SMOOTH_P = Premise(
    "per-sample differences within M‖Δx‖ (Assumption 1; O2's clip inactive)",
    _within("_diff", "M"),
    "a difference clip M at or above the problem's per-sample smoothness constant")
O2_GAIN_P = Premise(
    f"the recursion's noise stays small (O2 gain 2σMη√(d/m)/b₂ ≤ {O2_GAIN_MAX:g})",
    _o2_gain_small,
    "a smaller η, d or a larger b₂: the noise each recursion step adds relative to ‖ĝ‖ "
    "compounds over the steps between refreshes")
PAPER_RUN_P = Premise(
    "the paper's own settings (App. E: d of its MLP for the images, 6,000 per client, "
    "χ = 0.01, its lr)", _paper_run,
    "run the paper's network on real 28×28 images with 6,000 per client, χ = 0.01 and lr "
    "1e-3 (quick/fig1_fashion_mnist_mlp.yaml)")
REMARK4_P = Premise(
    "d above Remark 4's threshold (√m n ε)^(6/13)", _above_remark4,
    "none needed: Remark 4 predicts no harm from selection below the threshold; those "
    "dimensions are T9's control")


def _above_threshold(runs: pd.DataFrame) -> pd.Series:
    """Runs whose d exceeds Remark 4's threshold (T9's scope; the rest are its control)."""
    return numeric(runs, "p_prob_d") > remark4_threshold(runs)


def tuned_lr(results: PaperResults, role: str = TUNING) -> dict[str, tuple[float, str]]:
    """algorithm -> (lr chosen by the ``role`` tuning suite, grid edge it sits on or "")."""
    found = {}
    for meta in results.suites:
        if role not in (meta.get("roles") or ()):
            continue
        for entry in meta.get("tuning") or ():
            lr = (entry.get("chosen") or {}).get("lr")
            if lr is not None:
                found[str(entry["group"]).split("/")[1]] = (
                    float(lr), (entry.get("edges") or {}).get("lr", ""))
    return found


def _lr_is_tuned(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    chosen = tuned_lr(results)
    if not chosen:
        return None, "no tuning suite ran"
    parts, ok = [], True
    for algorithm, part in runs.groupby("algorithm"):
        lrs = sorted(set(numeric(part, "p_alg_lr").dropna()))
        lr, edge = chosen.get(str(algorithm), (math.nan, ""))
        at_cap = edge == "upper" and math.isclose(lr, LR_REGIME_CAP)
        same = lrs == [lr] and (not edge or at_cap)
        ok &= same
        parts.append(f"{algorithm}: lr {', '.join(f'{v:g}' for v in lrs)} vs tuned {lr:g}"
                     + (" (the regime cap: constrained optimum)" if at_cap else
                        f" (on the {edge} grid edge)" if edge else ""))
    return ok, "; ".join(parts)


LR_TUNED_P = Premise(
    "the learning rate is the tuning suite's choice, inside its grid (or at the declared "
    "regime cap)", _lr_is_tuned,
    "set each method's lr to the choice of tune_lr.yaml (rerun it after any change of the "
    "stand-in) and extend its grid where the choice sits on an edge")

ENGAGED = (TRIGGER_P, RECURSION_P, O2_GAIN_P, ROOM_P)  # Gauss-PSGD's own mechanism acts
COMPARE = (LEARNS_P, LR_TUNED_P, *ENGAGED, DIFFER_P, SELECTIVE_P)
# E3 and E6 on real images at the paper's own settings (where the escape test cannot fire,
# claim E0, as in the paper's own runs), else on the stand-in in its declared regime
FIGURES_REGIME = (LEARNS_P, only_on(True, PAPER_RUN_P), only_on(False, LR_TUNED_P),
                  only_on(False, TRIGGER_P), RECURSION_P, O2_GAIN_P, ROOM_P)


# -- statistics ---------------------------------------------------------------------------

def _gap_at(runs: pd.DataFrame) -> np.ndarray:
    """Per seed: Gauss-PSGD's final test accuracy − the baseline's, in pp."""
    pairs = _pairs(runs, "final_test_acc")
    return (100 * (pairs["ours"] - pairs["base"])).to_numpy(float)


def _widening(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """The per-seed accuracy gap at this m against the gap at m = 1 (same problem, ε and
    calibration)."""
    every = results.role_runs(FIGURES)
    first = runs.iloc[0]
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


def _first_pass_loss(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Test loss at the first evaluation after one pass (a run that returned earlier: at
    its output), Gauss-PSGD against the baseline, paired by seed where the runs pair."""
    traj = results.trajectories
    if traj.empty or "epoch" not in traj:
        return Sample.of([])
    rows = per_pass(traj[traj["run_id"].isin(runs["run_id"])], upto=1)
    rows = rows[rows["epoch"].eq(1)]
    first = rows.sort_values("step").drop_duplicates("run_id").set_index("run_id")["test_loss"]
    meta = runs.set_index("run_id").reindex(first.index)

    def side(label: str) -> pd.Series:
        mine = meta["label"] == label
        return pd.Series(first[mine].to_numpy(float), index=meta.loc[mine, "seed"])

    return paired_or_welch(side(OURS), side(BASELINE))


def output_is_sosp(label: str) -> Statistic:
    """Per run of ``label``: its output is an α-SOSP at Theorem 1's α = 4χ (its own χ)."""
    def compute(runs: pd.DataFrame, _: PaperResults) -> Sample:
        mine = _of(runs, label)
        return Sample.of(is_sosp(mine, theorem_alpha(mine)).to_numpy(float))

    return Statistic("output is an α-SOSP, α = 4χ", compute)


def _escape_rounds(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """One value per escape round: 1 if it reached ‖x − x̃‖ ≥ R."""
    ours = _of(runs, OURS)
    rounds = int(numeric(ours, "diag_escape_rounds").fillna(0).sum())
    escapes = int(numeric(ours, "diag_escapes").fillna(0).sum())
    return Sample.of([1.0] * escapes + [0.0] * (rounds - escapes),
                     note=f"each 'run' above is one escape round: {rounds} rounds from "
                          f"{len(ours)} runs")


def _extra_noise_cost(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """α̂/α of Gauss-PSGD with [29]'s extra escape noise against α̂/α without, α = 4χ from
    each run's χ, paired by seed (same start and batches up to the first extra draw)."""
    def side(label: str) -> pd.Series:
        part = _of(runs, label)
        return pd.Series((violation(part) / theorem_alpha(part)).to_numpy(float),
                         index=part["seed"])

    return paired_or_welch(side(EXTRA), side(OURS), unit="α")


def _never_fired(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """Per Gauss-PSGD run: 1 if its escape test ‖ĝ‖ ≤ 3χ never fired; the O1 noise norm
    against 3χ beside."""
    ours = _of(runs, OURS)
    noise, limit = numeric(ours, "diag_noise_norm_o1"), numeric(ours, "diag_trigger_threshold")
    return Sample.of((numeric(ours, "diag_triggers") == 0).to_numpy(float),
                     note=f"O1 noise norm {noise.min():.3g}–{noise.max():.3g} against 3χ = "
                          f"{limit.max():g}; {numeric(ours, 'diag_trigger_tests').sum():.0f} "
                          f"tests in {len(ours)} runs")


def _selection_cost(runs: pd.DataFrame, _: PaperResults) -> Sample:
    return Sample.of(violation(_of(runs, ALG4)).dropna(),
                     violation(_of(runs, OURS)).dropna().tolist())


# -- claims -------------------------------------------------------------------------------

PER_CELL = ("problem", "calibration", "epsilon", "p_prob_clients")
# E1, E2 and E5 read the Figures and the χ settings where the escape test can select (decided
# before those runs: the selectivity premise, not their outcome, says which are in regime)
COMPARED = Runs((FIGURES, CHI_SELECT), {"label": [OURS, BASELINE]},
                (*PER_CELL, "p_alg_chi_scale"))
SELECTION_PAIR = {"label": [OURS, ALG4]}
SELECTION_CELL = ("epsilon", "p_prob_clients", "p_prob_d")
SELECTION_COST = Statistic("α̂ of Algorithm 4's output − α̂ of Gauss-PSGD's", _selection_cost)
BOTH = {"label": [OURS, BASELINE]}
SOSP_RULE = Fraction(SOSP_PROBABILITY, event="output is an α-SOSP (α = 4χ)")
FIG = "Figures 1–2"
# The Figures' own setting (App. E): runs on any other problem are a stand-in
FIGURES_SETTING = PaperSetting(
    "MNIST / CIFAR-10, 784-128-10 MLP (d = 101,770; CIFAR-10: 3072-128-10, d = 394,634), "
    "6,000 images per client, m ∈ {1, 2, 5, 10}, χ = 0.01, κ = 0.1, Γ = 10, Q = 3, "
    "lr 1e-3 (MNIST) / 1e-2 (CIFAR-10), δ = 1e-5", ("mnist_mlp", "cifar10_mlp"))
RESULTS = "App. E, 'Results'"

# E1's statistic and rule, which also give the horizon check's gaps and intervals: the
# final accuracy of Gauss-PSGD − the baseline's, paired by seed (same data subset and start)
E1_GAP = difference("test_acc", OURS, BASELINE, 100, "pp")
E1_RULE = AtLeast(0.0, "accuracy gap")

CLAIMS = (
    Claim("E0", "Figures 1–2 can show Gauss-PSGD's escape mechanism: at the experiments' own "
          "settings its escape test ‖ĝ_t‖ ≤ 3χ (Algorithm 1, step 5) can fire on an O1 "
          "answer (the first test of every run, and the test after every refresh)", FIG,
          Runs(study=TRIGGER_STUDY),
          Statistic("the escape test can fire on an O1 answer (‖ĝ‖ ≥ ‖ξ̄‖ − G ≤ 3χ)",
                    _trigger_bound),
          Always("‖ξ̄‖ − G ≤ 3χ (the test can fire)"), (PAPER_SETTINGS_P,),
          controls=(Control(
              "Gauss-PSGD trained on real images at the paper's settings (its MLP, 6,000 "
              "images per client, χ = 0.01, its lr)",
              Runs((FIGURES, FIGURES_REAL), {"label": OURS},
                   ("problem", "p_prob_clients", "p_alg_epochs"), keep=is_real),
              "its escape test never fires there either: the study's bound ‖ĝ‖ ≥ ‖ξ̄‖ − G "
              "holds whatever the data and the iterate",
              Statistic("the escape test never fired in the run", _never_fired),
              Always("the escape test never fired")),),
          kind="paper", headline=True,
          where="implied: App. E ('Algorithms': χ = 0.01; 'Results' credits Figures 1–2 to "
                "Gauss-PSGD) with §5.2 / Algorithm 1 step 5 (escape starts at ‖ĝ_t‖ ≤ 3χ)"),
    Claim("E1", "Gauss-PSGD's final test accuracy exceeds the baseline's [29] at every ε and "
          "m (and χ = s·ψ̂; one-sided, per setting)", FIG, COMPARED,
          E1_GAP, E1_RULE, COMPARE,
          kind="paper", headline=True, setting=FIGURES_SETTING,
          where=f"{RESULTS} ('Gauss-PSGD achieves higher test accuracy than the baseline for "
                "both datasets'; 'consistently outperforms the baseline across all "
                "configurations'); Figures 1–2 (a)–(c)"),
    Claim("E2", "Gauss-PSGD's final test loss is below the baseline's at every ε and m",
          FIG, COMPARED, difference("test_loss", OURS, BASELINE),
          AtMost(0.0, "loss gap"), COMPARE,
          kind="paper", setting=FIGURES_SETTING,
          where=f"{RESULTS} ('Gauss-PSGD exhibits lower test loss compared to the baseline "
                "across all configurations'); Figures 1–2 (d)–(f)"),
    Claim("E3", "test accuracy (Gauss-PSGD's and the baseline's) increases with ε at every m "
          "(a trend: the slope per doubling of ε is positive; judged on real images wherever "
          "they ran)", FIG,
          Runs((FIGURES, FIGURES_REAL), BOTH, ("problem", "calibration", "p_prob_clients",
                                               "label", "p_alg_epochs"), keep=judged_data),
          along("test_acc", "epsilon", 100, "pp"), Trend(True, "ε"), FIGURES_REGIME,
          kind="paper", setting=FIGURES_SETTING,
          where=f"{RESULTS} ('with accuracy improving as ε increases due to weaker privacy "
                "constraints'); Figures 1–2 (a)–(c)"),
    Claim("E4", "the accuracy gap Gauss-PSGD − baseline is larger at every m > 1 than at "
          "m = 1 (per seed, same ε and calibration)", FIG,
          Runs((FIGURES,), {**BOTH, "p_prob_clients": lambda m: m > 1}, PER_CELL),
          Statistic("accuracy gap at m − gap at m = 1 (pp)", _widening),
          AtLeast(0.0, "gap difference"), COMPARE,
          kind="paper", setting=FIGURES_SETTING,
          where=f"{RESULTS} ('The accuracy gap between Gauss-PSGD and the baseline widens in "
                "distributed settings (m > 1)'); Figures 1–2 (a)–(c)"),
    Claim("E5", "Gauss-PSGD converges faster: its test loss after the first pass is below "
          "the baseline's", FIG, COMPARED,
          Statistic("test loss after the first pass, Gauss-PSGD − baseline", _first_pass_loss),
          AtMost(0.0, "loss gap"), COMPARE,
          kind="paper", setting=FIGURES_SETTING,
          where=f"{RESULTS} ('The rapid reduction in loss during the initial epochs indicates "
                "faster convergence'); Figures 1–2 (d)–(f)"),
    Claim("E6", "with n per client fixed, Gauss-PSGD's accuracy does not fall as m grows "
          f"(inferred from 'collaborative synergy'; a trend: the slope per doubling of m is "
          f"above −{E6_TOLERANCE_PP:g} pp; judged on real images wherever they ran)", FIG,
          Runs((FIGURES, FIGURES_REAL), {"label": OURS},
               ("problem", "calibration", "epsilon", "p_alg_epochs"), keep=judged_data),
          along("test_acc", "p_prob_clients", 100, "pp"),
          Trend(True, "m", E6_TOLERANCE_PP, E6_SOURCE), (*FIGURES_REGIME, OPTION_A_P),
          kind="design", setting=FIGURES_SETTING,
          where=f"inferred by us from {RESULTS} ('collaborative synergy of distributed "
                "learning') and Remark 3 (§7); the paper states no trend of accuracy in m"),
    Claim("T4", "started at a strict saddle, Gauss-PSGD outputs an α-SOSP with α = 4χ "
          f"(Theorem 1's α, from the run's χ) with probability > 1 − (7/8)^Q = "
          f"{SOSP_PROBABILITY:.2f} (Lemma 2, Q = {Q_PAPER})", "Theorem 1 (second order)",
          Runs((SADDLE,), {"label": OURS}, ("epsilon", "p_prob_d")),
          output_is_sosp(OURS), SOSP_RULE,
          (SOSP_EXIT_P, TRIGGER_P, ROUNDS_P, BOUND_P, SMOOTH_P),
          controls=(Control(
              "the baseline [29] from the same saddle (last iterate, no selection)",
              Runs((SADDLE,), {"label": BASELINE}, ("epsilon", "p_prob_d")),
              "its output is an α-SOSP as often (T4's rule, α = 4χ from its γ_small = 3χ): "
              "the paper expects the DP noise to move any such method off a strict saddle "
              "(§3.1), so 'as expected' reads T4 as Gauss-PSGD's output being as good on this "
              "saddle, not as its escape test being needed; the paper's difference is that "
              "[29] guarantees only that some iterate is an α-SOSP (§3.2)",
              output_is_sosp(BASELINE), SOSP_RULE),),
          kind="paper", headline=True,
          where="Theorem 1 (§5.3): the output is an α-SOSP, α = 4χ (Lemma 6, eq. 5), w.p. "
                "≥ 1 − ω; Lemma 2 (§5.3): Q independent Γ-descents all fail w.p. ≤ (7/8)^Q"),
    Claim("T5", "one Γ-descent from a strict saddle reaches ‖x − x̃‖ ≥ R with probability "
          "≥ 1/8 (Corollary 1)", "Lemma 1 / Corollary 1 (escape)",
          Runs((SADDLE,), {"label": OURS}, ("epsilon", "p_prob_d")),
          Statistic("escape rounds that escape", _escape_rounds),
          Fraction(ESCAPE_PROBABILITY, event="a Γ-descent escapes"),
          (RAN_P, ANCHOR_P, BOUND_P, SMOOTH_P),
          kind="paper",
          where="Corollary 1 (§5.3, from Lemma 1): a PSGD sequence from a strict saddle x̃ "
                "reaches ‖x − x̃‖ ≥ R within Γ steps w.p. ≥ 1/8"),
    Claim("T10", "extra escape noise ([29]'s, on top of the DP noise) does not improve "
          "Gauss-PSGD's output from a strict saddle: its SOSP violation α̂ is not smaller by "
          f"more than {T10_MARGIN:g}·α (non-inferiority, α = 4χ; our ablation of the paper's "
          "argument that the DP noise alone escapes)", "§5.2 (no extra noise)",
          Runs((SADDLE,), {"label": [OURS, EXTRA]}, ("epsilon", "p_prob_d")),
          Statistic("(α̂ with extra escape noise − α̂ without)/α, paired by seed",
                    _extra_noise_cost),
          NonInferior(T10_MARGIN, T10_SOURCE, what="α̂ difference / α"),
          (RAN_P, BOUND_P, SMOOTH_P),
          kind="design",
          where="our ablation of §3.1 and §5.2 (the DP noise alone escapes: 'it becomes "
                "possible to avoid the need for additional injected noise'); the paper runs no "
                "such test"),
    Claim("T9", "above d = (√m n ε)^(6/13), private selection (Algorithm 4) outputs a worse "
          "point (larger SOSP violation α̂ = max(‖∇F‖, max(0, −λ_min)²/ρ)) than Gauss-PSGD's "
          "direct output", "Remark 4 (selection)",
          Runs((SELECTION,), SELECTION_PAIR, SELECTION_CELL, keep=_above_threshold),
          SELECTION_COST, AtLeast(0.0, "α̂ difference"), (REMARK4_P, BOUND_P, SMOOTH_P),
          controls=(Control(
              "below the threshold", Runs((SELECTION,), SELECTION_PAIR, SELECTION_CELL,
                                          keep=lambda runs: ~_above_threshold(runs)),
              "no harm shown: Remark 4 bounds Algorithm 4's α′ by α below the threshold, up "
              "to a constant; tested without the constant, so 'unexpected' means selection "
              "costs more here too, which that constant may allow", SELECTION_COST,
              AtMost(0.0, "α̂ difference")),),
          kind="paper", headline=True,
          where="Remark 4 (§7, after Theorem 4): α′ ≤ Õ(α) needs d ≤ (√m n ε)^(6/13); "
                "§3.2 and Remark 5: selection in distributed learning costs accuracy"),
)


# -- figures and tables -------------------------------------------------------------------

def _epoch_curves(results: PaperResults, suite: str) -> pd.DataFrame:
    curves = results.curves(suite, points=("iterate", "output"))
    if curves.empty or "epoch" not in curves:
        return pd.DataFrame()
    curves = per_pass(curves[curves["status"] == "done"])
    return curves.assign(m=curves["p_prob_clients"])


def _curve_panel(ax: Any, rows: pd.DataFrame, metric: str, colour: dict[str, Any]) -> None:
    ms = sorted(rows["m"].unique())
    for (label, m), grp in rows.groupby(["label", "m"]):
        mean = grp.groupby("epoch")[metric].mean()
        ax.plot(mean.index, mean.to_numpy(), color=colour.get(str(label)),
                ls=("-", "--", ":", "-.")[ms.index(m) % 4], label=f"{label}, m={m}")
    ax.set_xlabel("pass over the data (epoch)")
    ax.set_ylabel(metric.replace("_", " "))


def _references(results: PaperResults, eps: float, problem: str) -> dict[str, float]:
    """Mean final test accuracy of each reference (SGD; DP-SGD at ``eps``) on ``problem``."""
    runs = results.role_runs(REFERENCES)
    if runs.empty or "final_test_acc" not in runs:
        return {}
    runs = runs[(runs["status"] == "done") & (runs["problem"] == problem)]
    private = runs["algorithm"] != "sgd"
    runs = runs[~private | np.isclose(runs["epsilon"].astype(float), eps)]
    return {str(a): float(part["final_test_acc"].mean()) for a, part in runs.groupby(
        "algorithm")}


def _figure_1_2(results: PaperResults, suite: str, out: Path) -> list[Figure]:
    import matplotlib.pyplot as plt

    curves = _epoch_curves(results, suite)
    figures = []
    for cal, part in (curves.groupby("calibration") if not curves.empty else ()):
        style()
        colour = colours([OURS, BASELINE])
        eps_values = sorted(part["epsilon"].unique())
        fig, axes = plt.subplots(2, len(eps_values), figsize=(4 * len(eps_values), 6.4),
                                 squeeze=False)
        for col, eps in enumerate(eps_values):
            for row, metric in enumerate(("test_acc", "test_loss")):
                _curve_panel(axes[row][col], part[part["epsilon"] == eps], metric, colour)
                axes[row][col].set_title(f"ε = {eps:g}", fontsize=9)
            references = _references(results, float(eps), str(part["problem"].iloc[0]))
            for (name, acc), ls in zip(references.items(), ("-.", ":"), strict=False):
                axes[0][col].axhline(acc, color="grey", ls=ls, label=f"{name} (reference)")
            axes[0][col].axhline(CHANCE, color="lightgrey", lw=0.8)
        axes[0][0].legend(fontsize=6)
        name = save_figure(fig, out, f"{suite}_{cal}", dpi=120)
        figures.append(Figure(name, f"Figures 1-2 regenerated ({suite}, calibration {cal}): "
                              "test accuracy (top) and loss (bottom) per pass, mean over runs, "
                              "one line per method and number of clients m; grey: the final "
                              "accuracy of chance and, where they ran, of non-private SGD and "
                              "DP-SGD on the same (pooled) data.",
                              results.provenance(results.suite_runs(suite))))
    return figures


def _dimension_figure(results: PaperResults, out: Path) -> list[Figure]:
    """One figure over every selection suite (the contrast below Remark 4's threshold and
    T9's in-regime dimension come from separate files with different run counts)."""
    import matplotlib.pyplot as plt

    every = results.role_runs(SELECTION)
    runs = every[every["status"] == "done"] if not every.empty else every
    if runs.empty or "p_prob_d" not in runs:
        return []
    runs = runs.assign(sosp=is_sosp(runs, float(theorem_alpha(_of(runs, OURS)).median())))
    table = runs.groupby(["p_prob_d", "label"])["sosp"].mean().unstack()
    style()
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    colour = colours(list(table.columns))
    for label in table.columns:
        ax.plot(table.index, table[label], marker="o", label=label, color=colour[label])
    ax.axvline(float(remark4_threshold(runs).iloc[0]), color="grey", ls="--",
               label="(√m n ε)^(6/13)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    ax.set_ylabel("fraction of outputs that are 4χ-SOSPs")
    ax.legend(fontsize=7)
    name = save_figure(fig, out, "selection_by_dimension")
    counts = runs[runs["label"] == ALG4].groupby("p_prob_d").size()
    return [Figure(name, "Private selection in the distributed setting (Algorithm 4) against "
                   "Gauss-PSGD's direct output, by dimension: the share of outputs that are "
                   "α-SOSPs at Theorem 1's α = 4χ; Remark 4's threshold dashed. Runs per "
                   "method: " + ", ".join(f"{n} at d = {d:g}" for d, n in counts.items())
                   + ".", results.provenance(every))]


def _gap(part: pd.DataFrame, results: PaperResults) -> str:
    """Gauss-PSGD − baseline final test accuracy in pp over ``part``, with the 95 % interval
    of E1's own statistic and rule (paired by seed)."""
    decision = E1_RULE.decide(E1_GAP.compute(part, results))
    low, high = decision.interval
    return f"{decision.estimate:+.1f}" + (f" [{low:+.1f}, {high:+.1f}]"
                                          if math.isfinite(low) else "")


def _horizon_cells(results: PaperResults) -> pd.DataFrame:
    """The judged Figures runs (``judged`` = figures) and the horizon check's (horizon) at
    the client counts the check ran; empty without a horizon check."""
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
    """E1's comparison at the declared horizon (Figures) and at the longer one (horizon):
    each cell's mean final accuracies, the gap with its 95 % interval, and how many
    Gauss-PSGD runs stopped at the SOSP exit."""
    runs = _horizon_cells(results)
    if runs.empty:
        return None
    tuned = {FIGURES: tuned_lr(results), HORIZON: tuned_lr(results, HORIZON_TUNING)}
    rows, ids = [], []
    for (eps, m, passes, role), part in runs.groupby(["epsilon", "p_prob_clients",
                                                       "p_alg_epochs", "judged"]):
        ours, baseline = _of(part, OURS), _of(part, BASELINE)
        lr = float(ours["p_alg_lr"].iloc[0])
        choice = tuned[str(role)].get(OURS)
        rows.append([f"{eps:g}", f"{m:g}", f"{passes:g}",
                     f"{lr:g}" + (f" (tuned {choice[0]:g})" if choice else " (not tuned)"),
                     f"{100 * ours['final_test_acc'].mean():.1f} %",
                     f"{100 * baseline['final_test_acc'].mean():.1f} %",
                     _gap(part, results), f"{_stopped(ours)}/{len(ours)}"])
        ids.append(sorted(part["run_id"].astype(str)))
    return {"title": "Does E1's verdict depend on the horizon? 2 passes (judged) and 20",
            "note": "The paper does not state its number of passes. The claims are judged "
                    "at the declared 2-pass horizon; the same stand-in at 20 passes (its lr "
                    "tuned alike in the regime, which the larger σ caps at 0.045) is set "
                    "beside as a sensitivity check, not counted. Gap: mean final test "
                    "accuracy of Gauss-PSGD − the baseline, 95 % interval paired by seed; "
                    "stopped: Gauss-PSGD runs that ended at the SOSP exit (x̃ certified at "
                    "α = 4χ).",
            "columns": ["ε", "m", "passes", "lr", "Gauss-PSGD", "baseline", "gap (pp)",
                        "stopped at the SOSP exit"],
            "rows": rows, "row_runs": ids, "provenance": results.provenance(runs)}


def _horizon_finding(results: PaperResults) -> list[dict[str, str]]:
    """The horizon check as a finding beside E1's verdict: each checked cell's gap at the
    longer horizon (with the SOSP exits), computed from the runs."""
    runs = _horizon_cells(results)
    long = runs[runs["judged"] == HORIZON] if not runs.empty else runs
    if long.empty:
        return []
    cells = []
    for (eps, m), part in long.groupby(["epsilon", "p_prob_clients"]):
        ours = _of(part, OURS)
        stops = _stopped(ours)
        cells.append(f"ε = {eps:g}, m = {m:g}: {_gap(part, results)} pp"
                     + (f" (Gauss-PSGD stopped at the SOSP exit in {stops}/{len(ours)})"
                        if stops else ""))
    passes = ", ".join(f"{p:g}" for p in sorted(long["p_alg_epochs"].unique()))
    return [{"kind": "sensitivity check (not counted)",
             "what": f"E1 at {passes} passes instead of the judged 2: the gap Gauss-PSGD − "
                     "baseline in final test accuracy (the paper does not state its passes)",
             "numbers": "; ".join(cells) + " (table 'Does E1's verdict depend on the "
                        "horizon?')"}]


def _escape_table(results: PaperResults) -> dict[str, Any] | None:
    runs = results.runs
    if runs.empty or "diag_triggers" not in runs:
        return None
    ours = runs[(runs["algorithm"] == OURS) & (runs["status"] == "done")]
    rows, ids = [], []
    for (suite, label, eps, cal), part in ours.groupby(["suite", "label", "epsilon",
                                                          "calibration"]):
        steps = part["diag_refreshes"] + part["diag_differences"]
        rows.append([suite, str(label), f"{eps:g}", cal, f"{part['diag_triggers'].mean():.2f}",
                     f"{part['diag_escape_rounds'].mean():.2f}",
                     f"{part['diag_escapes'].mean():.2f}",
                     f"{100 * (part['diag_escape_steps'] / steps).mean():.1f}%",
                     f"{part['diag_refreshes'].mean():.1f} / {part['diag_differences'].mean():.1f}",
                     f"{part['diag_noise_norm_o1'].mean():.3g}",
                     f"{part['diag_trigger_threshold'].iloc[0]:.3g}",
                     ", ".join(f"{k}: {v}" for k, v in part["diag_termination"]
                               .value_counts().items())])
        ids.append(sorted(part["run_id"].astype(str)))
    return {"title": "Escape statistics of Gauss-PSGD",
            "note": "Per run (mean): times ‖ĝ‖ ≤ 3χ fired, escape rounds, successful escapes, "
                    "share of oracle calls spent in escape rounds, O1 refreshes / O2 "
                    "differences, and the norm of the averaged O1 privacy noise beside the "
                    "trigger 3χ: when it is larger, the trigger essentially never fires "
                    "(notes §7).",
            "columns": ["suite", "label", "ε", "calibration", "triggers", "escape rounds",
                        "escapes", "steps in escape mode", "O1 / O2 calls", "O1 noise norm", "3χ",
                        "termination"],
            "rows": rows, "row_runs": ids, "provenance": results.provenance(ours)}


def _chi_table(results: PaperResults) -> dict[str, Any] | None:
    runs = results.role_runs(CHI_SWEEP, CHI_SELECT)
    runs = runs[runs["status"] == "done"] if not runs.empty else runs
    if runs.empty or "diag_trigger_tests" not in runs:
        return None
    runs = runs.assign(chi_used=run_chi(runs))
    rows, ids = [], []
    for (suite, label, scale), part in runs.groupby(["suite", "label", "p_alg_chi_scale"],
                                                    dropna=False):
        ours = part["algorithm"].eq(OURS).all()
        fixed = part["p_alg_chi"].notna().all() if "p_alg_chi" in part else False
        rate = _fired(part, "diag_triggers", "diag_trigger_tests") if ours else _fired(
            part, "diag_escape_injections", "diag_injection_tests")
        acted = numeric(part, "diag_escapes" if ours else "diag_escape_injections")
        ends = part["diag_termination"].dropna().value_counts() \
            if "diag_termination" in part else pd.Series(dtype=int)
        rows.append([str(suite).removeprefix("tao2025_quick_"), str(label),
                     "paper χ = 0.01" if fixed else f"χ = {scale:g}·ψ̂",
                     f"{part['chi_used'].median():.3g}",
                     f"{numeric(part, 'diag_noise_norm_o1').median():.3g}", rate[1],
                     f"{acted.mean():.1f} {'escapes' if ours else 'injections'}",
                     ", ".join(f"{k}: {v}" for k, v in ends.items()) or "–",
                     f"{100 * part['final_test_acc'].mean():.1f} %"])
        ids.append(sorted(part["run_id"].astype(str)))
    return {"title": "χ sweep: how often the escape test fires",
            "note": "The Figures stand-in at m = 1, ε = 1: the share of tests that fired "
                    "(Gauss-PSGD: ‖ĝ‖ ≤ 3χ; the baseline: ‖ĝ‖ ≤ γ_small = 3χ while not "
                    "frozen), escapes or injections per run, how runs ended and final test "
                    "accuracy. The comparison claims need both rates in (5 %, 95 %); the "
                    "chi_select runs are E1, E2 and E5's settings where the premise holds. "
                    "At the paper's χ = 0.01 the test can fire only where ‖ĝ‖ ≤ 0.03.",
            "columns": ["suite", "label", "χ rule", "χ used", "O1 noise norm",
                        "fired (tests)", "per run", "termination", "test accuracy"],
            "rows": rows, "row_runs": ids, "provenance": results.provenance(runs)}


def _trigger_table(results: PaperResults) -> dict[str, Any] | None:
    """Claim E0's arithmetic per cell of the Figures' settings (study paper_scale_trigger)."""
    rows = results.study(TRIGGER_STUDY)
    if rows.empty:
        return None
    table = []
    for (name, eps, m), part in rows.groupby(["data", "epsilon", "clients"], sort=False):
        first = part.iloc[0]
        table.append([name, f"{first['d']:,}", f"{eps:g}", f"{m:g}", f"{first['sigma']:.2f}",
                      f"{first['eps_pld']:.2f}", f"{first['noise_formula']:.2f}",
                      f"{part['noise_norm'].min():.2f}–{part['noise_norm'].max():.2f}",
                      f"{part['lower_bound'].min():.2f}", f"{first['threshold']:g}",
                      f"{part['b1_max'].min():.0f}"])
    return {"title": "The escape test at the paper's own settings (claim E0)",
            "note": "Gauss-PSGD planned at the Figures' settings (App. E: the MNIST and "
                    "CIFAR-10 MLPs, 6,000 images per client, χ = 0.01, the paper's "
                    "calibration σ = √(2 ln(1.25/δ))/ε per query; notes §6: b₁ = 256, G = 1, "
                    f"20 passes), {TRIGGER_SEEDS} draws per cell of the averaged O1 noise ξ̄ "
                    "through the mechanism. Every O1 answer is the clipped mean gradient "
                    "(norm ≤ G) + ξ̄, so ‖ĝ‖ ≥ ‖ξ̄‖ − G for any data and iterate: the test "
                    "‖ĝ‖ ≤ 3χ cannot fire where that bound exceeds 3χ. ε spent: what the "
                    "paper's calibration spends over the 20 passes (PLD). Largest b₁: the "
                    "batch up to which the bound stays above 3χ (the noise falls as 1/b₁).",
            "columns": ["data", "d", "ε", "m", "σ (Def. 8)", "ε spent (PLD)",
                        "2σG√d/(b₁√m)", "‖ξ̄‖ drawn", "‖ĝ‖ ≥ ‖ξ̄‖ − G", "3χ",
                        "largest b₁"],
            "rows": table,
            "provenance": Provenance(results.scale, computed=f"study {TRIGGER_STUDY}")}


def _figure_runs(results: PaperResults) -> pd.DataFrame:
    """The finished Gauss-PSGD runs of the Figures, on the stand-in and on real images."""
    runs = results.role_runs(FIGURES, FIGURES_REAL)
    runs = runs[runs["status"] == "done"] if not runs.empty else runs
    if runs.empty or "diag_refreshes" not in runs:
        raise KeyError("no finished Figures runs")
    return _of(runs, OURS)


def _span(v: pd.Series) -> str:
    v = v.dropna()
    return f"{v.median():.3g} (range {v.min():.3g}–{v.max():.3g}, {len(v)} runs)"


def _ours(quantity: Callable[[pd.DataFrame], pd.Series]) -> Callable[[PaperResults], str]:
    """A regime row's measured side: ``quantity`` over the Figures' Gauss-PSGD runs, one
    value per data (the stand-in, real images)."""
    def measured(results: PaperResults) -> str:
        return "; ".join(f"{_data_name(str(problem))}: {_span(quantity(part))}"
                         for problem, part in _figure_runs(results).groupby("problem"))

    return measured


def _data_name(problem: str) -> str:
    """The data set a Figures problem runs on, as the page names it."""
    return REAL_DATA[problem][0] if problem in REAL_DATA else f"{problem} (stand-in)"


def dimension(runs: pd.DataFrame) -> pd.Series:
    """d of each run: the problem's ``d`` where it is a parameter, else the one Gauss-PSGD
    recorded, else that of the h-unit MLP on real images, (features + 1)·h + (h + 1)·10."""
    features = runs["problem"].map(lambda p: REAL_DATA.get(p, ("", math.nan, 0.0))[1]) \
        if "problem" in runs else pd.Series(math.nan, index=runs.index)
    hidden = numeric(runs, "p_prob_hidden")
    return numeric(runs, "p_prob_d").fillna(numeric(runs, "diag_d")).fillna(
        (features.astype(float) + 1) * hidden + (hidden + 1) * 10)


def _data_used(results: PaperResults) -> str:
    """What each Figures problem is (data, d, records per client) and which claims read it."""
    return "; ".join(
        f"{_data_name(str(problem))}, d = {dimension(part).max():,.0f}, "
        f"{per_client(part).max():,.0f} per client: "
        + ("E3, E6" if problem in REAL_DATA else "E1, E2, E4, E5 (and E3, E6 without real "
                                                  "images)")
        for problem, part in _figure_runs(results).groupby("problem"))


def o1_noise_to_signal(runs: pd.DataFrame) -> pd.Series:
    """Norm of the averaged O1 privacy noise over the clip G: 2σ√(d/m)/b₁."""
    m = numeric(runs, "p_prob_clients").fillna(1.0)
    return 2 * numeric(runs, "sigma") * np.sqrt(dimension(runs) / m) \
        / numeric(runs, "p_alg_batch_refresh")


def o2_gain(runs: pd.DataFrame) -> pd.Series:
    """O2 noise added per step over ‖ĝ‖ (‖Δx‖ = η‖ĝ‖): 2σMη√(d/m)/b₂. The recursion's noise
    compounds step by step unless this is well below 1."""
    m = numeric(runs, "p_prob_clients").fillna(1.0)
    return 2 * numeric(runs, "sigma") * numeric(runs, "p_alg_diff_clip") \
        * numeric(runs, "p_alg_lr") * np.sqrt(dimension(runs) / m) \
        / numeric(runs, "p_alg_batch_diff")


def _per_refresh(runs: pd.DataFrame) -> pd.Series:
    refreshes = numeric(runs, "diag_refreshes")
    return (refreshes + numeric(runs, "diag_differences")) / refreshes


def _per_pass(runs: pd.DataFrame) -> pd.Series:
    return (numeric(runs, "diag_refreshes") + numeric(runs, "diag_differences")) \
        / numeric(runs, "diag_epochs_used")


def _rate(runs: pd.DataFrame) -> pd.Series:
    return np.sqrt(dimension(runs)) / (per_client(runs) * runs["epsilon"].astype(
        float))




def _trigger_rate(runs: pd.DataFrame) -> pd.Series:
    return numeric(runs, "diag_triggers") / numeric(runs, "diag_trigger_tests")


def _noise_over_trigger(runs: pd.DataFrame) -> pd.Series:
    return numeric(runs, "diag_noise_norm_o1") / numeric(runs, "diag_trigger_threshold")


REGIME = (
    Regime("O1 noise norm ÷ the escape test's threshold 3χ",
           f"{PAPER_NOISE / (3 * PAPER_CHI):.0f} (χ = {PAPER_CHI:g}; {ASSUMED})",
           _ours(_noise_over_trigger),
           "above ≈ 1 the test ‖ĝ‖ ≤ 3χ cannot fire (‖ĝ‖ ≥ noise norm − G); well below 1 it "
           "fires at every test", lead=True),
    Regime("Gauss-PSGD's escape-test trigger rate (tests with ‖ĝ‖ ≤ 3χ)",
           f"0: it cannot fire (‖ĝ‖ ≥ noise norm − G = {PAPER_NOISE - 1:.1f} ≫ 3χ = "
           f"{3 * PAPER_CHI:g}; {ASSUMED})", _ours(_trigger_rate),
           "the comparison claims need it in (5 %, 95 %): a test that always or never fires "
           "selects nothing", lead=True),
    Regime("O1 noise-to-signal 2σ√(d/m)/b₁ (noise norm ÷ clip G)",
           f"{PAPER_NOISE:.1f} ({ASSUMED})", _ours(o1_noise_to_signal),
           "trigger ‖ĝ‖ ≤ 3χ and Theorem 1's α = 4χ scale with it"),
    Regime("O2 gain 2σMη√(d/m)/b₂ (noise added per recursion step ÷ ‖ĝ‖)",
           f"{PAPER_GAIN:.3f} (η = 1e-3; {ASSUMED})", _ours(o2_gain),
           "the SPIDER recursion compounds its noise unless this is well below 1"),
    Regime("oracle calls per O1 refresh", f"≈ {PAPER_PER_REFRESH:.0f} (κ/(η‖ĝ‖)², κ = 0.1, "
           "‖ĝ‖ ≈ the O1 noise norm)", _ours(_per_refresh),
           "1 means the recursion never runs"),
    Regime("√d/(nε) per client", f"{math.sqrt(PAPER_D) / PAPER_N:.3f} at ε = 1 (MNIST)",
           _ours(_rate), "Theorem 3's private term is its 2/5 power"),
    Regime("steps per pass", f"≈ {PAPER_N / PAPER_B2:.0f} (6,000/b₂, b₂ = 64 assumed)",
           _ours(_per_pass)),
    Regime("passes", "not stated (Figures 1-2 plot several epochs)",
           _ours(lambda r: numeric(r, "diag_epochs_used"))),
    Regime("per-client n", "6,000 (Option A)", _ours(per_client),
           "Option A on both: Fashion-MNIST split i.i.d. into m × 6,000 images, the stand-in's "
           "clients 6,000 records each"),
    Regime("data, d and the claims each serves",
           f"MNIST (28×28 images, d = {PAPER_D:,}) and CIFAR-10 (32×32×3, d = "
           f"{paper_d(3072):,}): E1-E6", _data_used,
           "E3 and E6 read real images at the paper's d, n, χ and lr wherever they ran "
           "(Fashion-MNIST: MNIST's format and size, so the paper's √d/(nε) and O1 noise "
           "norm); the comparisons stay on the stand-in, where χ can be set so that the "
           "escape test selects: at the paper's χ it never fires on real images (claim E0) "
           "and the two methods run identically"),
)


def _saddle_table(results: PaperResults) -> dict[str, Any] | None:
    runs = results.role_runs(SADDLE)
    runs = runs[runs["status"] == "done"] if not runs.empty else runs
    if runs.empty or "final_lambda_min" not in runs:
        return None
    alpha = float(theorem_alpha(_of(runs, OURS)).median())
    runs = runs.assign(sosp=is_sosp(runs, alpha), violation=violation(runs))
    rows = [[label, str(len(part)), f"{int(part['sosp'].sum())}/{len(part)}",
             f"{part['final_grad_norm'].mean():.3g}", f"{part['final_lambda_min'].mean():.3g}",
             f"{part['violation'].mean():.3g}"] for label, part in runs.groupby("label")]
    return {"title": "Outputs started at the strict saddle",
            "note": f"Every method's output judged at Theorem 1's α = 4χ = {alpha:g} (the "
                    "baselines have no theorem of this form here: shown for contrast). "
                    "α̂ = max(‖∇F‖, max(0, −λ_min)²/ρ).",
            "columns": ["method", "runs", "α-SOSP outputs", "mean ‖∇F‖", "mean λ_min",
                        "mean α̂"],
            "rows": rows, "provenance": results.provenance(runs)}


def _real_runs(results: PaperResults) -> pd.DataFrame:
    runs = results.role_runs(FIGURES, FIGURES_REAL)
    return runs[(runs["status"] == "done") & is_real(runs)] if not runs.empty else runs


def o1_noise_norm(runs: pd.DataFrame) -> pd.Series:
    """Norm of the averaged O1 privacy noise, 2σG√(d/m)/b₁ (any method on the oracle)."""
    return o1_noise_to_signal(runs) * numeric(runs, "p_alg_grad_clip")


def _fired_of(runs: pd.DataFrame, label: str) -> str:
    """'k/n': tests that fired over tests of ``label``'s escape test (Gauss-PSGD's trigger,
    the baseline's injection), '–' without its runs."""
    part = _of(runs, label)
    fired, tests = (("diag_triggers", "diag_trigger_tests") if label == OURS else
                    ("diag_escape_injections", "diag_injection_tests"))
    if part.empty:
        return "–"
    return f"{numeric(part, fired).sum():.0f}/{numeric(part, tests).sum():.0f}"


def _real_table(results: PaperResults) -> dict[str, Any] | None:
    """The escape test on real images at the paper's settings, per (data, calibration, m, ε,
    passes): the O1 noise norm against 3χ, how often each method's test fired, whether the
    methods' runs differ, and what Gauss-PSGD reached."""
    runs = _real_runs(results)
    if runs.empty:
        return None
    runs = runs.assign(noise=o1_noise_norm(runs), limit=3 * run_chi(runs))
    rows, ids = [], []
    for (problem, cal, m, eps, passes), part in runs.groupby(
            ["problem", "calibration", "p_prob_clients", "epsilon", "p_alg_epochs"]):
        ours = _of(part, OURS)
        same, pairs = identical_pairs(part)
        rows.append([_data_name(str(problem)), str(cal), f"{m:g}", f"{eps:g}", f"{passes:g}",
                     f"{part['sigma'].median():.2f}",
                     f"{part['noise'].median():.3g}", f"{part['limit'].median():g}",
                     f"{(part['noise'] / part['limit']).median():,.0f}",
                     _fired_of(part, OURS), _fired_of(part, BASELINE),
                     f"{same}/{pairs}" if pairs else "–",
                     f"{100 * ours['final_test_acc'].mean():.1f} %"])
        ids.append(sorted(part["run_id"].astype(str)))
    return {"title": "The escape test on real images at the paper's settings",
            "note": "Real images with the paper's MLP for them (Fashion-MNIST: MNIST's "
                    "784-128-10, d = 101,770), 6,000 images per client, χ = 0.01 and the "
                    "paper's lr (App. E); per cell (all seeds): σ, the O1 noise norm "
                    "2σG√(d/m)/b₁ against the test's threshold 3χ, how many of Gauss-PSGD's "
                    "escape tests (‖ĝ‖ ≤ 3χ) and of the baseline's injection tests "
                    "(‖ĝ‖ ≤ γ_small = 3χ) fired, the seed pairs whose final test accuracy and "
                    "loss are identical, and Gauss-PSGD's mean final test accuracy. Every O1 "
                    "answer has ‖ĝ‖ ≥ noise norm − G.",
            "columns": ["data", "calibration", "m", "ε", "passes", "σ", "O1 noise norm", "3χ",
                        "noise ÷ 3χ", "Gauss-PSGD tests fired", "baseline tests fired",
                        "identical seed pairs", "Gauss-PSGD accuracy"],
            "rows": rows, "row_runs": ids, "provenance": results.provenance(runs)}


def _real_findings(results: PaperResults) -> list[dict[str, str]]:
    """What real images at the paper's settings show about the escape test (every run), and
    the stand-in's E3 and E6 verdicts there, which no longer count."""
    runs = _real_runs(results)
    if runs.empty:
        return []
    names = ", ".join(sorted({_data_name(str(p)) for p in runs["problem"]}))
    noise, limit = o1_noise_norm(runs), 3 * run_chi(runs)
    ratio = noise / limit
    same, pairs = np.sum([identical_pairs(part) for _, part in runs.groupby(
        ["problem", "calibration", "p_prob_clients", "epsilon", "p_alg_epochs"])], axis=0)
    fired = numeric(runs, "diag_triggers").sum() + numeric(runs, "diag_escape_injections").sum()
    reading = ("Neither test fired, so neither selects: at the paper's settings both methods "
               "are Ada-DP-SPIDER, and E1, E2, E4, E5 are judged on the stand-in, where χ can "
               "be set so that the test selects" if fired == 0 else
               "The tests fired: see the table for where")
    found = [{"kind": "finding (real images)",
              "what": f"the escape test at the paper's own settings on real images ({names}; "
                      "the paper's MLP and lr, 6,000 images per client, χ = 0.01): does it "
                      "fire, and does it select?",
              "numbers": f"O1 noise norm {noise.min():.3g}–{noise.max():.3g} against 3χ = "
                         f"{limit.max():g} ({ratio.min():,.0f}–{ratio.max():,.0f}×) in "
                         f"{len(runs)} runs; Gauss-PSGD's test fired at "
                         f"{_fired_of(runs, OURS)} tests, the baseline's at "
                         f"{_fired_of(runs, BASELINE)}; the two methods' final test "
                         f"accuracy and loss are identical in {same}/{pairs} seed pairs. "
                         f"{reading} (table 'The escape test on real images at the paper's "
                         "settings')"}]
    return found + stand_in_findings(
        (c for c in CLAIMS if c.id in ("E3", "E6")), results, lambda r: ~is_real(r),
        "{id} on the synthetic stand-in, which real images replace as its judged data")


def sections(results: PaperResults, out: Path) -> PaperSections:
    """Figures 1-2, the selection-by-dimension figure, escape statistics, the saddle outputs,
    ε as the paper computes it, and the deviations."""
    import matplotlib

    matplotlib.use("Agg")
    found = PaperSections(settings=settings(results))
    trigger = _trigger_table(results)  # a study: no run needed
    found.tables += [trigger] if trigger else []
    if results.runs.empty:
        return found
    for suite in results.role_suites(FIGURES, FIGURES_REAL, HORIZON):
        found.figures += _figure_1_2(results, suite, out)
    found.figures += _dimension_figure(results, out)
    found.findings += _real_findings(results) + _horizon_finding(results)
    for table in (_real_table(results), _horizon_table(results), _escape_table(results),
                  _chi_table(results),
                  _saddle_table(results), calibration_table(
            results, "Calibration 'paper' is the paper's own formula: every oracle answer "
            "calibrated with Def. 8 (c = 8, ln(1.25/δ)) at the full (ε, δ), exact for one pass "
            "(Theorems 2-3); over several passes it spends more (see ε PLD). σ tight is the "
            "multiplier the PLD accountant needs for the same (ε, δ) with passes composed "
            "exactly.")):
        if table:
            found.tables.append(table)
    found.deviations = deviations([
        ("gauss_psgd", "algorithms.gauss_psgd", "Deviations"),
        ("ada_dp_spider", "algorithms.ada_dp_spider", "Deviations"),
        ("dp_spider_at", "algorithms.dp_spider_at", "Deviations")])
    return found


PAPER = Paper(
    key="tao2025",
    title="Second-Order Convergence in Private Stochastic Non-Convex Optimization",
    source="Tao, Zhang, Yu, Cheng, Dressler, Wang 2025, arXiv:2505.15647",
    url="https://arxiv.org/abs/2505.15647",
    claims=CLAIMS,
    roles={FIGURES: "Figures 1-2 (accuracy and loss per pass over clients m and ε): claims "
                    "E1-E6 and the regenerated figures",
           FIGURES_REAL: "Figure 1 at the paper's own settings on real images "
                         "(Fashion-MNIST, the 784-128-10 MLP, 6,000 images per client, χ = "
                         "0.01, lr 1e-3): claims E3 and E6, E0's control and the escape test "
                         "on real images",
           REFERENCES: "non-private SGD and DP-SGD on the Figures stand-in's data (drawn "
                       "on the figures)",
           TUNING: "the Figures stand-in's learning rate, tuned alike for both methods on a "
                   f"grid restricted to the claims' regime (η ≤ {LR_REGIME_CAP:g})",
           PRACTICE: "the same tuning without the regime restriction: what a practitioner "
                     "would pick (reported beside the claims, not a claim's setting)",
           HORIZON: "Figures 1-2 at 20 passes (m = 1 and 10): how E1's comparison "
                    "changes with the horizon (a sensitivity check, not a claim's setting)",
           HORIZON_TUNING: "the horizon check's learning rate, tuned alike on the grid "
                           "restricted to the regime at 20 passes (η ≤ 0.045)",
           CHI_SELECT: "both methods at χ = s·ψ̂, s ∈ {0.35, 0.4, 0.5}, where the escape test "
                       "can select (m = 1, ε = 1): settings of E1, E2 and E5 beside the "
                       "Figures'",
           CHI_SWEEP: "the escape threshold χ swept (paper χ = 0.01 and χ = s·ψ̂): trigger "
                      "rates and accuracy",
           SADDLE: "started at a strict saddle: Theorem 1 (T4), Corollary 1 (T5), the saddle "
                   "outputs table",
           SELECTION: "Algorithm 4 vs the direct output over d: Remark 4 (T9) and its figure"},
    sections=sections,
    resolutions=RESOLUTIONS,
    studies={TRIGGER_STUDY: trigger_study},
    regime=REGIME,
)
