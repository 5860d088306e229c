"""xu2026, DP RGDA: Table 2 and Figure 1 on matrix sensing — whether App. D's mechanism lets
Table 2 measure optimisation at all (D1), the comparisons where the baselines move (C1–C3,
P1; every method at x_T = x_399, its output beside it), App. D's privacy charging (A1),
Theorem 1's ERM rate (R1, one-sided on the best-iterate ‖∇Φ‖) and the §5 instance's strict
saddle (S1). Texts: paper.yaml; measures and thresholds: measures.py; tables and figures:
sections.py; studies (instance, data, sigma): bench/studies/xu2026.py.
Roles: ``table2`` (tuned private runs at App. D's level and at ours, with σ → 0 references
matched on every constant), ``table2_untuned``, ``table2_literal`` (labelled variants) and
``rate`` (the double-well rate check).
"""

from __future__ import annotations

from bench.studies.xu2026 import KEY, LITERAL, OURS, PRIVATE, PRIVATE_DIFF, SPIDERS, STUDIES
from reports.claims import Control, Paper, PaperSetting, Runs, Statistic, at_most, flag
from reports.papers.xu2026 import measures
from reports.papers.xu2026.measures import DATA_SHARE, LEFT, LEFT_SADDLE, SLIGHTLY, TEXT
from reports.papers.xu2026.sections import sections
from reports.rules import Always, AtLeast, AtMost, SlopeAtMost

CALIBRATIONS = ("advanced", "pld")

SUBSUMED = TEXT.premise("subsumed", measures.not_app_d)
DATA = TEXT.premise("data", measures.learns)
# The noise-to-signal ratio is not a premise: App. D's own calibration sets it (≈ 133 for
# DP-RGDA), so it is the paper's regime (the Regime table): failing there is contradicted.
TABLE2_PREMISES = (SUBSUMED, TEXT.premise("progress", measures.progress),
                   TEXT.premise("clipping", measures.clipping), DATA)
COMPARISON_PREMISES = (*TABLE2_PREMISES, TEXT.premise("tuned", measures.at_best_step))


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
                         "and seed)", measures.data_share),
               AtLeast(DATA_SHARE, "mean data share"), kind="paper", headline=True,
               setting=MATRIX_SENSING),
    TEXT.claim("C1", "Table 2", _table2_runs(*SPIDERS), measures.versus("loss"),
               AtMost(0.0, "mean paired difference of Φ(x_T)"), headline=True, **COMPARISON),
    TEXT.claim("C2", "Table 2", _table2_runs(PRIVATE_DIFF),
               measures.versus("loss", progress=True),
               AtLeast(0.0, f"mean paired difference of progress (DP-RGDA − PrivateDiff/"
                            f"{SLIGHTLY:g})"), **COMPARISON),
    TEXT.claim("C3", "Table 2", _table2_runs(*SPIDERS), measures.versus("lambda_min"),
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
               Statistic("charged per oracle call as App. D says", measures.charged_as_app_d),
               Always("ε (advanced) ≤ 2 and σ ≥ App. D's per-call σ"),
               include_diverged=True,  # a diverged run's ledger is as real as any other
               kind="implementation"),
    TEXT.claim("R1", "Theorem 1", Runs(("rate",), {"label": OURS}),
               Statistic("best-iterate ‖∇Φ(x_t)‖ by ε̄ (n fixed)", measures.by_eps_bar),
               SlopeAtMost(2 / 3, axis="ε̄"),
               (at_most(TEXT["premises.unclipped.name"], "prem_clipped_fraction", 0.0,
                        TEXT["premises.unclipped.remedy"], "share of per-sample partials clipped"),
                TEXT.premise("binds", measures.binds),
                TEXT.premise("horizon", measures.horizon)),
               kind="paper", headline=True),
    TEXT.claim("S1", "§5 (instance)", Runs(study="instance", by=("scale",)),
               flag("saddle_ok", "spectrum as predicted"),
               Always("∇²Φ(0) spectrum = ±σ_j(M₀), multiplicity r"), kind="design"),
)

# -- the regime: the paper's setting beside ours ---------------------------------------------

REGIME = (TEXT.regime("noise", measures.noise_to_signal, lead=True),
          TEXT.regime("steps", measures.steps_reached), TEXT.regime("passes", measures.passes),
          TEXT.regime("y_step", measures.y_step, lead=True))
ROLES = dict(TEXT.section("roles"))
RESOLUTIONS = tuple(tuple(r) for r in TEXT.texts["resolutions"])

PAPER = Paper(
    key=KEY, title=TEXT["title"], source=TEXT["source"], url="https://arxiv.org/abs/2602.01339",
    claims=CLAIMS, roles=ROLES, sections=sections, studies=STUDIES, regime=REGIME,
    resolutions=RESOLUTIONS, text=TEXT)
