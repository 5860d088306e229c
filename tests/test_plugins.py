"""Outside code: a module named by an experiment file's ``plugins:`` (or an installed entry
point) registers its classes; runs import it wherever they execute; unknown names say how."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from algorithms import ALGORITHMS
from bench.experiment import parse_experiment
from bench.spec import SpecError
from problems import registry
from saddlebench import cli

PLUGIN = '''
from algorithms import register_algorithm
from algorithms.sgd import SGD


@register_algorithm
class HalfSGD(SGD):
    """SGD at half the given learning rate (a stand-in for someone's own method)."""

    name = "half_sgd"
    paper = "plugin"

    def __init__(self, params):
        super().__init__(type(params)(**{**vars(params), "lr": params.lr / 2}))
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module ``my_plugin`` importable here, hence in worker processes (the local
    executor passes its import path on, even to a pool started before)."""
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_plugin"
    ALGORITHMS.pop("half_sgd", None)
    sys.modules.pop("my_plugin", None)


def experiment(plugins: object) -> dict:
    return {"suite": "mine", "seeds": 2, "plugins": plugins,
            "eval": {"points": 2, "metrics": ["loss"]},
            "problems": [{"name": "strict_saddle", "params": {"d": 3, "n": 40}}],
            "algorithms": [{"name": "half_sgd", "params": {"steps": 5, "batch_size": 4}},
                           {"name": "sgd", "params": {"steps": 5, "batch_size": 4}}]}


def test_a_plugin_named_by_the_file_runs_in_worker_processes(plugin: str,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(experiment([plugin])))
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--out", str(out), "--jobs", "2",
                     "--no-progress"]) == 0
    sides = [json.loads(p.read_text()) for p in (out / "mine" / "runs").glob("*.json")]
    assert len(sides) == 4 and all(s["status"] == "done" for s in sides)
    mine = [s for s in sides if s["spec"]["algorithm"]["name"] == "half_sgd"]
    assert mine and all(s["spec"]["plugins"] == [plugin] for s in mine)


def test_builtin_run_ids_do_not_change_without_plugins() -> None:
    doc = experiment([])
    doc.pop("plugins")
    doc["algorithms"] = doc["algorithms"][1:]
    (spec, _) = parse_experiment(doc).specs
    assert "plugins" not in spec.to_dict()


@pytest.mark.parametrize(("plugins", "message"), [
    (["no_such_module_xyz"], "plugin 'no_such_module_xyz' cannot be imported"),
    ("not a module", "'plugins' must be a module name"),
    ([], "'plugins' must be a module name"),
])
def test_bad_plugins_are_refused(plugins: object, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_experiment(experiment(plugins), "src.yaml")


def test_an_unknown_name_points_to_the_plugin_docs() -> None:
    with pytest.raises(ValueError, match="Compare your own method"):
        ALGORITHMS.lookup("surely_not_registered")


def test_entry_points_are_loaded_once_on_a_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []

    def fake(group: str) -> list[object]:
        loaded.append(group)
        ALGORITHMS.register(SimpleNamespace(name="from_entry_point"))
        return []

    monkeypatch.setattr(registry, "load_entry_points", fake)
    monkeypatch.setattr(ALGORITHMS, "_loaded", False)
    try:
        assert ALGORITHMS.lookup("from_entry_point").name == "from_entry_point"
        with pytest.raises(ValueError):
            ALGORITHMS.lookup("still_missing")
        assert loaded == ["saddlebench.algorithms"]
    finally:
        ALGORITHMS.pop("from_entry_point", None)
