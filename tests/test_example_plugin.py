"""The example plugin (examples/plugin), installed as a user would install theirs
(``pip install -e examples/plugin``; ``nox -s tests`` does): found through its entry points
by ``list``; its experiment runs with ``--jobs 2`` and on a Dask local cluster; its
algorithm is audited; the suite is reported, and the report still renders when the plugin
cannot be imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENT = ROOT / "examples" / "plugin" / "compare.yaml"
SMALL = ["--set", "seeds=2", "--set", "tuning.seeds=1"]  # the same file, fewer runs

try:
    version("saddlebench-example")
except PackageNotFoundError:
    pytestmark = pytest.mark.skipif(
        not os.environ.get("SADDLEBENCH_REQUIRE_TOOLS"),
        reason="the example plugin is not installed (pip install -e examples/plugin)")

HIDE = """
import sys
class Hide:  # as if the plugin were gone: its module cannot be imported
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "saddlebench_example":
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
from saddlebench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def saddlebench(*args: str, hide: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", HIDE] if hide else [sys.executable, "-m", "saddlebench.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def finals(folder: Path) -> dict[str, dict]:
    sides = [json.loads(p.read_text()) for p in (folder / "runs").glob("*.json")]
    return {s["run_id"]: s for s in sides if s["spec"].get("stage", "final") == "final"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plugin")
    done = saddlebench("run", str(EXPERIMENT), "--out", str(out), "--jobs", "2",
                       "--no-progress", *SMALL)
    assert done.returncode == 0, done.stderr
    return out / "example_compare"


def test_list_finds_the_plugin_by_its_entry_points() -> None:
    listed = saddlebench("list")
    assert listed.returncode == 0, listed.stderr
    assert "dp_sgd_momentum" in listed.stdout and "rosenbrock_sum" in listed.stdout


def test_its_experiment_runs_with_two_workers(suite: Path) -> None:
    runs = finals(suite)
    labels = {s["spec"]["algorithm"]["name"] for s in runs.values()}
    assert labels == {"dp_sgd_momentum", "dp_sgd", "sgd"}
    assert all(s["status"] == "done" for s in runs.values())
    mine = [s for s in runs.values() if s["spec"]["algorithm"]["name"] == "dp_sgd_momentum"]
    assert all(s["eps"]["pld"] <= s["eps"]["target"] * (1 + 1e-6) for s in mine)


def test_the_dask_executor_gives_the_same_numbers(suite: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    done = saddlebench("run", str(EXPERIMENT), "--out", str(tmp_path), "--executor", "dask",
                       "--cluster", "local:2", "--no-progress", *SMALL)
    assert done.returncode == 0, done.stderr
    dask = finals(tmp_path / "example_compare")
    local = finals(suite)
    assert dask.keys() == local.keys()
    assert {k: s["final"].get("loss") for k, s in dask.items()} == \
        {k: s["final"].get("loss") for k, s in local.items()}


def test_its_algorithm_passes_the_privacy_audit(tmp_path: Path) -> None:
    done = saddlebench("audit", "dp_sgd_momentum", "--runs", "300", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "audit" / "dp_sgd_momentum.json").read_text())
    assert record["passed"] and record["exact"]["passed"]


def test_the_report_shows_it_and_renders_without_the_plugin(suite: Path,
                                                           tmp_path: Path) -> None:
    for hide, out in ((False, tmp_path / "with"), (True, tmp_path / "without")):
        done = saddlebench("report", str(suite), "--out", str(out), "--no-pdf", hide=hide)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        page = (out / "index.html").read_text()
        assert "dp_sgd_momentum" in page and (out / "utility_vs_epsilon.png").exists()
    assert "cannot be loaded and is skipped" in done.stderr  # the hidden plugin is named
