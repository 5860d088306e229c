"""A paper's prose, kept out of its code: ``paper.yaml`` beside the paper module.

The sidecar holds what a reader reads and the code never computes: each claim's statement
and location (``claims: {id: {statement, where}}``), premise names and remedies, captions,
regime notes, resolutions, section texts. The module declares; the sidecar says::

    TEXT = Prose.load(__file__, Q=Q_PAPER, P=SOSP_PROBABILITY)
    SELECTIVE_P = TEXT.premise("selective", _selective)    # premises.selective.{name,remedy}
    TEXT.claim("E0", FIG, runs, statistic, rule, ...)      # claims.E0.{statement,where}

A text may hold ``{NAME}`` or ``{NAME:fmt}`` fields, filled from the values given to
:meth:`Prose.load` (``{{`` for a literal brace); an unknown field or key is an error when
the module is imported, not a blank on a page. :class:`reports.claims.Paper` checks that
every claim id in the sidecar is a claim of the paper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import pandas as pd

    from reports.claims import Check, Claim, Premise, Regime
    from reports.results import PaperResults, Provenance, Table


@dataclass(frozen=True)
class Prose:
    """The texts of one paper (nested mappings of strings), their fill-in ``values`` and
    the file they came from."""

    texts: Mapping[str, Any]
    values: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def load(cls, module_file: str | Path, **values: Any) -> Prose:
        """The sidecar of the module at ``module_file`` (its ``.py`` replaced by ``.yaml``)."""
        path = Path(module_file).with_suffix(".yaml")
        texts = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(texts, dict):
            raise ValueError(f"{path}: a mapping of sections expected")
        return cls(texts, values, str(path))

    def _node(self, key: str, what: str) -> Any:
        """The entry at dotted ``key``; KeyError ("no ``what`` …") where there is none."""
        node: Any = self.texts
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise KeyError(f"{self.source}: no {what} {key!r}")
            node = node[part]
        return node

    def __getitem__(self, key: str) -> str:
        """The text at dotted ``key`` (e.g. ``"premises.selective.remedy"``), filled in."""
        node = self._node(key, "text")
        if not isinstance(node, str):
            raise KeyError(f"{self.source}: {key!r} is a section, not a text")
        try:
            return node.format_map(self.values)
        except (KeyError, ValueError, IndexError) as exc:
            raise ValueError(f"{self.source}: {key!r}: cannot fill {exc}") from exc

    def fill(self, key: str, **values: Any) -> str:
        """The text at ``key`` with run-time ``values`` filled in beside the module's."""
        return Prose(self.texts, {**self.values, **values}, self.source)[key]

    def table(self, key: str, rows: list[list[str]], provenance: Provenance | None = None,
              **values: Any) -> Table:
        """A page table whose title, note and columns are ``tables.<key>`` (title and note
        filled with ``values``), with its ``rows`` and ``provenance`` (None: the page's)."""
        table: Table = {"title": self.fill(f"tables.{key}.title", **values),
                        "note": self.fill(f"tables.{key}.note", **values),
                        "columns": self.items(f"tables.{key}.columns"), "rows": rows}
        if provenance is not None:
            table["provenance"] = provenance
        return table

    def grouped(self, key: str, runs: pd.DataFrame, by: list[str],
                row: Callable[[Any, pd.DataFrame], list[str]],
                provenance: Provenance | None = None, **groupby: Any) -> Table:
        """:meth:`table` ``key`` with one ``row(values, part)`` per group of ``runs`` by
        ``by`` (``groupby``: pandas' options), each row with its run ids (``row_runs``)."""
        parts = list(runs.groupby(by, **groupby))
        table = self.table(key, [row(values, part) for values, part in parts], provenance)
        table["row_runs"] = [sorted(part["run_id"].astype(str)) for _, part in parts]
        return table

    def get(self, key: str, default: str = "") -> str:
        try:
            return self[key]
        except KeyError:
            return default

    def section(self, key: str) -> Mapping[str, Any]:
        """The mapping at dotted ``key`` ({} when absent), unfilled."""
        try:
            node = self._node(key, "section")
        except KeyError:
            return {}
        return node if isinstance(node, Mapping) else {}

    def items(self, key: str) -> list[str]:
        """The list of texts at dotted ``key``, each filled in."""
        return [str(t).format_map(self.values) for t in self._node(key, "list")]

    def claim_ids(self) -> set[str]:
        return set(self.section("claims"))

    def premise(self, key: str, check: Check) -> Premise:
        """The :class:`reports.claims.Premise` named by ``premises.<key>.name`` with its
        ``remedy`` (optional)."""
        from reports.claims import Premise

        return Premise(self[f"premises.{key}.name"], check,
                       self.get(f"premises.{key}.remedy"))

    def claim(self, claim_id: str, *args: Any, **kwargs: Any) -> Claim:
        """:class:`reports.claims.Claim` ``claim_id`` with its statement and ``where`` from
        ``claims.<claim_id>``; ``args`` and ``kwargs`` are the rest of the claim."""
        from dataclasses import replace

        from reports.claims import Claim

        claim = Claim(claim_id, self[f"claims.{claim_id}.statement"], *args, **kwargs)
        return replace(claim, where=self[f"claims.{claim_id}.where"])

    def regime(self, key: str, ours: Callable[[PaperResults], str],
               paper: str | Callable[[PaperResults], str] | None = None,
               lead: bool = False) -> Regime:
        """:class:`reports.claims.Regime` row ``key``: its quantity, note and (unless
        ``paper`` is given, e.g. computed from our instance) the paper's value from
        ``regime.<key>``; ``ours`` measures it; ``lead``: quoted in the bottom line."""
        from reports.claims import Regime

        return Regime(self[f"regime.{key}.quantity"],
                      self[f"regime.{key}.paper"] if paper is None else paper, ours,
                      self.get(f"regime.{key}.note"), lead)
