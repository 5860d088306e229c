"""Common checks over every paper, as scikit-learn checks every estimator: run by the tests
for the five built-in papers and by ``saddlebench check`` for a plugin's.

* the paper loads: its claims have a kind and a location, the roles and studies they
  read are declared, the columns they read are the run frame's (``bench/columns.py``), and
  its prose sidecar's claim ids are its claims (:class:`reports.claims.Paper` refuses
  anything else);
* every claim states something, and says where;
* its roles and its experiment files agree: each declared role is played by a file, each
  file plays declared roles;
* its page renders with no runs at all (every claim "not run", no section failing).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml

from bench.check import Check, Report
from bench.experiment import EXPERIMENTS
from reports.claims import Paper
from reports.papers import get_paper


def _loads(key: str) -> tuple[Check, Paper | None]:
    check = Check("the paper loads (kinds, locations, roles, studies, columns, sidecar ids)")
    try:
        return check, get_paper(key)
    except (ValueError, KeyError, ImportError, AttributeError) as exc:
        check.failures.append(f"{type(exc).__name__}: {exc}")
        return check, None


def _stated(paper: Paper) -> Check:
    check = Check("every claim states something and says where the paper does")
    check.failures += [f"claim {c.id}: {p}" for c in paper.claims
                       for p in (*c.problems(), *(["no statement"] if not c.statement.strip()
                                                  else []))]
    return check


def file_roles(folder: Path) -> dict[str, tuple[str, ...]]:
    """Each experiment file under ``folder`` (``<scale>/*.yaml``) and the roles it plays."""
    out = {}
    for path in sorted(folder.glob("*/*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        role = doc.get("role") if isinstance(doc, dict) else None
        out[str(path.relative_to(folder))] = tuple(
            [role] if isinstance(role, str) else role or ())
    return out


def _roles(paper: Paper) -> Check:
    check = Check("the declared roles and the experiment files' roles agree")
    folder = paper.experiments or EXPERIMENTS / paper.key
    files = file_roles(folder)
    played = {r for roles in files.values() for r in roles}
    check.failures += [f"role {r!r} is declared but no file in {folder} plays it"
                       for r in sorted(set(paper.roles) - played)]
    check.failures += [f"{name} plays roles {sorted(set(roles) - set(paper.roles))} the paper "
                       "does not declare" for name, roles in files.items()
                       if set(roles) - set(paper.roles)]
    return check


def _renders_empty(paper: Paper) -> Check:
    from reports.page import build_paper_page

    check = Check("its page renders with no runs (every claim not run)")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            build_paper_page(paper.key, "quick", Path(tmp) / "results", Path(tmp) / "page")
        except Exception as exc:  # any failure of a section is the finding
            check.failures.append(f"{type(exc).__name__}: {exc}")
    return check


def check_paper(key: str) -> Report:
    """Every common check of paper ``key``."""
    loads, paper = _loads(key)
    if paper is None:
        return Report("paper", key, [loads])
    return Report("paper", key, [loads, _stated(paper), _roles(paper), _renders_empty(paper)])


def paper_targets(target: str) -> list[str]:
    """The papers ``target`` names: a paper key, else the papers an installed distribution
    declares (entry points ``saddlebench.papers``); [] for neither."""
    from importlib.metadata import PackageNotFoundError, distribution

    from reports.papers import GROUP, paper_keys

    if target in paper_keys():
        return [target]
    try:
        points = distribution(target).entry_points
    except PackageNotFoundError:
        return []
    return sorted(p.load().key for p in points if p.group == GROUP)
