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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench.scaling import ExponentCheck, ScalingFit
from bench.store import Store
from reports.tables import Comparison

STATUSES = ("held", "not held", "not run")
ARTEFACT_STATUSES = ("reproduced", "differs", "not run")
CLAIM_TO_ARTEFACT = {"held": "reproduced", "not held": "differs", "not run": "not run"}


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

    def provenance(self, runs: pd.DataFrame | None = None) -> Provenance:
        """Where the numbers computed from ``runs`` (default: every run) come from."""
        return Provenance.of(self.runs if runs is None else runs, self.scale)

    def curves(self, suite: str) -> pd.DataFrame:
        """Trajectory rows (iterates only) of a suite, joined with their run's settings."""
        runs = self.suite_runs(suite)
        if runs.empty or self.trajectories.empty:
            return pd.DataFrame()
        keep = ["run_id", "problem", "algorithm", "label", "epsilon", "calibration", "seed",
                "status", "steps", "n", "batch_size",
                *(c for c in runs if str(c).startswith("p_prob_"))]
        traj = self.trajectories[self.trajectories["point"] == "iterate"]
        return traj.merge(runs[[c for c in keep if c in runs]], on="run_id")


@dataclass(frozen=True)
class Provenance:
    """The runs behind a table or figure: their ids and suites, the git commits and code
    fingerprints that produced them, the package versions, and the scale."""

    scale: str
    run_ids: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    git_shas: tuple[str, ...] = ()
    code: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    computed: str = ""  # for numbers no run produced: how they were obtained

    @classmethod
    def of(cls, runs: pd.DataFrame, scale: str) -> Provenance:
        def values(column: str) -> tuple[str, ...]:
            return tuple(sorted({str(v) for v in runs[column].dropna()})) if column in runs \
                else ()
        return cls(scale, run_ids=values("run_id"), suites=values("suite"),
                   git_shas=values("git_sha"), code=values("code"), versions=values("versions"))

    def summary(self) -> str:
        """One line: run count, suites, commits, code, scale (versions are listed apart)."""
        if not self.run_ids:
            return " · ".join(t for t in (self.computed or "no runs",
                                          self.scale and f"scale {self.scale}") if t)
        return (f"{len(self.run_ids)} runs · suites {', '.join(self.suites)} · git "
                f"{', '.join(s[:10] for s in self.git_shas) or 'unknown'} · code "
                f"{', '.join(self.code) or 'unknown'} · scale {self.scale}")


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
    provenance: Provenance | None = None  # default: every run of the page


@dataclass
class PaperSections:
    """What a paper module contributes to its page."""

    settings: list[tuple[str, str]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    # {title, note, columns, rows} and optionally "provenance" (a Provenance; default: every
    # run of the page) and "row_runs" (the run ids behind each row, shown per row)
    tables: list[dict[str, Any]] = field(default_factory=list)
    deviations: list[tuple[str, str]] = field(default_factory=list)  # (algorithm, text)


def stored_suites(results_root: Path) -> list[tuple[dict[str, Any], Store]]:
    """(metadata, store) of every suite under ``results_root``."""
    stores = [Store(path.parent) for path in sorted(results_root.glob("*/suite.json"))]
    return [(store.suite(), store) for store in stores]


def collect(results_root: Path, paper: str, scale: str, trajectories: bool = True
            ) -> PaperResults:
    """Runs (and, with ``trajectories``, trajectories) of every suite under
    ``results_root`` for (paper, scale)."""
    suites, runs, curves = [], [], []
    for meta, store in stored_suites(results_root):
        if meta.get("paper") != paper or meta.get("scale") != scale:
            continue
        frame = store.runs()
        if frame.empty:
            continue
        suites.append(meta)
        runs.append(frame.assign(suite=meta["suite"]))
        if trajectories:
            curves.append(store.trajectories())
    return PaperResults(
        paper=paper, scale=scale, suites=suites,
        runs=pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
        trajectories=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame())


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


@dataclass(frozen=True)
class ScalingGroup:
    """One power-law fit of :func:`scaling_fits`: a group of finished runs of one suite,
    problem, label and calibration that differ only in n, d or ε. ``held`` lists the
    parameters that vary elsewhere in the suite with this group's values ('' if none)."""

    suite: str
    problem: str
    algorithm: str
    label: str
    calibration: str
    held: str
    fit: ScalingFit
    provenance: Provenance

    def checks(self, privacy_exponent: float | None) -> dict[str, ExponentCheck]:
        """Per fitted predictor, the check against the exponent a bound (√d/(nε))^a with
        a = ``privacy_exponent`` predicts (none without a rate)."""
        from bench.scaling import compare, declared_exponents

        declared = {} if privacy_exponent is None else declared_exponents(privacy_exponent)
        return {c.predictor: c for c in compare(self.fit, declared)}


def scaling_fits(results: PaperResults, metric: str = "grad_norm", min_runs: int = 6
                 ) -> list[ScalingGroup]:
    """Least-squares exponents of the final ``metric`` in n, d and ε (bench/scaling.py) for
    every group of finished runs that differ only there (at least ``min_runs`` runs and one
    predictor that varies); groups that cannot be fitted are left out."""
    from bench.scaling import fit_exponents

    runs = results.runs
    column = f"final_{metric}"
    if runs.empty or column not in runs:
        return []
    done = runs[(runs["status"] == "done") & runs["epsilon"].apply(math.isfinite)]
    fixed = [c for c in done if str(c).startswith(("p_prob_", "p_alg_"))
             and c not in (*SCALING_PREDICTORS, "p_prob_n")]
    keys = ["suite", "problem", "algorithm", "label", "calibration", *fixed]
    varied = {(str(k[0]), str(k[1])): [str(c) for c in fixed if part[c].nunique() > 1]
              for k, part in done.groupby(["suite", "label"]) if isinstance(k, tuple)}
    groups = []
    for _, part in done.groupby([k for k in keys if k in done], dropna=False):
        varying = [c for c in SCALING_PREDICTORS if c in part and part[c].nunique() > 1]
        if len(part) < min_runs or not varying:
            continue
        try:
            fit = fit_exponents(part.rename(columns=SCALING_PREDICTORS), column,
                                [SCALING_PREDICTORS[c] for c in varying])
        except ValueError:
            continue
        first = part.iloc[0]
        held = ", ".join(f"{c.split('_', 2)[-1]}={first[c]}"
                         for c in varied[(str(first["suite"]), str(first["label"]))]
                         if pd.notna(first[c]))
        groups.append(ScalingGroup(
            suite=str(first["suite"]), problem=str(first["problem"]),
            algorithm=str(first["algorithm"]), label=str(first["label"]),
            calibration=str(first["calibration"]), held=held, fit=fit,
            provenance=results.provenance(part)))
    return groups


def scaling_table(results: PaperResults, metric: str = "grad_norm", min_runs: int = 6
                  ) -> dict[str, Any] | None:
    """Fitted exponents of the final ``metric`` in n, d and ε beside those each algorithm's
    declared rate predicts (bench/scaling.py), one row per predictor of each group of
    :func:`scaling_fits`."""
    from algorithms import get_algorithm

    rows = []
    for group in scaling_fits(results, metric, min_runs):
        fit = group.fit
        rate = get_algorithm(group.algorithm).rate
        checks = group.checks(None if rate is None else rate.privacy_exponent)
        for p in fit.predictors:
            lo, hi = fit.intervals[p]
            check = checks.get(p)
            rows.append([group.suite, group.label, group.calibration, group.held or "–", p,
                         f"{fit.exponents[p]:+.3f}", f"[{lo:+.3f}, {hi:+.3f}]",
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
    return {"provenance": Provenance("", computed=f"as printed in the paper, from "
                                                  f"reports/published/{paper}.yaml"),
            "title": f"Utility bounds ({published.rates[0].table}; "
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


def worst(statuses: Sequence[str]) -> str:
    """An artefact's status from its parts': differs if any differs, else reproduced if any
    ran, else not run."""
    for status in ("differs", "reproduced"):
        if status in statuses:
            return status
    return "not run"


def artefacts(claims: Sequence[Claim], targets: Mapping[str, str],
              comparisons: Sequence[Comparison]) -> list[dict[str, Any]]:
    """Each table, figure or theorem of the paper that our runs check, with its status
    (reproduced / differs / not run) from the claims about it (``targets``: claim id →
    artefact) and its published numbers, and the Δ of those numbers."""
    parts: dict[str, list[tuple[str, str]]] = {}
    by_id: dict[str, list[str]] = {}
    for claim in claims:
        by_id.setdefault(claim.id, []).append(CLAIM_TO_ARTEFACT[claim.status])
    for cid, statuses in by_id.items():
        ran = [s for s in statuses if s != "not run"]
        name = f"claim {cid}" + (f" ({ran.count('reproduced')}/{len(ran)} settings held)"
                                 if len(ran) > 1 else "")
        parts.setdefault(targets.get(cid, "other claims"), []).append((name, worst(statuses)))
    numbers: dict[str, list[Comparison]] = {}
    for c in comparisons:
        numbers.setdefault(c.entry.table or c.entry.figure or "published numbers", []).append(c)
    for target, group in numbers.items():
        counts = ", ".join(f"{n} {s}" for s in ARTEFACT_STATUSES
                           if (n := sum(c.status == s for c in group)))
        parts.setdefault(target, []).append((f"{len(group)} published numbers ({counts})",
                                             worst([c.status for c in group])))
    out = []
    for target in sorted(parts):
        measured = [c for c in numbers.get(target, []) if c.delta is not None]
        delta = ""
        if measured:
            far = max(measured,
                      key=lambda c: abs(c.delta or 0.0) / max(abs(c.entry.value), 1e-12))
            delta = (f"{sum(c.status == 'reproduced' for c in measured)}/{len(measured)} "
                     "published "
                     f"numbers reproduced; largest Δ {far.delta:+.3g} ({far.entry.id}: "
                     f"{far.entry.value:g} published)")
        out.append({"target": target, "status": worst([s for _, s in parts[target]]),
                    "delta": delta,
                    "parts": [{"name": n, "status": s} for n, s in parts[target]]})
    return out


def _with_provenance(sections: PaperSections, results: PaperResults) -> None:
    everything = results.provenance()
    for table in sections.tables:
        table.setdefault("provenance", everything)
    sections.figures = [f if f.provenance else replace(f, provenance=everything)
                        for f in sections.figures]


def build_paper_page(paper: str, scale: str, results_root: Path, out: Path) -> Path:
    """Render ``out/index.html`` for (paper, scale) from stored results, with its
    ``status.json`` (claims and artefacts, for the site's index) and ``provenance.json``."""
    from reports.latex import export_page
    from reports.published import published_for
    from reports.render import html_env
    from reports.tables import compare

    module = importlib.import_module(f"reports.papers.{paper}")
    results = collect(results_root, paper, scale)
    out.mkdir(parents=True, exist_ok=True)
    sections: PaperSections = module.build(results, out)
    scaling = scaling_table(results)
    if scaling:
        sections.tables.append(scaling)
    _with_provenance(sections, results)
    published = published_for(paper)
    comparisons = compare(published, results.runs) if published and len(results.runs) else []
    status = artefacts(sections.claims, getattr(module, "TARGETS", {}), comparisons)
    html = html_env().get_template("paper.html.j2").render(
        paper=paper, title=module.TITLE, source=module.SOURCE, scale=scale,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        suites=results.suites, n_runs=len(results.runs),
        counts=results.runs["status"].value_counts().to_dict() if len(results.runs) else {},
        provenance=results.provenance(), artefacts=status, sections=sections,
        resolutions=module.RESOLUTIONS,
        runs=results.runs.to_dict("records") if len(results.runs) else [],
    )
    (out / "index.html").write_text(html)
    export_page(out, f"{module.TITLE} ({paper}, {scale})", sections.tables,
                [(Path(f.path).with_suffix(".pdf").as_posix(), f.caption)
                 for f in sections.figures])
    (out / "status.json").write_text(json.dumps({
        "paper": paper, "title": module.TITLE, "scale": scale, "runs": len(results.runs),
        "claims": [asdict(c) for c in sections.claims], "artefacts": status}, indent=1))
    (out / "provenance.json").write_text(json.dumps({
        "page": asdict(results.provenance()),
        "tables": {t["title"]: {**asdict(t["provenance"]), "row_runs": t.get("row_runs")}
                   for t in sections.tables},
        "figures": {f.path: asdict(f.provenance) for f in sections.figures if f.provenance}},
        indent=1))
    return out
