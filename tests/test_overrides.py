"""Command-line overrides of an experiment file (``saddlebench run FILE --set PATH=VALUE``):
valid ones change the grid and the run ids; invalid ones fail like the file would."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.experiment import load_experiment, override
from bench.spec import SpecError
from saddlebench import cli

DOC = {"suite": "o", "seeds": 2, "privacy": {"epsilon": 1, "delta": 1e-5},
       "eval": {"points": 2, "metrics": ["loss"]},
       "problems": [{"name": "strict_saddle", "params": {"d": 3, "n": 40}}],
       "algorithms": [{"name": "dp_sgd", "params": {"lr": 0.1, "steps": 5, "batch_size": 4}},
                      {"name": "sgd", "label": "plain", "params": {"steps": 5, "batch_size": 4}}]}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "o.yaml"
    p.write_text(yaml.safe_dump(DOC))
    return p


def test_overrides_change_the_grid_and_the_run_ids(path: Path) -> None:
    base = load_experiment(path)
    changed = load_experiment(path, overrides=["seeds=3", "algorithms.dp_sgd.lr=0.05",
                                               "privacy.epsilon=[1, 2]",
                                               "algorithms.plain.params.steps=7"])
    assert len(base.specs) == 4 and len(changed.specs) == 3 * 2 + 3
    lrs = {s.algorithm.params["lr"] for s in changed.specs if s.algorithm.name == "dp_sgd"}
    assert lrs == {0.05}
    assert {s.algorithm.params["steps"] for s in changed.specs if s.label == "plain"} == {7}
    assert not {s.digest for s in base.specs} & {s.digest for s in changed.specs
                                                 if s.algorithm.name == "dp_sgd"}


def test_an_entry_can_be_picked_by_index() -> None:
    doc = override(DOC, "algorithms.1.steps=9")
    assert doc["algorithms"][1]["params"]["steps"] == 9
    assert DOC["algorithms"][1]["params"] == {"steps": 5, "batch_size": 4}


@pytest.mark.parametrize(("item", "message"), [
    ("seeds", "expected PATH=VALUE"),
    ("colour=red", "unknown key 'colour'"),
    ("algorithms.adam.lr=0.1", "no algorithms entry named, labelled or numbered 'adam'"),
    ("seeds=-1", "seeds' must be a count"),
    ("algorithms.dp_sgd.lr=-1", "lr must be > 0"),
    ("privacy.epsilon=[", "the value is not valid YAML"),
])
def test_bad_overrides_fail_in_one_line(path: Path, item: str, message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(path), "--set", item, "--out", str(path.parent / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    with pytest.raises(SpecError, match=message.split("'")[0]):
        load_experiment(path, overrides=[item])


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("saddlebench ")
