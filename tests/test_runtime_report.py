"""The runtime ratios (bench/micro/ratios.py) and page (reports/runtime.py) on a synthetic
pytest-benchmark JSON: no real timings involved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.micro.ratios import compute_ratios, machine, main, table
from reports.runtime import build_runtime_page, limit, main_job, seconds, status, suite_costs
from reports.runtime import main as page_main

MACHINE = {"node": "box", "processor": "x86_64", "machine": "x86_64", "python_version": "3.11.7",
           "python_implementation": "CPython", "system": "Linux", "release": "6.1",
           "cpu": {"brand_raw": "AMD EPYC", "count": 2}, "gpu": "NVIDIA H100",
           "saddlebench": {"git_sha": "abc123", "versions": {"torch": "2.13.0"}}}


def entry(problem: str, backend: str, kernel: str, median: float, *, device: str = "cpu",
          batch: int = 64, mean: float | None = None, **info: Any) -> dict[str, Any]:
    """One benchmark as pytest-benchmark writes it, tagged with the extra_info scheme."""
    name = f"test_x[{problem}-{backend}-{device}-{kernel}-{batch}]"
    stats = {"min": median / 2, "max": median * 2, "mean": mean or median, "stddev": 0.0,
             "rounds": 5, "median": median, "iqr": median / 10, "q1": median, "q3": median,
             "iqr_outliers": 0, "stddev_outliers": 0, "outliers": "0;0", "ld15iqr": median,
             "hd15iqr": median, "ops": 1 / median, "total": 5 * median, "iterations": 1}
    extra = {"problem": problem, "backend": backend, "device": device, "kernel": kernel,
             "batch": batch, "d": 100, "metric": "time", "dtype": "float32", **info}
    return {"group": problem, "name": name, "fullname": f"bench/micro/t.py::{name}",
            "params": {"problem": problem}, "param": "x", "extra_info": extra,
            "options": {}, "stats": stats}


def synthetic() -> dict[str, Any]:
    memory = {"metric": "peak_bytes", "batch": 256}
    benchmarks = [
        entry("digits_mlp", "torch", "step_sgd", 1.0),
        entry("digits_mlp", "torch", "step_dp_sgd", 1.2),              # 1.2 ≤ 1.5: met
        entry("cifar10_vgg", "torch", "step_sgd", 1.0),
        entry("cifar10_vgg", "torch", "step_dp_sgd", 2.0),             # 2 > 1.2: not met
        entry("cifar10_vgg", "torch", "clipped_grad_sum", 0.5),
        entry("cifar10_vgg", "torch", "opacus_clipped_sum", 0.5),      # 1 is not < 1
        entry("cifar10_vgg", "torch", "grad", 0.25),
        entry("cifar10_vgg", "torch", "clipped_grad_diff_sum", 0.55),  # 2.2 ≤ 2.2: met
        entry("digits_mlp", "torch", "grad", 0.002, mean=0.004),
        entry("digits_mlp", "jax", "grad", 0.001, mean=0.006),         # 0.5, mean: 1.5
        entry("digits_mlp", "jax", "hvp", 0.001),                      # no torch hvp
        entry("cifar10_vgg", "torch", "clipped_grad_sum", 9.0, peak_bytes=3 * 2**30, **memory),
        entry("cifar10_vgg", "torch", "grad", 9.0, peak_bytes=2**30, **memory),  # 3 > 2
        entry("digits_mlp", "torch", "step_sgd", 0.5, device="cuda"),
        entry("digits_mlp", "torch", "step_dp_sgd", 0.6, device="cuda"),
        {**entry("digits_mlp", "torch", "grad", 1.0), "extra_info": {}},  # not in the scheme
    ]
    return {"machine_info": MACHINE, "commit_info": {"id": "abc123", "dirty": False},
            "benchmarks": benchmarks, "datetime": "2026-01-01T00:00:00", "version": "5.3.1"}


def by_name(ratios: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in ratios}


def test_ratios_pair_benchmarks_and_judge_targets() -> None:
    ratios = by_name(compute_ratios(synthetic()))
    expected = {
        "dp_sgd step ÷ sgd step (digits_mlp, torch, cpu)": (1.2, True),
        "dp_sgd step ÷ sgd step (cifar10_vgg, torch, cpu)": (2.0, False),
        "dp_sgd step ÷ sgd step (digits_mlp, torch, cuda)": (1.2, True),
        "clipped sum ÷ Opacus clipped sum (cifar10_vgg, cpu)": (1.0, False),
        "clipped diff sum ÷ gradient (cifar10_vgg, torch, cpu)": (2.2, True),
        "jax ÷ torch (digits_mlp, grad, cpu)": (0.5, True),
        "private ÷ non-private peak memory (cifar10_vgg, torch, cpu)": (3.0, False),
    }
    assert set(ratios) == set(expected)
    for name, (value, met) in expected.items():
        assert ratios[name]["value"] == pytest.approx(value)
        assert ratios[name]["met"] is met


def test_ratio_record_names_both_sides_and_the_machine() -> None:
    ratios = by_name(compute_ratios(synthetic()))
    mem = ratios["private ÷ non-private peak memory (cifar10_vgg, torch, cpu)"]
    assert mem["numerator"]["value"] == 3 * 2**30 and mem["numerator"]["unit"] == "bytes"
    assert mem["target"] == 2.0 and mem["op"] == "≤"
    opacus = ratios["clipped sum ÷ Opacus clipped sum (cifar10_vgg, cpu)"]
    assert opacus["op"] == "<" and "opacus" in opacus["denominator"]["benchmark"]
    assert opacus["machine"] == "AMD EPYC (2 cores)"
    assert ratios["dp_sgd step ÷ sgd step (digits_mlp, torch, cuda)"]["machine"] == "NVIDIA H100"


def test_ratios_use_the_chosen_statistic() -> None:
    ratios = by_name(compute_ratios(synthetic(), stat="mean"))
    jax = ratios["jax ÷ torch (digits_mlp, grad, cpu)"]
    assert jax["value"] == pytest.approx(1.5) and not jax["met"] and jax["stat"] == "mean"


def paired_entry() -> dict[str, Any]:
    """The clients' kernels timed in 100 alternating rounds: per-round ratios 1.10, 1.11, …,
    2.09 under a machine whose speed drifts from round to round."""
    drift = [1.0 + (i % 7) for i in range(100)]
    times = {"client_means_m1": drift,
             "client_means_m10": [f * (1.1 + 0.01 * i) for i, f in enumerate(drift)]}
    return entry("fashion_mnist_mlp", "jax", "client_means", 1.0, batch=256, paired=times)


def test_paired_rounds_give_the_median_per_round_ratio_and_its_interval() -> None:
    data = {**synthetic(), "benchmarks": [paired_entry()]}
    (ratio,) = compute_ratios(data)
    assert ratio["rule"] == "clients_step_fm" and ratio["stat"] == "median of 100 paired rounds"
    assert ratio["value"] == pytest.approx(1.595) and not ratio["met"]
    # order statistics 40 and 61 of 100: P(40 ≤ Bin(100, ½) ≤ 60) = 0.965
    assert ratio["interval"] == pytest.approx((1.49, 1.70))
    assert "1.6 [1.49, 1.7]" in table([ratio])


def test_a_reference_ratio_has_no_target_and_is_neither_met_nor_missed() -> None:
    entry_ = paired_entry()
    m1 = entry_["extra_info"]["paired"]["client_means_m1"]
    entry_["extra_info"]["paired"]["client_means_m1_rows10"] = [1.2 * t for t in m1]
    floor = by_name(compute_ratios({**synthetic(), "benchmarks": [entry_]}))[
        "m = 1 clients' means as 10 rows ÷ m = 1 means (the (m, d) output's own cost) "
        "(fashion_mnist_mlp, jax, cpu)"]
    assert floor["value"] == pytest.approx(1.2) and floor["target"] is None
    assert floor["met"] is None and status(floor) == "reference" and limit(floor) == ""
    assert table([floor]).splitlines()[1].split()[-1] == "reference"


def test_machine_without_cpu_info() -> None:
    assert machine({"processor": "arm64"}, "cpu") == "arm64"
    assert machine({}, "cuda") == "unknown GPU"


def test_cli_prints_table_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    bench = tmp_path / "micro.json"
    bench.write_text(json.dumps(synthetic()))
    main([str(bench), "--out", str(tmp_path / "r" / "ratios.json")])
    printed = capsys.readouterr().out
    saved = json.loads((tmp_path / "r" / "ratios.json").read_text())
    assert len(saved) == 7 and printed.count("NOT MET") == 3
    assert {"name", "value", "target", "met", "numerator", "denominator", "device",
            "machine"} <= set(saved[0])
    assert table(saved).splitlines()[0].split()[:3] == ["ratio", "value", "target"]


def test_runtime_page(tmp_path: Path) -> None:
    bench = tmp_path / "micro.json"
    bench.write_text(json.dumps(synthetic()))
    out = build_runtime_page(bench, tmp_path / "page")
    html = (out / "index.html").read_text()
    assert "dp_sgd step ÷ sgd step (cifar10_vgg, torch, cpu)" in html
    assert "not met: 2 &gt; 1.2" in html and "not met: 1 ≥ 1" in html
    assert "book-keeping adds per-sample weight gradients" in html  # why the step misses
    assert "met: 1.2 ≤ 1.5" in html and "4 of 7 targets met" in html
    assert "AMD EPYC (2 cores)" in html and "NVIDIA H100" in html and "abc123" in html
    assert "pytest bench/micro --benchmark-only --benchmark-json" in html
    assert "3072 MiB" in html  # peak memory of the private sum
    assert "250 ms ± 25 ms (n = 5)" in html  # cifar10_vgg grad: median ± IQR
    tex = (out / "tables" / "runtime_targets.tex").read_text()
    assert r"\begin{tabular}" in tex and "not met" in tex
    # a figure: each ratio beside its target, for the web and at both print widths
    assert '<img src="ratios.png"' in html
    assert all((out / name).is_file() for name in ("ratios.png", "ratios.pdf",
                                                    "ratios_column.pdf"))


def test_page_cli_and_formatting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "micro.json"
    bench.write_text(json.dumps(synthetic()))
    page_main([str(bench), "--out", str(tmp_path / "p")])
    assert capsys.readouterr().out.strip().endswith("index.html")
    assert (seconds(2.5), seconds(0.0125), seconds(3e-6)) == ("2.5 s", "12.5 ms", "3 µs")
    assert status({"met": False, "value": 2.0, "op": "<", "target": 1.0}) == "not met: 2 ≥ 1"


def test_main_job_wall_time_is_shown_against_its_target(tmp_path: Path) -> None:
    times = tmp_path / "reproduce_times.jsonl"
    assert main_job(times) is None
    rows = [{"papers": ["a"], "all": False, "scale": "quick", "jobs": 2, "force": False,
             "wall_s": 60.0, "cpus": 2, "git_sha": "abc", "finished": "t1"},
            {"papers": ["a", "b"], "all": True, "scale": "quick", "jobs": 2, "force": False,
             "wall_s": 1260.0, "cpus": 2, "cpu": "AMD EPYC", "git_sha": "def",
             "finished": "t2"}]
    times.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    latest = main_job(times)
    assert latest is not None and latest["minutes"] == 21.0 and not latest["met"]
    assert not latest["met_claims"]
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"machine_info": {}, "benchmarks": []}))
    page = (build_runtime_page(bench, tmp_path / "page", times) / "index.html").read_text()
    assert "21 min" in page and "not met" in page and "2 CPUs (AMD EPYC)" in page
    runs = tmp_path / "suite_a" / "runs"
    runs.mkdir(parents=True)
    for i, wall in enumerate((60.0, 120.0)):
        (runs / f"r{i}.json").write_text(json.dumps({"timings": {
            "wall_s": wall, "setup_s": 0.0, "iterate_s": wall, "eval_s": 0.0}}))
    assert suite_costs(tmp_path) == [["suite_a", "2", "3", "0", "3", "0"]]


def test_an_unmet_ratio_shows_its_most_specific_reason() -> None:
    from reports.runtime import LIMITS

    times = {"tree_sums": 3.0, "hvp": 3.0, "grad": 0.1}  # jax ÷ torch
    data = {"machine_info": MACHINE, "benchmarks": [
        entry("digits_mlp", backend, kernel, 1e-3 * (ratio if backend == "jax" else 1))
        for kernel, ratio in times.items() for backend in ("torch", "jax")]}
    by_kernel = {r["kernel"]: r for r in compute_ratios(data) if r["rule"] == "jax_vs_torch"}
    assert limit(by_kernel["tree_sums"]) == LIMITS["jax_vs_torch:tree_sums"]
    assert limit(by_kernel["hvp"]) == LIMITS["jax_vs_torch"]
    assert limit(by_kernel["grad"]) == ""  # met: no reason shown
