"""Plugins safe to combine (issue 41, item 3): a name two packages register is an error
naming both and the qualified names that choose; a module that fails to import registers
nothing; a plain frozen dataclass Params is accepted, one deriving from a validated Params
is refused with the fix; ``saddlebench check`` pre-flights a plugin."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from algorithms import ALGORITHMS, PrivacyTarget
from bench.runner import run_one
from bench.spec import ComponentSpec, EvalSpec, RunSpec, component
from problems import registry
from problems.backend import BackendSpec
from problems.registry import PluginError, PluginWarning, import_plugins
from saddlebench.cli import main

ALGORITHM = '''
from algorithms import register_algorithm
from algorithms.sgd import SGD


@register_algorithm
class Mine(SGD):
    name = "{name}"
    paper = "plugin"
'''


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for plugin modules; what they register is removed after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    for r in registry.REGISTRIES:
        r.plugins()  # installed plugins stay registered after the test
    saved = [(r, dict(r), dict(r.clashes)) for r in registry.REGISTRIES]
    yield tmp_path
    for name in set(sys.modules) - before:
        if (getattr(sys.modules[name], "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]
    for r, entries, clashes in saved:
        r.clear()
        r.update(entries)
        r.clashes = clashes


def write(folder: Path, module: str, text: str) -> None:
    (folder / f"{module}.py").write_text(textwrap.dedent(text))


def test_a_name_two_packages_register_names_both_and_how_to_choose(modules: Path) -> None:
    for module in ("pkg_one", "pkg_two"):
        write(modules, module, ALGORITHM.format(name="same_name"))
    import_plugins(["pkg_one", "pkg_two"])
    with pytest.raises(ValueError, match="registered by 2 plugins") as caught:
        ALGORITHMS.lookup("same_name")
    message = str(caught.value)
    for module in ("pkg_one", "pkg_two"):
        assert f"'{module}:same_name'" in message and f"{module} ({module}," in message
    first, second = ALGORITHMS.lookup("pkg_one:same_name"), ALGORITHMS["pkg_two:same_name"]
    assert first is not second and {first.__module__, second.__module__} == {"pkg_one",
                                                                           "pkg_two"}
    # a qualified name is accepted without a clash too, and in experiment files
    assert ALGORITHMS.lookup("algorithms:sgd") is ALGORITHMS["sgd"]
    assert component("algorithm", "pkg_two:same_name", {}, "here").name == "pkg_two:same_name"


def test_a_builtin_name_is_reserved(modules: Path) -> None:
    write(modules, "takes_sgd", ALGORITHM.format(name="sgd"))
    with pytest.raises(PluginError, match=r"'sgd' is built in \(algorithms.sgd\); give the one "
                                          "in takes_sgd another name"):
        import_plugins(["takes_sgd"])
    assert ALGORITHMS["sgd"].__module__ == "algorithms.sgd"


def test_a_module_failing_after_its_registration_registers_nothing(
        modules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(modules, "half_done", ALGORITHM.format(name="half_done") + "raise RuntimeError('late')")
    with pytest.raises(PluginError, match="'half_done' fails on import: RuntimeError: late"):
        import_plugins(["half_done"])
    assert "half_done" not in ALGORITHMS

    class EntryPoint:  # an installed plugin failing the same way
        name, value = "half_done", "half_done"

        def load(self) -> object:
            import half_done  # noqa: F401

            return None

    monkeypatch.setattr(registry, "entry_points", lambda group: [EntryPoint()])
    with pytest.warns(PluginWarning, match="cannot be loaded and is skipped"):
        registry.load_entry_points("saddlebench.algorithms")
    assert "half_done" not in ALGORITHMS


DERIVED = '''
from dataclasses import dataclass

from algorithms import register_algorithm
from algorithms.dp_sgd import DPSGD, DPSGDParams


@dataclass(frozen=True)
class MomentumParams(DPSGDParams):
    momentum: float = 0.9


@register_algorithm
class Derived(DPSGD):
    name = "derived_params"
    Params = MomentumParams
'''

PLAIN = '''
from dataclasses import dataclass

from algorithms import register_algorithm
from algorithms.sgd import SGD


@dataclass(frozen=True)
class PlainParams:
    lr: float = 0.1
    steps: int = 4
    batch_size: int = 4
    sampling: str = "fixed"
    momentum: float = 0.9


@register_algorithm
class Plain(SGD):
    name = "plain_params"
    Params = PlainParams
'''


def test_a_plain_dataclass_params_is_accepted_or_refused_with_the_fix(modules: Path) -> None:
    write(modules, "derived", DERIVED)
    with pytest.raises(PluginError, match=r"MomentumParams is a plain dataclass deriving from "
                                          r"a validated Params.*decorate it with @params"):
        import_plugins(["derived"])
    assert "derived_params" not in ALGORITHMS
    write(modules, "plain", PLAIN)
    import_plugins(["plain"])
    alg = component("algorithm", "plain_params", {"momentum": 0.5, "lr": 0.05}, "here")
    assert alg.params["momentum"] == 0.5
    record = run_one(RunSpec(ComponentSpec("strict_saddle", {"d": 3, "n": 40}), alg,
                             PrivacyTarget(), BackendSpec(name="numpy"), seed=0,
                             eval=EvalSpec(points=2, metrics=("loss",))))
    assert record.status == "done", record.error


STATEFUL = '''
from algorithms import register_algorithm
from algorithms.sgd import SGD


@register_algorithm
class Stateful(SGD):
    name = "stateful_sgd"

    def iterate(self, oracle, plan, mech, trace):
        self.started = True  # per-run state on the algorithm: refused
        yield from super().iterate(oracle, plan, mech, trace)
'''


def test_check_names_what_a_plugin_breaks(modules: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    write(modules, "stateful", STATEFUL)
    assert main(["check", "stateful"]) == 1  # a module: every class it registers
    out = capsys.readouterr().out
    assert "algorithm stateful_sgd (stateful)" in out
    assert "FAIL: no per-run state on self" in out and "Stateful.iterate assigns to self" in out
    assert "pass: tiny run: stateful_sgd on strict_saddle, numpy" in out
    assert main(["check", "no_such_thing"]) == 2
    assert "neither a registered algorithm or problem nor a plugin" in capsys.readouterr().err


def test_check_passes_on_the_example_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        version("saddlebench-example")
    except PackageNotFoundError:
        pytest.skip("the example plugin is not installed (pip install -e examples/plugin)")
    assert main(["check", "saddlebench-example"]) == 0  # a distribution: its entry points
    out = capsys.readouterr().out
    for line in ("algorithm dp_sgd_momentum", "problem rosenbrock_sum",
                 "pass: the audit's exact checks", "pass: tiny run: sgd on rosenbrock_sum, "
                 "numpy", "2 of 2 passed"):
        assert line in out


HALVED = ALGORITHM.format(name="same_name") + '''
    def __init__(self, params):  # this package's same_name: SGD at half the given lr
        super().__init__(type(params)(**{**vars(params), "lr": params.lr / 2}))
'''

QUALIFIED = '''
suite: qualified
seeds: 2
plugins: [pkg_one, pkg_two]
eval: {points: 3, metrics: [loss]}
problems: [{name: strict_saddle, params: {d: 3, n: 40}}]
algorithms:
  - {name: "pkg_one:same_name", params: {lr: 0.2, steps: 6, batch_size: 4}}
  - {name: "pkg_two:same_name", params: {lr: 0.2, steps: 6, batch_size: 4}}
'''


def test_qualified_names_choose_each_package_in_worker_processes(modules: Path) -> None:
    write(modules, "pkg_one", ALGORITHM.format(name="same_name"))
    write(modules, "pkg_two", HALVED)
    (modules / "qualified.yaml").write_text(QUALIFIED)
    out = modules / "out"
    assert main(["run", str(modules / "qualified.yaml"), "--jobs", "2", "--out", str(out),
                 "--no-progress"]) == 0
    records = [json.loads(p.read_text()) for p in (out / "qualified" / "runs").glob("*.json")]
    final = {}
    for r in records:
        assert r["status"] == "done", r["error"]
        final[r["spec"]["algorithm"]["name"], r["spec"]["seed"]] = r["final"]["loss"]
    assert sorted(final) == [(f"pkg_{p}:same_name", s) for p in ("one", "two") for s in (0, 1)]
    for seed in (0, 1):  # each worker ran the package it was asked for: lr 0.2, then 0.1
        assert final["pkg_one:same_name", seed] != final["pkg_two:same_name", seed]
