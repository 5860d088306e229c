"""The bill before the run (issue 39, item 4): ``--estimate`` counts the runs, tuning runs
and steps of the grid's expansion, prices them from the throughput table, names what is
missing, and runs nothing; ``nox -s bench`` refreshes the table from bench/micro's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import bill as bills
from bench.bill import Throughput, bill, describe, read_table, refresh, write_table
from bench.experiment import GridTooLarge, load_experiment
from saddlebench.cli import main

DOC: dict[str, Any] = {
    "suite": "billed",
    "seeds": 3,
    "privacy": {"epsilon": [1, 4], "delta": 1.0e-5},
    "tuning": {"metric": "loss", "goal": "min", "seeds": 2, "extend": 1},
    "eval": {"points": 2, "metrics": ["loss"]},
    "problems": [{"name": "strict_saddle", "params": {"n": 200}, "sweep": {"d": [3, 5]}}],
    "algorithms": [
        {"name": "dp_sgd", "params": {"steps": 40, "batch_size": 10, "clip": 1.0},
         "tune": {"lr": [0.01, 0.1, 1.0]}},
        {"name": "sgd", "params": {"steps": 25, "batch_size": 10},
         "sweep": {"lr": [0.1, 0.2]}},
    ],
}
SGD_RATE = Throughput("strict_saddle", "sgd", "cpu", {"batch_size": 10}, 500.0, "a CPU",
                      "abc1234", "a test")


def experiment_file(tmp_path: Path, doc: dict[str, Any] = DOC) -> Path:
    path = tmp_path / "billed.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_counts_are_the_grids_expansion(tmp_path: Path) -> None:
    experiment = load_experiment(experiment_file(tmp_path))
    b = bill(experiment, [])
    finals = len(experiment.specs) + sum(len(g.seeds) for g in experiment.groups)
    tuning = sum(len(g.candidates) * 2 for g in experiment.groups)
    assert (b.count("final"), b.count("tune")) == (finals, tuning)
    with pytest.raises(GridTooLarge) as counted:  # the count the CLI confirms a grid by
        load_experiment(experiment_file(tmp_path), max_runs=0)
    assert finals + tuning == counted.value.size.total == 2 * (2 * 3 + 2 * (3 + 3 * 2))
    # sgd: 2 d × 2 lr × 3 seeds × 25 steps; dp_sgd: 2 d × 2 ε × (3 seeds + 3 lr × 2) × 40
    assert b.steps - 40 * b.count("extend") == 2 * 2 * 3 * 25 + 2 * 2 * (3 + 3 * 2) * 40
    assert b.count("extend") == 2 * 2 * 1 * 2  # a group's one numeric param, once, 2 seeds


def test_the_table_prices_what_it_has_and_names_what_it_lacks(tmp_path: Path) -> None:
    b = bill(load_experiment(experiment_file(tmp_path)), [SGD_RATE])
    sgd = [w for w in b.work if "· sgd ·" in w.shape]
    assert sum(w.hours for w in sgd) == pytest.approx(2 * 2 * 3 * 25 / 500 / 3600)
    assert all(w.priced for w in sgd) and not b.complete
    lines = describe(b)
    assert "CPU-hours for the priced runs only (a lower bound)" in lines[0]
    missing = [line for line in lines if line.startswith("missing throughput")]
    assert missing == [f"missing throughput: strict_saddle · dp_sgd · cpu (batch_size 10, "
                       f"clients 1) ({2 * 2 * (3 + 3 * 2 + 2):,} runs, "
                       f"{2 * 2 * (3 + 3 * 2 + 2) * 40:,} steps)"]


def test_the_entry_fixing_the_most_params_wins_and_a_different_batch_does_not_fit(
        tmp_path: Path) -> None:
    loose = Throughput("strict_saddle", "sgd", "cpu", {}, 100.0, "a CPU", "abc1234", "")
    other = Throughput("strict_saddle", "sgd", "cpu", {"batch_size": 64}, 9.0, "a CPU", "", "")
    spec = load_experiment(experiment_file(tmp_path)).specs[0]
    assert bills.throughput(spec, [SGD_RATE, loose, other]) is SGD_RATE
    assert bills.throughput(spec, [other]) is None


def test_steps_only_a_run_knows_are_reported_not_guessed(tmp_path: Path) -> None:
    doc = {**DOC, "tuning": None, "problems": [{"name": "strict_saddle",
                                                "params": {"n": 4000, "d": 4, "lam": 1.0}}],
           "algorithms": [{"name": "spider_sosp", "params": {"alpha": 0.3, "early_stop": True}}]}
    doc.pop("tuning")
    b = bill(load_experiment(experiment_file(tmp_path, doc)), [])
    assert b.steps == 0 and not b.complete
    assert "steps known only when run: strict_saddle · spider_sosp · cpu (clients 1) " \
           "(6 runs)" in describe(b)


def test_the_shipped_table_reads_and_every_entry_says_where_it_comes_from() -> None:
    table = read_table()
    assert table and all(e.steps_per_s > 0 and e.hardware and e.commit and e.source
                         for e in table)


def test_another_version_of_the_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": 99, "entries": []}))
    with pytest.raises(ValueError, match="version 99"):
        read_table(path)


def benchmark(kernel: str, median: float, **info: Any) -> dict[str, Any]:
    return {"name": f"test_step[{kernel}]", "stats": {"median": median},
            "extra_info": {"problem": "digits_mlp", "backend": "torch", "device": "cpu",
                           "kernel": kernel, "batch": 64, **info}}


def test_refresh_merges_the_step_benchmarks_of_bench_micro(tmp_path: Path) -> None:
    table = tmp_path / "throughput.json"
    old = Throughput("digits_mlp", "sgd", "cpu", {"batch_size": 64}, 1.0, "Xeon", "0000000",
                     "before")
    write_table([old, SGD_RATE], table)
    micro = tmp_path / "micro.json"
    micro.write_text(json.dumps({
        "commit_info": {"id": "1234567890abcdef"}, "datetime": "2026-11-28T07:00:00",
        "machine_info": {"cpu": {"brand_raw": "Xeon"}},
        "benchmarks": [benchmark("step_sgd", 0.004), benchmark("step_dp_sgd", 0.01),
                       benchmark("clipped_grad_sum", 0.002),
                       benchmark("paper_step_prisma", 0.5, device="cuda", hardware="H100",
                                 problem="cifar10_vgg",
                                 params={"batch_size": 512, "clients": 10})]}))
    merged = refresh(micro, table)
    assert read_table(table) == merged
    assert SGD_RATE in merged and old not in merged  # the same key on the same hardware
    fresh = {e.algorithm: e for e in merged if e.problem == "digits_mlp"}
    assert set(fresh) == {"sgd", "dp_sgd"}  # step kernels only
    assert fresh["sgd"].steps_per_s == 250.0 and fresh["dp_sgd"].steps_per_s == 100.0
    assert fresh["sgd"].params == {"batch_size": 64}
    assert (fresh["sgd"].hardware, fresh["sgd"].commit) == ("Xeon", "1234567")
    paper = next(e for e in merged if e.problem == "cifar10_vgg")  # test_paper_steps.py's
    assert (paper.algorithm, paper.device, paper.hardware, paper.steps_per_s) == (
        "prisma", "cuda", "H100", 2.0)
    assert paper.params == {"batch_size": 512, "clients": 10}


def test_estimate_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["run", str(experiment_file(tmp_path)), "--estimate", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "24 runs, 24 tuning runs (+ at most 8 if grids extend)" in printed
    assert "missing throughput: strict_saddle · dp_sgd" in printed
    assert not out.exists()
    assert main(["reproduce", "avdiukhin2024", "--scale", "paper", "--estimate", "--out",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("runs, 0 tuning runs") == 6 and "total avdiukhin2024: 6 files" in printed
    assert not out.exists()


def test_successive_halving_is_billed_by_its_rungs(tmp_path: Path) -> None:
    doc = {**DOC, "tuning": {**DOC["tuning"], "halving": 3}}
    b = bill(load_experiment(experiment_file(tmp_path, doc)), [])
    assert b.count("tune") == 4 * (3 + 1)  # 4 groups: 3 candidates at seed 1, 1 at seed 2
