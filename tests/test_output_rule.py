"""The output point a run is scored at (``eval.output``, bench.runner.OutputRule): the
algorithm's own output, else its last iterate, or a uniformly random iterate drawn by
reservoir sampling from a stream of its own; run ids of specs without the option unchanged."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from algorithms import PrivacyTarget, Step, Trace
from bench.experiment import load_experiment
from bench.model import EvalSpec
from bench.runner import OutputRule, run_one
from bench.spec import ComponentSpec, RunSpec, component
from bench.store import flatten
from problems.backend import BackendSpec

E2 = Path(__file__).resolve().parents[1] / "bench" / "experiments" / "liu2024" / "quick"


def chosen(rule: OutputRule, steps: int) -> int:
    trace = Trace()
    for t in range(1, steps + 1):
        trace.steps_taken, trace.last = t, np.array([float(t)])
        rule.offer(Step(t, trace.last))
    point, info = rule.output(trace)
    assert info["rule"] == "uniform_iterate" and point[0] == info["step"]
    return int(info["step"])


def test_uniform_iterate_is_uniform_over_the_steps_taken() -> None:
    rng = np.random.default_rng(0)
    counts = np.bincount([chosen(OutputRule("uniform_iterate", rng), 12)
                          for _ in range(6000)], minlength=13)
    assert counts[0] == 0 and counts[1:].sum() == 6000  # t ∈ {1..12}, never x₀
    assert counts[1:].min() > 0.8 * 500 and counts[1:].max() < 1.2 * 500
    # a run that stops early: only the steps it took
    assert {chosen(OutputRule("uniform_iterate", rng), 3) for _ in range(200)} == {1, 2, 3}


def test_own_output_is_kept_and_the_default_is_the_last_iterate() -> None:
    trace = Trace(last=np.zeros(2), steps_taken=7)
    uniform = OutputRule("uniform_iterate", np.random.default_rng(0))
    uniform.offer(Step(1, np.ones(2)))
    point, info = uniform.output(trace)
    assert info == {"rule": "uniform_iterate", "step": 1} and point[0] == 1.0
    trace.output = np.full(2, 3.0)  # e.g. spider_sosp's certified anchor
    point, info = uniform.output(trace)
    assert point is trace.output and info == {"rule": "algorithm"}
    plain = OutputRule("algorithm", np.random.default_rng(0))
    plain.offer(Step(1, np.ones(2)))
    trace.output = None
    point, info = plain.output(trace)
    assert point is trace.last and info == {"rule": "last_iterate", "step": 7}


def spec(output: str = "algorithm") -> RunSpec:
    return RunSpec(ComponentSpec("strict_saddle", {"d": 4, "n": 4000}),
                   ComponentSpec("dp_sgd", {"steps": 20, "lr": 0.5, "batch_size": 50,
                                            "clip": 2.5}),
                   PrivacyTarget(4.0, 1e-6, "pld"), BackendSpec(name="numpy"), seed=3,
                   eval=EvalSpec(points=3, metrics=("grad_norm",), output=output))


def test_the_option_is_left_out_of_the_run_id_at_its_default() -> None:
    full = dataclasses.replace(
        spec(), problem=component("problem", "strict_saddle", {"d": 4, "n": 4000}, "p"),
        algorithm=component("algorithm", "dp_sgd", {"steps": 20, "lr": 0.5,
                                                    "batch_size": 50, "clip": 2.5}, "a"))
    assert "output" not in full.to_dict()["eval"]
    uniform = dataclasses.replace(full, eval=dataclasses.replace(full.eval,
                                                                 output="uniform_iterate"))
    assert uniform.to_dict()["eval"]["output"] == "uniform_iterate"
    assert uniform.digest != full.digest
    for s in (full, uniform):
        assert RunSpec.from_dict(s.to_dict()).digest == s.digest
    # an existing experiment file: no spec carries the option (its ids are those before it)
    assert all("output" not in s.to_dict()["eval"]
               for s in load_experiment(E2 / "e2_sosp_vs_fosp.yaml").specs)
    uniform_file = E2.parent / "standard" / "e2_uniform_iterate.yaml"
    assert {s.eval.output for s in load_experiment(uniform_file).specs} \
        == {"uniform_iterate"}


def test_a_run_is_scored_at_a_uniform_iterate_with_the_algorithms_streams_unchanged() -> None:
    last, uniform = run_one(spec()), run_one(spec("uniform_iterate"))
    assert last.status == uniform.status == "done"
    iterates = [[r for r in rec.rows if r["point"] == "iterate"] for rec in (last, uniform)]
    assert [r["grad_norm"] for r in iterates[0]] == [r["grad_norm"] for r in iterates[1]]
    assert last.info["output"] == {"rule": "last_iterate", "step": 20}
    rule = uniform.info["output"]
    assert rule["rule"] == "uniform_iterate" and 1 <= rule["step"] <= 20
    row = flatten(uniform.sidecar())
    assert (row["output_rule"], row["output_step"]) == ("uniform_iterate", rule["step"])


def test_the_output_stream_is_a_fifth_child_apart_from_the_algorithms() -> None:
    first = np.random.SeedSequence(11).spawn(5)[:4]
    assert [s.generate_state(2).tolist() for s in first] == \
        [s.generate_state(2).tolist() for s in np.random.SeedSequence(11).spawn(4)]
