"""xu2026, DP RGDA: Table 2 and Figure 1 on matrix sensing — whether App. D's mechanism lets
Table 2 measure optimisation at all (D1), the comparisons where the baselines move (C1–C3,
P1; every method at x_T = x_399, its output beside it), App. D's privacy charging (A1),
Theorem 1's ERM rate (R1, one-sided on the best-iterate ‖∇Φ‖) and the §5 instance's strict
saddle (S1). Texts: xu2026.yaml; studies (instance, data, sigma): bench/studies/xu2026.py.
Roles: ``table2`` (tuned private runs at App. D's level and at ours, with σ → 0 references
matched on every constant), ``table2_untuned``, ``table2_literal`` (labelled variants) and
``rate`` (the double-well rate check).
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
    Control,
    Paper,
    PaperSetting,
    Regime,
    Runs,
    Statistic,
    at_most,
    finished,
    flag,
    needs,
    numeric,
    paired_or_welch,
    tuning_of,
)
from reports.figures import Line, Panel, Plot, Series, colours, draw
from reports.paper import deviations, format_mean_se, mean_se, rates_table, settings
from reports.prose import Prose
from reports.results import Figure, PaperResults, PaperSections, Provenance
from reports.rules import Always, AtLeast, AtMost, Sample, SlopeAtMost, as_float
from reports.scaling import fit_slope

CALIBRATIONS = ("advanced", "pld")
METRICS = (("loss", "Φ(x_T)"), ("grad_norm", "‖∇Φ(x_T)‖"), ("lambda_min", "λ_min(∇²Φ(x_T))"))
LEFT_SADDLE = 0.5  # Φ(x_T)/Φ(x₀) below which a run has left the saddle (published 0.91/13.2)
SLIGHTLY = 1.5  # C2's "slightly": DP-RGDA within 1.5× PrivateDiff (the published ratio 1.39)
NO_MOVE = 0.01  # a method "does not move" while its mean Φ(x_T)/Φ(x₀) is within 1 % of 1
DATA_SHARE = 0.1  # a run learns while ≥ a tenth of its displacement is the data's (issue 37)
MILD_CLIP = 0.5  # clipping is mild while at most half of the per-sample partials are clipped
BINDS = 0.1  # Theorem 1's bound binds while ‖∇Φ(x_out)‖ ≥ 0.1 α, α = c_α ε̄^{2/3}
MIN_R2 = 0.5  # a scaling fit is shown only where log ε̄ explains half of log ‖∇Φ‖ (issue 37)
assert DPRGDA.rate is not None and DPRGDA.rate.privacy_exponent is not None
RATE = DPRGDA.rate.privacy_exponent  # Theorem 1 (ERM): ‖∇Φ(x_out)‖ ≤ α = Õ(ε̄^RATE)
TEXT = Prose.load(__file__, DATA_SHARE=DATA_SHARE, SLIGHTLY=SLIGHTLY, LEFT_SADDLE=LEFT_SADDLE,
                  NO_MOVE=NO_MOVE, MILD_CLIP=MILD_CLIP, BINDS=BINDS, MIN_R2=MIN_R2, CLIP=CLIP,
                  LITERAL=LITERAL, JUDGED=JUDGED, INFLUENCE_STEPS=INFLUENCE_STEPS)


# -- the iterates x_T and the best one ---------------------------------------------------------

def last_iterates(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """``runs`` with their last iterate x_T (Table 2's x_399): ``last_{metric}``,
    ``last_step``, ``phi0`` (Φ(x₀)) and ``stopped_early`` (``last_step`` < the planned T)."""
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


def best_iterate(runs: pd.DataFrame, results: PaperResults) -> pd.Series:
    """min_t ‖∇Φ(x_t)‖ over each run's evaluated iterates (the trajectory, not an output)."""
    traj = results.trajectories
    if runs.empty or traj.empty or "grad_norm" not in traj:
        return pd.Series(np.nan, index=runs.index)
    its = traj[(traj["point"] == "iterate") & (traj["step"] > 0)]
    return runs["run_id"].map(its.groupby("run_id")["grad_norm"].min())


def _range(values: pd.Series, fmt: str = ".3g") -> str:
    """The value, or its median with the range where the runs differ."""
    values = values.astype(float).dropna()
    if values.empty:
        raise ValueError("no runs")
    return (f"{values.median():{fmt}}" if values.min() == values.max() else
            f"median {values.median():{fmt}} ({values.min():{fmt}}–{values.max():{fmt}})")


# -- run selection and measures ----------------------------------------------------------------

def _partner(runs: pd.DataFrame, results: PaperResults, label: str, clean: bool = True
             ) -> pd.DataFrame:
    """The Table 2 ``label`` runs at the scale of ``runs`` (and, for a private label, at its
    ε and calibration); finished and not diverged where ``clean``."""
    table2 = results.role_runs("table2")
    if runs.empty or table2.empty:
        return table2.iloc[0:0]
    r = runs.iloc[0]
    mask = (table2["label"] == label) & np.isclose(
        table2["p_prob_x_star_norm"].astype(float), float(r["p_prob_x_star_norm"]))
    if not label.endswith("_nonprivate"):
        mask &= (table2["calibration"] == r["calibration"]) & np.isclose(
            table2["epsilon"].astype(float), float(r["epsilon"]))
    return finished(table2[mask]) if clean else table2[mask]


def _ours(results: PaperResults) -> pd.DataFrame:
    runs = finished(results.role_runs("table2"))
    return runs[runs["label"] == OURS] if len(runs) else runs


def _ratio(runs: pd.DataFrame, results: PaperResults) -> np.ndarray:
    """Φ(x_T)/Φ(x₀) per run."""
    runs = last_iterates(runs, results)
    return (runs["last_loss"] / runs["phi0"]).to_numpy(float) if "last_loss" in runs else \
        np.array([])


def _computed(results: PaperResults, key: str) -> Provenance:
    """A study's provenance: the scale and what computed it (the text at ``key``)."""
    return Provenance(results.scale, computed=TEXT[key])


def _at_scale(study: pd.DataFrame, scale: float) -> pd.DataFrame:
    return study[np.isclose(study["x_star_norm"].astype(float), scale)]


def _eps_bar(runs: pd.DataFrame) -> pd.Series:
    """ε̄ = √(d log(1/δ))/(nε), d = max(d_x, d_y), as the ERM schedule planned it."""
    if "plan_eps_bar" in runs and runs["plan_eps_bar"].notna().all():
        return runs["plan_eps_bar"].astype(float)
    d = np.maximum(runs["p_prob_d"], runs["p_prob_d_y"]).astype(float)
    return np.sqrt(d * np.log(1 / runs["delta"].astype(float))) / (runs["n"] * runs["epsilon"])


def _noise_ratio(runs: pd.DataFrame) -> pd.Series:
    """√d_x·std/C of DP-RGDA's refresh noise (its least noisy release) per run (d_x = 120
    and App. D's C where the runs do not record them)."""
    d_x = (runs["p_prob_p"].fillna(20) + runs["p_prob_q"].fillna(20)) * \
        runs["p_prob_rank"].fillna(3) if "p_prob_p" in runs else pd.Series(120.0, runs.index)
    clip = runs["p_alg_clip"].astype(float) if "p_alg_clip" in runs else CLIP
    root_d = pd.Series(np.sqrt(d_x.astype(float)), index=runs.index)
    return root_d * runs["plan_std_refresh"].astype(float) / clip


def _param(runs: pd.DataFrame, name: str) -> pd.Series:
    """DP-RGDA's parameter ``name`` per run (its default where the run does not set it)."""
    return numeric(runs, f"p_alg_{name}", getattr(DPRGDA.Params(), name))


def _early(runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs that stop before x_T, and their labels."""
    early = runs[runs["stopped_early"].astype(bool)]
    return early, ", ".join(sorted(set(early["label"]))) or "none"


# -- statistics -----------------------------------------------------------------------------

def _versus(metric: str, progress: bool = False) -> Statistic:
    """DP-RGDA's ``metric`` at x_T (``progress``: its 1 − Φ(x_T)/Φ(x₀)) minus the baseline's
    (÷ ``SLIGHTLY`` for progress), paired by seed (one x₀ per seed) else Welch. Diverged runs
    of either side are dropped: a diverged baseline is reported, never scored."""
    column = f"last_{metric}"

    def value(runs: pd.DataFrame, divide: float = 1.0) -> pd.Series:
        values = 1 - runs["last_loss"] / runs["phi0"] if progress else runs[column]
        return pd.Series((values / divide).to_numpy(float), index=runs.get("seed", runs.index))

    def compute(runs: pd.DataFrame, results: PaperResults) -> Sample:
        ours = last_iterates(_partner(runs, results, OURS), results)
        base = last_iterates(finished(runs), results)
        if column not in ours or column not in base:
            return Sample.of([])
        return paired_or_welch(value(ours), value(base, SLIGHTLY if progress else 1.0))

    return Statistic(f"progress 1 − Φ(x_T)/Φ(x₀), DP-RGDA − PrivateDiff/{SLIGHTLY:g} (paired "
                     "by seed)" if progress else f"{metric.replace('_', ' ')} at x_T, DP-RGDA − "
                     "the baseline (paired by seed)", compute)


LEFT = Statistic("Φ(x_T)/Φ(x₀) per run (diverged runs dropped)",
                 lambda runs, results: Sample.of(_ratio(finished(runs), results)))


def _by_eps_bar(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Best-iterate ‖∇Φ‖ grouped by ε̄ (n fixed, ε swept)."""
    if runs.empty:
        return Sample.along({})
    frame = runs.assign(eps_bar=_eps_bar(runs), best=best_iterate(runs, results))
    return Sample.along({as_float(e): part["best"].to_numpy(float)
                         for e, part in frame.groupby("eps_bar")})


def _charged_as_app_d(runs: pd.DataFrame, _: PaperResults) -> Sample:
    """Per run: its ledger spends at most the target under advanced composition, and a SPIDER
    baseline (whose ledger composes per pass) runs at least App. D's σ for its T calls."""
    spent = runs["eps_advanced"].astype(float) <= runs["epsilon"].astype(float) * (1 + 1e-6)
    spider = runs["algorithm"].isin(SPIDER_ALGORITHMS)
    need = pd.Series([app_d_sigma(int(t)) if s else 0.0 for t, s in zip(
        runs["steps"], spider, strict=True)], index=runs.index)
    ok = spent & (runs["sigma"].astype(float) >= need * (1 - 1e-9))
    shown = runs.assign(need=need)[spider].drop_duplicates("steps")
    return Sample.of(ok.to_numpy(float), note="; ".join(
        f"σ = {r['sigma']:.4g} against App. D's {r['need']:.4g} for T = {r['steps']:g} calls"
        for _, r in shown.iterrows()))


def _data_share(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """The data's share of each method's displacement at App. D's literal constants (study
    'data'), noted with Φ on the data and on zeros, App. D's arithmetic for DP-RGDA's
    refresh, where the σ sweep first descends (mean ratio ≤ 1 − ``NO_MOVE``) and Theorem 1's
    α = ε̄^{2/3} (Õ's constant 1) at App. D's (ε, δ) beside ‖∇Φ(x₀)‖."""
    notes = ["data share by method: " + ", ".join(
        f"{label} {g['influence'].mean():.2g} (Φ(x_T)/Φ(x₀) {g['ratio'].mean():.4g}, on zeros "
        f"{g['ratio_zeros'].mean():.4g})" for label, g in runs.groupby("label"))]
    literal = results.role_runs("table2_literal")
    rgda = literal[literal["label"] == OURS] if len(literal) else literal
    if len(rgda) and "plan_std_refresh" in rgda:
        r, ratio = rgda.iloc[0], float(_noise_ratio(rgda.iloc[:1]).iloc[0])
        notes.append(TEXT.fill("notes.snr", sigma=r["sigma"], ratio=ratio,
                               steps=float(r["steps"]), snr=math.sqrt(float(r["steps"])) / ratio))
    sigma = results.study("sigma")
    if len(sigma) and "eps_pld" in sigma:
        parts = []
        for label, part in sigma.groupby("label"):
            means = part.groupby("sigma").agg(ratio=("ratio", "mean"), eps=("eps_pld", "first"))
            down = means[means["ratio"] <= 1 - NO_MOVE]
            parts.append(f"{label} at σ ≤ {down.index.max():g} (ε_PLD = "
                         f"{down.loc[down.index.max(), 'eps']:.3g})" if len(down)
                         else f"{label} at no σ tried")
        notes.append(TEXT.fill("notes.first_descent", parts=", ".join(parts)))
    instance = results.study("instance")
    if len(literal) and len(instance) and "p_prob_p" in literal and len(
            rows := _at_scale(instance, 100.0)):
        r = literal.iloc[0]
        d = max(float((r["p_prob_p"] + r["p_prob_q"]) * r["p_prob_rank"]), float(r["n"]))
        bar = math.sqrt(d * math.log(1 / APP_D[1])) / (float(r["n"]) * APP_D[0])
        notes.append(TEXT.fill("notes.alpha", alpha=bar ** (2 / 3), d=d,
                               grad=rows["grad_x0"].iloc[0]))
    return Sample.of(runs["influence"].to_numpy(float), note="; ".join(notes))


# -- premises ------------------------------------------------------------------------------

def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def constant_differences(judged: dict[str, Any], reference: dict[str, Any],
                         tuned: dict[str, tuple[float, float]]) -> list[str]:
    """Where a σ → 0 run's constants ``reference`` differ from the judged runs' ``judged``:
    a constant they hold fixed with another value, or one their tuning varied (``tuned``:
    name → searched range) outside the range searched ([] when they match)."""
    out = []
    for column, value in judged.items():
        name, ref = column.removeprefix("p_alg_").removeprefix("p_prob_"), reference.get(column)
        numbers = all(isinstance(v, int | float | np.number) for v in (value, ref))
        if column.startswith("p_alg_") and name in tuned:
            low, high = tuned[name]
            if ref is None or not low <= float(ref) <= high:
                out.append(f"{name} {_show(ref)} outside the tuned {low:g}–{high:g}")
        elif ref is None or not (np.isclose(float(value), float(ref)) if numbers else value == ref):
            out.append(f"{name} {_show(ref)} ≠ {_show(value)}")
    return out


def _constants(run: pd.Series) -> dict[str, Any]:
    """A run's algorithm and problem constants (its ``p_alg_*`` and ``p_prob_*`` columns)."""
    return {str(c): run[c] for c in run.index
            if str(c).startswith(("p_alg_", "p_prob_")) and not pd.isna(run[c])}


def _reference(runs: pd.DataFrame, results: PaperResults, label: str
               ) -> tuple[pd.DataFrame, str]:
    """The clean σ → 0 ``label`` runs at the constants of the setting's ``label`` runs (every
    fixed one equal, every tuned one inside the range its tuning searched), else what
    differs."""
    judged = _partner(runs, results, label, clean=False)
    table2 = results.role_runs("table2")
    refs = finished(table2[table2["label"] == f"{label}_nonprivate"]) if len(table2) else table2
    if judged.empty or refs.empty:
        return refs.iloc[0:0], f"σ → 0 {label} reference not run"
    grid = pd.DataFrame([c["params"] for t in tuning_of(judged, results)
                         for c in t.get("candidates") or []])
    want, tuned = _constants(judged.iloc[0]), {str(k): (grid[k].min(), grid[k].max()) for k in grid}
    differences: dict[Any, list[str]] = {
        i: constant_differences(want, _constants(r), tuned) for i, r in refs.iterrows()}
    if matched := [i for i, d in differences.items() if not d]:
        return refs.loc[matched], ""
    nearest = min(differences.values(), key=len)
    return refs.iloc[0:0], TEXT.fill("notes.no_reference", label=label, nearest=", ".join(nearest))


def _progress(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """The σ → 0 references of DP-RGDA and of the baseline at the judged constants leave the
    saddle (mean Φ(x_T)/Φ(x₀) ≤ ``LEFT_SADDLE``); a reference at other constants fails."""
    found, texts = [], []
    for label in dict.fromkeys([OURS, *(str(v) for v in runs["label"].unique())]):
        ref, missing = _reference(runs, results, label)
        if missing:
            return (None if missing.endswith("not run") else False), missing
        ratio = _ratio(ref, results)
        if not len(ratio) or not np.isfinite(ratio).any():
            return None, f"σ → 0 {label} reference has no trajectory"
        mean = float(np.nanmean(ratio))
        found.append(mean <= LEFT_SADDLE)
        texts.append(f"{label} {mean:.3g} ({len(ratio)} runs)")
    return all(found), TEXT.fill("notes.progress", texts=", ".join(texts))


def _clipped(ref: pd.DataFrame, results: PaperResults) -> list[tuple[float, str]]:
    """The worst share clipped as the runs recorded it (``prem_clipped_fraction…``: the
    refresh clip and the increment clip ``_diff``) and at the start (instance study at the
    runs' ‖X*‖_F, which measures App. D's C only)."""
    found, cols = [], [c for c in ref if str(c).startswith("prem_clipped_fraction")
                       and ref[c].notna().any()]
    if cols:
        parts = []
        for c in cols:
            s = str(c).removeprefix("prem_clipped_fraction")  # "", "_diff" (the increment)
            parts.append(TEXT.fill(
                "notes.clipped", which={"_diff": "increment", "": "refresh"}.get(s, s[1:]),
                share=ref[c].max(), median=numeric(ref, f"prem_median_per_sample_norm{s}")
                .median(), bound=numeric(ref, f"prem_clip_bound{s}").max()))
        found.append((float(np.nanmax(ref[cols].to_numpy(float))),
                      "; ".join(parts) + " (recorded)"))
    study = results.study("instance")
    if study.empty or ref.empty or ("p_alg_clip" in ref and not np.allclose(
            ref["p_alg_clip"].astype(float), CLIP)):  # another C: its own record speaks
        return found
    if len(rows := _at_scale(study, float(ref["p_prob_x_star_norm"].iloc[0]))):
        y, x = float(rows["clipped_y"].max()), float(rows["clipped_x"].max())
        found.append((max(x, y), TEXT.fill("notes.clipped_start", y=y, x=x, median_y=rows[
            "median_y"].median(), median_x=rows["median_x"].median())))
    return found


def _clipping(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """C does not limit the method: the worst share clipped by the σ → 0 DP-RGDA reference
    at the same constants (the private runs' noise drives their partials far out)."""
    ref, _ = _reference(runs, results, OURS)
    found = _clipped(ref if len(ref) else _partner(runs, results, OURS), results)
    if not found:
        return None, "clipped fraction not recorded"
    return max(f[0] for f in found) <= MILD_CLIP, "; ".join(f[1] for f in found) + \
        f"; ≤ {MILD_CLIP:.0%} needed"


@needs("p_alg_theory_alpha", "final_grad_norm")
def _binds(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """Theorem 1's bound binds: the measured ‖∇Φ(x_out)‖ is of the order of α = c_α ε̄^{2/3}."""
    share = runs["final_grad_norm"].astype(float) / (
        runs["p_alg_theory_alpha"].astype(float) * _eps_bar(runs) ** RATE)
    certified = (f"; {float((runs['diag_certificates'] > 0).mean()):.0%} of runs certified"
                 if "diag_certificates" in runs else "")
    return float(share.median()) >= BINDS, TEXT.fill(
        "notes.binds", median=float(share.median()), low=share.min(), high=share.max(),
        certified=certified)


@needs("steps")
def _horizon(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The steps taken (recorded, else planned) ≥ ⌈ε̄^{−4/3}⌉, Theorem 1's horizon (c_T = 1)."""
    recorded = "prem_steps_taken" in runs and runs["prem_steps_taken"].notna().all()
    taken = runs["prem_steps_taken" if recorded else "steps"].astype(float)
    need = np.ceil(_eps_bar(runs) ** (-4 / 3))
    return not bool((short := taken < need).any()), TEXT.fill(
        "notes.horizon", how="taken" if recorded else "planned", short=int(short.sum()),
        taken=(taken.min(), taken.max()), need=(need.min(), need.max()), runs=len(runs))


def _learns(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """Some method's iterates depend on the data at the setting's scale and level (study
    'data', the judged suites' levels: share ≥ ``DATA_SHARE``)."""
    study = results.study("data")
    if study.empty or runs.empty or "variant" not in study:
        return None, "data-dependence study not run"
    r = runs.iloc[0]
    rows = _at_scale(study, float(r["p_prob_x_star_norm"]))
    rows = rows[rows["variant"].eq(JUDGED) & rows["calibration"].eq(r["calibration"])
                & np.isclose(rows["epsilon"].astype(float), float(r["epsilon"]))]
    if rows.empty:
        return None, "no data-dependence row at this scale and level"
    return bool((rows["influence"] >= DATA_SHARE).any()), TEXT.fill(
        "notes.learns", shares=", ".join(f"{q['label']} {q['influence']:.2g}"
                                         for _, q in rows.iterrows()))


def _not_app_d(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The setting is not App. D's level, (2, 1e-6) under advanced composition (D1's)."""
    r = runs.iloc[0]
    if bool((np.isclose(runs["epsilon"].astype(float), APP_D[0])
             & np.isclose(runs["delta"].astype(float), APP_D[1])
             & runs["calibration"].eq("advanced")).all()):
        return False, TEXT["premises.subsumed.app_d"]
    return True, f"ε = {r['epsilon']:g} under {r['calibration']}"


def _at_best_step(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """DP-RGDA and the baseline each at its best configuration, at least one moving (|mean
    Φ(x_T)/Φ(x₀) − 1| > ``NO_MOVE``): every tuned constant inside its grid, except an lr on
    the lower edge of a method that does not move (a smaller step only brings x_T closer to
    x₀; the comparison is decided by the mover's margin). Two methods that both stay at x₀
    compare noise: out of regime; so is any other edge (the optimum may lie past it)."""
    texts, moving = [], 0
    for name, part in ((OURS, _partner(runs, results, OURS)), ("baseline", finished(runs))):
        groups, ratio = tuning_of(part, results), _ratio(part, results)
        if not groups or not len(ratio):
            return None, f"no tuned {name} runs"
        edges = {k: side for t in groups for k, side in (t.get("edges") or {}).items()}
        mean = float(np.nanmean(ratio))
        moving += (moves := abs(mean - 1) > NO_MOVE)
        where = ", ".join(f"{k} on the {side} edge" for k, side in sorted(edges.items()))
        texts.append(f"{name}: {where or 'every tuned constant inside its grid'}, mean "
                     f"Φ(x_T)/Φ(x₀) {mean:.4g}")
        if any(moves or (k, side) != ("lr", "lower") for k, side in edges.items()):
            return False, texts[-1] + " (its optimum may lie past the edge)"
    if not moving:
        return False, "; ".join(texts) + f": neither moves (within {NO_MOVE:.0%} of x₀)"
    return True, "; ".join(texts)


SUBSUMED, DATA = TEXT.premise("subsumed", _not_app_d), TEXT.premise("data", _learns)
# The noise-to-signal ratio is not a premise: App. D's own calibration sets it (≈ 133 for
# DP-RGDA), so it is the paper's regime (the Regime table): failing there is contradicted.
TABLE2_PREMISES = (SUBSUMED, TEXT.premise("progress", _progress),
                   TEXT.premise("clipping", _clipping), DATA)
COMPARISON_PREMISES = (*TABLE2_PREMISES, TEXT.premise("tuned", _at_best_step))


# -- claims --------------------------------------------------------------------------------

def _table2_runs(*labels: str) -> Runs:
    return Runs(("table2",), {"label": list(labels), "calibration": list(CALIBRATIONS)},
                by=("p_prob_x_star_norm", "epsilon", "calibration", "label"))


def _reference_control(label: str, scale: float) -> Control:
    """The σ → 0 ``label`` runs at ``scale``, one outcome per clip C (per judged level)."""
    return Control(f"σ → 0 {label}, ‖X*‖_F = {scale:g}",
                   Runs(("table2",), {"label": f"{label}_nonprivate",
                                      "p_prob_x_star_norm": scale}, by=("p_alg_clip",)),
                   TEXT["controls.leaves"], LEFT, AtMost(LEFT_SADDLE, "mean Φ(x_T)/Φ(x₀)"))


MATRIX_SENSING = PaperSetting(TEXT["setting"], problems=("matrix_sensing",))
TABLE2 = {"include_diverged": True, "kind": "paper", "setting": MATRIX_SENSING}
COMPARISON = {**TABLE2, "premises": COMPARISON_PREMISES}  # C1–C3

CLAIMS = (
    TEXT.claim("D1", "Table 2", Runs(study="data", where={"variant": LITERAL},
                                     by=("x_star_norm",)),
               Statistic("the data's share of each Table 2 method's displacement (per method "
                         "and seed)", _data_share),
               AtLeast(DATA_SHARE, "mean data share"), kind="paper", headline=True,
               setting=MATRIX_SENSING),
    TEXT.claim("C1", "Table 2", _table2_runs(*SPIDERS), _versus("loss"),
               AtMost(0.0, "mean paired difference of Φ(x_T)"), headline=True, **COMPARISON),
    TEXT.claim("C2", "Table 2", _table2_runs(PRIVATE_DIFF), _versus("loss", progress=True),
               AtLeast(0.0, f"mean paired difference of progress (DP-RGDA − PrivateDiff/"
                            f"{SLIGHTLY:g})"), **COMPARISON),
    TEXT.claim("C3", "Table 2", _table2_runs(*SPIDERS), _versus("lambda_min"),
               AtLeast(0.0, "mean paired difference of λ_min"), **COMPARISON),
    TEXT.claim("P1", "Figure 1",
               Runs(("table2",), {"label": OURS, "calibration": list(CALIBRATIONS)},
                    by=("p_prob_x_star_norm", "epsilon", "calibration")),
               LEFT, AtMost(LEFT_SADDLE, "mean Φ(x_T)/Φ(x₀)"), TABLE2_PREMISES,
               tuple(_reference_control(label, scale) for label in (OURS, PRIVATE_DIFF)
                     for scale in (20.0, 100.0)), **TABLE2),
    TEXT.claim("A1", "App. D (privacy)",
               Runs(("table2", "table2_literal", "table2_untuned"),
                    {"label": list(PRIVATE), "calibration": "advanced"}, by=("label",)),
               Statistic("charged per oracle call as App. D says", _charged_as_app_d),
               Always("ε (advanced) ≤ 2 and σ ≥ App. D's per-call σ"),
               include_diverged=True,  # a diverged run's ledger is as real as any other
               kind="implementation"),
    TEXT.claim("R1", "Theorem 1", Runs(("rate",), {"label": OURS}),
               Statistic("best-iterate ‖∇Φ(x_t)‖ by ε̄ (n fixed)", _by_eps_bar),
               SlopeAtMost(2 / 3, axis="ε̄"),
               (at_most(TEXT["premises.unclipped.name"], "prem_clipped_fraction", 0.0,
                        TEXT["premises.unclipped.remedy"], "share of per-sample partials clipped"),
                TEXT.premise("binds", _binds), TEXT.premise("horizon", _horizon)),
               kind="paper", headline=True),
    TEXT.claim("S1", "§5 (instance)", Runs(study="instance", by=("scale",)),
               flag("saddle_ok", "spectrum as predicted"),
               Always("∇²Φ(0) spectrum = ±σ_j(M₀), multiplicity r"), kind="design"),
)


# -- tables ----------------------------------------------------------------------------------

def _table2(results: PaperResults, role: str = "table2") -> list[dict[str, Any]]:
    """Table 2 regenerated per (scale, calibration): each method at x_T and at its output,
    mean ± s.e. over the runs that did not diverge, with the diverged runs and early stops."""
    runs = last_iterates(results.role_runs(role), results)
    if runs.empty or "last_step" not in runs:
        return []
    provenance, runs = results.provenance(runs), runs[runs["status"].isin(["done", "diverged"])]
    keys, cols = ["p_prob_x_star_norm", "calibration", "label"], [
        f"{w}_{m}" for w in ("last", "final") for m, _ in METRICS]
    clean, (early, _) = finished(runs).groupby(keys), _early(runs)
    diverged = runs[runs["diverged"].astype(bool)].groupby(keys).size() \
        if "diverged" in runs else pd.Series(dtype=int)
    stats = pd.concat([runs.groupby(keys)[["sigma", "epsilon", "eps_advanced", "eps_pld"]].first(),
                       clean[cols].mean(), clean[cols].sem().add_suffix("_se"),
                       clean.size().rename("runs"), diverged.rename("diverged"),
                       early.groupby(keys).size().rename("early"),
                       early.groupby(keys)["last_step"].min().rename("first_stop")],
                      axis=1).fillna({"runs": 0, "diverged": 0, "early": 0})

    def row(label: str, r: pd.Series) -> list[str]:
        cells = [format_mean_se(r[c], r[f"{c}_se"]) if r["runs"] else "diverged" for c in
                 (*cols[:3], "final_loss", "final_grad_norm")]
        return [label, f"{r['sigma']:.4g}", *cells, f"{r['early']:g} (from t = "
                f"{r['first_stop']:g})" if r["early"] else "–", f"{r['eps_advanced']:.3g}",
                f"{r['eps_pld']:.3g}", f"{r['runs']:g}", f"{r['diverged']:g}"]

    tables = []
    for (scale, cal), part in stats.groupby(level=[0, 1]):
        eps = part["epsilon"].astype(float)
        private = eps[np.isfinite(eps)]
        variant = "inregime" if role == "table2" and len(private) and private.max() > 2 \
            else role
        tables.append(TEXT.table("table2", [
            row(str(key[2]), r) for key, r in part.iterrows() if isinstance(key, tuple)],
            provenance, scale=scale, cal=cal,
            level=f"ε = {private.max():g}" if len(private) else "σ → 0",
            variant=TEXT[f"tables.table2.variants.{variant}"],
            divergence=PAPER.divergence_factor))
    return tables


def _calibration(results: PaperResults) -> dict[str, Any] | None:
    runs = finished(results.role_runs("table2"))
    if runs.empty:
        return None
    runs = runs[runs["epsilon"].apply(math.isfinite)]

    def pair(r: pd.Series, kind: str) -> str:
        return (f"{r[f'{kind}_refresh']:.3g} / {r[f'{kind}_increment']:.3g}"
                if pd.notna(r.get(f"{kind}_refresh")) else "–")

    return TEXT.table("calibration", [
        [str(label), f"{r['epsilon']:g}", str(cal), f"{r['sigma']:.4g}", pair(r, "plan_std"),
         pair(r, "plan_std_alg3"), f"{r['eps_advanced']:.3g}", f"{r['eps_pld']:.3g}"]
        for (label, _, cal), part in runs.groupby(["label", "epsilon", "calibration"])
        for r in [part.iloc[0]]], results.provenance(runs))


def _scale_table(results: PaperResults) -> dict[str, Any] | None:
    """Φ, ‖∇Φ‖ at x₀ and the spectrum of ∇²Φ(0) per X* scale (the instance study)."""
    study = results.study("instance")
    if study.empty:
        return None
    first = study[study["data_seed"] == study["data_seed"].min()]
    return TEXT.table("scale", [
        ["raw factors" if r["scale"] == "raw" else r["scale"], f"{r['x_star_fro']:.3g}",
         f"{r['phi_x0']:.4g}", f"{r['grad_x0']:.3g}",
         f"{r['lambda_min']:.4g} (×{r['multiplicity']:g})", f"{r['lambda_max']:.4g}",
         f"{r['clipped_y']:.0%} (median {r['median_y']:.3g})",
         f"{r['clipped_x']:.0%} (median {r['median_x']:.3g})"] for _, r in first.iterrows()],
        _computed(results, "tables.scale.computed"))


def _data_table(results: PaperResults) -> dict[str, Any] | None:
    study = results.study("data")
    if study.empty or "variant" not in study:
        return None
    rows = []
    for (variant, scale, eps, cal, label), part in study.groupby(
            ["variant", "x_star_norm", "epsilon", "calibration", "label"], sort=False):
        share = part["influence"].astype(float)
        spread = f" ({share.min():.2g}–{share.max():.2g})" if len(part) > 1 else ""
        rows.append([str(variant), str(label), f"{scale:g}", f"{eps:g} ({cal})",
                     f"{part['steps'].max():g}", f"{len(part)}", f"{share.mean():.2g}{spread}",
                     f"{part['ratio'].mean():.4g}", f"{part['ratio_zeros'].mean():.4g}",
                     "yes" if share.mean() >= DATA_SHARE else "NO"])
    return TEXT.table("data", rows, _computed(results, "tables.data.computed"))


def _why_table(results: PaperResults) -> dict[str, Any] | None:
    """Why our Table 2 differs from the paper's: each cause with the number that measures it."""
    runs = last_iterates(finished(results.role_runs("table2", "table2_literal")), results)
    if runs.empty or "last_loss" not in runs:
        return None
    ratio, literal = runs["last_loss"] / runs["phi0"], runs["suite"].str.contains("literal")

    def mean(in_literal: bool, label: str) -> str:
        sel = ratio[(literal == in_literal) & (runs["label"] == label)]
        return f"{sel.mean():.3g}" if len(sel) else "not run"

    def row(key: str, **values: Any) -> list[str]:
        return [TEXT[f"tables.why.{key}.cause"], TEXT.fill(f"tables.why.{key}.measured", **values)]

    reference = mean(False, "dp_rgda_nonprivate")
    rows = [row("literal", literal=mean(True, "dp_rgda_nonprivate"), ours=reference),
            row("noise", ratio=_noise_to_signal(results), private=mean(False, "dp_rgda"),
                reference=reference)]
    if len(sigma := results.study("sigma")):
        ours = sigma[sigma["label"] == OURS]
        means = ours.groupby("sigma")["ratio"].mean()
        left = means[means <= LEFT_SADDLE]
        rows.append(row("sigma", largest=left.index.max() if len(left) else "none",
                        advanced=ours["sigma_advanced"].iloc[0], pld=ours["sigma_pld"].iloc[0]))
    eps = runs["epsilon"].astype(float)
    private = np.isfinite(eps) & ~runs["suite"].str.contains("literal|untuned")
    levels = [(level, ratio[mask].groupby(runs.loc[mask, "label"]).mean()) for level, mask in (
        ("App. D (2, advanced)", private & (eps <= 2)), ("in regime", private & (eps > 2)))]
    rows.append(row("level", parts="; ".join(
        f"{level}: " + ", ".join(f"{k} {v:.3g}" for k, v in means.items())
        for level, means in levels if len(means))))
    data = results.study("data")
    if len(data) and "variant" in data:
        shares = data[data["variant"] == LITERAL].groupby("label")["influence"].mean()
        rows.append(row("data", shares=", ".join(f"{k} {v:.2g}" for k, v in shares.items())))
    early, labels = _early(runs)
    rows += [row("early", early=len(early), runs=len(runs), labels=labels,
                 first=early["last_step"].min() if len(early) else "–"), row("scale")]
    return TEXT.table("why", rows, results.provenance(runs))


def _rate_points(results: PaperResults) -> tuple[pd.DataFrame, float, float, float, float]:
    """The finished rate runs with ε̄, the log-log slope of ‖∇Φ(x_out)‖ in ε̄ with its 95 %
    bootstrap CI, and the R² of the least-squares line (nan below three runs)."""
    pts = finished(results.role_runs("rate"))
    if len(pts) < 3:
        return pts, *(math.nan,) * 4
    pts = pts.assign(eps_bar=_eps_bar(pts))
    slope, low, high = fit_slope(pts["eps_bar"].to_numpy(), pts["final_grad_norm"].to_numpy())
    x, y = np.log(pts["eps_bar"].astype(float)), np.log(pts["final_grad_norm"].astype(float))
    return pts, slope, low, high, float(np.corrcoef(x, y)[0, 1] ** 2)


def _rate_table(results: PaperResults) -> dict[str, Any] | None:
    pts, slope, low, high, r2 = _rate_points(results)
    if len(pts) < 3:
        return None
    rows = [[f"{n:g}", f"{e:g}", f"{g['eps_bar'].iloc[0]:.3g}", f"{g['steps'].iloc[0]:g}",
             f"{g['p_alg_theory_alpha'].iloc[0] * g['eps_bar'].iloc[0] ** RATE:.3g}",
             format_mean_se(*mean_se(g["final_grad_norm"])),
             f"{g['final_lambda_min'].mean():.3g}", f"{(g['diag_certificates'] > 0).mean():.2f}"]
            for (n, e), g in pts.groupby(["n", "epsilon"])]
    fit = TEXT.fill("tables.rate.fit" if r2 >= MIN_R2 else "tables.rate.no_fit", slope=slope,
                    low=low, high=high, r2=r2)
    return TEXT.table("rate", rows, results.provenance(pts), fit=fit, declared=RATE)


# -- figures ---------------------------------------------------------------------------------

def _figure1(results: PaperResults, out: Path) -> list[Figure]:
    """Figure 1 regenerated per Table 2 suite, scale and calibration: Φ, ‖∇Φ‖, λ_min along t."""
    figures = []
    for suite in results.role_suites("table2"):
        curves, clean = results.curves(suite), finished(results.suite_runs(suite))
        if curves.empty:
            continue
        curves = curves[curves["run_id"].isin(clean["run_id"])]
        bases = curves["label"].astype(str).str.removesuffix("_nonprivate")
        colour = colours(bases, dict(zip(bases, curves["algorithm"], strict=True)))
        for (scale, cal), part in curves.groupby(["p_prob_x_star_norm", "calibration"]):
            means = {str(label): grp.groupby("step")[[m for m, _ in METRICS]].mean()
                     for label, grp in part.groupby("label")}
            panels = [Panel([Series(label, mean.index.to_numpy(), mean[metric], marker="",
                                    colour=colour[label.removesuffix("_nonprivate")],
                                    line="--" if label.endswith("_nonprivate") else "-")
                             for label, mean in means.items()],
                            xlabel="t", title=name.replace("x_T", "x_t"),
                            yscale="log" if i < 2 else "linear", legend=i == 0)
                      for i, (metric, name) in enumerate(METRICS)]
            name = draw(Plot(panels, columns=3, panel_inches=(13 / 3, 3.6), dpi=120), out,
                        f"figure1_scale{scale:g}_{cal}")
            figures.append(Figure(name, TEXT.fill("figures.figure1", scale=scale, cal=cal),
                                  results.provenance(clean[clean["run_id"].isin(
                                      part["run_id"])])))
    return figures


def _sigma_figure(results: PaperResults, out: Path) -> list[Figure]:
    """Φ(x_T)/Φ(x₀) against σ (study 'sigma'), with each method's calibrated σ."""
    study = results.study("sigma")
    if study.empty:
        return []
    series, lines = [], [Line(LEFT_SADDLE, style="-")]
    for (label, part), colour in zip(study.groupby("label"), ("C0", "C1", "C2", "C3"),
                                     strict=False):
        mean = part.groupby("sigma")["ratio"].mean()
        series.append(Series(str(label), mean.index.to_numpy(), mean.to_numpy(), colour=colour))
        lines += [Line(float(part[f"sigma_{cal}"].iloc[0]), colour=colour, style=style,
                       vertical=True) for cal, style in (("advanced", "--"), ("pld", ":"))]
    plot = Plot([Panel(series, "noise multiplier σ", "Φ(x_T)/Φ(x₀)", xscale="log",
                       yscale="log", lines=lines)], panel_inches=(5.2, 3.4))
    return [Figure(draw(plot, out, "xu2026_sigma_sweep"), TEXT["figures.sigma"],
                   _computed(results, "figures.sigma_computed"))]


def _rate_figure(results: PaperResults, out: Path) -> list[Figure]:
    """‖∇Φ(x_out)‖ against ε̄ (log-log) per n, the fit where R² ≥ ``MIN_R2`` and slope 2/3."""
    pts, slope, _, _, r2 = _rate_points(results)
    if len(pts) < 3:
        return []
    series = [Series(f"n = {n:g}", part["eps_bar"], part["final_grad_norm"], line="")
              for n, part in pts.groupby("n")]
    grid = np.geomspace(pts["eps_bar"].min(), pts["eps_bar"].max(), 20)
    x, y = np.log(pts["eps_bar"]), np.log(pts["final_grad_norm"])
    if r2 >= MIN_R2:
        series.append(Series(f"fit, slope {slope:.2f} (R² {r2:.2f})", grid,
                             np.exp(np.polyval(np.polyfit(x, y, 1), np.log(grid))),
                             colour="k", marker=""))
    series.append(Series("slope 2/3 (upper bound)", grid, float(np.exp(
        y.mean() - RATE * x.mean())) * grid ** RATE, colour="k", marker="", line="--"))
    plot = Plot([Panel(series, "ε̄ = √(d log(1/δ))/(nε)", "‖∇Φ(x_out)‖", xscale="log",
                       yscale="log")])
    stems = results.role_suites("rate")
    caption = TEXT.fill("figures.rate", r2=r2, drawn="" if r2 >= MIN_R2 else TEXT["figures.no_fit"])
    return [Figure(draw(plot, out, stems[0] if stems else "rate_check"), caption,
                   results.provenance(pts))]


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
        *((name, f"algorithms.{name}", "Deviations")
          for name in ("dp_sgda", "private_diff", "ada_dp_spider", "dp_spider_at"))])
    return page


# -- the regime: the paper's setting beside ours ---------------------------------------------

def _noise_to_signal(results: PaperResults) -> str:
    runs = _ours(results)
    return "; ".join(f"{_range(part)} at ε = {eps:g} ({cal})" for (eps, cal), part in
                     _noise_ratio(runs).groupby([runs["epsilon"], runs["calibration"]]))


def _passes(results: PaperResults) -> str:
    runs = _ours(results)
    refresh = np.ceil(_param(runs, "steps") / _param(runs, "period"))
    increments = _param(runs, "steps") * _param(runs, "inner_steps") - refresh
    samples = refresh * _param(runs, "batch_refresh") + increments * _param(runs, "batch_diff")
    return _range(samples / runs["n"].astype(float))


def _steps(results: PaperResults) -> str:
    runs = last_iterates(finished(results.role_runs("table2")), results)
    early, labels = _early(runs)
    return TEXT.fill("notes.steps", planned=_range(runs["steps"]), labels=labels,
                     reached=len(runs) - len(early), runs=len(runs))


def _y_step(results: PaperResults) -> str:
    runs = _ours(results)
    return _range(_param(runs, "lr_y") / runs["n"].astype(float))


PAPER = Paper(
    key=KEY, title=TEXT["title"], source=TEXT["source"], url="https://arxiv.org/abs/2602.01339",
    claims=CLAIMS, roles=dict(TEXT.section("roles")), sections=sections, studies=STUDIES,
    regime=tuple(Regime(ours=ours, lead=lead, **TEXT.section(f"regime.{key}"))
                 for key, ours, lead in (("noise", _noise_to_signal, True),
                                         ("steps", _steps, False), ("passes", _passes, False),
                                         ("y_step", _y_step, True))),
    resolutions=tuple(tuple(r) for r in TEXT.texts["resolutions"]), text=TEXT)
