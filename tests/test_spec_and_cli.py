"""Experiment specs, the grid, the runner's failure handling and the ``saddlebench`` CLI.

User errors must end in exactly one stderr line ``saddlebench: error: ...`` naming the
offending thing, and exit status 2.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from algorithms import PrivacyTarget
from algorithms.dp_sgd import DPSGD, DPSGDParams
from algorithms.privacy.accounting import epsilon, epsilons
from bench.experiment import load_experiment, parse_experiment
from bench.runner import run_one
from bench.spec import ComponentSpec, RunSpec, SpecError, component
from bench.store import Store
from problems import DataSize
from problems.backend import BackendSpec
from saddlebench.cli import main

# -- helpers ------------------------------------------------------------------------------

TINY_PROBLEM = {"name": "nc_least_squares", "params": {"clients": 2, "base_n": 50, "d": 5},
                "backend": "numpy"}


def experiment_doc(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "suite": "tiny",
        "seeds": 1,
        "eval": {"points": 3, "metrics": ["loss", "grad_norm"]},
        "problems": [dict(TINY_PROBLEM)],
        "algorithms": [{"name": "sgd", "params": {"lr": 0.05, "steps": 20, "batch_size": 16}}],
    }
    doc.update(overrides)
    return doc


def write_yaml(tmp_path: Path, doc: Any, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error(code: int, err: str, *names: str) -> str:
    """Exit 2 and exactly one stderr line 'saddlebench: error: ...' naming ``names``."""
    assert code == 2
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("saddlebench: error:"), line
    for name in names:
        assert name in line, (name, line)
    return line


def sidecars(root: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((root / "runs").glob("*.json"))}


def normalised(text: str) -> str:
    return " ".join(text.split())


# -- bad input through the CLI --------------------------------------------------------------


def test_unknown_algorithm_in_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc(algorithms=[{"name": "nope_algo", "params": {"steps": 5}}])
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    line = assert_one_error(code, err, "nope_algo", "exp.yaml", "algorithms[0]")
    assert "dp_sgd" in line  # lists what is registered
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_unknown_problem_in_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc(problems=[{"name": "nope_problem"}])
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    line = assert_one_error(code, err, "nope_problem", "problems[0]")
    assert "strict_saddle" in line


def test_unknown_algorithm_in_account(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "account", "--algorithm", "nope", "--n", "100",
                             "--sigma", "1")
    assert_one_error(code, err, "'nope'")
    assert out == ""


@pytest.mark.parametrize("eps", [0, -2])
def test_nonpositive_epsilon_in_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     eps: float) -> None:
    doc = experiment_doc(privacy={"epsilon": [1, eps]},
                         algorithms=[{"name": "dp_sgd", "params": {"steps": 5}}])
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    assert_one_error(code, err, "privacy.epsilon[1] must be > 0", f"got {eps}")


@pytest.mark.parametrize("eps", ["0", "-1"])
def test_nonpositive_epsilon_in_account(capsys: pytest.CaptureFixture[str], eps: str) -> None:
    code, _, err = run_cli(capsys, "account", "--algorithm", "dp_sgd", "--n", "1000",
                           f"--epsilon={eps}")
    assert_one_error(code, err, "epsilon")


@pytest.mark.parametrize("delta", [0, 1, 1.5, -1e-5])
def test_delta_outside_unit_interval_in_yaml(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             delta: float) -> None:
    doc = experiment_doc(privacy={"epsilon": 1, "delta": delta},
                         algorithms=[{"name": "dp_sgd", "params": {"steps": 5}}])
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    assert_one_error(code, err, "delta")


@pytest.mark.parametrize("delta", ["0", "1", "2.5"])
def test_delta_outside_unit_interval_in_account(capsys: pytest.CaptureFixture[str],
                                                delta: str) -> None:
    code, _, err = run_cli(capsys, "account", "--algorithm", "dp_sgd", "--n", "1000",
                           "--sigma", "1", "--delta", delta)
    assert_one_error(code, err, "delta")


def test_malformed_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = textwrap.dedent("""\
        suite: broken
        problems: [ {name: strict_saddle
        algorithms:
          - name: sgd
        """)
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, text)), "--out",
                           str(tmp_path / "out"))
    line = assert_one_error(code, err, "exp.yaml", "malformed YAML")
    assert re.search(r"line \d+", line)


def test_unknown_top_level_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc(bogus_key=1)
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    assert_one_error(code, err, "'bogus_key'")


@pytest.mark.parametrize(("where", "key", "value", "expected"), [
    ("algorithms", "steps", "many", "an integer"),
    ("algorithms", "lr", "fast", "a number"),
    ("algorithms", "steps", 2.5, "an integer"),
    ("problems", "d", 5.5, "an integer"),
    ("problems", "clients", True, "an integer"),
])
def test_wrong_param_type(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str,
                          key: str, value: Any, expected: str) -> None:
    doc = experiment_doc()
    doc[where][0]["params"] = {**doc[where][0]["params"], key: value}
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    assert_one_error(code, err, f"{where}[0] (", f"): params.{key}: expected {expected}, got")


def test_unknown_param(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc()
    doc["algorithms"][0]["params"]["stepz"] = 3
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    assert_one_error(code, err, "'stepz'")


def test_missing_experiment_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "run", str(tmp_path / "absent.yaml"))
    assert_one_error(code, err, "absent.yaml")


def test_private_algorithm_without_epsilon(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc(algorithms=[{"name": "dp_sgd", "params": {"steps": 5}}])
    code, _, err = run_cli(capsys, "run", str(write_yaml(tmp_path, doc)), "--out",
                           str(tmp_path / "out"))
    assert_one_error(code, err, "dp_sgd", "epsilon")


@pytest.mark.parametrize("argv", [
    ("account", "--algorithm", "dp_sgd", "--n", "1000"),  # neither --sigma nor --epsilon
    ("account", "--algorithm", "dp_sgd", "--n", "1000", "--sigma", "1", "--epsilon", "1"),
    ("account", "--algorithm", "dp_sgd", "--n", "0", "--sigma", "1"),
    ("account", "--algorithm", "dp_sgd", "--n", "1000", "--sigma", "1", "--param", "clip=abc"),
    ("account", "--algorithm", "dp_sgd", "--n", "1000", "--sigma", "1", "--param", "noequals"),
    ("account", "--algorithm", "dp_sgd", "--n", "10", "--sigma", "1"),  # batch 64 > n
])
def test_account_usage_errors(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert_one_error(code, err)


# -- account --------------------------------------------------------------------------------


def table_value(out: str, label: str) -> str:
    for line in out.splitlines():
        if label in line:
            cells = [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]
            return cells[-1]
    raise AssertionError(f"no row {label!r} in:\n{out}")


def test_account_sigma_prints_accountant_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "account", "--algorithm", "dp_sgd", "--n", "1797",
                             "--batch", "64", "--steps", "500", "--sigma", "1.0",
                             "--delta", "1e-5")
    assert code == 0, err
    ledger = DPSGD(DPSGDParams(batch_size=64, steps=500)).planned_ledger(DataSize(n=1797), 1.0)
    eps = epsilons(ledger, 1e-5)
    assert eps.pld is not None and eps.rdp is not None
    assert float(table_value(out, "PLD")) == pytest.approx(eps.pld, rel=1e-5)
    assert float(table_value(out, "RDP")) == pytest.approx(eps.rdp, rel=1e-5)
    assert table_value(out, "PLD") == f"{eps.pld:.6g}"
    assert table_value(out, "RDP") == f"{eps.rdp:.6g}"
    assert "subsampled" in table_value(out, "GDP")
    assert table_value(out, "noise multiplier").startswith("1 ")
    assert eps.pld < eps.rdp


def test_account_epsilon_calibrates_sigma(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "account", "--algorithm", "dp_sgd", "--n", "1797",
                             "--batch", "64", "--steps", "500", "--epsilon", "2",
                             "--delta", "1e-5")
    assert code == 0, err
    cell = table_value(out, "noise multiplier")
    assert cell.endswith("(pld)")
    sigma = float(cell.split()[0])
    ledger = DPSGD(DPSGDParams(batch_size=64, steps=500)).planned_ledger(DataSize(n=1797),
                                                                         sigma)
    # σ is printed to 6 significant digits; the PLD ε it spends is 2
    assert epsilon(ledger, 1e-5, "pld") == pytest.approx(2.0, rel=1e-3)
    assert float(table_value(out, "PLD")) == pytest.approx(2.0, rel=1e-3)
    assert float(table_value(out, "PLD")) <= 2.0


def test_account_nonprivate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "account", "--algorithm", "sgd", "--n", "1000")
    assert code == 0
    assert table_value(out, "PLD") == "inf"


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    for name in ("sgd", "dp_sgd", "noisy_sgd", "strict_saddle", "nc_least_squares",
                 "digits_mlp", "papers", "avdiukhin2024", "xu2026"):
        assert name in out


# -- runner: divergence and failures -----------------------------------------------------------


def one_spec(**alg: Any) -> RunSpec:
    doc = experiment_doc(algorithms=[{"name": "sgd", "params": alg}],
                         eval={"points": 4, "metrics": ["loss", "grad_norm"]})
    (spec,) = parse_experiment(doc).specs
    return spec


def test_divergent_run_is_recorded_as_diverged() -> None:
    record = run_one(one_spec(lr=1e6, steps=100, batch_size=16))
    assert record.status == "diverged", record.error
    assert record.error is None
    assert record.rows, "the diverging trajectory is still recorded"
    last = record.rows[-1]
    assert not all(math.isfinite(last.get(k, math.nan)) for k in ("loss", "grad_norm"))
    assert record.rows[0]["step"] == 0 and math.isfinite(record.rows[0]["loss"])


def test_healthy_run_is_done() -> None:
    record = run_one(one_spec(lr=0.05, steps=30, batch_size=16))
    assert record.status == "done", record.error
    steps = [r["step"] for r in record.rows if r["point"] == "iterate"]
    assert steps[0] == 0 and steps[-1] == 30
    assert record.rows[-1]["point"] == "output"
    assert record.rows[-1]["loss"] < record.rows[0]["loss"]
    assert record.eps["pld"] == math.inf
    sidecar = json.loads(json.dumps(record.sidecar(), default=str))
    assert sidecar["status"] == "done"
    assert sidecar["run_id"] == record.spec.digest


def test_failing_run_becomes_an_error_record() -> None:
    # noisy_sgd on a problem without a published bound G, and no params.bound
    doc = experiment_doc(privacy={"epsilon": 1},
                         algorithms=[{"name": "noisy_sgd", "params": {"steps": 5}}])
    (spec,) = parse_experiment(doc).specs
    record = run_one(spec)
    assert record.status == "error"
    assert "bound" in record.error
    assert "traceback" in record.info


def test_private_run_record_eps_matches_plan() -> None:
    doc = experiment_doc(privacy={"epsilon": 2, "sigma": 1.2},
                         algorithms=[{"name": "dp_sgd",
                                      "params": {"steps": 20, "batch_size": 16}}])
    (spec,) = parse_experiment(doc).specs
    record = run_one(spec)
    assert record.status == "done", record.error
    assert record.eps["pld"] == record.plan["eps"]["pld"]
    assert record.eps["rdp"] == record.plan["eps"]["rdp"]
    assert record.eps["target"] == 2.0
    assert sum(e["count"] for e in record.ledger) == 20


def tiny_sweep(tmp_path: Path) -> Path:
    doc = experiment_doc(
        eval={"points": 4, "metrics": ["loss", "grad_norm"]},
        algorithms=[
            {"name": "sgd", "label": "boom", "params": {"lr": 1e6, "steps": 100,
                                                        "batch_size": 16}},
            {"name": "sgd", "label": "healthy", "params": {"lr": 0.05, "steps": 30,
                                                           "batch_size": 16}},
        ],
    )
    return write_yaml(tmp_path, doc)


def test_sweep_goes_on_after_divergence_and_rerun_is_cached(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny_sweep(tmp_path)
    out_root = tmp_path / "out"
    code, out, err = run_cli(capsys, "run", str(path), "--out", str(out_root), "--no-progress")
    assert code == 0, err
    assert "0 cached, 2 to run" in normalised(out)
    suite = out_root / "tiny"
    sides = sidecars(suite)
    assert len(sides) == 2
    by_label = {s["spec"]["label"]: s for s in sides.values()}
    assert by_label["boom"]["status"] == "diverged"
    assert by_label["healthy"]["status"] == "done"
    for run_id in sides:
        assert (suite / "runs" / f"{run_id}.parquet").is_file()
    meta = json.loads((suite / "suite.json").read_text())
    assert sorted(meta["run_ids"]) == sorted(sides)

    # a second invocation reruns nothing
    mtimes = {p: p.stat().st_mtime_ns for p in (suite / "runs").iterdir()}
    code, out, err = run_cli(capsys, "run", str(path), "--out", str(out_root), "--no-progress")
    assert code == 0, err
    assert "2 cached, 0 to run" in normalised(out)
    assert "nothing to run" in normalised(out)
    assert {p: p.stat().st_mtime_ns for p in (suite / "runs").iterdir()} == mtimes

    # --force reruns everything
    code, out, _ = run_cli(capsys, "run", str(path), "--out", str(out_root), "--no-progress",
                           "--force")
    assert code == 0
    assert "2 to run" in normalised(out)


def test_error_runs_are_not_cached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc(privacy={"epsilon": 1},
                         algorithms=[{"name": "noisy_sgd", "params": {"steps": 5}}])
    path = write_yaml(tmp_path, doc)
    code, out, _ = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"),
                           "--no-progress")
    assert code == 1  # a failed run is reported, the sweep still finishes
    assert "error" in out
    code, out, _ = run_cli(capsys, "run", str(path), "--out", str(tmp_path / "out"),
                           "--no-progress")
    assert "0 cached, 1 to run" in normalised(out)


@pytest.mark.slow
def test_jobs_2_matches_jobs_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = experiment_doc(
        seeds=2,
        privacy={"epsilon": 2, "sigma": 1.0},
        eval={"points": 3, "metrics": ["loss", "grad_norm"]},
        algorithms=[{"name": "sgd", "params": {"lr": 0.05, "steps": 20, "batch_size": 16}},
                    {"name": "dp_sgd", "params": {"lr": 0.05, "steps": 20, "batch_size": 16}}],
    )
    path = write_yaml(tmp_path, doc)
    results = {}
    for jobs in ("1", "2"):
        out_root = tmp_path / f"out{jobs}"
        code, _, err = run_cli(capsys, "run", str(path), "--out", str(out_root), "--jobs", jobs,
                               "--no-progress")
        assert code == 0, err
        results[jobs] = sidecars(out_root / "tiny")
    assert len(results["1"]) == 4
    assert set(results["1"]) == set(results["2"])
    for run_id, side in results["1"].items():
        other = results["2"][run_id]
        assert side["status"] == other["status"] == "done"
        assert side["final"]["loss"] == pytest.approx(other["final"]["loss"], rel=1e-12)
        assert side["final"]["grad_norm"] == pytest.approx(other["final"]["grad_norm"],
                                                           rel=1e-12)
        assert side["eps"] == other["eps"]


# -- RunSpec -------------------------------------------------------------------------------------


def test_digest_stable_under_param_completion() -> None:
    from algorithms.sgd import SGDParams
    from problems.synthetic.nc_least_squares import NCLeastSquaresParams

    implicit = parse_experiment(experiment_doc(
        problems=[{"name": "nc_least_squares"}],
        algorithms=[{"name": "sgd"}])).specs[0]
    explicit = parse_experiment(experiment_doc(
        problems=[{"name": "nc_least_squares", "params": vars(NCLeastSquaresParams())}],
        algorithms=[{"name": "sgd", "params": vars(SGDParams())}])).specs[0]
    assert implicit.digest == explicit.digest
    assert implicit.algorithm.params == vars(SGDParams())
    # an int where a float is expected is the same value
    as_int = parse_experiment(experiment_doc(
        problems=[{"name": "nc_least_squares", "params": {"lam": 1}}],
        algorithms=[{"name": "sgd"}])).specs[0]
    assert as_int.digest == implicit.digest


@pytest.mark.parametrize(("where", "key", "value"), [
    ("algorithms", "lr", 0.2), ("algorithms", "steps", 7), ("problems", "d", 6),
    ("problems", "data_seed", 3),
])
def test_digest_changes_with_params(where: str, key: str, value: Any) -> None:
    base = parse_experiment(experiment_doc()).specs[0]
    doc = experiment_doc()
    doc[where][0]["params"] = {**doc[where][0]["params"], key: value}
    assert parse_experiment(doc).specs[0].digest != base.digest


def test_digest_depends_on_privacy_backend_seed_and_label() -> None:
    (base,) = parse_experiment(experiment_doc(
        privacy={"epsilon": 1}, algorithms=[{"name": "dp_sgd"}])).specs
    variants = [
        RunSpec(base.problem, base.algorithm, PrivacyTarget(epsilon=2.0), base.backend,
                base.seed, base.eval),
        RunSpec(base.problem, base.algorithm, base.privacy, BackendSpec(name="torch"),
                base.seed, base.eval),
        RunSpec(base.problem, base.algorithm, base.privacy, base.backend, 1, base.eval),
        RunSpec(base.problem, ComponentSpec("dp_sgd", {**base.algorithm.params, "clip": 2.0}),
                base.privacy, base.backend, base.seed, base.eval),
    ]
    digests = {v.digest for v in variants} | {base.digest}
    assert len(digests) == len(variants) + 1
    relabelled = RunSpec(base.problem, base.algorithm, base.privacy, base.backend, base.seed,
                         base.eval, label="pretty name")
    # the label is stored with the run (reports show it), so it is part of the id
    assert relabelled.digest != base.digest
    assert len(base.digest) == 16 and re.fullmatch(r"[0-9a-f]+", base.digest)


@pytest.mark.parametrize("private", [False, True])
def test_runspec_dict_round_trip(private: bool) -> None:
    doc = experiment_doc(privacy={"epsilon": 1.5, "delta": 1e-6, "calibration": "rdp"},
                         backend={"name": "torch", "dtype": "float32"},
                         algorithms=[{"name": "dp_sgd" if private else "sgd", "label": "x"}])
    (spec,) = parse_experiment(doc).specs
    text = json.dumps(spec.to_dict(), allow_nan=False)  # strict JSON (inf as a string)
    back = RunSpec.from_dict(json.loads(text))
    assert back.digest == spec.digest
    assert back == spec
    assert back.privacy.epsilon == (1.5 if private else math.inf)


def test_component_completes_params() -> None:
    comp = component("algorithm", "dp_sgd", {"lr": 1}, "here")
    assert comp.params["lr"] == 1.0 and isinstance(comp.params["lr"], float)
    assert comp.params["clip"] == 1.0
    with pytest.raises(SpecError, match="here"):
        component("algorithm", "dp_sgd", {"lr": -1}, "here")
    with pytest.raises(SpecError, match="'name' must be a string"):
        component("problem", 3, {}, "here")


# -- grid expansion -----------------------------------------------------------------------------


def test_grid_counts_and_skipped_backends() -> None:
    doc = {
        "suite": "grid",
        "seeds": 2,
        "privacy": {"epsilon": [1, 2, 4]},
        "problems": [
            {"name": "strict_saddle", "params": {"d": 5, "n": 200},
             "backend": ["numpy", "torch"]},
            {"name": "digits_mlp", "params": {"hidden": 8}, "backend": ["numpy", "torch"]},
        ],
        "algorithms": [{"name": "sgd"}, {"name": "dp_sgd"},
                       {"name": "noisy_sgd", "params": {"bound": 3.0}}],
    }
    exp = parse_experiment(doc)
    combos = 3  # strict_saddle × {numpy, torch} + digits_mlp × {torch}
    private_runs = 2 * 3 * 2  # 2 private algorithms × 3 ε × 2 seeds
    nonprivate_runs = 1 * 2  # sgd once, at ε = inf, per seed
    assert len(exp.specs) == combos * (private_runs + nonprivate_runs) == 42
    assert len({s.digest for s in exp.specs}) == len(exp.specs)
    sgd = [s for s in exp.specs if s.algorithm.name == "sgd"]
    assert len(sgd) == combos * 2
    assert all(math.isinf(s.privacy.epsilon) for s in sgd)
    assert {s.privacy.epsilon for s in exp.specs if s.algorithm.name == "dp_sgd"} == {1, 2, 4}
    assert not any(s.problem.name == "digits_mlp" and s.backend.name == "numpy"
                   for s in exp.specs)
    assert len(exp.skipped) == 3  # one note per algorithm
    assert all("digits_mlp" in note and "numpy" in note for note in exp.skipped)
    assert {s.seed for s in exp.specs} == {0, 1}


def test_grid_sweeps_calibrations_and_seed_lists() -> None:
    doc = experiment_doc(
        seeds=[3, 7, 11],
        privacy={"epsilon": [1, 8], "calibration": ["pld", "rdp"]},
        problems=[{**TINY_PROBLEM, "sweep": {"d": [3, 4]}}],
        algorithms=[{"name": "dp_sgd", "sweep": {"lr": [0.1, 0.01], "clip": [1, 2]}},
                    {"name": "sgd", "sweep": {"lr": [0.1, 0.01]}}],
    )
    exp = parse_experiment(doc)
    per_problem = 4 * 2 * 2 * 3 + 2 * 3  # dp_sgd sweep × ε × calibration × seeds + sgd
    assert len(exp.specs) == 2 * per_problem
    assert {s.seed for s in exp.specs} == {3, 7, 11}
    assert {s.problem.params["d"] for s in exp.specs} == {3, 4}
    assert {s.privacy.calibration for s in exp.specs if s.algorithm.name == "dp_sgd"} == {
        "pld", "rdp"}
    assert exp.skipped == []


def test_duplicate_entries_are_deduplicated() -> None:
    doc = experiment_doc(algorithms=[{"name": "sgd"}, {"name": "sgd", "params": {}}])
    exp = parse_experiment(doc)
    assert len(exp.specs) == 1


def test_label_only_duplicates_have_distinct_ids_or_are_merged() -> None:
    doc = experiment_doc(algorithms=[{"name": "sgd", "label": "a"},
                                     {"name": "sgd", "label": "b"}])
    exp = parse_experiment(doc)
    assert len({s.digest for s in exp.specs}) == len(exp.specs)


def test_load_experiment_round_trip(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, experiment_doc(description="d", paper="p", scale="quick"))
    exp = load_experiment(path)
    assert exp.suite == "tiny" and exp.path == path
    assert (exp.description, exp.paper, exp.scale) == ("d", "p", "quick")
    assert len(exp.specs) == 1


def test_shipped_smoke_experiment_parses() -> None:
    root = Path(__file__).resolve().parent.parent
    exp = load_experiment(root / "bench" / "experiments" / "smoke.yaml")
    # 3 problems × (2 private algorithms × 4 ε + sgd) × 3 seeds
    assert len(exp.specs) == 3 * (2 * 4 + 1) * 3
    assert exp.skipped == []


@pytest.mark.parametrize(("doc_patch", "fragment"), [
    ({"suite": "has space"}, "suite"),
    ({"problems": []}, "problems"),
    ({"algorithms": "sgd"}, "algorithms"),
    ({"seeds": 0}, "seeds"),
    ({"seeds": [1, "a"]}, "seeds"),
    ({"eval": {"points": 1}}, "points"),
    ({"eval": {"metrics": ["bogus"]}}, "bogus"),
    ({"backend": "cupy"}, "cupy"),
    ({"backend": {"name": "numpy", "device": "cuda"}}, "numpy"),
    ({"privacy": {"epsilon": 1, "calibration": "magic"}}, "magic"),
    ({"privacy": {"epsilon": "lots"}}, "lots"),
    ({"privacy": {"epsilonn": 1}}, "epsilonn"),
])
def test_parse_experiment_errors(doc_patch: dict[str, Any], fragment: str) -> None:
    # a private algorithm (so the privacy block is used) and no per-problem backend (so the
    # top-level default is used)
    doc = experiment_doc(problems=[{k: v for k, v in TINY_PROBLEM.items() if k != "backend"}],
                         privacy={"epsilon": 1},
                         algorithms=[{"name": "dp_sgd", "params": {"steps": 5}}])
    for key, value in doc_patch.items():
        doc[key] = {**doc[key], **value} if key == "eval" else value
    with pytest.raises(SpecError, match=re.escape(fragment)):
        parse_experiment(doc, "src.yaml")


def test_store_flatten_reads_sidecars(tmp_path: Path) -> None:
    record = run_one(one_spec(lr=0.05, steps=10, batch_size=16))
    store = Store(tmp_path / "s")
    store.write(record)
    assert store.is_finished(record.spec)
    runs = store.runs()
    assert len(runs) == 1
    row = runs.iloc[0]
    assert row["run_id"] == record.run_id
    assert row["status"] == "done"
    assert row["epsilon"] == math.inf
    assert row["final_loss"] == pytest.approx(record.rows[-1]["loss"])
    traj = store.trajectories()
    assert len(traj) == len(record.rows)
    assert set(traj["run_id"]) == {record.run_id}


def test_a_validated_spec_carries_its_params_object_to_the_worker() -> None:
    """Issue 42, item 6: the Params object validated when the file was read travels with the
    spec (pickled to a worker as it is) and is not validated again; a spec read back from its
    sidecar, or whose params were replaced, is validated from its params."""
    import dataclasses
    import pickle

    from bench.spec import instantiate_params

    spec = component("algorithm", "dp_sgd", {"lr": 0.5, "steps": 20}, "here")
    assert isinstance(spec.typed, DPSGDParams)
    assert instantiate_params("algorithm", spec) is spec.typed
    shipped = pickle.loads(pickle.dumps(spec))
    assert shipped == spec and shipped.typed == spec.typed
    read_back = ComponentSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert read_back.typed is None and read_back == spec and hash(read_back) == hash(spec)
    assert instantiate_params("algorithm", read_back) == spec.typed
    broken = dataclasses.replace(spec, params={**spec.params, "lr": -1.0})
    with pytest.raises(SpecError, match="lr"):
        instantiate_params("algorithm", broken)
