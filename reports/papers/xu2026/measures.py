"""xu2026's own measures over the run frame and its studies: the iterates Table 2 reports
(x_T, Φ(x_T)/Φ(x₀)), ε̄ and the noise-to-signal of App. D's mechanism, the statistics its
claims decide on, the premises' checks and the regime quantities. The thresholds they
apply are declared here, beside the prose they fill (paper.yaml)."""

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
    LITERAL,
    OURS,
    SPIDER_ALGORITHMS,
    app_d_sigma,
)
from reports.claims import Statistic, finished, needs, numeric, paired_or_welch, tuning_of
from reports.paper import median_range
from reports.prose import Prose
from reports.results import PaperResults
from reports.rules import Sample, as_float

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
TEXT = Prose.load(Path(__file__).with_name("paper.yaml"), DATA_SHARE=DATA_SHARE,
                  SLIGHTLY=SLIGHTLY, LEFT_SADDLE=LEFT_SADDLE, NO_MOVE=NO_MOVE,
                  MILD_CLIP=MILD_CLIP, BINDS=BINDS, MIN_R2=MIN_R2, CLIP=CLIP, LITERAL=LITERAL,
                  JUDGED=JUDGED, INFLUENCE_STEPS=INFLUENCE_STEPS)


# -- the iterates x_T and the best one ---------------------------------------------------------

def last_iterates(runs: pd.DataFrame, results: PaperResults) -> pd.DataFrame:
    """``runs`` with their last iterate x_T (Table 2's x_399): ``last_{metric}``,
    ``last_step``, ``phi0`` (Φ(x₀)), ``phi_ratio`` (Φ(x_T)/Φ(x₀), Figure 1(a)'s descent)
    and ``stopped_early`` (``last_step`` < the planned T)."""
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
    if "last_loss" in extra:
        extra["phi_ratio"] = extra["last_loss"] / extra["phi0"]
    extra["stopped_early"] = extra["last_step"] < runs["steps"].astype(float)
    return runs.assign(**extra)


def best_iterate(runs: pd.DataFrame, results: PaperResults) -> pd.Series:
    """min_t ‖∇Φ(x_t)‖ over each run's evaluated iterates (the trajectory, not an output):
    what Theorem 1 bounds for the best of x_1..x_T."""
    return results.at(runs, "grad_norm", "best")


def early_stops(runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs (with :func:`last_iterates`) that stop before x_T, and their labels."""
    early = runs[runs["stopped_early"].astype(bool)]
    return early, ", ".join(sorted(set(early["label"]))) or "none"


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
    """DP-RGDA's finished Table 2 runs."""
    runs = finished(results.role_runs("table2"))
    return runs[runs["label"] == OURS] if len(runs) else runs


def _ratio(runs: pd.DataFrame, results: PaperResults) -> np.ndarray:
    """Φ(x_T)/Φ(x₀) per run."""
    runs = last_iterates(runs, results)
    return runs["phi_ratio"].to_numpy(float) if "phi_ratio" in runs else np.array([])


def _at_scale(study: pd.DataFrame, scale: float) -> pd.DataFrame:
    return study[np.isclose(study["x_star_norm"].astype(float), scale)]


def eps_bar(runs: pd.DataFrame) -> pd.Series:
    """ε̄ = √(d log(1/δ))/(nε), d = max(d_x, d_y) (Theorem 1), as the ERM schedule planned it."""
    if "plan_eps_bar" in runs and runs["plan_eps_bar"].notna().all():
        return runs["plan_eps_bar"].astype(float)
    d = np.maximum(runs["p_prob_d"], runs["p_prob_d_y"]).astype(float)
    return np.sqrt(d * np.log(1 / runs["delta"].astype(float))) / (runs["n"] * runs["epsilon"])


def _noise_ratio(runs: pd.DataFrame) -> pd.Series:
    """√d_x·std/C of DP-RGDA's refresh noise (its least noisy release, App. D) per run
    (d_x = 120 and App. D's C where the runs do not record them)."""
    d_x = (runs["p_prob_p"].fillna(20) + runs["p_prob_q"].fillna(20)) * \
        runs["p_prob_rank"].fillna(3) if "p_prob_p" in runs else pd.Series(120.0, runs.index)
    clip = runs["p_alg_clip"].astype(float) if "p_alg_clip" in runs else CLIP
    root_d = pd.Series(np.sqrt(d_x.astype(float)), index=runs.index)
    return root_d * runs["plan_std_refresh"].astype(float) / clip


def _param(runs: pd.DataFrame, name: str) -> pd.Series:
    """DP-RGDA's parameter ``name`` per run (its default where the run does not set it)."""
    return numeric(runs, f"p_alg_{name}", getattr(DPRGDA.Params(), name))


# -- statistics -----------------------------------------------------------------------------

def versus(metric: str, progress: bool = False) -> Statistic:
    """DP-RGDA's ``metric`` at x_T (``progress``: its 1 − Φ(x_T)/Φ(x₀)) minus the baseline's
    (÷ ``SLIGHTLY`` for progress), paired by seed (one x₀ per seed) else Welch (Table 2, §5.2).
    Diverged runs of either side are dropped: a diverged baseline is reported, never scored."""
    column = f"last_{metric}"

    def value(runs: pd.DataFrame, divide: float = 1.0) -> pd.Series:
        values = 1 - runs["phi_ratio"] if progress else runs[column]
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


def by_eps_bar(runs: pd.DataFrame, results: PaperResults) -> Sample:
    """Best-iterate ‖∇Φ‖ grouped by ε̄ (n fixed, ε swept): Theorem 1's rate in ε̄."""
    if runs.empty:
        return Sample.along({})
    frame = runs.assign(eps_bar=eps_bar(runs), best=best_iterate(runs, results))
    return Sample.along({as_float(e): part["best"].to_numpy(float)
                         for e, part in frame.groupby("eps_bar")})


def charged_as_app_d(runs: pd.DataFrame, _: PaperResults) -> Sample:
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


def data_share(runs: pd.DataFrame, results: PaperResults) -> Sample:
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


def progress(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
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


def clipping(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
    """C does not limit the method: the worst share clipped by the σ → 0 DP-RGDA reference
    at the same constants (the private runs' noise drives their partials far out)."""
    ref, _ = _reference(runs, results, OURS)
    found = _clipped(ref if len(ref) else _partner(runs, results, OURS), results)
    if not found:
        return None, "clipped fraction not recorded"
    return max(f[0] for f in found) <= MILD_CLIP, "; ".join(f[1] for f in found) + \
        f"; ≤ {MILD_CLIP:.0%} needed"


@needs("p_alg_theory_alpha", "final_grad_norm")
def binds(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """Theorem 1's bound binds: the measured ‖∇Φ(x_out)‖ is of the order of α = c_α ε̄^{2/3}."""
    share = runs["final_grad_norm"].astype(float) / (
        runs["p_alg_theory_alpha"].astype(float) * eps_bar(runs) ** RATE)
    certified = (f"; {float((runs['diag_certificates'] > 0).mean()):.0%} of runs certified"
                 if "diag_certificates" in runs else "")
    return float(share.median()) >= BINDS, TEXT.fill(
        "notes.binds", median=float(share.median()), low=share.min(), high=share.max(),
        certified=certified)


@needs("steps")
def horizon(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The steps taken (recorded, else planned) ≥ ⌈ε̄^{−4/3}⌉, Theorem 1's horizon (c_T = 1)."""
    recorded = "prem_steps_taken" in runs and runs["prem_steps_taken"].notna().all()
    taken = runs["prem_steps_taken" if recorded else "steps"].astype(float)
    need = np.ceil(eps_bar(runs) ** (-4 / 3))
    return not bool((short := taken < need).any()), TEXT.fill(
        "notes.horizon", how="taken" if recorded else "planned", short=int(short.sum()),
        taken=(taken.min(), taken.max()), need=(need.min(), need.max()), runs=len(runs))


def learns(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
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


def not_app_d(runs: pd.DataFrame, _: PaperResults) -> tuple[bool | None, str]:
    """The setting is not App. D's level, (2, 1e-6) under advanced composition (D1's)."""
    r = runs.iloc[0]
    if bool((np.isclose(runs["epsilon"].astype(float), APP_D[0])
             & np.isclose(runs["delta"].astype(float), APP_D[1])
             & runs["calibration"].eq("advanced")).all()):
        return False, TEXT["premises.subsumed.app_d"]
    return True, f"ε = {r['epsilon']:g} under {r['calibration']}"


def at_best_step(runs: pd.DataFrame, results: PaperResults) -> tuple[bool | None, str]:
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


# -- the regime: App. D's quantities, measured on our runs ----------------------------------

def noise_to_signal(results: PaperResults) -> str:
    """DP-RGDA's refresh noise-to-signal per ε and calibration (App. D's ≈ 133)."""
    runs = _ours(results)
    return "; ".join(f"{median_range(part)} at ε = {eps:g} ({cal})" for (eps, cal), part in
                     _noise_ratio(runs).groupby([runs["epsilon"], runs["calibration"]]))


def passes(results: PaperResults) -> str:
    """Passes over the n records DP-RGDA's batches draw (App. D: 40 refreshes of b₁ and
    1,960 increments of b₂)."""
    runs = _ours(results)
    refresh = np.ceil(_param(runs, "steps") / _param(runs, "period"))
    increments = _param(runs, "steps") * _param(runs, "inner_steps") - refresh
    samples = refresh * _param(runs, "batch_refresh") + increments * _param(runs, "batch_diff")
    return median_range(samples / runs["n"].astype(float))


def steps_reached(results: PaperResults) -> str:
    """T planned and how many Table 2 runs reach x_T (Table 2 reports x_399)."""
    runs = last_iterates(finished(results.role_runs("table2")), results)
    early, labels = early_stops(runs)
    return TEXT.fill("notes.steps", planned=median_range(runs["steps"]), labels=labels,
                     reached=len(runs) - len(early), runs=len(runs))


def y_step(results: PaperResults) -> str:
    """DP-RGDA's y-step × the y-curvature 1/n (App. D's λ = 0.8 at n = 400)."""
    runs = _ours(results)
    return median_range(_param(runs, "lr_y") / runs["n"].astype(float))
