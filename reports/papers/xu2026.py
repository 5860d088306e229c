"""xu2026, DP RGDA: the declared claims of Table 2 and Figure 1 on matrix sensing — first
whether App. D's mechanism lets Table 2 measure optimisation at all (D1: the data's share of
each method's displacement at App. D's literal constants), then the comparisons where the
baselines move (C1–C3, P1: App. D's level is D1's), every method at x_T = x_399 with its
output beside it — the privacy charging App. D states (A1), Theorem 1's empirical-risk rate
(an upper bound, tested one-sided on the best-iterate ‖∇Φ‖ with clipping inactive) and the
strict saddle of the §5 instance; the page's tables and figures (why our numbers differ,
Table 2 regenerated and its App. D-literal variant, the calibrations, Table 1, the X* scale,
Figure 1, where progress stops in σ, the data check, the rate check) and the Regime table
(App. D's noise-to-signal, steps, passes, y-step).

Roles (``role:`` in bench/experiments/xu2026/*/): ``table2`` (matrix sensing: private runs
with each method's constants tuned alike, at App. D's privacy level and at ours where the
baselines move (``table2_scale*_inregime.yaml``, where C1–C3 are decided), and σ → 0
references, matched to the judged runs on every constant), ``table2_untuned`` (the private
runs at the references' own steps, a labelled variant), ``table2_literal`` (App. D's literal
constants, a labelled variant; the published numbers are compared with it) and ``rate``
(the double-well rate check). Studies run by ``reproduce``: ``instance`` (the instance at
every X* scale: Φ and ∇²Φ at 0 and x₀, the share of per-sample partials C = 1 truncates),
``data`` (each method's iterates on the data against on zeros under the same noise: at
App. D's literal constants over whole runs for D1, at each judged level for the premise that
some method learns there) and ``sigma`` (DP-RGDA, DP-SGDA and the SPIDERs at the
‖X*‖_F = 100 constants with σ from 0 to App. D's, and the ε each σ spends: where progress
stops).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from algorithms.dp_rgda import DPRGDA
from bench.studies.xu2026 import (
    APP_D,
    CLIP,
    INFLUENCE_STEPS,
    JUDGED,
    KEY,
    LITERAL,
    OURS,
    PRIVATE,
    PRIVATE_DIFF,
    SPIDER_ALGORITHMS,
    SPIDERS,
    STUDIES,
    app_d_sigma,
)
from reports.claims import (
    Claim,
    Control,
    Paper,
    PaperSetting,
    Premise,
    Regime,
    Runs,
    Statistic,
    at_most,
    paired_or_welch,
)
from reports.figures import colours, save_figure
from reports.paper import (
    PaperResults,
    PaperSections,
    Provenance,
    deviations,
    format_mean_se,
    mean_se,
    rates_table,
    settings,
)
from reports.results import Figure
from reports.rules import Always, AtLeast, AtMost, Sample, SlopeAtMost, as_float
from reports.scaling import fit_slope

CALIBRATIONS = ("advanced", "pld")
METRICS = (("loss", "Φ(x_T)"), ("grad_norm", "‖∇Φ(x_T)‖"), ("lambda_min", "λ_min(∇²Φ(x_T))"))

# Declared thresholds (each with where it comes from):
LEFT_SADDLE = 0.5  # Φ(x_T)/Φ(x₀) below which a run has left the saddle region (the old P1
#                    threshold; the published DP-RGDA row ends at 0.91/13.2 ≈ 0.07 of Φ(x₀))
SLIGHTLY = 1.5  # C2 "slightly" / "comparable": DP-RGDA within 1.5× PrivateDiff (the
#                 published Φ ratio is 1.39); on progress: at least 1/1.5 of PrivateDiff's
NO_MOVE = 0.01  # a method "does not move" while its mean Φ(x_T)/Φ(x₀) is within 1 % of 1
DATA_SHARE = 0.1  # a run learns from its data while at least a tenth of its displacement is
#                   the data's (max_t ‖x_t − x'_t‖ ≥ 0.1 max_t ‖x_t − x₀‖, x' trained on zeros
#                   under the same noise): an order of magnitude below parity, declared with
#                   issue 37 (the former 1e-9 could not fail)
MILD_CLIP = 0.5  # clipping is mild while at most half of the per-sample partials are clipped
SIGNAL_TO_NOISE = 1.0  # a release carries signal while its noise norm √d·std ≤ this × C
BINDS = 0.1  # Theorem 1's bound binds while ‖∇Φ(x_out)‖ ≥ 0.1 α, α = c_α ε̄^{2/3}


# -- run selection ------------------------------------------------------------------------

def _clean(runs: pd.DataFrame) -> pd.DataFrame:
    """Finished runs not flagged diverged."""
    if runs.empty:
        return runs
    ok = runs["status"].eq("done")
    if "diverged" in runs:
        ok &= ~runs["diverged"].astype(object).eq(True)
    return runs[ok]


def _partner(runs: pd.DataFrame, results: PaperResults, label: str, clean: bool = True
             ) -> pd.DataFrame:
    """The ``label`` runs of the Table 2 suites at the scale of ``runs`` (and, for a
    private label, its privacy level: ε and calibration), finished and not diverged where
    ``clean``."""
    table2 = results.role_runs("table2")
    if runs.empty or table2.empty:
        return table2.iloc[0:0]
    scale = float(runs["p_prob_x_star_norm"].iloc[0])
    mask = (table2["label"] == label) & np.isclose(
        table2["p_prob_x_star_norm"].astype(float), scale)
    if not label.endswith("_nonprivate"):
        mask &= (table2["calibration"] == runs["calibration"].iloc[0]) & np.isclose(
            table2["epsilon"].astype(float), float(runs["epsilon"].iloc[0]))
    return _clean(table2[mask]) if clean else table2[mask]


def last_iterates(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """``runs`` with each run's last iterate x_T (Table 2 reports x_399, the paper's x_T):
    ``last_{metric}``, ``last_step`` (the t of its last iterate), ``phi0`` (Φ(x₀)) and
    ``stopped_early`` (``last_step`` < the planned T: a data cap or an early return)."""
    traj = results.trajectories
    if runs.empty or traj.empty or "run_id" not in traj:
        return runs
    its = traj[(traj["point"] == "iterate") & traj["run_id"].isin(runs["run_id"])]
    last = its.sort_values("step").groupby("run_id").last()
    start = its[its["step"] == 0].drop_duplicates("run_id").set_index("run_id")
    ids = runs["run_id"]
    extra = {f"last_{m}": ids.map(last[m]) for m, _ in METRICS if m in last}
    extra["last_step"] = ids.map(last["step"])
    extra["phi0"] = ids.map(start["loss"]) if "loss" in start else \
        pd.Series(np.nan, index=runs.index)
    extra["stopped_early"] = extra["last_step"] < runs["steps"].astype(float)
    return runs.assign(**extra)


def _ratio(runs: pd.DataFrame, results: PaperResults) -> np.ndarray:
    """Φ(x_T)/Φ(x₀) per run, at the last iterate."""
    runs = last_iterates(runs, results)
    if "last_loss" not in runs:
        return np.array([])
    return (runs["last_loss"] / runs["phi0"]).to_numpy(float)


# -- statistics -----------------------------------------------------------------------------

def _by_seed(runs: pd.DataFrame, values: pd.Series) -> pd.Series:
    """``values`` of ``runs`` indexed by seed (runs of one seed share the start x₀)."""
    return pd.Series(values.to_numpy(float), index=runs.get("seed", runs.index))


def _versus(metric: str) -> Statistic:
    """DP-RGDA's ``metric`` at x_T minus the setting's baseline's, paired by seed where the
    seeds pair (else Welch). Diverged runs of either side are dropped here: a diverged
    baseline is reported (the setting counts it), never scored, and its setting stays out
    of regime when a premise fails (the claims pass ``include_diverged``)."""
    column = f"last_{metric}"

    def compute(runs: pd.DataFrame, results: PaperResults) -> Sample:
        ours = last_iterates(_partner(runs, results, OURS), results)
        base = last_iterates(_clean(runs), results)
        if column not in ours or column not in base:
            return Sample.of([])
        return paired_or_welch(_by_seed(ours, ours[column]), _by_seed(base, base[column]))

    return Statistic(f"{metric.replace('_', ' ')} at x_T, DP-RGDA − the baseline (paired by "
                     "seed)", compute)


def _progress_versus(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """DP-RGDA's progress 1 − Φ(x_T)/Φ(x₀) minus 1/``SLIGHTLY`` × the baseline's, paired by
    seed (diverged runs dropped)."""
    ours = last_iterates(_partner(runs, results, OURS), results)
    base = last_iterates(_clean(runs), results)
    if "last_loss" not in ours or "last_loss" not in base:
        return Sample.of([])
    return paired_or_welch(_by_seed(ours, 1 - ours["last_loss"] / ours["phi0"]),
                           _by_seed(base, (1 - base["last_loss"] / base["phi0"]) / SLIGHTLY))


LEFT = Statistic("Φ(x_T)/Φ(x₀) per run (diverged runs dropped)",
                 lambda runs, results: Sample.of(_ratio(_clean(runs), results)))


def _eps_bar(runs: pd.DataFrame) -> pd.Series:
    """ε̄ = √(d log(1/δ))/(nε), d = max(d_x, d_y), as the ERM schedule planned it."""
    if "plan_eps_bar" in runs and runs["plan_eps_bar"].notna().all():
        return runs["plan_eps_bar"].astype(float)
    d = np.maximum(runs["p_prob_d"], runs["p_prob_d_y"]).astype(float)
    return np.sqrt(d * np.log(1 / runs["delta"].astype(float))) / (runs["n"] * runs["epsilon"])


def best_iterate(runs: pd.DataFrame, results: PaperResults) -> pd.Series:
    """min_t ‖∇Φ(x_t)‖ over each run's evaluated iterates (a measurement of the trajectory,
    not an output: the schedule fixes α, hence the certified output's scale, but not this)."""
    traj = results.trajectories
    if runs.empty or traj.empty or "grad_norm" not in traj:
        return pd.Series(np.nan, index=runs.index)
    its = traj[(traj["point"] == "iterate") & (traj["step"] > 0)]
    return runs["run_id"].map(its.groupby("run_id")["grad_norm"].min())


def _by_eps_bar(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Best-iterate ‖∇Φ‖ grouped by ε̄ (n fixed, ε swept)."""
    if runs.empty:
        return Sample.along({})
    frame = runs.assign(eps_bar=_eps_bar(runs), best=best_iterate(runs, results))
    return Sample.along({as_float(e): part["best"].to_numpy(float)
                         for e, part in frame.groupby("eps_bar")})


def _charged_as_app_d(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """Per run: its realised ledger spends at most the target under advanced composition,
    and a SPIDER baseline (whose ledger composes per pass over disjoint batches, a tighter
    account than App. D's) runs at least App. D's σ for its T oracle calls."""
    spent = runs["eps_advanced"].astype(float) <= runs["epsilon"].astype(float) * (1 + 1e-6)
    spider = runs["algorithm"].isin(SPIDER_ALGORITHMS)
    need = pd.Series([app_d_sigma(int(t)) if s else 0.0 for t, s in zip(
        runs["steps"], spider, strict=True)], index=runs.index)
    ok = spent & (runs["sigma"].astype(float) >= need * (1 - 1e-9))
    shown = runs.assign(need=need)[spider].drop_duplicates("steps")
    note = "; ".join(f"σ = {r['sigma']:.4g} against App. D's {r['need']:.4g} for T = "
                     f"{r['steps']:g} calls" for _, r in shown.iterrows())
    return Sample.of(ok.to_numpy(float), note=note)


def _saddle_ok(runs: pd.DataFrame, _: PaperResults) -> Sample:
    return Sample.of(runs["saddle_ok"].astype(bool).to_numpy(float) if "saddle_ok" in runs
                     else [])


def _snr_bound(results: PaperResults) -> str:
    """App. D's arithmetic for DP-RGDA's least noisy release (the refresh), from its run at
    App. D's literal constants."""
    runs = results.role_runs("table2_literal")
    rgda = runs[runs["label"] == OURS] if len(runs) else runs
    if rgda.empty or "plan_std_refresh" not in rgda:
        return ""
    r = rgda.iloc[0]
    d_x = float((r["p_prob_p"] + r["p_prob_q"]) * r["p_prob_rank"])
    ratio = math.sqrt(d_x) * float(r["plan_std_refresh"]) / float(r["p_alg_clip"])
    steps = float(r["steps"])
    return (f"App. D's arithmetic: DP-RGDA's least noisy release (the refresh, σ = "
            f"{r['sigma']:.4g}) carries noise of norm √d_x·σ·2C/S₁ = {ratio:.3g}× its clipped "
            f"signal (≤ C), so a sum of T = {steps:g} such releases has signal-to-noise ≤ "
            f"√T/{ratio:.3g} = {math.sqrt(steps) / ratio:.2g}, whatever the step, X*, start "
            "or C")


def _first_descent(results: PaperResults) -> str:
    """Per method of the σ study, the largest σ of its grid at which it descends (mean
    Φ(x_T)/Φ(x₀) ≤ 1 − ``NO_MOVE``) and the ε (PLD, n = 400) that σ spends."""
    study = results.study("sigma")
    if study.empty or "eps_pld" not in study:
        return ""
    parts = []
    for label, part in study.groupby("label"):
        means = part.groupby("sigma").agg(ratio=("ratio", "mean"), eps=("eps_pld", "first"))
        down = means[means["ratio"] <= 1 - NO_MOVE]
        parts.append(f"{label} at σ ≤ {down.index.max():g} (ε_PLD = "
                     f"{down.loc[down.index.max(), 'eps']:.3g})" if len(down)
                     else f"{label} at no σ tried")
    return ("the σ sweep (‖X*‖_F = 100, the references' constants) first descends for "
            + ", ".join(parts))


def _theorem1_alpha(results: PaperResults) -> str:
    """Theorem 1's α = ε̄^{2/3} (the Õ's constant 1) at App. D's (ε, δ) on the instance,
    beside ‖∇Φ(x₀)‖ (the instance study at ‖X*‖_F = 100)."""
    runs = results.role_runs("table2_literal")
    study = results.study("instance")
    if runs.empty or study.empty or "p_prob_p" not in runs:
        return ""
    r = runs.iloc[0]
    d = max(float((r["p_prob_p"] + r["p_prob_q"]) * r["p_prob_rank"]), float(r["n"]))
    bar = math.sqrt(d * math.log(1 / APP_D[1])) / (float(r["n"]) * APP_D[0])
    rows = study[np.isclose(study["x_star_norm"].astype(float), 100.0)]
    if rows.empty:
        return ""
    return (f"Theorem 1's α = ε̄^(2/3) = {bar ** (2 / 3):.3g} here (Õ's constant 1; "
            f"d = max(d_x, d_y) = {d:g}, d_y = n) already exceeds ‖∇Φ(x₀)‖ = "
            f"{rows['grad_x0'].iloc[0]:.3g} (‖X*‖_F = 100): x₀ meets its first-order bound")


def _data_share(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """The data's share of each Table 2 method's displacement at App. D's literal
    constants (study 'data', one value per method and seed), with the runs' Φ on the data
    and on zeros, App. D's arithmetic, where the σ sweep first descends and Theorem 1's α."""
    parts = [f"{label} {g['influence'].mean():.2g} (Φ(x_T)/Φ(x₀) {g['ratio'].mean():.4g}, "
             f"on zeros {g['ratio_zeros'].mean():.4g})" for label, g in runs.groupby("label")]
    context = [t for t in (_snr_bound(results), _first_descent(results),
                           _theorem1_alpha(results)) if t]
    return Sample.of(runs["influence"].to_numpy(float),
                     note="; ".join([f"data share by method: {', '.join(parts)}", *context]))


# -- premises ------------------------------------------------------------------------------

def _tuned_ranges(runs: pd.DataFrame, results: PaperResults) -> dict[str, tuple[float, float]]:
    """The algorithm params the tuning of ``runs`` varied, each with the range its grid
    searched (extensions included)."""
    ids = set(runs["run_id"]) if "run_id" in runs else set()
    ranges: dict[str, tuple[float, float]] = {}
    for group in (t for m in results.suites for t in m.get("tuning") or []
                  if ids & set(t.get("run_ids") or ())):
        for candidate in group.get("candidates") or []:
            for name, value in candidate["params"].items():
                low, high = ranges.get(name, (value, value))
                ranges[name] = (min(low, value), max(high, value))
    return ranges


def _constants(run: pd.Series) -> dict[str, Any]:
    """A run's algorithm and problem constants (its ``p_alg_*`` and ``p_prob_*`` columns)."""
    return {str(c): run[c] for c in run.index
            if str(c).startswith(("p_alg_", "p_prob_")) and not pd.isna(run[c])}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float | np.number) and isinstance(b, int | float | np.number):
        return bool(np.isclose(float(a), float(b)))
    return bool(a == b)


def constant_differences(judged: dict[str, Any], reference: dict[str, Any],
                         tuned: dict[str, tuple[float, float]]) -> list[str]:
    """Where a σ → 0 run's constants ``reference`` differ from the judged runs' ``judged``:
    a constant the judged runs hold fixed with another value, or one their tuning varied
    (``tuned``: name → searched range) outside the range searched ([] when they match)."""
    out = []
    for column, value in judged.items():
        name = column.removeprefix("p_alg_").removeprefix("p_prob_")
        ref = reference.get(column)
        if column.startswith("p_alg_") and name in tuned:
            low, high = tuned[name]
            if ref is None or not low <= float(ref) <= high:
                out.append(f"{name} {_show(ref)} outside the tuned {low:g}–{high:g}")
        elif ref is None or not _same(value, ref):
            out.append(f"{name} {_show(ref)} ≠ {_show(value)}")
    return out


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _reference(runs: pd.DataFrame, results: PaperResults, label: str
               ) -> tuple[pd.DataFrame, str]:
    """The clean σ → 0 runs of ``label`` at the constants of the setting's ``label`` runs:
    every constant they hold fixed equal (α, C, C_u, λ, K, η_H, …, the instance), each one
    their tuning varied inside the range it searched; with what differs where none does."""
    judged = _partner(runs, results, label, clean=False)
    table2 = results.role_runs("table2")
    refs = _clean(table2[table2["label"] == f"{label}_nonprivate"]) if len(table2) else table2
    if judged.empty or refs.empty:
        return refs.iloc[0:0], f"σ → 0 {label} reference not run"
    want, tuned = _constants(judged.iloc[0]), _tuned_ranges(judged, results)
    differences = {i: constant_differences(want, _constants(r), tuned)
                   for i, r in refs.iterrows()}
    matched = [i for i, d in differences.items() if not d]
    if matched:
        return refs.loc[matched], ""
    nearest = min(differences.values(), key=len)
    return refs.iloc[0:0], (f"no σ → 0 {label} run at the judged constants (the nearest: "
                            f"{', '.join(nearest)})")


def _progress(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """The σ → 0 references of DP-RGDA and of the setting's baseline at the judged runs'
    constants (:func:`_reference`) leave the saddle (mean Φ(x_T)/Φ(x₀) ≤ ``LEFT_SADDLE``);
    a reference at other constants fails the premise."""
    labels = list(dict.fromkeys([OURS, *(str(v) for v in runs["label"].unique())]))
    found, texts = [], []
    for label in labels:
        ref, missing = _reference(runs, results, label)
        if missing:
            return (None if missing.endswith("not run") else False), missing
        ratio = _ratio(ref, results)
        if not len(ratio) or not np.isfinite(ratio).any():
            return None, f"σ → 0 {label} reference has no trajectory"
        mean = float(np.nanmean(ratio))
        found.append(mean <= LEFT_SADDLE)
        texts.append(f"{label} {mean:.3g} ({len(ratio)} runs)")
    return all(found), (f"σ → 0 references at the judged constants, Φ(x_T)/Φ(x₀): "
                        f"{', '.join(texts)}; ≤ {LEFT_SADDLE:g} needed")


def _recorded_clipping(ours: pd.DataFrame) -> tuple[float, str] | None:
    """The worst clipped share the DP-RGDA runs recorded (``prem_clipped_fraction…``: the
    refresh clip, x- and y-partials pooled, and the increment clip ``_diff``)."""
    cols = [c for c in ours if str(c).startswith("prem_clipped_fraction")
            and ours[c].notna().any()]
    if not cols:
        return None
    parts = []
    for col in cols:
        suffix = str(col).removeprefix("prem_clipped_fraction")
        median = ours.get(f"prem_median_per_sample_norm{suffix}", pd.Series(dtype=float))
        bound = ours.get(f"prem_clip_bound{suffix}", pd.Series(dtype=float))
        parts.append(f"{'increment' if suffix == '_diff' else suffix[1:] or 'refresh'} clip: "
                     f"up to {ours[col].max():.0%} clipped (median norm {median.median():.3g} "
                     f"vs C = {bound.max():g})")
    return float(np.nanmax(ours[cols].to_numpy(float))), "; ".join(parts) + " (recorded)"


def _start_clipping(ours: pd.DataFrame, results: PaperResults) -> tuple[float, str] | None:
    """The clipped share of per-sample y- and x-partials at the start, apart (the instance
    study of the §5 instance at the runs' ‖X*‖_F, which measures App. D's C = 1 only)."""
    study = results.study("instance")
    if study.empty or ours.empty:
        return None
    if "p_alg_clip" in ours and not np.allclose(ours["p_alg_clip"].astype(float), CLIP):
        return None  # another C: the runs' own record speaks for it
    scale = float(ours["p_prob_x_star_norm"].iloc[0])
    rows = study[np.isclose(study["x_star_norm"].astype(float), scale)]
    if rows.empty:
        return None
    y, x = float(rows["clipped_y"].max()), float(rows["clipped_x"].max())
    return max(x, y), (f"at the start C = {CLIP:g} clips {y:.0%} of per-sample y-partials "
                       f"(median norm {rows['median_y'].median():.3g}) and {x:.0%} of x-partials "
                       f"(median {rows['median_x'].median():.3g}) (§5 instance study)")


def _clipping(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """The clip C is not what limits the method: the worst share clipped by the σ → 0
    DP-RGDA reference at the same constants (recorded) or at the start (instance study).
    The private runs' own record is not used: there the noise drives the iterates (and
    with them the per-sample partials) far out, an outcome of the privacy level, not of C."""
    ref, _ = _reference(runs, results, OURS)
    if ref.empty:  # no reference at these constants: the DP-RGDA runs themselves
        ref = _partner(runs, results, OURS)
    found = [f for f in (_recorded_clipping(ref), _start_clipping(ref, results)) if f]
    if not found:
        return None, "clipped fraction not recorded"
    share = max(f[0] for f in found)
    return share <= MILD_CLIP, "; ".join(f[1] for f in found) + f"; ≤ {MILD_CLIP:.0%} needed"


def _noise(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """DP-RGDA's per-release noise norm against the clipped signal (norm ≤ C)."""
    ours = _partner(runs, results, OURS)
    need = {"plan_std_refresh", "plan_std_increment", "p_prob_p", "p_prob_q", "p_prob_rank"}
    if ours.empty or not need <= set(ours) or ours["plan_std_refresh"].isna().all():
        return None, "noise std not recorded"
    r = ours.iloc[0]
    d_x = float((r["p_prob_p"] + r["p_prob_q"]) * r["p_prob_rank"])
    clip = float(r["p_alg_clip"]) if "p_alg_clip" in ours else CLIP
    norm = math.sqrt(d_x) * float(r["plan_std_refresh"])
    return norm <= SIGNAL_TO_NOISE * clip, (
        f"σ = {r['sigma']:.4g}: per-coordinate noise std {r['plan_std_refresh']:.3g} "
        f"(refresh) / {r['plan_std_increment']:.3g} (increment) against clipped signals of "
        f"norm ≤ C = {clip:g}; refresh noise norm √d_x·std = {norm:.3g} (d_x = {d_x:g}), "
        f"≤ {SIGNAL_TO_NOISE:g}·C needed")


def _binds(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """Theorem 1's bound binds: the measured ‖∇Φ(x_out)‖ is of the order of α = c_α ε̄^{2/3}."""
    if runs.empty or "p_alg_theory_alpha" not in runs or "final_grad_norm" not in runs:
        return None, "α not recorded"
    alpha = runs["p_alg_theory_alpha"].astype(float) * _eps_bar(runs) ** _declared_rate()
    share = runs["final_grad_norm"].astype(float) / alpha
    median = float(share.median())
    certified = (f"; {float((runs['diag_certificates'] > 0).mean()):.0%} of runs certified"
                 if "diag_certificates" in runs else "")
    return median >= BINDS, (f"‖∇Φ(x_out)‖/α median {median:.3g} (range {share.min():.3g}–"
                             f"{share.max():.3g}), ≥ {BINDS:g} needed{certified}")


def _horizon(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The steps taken (recorded, else planned) ≥ ⌈ε̄^{−4/3}⌉, Theorem 1's horizon (the
    proof's, with c_T = 1)."""
    column = "prem_steps_taken" if "prem_steps_taken" in runs and \
        runs["prem_steps_taken"].notna().all() else "steps"
    if runs.empty or column not in runs:
        return None, "T not recorded"
    taken = runs[column].astype(float)
    need = np.ceil(_eps_bar(runs) ** (-4 / 3))
    short = taken < need
    return not bool(short.any()), (
        f"T {'taken' if column != 'steps' else 'planned'} from {taken.min():g} to "
        f"{taken.max():g} vs T_thm = ⌈ε̄^(−4/3)⌉ from {need.min():g} to {need.max():g}: short "
        f"in {int(short.sum())}/{len(runs)} runs")


PROGRESS = Premise(
    "the σ → 0 reference leaves the saddle", _progress,
    "step sizes, α and the y-step at which noise-free DP-RGDA leaves the saddle within T "
    "(with App. D's literal settings ‖v_t‖ < α on every step, so it never takes a descent "
    "step; the y-step λ = 0.8 against curvature 1/n barely moves y)")
CLIPPING = Premise(
    "clipping inactive or mild", _clipping,
    "a clip C at or above the per-sample partials' size (≈ ‖X*‖_F/20 for the y-partials), or "
    "an X* scale at which C = 1 does not truncate them")
NOISE = Premise(  # reported in the Regime table, not a premise (TABLE2_PREMISES)
    "noise-to-signal", _noise,
    "a budget at which √d_x·σ·2C/|B| ≤ C, i.e. batches |B| ≥ 2σ√d_x (≈ 2.7e4 samples at App. "
    "D's σ, against n = 400), a larger ε or n, or the tight (PLD) calibration with larger n")
DATA = Premise(
    f"some Table 2 method learns from the data at this privacy level (data share ≥ "
    f"{DATA_SHARE:g})", lambda runs, results: _learns(runs, results),
    "a privacy level at which some method's iterates on the data and on zeros part: where "
    "none does, every method's end point is its noise's drift (claim D1 at App. D's level)")


def _app_d_level(runs: pd.DataFrame) -> pd.Series:
    """Runs at App. D's (ε, δ) = (2, 1e-6) under advanced composition."""
    return pd.Series(np.isclose(runs["epsilon"].astype(float), APP_D[0])
                     & np.isclose(runs["delta"].astype(float), APP_D[1]),
                     index=runs.index) & runs["calibration"].eq("advanced")


def _not_app_d(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The setting is not App. D's level, where claim D1 decides the question."""
    r = runs.iloc[0]
    if bool(_app_d_level(runs).all()):
        return False, ("(ε, δ) = (2, 1e-6) under advanced composition, App. D's level: "
                       "subsumed by claim D1 (no method learns from the data there)")
    return True, f"ε = {r['epsilon']:g} under {r['calibration']}"


SUBSUMED = Premise(
    "not App. D's level (claim D1 decides it)", _not_app_d,
    "compare where the baselines learn (table2_scale*_inregime.yaml)")


def _edges(runs: pd.DataFrame, results: PaperResults) -> dict[str, str] | None:
    """The tuned params of ``runs`` whose choice still sits on an edge of its grid (param →
    "lower" or "upper"); None when no tuning group made them."""
    ids = set(runs["run_id"]) if "run_id" in runs else set()
    groups = [t for m in results.suites for t in m.get("tuning") or []
              if ids & set(t.get("run_ids") or ())]
    return None if not groups else {k: side for t in groups
                                    for k, side in (t.get("edges") or {}).items()}


def _at_best_step(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """DP-RGDA and the baseline each at its best configuration, and at least one of them
    moving (|mean Φ(x_T)/Φ(x₀) − 1| > ``NO_MOVE``, measured): every tuned constant inside
    its grid, except an lr on the lower edge where the method does not move (a smaller step
    only brings x_T closer to x₀, so the edge is that method's optimum in the limit, and a
    comparison with a method that moves is decided by the mover's margin). Two methods that
    both stay at x₀ (App. D's level, wherever their tuned lr fell) are compared on noise:
    out of regime; so is any other edge (the optimum may lie past it)."""
    parts = {OURS: _partner(runs, results, OURS), "baseline": _clean(runs)}
    texts, moving = [], 0
    for name, part in parts.items():
        edges = _edges(part, results)
        ratio = _ratio(part, results)
        if edges is None or not len(ratio):
            return None, f"no tuned {name} runs"
        mean = float(np.nanmean(ratio))
        moves = abs(mean - 1) > NO_MOVE
        moving += moves
        where = ", ".join(f"{k} on the {side} edge" for k, side in sorted(edges.items()))
        texts.append(f"{name}: {where or 'every tuned constant inside its grid'}, mean "
                     f"Φ(x_T)/Φ(x₀) {mean:.4g}")
        if any(moves or (k, side) != ("lr", "lower") for k, side in edges.items()):
            return False, texts[-1] + " (its optimum may lie past the edge)"
    if not moving:
        return False, "; ".join(texts) + f": neither moves (within {NO_MOVE:.0%} of x₀)"
    return True, "; ".join(texts)


TUNED = Premise(
    "each method at its best step, one of them moving (DP-RGDA and the baseline)",
    _at_best_step,
    "extend the grid past the chosen edge (tuning: extend: N); both on the lower lr edge "
    "after every extension means no private method moves at this privacy level: compare "
    "them where they do (table2_scale100_inregime.yaml)")
# The noise-to-signal ratio is not a premise: App. D's own calibration sets it (≈ 133 for
# DP-RGDA), and the runs use that calibration, so it is the paper's regime (shown in the
# Regime table); a claim that fails there is contradicted, not out of regime.
TABLE2_PREMISES = (SUBSUMED, PROGRESS, CLIPPING, DATA)
COMPARISON_PREMISES = (*TABLE2_PREMISES, TUNED)  # C1–C3: each method at its best step


# -- claims --------------------------------------------------------------------------------

def _table2_runs(labels: tuple[str, ...]) -> Runs:
    return Runs(("table2",), {"label": list(labels), "calibration": list(CALIBRATIONS)},
                by=("p_prob_x_star_norm", "epsilon", "calibration", "label"))


def _reference_control(label: str, scale: float) -> Control:
    """The σ → 0 runs of ``label`` at ``scale``, one outcome per clip C (the constants of
    each judged level)."""
    return Control(f"σ → 0 {label}, ‖X*‖_F = {scale:g}",
                   Runs(("table2",), {"label": f"{label}_nonprivate",
                                      "p_prob_x_star_norm": scale}, by=("p_alg_clip",)),
                   f"leaves the saddle: Φ(x_T)/Φ(x₀) < {LEFT_SADDLE:g}", LEFT,
                   AtMost(LEFT_SADDLE, "mean Φ(x_T)/Φ(x₀)"))


MATRIX_SENSING = PaperSetting(
    "§5.1's synthetic matrix sensing as NC-SC minimax: p = q = 20, rank r = 3, n = 400, "
    "A_i with N(0, 1/(pq)) entries, measurement noise 0.01, U₀, V₀ ~ N(0, 0.1²), y₀ = 0 "
    "(d_x = 120, d_y = 400); the rescaling of X* ('Gaussian factors (followed by a "
    "rescaling)') is not stated, so ‖X*‖_F = 20 and 100 both run",
    problems=("matrix_sensing",))

LEVEL = ("; decided at (128, 1e-6) under PLD, the smallest ε tried at which the baselines "
         "move (App. D's level is claim D1's)")

CLAIMS = (
    Claim("D1", "Under App. D's mechanism Table 2 measures optimisation on the data: at "
          "App. D's literal constants the data move each Table 2 method's iterates by at "
          f"least {DATA_SHARE:g} of their displacement, max_t ‖x_t − x'_t‖ / max_t ‖x_t − "
          "x₀‖ with x' trained on zeros under the same noise (mean over methods and seeds)",
          "Table 2", Runs(study="data", where={"variant": LITERAL}, by=("x_star_norm",)),
          Statistic("the data's share of each Table 2 method's displacement (per method "
                    "and seed)", lambda runs, results: _data_share(runs, results)),
          AtLeast(DATA_SHARE, "mean data share"), kind="paper",
          where="App. D (per-sample clip C = 1, noise for sensitivity 2C/B, σ by advanced "
                "composition over each method's oracle calls at (2, 1e-6); T = 400, K = 5, "
                "q = 10, b₁ = 200, b₂ = 50, its steps) and §5.2, which reads Table 2 as "
                "progress ('DP-RGDA achieves Φ(x_399) ≈ 0.912')",
          headline=True, setting=MATRIX_SENSING),
    Claim("C1", "At the same privacy level DP-RGDA ends at a lower Φ than each minimisation "
          "DP-SOSP baseline (Sto-SPIDER, Ada-DP-SPIDER; Table 2 at (2, 1e-6): 0.91 vs 13.70 "
          "and 8.08)" + LEVEL, "Table 2",
          _table2_runs(SPIDERS), _versus("loss"),
          AtMost(0.0, "mean paired difference of Φ(x_T)"), COMPARISON_PREMISES,
          include_diverged=True, kind="paper",
          where="§5.2, 'Comparison to minimization DP-SOSP baselines' ('both baselines are "
                "substantially worse than DP-RGDA under the same global privacy budget'), "
                "Table 2's Φ(x_399) column",
          headline=True, setting=MATRIX_SENSING),
    Claim("C2", "DP-RGDA is comparable to PrivateDiff, slightly worse (Table 2: Φ 0.91 vs "
          f"0.65, ratio 1.39), restated on progress: DP-RGDA's 1 − Φ(x_T)/Φ(x₀) is at least "
          f"1/{SLIGHTLY:g} of PrivateDiff's, so 'comparable' holds only where both move" +
          LEVEL,
          "Table 2", _table2_runs((PRIVATE_DIFF,)),
          Statistic(f"progress 1 − Φ(x_T)/Φ(x₀), DP-RGDA − PrivateDiff/{SLIGHTLY:g} (paired "
                    "by seed)", _progress_versus),
          AtLeast(0.0, f"mean paired difference of progress (DP-RGDA − PrivateDiff/"
                       f"{SLIGHTLY:g})"),
          COMPARISON_PREMISES, include_diverged=True, kind="paper",
          where="§5.2, 'Comparison to a first-order minimax DP baseline' ('PrivateDiff "
                "achieves a slightly smaller final objective and gradient norm in this "
                "particular run'), Table 2",
          setting=MATRIX_SENSING),
    Claim("C3", "DP-RGDA ends with a λ_min closer to 0 (less negative) than each SPIDER "
          "baseline at the same privacy level (Table 2: −0.049 vs −0.219 and −0.144)" + LEVEL,
          "Table 2", _table2_runs(SPIDERS), _versus("lambda_min"),
          AtLeast(0.0, "mean paired difference of λ_min"), COMPARISON_PREMISES,
          include_diverged=True, kind="paper",
          where="§5.2 ('their curvature estimates are more negative (λ_min ≈ −0.22 and "
                "−0.14)'), Table 2's λ_min(∇²Φ(x_399)) column",
          setting=MATRIX_SENSING),
    Claim("P1", f"DP-RGDA leaves the saddle region within T = 400: Φ(x_T)/Φ(x₀) < "
          f"{LEFT_SADDLE:g}, as the published curves imply (0.91 from ≈ 13.2)" + LEVEL,
          "Figure 1",
          Runs(("table2",), {"label": OURS, "calibration": list(CALIBRATIONS)},
               by=("p_prob_x_star_norm", "epsilon", "calibration")),
          LEFT, AtMost(LEFT_SADDLE, "mean Φ(x_T)/Φ(x₀)"), TABLE2_PREMISES,
          tuple(_reference_control(label, scale) for label in (OURS, PRIVATE_DIFF)
                for scale in (20.0, 100.0)), include_diverged=True, kind="paper",
          where="Figure 1(a) (trajectories of Φ(x_t), t = 0..399) and §5.2 ('DP-RGDA "
                "achieves Φ(x_399) ≈ 0.912'); the images are not in the text, Φ(x₀) is "
                "inferred from the instance",
          setting=MATRIX_SENSING),
    Claim("A1", "every private run at App. D's level is charged as App. D says: its realised "
          "ledger spends at most (2, 1e-6) under advanced composition, and the SPIDER "
          "baselines (whose ledgers compose per pass over disjoint batches) run at least "
          "App. D's σ for their T oracle calls",
          "App. D (privacy)",
          Runs(("table2", "table2_literal", "table2_untuned"),
               {"label": list(PRIVATE), "calibration": "advanced"}, by=("label",)),
          Statistic("charged per oracle call as App. D says", _charged_as_app_d),
          Always("ε (advanced) ≤ 2 and σ ≥ App. D's per-call σ"),
          include_diverged=True,  # a diverged run's ledger is as real as any other
          kind="implementation",
          where="App. D's calibration: 'allocate per-query noise according to the total "
                "number of oracle calls made by each method (using advanced composition in "
                "the code)' at (2, 1e-6)"),
    Claim("R1", "‖∇Φ(x_out)‖ = O(ε̄^{2/3}), ε̄ = √(d log(1/δ))/(nε), for DP RGDA (ERM): an "
          "upper bound, so the log-log slope in ε̄ is at most 2/3", "Theorem 1",
          Runs(("rate",), {"label": OURS}),
          Statistic("best-iterate ‖∇Φ(x_t)‖ by ε̄ (n fixed)", _by_eps_bar),
          SlopeAtMost(2 / 3, axis="ε̄"),
          (at_most("clipping inactive (the theory has no clipping)", "prem_clipped_fraction",
                   0.0, "a clip C at or above the largest per-sample partial",
                   "share of per-sample partials clipped"),
           Premise("the bound binds", _binds,
                   "runs whose output sits at the scale α the theorem sets (a larger c_α, or "
                   "smaller ε̄ so that the privacy term dominates the optimisation floor)"),
           Premise("horizon T ≥ T_thm", _horizon, "the ERM schedule's T = ⌈ε̄^(−4/3)⌉")),
          kind="paper",
          where="Theorem 1 (§4.2): ‖∇Φ_S(x_out)‖ ≤ α with α = Õ(ε̄^{2/3}) = "
                "Õ((√(d log(1/δ))/(nε))^{2/3}); Table 1's ERM row, Remark 1",
          headline=True),
    Claim("S1", "the origin is a strict saddle of the §5 instance: ∇Φ(0) = 0 and the "
          "eigenvalues of ∇²Φ(0) are ±σ_j((1/n)Σ b_i A_i), λ_min < 0 with multiplicity r "
          "(exact HVPs against the SVD, at every X* scale)", "§5 (instance)",
          Runs(study="instance", by=("scale",)), Statistic("spectrum as predicted", _saddle_ok),
          Always("∇²Φ(0) spectrum = ±σ_j(M₀), multiplicity r"), kind="design",
          where="§5.1's instance (our derivation, notes §5.1): the strict saddle next to the "
                "N(0, 0.1²) start that Figure 1(c)'s λ_min diagnostic probes; the paper does "
                "not state it"),
)


def _learns(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """Some Table 2 method's iterates depend on the data at the setting's scale and privacy
    level (study 'data', the judged suites' levels: share ≥ ``DATA_SHARE``)."""
    study = results.study("data")
    if study.empty or runs.empty or "variant" not in study:
        return None, "data-dependence study not run"
    r = runs.iloc[0]
    rows = study[study["variant"].eq(JUDGED)
                 & np.isclose(study["x_star_norm"].astype(float), float(r["p_prob_x_star_norm"]))
                 & np.isclose(study["epsilon"].astype(float), float(r["epsilon"]))
                 & study["calibration"].eq(r["calibration"])]
    if rows.empty:
        return None, "no data-dependence row at this scale and level"
    text = ", ".join(f"{q['label']} {q['influence']:.2g}" for _, q in rows.iterrows())
    return bool((rows["influence"] >= DATA_SHARE).any()), (
        f"data share of the first {INFLUENCE_STEPS} iterates' displacement (on the data vs on "
        f"zeros, same noise): {text}; ≥ {DATA_SHARE:g} for some method needed")


# -- Table 2 ----------------------------------------------------------------------------------

def _final_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (scale, calibration, label) over clean runs: mean and s.e. of each metric at x_T
    (``last_``) and at the output (``final_``), the runs, the diverged runs (excluded) and
    the early stops (with the earliest last step)."""
    keys = ["p_prob_x_star_norm", "calibration", "label"]
    cols = [f"{w}_{m}" for w in ("last", "final") for m, _ in METRICS]
    clean = _clean(runs).groupby(keys)
    diverged = runs[runs["diverged"].astype(bool)].groupby(keys).size() \
        if "diverged" in runs else pd.Series(dtype=int)
    early = runs[runs["stopped_early"].astype(bool)].groupby(keys)["last_step"]
    everything = runs.groupby(keys)[["sigma", "epsilon", "eps_advanced", "eps_pld",
                                     "steps"]].first()
    return pd.concat([everything, clean[cols].mean(), clean[cols].sem().add_suffix("_se"),
                      clean.size().rename("runs"), diverged.rename("diverged"),
                      early.size().rename("early"), early.min().rename("first_stop")],
                     axis=1).fillna({"runs": 0, "diverged": 0, "early": 0})


def _table2_row(key: tuple[Any, ...], r: pd.Series) -> list[str]:
    def cell(where: str, metric: str) -> str:
        return format_mean_se(r[f"{where}_{metric}"], r[f"{where}_{metric}_se"]) \
            if r["runs"] else "diverged"

    stops = (f"{r['early']:g} (from t = {r['first_stop']:g})" if r["early"] else "–")
    return [str(key[2]), f"{r['sigma']:.4g}", *(cell("last", m) for m, _ in METRICS),
            cell("final", "loss"), cell("final", "grad_norm"),
            stops, f"{r['eps_advanced']:.3g}", f"{r['eps_pld']:.3g}", f"{r['runs']:g}",
            f"{r['diverged']:g}"]


def _table2(results: PaperResults, role: str = "table2") -> list[dict[str, Any]]:
    runs = last_iterates(results.role_runs(role), results)
    if runs.empty or "last_step" not in runs:
        return []
    stats = _final_table(runs[runs["status"].isin(["done", "diverged"])])
    variant = {"table2": "each method at its tuned lr, the other constants where the σ → 0 "
                         "references leave the saddle (App. D's privacy level)",
               "inregime": "our in-regime level, where the baselines' tuned steps move "
                           "(C1–C3 are judged here; App. D's (2, 1e-6) under advanced "
                           "composition is the labelled literal variant)",
               "table2_untuned": "at the σ → 0 references' own steps, untuned (labelled "
                                 "variant)",
               "table2_literal": "App. D's literal constants (labelled variant)"}
    tables = []
    for (scale, cal), part in stats.groupby(level=[0, 1]):
        eps = part["epsilon"].astype(float)
        private = eps[np.isfinite(eps)]
        level = f"ε = {private.max():g}" if len(private) else "σ → 0"
        which = variant["inregime" if role == "table2" and len(private) and
                        private.max() > 2 else role]
        tables.append({
            "provenance": results.provenance(runs),
            "title": f"Table 2 regenerated, ‖X*‖_F = {scale:g}, {level}, {cal} calibration, "
                     f"{which}",
            "note": "Every method at x_T (x_399 in the paper's count, as Table 2 reports), and "
                    "at its output (DP-RGDA: its first certified anchor, else x_T), mean ± "
                    "s.e. over the seeds that did not diverge. Stopped early: runs whose last "
                    "iterate precedes T (the SPIDERs' single-use data ran out): their x_T "
                    "column is that last iterate, flagged here. σ: the noise multiplier (std "
                    "σ·2C/|B| per coordinate); labels ending in _nonprivate run with σ = 1e-9. "
                    "ε spent by advanced composition (the paper's rule) and by PLD. "
                    f"Diverged: Φ grew past {PAPER.divergence_factor:g}× Φ(x₀) or went "
                    "non-finite (no statistic).",
            "columns": ["method", "σ", *(f"{name.replace('x_T', 'x_T')}" for _, name in METRICS),
                        "Φ(output)", "‖∇Φ(output)‖", "stopped early", "ε adv. comp.",
                        "ε PLD", "runs", "diverged"],
            "rows": [_table2_row(key, r) for key, r in part.iterrows()
                     if isinstance(key, tuple)]})
    return tables


def _calibration(results: PaperResults) -> dict[str, Any] | None:
    runs = _clean(results.role_runs("table2"))
    if runs.empty:
        return None
    runs = runs[runs["epsilon"].apply(math.isfinite)]
    rows = []
    for (label, _, cal), part in runs.groupby(["label", "epsilon", "calibration"]):
        r = part.iloc[0]
        std = (f"{r['plan_std_refresh']:.3g} / {r['plan_std_increment']:.3g}"
               if pd.notna(r.get("plan_std_refresh")) else "–")
        alg3 = (f"{r['plan_std_alg3_refresh']:.3g} / {r['plan_std_alg3_increment']:.3g}"
                if pd.notna(r.get("plan_std_alg3_refresh")) else "–")
        rows.append([label, f"{r['epsilon']:g}", cal, f"{r['sigma']:.4g}", std, alg3,
                     f"{r['eps_advanced']:.3g}", f"{r['eps_pld']:.3g}"])
    return {"title": "The calibrations behind Table 2 (δ = 1e-6)",
            "provenance": results.provenance(runs),
            "note": "σ: noise multiplier of each Gaussian release (std σ·2C/|B| per "
                    "coordinate). For DP-RGDA the per-coordinate std of refresh / increment "
                    "noise, and beside it Algorithm 3's own formulas (lines 1–2, universal "
                    "constant c = 1), which are far smaller than any calibration that meets "
                    "the budget. ε spent under each accountant: an advanced-composition "
                    "calibration spends a small fraction of the budget by PLD, i.e. it adds "
                    "far more noise than (2, 1e-6) needs.",
            "columns": ["method", "ε", "calibration", "σ", "std refresh / increment",
                        "Alg. 3 formula std", "ε adv. comp.", "ε PLD"], "rows": rows}


def _scale_table(results: PaperResults) -> dict[str, Any] | None:
    """Φ, ‖∇Φ‖ at x₀ and the spectrum of ∇²Φ(0) per X* scale, from the instance study."""
    study = results.study("instance")
    if study.empty:
        return None
    first = study[study["data_seed"] == study["data_seed"].min()]
    rows = [["raw factors" if r["scale"] == "raw" else r["scale"], f"{r['x_star_fro']:.3g}",
             f"{r['phi_x0']:.4g}", f"{r['grad_x0']:.3g}", f"{r['lambda_min']:.4g} "
             f"(×{r['multiplicity']:g})", f"{r['lambda_max']:.4g}",
             f"{r['clipped_y']:.0%} (median {r['median_y']:.3g})",
             f"{r['clipped_x']:.0%} (median {r['median_x']:.3g})"] for _, r in first.iterrows()]
    return {"title": "The X* scale (notes §5.1)",
            "provenance": Provenance(results.scale, computed="study 'instance' (run by "
                                     "reproduce): the instance at data seed 0, exact HVPs, "
                                     "no training"),
            "note": "Φ(x₀) ≈ ‖X*‖²_F/(2pq) sets every absolute number of Table 2. ‖X*‖_F = 100 "
                    "was chosen because Φ(x₀) and λ_min(∇²Φ(0)) there match the published "
                    "Sto-SPIDER row (13.70, −0.219): those two entries are calibrated, not "
                    "reproduced. The default 20 gives unit-variance measurements and was "
                    "chosen before any run. The last columns: the share of per-sample partials "
                    f"that the clip C = {CLIP:g} truncates at the start (y-partials at (x₀, "
                    "y₀ = 0), x-partials at (x₀, y*(x₀))).",
            "columns": ["‖X*‖_F", "‖X*‖_F (realised)", "Φ(x₀)", "‖∇Φ(x₀)‖",
                        "λ_min(∇²Φ(0))", "λ_max(∇²Φ(0))", "y-partials clipped",
                        "x-partials clipped"], "rows": rows}


# -- Figure 1 ---------------------------------------------------------------------------------

def _figure1(results: PaperResults, out: Path) -> list[Figure]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = []
    for suite in results.role_suites("table2"):
        curves = results.curves(suite)
        clean = _clean(results.suite_runs(suite))
        if curves.empty:
            continue
        curves = curves[curves["run_id"].isin(clean["run_id"])]
        bases = curves["label"].astype(str).str.removesuffix("_nonprivate")
        colour = colours(bases, dict(zip(bases, curves["algorithm"], strict=True)))
        for (scale, cal), part in curves.groupby(["p_prob_x_star_norm", "calibration"]):
            fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
            for label, grp in part.groupby("label"):
                base = str(label).removesuffix("_nonprivate")
                mean = grp.groupby("step")[[m for m, _ in METRICS]].mean()
                for ax, (metric, name) in zip(axes, METRICS, strict=True):
                    ax.plot(mean.index, mean[metric], color=colour[base], label=label,
                            ls="--" if base != label else "-")
                    ax.set_title(name.replace("x_T", "x_t"), fontsize=9)
                    ax.set_xlabel("t")
            axes[0].set_yscale("log")
            axes[1].set_yscale("log")
            axes[0].legend(fontsize=6)
            name = save_figure(fig, out, f"figure1_scale{scale:g}_{cal}", dpi=120)
            figures.append(Figure(name, f"Figure 1 regenerated (‖X*‖_F = {scale:g}, "
                                  f"calibration {cal}): (a) Φ(x_t), (b) ‖∇Φ(x_t)‖ (log), (c) "
                                  "λ_min(∇²Φ(x_t)), mean over the seeds that did not diverge; "
                                  "dashed: the σ → 0 references with the same step sizes (in "
                                  "the pld panels).",
                                  results.provenance(clean[clean["run_id"].isin(
                                      part["run_id"])])))
    return figures


# -- Table 1 and the rate check --------------------------------------------------------------

def _declared_rate() -> float:
    """The exponent of ε̄ that DP RGDA declares (Theorem 1, ERM)."""
    rate = DPRGDA.rate
    if rate is None or rate.privacy_exponent is None:
        raise RuntimeError("dp_rgda declares no privacy exponent")
    return rate.privacy_exponent


def _rate_points(results: PaperResults) -> pd.DataFrame:
    done = _clean(results.role_runs("rate"))
    return done.assign(eps_bar=_eps_bar(done)) if len(done) else done


MIN_R2 = 0.5  # a scaling fit is shown only where log ε̄ explains half of log ‖∇Φ‖ (issue 37)


def _r_squared(pts: pd.DataFrame) -> float:
    """R² of the least-squares line of log ‖∇Φ(x_out)‖ on log ε̄."""
    x, y = np.log(pts["eps_bar"].astype(float)), np.log(pts["final_grad_norm"].astype(float))
    return float(np.corrcoef(x, y)[0, 1] ** 2)


def _rate_table(results: PaperResults) -> dict[str, Any] | None:
    pts = _rate_points(results)
    if len(pts) < 3:
        return None
    declared = _declared_rate()
    rows = [[f"{n:g}", f"{e:g}", f"{g['eps_bar'].iloc[0]:.3g}", f"{g['steps'].iloc[0]:g}",
             f"{g['p_alg_theory_alpha'].iloc[0] * g['eps_bar'].iloc[0] ** declared:.3g}",
             format_mean_se(*mean_se(g["final_grad_norm"])),
             f"{g['final_lambda_min'].mean():.3g}",
             f"{(g['diag_certificates'] > 0).mean():.2f}"]
            for (n, e), g in pts.groupby(["n", "epsilon"])]
    slope, lo, hi = fit_slope(pts["eps_bar"].to_numpy(), pts["final_grad_norm"].to_numpy())
    r2 = _r_squared(pts)
    fit = (f"Fitted log-log slope {slope:.3f} (95 % bootstrap CI {lo:.3f} to {hi:.3f}, R² = "
           f"{r2:.2f})" if r2 >= MIN_R2 else f"No fit: R² = {r2:.2f} < {MIN_R2:g}, ε̄ explains "
           "too little of ‖∇Φ(x_out)‖ for a slope to mean anything")
    return {"title": "Rate check: DP RGDA's ERM rate on the NC-SC double well",
            "provenance": results.provenance(pts),
            "note": f"Final ‖∇Φ(x_out)‖ per (n, ε), mean ± s.e.; α = c_α ε̄^(2/3) is the "
                    f"descent/escape threshold; 'certified': share of runs whose output is a "
                    f"certified anchor. {fit}; Table 1's upper bound is {declared:.3f} "
                    "(claim R1 tests the best-iterate slope one-sided).",
            "columns": ["n", "ε", "ε̄", "T", "α", "‖∇Φ(x_out)‖", "λ_min", "certified"],
            "rows": rows}


def _rate_figure(results: PaperResults, out: Path) -> list[Figure]:
    import matplotlib.pyplot as plt

    pts = _rate_points(results)
    if len(pts) < 3:
        return []
    slope, _, _ = fit_slope(pts["eps_bar"].to_numpy(), pts["final_grad_norm"].to_numpy())
    r2 = _r_squared(pts)
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for n, part in pts.groupby("n"):
        ax.scatter(part["eps_bar"], part["final_grad_norm"], s=12, label=f"n = {n:g}")
    grid = np.geomspace(pts["eps_bar"].min(), pts["eps_bar"].max(), 20)
    x, y = np.log(pts["eps_bar"]), np.log(pts["final_grad_norm"])
    if r2 >= MIN_R2:
        ax.plot(grid, np.exp(np.polyval(np.polyfit(x, y, 1), np.log(grid))), "k-",
                label=f"fit, slope {slope:.2f} (R² {r2:.2f})")
    declared = _declared_rate()
    anchor = float(np.exp(y.mean() - declared * x.mean()))
    ax.plot(grid, anchor * grid**declared, "k--", label="slope 2/3 (upper bound)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε̄ = √(d log(1/δ))/(nε)")
    ax.set_ylabel("‖∇Φ(x_out)‖")
    ax.legend(fontsize=7)
    stem = results.role_suites("rate")[0] if results.role_suites("rate") else "rate_check"
    return [Figure(save_figure(fig, out, stem), "Rate check: final gradient norm of DP "
                   "RGDA's output against ε̄ (log-log), the least-squares fit where R² ≥ "
                   f"{MIN_R2:g} (here {r2:.2f}"
                   + ("" if r2 >= MIN_R2 else ": no fit drawn") + ") and the 2/3 slope of "
                   "Table 1.", results.provenance(pts))]


# -- the page ----------------------------------------------------------------------------------

def _data_table(results: PaperResults) -> dict[str, Any] | None:
    study = results.study("data")
    if study.empty or "variant" not in study:
        return None
    rows = []
    for (variant, scale, eps, cal, label), part in study.groupby(
            ["variant", "x_star_norm", "epsilon", "calibration", "label"], sort=False):
        share = part["influence"].astype(float)
        rows.append([variant, label, f"{scale:g}", f"{eps:g} ({cal})", f"{part['steps'].max():g}",
                     f"{len(part)}", f"{share.mean():.2g}" + (f" ({share.min():.2g}–"
                                                              f"{share.max():.2g})"
                                                              if len(part) > 1 else ""),
                     f"{part['ratio'].mean():.4g}", f"{part['ratio_zeros'].mean():.4g}",
                     "yes" if share.mean() >= DATA_SHARE else "NO"])
    return {"title": "Does the data move the iterates? (study 'data')",
            "provenance": Provenance(results.scale, computed="study 'data' (run by "
                                     "reproduce)"),
            "note": "The data's share of the displacement, max_t ‖x_t − x'_t‖ / max_t ‖x_t − "
                    "x₀‖, x' run on the same instance with its data replaced by zeros under "
                    f"the same seeds (same noise); 'learns' needs ≥ {DATA_SHARE:g}. '"
                    f"{LITERAL}': App. D's literal constants over the whole run, every seed "
                    f"(claim D1). '{JUDGED}': each judged suite's level and constants (the "
                    f"middle of its tuning grid) over the first {INFLUENCE_STEPS} iterates, "
                    "seed 0 (premise of C1–C3, P1). Φ(x_T)/Φ(x₀) on the data and on zeros at "
                    "the last iterate of the check.",
            "columns": ["variant", "method", "‖X*‖_F", "ε", "steps", "seeds", "data share",
                        "Φ(x_T)/Φ(x₀)", "on zeros", "learns"], "rows": rows}


def _sigma_figure(results: PaperResults, out: Path) -> list[Figure]:
    import matplotlib.pyplot as plt

    study = results.study("sigma")
    if study.empty:
        return []
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for (label, part), colour in zip(study.groupby("label"), ("C0", "C1", "C2", "C3"),
                                     strict=False):
        mean = part.groupby("sigma")["ratio"].mean()
        ax.plot(mean.index, mean.to_numpy(), "o-", color=colour, label=label)
        for cal, ls in (("advanced", "--"), ("pld", ":")):
            ax.axvline(float(part[f"sigma_{cal}"].iloc[0]), color=colour, ls=ls, lw=0.8)
    ax.axhline(LEFT_SADDLE, color="grey", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("noise multiplier σ")
    ax.set_ylabel("Φ(x_T)/Φ(x₀)")
    ax.legend(fontsize=7)
    return [Figure(save_figure(fig, out, "xu2026_sigma_sweep"), "Where progress stops: "
                   "Φ(x_T)/Φ(x₀) after T = 400 against the noise multiplier σ (log-log) at the "
                   "Table 2 constants of ‖X*‖_F = 100, mean over the study's seeds; dashed: "
                   "the σ App. D's advanced composition over each method's oracle calls gives "
                   "at (2, 1e-6), dotted: the PLD one; grey: Φ(x_T)/Φ(x₀) = "
                   f"{LEFT_SADDLE:g} (left the saddle below).",
                   Provenance(results.scale, computed="study 'sigma' (run by reproduce)"))]


def _why_table(results: PaperResults) -> dict[str, Any] | None:
    """Why our Table 2 differs from the paper's: each cause with its number."""
    runs = last_iterates(_clean(results.role_runs("table2", "table2_literal")), results)
    if runs.empty or "last_loss" not in runs:
        return None
    ratio = runs["last_loss"] / runs["phi0"]

    def mean_ratio(role_literal: bool, label: str) -> str:
        lit = runs["suite"].str.contains("literal")
        sel = ratio[(lit == role_literal) & (runs["label"] == label)]
        return f"{sel.mean():.3g}" if len(sel) else "not run"

    rows = [["App. D's literal constants cannot optimise even without noise",
             f"σ → 0 DP-RGDA Φ(x_T)/Φ(x₀) = {mean_ratio(True, 'dp_rgda_nonprivate')} at App. "
             f"D's constants vs {mean_ratio(False, 'dp_rgda_nonprivate')} at ours (λ·μ = "
             "0.002: y cannot track y*; C = 1 truncates y-partials of median ≈ 5)"],
            ["App. D's calibration leaves only noise",
             f"noise-to-signal {_noise_to_signal(results)} (Regime table); private DP-RGDA "
             f"Φ(x_T)/Φ(x₀) = {mean_ratio(False, 'dp_rgda')} while its σ → 0 reference reaches "
             f"{mean_ratio(False, 'dp_rgda_nonprivate')}; the σ sweep shows where progress "
             "stops"]]
    sigma = results.study("sigma")
    if not sigma.empty:
        ours = sigma[sigma["label"] == OURS]
        means = ours.groupby("sigma")["ratio"].mean()
        left = means[means <= LEFT_SADDLE]
        rows.append(["Where DP-RGDA stops leaving the saddle",
                     f"largest σ with Φ(x_T)/Φ(x₀) ≤ {LEFT_SADDLE:g}: "
                     f"{left.index.max() if len(left) else 'none'}; App. D's σ = "
                     f"{ours['sigma_advanced'].iloc[0]:.4g}, PLD's "
                     f"{ours['sigma_pld'].iloc[0]:.3g}"])
    rows.append(["App. D's privacy level moves no private method; ours does",
                 _in_regime_text(runs, ratio)])
    data = results.study("data")
    if not data.empty and "variant" in data:
        literal = data[data["variant"] == LITERAL].groupby("label")["influence"].mean()
        rows.append(["Under App. D's mechanism the iterates ignore the data (claim D1)",
                     "data share of the displacement at App. D's literal constants: " +
                     ", ".join(f"{k} {v:.2g}" for k, v in literal.items())])
    early = runs[runs["stopped_early"].astype(bool)]
    labels = ", ".join(sorted(set(early["label"]))) or "none"
    rows.append(["Not every method reaches x_399",
                 f"{len(early)}/{len(runs)} runs stop early ({labels}; "
                 f"earliest t = {early['last_step'].min() if len(early) else '–'}): flagged, "
                 "reported at their last iterate"])
    rows.append(["One published number was used to set the scale",
                 "‖X*‖_F = 100 matches Sto-SPIDER's Φ and λ_min at the saddle: those two "
                 "entries are calibrated, never reproduced"])
    return {"title": "Why our results differ from the paper's Table 2",
            "provenance": results.provenance(runs),
            "note": "The causes, each with the number that measures it.",
            "columns": ["cause", "measured"], "rows": rows}


def _in_regime_text(runs: pd.DataFrame, ratio: pd.Series) -> str:
    """Mean Φ(x_T)/Φ(x₀) per private method at App. D's level and at the in-regime one."""
    eps = runs["epsilon"].astype(float)
    private = np.isfinite(eps) & ~runs["suite"].str.contains("literal|untuned")
    parts = []
    for level, mask in (("App. D (2, advanced)", private & (eps <= 2)),
                        ("in regime", private & (eps > 2))):
        means = ratio[mask].groupby(runs.loc[mask, "label"]).mean()
        if len(means):
            parts.append(f"{level}: " + ", ".join(f"{k} {v:.3g}" for k, v in means.items()))
    return ("mean Φ(x_T)/Φ(x₀) at each method's tuned step, " + "; ".join(parts) +
            " (the in-regime level: table2_scale100_inregime.yaml, ε = 128 under PLD, the "
            "smallest ε tried at which every baseline moves; claims C1–C3 are judged there)")


def sections(results: PaperResults, out: Path) -> PaperSections:
    page = PaperSections(settings=settings(results))
    page.tables = [t for t in (_why_table(results), rates_table(KEY), _scale_table(results),
                               *_table2(results), *_table2(results, "table2_untuned"),
                               *_table2(results, "table2_literal"),
                               _data_table(results), _calibration(results),
                               _rate_table(results)) if t]
    if not results.runs.empty:
        page.figures = [*_figure1(results, out), *_sigma_figure(results, out),
                        *_rate_figure(results, out)]
    page.deviations = deviations([
        ("dp_rgda", "algorithms.dp_rgda", "Resolutions of the paper's ambiguities"),
        ("dp_sgda", "algorithms.dp_sgda", "Deviations"),
        ("private_diff", "algorithms.private_diff", "Deviations"),
        ("ada_dp_spider", "algorithms.ada_dp_spider", "Deviations"),
        ("dp_spider_at", "algorithms.dp_spider_at", "Deviations")])
    return page


RESOLUTIONS = (
    ("§5.1", "the rescaling of X* is not stated",
     "‖X*‖_F is a parameter; both 20 (unit-variance measurements, chosen a priori) and 100 "
     "(Φ and λ_min at the saddle match the published Sto-SPIDER row, whose Φ and λ_min are "
     "therefore calibrated, not reproduced) run; Table 2 is compared at 100"),
    ("App. D", "(η_x, η_y) for DP-RGDA; α, η_H, r, t_thres, D̄ not given",
     "η_x = η (normalised step), η_y = λ; α = 0.3, η_H = 0.2, r = 0.05, t_thres = 20, "
     "D̄ = 0.5²/20² (notes §2.4)"),
    ("App. D", "advanced composition 'in the code', split not given",
     "δ' = δ/2, δ₀ = δ/(2k) over the k joint queries (the x- and y-releases on one batch "
     "are one Gaussian mechanism of multiplier σ/√2: 2,000 queries for DP-RGDA with A3, "
     "2,040 literally), ε₀ of each from the classical Gaussian bound, or the analytic one "
     "where that exceeds 1; the SPIDER baselines, whose own ledgers compose per pass over "
     "disjoint batches (σ = 136.5 over 60 passes), run App. D's σ for their T = 400 oracle "
     "calls (369.4) at App. D's level (claim A1 checks both)"),
    ("App. D", "clipping joint or separate, per sample or of the mean",
     "per-sample clipping of each partial (x and y) separately at C = 1; differences "
     "clipped per sample"),
    ("App. D", "sampling with or without replacement", "fixed-size batches without "
     "replacement, fresh for every query"),
    ("§5.2", "Sto-SPIDER and Ada-DP-SPIDER settings beyond the step size",
     "b₁ = 200, b₂ = 50, clips 1, steps capped at T = 400 (their single-use pools run over "
     "up to 60 passes); Sto-SPIDER is tao2025's reconstructed dp_spider_at"),
    ("§5.3", "λ_min by finite-difference HVPs and an iterative eigensolver",
     "exact HVPs of the closed form and a dense eigendecomposition (d = 120): no "
     "discretisation or solver error"),
    ("Table 2", "x_399", "x_T after T = 400 steps (x_399 if the paper counts x₀ as the "
     "first iterate); DP-RGDA's output is its first certified anchor when there is one, "
     "else x_T (A8)"),
    ("Fig. 1 caption", "names DP-SGDA, which Table 2 does not have (A18)",
     "DP-SGDA runs as an extra baseline"),
    ("Table 1", "SOSP check marks lost in the text", "inferred from the methods (notes §4)"),
)

# -- the regime: the paper's setting beside ours ---------------------------------------------

def _ours_rgda(results: PaperResults) -> pd.DataFrame:
    runs = _clean(results.role_runs("table2"))
    return runs[runs["label"] == OURS] if len(runs) else runs


def _range(values: pd.Series, fmt: str = ".3g") -> str:
    values = values.astype(float).dropna()
    if values.empty:
        raise ValueError("no runs")
    return (f"{values.median():{fmt}}" if values.min() == values.max() else
            f"median {values.median():{fmt}} ({values.min():{fmt}}–{values.max():{fmt}})")


def _noise_to_signal(results: PaperResults) -> str:
    runs = _ours_rgda(results)
    d_x = (runs["p_prob_p"].fillna(20) + runs["p_prob_q"].fillna(20)) * \
        runs["p_prob_rank"].fillna(3) if "p_prob_p" in runs else pd.Series(120.0, runs.index)
    clip = runs["p_alg_clip"].astype(float) if "p_alg_clip" in runs else CLIP
    root_d = pd.Series(np.sqrt(d_x.astype(float)), index=runs.index)
    ratio = root_d * runs["plan_std_refresh"].astype(float) / clip
    return "; ".join(f"{_range(part)} at ε = {eps:g} ({cal})" for (eps, cal), part in
                     ratio.groupby([runs["epsilon"], runs["calibration"]]))


def _param(runs: pd.DataFrame, name: str) -> pd.Series:
    """DP-RGDA's parameter ``name`` per run (its default where the run does not set it)."""
    default = getattr(DPRGDA.Params(), name)
    column = f"p_alg_{name}"
    return runs[column].astype(float).fillna(default) if column in runs else \
        pd.Series(float(default), index=runs.index)


def _passes(results: PaperResults) -> str:
    runs = _ours_rgda(results)
    refresh = np.ceil(_param(runs, "steps") / _param(runs, "period"))
    increments = _param(runs, "steps") * _param(runs, "inner_steps") - refresh
    samples = refresh * _param(runs, "batch_refresh") + increments * _param(runs, "batch_diff")
    return _range(samples / runs["n"].astype(float))


def _steps(results: PaperResults) -> str:
    runs = last_iterates(_clean(results.role_runs("table2")), results)
    early = runs["stopped_early"].astype(bool)
    labels = ", ".join(sorted(set(runs.loc[early, "label"]))) or "none"
    return (f"T = {_range(runs['steps'])} planned; x_T reached by {int((~early).sum())}/"
            f"{len(runs)} runs (stopped early: {labels})")


def _y_step(results: PaperResults) -> str:
    runs = _ours_rgda(results)
    return _range(_param(runs, "lr_y") / runs["n"].astype(float))


REGIME = (
    Regime("noise-to-signal of DP-RGDA's refresh, √d_x·σ·2C/S₁ ÷ C",
           "133 (App. D: σ = 1212 from advanced composition over 2,000 queries at (2, 1e-6), "
           "S₁ = 200, d_x = 120)", _noise_to_signal,
           "independent of C: the clip scales noise and signal alike", lead=True),
    Regime("steps", "T = 400, reported at x_399 (App. D, Table 2)", _steps),
    Regime("passes over the n = 400 records (DP-RGDA)", "265 (40 refreshes × 200 + 1,960 "
           "increments × 50, App. D)", _passes),
    Regime("y-step × y-curvature λ·μ (μ = 1/n)", "0.002 (λ = 0.8, n = 400: y barely tracks "
           "y*)", _y_step, "our λ is set where the σ → 0 reference leaves the saddle",
           lead=True),
)


PAPER = Paper(
    key=KEY,
    title=("Finding Differentially Private Second Order Stationary Points in Stochastic "
           "Minimax Optimization"),
    source="Xu, Tao, Ding, Fan, Wang 2026, arXiv:2602.01339",
    url="https://arxiv.org/abs/2602.01339",
    claims=CLAIMS,
    roles={"table2": "Table 2 / Figure 1 on matrix sensing (claims C1–C3, P1, A1; Table 2 "
                     "regenerated, the calibrations, Figure 1), at App. D's privacy level and "
                     "at our in-regime one (ε = 128, PLD)",
           "table2_untuned": "the private runs at the σ → 0 references' own steps, untuned "
                             "(a labelled variant: its own table; no claim is scored on it)",
           "table2_literal": "App. D's literal constants, a labelled variant of Table 2 "
                             "(its own table; the published numbers are compared with it; "
                             "claim A1 checks its charging, D1 reruns its constants)",
           "rate": "Theorem 1's ERM rate on the NC-SC double well (claim R1, the rate table "
                   "and figure)"},
    regime=REGIME,
    sections=sections,
    resolutions=RESOLUTIONS,
    studies=STUDIES,
)
