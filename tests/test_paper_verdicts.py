"""Verdicts that answer for the paper (issue 36): claim kinds, stand-ins, headline claims,
the bottom line, and the rules that decide paired, trend and "no worse" claims — each rule
with known answers in both directions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reports.claims import (
    KINDS,
    Claim,
    ClaimResult,
    PaperSetting,
    PremiseCheck,
    Runs,
    SettingResult,
    difference,
    flag,
    paired_or_welch,
)
from reports.index import matrix_markdown, paper_statuses
from reports.paper import artefact_verdict, artefacts, bottom_line, findings
from reports.papers import get_paper, paper_keys
from reports.published import Entry
from reports.rules import Always, AtLeast, NonInferior, Sample, Trend
from reports.tables import Comparison

RNG = np.random.default_rng(20261128)
TABLE_9 = Entry(id="t9-a", value=1.0, statistic="mean", match={"metric": "loss"},
                table="Table 9")


# -- rules --------------------------------------------------------------------------------

def test_pairing_by_seed_removes_the_shared_seed_noise() -> None:
    """Seed effects (data subset, initialisation) shared by both methods swamp a Welch
    test; the paired test sees the +0.3 the treatment adds in every seed."""
    seeds = np.arange(10)
    shared = pd.Series(RNG.normal(0, 3, 10), index=seeds)
    treatment, reference = shared + 0.3 + RNG.normal(0, 0.05, 10), shared
    paired = paired_or_welch(treatment, reference)
    assert paired.paired and len(paired.values) == 10
    assert AtLeast(0.0).decide(paired).verdict == "held"
    welch = Sample.of(treatment.to_numpy(), reference.to_numpy())
    assert AtLeast(0.0).decide(welch).verdict == "inconclusive"
    worse = paired_or_welch(shared - 0.3 + RNG.normal(0, 0.05, 10), reference)
    assert AtLeast(0.0).decide(worse).verdict == "contradicted"
    assert "10 seed pairs" in AtLeast(0.0).decide(paired).text


def test_runs_that_do_not_pair_fall_back_to_welch() -> None:
    duplicated = pd.Series([1.0, 2.0, 3.0], index=[0, 0, 1])
    sample = paired_or_welch(duplicated, pd.Series([1.0, 2.0], index=[0, 1]))
    assert not sample.paired and sample.reference is not None
    one_shared = paired_or_welch(pd.Series([1.0, 2.0], index=[0, 1]),
                                 pd.Series([1.0, 2.0], index=[1, 2]))
    assert not one_shared.paired


def test_difference_pairs_the_labels_of_a_setting_by_seed() -> None:
    runs = pd.DataFrame({"label": ["a"] * 4 + ["b"] * 4, "seed": [0, 1, 2, 3] * 2,
                         "final_acc": [0.5, 0.6, 0.7, 0.8, 0.4, 0.5, 0.6, 0.7]})
    sample = difference("acc", "a", "b", scale=100, unit="pp").compute(runs, None)  # type: ignore[arg-type]
    assert sample.paired and np.allclose(sample.values, 10.0)
    assert AtLeast(0.0).decide(sample).verdict == "held"


@pytest.mark.parametrize(("slope", "verdict"), [(2.0, "held"), (-2.0, "contradicted"),
                                                (0.0, "inconclusive")])
def test_trend_decides_improves_with_the_axis(slope: float, verdict: str) -> None:
    groups = {e: slope * np.log2(e) + RNG.normal(0, 0.5, 8) for e in (0.5, 1.0, 2.0, 4.0)}
    if slope == 0.0:  # exactly flat means: no slope to show either way
        groups = {e: np.array([-1.0, 1.0] * 4) for e in (0.5, 1.0, 2.0, 4.0)}
    decision = Trend(True, "ε").decide(Sample.along(groups, unit="pp"))
    assert decision.verdict == verdict
    assert "per doubling of ε" in decision.text


def test_trend_with_a_margin_tests_does_not_fall_by_more_than_it() -> None:
    groups = {m: -0.3 * np.log2(m) + RNG.normal(0, 0.2, 10) for m in (1.0, 2.0, 4.0, 8.0)}
    sample = Sample.along(groups)
    assert Trend(True, "m").decide(sample).verdict == "contradicted"  # it does fall a little
    assert Trend(True, "m", margin=1.0, source="a-priori 1 pp").decide(sample).verdict == "held"
    steep = Sample.along({m: -3.0 * np.log2(m) + RNG.normal(0, 0.2, 10)
                          for m in (1.0, 2.0, 4.0, 8.0)})
    assert Trend(True, "m", margin=1.0).decide(steep).verdict == "contradicted"
    falling = Sample.along({e: -2.0 * np.log2(e) + RNG.normal(0, 0.2, 6)
                            for e in (1.0, 2.0, 4.0)})
    assert Trend(False, "ε").decide(falling).verdict == "held"


@pytest.mark.parametrize(("shift", "higher", "verdict"), [
    (-0.2, True, "held"), (-3.0, True, "contradicted"),
    (0.2, False, "held"), (3.0, False, "contradicted")])
def test_non_inferiority_within_and_beyond_the_declared_margin(shift: float, higher: bool,
                                                               verdict: str) -> None:
    reference = {s: float(v) for s, v in enumerate(RNG.normal(50, 2, 12))}
    treatment = {s: v + shift + float(RNG.normal(0, 0.1)) for s, v in reference.items()}
    rule = NonInferior(1.0, "the paper's 'within 1 pp' (§5)", higher_is_better=higher)
    decision = rule.decide(Sample.pairs(treatment, reference))
    assert decision.verdict == verdict
    assert "margin 1: the paper's 'within 1 pp' (§5)" in decision.text
    assert "margin from the paper's 'within 1 pp' (§5)" in rule.describe()


# -- kinds, stand-ins, artefacts ----------------------------------------------------------

def result(claim_id: str, checks: str, verdict: str, kind: str = "paper",
           stand_in: str = "", headline: bool = False,
           failed: PremiseCheck | None = None) -> ClaimResult:
    claim = Claim(claim_id, f"statement {claim_id}", checks, Runs(), flag("x"), Always(),
                  kind=kind, where=f"§{claim_id}", headline=headline)
    premises = (failed,) if failed else ()
    settings = (SettingResult("s", verdict, None, premises, 3, 0, ()),)
    return ClaimResult(claim, verdict, settings, (), stand_in)


def test_every_claim_of_every_registered_paper_declares_its_kind_and_location() -> None:
    for key in paper_keys():
        for claim in get_paper(key).claims:
            assert claim.kind in KINDS, f"{key} {claim.id}: kind {claim.kind!r}"
            assert claim.where.strip(), f"{key} {claim.id}: no location"
            assert not claim.problems()


def test_a_claim_without_kind_or_location_is_refused_when_the_paper_is_loaded() -> None:
    from reports.claims import Paper

    bad = Claim("X", "s", "Table 1", Runs(), flag("x"), Always())
    assert bad.problems() == [
        "kind '' is not one of paper, implementation, design",
        "no location (where the paper states it, or what of the paper it checks)"]
    with pytest.raises(ValueError, match="claim X: kind ''"):
        Paper("p", "t", "s", (bad,), {}, lambda results, out: None)  # type: ignore[arg-type,return-value]


def test_a_paper_setting_names_the_stand_in_beside_the_paper_s_data() -> None:
    setting = PaperSetting("MNIST, 784-128-10 MLP (d = 101,770)", problems=("mnist_mlp",))
    runs = pd.DataFrame({"problem": ["synthetic_mlp", "synthetic_mlp"], "p_prob_d": [442, 442]})
    assert setting.stand_in(runs) == ("synthetic_mlp (d = 442) in place of MNIST, 784-128-10 "
                                      "MLP (d = 101,770)")
    assert setting.stand_in(runs.assign(problem="mnist_mlp")) == ""
    digits = pd.DataFrame({"problem": ["digits_mlp"], "plan_d": [7510]})  # d from the plan
    assert setting.stand_in(digits).startswith("digits_mlp (d = 7,510) in place of MNIST")


def test_a_stand_in_never_gives_the_published_artefact_its_verdict() -> None:
    claims = [result("E1", "Figure 1", "contradicted", stand_in="digits for MNIST"),
              result("E2", "Figure 1", "held", stand_in="digits for MNIST"),
              result("T1", "Theorem 1", "held")]
    found = {a["target"]: a for a in artefacts(claims, [])}
    assert found["Figure 1"]["verdict"] == "not run"
    assert found["Figure 1"]["stand_in"] == "contradicted"
    assert artefact_verdict(found["Figure 1"]) == "paper scale: not run · stand-in: contradicted"
    assert [p["name"] for p in found["Figure 1"]["parts"]] == ["claim E1 [stand-in]",
                                                               "claim E2 [stand-in]"]
    assert artefact_verdict(found["Theorem 1"]) == "held"
    kinds = [f["kind"] for f in findings(claims, pd.DataFrame(), [])]
    assert kinds == ["contradicted on a stand-in"]


def test_an_out_of_regime_headline_claim_makes_its_artefact_out_of_regime() -> None:
    claims = [result("P1", "Figure 1(a)", "held"),
              result("P2", "Figure 1(a)", "out of regime", headline=True)]
    assert artefacts(claims, [])[0]["verdict"] == "out of regime"
    minor = [result("P1", "Figure 1(a)", "held"), result("P2", "Figure 1(a)", "out of regime")]
    assert artefacts(minor, [])[0]["verdict"] == "held"
    contradicted = [result("P1", "Figure 1(a)", "contradicted"),
                    result("P2", "Figure 1(a)", "out of regime", headline=True)]
    assert artefacts(contradicted, [])[0]["verdict"] == "contradicted"


def test_checks_of_the_reproduction_are_not_the_paper_s_verdicts() -> None:
    claims = [result("T1", "Theorem 3.3", "held", kind="implementation"),
              result("A1", "App. D", "contradicted", kind="design"),
              result("T2", "Theorem 3.3", "held")]
    found = artefacts(claims, [])
    assert [(a["target"], [p["name"] for p in a["parts"]]) for a in found] == [
        ("Theorem 3.3", ["claim T2"])]
    assert [f["kind"] for f in findings(claims, pd.DataFrame(), [])] == [
        "failed check of this reproduction (design)"]


def test_the_index_and_the_readme_count_only_the_paper_s_claims(tmp_path: Path) -> None:
    claims = [result("T1", "Theorem 3.3", "held", kind="implementation"),
              result("T2", "Theorem 3.3", "contradicted", headline=True)]
    folder = tmp_path / "p2024" / "quick"
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({
        "paper": "p2024", "title": "P", "scale": "quick", "runs": 3,
        "bottom_line": bottom_line(claims, artefacts(claims, []), []),
        "claims": [c.to_dict() for c in claims], "artefacts": artefacts(claims, [])}))
    page = paper_statuses(tmp_path)[0]
    assert page["counts"] == [0, 1, 0, 0, 0]
    assert [c["id"] for c in page["claims"]] == ["T2"]
    text = matrix_markdown(tmp_path)
    assert "| p2024 | quick | 0 | 1 | 0 | 0 | 0 |" in text
    assert "**p2024** (quick). Contradicted — T2 (§T2): statement T2" in text


# -- the bottom line ----------------------------------------------------------------------

def test_the_bottom_line_leads_with_the_headline_contradiction_and_says_what_transfers() -> None:
    oor = PremiseCheck("the escape test is selective", False,
                       "trigger rate 1.00 (ours) vs (5 %, 95 %) required")
    claims = [
        result("H1", "Figures 1–2", "held", headline=True),
        result("H0", "Figures 1–2", "contradicted", headline=True),
        result("E1", "Figures 1–2", "out of regime", stand_in="synthetic_mlp (d = 442) in "
               "place of MNIST", headline=True, failed=oor),
        result("T4", "Theorem 1", "held"),
        result("E6", "Figures 1–2", "held", kind="design")]
    comparisons = [Comparison(TABLE_9, None, None, 0, None, "not run")]
    lines = bottom_line(claims, artefacts(claims, comparisons), comparisons,
                        [["noise-to-signal", "12.1", "0.3", ""]])
    assert lines[0].startswith("Contradicted — H0 (§H0): statement H0")
    assert lines[1].startswith("Held — H1 (§H1)")
    assert lines[2].startswith("Out of regime on a stand-in — E1 (§E1)")
    assert "the escape test is selective (trigger rate 1.00 (ours) vs (5 %, 95 %)" in lines[2]
    assert lines[3] == ("Of the paper's 4 claims checked here: 2 held, 1 contradicted, 1 out of "
                        "regime; 1 checks of this reproduction (implementation, design) are "
                        "listed apart and not counted.")
    assert lines[4].startswith("Claims E1 ran on stand-ins (synthetic_mlp (d = 442)), not on "
                               "the paper's data and models")
    assert "(regime — noise-to-signal: paper 12.1, ours 0.3)" in lines[4]
    assert lines[5].startswith("Verdicts that transfer to the paper")
    assert "H1, H0, T4" in lines[5] and "out of regime (a premise failed, named below): E1" \
        in lines[5]
    assert lines[6] == "Not run at the paper's scale: Table 9; 1 published numbers."


def test_the_bottom_line_marks_verdicts_on_stand_ins() -> None:
    claims = [result("E1", "Figure 1", "contradicted", stand_in="digits in place of MNIST",
                     headline=True)]
    lines = bottom_line(claims, artefacts(claims, []), [], [["passes", "20", "2", ""]])
    assert lines[0].startswith("Contradicted on a stand-in — E1")
    assert ("Claims E1 ran on stand-ins (digits), not on the paper's data and models: their "
            "verdicts describe the stand-in, not the published artefacts (regime — passes: "
            "paper 20, ours 2).") in lines
    assert "No verdict transfers to the paper's own setting yet." in lines
    assert "Not run at the paper's scale: Figure 1." in lines
