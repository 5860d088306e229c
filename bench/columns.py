"""The run frame's columns, declared once: what one row per run (``Store.runs``, built by
:func:`bench.store.flatten` from a run's sidecar, plus what :func:`reports.paper.collect`
adds) may hold, with type, unit and meaning.

Fixed columns are listed one by one (:data:`COLUMNS`). Families share a prefix
(:data:`FAMILIES`): a *closed* family's names come from a registry (a problem's or an
algorithm's ``Params`` fields, the declared premise data, the accountants), so a misspelt
``p_prob_clinets`` is caught; an *open* family (diagnostics, plan extras, timings, final
metrics) takes what the algorithm or instance reports. A paper that reads an undeclared
column is refused when it is loaded (:func:`undeclared`), not shown "not recorded" on its
page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # str | float | int | bool
    unit: str
    meaning: str


COLUMNS = tuple(Column(*c) for c in (
    ("run_id", "str", "", "the run's content hash"),
    ("problem", "str", "", "the problem's registered name"),
    ("algorithm", "str", "", "the algorithm's registered name"),
    ("label", "str", "", "the experiment's name for the entry (default: the algorithm)"),
    ("epsilon", "float", "", "the target ε (inf: not private)"),
    ("delta", "float", "", "the target δ"),
    ("calibration", "str", "", "how σ was set (algorithms.base.CALIBRATIONS)"),
    ("backend", "str", "", "numpy | torch | jax"),
    ("device", "str", "", "cpu | cuda"),
    ("dtype", "str", "", "float32 | float64"),
    ("seed", "int", "", "the run's seed"),
    ("stage", "str", "", "final | tune"),
    ("status", "str", "", "done | failed | diverged"),
    ("error", "str", "", "the failure's message"),
    ("output_rule", "str", "", "the rule that chose the output point"),
    ("output_step", "int", "steps", "the step of the output point"),
    ("sigma", "float", "", "the noise multiplier the plan chose"),
    ("steps", "int", "steps", "the planned iterations T"),
    ("n", "int", "records", "the training set's size"),
    ("batch_size", "int", "records", "the planned batch"),
    ("eps_planned", "float", "", "the ε the plan's ledger spends (headline accountant)"),
    ("git_sha", "str", "", "the commit that ran it"),
    ("code", "str", "", "the code fingerprint of the run"),
    ("versions", "str", "", "package versions"),
    ("suite", "str", "", "the suite (experiment file) it belongs to"),
    ("diverged", "bool", "", "non-finite, or final loss past the paper's factor × initial"),
    ("loss_growth", "float", "", "|final loss| ÷ |initial loss|"),
))
ACCOUNTANTS = ("pld", "rdp", "gdp", "advanced", "paper", "headline")


@dataclass(frozen=True)
class Family:
    prefix: str
    meaning: str
    names: Callable[[], frozenset[str]] | None = None  # None: open (any suffix)


def _params(registry: Iterable[type]) -> frozenset[str]:
    return frozenset(f.name for cls in registry for f in fields(cls.Params))  # type: ignore[attr-defined]


def _problem_params() -> frozenset[str]:
    from problems import PROBLEMS

    return _params(PROBLEMS[name] for name in PROBLEMS)


def _algorithm_params() -> frozenset[str]:
    from algorithms import ALGORITHMS

    return _params(ALGORITHMS[name] for name in ALGORITHMS)


def _premises() -> frozenset[str]:
    from algorithms.premises import PREMISES

    return frozenset(PREMISES)


FAMILIES = (
    Family("p_prob_", "a parameter of the problem (its Params field)", _problem_params),
    Family("p_alg_", "a parameter of the algorithm (its Params field)", _algorithm_params),
    Family("eps_", "ε spent by one accountant", lambda: frozenset(ACCOUNTANTS)),
    Family("prem_", "premise data (algorithms.premises.PREMISES)", _premises),
    Family("diag_", "a diagnostic the algorithm reports (Algorithm.diagnostics)"),
    Family("plan_", "a value the plan derives (Plan.extra)"),
    Family("time_", "a timing, in seconds"),
    Family("final_", "a metric at the output point (bench.metrics, the instance's test "
                     "metrics)"),
)


def undeclared(columns: Iterable[str]) -> list[str]:
    """The columns of ``columns`` the run frame does not declare (neither a fixed column
    nor a member of a family; registries are read now, so plugins count), sorted."""
    fixed = {c.name for c in COLUMNS}
    closed: dict[str, frozenset[str]] = {}

    def declared(column: str) -> bool:
        if column in fixed:
            return True
        for family in FAMILIES:
            if column.startswith(family.prefix):
                if family.names is None:
                    return True
                if family.prefix not in closed:
                    closed[family.prefix] = family.names()
                return column.removeprefix(family.prefix) in closed[family.prefix]
        return False

    return sorted({c for c in columns if not declared(c)})
