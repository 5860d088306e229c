"""A fresh virtualenv with ``pip install .`` alone gives a working tool (issue 41, item 2):
``pip check`` is clean (dp-accounting is a normal dependency, its pins resolved), the CLI
answers, a non-private run works, and a missing optional extra is one line naming it.

Slow: it installs the package and its dependencies from the package index (or pip's cache)."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = """\
suite: tiny
seeds: 1
privacy: {epsilon: [1], delta: 1.0e-5, calibration: pld}
problems:
  - name: strict_saddle
    params: {d: 4, n: 200}
algorithms:
  - name: sgd
    params: {lr: 0.1, steps: 10, batch_size: 16}
  - name: dp_sgd
    params: {lr: 0.1, steps: 10, batch_size: 16, clip: 1.0}
"""


def _run(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, check=check,
                          timeout=1800)


@pytest.mark.slow
def test_pip_install_alone_gives_a_working_tool(tmp_path: Path) -> None:
    venv.EnvBuilder(with_pip=True).create(tmp_path / "env")
    python = tmp_path / "env" / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", ROOT)
    assert _run(python, "-m", "pip", "check").returncode == 0
    saddlebench = tmp_path / "env" / "bin" / "saddlebench"
    assert _run(saddlebench, "--version").stdout.strip()
    assert "dp_sgd" in _run(saddlebench, "list").stdout
    account = _run(saddlebench, "account", "--algorithm", "dp_sgd", "--n", "1000", "--batch",
                   "50", "--steps", "100", "--sigma", "1.0", "--delta", "1e-5")
    assert "ε" in account.stdout or "epsilon" in account.stdout.lower()
    experiment = tmp_path / "tiny.yaml"
    experiment.write_text(TINY)
    _run(saddlebench, "run", experiment, "--out", tmp_path / "out", "--no-progress")
    assert len(list((tmp_path / "out" / "tiny" / "runs").glob("*.json"))) >= 2
    # the report draws with matplotlib (the reports extra): one line naming it, no traceback
    report = _run(saddlebench, "report", tmp_path / "out" / "tiny", check=False)
    assert report.returncode != 0 and "reports" in report.stderr + report.stdout
    assert "Traceback" not in report.stderr + report.stdout
