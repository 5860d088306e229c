"""One page per paper: its runs at one scale, figures drawn as the paper draws them, the
paper's checkable claims (held / not held / not run, with the numbers), every resolved
ambiguity, and ε as the paper computes it beside the accountants' ε.

A paper module in ``reports/papers/<paper>.py`` provides ``TITLE``, ``RESOLUTIONS`` and
``build(results, out) -> PaperSections``; this module collects the results and renders.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench.store import Store

STATUSES = ("held", "not held", "not run")


@dataclass
class PaperResults:
    """Every run of one paper at one scale: one row per run, and all trajectory rows."""

    paper: str
    scale: str
    suites: list[dict[str, Any]]
    runs: pd.DataFrame
    trajectories: pd.DataFrame

    def suite_runs(self, name: str) -> pd.DataFrame:
        return self.runs[self.runs["suite"] == name] if not self.runs.empty else self.runs

    def curves(self, suite: str) -> pd.DataFrame:
        """Trajectory rows (iterates only) of a suite, joined with their run's settings."""
        runs = self.suite_runs(suite)
        if runs.empty or self.trajectories.empty:
            return pd.DataFrame()
        keep = ["run_id", "problem", "label", "epsilon", "calibration", "seed", "status",
                "steps", "n", "batch_size", *(c for c in runs if str(c).startswith("p_prob_"))]
        traj = self.trajectories[self.trajectories["point"] == "iterate"]
        return traj.merge(runs[[c for c in keep if c in runs]], on="run_id")


@dataclass(frozen=True)
class Claim:
    """A checkable claim of the paper and what our runs say about it."""

    id: str
    statement: str
    setting: str
    status: str
    evidence: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"claim status must be one of {STATUSES}")


@dataclass(frozen=True)
class Figure:
    path: str
    caption: str


@dataclass
class PaperSections:
    """What a paper module contributes to its page."""

    settings: list[tuple[str, str]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)  # {title, note, columns, rows}
    deviations: list[tuple[str, str]] = field(default_factory=list)  # (algorithm, text)


def collect(results_root: Path, paper: str, scale: str) -> PaperResults:
    """Runs and trajectories of every suite under ``results_root`` for (paper, scale)."""
    suites, runs, trajectories = [], [], []
    for meta_path in sorted(results_root.glob("*/suite.json")):
        meta = json.loads(meta_path.read_text())
        if meta.get("paper") != paper or meta.get("scale") != scale:
            continue
        store = Store(meta_path.parent)
        frame = store.runs()
        if frame.empty:
            continue
        suites.append(meta)
        runs.append(frame.assign(suite=meta["suite"]))
        trajectories.append(store.trajectories())
    return PaperResults(
        paper=paper, scale=scale, suites=suites,
        runs=pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
        trajectories=pd.concat(trajectories, ignore_index=True) if trajectories
        else pd.DataFrame())


def docstring_section(module: str, heading: str) -> str:
    """The paragraph(s) of a module docstring that follow a line starting with ``heading``."""
    doc = importlib.import_module(module).__doc__ or ""
    match = re.search(rf"^{re.escape(heading)}.*?$\n(.*)", doc, flags=re.M | re.S)
    return match.group(1).strip() if match else ""


def bullet_items(text: str) -> list[str]:
    """'* item' paragraphs of a docstring section as single-line strings."""
    items = re.split(r"^\* ", text, flags=re.M)
    return [" ".join(part.split()) for part in items if part.strip()]


def final_stats(runs: pd.DataFrame, metric: str, by: str = "epsilon") -> pd.DataFrame:
    """Mean, s.e. and count of the final ``metric`` over finished runs, per value of ``by``."""
    done = runs[runs["status"] == "done"] if len(runs) else runs
    col = f"final_{metric}"
    if col not in done or done.empty:
        return pd.DataFrame(columns=[by, "mean", "se", "runs"])
    grouped = done.groupby(by)[col]
    return pd.DataFrame({"mean": grouped.mean(), "se": grouped.sem(),
                         "runs": grouped.size()}).reset_index()


def mean_se(values: pd.Series) -> tuple[float, float]:
    """Mean and standard error of ``values`` (nan where undefined)."""
    numbers = values.to_numpy(dtype=float)
    if not len(numbers):
        return math.nan, math.nan
    se = float(numbers.std(ddof=1) / math.sqrt(len(numbers))) if len(numbers) > 1 else math.nan
    return float(numbers.mean()), se


def format_mean_se(mean: float, se: float | None) -> str:
    """'mean ± se' (4 and 2 significant digits); '–' for no value."""
    if math.isnan(mean):
        return "–"
    if not math.isfinite(mean):
        return f"{mean:g}"
    return f"{mean:.4g}" + ("" if se is None or not math.isfinite(se) else f" ± {se:.2g}")


def save_figure(fig: Any, out: Path, stem: str, dpi: int = 130) -> str:
    """Write ``fig`` as ``out/stem.png`` and ``.pdf``, close it, return the PNG's name."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(out / f"{stem}.{ext}", dpi=dpi)
    plt.close(fig)
    return f"{stem}.png"


def settings(results: PaperResults) -> list[tuple[str, str]]:
    """Each suite's description with what actually ran (algorithms, ε, δ, seeds)."""
    out = []
    for meta in results.suites:
        runs = results.suite_runs(meta["suite"])
        algs = ", ".join(sorted(runs["label"].unique()))
        eps = ", ".join(f"{e:g}" for e in sorted(runs["epsilon"].unique()))
        out.append((meta["suite"], f"{meta.get('description', '').strip()} "
                    f"[algorithms: {algs}; ε: {eps}; δ: {runs['delta'].iloc[0]:g}; "
                    f"seeds: {runs['seed'].nunique()}; calibrations: "
                    f"{', '.join(sorted(runs['calibration'].unique()))}]"))
    return out


Column = tuple[str, Callable[[pd.Series], str]]


def calibration_table(results: PaperResults, note: str,
                      extra: Sequence[Column] = ()) -> dict[str, Any] | None:
    """ε as the paper computes it beside the accountant, for every paper-calibrated setting."""
    runs = results.runs
    if runs.empty or "plan_sigma_tight" not in runs:
        return None
    paper = runs[(runs["calibration"] == "paper") & runs["plan_sigma_tight"].notna()]
    rows = []
    for (suite, problem, label, eps), part in paper.groupby(["suite", "problem", "label",
                                                             "epsilon"]):
        r = part.iloc[0]
        rows.append([suite, problem, label, f"{eps:g}", f"{r['n']:g}", f"{r['batch_size']:g}",
                     f"{r['steps']:g}", f"{r['sigma']:.4g}", f"{r['plan_sigma_tight']:.4g}",
                     f"{r['plan_noise_ratio_tight_over_paper']:.3g}",
                     "–" if pd.isna(r["eps_paper"]) else f"{r['eps_paper']:.4g}",
                     f"{r['eps_pld']:.4g}", *(fn(r) for _, fn in extra)])
    return {"title": "ε as the paper computes it vs the accountant", "note": note,
            "columns": ["suite", "problem", "algorithm", "ε target", "n", "batch", "T",
                        "σ paper", "σ tight", "σ tight / σ paper", "ε paper", "ε PLD (spent)",
                        *(name for name, _ in extra)],
            "rows": rows}


SCALING_PREDICTORS = {"n": "n", "p_prob_d": "d", "epsilon": "epsilon"}


def scaling_table(results: PaperResults, metric: str = "grad_norm", min_runs: int = 6
                  ) -> dict[str, Any] | None:
    """Fitted exponents of the final ``metric`` in n, d and ε beside those each algorithm's
    declared rate predicts (bench/scaling.py), for every group of finished runs that differ
    only in n, d or ε (at least ``min_runs`` runs and one predictor that varies)."""
    from algorithms import get_algorithm
    from bench.scaling import compare, declared_exponents, fit_exponents

    runs = results.runs
    column = f"final_{metric}"
    if runs.empty or column not in runs:
        return None
    done = runs[(runs["status"] == "done") & runs["epsilon"].apply(math.isfinite)]
    fixed = [c for c in done if str(c).startswith(("p_prob_", "p_alg_"))
             and c not in (*SCALING_PREDICTORS, "p_prob_n")]
    keys = ["suite", "problem", "algorithm", "label", "calibration", *fixed]
    varied = {(str(k[0]), str(k[1])): [str(c) for c in fixed if part[c].nunique() > 1]
              for k, part in done.groupby(["suite", "label"]) if isinstance(k, tuple)}
    rows = []
    for key, part in done.groupby([k for k in keys if k in done], dropna=False):
        varying = [c for c in SCALING_PREDICTORS if c in part and part[c].nunique() > 1]
        if len(part) < min_runs or not varying:
            continue
        frame = part.rename(columns=SCALING_PREDICTORS)
        try:
            fit = fit_exponents(frame, column, [SCALING_PREDICTORS[c] for c in varying])
        except ValueError:
            continue
        rate = get_algorithm(str(part["algorithm"].iloc[0])).rate
        declared = (declared_exponents(rate.privacy_exponent)
                    if rate is not None and rate.privacy_exponent is not None else {})
        checks = {c.predictor: c for c in compare(fit, declared)}
        for p in fit.predictors:
            lo, hi = fit.intervals[p]
            check = checks.get(p)
            held = ", ".join(f"{c.split('_', 2)[-1]}={part[c].iloc[0]}"
                             for c in varied[(str(part["suite"].iloc[0]),
                                              str(part["label"].iloc[0]))]
                             if pd.notna(part[c].iloc[0]))
            rows.append([key[0], str(part["label"].iloc[0]), str(part["calibration"].iloc[0]),
                         held or "–", p, f"{fit.exponents[p]:+.3f}", f"[{lo:+.3f}, {hi:+.3f}]",
                         "–" if check is None else f"{check.declared:+.3f}",
                         "–" if check is None else ("inside" if check.inside else "outside"),
                         f"{fit.points}", f"{fit.r2:.2f}"])
    if not rows:
        return None
    return {"title": f"Scaling of the final {metric.replace('_', ' ')} in n, d and ε",
            "note": "Least-squares exponents of log(final metric) on log n, log d, log ε over "
                    "runs that differ only there (95 % bootstrap intervals over runs), beside "
                    "the exponents each algorithm's declared rate (√d/(nε))^a predicts while "
                    "its privacy term dominates: −a in n and ε, a/2 in d (bench/scaling.py). "
                    "'outside': the declared exponent is not in the interval.",
            "columns": ["suite", "method", "calibration", "held fixed", "predictor", "fitted",
                        "95 % CI",
                        "declared", "declared vs CI", "runs", "R²"], "rows": rows}


def rates_table(paper: str) -> dict[str, Any] | None:
    """A paper's table of utility bounds from reports/published/<paper>.yaml."""
    from reports.published import published_for

    published = published_for(paper)
    if published is None or not published.rates:
        return None
    rows = [[r.method, r.problem, r.objective, r.bound, f"{r.privacy_exponent:.3g}",
             "–" if r.sample_exponent is None else f"{r.sample_exponent:.3g}",
             "✓" if r.sosp else "✗", r.algorithm or "–", r.note] for r in published.rates]
    return {"title": f"Utility bounds ({published.rates[0].table}; "
                     f"reports/published/{paper}.yaml)",
            "note": "Exponents: of √d/(nε) and of 1/n in the bound. 'ours': the registered "
                    "implementation.",
            "columns": ["method", "problem", "objective", "bound", "exp. √d/(nε)",
                        "exp. 1/n", "SOSP", "ours", "note"], "rows": rows}


def deviations(sources: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """(name, item) for every bullet under ``heading`` in each (name, module, heading)."""
    return [(name, item) for name, module, heading in sources
            for item in bullet_items(docstring_section(module, heading))]


def z_score(a_mean: float, a_se: float, b_mean: float, b_se: float) -> float:
    """The gap a − b in units of its standard error √(se_a² + se_b²)."""
    return (a_mean - b_mean) / math.sqrt(a_se**2 + b_se**2)


def build_paper_page(paper: str, scale: str, results_root: Path, out: Path) -> Path:
    """Render ``out/index.html`` for (paper, scale) from stored results."""
    from reports.render import html_env

    module = importlib.import_module(f"reports.papers.{paper}")
    results = collect(results_root, paper, scale)
    out.mkdir(parents=True, exist_ok=True)
    sections: PaperSections = module.build(results, out)
    scaling = scaling_table(results)
    if scaling:
        sections.tables.append(scaling)
    html = html_env().get_template("paper.html.j2").render(
        paper=paper, title=module.TITLE, source=module.SOURCE, scale=scale,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        suites=results.suites, n_runs=len(results.runs),
        counts=results.runs["status"].value_counts().to_dict() if len(results.runs) else {},
        git_shas=sorted({str(s) for s in results.runs.get("git_sha", pd.Series()).dropna()}),
        sections=sections, resolutions=module.RESOLUTIONS,
    )
    (out / "index.html").write_text(html)
    (out / "status.json").write_text(json.dumps({
        "paper": paper, "title": module.TITLE, "scale": scale, "runs": len(results.runs),
        "claims": [asdict(c) for c in sections.claims]}, indent=1))
    return out
