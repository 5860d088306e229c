"""Known answers for the shared analysis vocabulary a paper module declares with
(reports/claims.py, reports/prose.py, reports/paper.py): premise checks that need columns,
"none of the runs", ranges, per-run properties, a metric at a run's output, last or best
iterate, run-time texts, sidecar tables and regime rows, per-suite sections."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reports.claims import (
    final,
    in_none,
    needs,
    of_problems,
    per_run,
    real_else_stand_in,
    span,
)
from reports.paper import median_range, per_suite
from reports.prose import Prose
from reports.results import PaperResults

RESULTS = PaperResults("p", "quick", [], pd.DataFrame(), pd.DataFrame())
RUNS = pd.DataFrame({"steps": [10, 20, 30], "cap": [None, None, 25.0], "empty": [None] * 3})


def test_needs_answers_not_recorded_before_checking() -> None:
    check = needs("steps", "empty")(lambda runs, results: (True, "fine"))
    assert check(RUNS, RESULTS) == (None, "empty not recorded")
    assert needs("steps")(lambda runs, results: (True, "fine"))(RUNS, RESULTS) == (True, "fine")


def test_in_none_counts_the_runs_hit() -> None:
    check = in_none(lambda runs: "data cap hit", lambda runs: runs["cap"].notna(), "steps")
    assert check(RUNS, RESULTS) == (False, "data cap hit in 1/3 runs")
    assert check(RUNS.iloc[:2], RESULTS) == (True, "data cap hit in 0/2 runs")


def test_span_reads_low_high_or_the_one_value() -> None:
    assert span(pd.Series([0.5, 0.25, 1.0])) == "0.25–1"
    assert span(pd.Series([1.0001, 1.0002]), unit=" s") == "1 s"
    with pytest.raises(ValueError, match="no runs"):
        span(pd.Series([None], dtype=float))


def test_per_run_is_one_where_the_property_holds() -> None:
    statistic = per_run("long", lambda runs, results: runs["steps"] > 15)
    assert list(statistic.compute(RUNS, RESULTS).values) == [0.0, 1.0, 1.0]
    assert len(per_run("none", lambda runs, results: None).compute(RUNS, RESULTS).values) == 0


def test_run_time_texts_and_sidecar_tables(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "tables:\n  t:\n    title: at ε = {eps:g}\n    note: '{n} runs, T = {T}'\n"
        "    columns: [ε, accuracy]\n", encoding="utf-8")
    text = Prose.load(tmp_path / "p.py", T=400)
    assert text.fill("tables.t.note", n=3) == "3 runs, T = 400"
    table = text.table("t", [["1", "90 %"]], eps=1.0, n=2)
    assert table == {"title": "at ε = 1", "note": "2 runs, T = 400",
                     "columns": ["ε", "accuracy"], "rows": [["1", "90 %"]]}
    assert text.table("t", [], provenance="p", eps=2.0, n=0)["provenance"] == "p"


def test_a_grouped_table_has_one_row_and_its_run_ids_per_group(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "tables:\n  g:\n    title: per ε\n    note: ''\n    columns: [ε, runs]\n",
        encoding="utf-8")
    runs = pd.DataFrame({"epsilon": [1.0, 2.0, 1.0], "run_id": ["b", "c", "a"]})
    table = Prose.load(tmp_path / "p.py").grouped(
        "g", runs, ["epsilon"], lambda values, part: [f"{values[0]:g}", str(len(part))])
    assert table["rows"] == [["1", "2"], ["2", "1"]]
    assert table["row_runs"] == [["a", "b"], ["c"]]


def test_a_premise_whose_runs_lack_what_it_reads_is_not_recorded() -> None:
    from reports.claims import Premise

    premise = Premise("C holds", lambda runs, results: (True, f"C = {span(runs['bound'])}"))
    check = premise(RUNS, RESULTS)
    assert check.passed is None and check.measured.startswith("not recorded (KeyError")


def test_a_metric_at_the_output_the_last_or_the_best_iterate() -> None:
    """Run a's iterates have ‖∇F‖ 5 (x₀), 1, 3; its output (the output rule's pick) 2; run b
    has no trajectory: nan beside the output's."""
    runs = pd.DataFrame({"run_id": ["a", "b"], "final_grad_norm": [2.0, 4.0]})
    traj = pd.DataFrame({"run_id": ["a"] * 4, "point": ["iterate"] * 3 + ["output"],
                         "step": [0, 5, 10, 10], "grad_norm": [5.0, 1.0, 3.0, 2.0]})
    results = PaperResults("p", "quick", [], runs, traj)
    assert results.at(runs, "grad_norm").tolist() == [2.0, 4.0]
    assert results.at(runs, "grad_norm", "last").tolist()[0] == 3.0
    assert results.at(runs, "grad_norm", "best").tolist()[0] == 1.0
    assert pd.isna(results.at(runs, "grad_norm", "best").iloc[1])
    best = final("grad_norm", 10.0, at="best")
    assert best.name == "best iterate's grad norm"
    assert best.compute(runs.iloc[:1], results).values.tolist() == [10.0]


def test_median_range_and_per_suite() -> None:
    assert median_range(pd.Series([3.0, 1.0, 2.0])) == "2 (1–3)"
    assert median_range(pd.Series([0.5, 0.5])) == "0.5"
    assert median_range(pd.Series([None], dtype=float)) == "–"
    assert median_range(pd.Series([3.0, 1.0, 2.0]), runs=True) == "2 (1–3, 3 runs)"
    assert median_range(pd.Series([0.5, 0.5]), runs=True) == "0.5 (2 runs)"
    runs = pd.DataFrame({"suite": ["s1", "s1", "s2"], "status": ["done", "error", "done"],
                         "run_id": ["a", "b", "c"]})
    results = PaperResults("p", "quick", [{"suite": "s1", "roles": ["fig"]},
                                          {"suite": "s2", "roles": ["table"]}],
                           runs, pd.DataFrame(), roles=frozenset({"fig", "table"}))
    built = per_suite(results, "fig", lambda r, suite, part: (suite, len(part)))
    assert built == [("s1", 1)]
    assert per_suite(results, "fig", lambda r, s, part: len(part), done=False) == [2]
    assert per_suite(results, "table", lambda r, s, part: None) == []


def test_claims_on_real_data_read_the_real_runs_wherever_any_ran() -> None:
    runs = pd.DataFrame({"problem": ["digits_mlp", "fashion_mnist_mlp", "digits_mlp"]})
    real = of_problems(runs, {"fashion_mnist_mlp"})
    assert real.tolist() == [False, True, False]
    assert real_else_stand_in(real).tolist() == [False, True, False]
    assert real_else_stand_in(of_problems(runs.iloc[[0, 2]], {"fashion_mnist_mlp"})).all()
    assert not of_problems(pd.DataFrame(index=[0, 1]), {"x"}).any()
