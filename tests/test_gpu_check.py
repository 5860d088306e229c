"""The GPU check (bench/gpu_check.py) and the runtime page's GPU section, without a GPU:
run records read into steps per second, the check's report written step by step, and the
page showing a fresh check, the last stored one (said so), or "not measured"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_runtime_report import entry, synthetic

from bench import gpu_check
from bench.micro.ratios import compute_ratios
from reports import runtime


def write_run(root: Path, suite: str, steps: int, iterate_s: float) -> None:
    runs = root / suite / "runs"
    runs.mkdir(parents=True)
    record = {"spec": {"algorithm": {"name": "prisma"},
                       "problem": {"name": "fashion_mnist_vgg", "params": {"clients": 10}}},
              "status": "done", "plan": {"steps": steps}, "timings": {"iterate_s": iterate_s}}
    (runs / "r.json").write_text(json.dumps(record))


def test_run_rates_are_steps_per_second(tmp_path: Path) -> None:
    write_run(tmp_path, "gpu_huang2025_table1", 50, 2.0)
    (rate,) = gpu_check.run_rates(tmp_path)
    assert rate["steps_per_s"] == 25 and rate["clients"] == 10 and rate["method"] == "prisma"


def test_the_check_writes_its_report_without_running_anything(tmp_path: Path) -> None:
    code = gpu_check.main(["--out", str(tmp_path), "--skip", "tests", "--skip", "micro",
                           "--skip", "runs"])
    report = json.loads((tmp_path / "gpu.json").read_text())
    assert code == 0 and "torch" in report["device"] and report["date"]


def gpu_report(ratios: list[dict[str, Any]]) -> dict[str, Any]:
    return {"date": "2026-11-28T07:00:00+00:00", "git_sha": "abc123",
            "device": {"gpu": "NVIDIA H200", "driver": "580.159.04", "torch": "2.11.0",
                       "cuda": "13.0"},
            "tests": {"command": "pytest tests -m gpu", "tests": 7, "failures": 0, "errors": 0,
                      "skipped": 1},
            "micro": {"ratios": ratios},
            "runs": [{"file": "huang2025_table1.yaml", "returncode": 0,
                      "runs": [{"method": "prisma", "problem": "fashion_mnist_vgg",
                                "clients": 10, "steps": 50, "iterate_s": 2.0,
                                "steps_per_s": 25.0}]}]}


def cuda_ratios() -> list[dict[str, Any]]:
    data = {**synthetic(), "benchmarks": [
        entry("cifar10_cnn", "torch", "clipped_grad_sum", 3.0, device="cuda", batch=512),
        entry("cifar10_cnn", "torch", "module_grad", 1.0, device="cuda", batch=512),
        entry("cifar10_cnn", "torch", "opacus_ghost_clipped_sum", 4.0, device="cuda",
              batch=512)]}
    return [r for r in compute_ratios(data) if r["device"] == "cuda"]


@pytest.mark.parametrize("fresh", [True, False])
def test_the_runtime_page_shows_the_gpu_check_and_its_provenance(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: bool) -> None:
    bench = tmp_path / "micro.json"
    bench.write_text(json.dumps(synthetic()))
    found = tmp_path / ("gpu.json" if fresh else "stored.json")
    found.write_text(json.dumps(gpu_report(cuda_ratios())))
    monkeypatch.setattr(runtime, "STORED", tmp_path / "stored.json")
    out = runtime.build_runtime_page(bench, tmp_path / "page", gpu_json=tmp_path / "gpu.json")
    html = (out / "index.html").read_text()
    assert "clipped sum ÷ plain backward (cifar10_cnn, torch, cuda)" in html
    assert "not met: 3 &gt; 1.5" in html and "met: 0.75 ≤ 0.5" not in html
    assert "NVIDIA H200, driver 580.159.04" in html and "25" in html
    said = "Measured by this machine" if fresh else "Not measured on this machine"
    assert said in html and '<img src="gpu_ratios.png"' in html


def test_without_any_gpu_check_the_page_says_not_measured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = tmp_path / "micro.json"
    bench.write_text(json.dumps(synthetic()))
    monkeypatch.setattr(runtime, "STORED", tmp_path / "none.json")
    out = runtime.build_runtime_page(bench, tmp_path / "page", gpu_json=tmp_path / "no.json")
    assert "Not measured: no GPU check has run" in (out / "index.html").read_text()
