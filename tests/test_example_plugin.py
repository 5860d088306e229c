"""The example plugin (examples/plugin), installed as a user would install theirs
(``pip install -e examples/plugin``; ``nox -s tests`` does): found through its entry points
by ``list``; its experiment runs with ``--jobs 2`` and on a Dask local cluster; its
algorithm is audited; the suite is reported, and the report still renders when the plugin
cannot be imported. Its paper (example2026, by entry point too) passes the common checks,
its claims have known answers, and ``reproduce`` writes its page."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

from bench.audit import DEFAULT_RUNS

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


# -- the plugin's paper (example2026): registered by entry point, checked, reproduced -----

KEY = "example2026"
MOMENTUM = "dp_sgd_momentum"


def compare_run(label: str, eps: float, loss: float, seed: int, **extra: Any) -> dict[str, Any]:
    """A finished run of the example's comparison (role ``compare``)."""
    return {"role": "compare", "problem": "rosenbrock_sum", "algorithm": label,
            "label": label, "epsilon": eps, "seed": seed, "final_loss": loss, **extra}


def example_verdict(claim: str, runs: list[dict[str, Any]]) -> str:
    from reports.known_answers import synthetic_results, verdict_of

    return verdict_of(KEY, claim, synthetic_results(KEY, runs)).verdict


@pytest.mark.known_answer("example2026", "C1")
@pytest.mark.parametrize(("shift", "verdict"), [(0.0, "held"), (-0.3, "held"),
                                                (0.3, "contradicted")])
def test_momentum_no_worse_than_dp_sgd_within_the_declared_margin(shift: float,
                                                                  verdict: str) -> None:
    """Paired by seed at each ε: within the margin (0.05) held, 0.3 worse contradicted;
    non-private runs are no setting of it."""
    dp_sgd = [compare_run("dp_sgd", eps, 0.5 + 0.1 * s, s) for eps in (1, 4) for s in range(5)]
    mine = [compare_run(MOMENTUM, eps, 0.5 + 0.1 * s + shift + 0.001 * (s % 2), s)
            for eps in (1, 4) for s in range(5)]
    sgd = [compare_run("sgd", math.inf, 0.3, s) for s in range(5)]
    assert example_verdict("C1", dp_sgd + mine + sgd) == verdict


@pytest.mark.known_answer("example2026", "C2")
def test_momentum_loss_falls_with_epsilon() -> None:
    def grid(loss: Any) -> list[dict[str, Any]]:
        return [compare_run(MOMENTUM, eps, loss(eps) + 1e-4 * (s - 2), s)
                for eps in (1, 2, 4) for s in range(5)]

    assert example_verdict("C2", grid(lambda e: 0.004 / e)) == "held"
    assert example_verdict("C2", grid(lambda e: 0.001 * e)) == "contradicted"
    assert example_verdict("C2", []) == "not run"


@pytest.mark.known_answer("example2026", "C3")
def test_momentum_plans_dp_sgd_s_sigma_within_the_target() -> None:
    def runs(sigma: float, spent: float, reference: bool = True) -> list[dict[str, Any]]:
        mine = [compare_run(MOMENTUM, 4.0, 0.01, s, sigma=sigma, eps_pld=spent)
                for s in range(3)]
        theirs = [compare_run("dp_sgd", 4.0, 0.5, s, sigma=1.09, eps_pld=3.99)
                  for s in range(3)]
        return mine + (theirs if reference else [])

    assert example_verdict("C3", runs(1.09, 3.99)) == "held"
    assert example_verdict("C3", runs(1.2, 3.5)) == "contradicted"  # another σ
    assert example_verdict("C3", runs(1.09, 4.2)) == "contradicted"  # past the target
    assert example_verdict("C3", runs(1.09, 3.99, reference=False)) == "inconclusive"


def test_its_paper_is_registered_and_passes_the_common_checks(
        capsys: pytest.CaptureFixture[str]) -> None:
    from reports.check import paper_targets
    from reports.papers import get_paper, paper_keys
    from saddlebench.cli import main

    assert KEY in paper_keys() and paper_targets("saddlebench-example") == [KEY]
    assert {c.kind for c in get_paper(KEY).claims} <= {"design", "implementation"}
    assert main(["check", KEY]) == 0
    out = capsys.readouterr().out
    assert f"paper {KEY}" in out and "FAIL" not in out


def test_list_shows_its_paper_as_declared() -> None:
    from reports.papers import get_paper, paper_info

    paper = get_paper(KEY)
    assert paper_info(KEY) == (KEY, paper.title, paper.source, paper.url, ("compare",))
    listed = saddlebench("list")
    assert listed.returncode == 0, listed.stderr
    assert KEY in listed.stdout and "the saddlebench example plugin" in listed.stdout


def test_its_paper_reproduces_and_its_page_gives_every_verdict(tmp_path: Path) -> None:
    from reports.papers import get_paper

    done = saddlebench("reproduce", KEY, "--scale", "quick", "--jobs", "1", "--out",
                       str(tmp_path), "--no-pdf", "--no-progress")
    assert done.returncode == 0, done.stderr
    page = tmp_path / "report" / KEY / "quick"
    status = json.loads((page / "status.json").read_text())
    verdicts = {c["id"]: c["verdict"] for c in status["claims"]}
    assert list(verdicts) == [c.id for c in get_paper(KEY).claims]
    assert verdicts == {"C1": "held", "C2": "held", "C3": "held"}  # seeded runs
    html = (page / "index.html").read_text()
    for claim, verdict in verdicts.items():  # each claim's row shows its verdict
        row = html[html.index(f'<tr id="claim-{claim}">'):]
        assert f'<td class="{verdict}">{verdict}</td>' in row[:row.index("</tr>")]
    assert "Table 1: final loss per method and ε" in html
    assert (page / f"{KEY}_loss_vs_epsilon.png").exists()


@pytest.mark.parametrize("passed", [True, False])
def test_reproduce_with_audit_audits_beside_the_runs(tmp_path: Path, passed: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``reproduce --audit`` runs ``saddlebench audit --all``'s audit (its own defaults) in
    the same workers; a failed audit fails the command, and the wall time records it."""
    from types import SimpleNamespace

    from saddlebench import cli

    asked: list[Any] = []

    def fake_audit(args: Any) -> list[Any]:
        asked.append(args)
        return [SimpleNamespace(passed=passed)]

    monkeypatch.setattr(cli, "audit", fake_audit)
    status = cli.main(["reproduce", KEY, "--scale", "quick", "--jobs", "1", "--out",
                       str(tmp_path), "--no-pdf", "--no-progress", "--audit"])
    assert status == (0 if passed else 1)
    (args,) = asked
    assert args.all and args.jobs == 1 and args.out == str(tmp_path)
    assert (args.runs, args.setting, args.epsilon) == (DEFAULT_RUNS, "power", 2.0)
    entry = json.loads((tmp_path / "reproduce_times.jsonl").read_text().splitlines()[-1])
    assert entry["audit"] is True and entry["cpu"]  # the machine the time was measured on
