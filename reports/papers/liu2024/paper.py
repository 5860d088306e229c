"""liu2024, adaptive-batch SpiderBoost with the tree mechanism, declared once as
:data:`PAPER`: a theory paper without experiments, so its claims are checked on the suite's
designs E1–E4 (notes §5). Its prose (statements, premises, roles, regime, resolutions,
tables, captions) is in ``paper.yaml``; the roles there say which suites feed which claim.
Its own measures, premise checks and statistics are in measures.py, its tables and figures
in sections.py.

E1 (Algorithm 2 alone) and the noise part of E4(i) are studies (bench/studies/liu2024.py)
that ``saddlebench reproduce`` runs and stores; the page only reads them. Why E2's last
iterates cannot separate SOSP from FOSP methods at quick scale, and so why claim E2b scores
the FOSP methods' own output rule (a uniformly random iterate), is the "why results differ"
table's row ``fosp``, with its numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pandas as pd

from bench.studies import liu2024 as studies
from reports.claims import Claim, Control, Paper, Premise, Runs, Statistic, at_most, flag
from reports.papers.liu2024 import measures as m
from reports.papers.liu2024.measures import (
    AT_SPENT,
    E1,
    E4I,
    GROWTH_LIMIT,
    IOTA,
    PRIVACY_SHARE,
    SLACK,
    SOSP_METHODS,
    TEXT,
)
from reports.papers.liu2024.sections import sections
from reports.rules import Always, AtLeast, AtMost, Fraction, SlopeAtMost

RESOLUTIONS = tuple((TEXT[f"resolutions.{key}.where"], TEXT[f"resolutions.{key}.paper"],
                     TEXT[f"resolutions.{key}.ours"]) for key in TEXT.section("resolutions"))
ROLES = {role: TEXT[f"roles.{role}"] for role in TEXT.section("roles")}


# -- premises -----------------------------------------------------------------------------------

def _bound(key: str, column: str, bound: str) -> Premise:
    return at_most(TEXT[f"premises.{key}.name"], column, bound, TEXT[f"premises.{key}.remedy"],
                   TEXT[f"premises.{key}.what"])


ASSUMPTION = (_bound("gradient_bound", "prem_max_per_sample_norm", "prem_clip_bound"),
              _bound("difference_bound", "prem_max_per_sample_norm_diff",
                     "prem_clip_bound_diff"))
CENSORING = TEXT.premise("censoring", m.censoring_bounded)
ADAPTIVE_CERTIFIED = TEXT.premise("adaptive_certified", m.adaptive_certified)
PRIVACY_DOMINATES = TEXT.premise("privacy_dominates", m.privacy_dominates(1.0))
PRIVACY_DOMINATES_CHAIN = TEXT.premise("privacy_dominates_chain",
                                       m.privacy_dominates(PRIVACY_SHARE))
CERTIFICATES_SCALE = TEXT.premise("certificates_scale", m.certificates_scale)
ESCAPES = TEXT.premise("escapes", m.escape_triggers)
CERTIFICATE_OR_HORIZON = TEXT.premise("certificate_or_horizon", m.certificate_or_horizon)
REFERENCE_ESCAPES = TEXT.premise("reference_escapes", m.reference_escapes)
SADDLE_HOLDS = TEXT.premise("saddle_holds", m.saddle_holds)

SOSP_SHARE = Statistic("outputs that are Õ(α)-SOSPs", m.sosp_share)
WITHIN_TARGET = Always("realised ε (PLD) ≤ target ε")


# -- claims -------------------------------------------------------------------------------------

def _control(claim_id: str, runs: Runs, statistic: Statistic, rule: Any) -> Control:
    return Control(TEXT[f"claims.{claim_id}.control.name"], runs,
                   TEXT[f"claims.{claim_id}.control.expect"], statistic, rule)


def _separation_claim(claim_id: str, role: str, *controls: Control) -> Claim:
    """E2b at one output rule of the FOSP methods (the runs of ``role``) against Alg 3-R's
    certified outputs in E2 (``measures.reference``)."""
    return TEXT.claim(
        claim_id, "§1.2 (SOSP vs FOSP)", Runs(roles=(role,), where={"label": m.is_fosp},
                                              by=("label", "p_prob_lam")),
        Statistic("share of Õ(α)-SOSP outputs, Alg 3-R − FOSP method", m.separation),
        AtLeast(0.0, "share of SOSPs, Alg 3-R − FOSP"),
        premises=(REFERENCE_ESCAPES, SADDLE_HOLDS), controls=controls, kind="design")


def _rate_claims(claim_id: str, runs: Runs, axis: str, rule: SlopeAtMost,
                 premises: tuple[Premise, ...]) -> tuple[Claim, Claim]:
    """A rate claim at the theorem's τ (the paper's) and its twin at our repaired τ (a
    finding about the repair, kind design), side by side."""
    def at(label: str) -> Runs:
        return replace(runs, where={**runs.where, "label": label})

    return (TEXT.claim(claim_id, "Theorem 3.17 (rate)", at("spider_sosp_paper_tau"),
                       m.samples_along(axis), rule, premises=premises, kind="paper",
                       headline=True),
            TEXT.claim(f"{claim_id}-R", "Theorem 3.17 (rate)", at("spider_sosp"),
                       m.samples_along(axis), rule, premises=premises, kind="design"))


def _study(anchor: str, ratio: Callable[[pd.Series], pd.Series], **where: Any) -> Runs:
    """E1's trials from ``anchor`` at the curvature ratios ``ratio`` keeps."""
    return Runs(study=E1, where={"anchor": anchor, "ratio": ratio, **where}, by=("d", "ratio"))


def _theorem_batches(calibration: str) -> Runs:
    """E4's runs at Theorem 3.17's batches, with σ from ``calibration``."""
    return Runs(roles=("e4",), where={"p_alg_parameters": "paper", "calibration": calibration},
                by=("epsilon", "p_alg_tau"))


E3_PREMISES = (CERTIFICATES_SCALE, PRIVACY_DOMINATES_CHAIN, CENSORING, *ASSUMPTION)
E3_EPS_PREMISES = (PRIVACY_DOMINATES, CENSORING, *ASSUMPTION)

CLAIMS = (
    TEXT.claim("7", "Theorem 3.4", _study("saddle", lambda r: r >= 1),
               flag("escaped", "escape within Γ"),
               Fraction(1 - IOTA, event="escape within Γ"), kind="paper"),
    TEXT.claim("8", "Lemma 3.8", _study("saddle", lambda r: r >= 1, escaped=True),
               Statistic("escaped trials with F(x_a) − F(y) ≥ Φ", m.decrease),
               Fraction(1 - IOTA, event="decrease ≥ Φ"), kind="paper"),
    TEXT.claim("S1", "Theorem 3.4", _study("minimum", lambda r: r > 0),
               flag("escaped", "false escape"), Fraction(IOTA, below=True, event="false escape"),
               kind="design"),
    TEXT.claim("4", "Theorem 2.2 (tree)", Runs(study=E4I), m.growth("tree"),
               AtMost(GROWTH_LIMIT, "mean growth"), kind="paper",
               controls=(_control("4", Runs(study=E4I), m.growth("gaussian"),
                                  AtLeast(GROWTH_LIMIT, "mean growth")),)),
    TEXT.claim("E2a", "§1.2 (SOSP vs FOSP)",
               Runs(roles=("e2",), where={"label": list(SOSP_METHODS)},
                    by=("label", "p_prob_lam")),
               SOSP_SHARE, Fraction(1 - IOTA, event="Õ(α)-SOSP output"),
               premises=(ESCAPES, CERTIFICATE_OR_HORIZON, *ASSUMPTION), kind="paper",
               headline=True),
    _separation_claim("E2b", "e2_uniform"),
    _separation_claim("E2b-last", "e2", _control(
        "E2b-last", Runs(roles=("e2",), where={"label": AT_SPENT}), SOSP_SHARE,
        Fraction(0.5, event="Õ(α)-SOSP output"))),
    *_rate_claims("E3", Runs(roles=("e3_chain",), by=("epsilon", "p_prob_d")), "p_alg_alpha",
                  SlopeAtMost(2.0, axis="α", axis_grows_bound=False, slack=SLACK), E3_PREMISES),
    *_rate_claims("E3ε", Runs(roles=("e3",), by=("p_alg_alpha", "p_prob_d")), "epsilon",
                  SlopeAtMost(1.0, axis="ε", axis_grows_bound=False), E3_EPS_PREMISES),
    TEXT.claim("11", "§1 (adaptive batches)",
               Runs(roles=("e4",), where={"label": "fixed_batches"}),
               Statistic("samples to the first certificate, fixed − adaptive",
                         m.fixed_minus_adaptive),
               AtLeast(0.0, "samples, fixed − adaptive"),
               premises=(ADAPTIVE_CERTIFIED, *ASSUMPTION), kind="paper"),
    TEXT.claim("1", "Theorem 3.17 (privacy)", _theorem_batches("paper"),
               Statistic("realised ε (PLD) ≤ target", m.theorem_privacy), WITHIN_TARGET,
               premises=ASSUMPTION, kind="paper", headline=True),
    TEXT.claim("1U", "Theorem 3.17 (privacy)", _theorem_batches("pld"),
               Statistic("runs with a certificate within T_thm", m.certified_in_horizon),
               Fraction(1 - IOTA, event="certificate within T_thm"),
               premises=(CERTIFICATE_OR_HORIZON, *ASSUMPTION), kind="design"),
    TEXT.claim("1R", "Theorem 3.17 (privacy)",
               Runs(roles=("e2", "e3", "e3_chain", "e4"),
                    where={"algorithm": "spider_sosp", "calibration": lambda c: c != "paper"},
                    by=("label",)),
               Statistic("realised ε (PLD) ≤ target", m.within_target), WITHIN_TARGET,
               premises=ASSUMPTION, kind="design"),
)

# The paper's setting beside ours.
REGIME = (TEXT.regime("sigma", m.theorem_sigma, lead=True),
          TEXT.regime("curvature", m.e2_ratio),
          TEXT.regime("stalled", m.fosp_at_saddle),
          TEXT.regime("privacy", m.e3_privacy, lead=True),
          TEXT.regime("steps", m.chain_steps, lead=True),
          TEXT.regime("spent", m.spent_share))

PAPER = Paper(key="liu2024", title=TEXT["paper.title"], source=TEXT["paper.source"],
              claims=CLAIMS, roles=ROLES, sections=sections, resolutions=RESOLUTIONS,
              studies={E1: studies.e1_escape, E4I: studies.e4_noise_growth}, regime=REGIME,
              text=TEXT)
