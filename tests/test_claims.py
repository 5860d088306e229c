"""Known answers for every rule and for the verdict framework, and the check that every
declared claim of every registered paper has a known-answer test of its own."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reports.claims import (
    VERDICTS,
    Claim,
    Control,
    Paper,
    Runs,
    aggregate,
    at_least,
    at_most,
    evaluate,
    final,
    flag,
    never,
)
from reports.known_answers import synthetic_results
from reports.paper import PaperSections
from reports.rules import (
    Always,
    AtLeast,
    AtMost,
    Fraction,
    Monotone,
    Sample,
    SlopeAtMost,
    holm,
)

# -- rules --------------------------------------------------------------------------------


def test_at_least_holds_contradicts_and_is_inconclusive_with_power() -> None:
    assert AtLeast(0.5).decide(Sample.of([0.90, 0.92, 0.88, 0.91])).verdict == "held"
    assert AtLeast(0.5).decide(Sample.of([0.10, 0.12, 0.08, 0.11])).verdict == "contradicted"
    noisy = AtLeast(0.5).decide(Sample.of([0.2, 0.9, 0.6]))
    assert noisy.verdict == "inconclusive"
    assert noisy.needed is not None and noisy.needed > 3
    assert noisy.interval[0] < 0.5 < noisy.interval[1]


def test_at_most_with_a_reference_is_a_welch_difference() -> None:
    ours, sgd = [0.80, 0.81, 0.79, 0.80], [0.90, 0.91, 0.89, 0.90]
    gap = AtMost(0.05).decide(Sample.of(sgd, reference=ours))  # SGD − ours < 0.05?
    assert gap.verdict == "contradicted" and gap.estimate == pytest.approx(0.10)
    assert AtMost(0.2).decide(Sample.of(sgd, reference=ours)).verdict == "held"


def test_a_one_run_sample_has_no_interval_and_is_inconclusive() -> None:
    decision = AtLeast(0.5).decide(Sample.of([0.9]))
    assert decision.verdict == "inconclusive" and "too few" in decision.text


def test_identical_runs_decide_by_the_point() -> None:
    assert AtLeast(0.5).decide(Sample.of([0.9, 0.9, 0.9])).verdict == "held"
    assert AtLeast(0.5).decide(Sample.of([0.1, 0.1])).verdict == "contradicted"


def test_fraction_needs_enough_runs_to_decide() -> None:
    five = Fraction(0.5, event="escape").decide(Sample.of([1, 1, 1, 1, 1]))
    assert five.verdict == "inconclusive" and five.needed == 6  # 0.5^6 < 0.025 < 0.5^5
    assert Fraction(0.5).decide(Sample.of([1] * 6)).verdict == "held"
    assert Fraction(0.5).decide(Sample.of([0] * 6)).verdict == "contradicted"
    assert Fraction(0.2, below=True).decide(Sample.of([0] * 20)).verdict == "held"


def test_always_is_deterministic() -> None:
    assert Always().decide(Sample.of([1, 1, 1])).verdict == "held"
    assert Always().decide(Sample.of([1, 0, 1])).verdict == "contradicted"


def test_monotone_tolerates_plateaus_and_rejects_real_drops() -> None:
    rising = {1: [0.50, 0.52, 0.51], 2: [0.60, 0.61, 0.62], 4: [0.70, 0.71, 0.69]}
    assert Monotone(0.02).decide(Sample.along(rising)).verdict == "held"
    plateau = {1: [0.50, 0.52, 0.51], 2: [0.70, 0.71, 0.69], 4: [0.70, 0.705, 0.695]}
    assert Monotone(0.05).decide(Sample.along(plateau)).verdict == "held"
    drop = {1: [0.50, 0.52, 0.51], 2: [0.80, 0.81, 0.79], 4: [0.40, 0.41, 0.39]}
    assert Monotone(0.02).decide(Sample.along(drop)).verdict == "contradicted"
    noisy = {1: [0.5, 0.7, 0.3], 2: [0.45, 0.8, 0.2]}
    assert Monotone(0.02).decide(Sample.along(noisy)).verdict == "inconclusive"


def test_monotone_uses_holm_over_pairs() -> None:
    """The family's p is Holm's first step (m × the smallest pair p): a drop that a single
    test would call significant is not a contradiction among five pairs."""
    rng = np.random.default_rng(0)
    groups = {float(k): 0.5 + 0.2 * k + rng.normal(0, 0.01, 3) for k in range(5)}
    groups[5.0] = groups[4.0] - 0.025 + rng.normal(0, 0.01, 3)
    family = Monotone(0.0).decide(Sample.along(groups))
    drop = AtLeast(0.0).decide(Sample.of(groups[4.0], reference=groups[5.0]))
    assert drop.verdict == "held"  # alone: a significant fall from 4 to 5
    assert family.p_contradicted == pytest.approx(min(1.0, 5 * drop.p_held))
    assert family.verdict == ("contradicted" if 5 * drop.p_held < 0.025 else "inconclusive")
    assert holm([0.001, 0.02, 0.03]) == [True, False, False]
    assert holm([0.001, 0.01, 0.02]) == [True, True, True]
    assert holm([0.02, 0.02]) == [False, False]


def test_upper_bound_rate_accepts_a_shallower_slope_and_rejects_a_steeper_one() -> None:
    rng = np.random.default_rng(1)

    def power_law(exponent: float) -> Sample:
        return Sample.along({d: d**exponent * np.exp(rng.normal(0, 0.02, 3))
                             for d in (10.0, 20.0, 40.0, 80.0)})

    assert SlopeAtMost(0.5, axis="d").decide(power_law(0.2)).verdict == "held"
    assert SlopeAtMost(0.5, axis="d").decide(power_law(0.9)).verdict == "contradicted"
    # a bound decreasing in n: −slope is compared; a faster decrease is steeper
    assert SlopeAtMost(0.5, axis="n", axis_grows_bound=False).decide(
        power_law(-0.2)).verdict == "held"
    assert SlopeAtMost(0.5, axis="n", axis_grows_bound=False).decide(
        power_law(-1.0)).verdict == "contradicted"


# -- the framework ------------------------------------------------------------------------

CLAIM = Claim(
    "K1", "accuracy above 50 %", "Figure 1",
    Runs(roles=("acc",), where={"algorithm": "noisy"}, by=("epsilon",)),
    final("test_acc"), AtLeast(0.5),
    premises=(at_most("per-sample norm ≤ C", "prem_max_per_sample_norm", "prem_clip_bound",
                      remedy="raise C"),),
    controls=(Control("noise-free SGD", Runs(roles=("acc",), where={"algorithm": "sgd"}),
                      "above 50 %", final("test_acc"), AtLeast(0.5)),),
    kind="paper", where="§5, Figure 1")


def runs(acc: list[float], eps: float = 1.0, norm: float = 1.0, algorithm: str = "noisy",
         **extra: object) -> list[dict[str, object]]:
    return [{"role": "acc", "algorithm": algorithm, "epsilon": eps, "seed": i, "final_test_acc": a,
             "prem_max_per_sample_norm": norm, "prem_clip_bound": 2.0, **extra}
            for i, a in enumerate(acc)]


@pytest.mark.parametrize(("acc", "norm", "verdict"), [
    ([0.9, 0.91, 0.92], 1.0, "held"),
    ([0.1, 0.11, 0.12], 1.0, "contradicted"),
    ([0.2, 0.9, 0.6], 1.0, "inconclusive"),
    ([0.9, 0.91, 0.92], 3.0, "out of regime"),
])
def test_each_verdict_from_synthetic_runs(acc: list[float], norm: float, verdict: str) -> None:
    result = evaluate(CLAIM, synthetic_results("x", runs(acc, norm=norm)))
    assert result.verdict == verdict
    if verdict == "out of regime":
        (check,) = result.settings[0].failed
        assert check.name == "per-sample norm ≤ C" and "max 3 vs ≤ 2" in check.measured
        assert "exceeded in 3/3 runs" in check.measured and check.remedy == "raise C"


def test_no_runs_is_not_run() -> None:
    assert evaluate(CLAIM, synthetic_results("x", runs([0.9], algorithm="other"))
                    ).verdict == "not run"


def test_controls_are_reported_apart_and_never_count_as_settings() -> None:
    data = runs([0.9, 0.91, 0.92]) + runs([0.1, 0.1, 0.1], algorithm="sgd", eps=np.inf)
    result = evaluate(CLAIM, synthetic_results("x", data))
    assert result.verdict == "held" and len(result.settings) == 1
    (control,) = result.controls
    assert control.outcome == "unexpected" and control.expect == "above 50 %"


def test_a_control_with_settings_reports_one_outcome_each_and_keep_filters_rows() -> None:
    control = Control("noise-free SGD", Runs(roles=("acc",), where={"algorithm": "sgd"},
                                            by=("epsilon",), keep=lambda r: r["seed"] < 2),
                      "above 50 %", final("test_acc"), AtLeast(0.5))
    claim = replace(CLAIM, controls=(control,))
    data = (runs([0.9, 0.91, 0.92]) + runs([0.9, 0.95, 0.1], algorithm="sgd", eps=1.0)
            + runs([0.1, 0.12, 0.9], algorithm="sgd", eps=2.0))
    result = evaluate(claim, synthetic_results("x", data))
    assert [(c.name, c.outcome) for c in result.controls] == [
        ("noise-free SGD (epsilon = 1)", "as expected"),
        ("noise-free SGD (epsilon = 2)", "unexpected")]
    assert all(len(c.run_ids) == 2 for c in result.controls)  # seed 2 is not kept


def test_diverged_runs_are_flagged_and_get_no_statistic() -> None:
    data = runs([0.9, 0.91, 0.92, np.nan])
    data[3]["status"] = "diverged"
    result = evaluate(CLAIM, synthetic_results("x", data))
    (setting,) = result.settings
    assert result.verdict == "held" and setting.diverged == 1 and setting.decision is not None
    assert setting.decision.runs == 3 and "1/4 runs diverged (excluded)" in setting.evidence()


def test_a_run_whose_loss_grew_past_the_factor_is_diverged() -> None:
    data = runs([0.9, 0.91, 0.92, 0.93])
    for i, row in enumerate(data):
        row["final_loss"] = 1e6 if i == 3 else 0.5
    curves = [{"run_id": f"r{i}", "step": 0, "loss": 1.0} for i in range(4)]
    results = synthetic_results("x", data, curves)
    assert results.runs["diverged"].tolist() == [False, False, False, True]
    assert evaluate(CLAIM, results).settings[0].diverged == 1


def test_all_runs_diverged_is_inconclusive_not_a_number() -> None:
    data = runs([np.nan, np.nan])
    for row in data:
        row["status"] = "diverged"
    (setting,) = evaluate(CLAIM, synthetic_results("x", data)).settings
    assert setting.verdict == "inconclusive" and setting.decision is None


def test_a_failed_premise_comes_before_divergence() -> None:
    data = runs([np.nan, np.nan], norm=5.0)
    for row in data:
        row["status"] = "diverged"
    (setting,) = evaluate(CLAIM, synthetic_results("x", data)).settings
    assert setting.verdict == "out of regime" and setting.diverged == 2


def test_holm_over_settings_decides_contradictions() -> None:
    """A setting contradicted at p ≈ 0.018 alone is a contradiction when it is the claim's
    only setting, but not among two settings (Holm: the smaller p must be < 0.025/2)."""
    borderline = [0.42, 0.46, 0.44]
    single = AtLeast(0.5).decide(Sample.of(borderline))
    assert single.verdict == "contradicted" and 0.0125 < single.p_contradicted < 0.025
    alone = evaluate(CLAIM, synthetic_results("x", runs(borderline)))
    assert alone.verdict == "contradicted"
    data = runs(borderline, eps=1.0) + runs([0.9, 0.91, 0.92], eps=2.0)
    result = evaluate(CLAIM, synthetic_results("x", data))
    assert [s.verdict for s in result.settings] == ["inconclusive", "held"]
    assert result.verdict == "inconclusive"
    strong = [0.43, 0.46, 0.445, 0.44]  # p ≈ 0.0014 < 0.0125
    data = runs(strong, eps=1.0) + runs([0.9, 0.91, 0.92], eps=2.0)
    assert evaluate(CLAIM, synthetic_results("x", data)).verdict == "contradicted"


def test_out_of_regime_settings_do_not_decide_the_claim() -> None:
    data = runs([0.9, 0.91, 0.92], eps=1.0) + runs([0.1, 0.1, 0.12], eps=2.0, norm=5.0)
    result = evaluate(CLAIM, synthetic_results("x", data))
    assert [s.verdict for s in result.settings] == ["held", "out of regime"]
    assert result.verdict == "held"


def test_aggregate_order() -> None:
    assert aggregate([]) == "not run"
    assert aggregate(["held", "contradicted"]) == "contradicted"
    assert aggregate(["held", "out of regime"]) == "held"
    assert aggregate(["out of regime", "not run"]) == "out of regime"
    assert aggregate(["held", "inconclusive"]) == "inconclusive"
    assert set(VERDICTS) == {"held", "contradicted", "inconclusive", "out of regime", "not run"}


def test_premise_helpers_report_measured_values() -> None:
    results = synthetic_results("x", runs([0.9, 0.9]))
    frame = results.runs
    assert at_least("T ≥ T_thm", "final_test_acc", 0.95)(frame, results).passed is False
    assert at_least("x", "missing", 1.0)(frame, results).passed is None
    cap = frame.assign(prem_data_exhausted_at=[None, 126])
    check = never("data cap not hit", "prem_data_exhausted_at")(cap, results)
    assert check.passed is False and "1/2 runs (earliest at 126)" in check.measured
    assert flag("prem_data_exhausted_at").compute(cap, results).values.tolist() == [0.0, 0.0]


def test_a_paper_refuses_undeclared_roles_and_duplicate_ids() -> None:
    def sections(*_: object) -> PaperSections:
        return PaperSections()

    with pytest.raises(ValueError, match="roles"):
        Paper("x", "t", "s", (CLAIM,), {}, sections)
    with pytest.raises(ValueError, match="unique"):
        Paper("x", "t", "s", (CLAIM, CLAIM), {"acc": ""}, sections)


# -- every declared claim has a known-answer test -----------------------------------------

KNOWN = re.compile(r"""known_answer\(\s*["']([\w.-]+)["']\s*,\s*["']([^"']+)["']""")


def known_answer_tests() -> set[tuple[str, str]]:
    found = set()
    for path in Path(__file__).resolve().parent.glob("test_*.py"):
        found |= set(KNOWN.findall(path.read_text()))
    return found


def test_every_declared_claim_has_a_known_answer_test() -> None:
    from reports.papers import get_paper, paper_keys

    declared = {(key, c.id) for key in paper_keys() for c in get_paper(key).claims}
    missing = sorted(declared - known_answer_tests())
    assert not missing, f"claims without a @pytest.mark.known_answer test: {missing}"
    unknown = sorted(known_answer_tests() - declared)
    assert not unknown, f"known-answer tests of claims nobody declares: {unknown}"


def test_frame_helpers_tolerate_missing_columns() -> None:
    results = synthetic_results("x", [{"role": "acc"}])
    assert final("test_acc").compute(results.runs, results).values.size == 0
    assert isinstance(results.runs, pd.DataFrame)
