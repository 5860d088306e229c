"""The typed experiment model: Params constraints declared once and read by bench, the
experiment file's model and its JSON schema, and the one user-facing error type."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from annotated_types import Ge, Gt, Le, Lt, MultipleOf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from algorithms import ALGORITHMS
from algorithms.base import CALIBRATIONS
from bench.errors import Source, SpecError, UsageError
from bench.experiment import EXPERIMENTS, grid_size, parse_experiment
from bench.model import ENTRY_KEYS, TOP_KEYS, json_schema, validate
from bench.spec import check_value
from bench.yamlio import read_yaml, yaml_value
from problems import PROBLEMS
from saddlebench import cli

COMPONENTS = sorted([*(("algorithm", n, c) for n, c in ALGORITHMS.items()),
                     *(("problem", n, c) for n, c in PROBLEMS.items())])
IDS = [f"{kind}-{name}" for kind, name, _ in COMPONENTS]
FILES = sorted(EXPERIMENTS.rglob("*.yaml"))


# -- Params: declared constraints --------------------------------------------------------

def declared(params_cls: type) -> dict[str, tuple[list[Any], list[Any]]]:
    """Each field's union arms: (arm types, the arm's constraint metadata) per arm."""
    out = {}
    for name, info in params_cls.__pydantic_fields__.items():  # type: ignore[attr-defined]
        arms = (typing.get_args(info.annotation)
                if typing.get_origin(info.annotation) in (typing.Union, types.UnionType)
                else (info.annotation,))
        out[name] = ([_bare(a) for a in arms],
                     [list(info.metadata) + list(getattr(a, "__metadata__", ())) for a in arms])
    return out


def _bare(arm: Any) -> Any:
    return typing.get_args(arm)[0] if typing.get_origin(arm) is typing.Annotated else arm


def _bounds(meta: list[Any]) -> dict[str, float]:
    keys = {Gt: "gt", Ge: "ge", Lt: "lt", Le: "le", MultipleOf: "multiple_of"}
    return {keys[type(m)]: getattr(m, keys[type(m)]) for m in meta if type(m) in keys}


def valid(arm: Any, meta: list[Any]) -> st.SearchStrategy[Any]:
    """Values an arm (type + constraints) declares valid."""
    b = _bounds(meta)
    if arm is type(None):
        return st.none()
    if arm is bool:
        return st.booleans()
    if arm is str:
        return st.text(max_size=8)
    if typing.get_origin(arm) is Literal:
        return st.sampled_from(typing.get_args(arm))
    if arm is int:
        low = b.get("ge", b["gt"] + 1 if "gt" in b else -(2**40))
        high = b.get("le", b["lt"] - 1 if "lt" in b else 2**40)
        step = b.get("multiple_of", 1)
        return st.integers(math.ceil(low / step), high // step).map(lambda k: k * step)
    assert arm is float, arm
    return st.floats(min_value=b.get("gt", b.get("ge", -1e12)),
                     max_value=b.get("lt", b.get("le", 1e12)),
                     exclude_min="gt" in b, exclude_max="lt" in b, allow_nan=False)


def invalid(arms: list[Any], metas: list[Any]) -> st.SearchStrategy[Any]:
    """Values no arm accepts: a wrong type, or a number past a declared bound."""
    wrong = [v for v in ("x", True, 1.5, None, [1], math.nan)
             if not any(_accepts(a, m, v) for a, m in zip(arms, metas, strict=True))]
    past = []
    for arm, meta in zip(arms, metas, strict=True):
        b = _bounds(meta)
        if arm in (int, float):
            past += [b["gt"], b["gt"] - 1] if "gt" in b else []
            past += [b["ge"] - 1] if "ge" in b else []
            past += [b["lt"], b["lt"] + 1] if "lt" in b else []
            past += [b["le"] + 1] if "le" in b else []
            past += [b.get("ge", 2) + 1] if "multiple_of" in b else []
        if typing.get_origin(arm) is Literal:
            past.append("not-one-of-them")
    past = [v for v in past if not any(_accepts(a, m, v) for a, m in zip(arms, metas, strict=True))]
    return st.sampled_from(wrong + past)


def _accepts(arm: Any, meta: list[Any], value: Any) -> bool:
    """Whether ``value`` fits one arm, by the declaration alone (strict types)."""
    if arm is type(None) or value is None:
        return arm is type(None) and value is None
    if typing.get_origin(arm) is Literal:
        return value in typing.get_args(arm) and isinstance(value, str)
    kinds = {bool: (bool,), str: (str,), int: (int,), float: (int, float)}[arm]
    if not isinstance(value, kinds) or (arm is not bool and isinstance(value, bool)):
        return False
    if arm in (bool, str):
        return True
    if arm is float and not math.isfinite(value):
        return False
    b = _bounds(meta)
    return (value > b.get("gt", -math.inf) and value >= b.get("ge", -math.inf)
            and value < b.get("lt", math.inf) and value <= b.get("le", math.inf)
            and ("multiple_of" not in b or value % b["multiple_of"] == 0))


def test_every_params_field_declares_its_type() -> None:
    for _, name, cls in COMPONENTS:
        for field, (arms, _) in declared(cls.Params).items():
            assert all(a in (int, float, bool, str, type(None)) or typing.get_origin(a) is Literal
                       for a in arms), (name, field, arms)


@pytest.mark.parametrize(("kind", "name", "cls"), COMPONENTS, ids=IDS)
def test_every_component_builds_from_its_params_defaults(kind: str, name: str,
                                                         cls: Any) -> None:
    component = cls(cls.Params())
    if isinstance(component.params, cls.Params):  # a preset (dpsgd_gc) maps its own params
        assert component.params == cls.Params()


@pytest.mark.parametrize(("kind", "name", "cls"), COMPONENTS, ids=IDS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_params_accept_and_reject_by_their_declared_constraints(kind: str, name: str, cls: Any,
                                                                data: st.DataObject) -> None:
    """One field at a time: a value its declaration allows is accepted (the field alone, and
    the whole Params unless a rule joining fields refuses it, naming them); one it does not
    allow is refused, at that field."""
    fields = declared(cls.Params)
    field = data.draw(st.sampled_from(sorted(fields)), label="field")
    arms, metas = fields[field]
    arm = data.draw(st.sampled_from(range(len(arms))), label="arm")
    good = data.draw(valid(arms[arm], metas[arm]), label="valid")
    check_value(cls.Params, field, good, "here", f"params.{field}")
    try:
        params = cls.Params(**{field: good})
    except ValidationError as exc:  # a cross-field rule: reported for the whole Params
        (error,) = exc.errors()
        assert error["type"] == "value_error" and error["loc"] == (), error
    else:
        assert getattr(params, field) == good
        cls(params)  # the component takes any params its declaration allows
    bad = data.draw(invalid(arms, metas), label="invalid")
    with pytest.raises(SpecError, match=re.escape(f"params.{field}")):
        check_value(cls.Params, field, bad, "here", f"params.{field}")
    with pytest.raises(ValidationError) as refused:
        cls.Params(**{field: bad})
    assert refused.value.errors()[0]["loc"][:1] == (field,)


def test_a_rule_joining_fields_names_them() -> None:
    doc = {"suite": "s", "problems": [{"name": "strict_saddle", "params": {"n": 4, "clients": 6}}],
           "algorithms": [{"name": "sgd"}]}
    with pytest.raises(SpecError, match=re.escape(
            "src.yaml: problems[0] (strict_saddle): params: strict_saddle needs clients <= n, "
            "got clients=6, n=4")):
        parse_experiment(doc, "src.yaml")


# -- the experiment file model ----------------------------------------------------------

TINY = {"suite": "tiny", "privacy": {"epsilon": 1},
        "problems": [{"name": "strict_saddle", "params": {"d": 3, "n": 20}}],
        "algorithms": [{"name": "dp_sgd", "params": {"steps": 2, "batch_size": 4}}]}


@pytest.mark.parametrize(("patch", "fragment"), [
    ({"privacy": {"epsilon": 1, "calibration": "magic"},
      "algorithms": [{"name": "dp_sgd", "privacy": {"delta": 1e-6}}]},
     "src.yaml: privacy.calibration: unknown calibration 'magic'"),
    ({"privacy": {"epsilon": 1, "delta": 2},
      "algorithms": [{"name": "dp_sgd", "privacy": {"epsilon": 2}}]},
     "src.yaml: privacy.delta must be in (0, 1), got 2"),
    ({"algorithms": [{"name": "dp_sgd", "privacy": {"delta": 2}}]},
     "src.yaml: algorithms[0].privacy.delta must be in (0, 1), got 2"),
    ({"privacy": {"epsilon": [1, -1]}}, "src.yaml: privacy.epsilon[1] must be > 0, got -1"),
])
def test_a_privacy_error_is_reported_in_the_block_that_holds_it(patch: dict[str, Any],
                                                                fragment: str) -> None:
    """The top-level block is checked where it is written, not inside the entries it is
    merged into."""
    with pytest.raises(SpecError) as err:
        parse_experiment({**TINY, **patch}, "src.yaml")
    assert str(err.value).startswith(fragment), str(err.value)


@pytest.mark.parametrize(("patch", "fragment"), [
    ({"eval": {"pionts": 3}}, "src.yaml: eval: unknown key 'pionts' (did you mean 'points'?) "
                              "(allowed: points, metrics, final, schedule, output)"),
    ({"tuning": {"goal": "best"}}, "src.yaml: tuning.goal: unknown goal 'best'; choose min or max"),
    ({"problems": [{"name": "strict_saddle", "sweep": {"d": [3, "x"]}}]},
     "src.yaml: problems[0] (strict_saddle): sweep.d[1]: expected an integer, got 'x'"),
    ({"algorithms": [{"name": "dp_sgd", "tune": {"lr": [0.1, -1]}}], "tuning": {}},
     "src.yaml: algorithms[0] (dp_sgd): tune.lr[1] must be > 0, got -1"),
    ({"backend": [{"name": "numpy", "colour": "red"}]},
     "src.yaml: backend[0]: unknown key 'colour' (allowed: name, device, dtype, noise)"),
])
def test_errors_name_the_place_of_the_value(patch: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_experiment({**TINY, **patch}, "src.yaml")
    assert str(err.value).startswith(fragment), str(err.value)


def test_epsilon_inf_may_be_written_as_stored_runs_write_it() -> None:
    doc = {**TINY, "privacy": {"epsilon": "inf"},
           "algorithms": [{"name": "sgd", "params": {"batch_size": 4}}]}
    (spec,) = parse_experiment(doc).specs
    assert math.isinf(spec.privacy.epsilon) and spec.to_dict()["privacy"]["epsilon"] == "inf"


def test_grid_size_and_expansion_read_the_same_model() -> None:
    doc = {**TINY, "seeds": 2, "privacy": {"epsilon": [1, 2], "calibration": ["pld", "rdp"]},
           "problems": [{"name": "strict_saddle", "sweep": {"d": [3, 4]},
                         "backend": ["numpy", "torch"]}],
           "algorithms": [{"name": "dp_sgd", "sweep": {"lr": 0.1}},
                          {"name": "sgd", "params": {"batch_size": 4}}]}
    size = grid_size(validate(doc, Source("src.yaml")))
    assert size.total == len(parse_experiment(doc).specs) == 2 * 2 * (2 * 2 + 1) * 2


def test_errors_in_a_file_give_the_line_and_column(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("suite: s\nprivacy:\n  epsilon: 1\n  delta: 2\nproblems:\n"
                    "  - name: strict_saddle\nalgorithms:\n  - name: sgd\n"
                    "    sweep: {lr: [0.1, -1]}\n")
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"saddlebench: error: {path}: line 4, column 10: privacy.delta must be in (0, 1), "
        "got 2\n")
    path.write_text(path.read_text().replace("delta: 2", "delta: 0.1"))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"saddlebench: error: {path}: line 9, column 23: algorithms[0] (sgd): sweep.lr[1] "
        "must be > 0, got -1\n")


def test_yaml_reads_exponents_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("lr: 1e-3\nsteps: 10\nname: 1e3x\n")
    assert read_yaml(path) == {"lr": 1e-3, "steps": 10, "name": "1e3x"}
    assert yaml_value("5E-2") == 0.05


# -- the JSON schema ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json_schema()


def test_saddlebench_schema_prints_it(capsys: pytest.CaptureFixture[str],
                                      schema: dict[str, Any]) -> None:
    assert cli.main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == schema
    entry = schema["$defs"]["AlgorithmEntry"]
    assert set(schema["properties"]) == set(TOP_KEYS)
    assert {c["if"]["properties"]["name"]["const"] for c in entry["allOf"]} == set(ALGORITHMS)
    sgd = next(c["then"]["properties"] for c in entry["allOf"]
               if c["if"]["properties"]["name"]["const"] == "sgd")
    assert sgd["params"]["properties"]["lr"]["exclusiveMinimum"] == 0
    assert sgd["params"]["properties"]["sampling"]["enum"] == ["poisson", "fixed"]
    calibration = schema["$defs"]["Privacy"]["properties"]["calibration"]
    assert list(CALIBRATIONS) in [a.get("enum") for a in calibration["anyOf"]] + [
        a.get("items", {}).get("enum") for a in calibration["anyOf"]]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(EXPERIMENTS)) for p in FILES])
def test_every_experiment_file_fits_the_schema(path: Path, schema: dict[str, Any]) -> None:
    """Each shipped file validates against the schema (with jsonschema where installed) and
    the model, and every key it uses is one the schema declares."""
    doc = read_yaml(path)
    validate(doc, Source(str(path)))
    try:
        import jsonschema  # optional: not a dependency
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        jsonschema.validate(json.loads(json.dumps(doc, default=str)), schema)
    assert set(doc) <= set(schema["properties"])
    for key, entry_def in (("problems", "ProblemEntry"), ("algorithms", "AlgorithmEntry")):
        block = schema["$defs"][entry_def]
        assert set(block["properties"]) == set(ENTRY_KEYS[key])
        for entry in doc[key]:
            assert set(entry) <= set(block["properties"])
            then = next(c["then"]["properties"] for c in block["allOf"]
                        if c["if"]["properties"]["name"]["const"] == entry["name"])
            for part in ("params", "sweep", "tune"):
                assert set(entry.get(part) or {}) <= set(then.get(part, {}).get("properties", {}))


# -- the one user-facing error type -------------------------------------------------------

def test_the_cli_reports_usage_errors_in_one_line(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(args: Any) -> int:
        raise UsageError("bad input\nsecond line")

    monkeypatch.setitem(cli.COMMANDS, "list", refuse)
    assert cli.main(["list"]) == 2
    assert capsys.readouterr().err == "saddlebench: error: bad input\n"


def test_any_other_exception_is_a_bug_and_shows_its_traceback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: Any) -> int:
        raise ValueError("a bug deep inside")

    monkeypatch.setitem(cli.COMMANDS, "list", broken)
    with pytest.raises(ValueError, match="a bug deep inside"):
        cli.main(["list"])


def test_spec_errors_are_usage_errors() -> None:
    assert issubclass(SpecError, UsageError) and issubclass(UsageError, ValueError)


def test_params_dataclasses_stay_frozen_dataclasses() -> None:
    params = ALGORITHMS["sgd"].Params()
    assert dataclasses.is_dataclass(params)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.lr = 1.0  # type: ignore[misc]
    assert yaml.safe_dump(dataclasses.asdict(params))
