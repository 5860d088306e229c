"""The prose sidecar (reports/prose.py): dotted keys, fill-in values, premises and claims
built from it, and a paper that refuses text for a claim it does not declare."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.claims import Paper, Runs, Statistic
from reports.prose import Prose
from reports.rules import Always

SIDECAR = """\
claims:
  C1:
    statement: the output is an α-SOSP with probability > {P:.2f}
    where: Theorem 1 (§5.3)
premises:
  selective:
    name: the escape test is selective
    remedy: choose χ with {{braces}} kept
resolutions:
  - first, at Q = {Q}
"""


@pytest.fixture
def prose(tmp_path: Path) -> Prose:
    (tmp_path / "paper.yaml").write_text(SIDECAR, encoding="utf-8")
    return Prose.load(tmp_path / "paper.py", P=1 - (7 / 8) ** 3, Q=3)


def test_texts_are_filled_in(prose: Prose) -> None:
    assert prose["claims.C1.statement"].endswith("> 0.33")
    assert prose["premises.selective.remedy"] == "choose χ with {braces} kept"
    assert prose.items("resolutions") == ["first, at Q = 3"]
    assert prose.get("premises.selective.absent") == ""
    assert prose.claim_ids() == {"C1"}


def test_unknown_keys_and_fields_fail_loudly(prose: Prose, tmp_path: Path) -> None:
    with pytest.raises(KeyError, match=r"no text 'claims\.C2\.statement'"):
        prose["claims.C2.statement"]
    with pytest.raises(KeyError, match="a section"):
        prose["claims.C1"]
    with pytest.raises(ValueError, match="cannot fill"):
        Prose(prose.texts, {}, "x.yaml")["claims.C1.statement"]


def test_premise_and_claim_take_their_text(prose: Prose) -> None:
    premise = prose.premise("selective", lambda runs, results: (True, "21 %"))
    assert (premise.name, premise.remedy) == ("the escape test is selective",
                                              "choose χ with {braces} kept")
    claim = prose.claim("C1", "Theorem 1", Runs(("saddle",)),
                        Statistic("s", lambda runs, results: None), Always("x"), kind="paper")
    assert claim.where == "Theorem 1 (§5.3)" and claim.statement.startswith("the output")


def test_a_paper_refuses_text_for_an_undeclared_claim(prose: Prose) -> None:
    with pytest.raises(ValueError, match=r"text for claims \['C1'\]"):
        Paper("p", "t", "s", (), {}, lambda results, out: None, text=prose)  # type: ignore
