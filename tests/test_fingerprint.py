"""The cache tracks the code a run used: its algorithm's and problem's modules and what they
import, docstrings and comments aside, and the versions of outside distributions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from algorithms import ALGORITHMS
from bench import fingerprint
from bench.experiment import EXPERIMENTS, load_experiment
from bench.store import REUSED, Store
from saddlebench import cli

MODULE = '''"""{doc}"""
from algorithms import register_algorithm
from algorithms.sgd import SGD


@register_algorithm
class Scaled(SGD):
    """SGD at a scaled learning rate."""

    name = "{name}"
    paper = "plugin"

    def __init__(self, params):  # {comment}
        super().__init__(type(params)(**{{**vars(params), "lr": params.lr * {factor}}}))
'''


def write(folder: Path, module: str, name: str, factor: float = 0.5, doc: str = "mine",
          comment: str = "") -> None:
    (folder / f"{module}.py").write_text(MODULE.format(name=name, factor=factor, doc=doc,
                                                       comment=comment))


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "fp_pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    write(folder, "a", "fp_half")
    write(folder, "b", "fp_third", factor=1 / 3)
    monkeypatch.syspath_prepend(str(tmp_path))
    fingerprint.clear()
    yield folder
    for name in ("fp_half", "fp_third"):
        ALGORITHMS.pop(name, None)
    for module in ("fp_pkg", "fp_pkg.a", "fp_pkg.b"):
        sys.modules.pop(module, None)
    fingerprint.clear()


def experiment(folder: Path) -> Path:
    doc = {"suite": "fp", "seeds": 1, "plugins": ["fp_pkg.a", "fp_pkg.b"],
           "eval": {"points": 2, "metrics": ["loss"]},
           "problems": [{"name": "strict_saddle", "params": {"d": 3, "n": 40}}],
           "algorithms": [{"name": n, "params": {"steps": 4, "batch_size": 4}}
                          for n in ("fp_half", "fp_third", "sgd")]}
    path = folder.parent / "fp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def reasons(path: Path, out: Path) -> dict[str, str]:
    fingerprint.clear()
    exp = load_experiment(path)
    store = Store(out / exp.suite)
    return {s.display: store.explain(s) for s in exp.specs}


def test_editing_one_algorithm_reruns_only_its_runs(plugins: Path) -> None:
    path, out = experiment(plugins), plugins.parent / "out"
    assert cli.main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    assert set(reasons(path, out).values()) == {REUSED}
    write(plugins, "a", "fp_half", factor=0.25)  # code: reruns fp_half only
    got = reasons(path, out)
    assert got["fp_half"] == "code changed: fp_pkg.a"
    assert got["fp_third"] == got["sgd"] == REUSED


def test_docstrings_and_comments_do_not_count(plugins: Path) -> None:
    before = fingerprint.module_hash("fp_pkg.b")
    write(plugins, "b", "fp_third", factor=1 / 3, doc="reworded", comment="a new comment")
    fingerprint.clear()
    assert fingerprint.module_hash("fp_pkg.b") == before
    write(plugins, "b", "fp_third", factor=0.3)
    fingerprint.clear()
    assert fingerprint.module_hash("fp_pkg.b") != before


def test_a_builtin_run_does_not_depend_on_other_algorithms() -> None:
    exp = load_experiment(EXPERIMENTS / "smoke.yaml")
    sgd = next(s for s in exp.specs if s.algorithm.name == "sgd")
    found = fingerprint.modules(fingerprint.roots(sgd))
    assert "algorithms.sgd" in found and "bench.runner" in found
    assert not {"algorithms.prisma", "algorithms.dp_sgd", "algorithms.noisy_sgd"} & set(found)


def test_a_plugin_version_bump_reruns_its_runs(plugins: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path, out = experiment(plugins), plugins.parent / "out"
    monkeypatch.setattr(fingerprint, "packages_distributions", lambda: {"fp_pkg": ["fp-dist"]})
    monkeypatch.setattr(fingerprint, "version", lambda dist: "1.0")
    assert cli.main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    monkeypatch.setattr(fingerprint, "version", lambda dist: "1.1")
    got = reasons(path, out)
    assert got["fp_half"] == got["fp_third"] == "code changed: dist:fp-dist"
    assert got["sgd"] == REUSED


def test_explain_cache_runs_nothing(plugins: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out = experiment(plugins), plugins.parent / "out"
    assert cli.main(["run", str(path), "--out", str(out), "--explain-cache"]) == 0
    assert "no stored result" in capsys.readouterr().out
    assert not (out / "fp" / "runs").exists() or not any((out / "fp" / "runs").iterdir())
