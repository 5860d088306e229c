"""Published numbers with their provenance: ``reports/published/<paper>.yaml``.

Schema (validated on load; errors name the file, the entry and the key)::

    paper: xu2026                      # key, as in Algorithm.paper
    title: "..."                       # the paper's title
    source: "arXiv:2501.01234v2"       # the version the numbers were read from
    entries:
      - id: t2-dp-rgda-grad            # unique within the file
        table: "Table 2"               # or figure: "Figure 1(b)" (exactly one of the two)
        row: "DP RGDA"                 # the row / curve as the paper labels it
        column: "‖∇Φ(x_399)‖"          # the column / quantity
        page: 9                        # page of the PDF the value is printed on
        value: 0.0123                  # the published number
        statistic: mean                # mean | median | single | best (what the paper reports)
        spread: 0.001                  # optional: the paper's ± value
        tolerance: {rel: 0.1}          # optional: {abs: x} and/or {rel: r}; default rel 0.1
        unit: 100                      # optional: our metric × unit is in the paper's units
                                       #   (e.g. 100 for accuracy printed in %)
        match:                         # which of our runs it is compared with
          metric: grad_norm            # a final_* metric of the runs
          problem: matrix_sensing      # any run column (problem, label, algorithm, epsilon,
          label: dp_rgda               #  calibration, ...), an algorithm or a problem param
          epsilon: 2
        note: "read off the table; one seed in the paper"
        calibrated: "..."              # optional: how this number set one of our constants
                                       #   (then it is shown as calibrated, never reproduced)
    rates:                             # optional: a paper's table of utility bounds
      - method: "DP RGDA (this work)"  # the row as printed
        table: "Table 1"
        problem: minimax               # minimax | minimization
        objective: empirical           # empirical | population
        bound: "O((√d/(nε))^{2/3})"    # as printed
        privacy_exponent: 0.6667       # exponent of √d/(nε) in the bound
        sample_exponent: 0.3333        # optional: exponent of 1/n (population terms)
        sosp: true                     # whether the method finds SOSPs
        algorithm: dp_rgda             # optional: our registered implementation
        note: "SOSP mark inferred"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.errors import UsageError

PUBLISHED_DIR = Path(__file__).resolve().parent / "published"
STATISTICS = ("mean", "median", "single", "best")
ENTRY_KEYS = ("id", "table", "figure", "row", "column", "page", "value", "statistic", "spread",
              "tolerance", "unit", "match", "note", "calibrated")
RATE_KEYS = ("method", "table", "problem", "objective", "bound", "privacy_exponent",
             "sample_exponent", "sosp", "algorithm", "note")
RATE_REQUIRED = ("method", "table", "problem", "objective", "bound", "privacy_exponent", "sosp")
TOP_KEYS = ("paper", "title", "source", "entries", "rates")


class PublishedError(UsageError):
    """An invalid published-numbers file."""


@dataclass(frozen=True)
class Entry:
    id: str
    value: float
    statistic: str
    match: Mapping[str, Any]
    table: str | None = None
    figure: str | None = None
    row: str = ""
    column: str = ""
    page: int | None = None
    spread: float | None = None
    tolerance: Mapping[str, float] = field(default_factory=lambda: {"rel": 0.1})
    unit: float = 1.0
    note: str = ""
    calibrated: str = ""  # how this number set one of our constants (never "reproduced")

    @property
    def where(self) -> str:
        place = self.table or self.figure or ""
        return f"{place}, p. {self.page}" if self.page is not None else place

    def tolerance_for(self, value: float) -> float:
        return max(float(self.tolerance.get("abs", 0.0)),
                   float(self.tolerance.get("rel", 0.0)) * abs(value))


@dataclass(frozen=True)
class Rate:
    """One row of a paper's table of utility bounds (e.g. xu2026 Table 1)."""

    method: str
    table: str
    problem: str
    objective: str
    bound: str
    privacy_exponent: float
    sosp: bool
    sample_exponent: float | None = None
    algorithm: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Published:
    paper: str
    title: str
    source: str
    entries: tuple[Entry, ...]
    rates: tuple[Rate, ...] = ()


def _check_keys(raw: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise PublishedError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(allowed)})")


def _entry(raw: Any, where: str) -> Entry:
    if not isinstance(raw, Mapping):
        raise PublishedError(f"{where}: an entry must be a mapping")
    _check_keys(raw, ENTRY_KEYS, where)
    for key in ("id", "value", "statistic", "match"):
        if key not in raw:
            raise PublishedError(f"{where}: missing key {key!r}")
    if ("table" in raw) == ("figure" in raw):
        raise PublishedError(f"{where}: give exactly one of 'table' or 'figure'")
    if raw["statistic"] not in STATISTICS:
        raise PublishedError(f"{where}: statistic must be one of {STATISTICS}")
    match = raw["match"]
    if not isinstance(match, Mapping) or "metric" not in match:
        raise PublishedError(f"{where}: 'match' must be a mapping with a 'metric'")
    try:
        value = float(raw["value"])
    except (TypeError, ValueError):
        raise PublishedError(f"{where}: value must be a number, got {raw['value']!r}") from None
    return Entry(
        id=str(raw["id"]), value=value, statistic=raw["statistic"], match=dict(match),
        table=raw.get("table"), figure=raw.get("figure"), row=str(raw.get("row", "")),
        column=str(raw.get("column", "")), page=raw.get("page"),
        spread=None if raw.get("spread") is None else float(raw["spread"]),
        tolerance=dict(raw.get("tolerance") or {"rel": 0.1}), unit=float(raw.get("unit", 1.0)),
        note=str(raw.get("note", "")), calibrated=str(raw.get("calibrated") or ""),
    )


def _rate(raw: Any, where: str) -> Rate:
    if not isinstance(raw, Mapping):
        raise PublishedError(f"{where}: a rate must be a mapping")
    _check_keys(raw, RATE_KEYS, where)
    missing = [k for k in RATE_REQUIRED if k not in raw]
    if missing:
        raise PublishedError(f"{where}: missing key {missing[0]!r}")
    if raw["problem"] not in ("minimax", "minimization"):
        raise PublishedError(f"{where}: problem must be minimax or minimization")
    if raw["objective"] not in ("empirical", "population"):
        raise PublishedError(f"{where}: objective must be empirical or population")
    if not isinstance(raw["sosp"], bool):
        raise PublishedError(f"{where}: sosp must be true or false")
    try:
        exponents = {k: None if raw.get(k) is None else float(raw[k])
                     for k in ("privacy_exponent", "sample_exponent")}
    except (TypeError, ValueError):
        raise PublishedError(f"{where}: exponents must be numbers") from None
    return Rate(method=str(raw["method"]), table=str(raw["table"]), problem=raw["problem"],
                objective=raw["objective"], bound=str(raw["bound"]),
                privacy_exponent=float(raw["privacy_exponent"]), sosp=raw["sosp"],
                sample_exponent=exponents["sample_exponent"],
                algorithm=None if raw.get("algorithm") is None else str(raw["algorithm"]),
                note=str(raw.get("note", "")))


def load_published(path: str | Path) -> Published:
    """Read and validate one published-numbers YAML file."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise PublishedError(f"{p}: malformed YAML: {exc}") from None
    if not isinstance(doc, Mapping):
        raise PublishedError(f"{p}: expected a mapping at the top level")
    _check_keys(doc, TOP_KEYS, str(p))
    entries = tuple(_entry(e, f"{p}: entries[{i}]") for i, e in enumerate(doc.get("entries", [])))
    ids = [e.id for e in entries]
    if len(ids) != len(set(ids)):
        raise PublishedError(f"{p}: entry ids must be unique")
    rates = tuple(_rate(r, f"{p}: rates[{i}]") for i, r in enumerate(doc.get("rates") or []))
    return Published(paper=str(doc.get("paper", p.stem)), title=str(doc.get("title", "")),
                     source=str(doc.get("source", "")), entries=entries, rates=rates)


def published_for(paper: str | None, directory: Path = PUBLISHED_DIR) -> Published | None:
    """The published numbers of ``paper``, if the suite names one and a file exists."""
    if not paper:
        return None
    path = directory / f"{paper}.yaml"
    return load_published(path) if path.is_file() else None
