"""The GPU check (issue 39), for whenever a machine with a CUDA GPU is at hand::

    python -m bench.gpu_check --out out/gpu [--store]      (``nox -s gpu`` runs it)

1. the cuda tests: ``pytest -m gpu tests`` (book-keeping on cuda equals cpu, ...);
2. the micro benchmarks on cuda: ``pytest -m gpu bench/micro`` (our kernels, the plain
   module backward, Opacus's per-sample and ghost clipping, jax, at the papers' batches,
   :mod:`bench.micro.test_paper_batches`), their ratios (:mod:`bench.micro.ratios`);
3. short paper-scale runs of each training paper on cuda (``bench/gpu_runs/*.yaml``, on
   Fashion-MNIST; skipped, and said so, where its files are absent);
4. ``gpu.json``: the device, driver, versions, date and commit, the tests' counts, the
   ratios and each run's steps per second. ``--store`` also copies it to
   :data:`STORED`, which the runtime page shows (with this provenance) on machines
   without a GPU.

Each step's outcome is recorded even when it fails; the exit status is that of the worst.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.env import ROOT, environment
from bench.micro.ratios import compute_ratios

RUNS = Path(__file__).parent / "gpu_runs"
STORED = Path(__file__).parent / "micro" / "measured" / "gpu.json"
TIMEOUT_S = 1800


def _pytest(args: list[str], junit: Path) -> dict[str, Any]:
    """``pytest ARGS`` in a fresh interpreter; its exit status and test counts."""
    cmd = [sys.executable, "-m", "pytest", *args, "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}"]
    done = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, timeout=TIMEOUT_S)
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n", flush=True)
    counts = {"returncode": done.returncode, "command": " ".join(["pytest", *args])}
    if junit.exists():
        suites = list(ET.parse(junit).iter("testsuite"))
        for field in ("tests", "failures", "errors", "skipped"):
            counts[field] = sum(int(s.get(field, 0)) for s in suites)
    return counts


def device_facts() -> dict[str, Any]:
    """The GPU's name and memory, the driver, torch's and CUDA's versions."""
    import torch

    facts: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        facts.update(gpu=props.name, memory_gib=round(props.total_memory / 2**30, 1))
    smi = shutil.which("nvidia-smi")
    if smi:
        done = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                              text=True, capture_output=True)
        facts["driver"] = done.stdout.strip() or None
    return facts


def micro(out: Path) -> dict[str, Any]:
    """The cuda micro benchmarks (JSON in ``out``) and their ratios."""
    target = out / "micro_cuda.json"
    counts = _pytest(["bench/micro", "-m", "gpu", "--benchmark-only",
                      f"--benchmark-json={target}"], out / "micro.xml")
    ratios = compute_ratios(json.loads(target.read_text())) if target.exists() else []
    return {**counts, "ratios": [r for r in ratios if r["device"] == "cuda"]}


def paper_runs(out: Path) -> list[dict[str, Any]]:
    """Each ``bench/gpu_runs`` file run on cuda: per run, its method, problem, steps,
    wall time and steps per second (or why it did not run)."""
    results = []
    for spec in sorted(RUNS.glob("*.yaml")):
        where = out / "runs" / spec.stem
        cmd = [sys.executable, "-m", "saddlebench.cli", "run", str(spec), "--out", str(where),
               "--no-progress", "--yes"]
        done = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, timeout=TIMEOUT_S)
        print(done.stdout[-1500:], done.stderr[-1500:], sep="\n", flush=True)
        entry: dict[str, Any] = {"file": spec.name, "returncode": done.returncode}
        if done.returncode != 0:
            entry["error"] = (done.stderr or done.stdout).strip().splitlines()[-1:]
        entry["runs"] = run_rates(where)
        results.append(entry)
    return results


def run_rates(root: Path) -> list[dict[str, Any]]:
    """Steps per second of every finished run record under ``root``."""
    rows = []
    for record in sorted(root.glob("*/runs/*.json")):
        data = json.loads(record.read_text())
        spec, timings = data.get("spec") or {}, data.get("timings") or {}
        steps, iterate = (data.get("plan") or {}).get("steps"), timings.get("iterate_s")
        rows.append({"suite": record.parent.parent.name,
                     "method": (spec.get("algorithm") or {}).get("name"),
                     "problem": (spec.get("problem") or {}).get("name"),
                     "clients": ((spec.get("problem") or {}).get("params") or {}).get("clients"),
                     "status": data.get("status"), "steps": steps, "iterate_s": iterate,
                     "steps_per_s": steps / iterate if steps and iterate else None})
    return rows


def write(report: dict[str, Any], target: Path, stored: Path | None) -> None:
    """``report`` as JSON at ``target`` (and ``stored``): after every step, so that a check
    cut short keeps what it measured."""
    text = json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n"
    for path in (target, stored):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_check",
                                     description="cuda tests, cuda micro benchmarks and short "
                                                 "paper-scale runs; writes OUT/gpu.json")
    parser.add_argument("--out", type=Path, default=Path("out/gpu"))
    parser.add_argument("--store", action="store_true",
                        help=f"also copy gpu.json to {STORED.relative_to(ROOT)}")
    parser.add_argument("--skip", action="append", default=[],
                        choices=("tests", "micro", "runs"), help="leave out a step")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment()
    report: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "git_sha": env.get("git_sha"), "versions": env.get("versions"),
                              "device": device_facts()}
    steps = {"tests": lambda: _pytest(["tests", "-m", "gpu"], args.out / "tests.xml"),
             "micro": lambda: micro(args.out), "runs": lambda: paper_runs(args.out)}
    write(report, args.out / "gpu.json", None)
    for name, step in steps.items():
        if name not in args.skip:
            report[name] = step()
            write(report, args.out / "gpu.json", STORED if args.store else None)
    print(args.out / "gpu.json")
    codes = [report[k].get("returncode", 0) for k in ("tests", "micro") if k in report]
    codes += [r["returncode"] for r in report.get("runs", [])]
    return max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main())
