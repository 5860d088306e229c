"""Every registered paper's page, from a tiny reproduction: it opens with the verdict of
every declared claim, the named claims get the verdicts ``tests/tiny/<paper>/expected.yaml``
records for these fixed (seeded) runs, every figure and table names exactly the suites its
runs come from, and every experiment file plays a role its paper declares."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import bench.experiment
from reports.claims import VERDICTS
from reports.diff import differences
from reports.page import build_paper_page
from reports.papers import builtin_keys, get_paper
from saddlebench import cli

TINY = Path(__file__).resolve().parent / "tiny"
EXPERIMENTS = Path(bench.experiment.EXPERIMENTS)
PAPERS = builtin_keys()  # a plugin's paper: its own tests (tests/test_example_plugin.py)


def experiment_files(paper: str) -> list[Path]:
    return [*sorted(EXPERIMENTS.glob(f"{paper}/*/*.yaml")),
            *sorted(p for p in (TINY / paper).glob("*.yaml") if p.name != "expected.yaml")]


def roles_of(path: Path) -> list[str]:
    role = yaml.safe_load(path.read_text()).get("role")
    return [role] if isinstance(role, str) else list(role or [])


@pytest.mark.parametrize("paper", PAPERS)
def test_every_experiment_file_plays_a_declared_role(paper: str) -> None:
    declared = set(get_paper(paper).roles)
    files = experiment_files(paper)
    assert any(p.parent.parent == TINY for p in files), f"no tests/tiny/{paper}/*.yaml"
    for path in files:
        roles = roles_of(path)
        assert roles, f"{path}: no role:"
        assert set(roles) <= declared, f"{path}: roles {roles} not in {sorted(declared)}"


def run_suites(out: Path) -> dict[str, set[str]]:
    """run id → the suites it is stored in (identical specs in two suites share an id)."""
    found: dict[str, set[str]] = {}
    for path in out.glob("*/runs/*.json"):
        found.setdefault(path.stem, set()).add(path.parent.parent.name)
    return found


def check_provenance(page: Path, suites_of: dict[str, set[str]]) -> None:
    """Each figure's and table's provenance names only suites that hold its runs, and every
    one of its runs is in a suite it names."""
    provenance = json.loads((page / "provenance.json").read_text())
    for kind in ("figures", "tables"):
        for name, prov in provenance[kind].items():
            named = set(prov["suites"])
            for run in prov["run_ids"]:
                assert suites_of[run] & named, (kind, name, run, sorted(suites_of[run]))
            held = set().union(*(suites_of[r] for r in prov["run_ids"])) if prov["run_ids"] \
                else set()
            assert named <= held, (kind, name, sorted(named - held))


@pytest.fixture(scope="module", params=PAPERS)
def reproduced(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[str, Path]:
    paper = str(request.param)
    tmp = tmp_path_factory.mktemp(paper)
    folder = tmp / "experiments" / paper / "quick"
    folder.mkdir(parents=True)
    for path in experiment_files(paper):
        if path.parent.parent == TINY:
            shutil.copy(path, folder / path.name)
    out = tmp / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench.experiment, "EXPERIMENTS", tmp / "experiments")
        assert cli.main(["reproduce", "--no-pdf", paper, "--out", str(out), "--jobs", "2",
                         "--no-progress"]) == 0
    return paper, out


def test_the_page_opens_with_every_claims_verdict(reproduced: tuple[str, Path]) -> None:
    paper, out = reproduced
    page = out / "report" / paper / "quick"
    html = (page / "index.html").read_text()
    status = json.loads((page / "status.json").read_text())
    declared = [c.id for c in get_paper(paper).claims]
    assert [c["id"] for c in status["claims"]] == declared
    assert all(c["verdict"] in VERDICTS for c in status["claims"])
    assert html.index('id="verdict-table"') < html.index('id="findings"') \
        < html.index('id="regime"') < html.index('id="settings"')
    assert html.find("<table") == html.index('<table id="verdict-table"')  # the first table
    verdicts = html[html.index('id="verdict-table"'):html.index('id="findings"')]
    for claim in status["claims"]:
        assert f'<tr id="claim-{claim["id"]}"><td><a href="#detail-{claim["id"]}"' in verdicts
        assert f'>{claim["verdict"]}</td>' in verdicts
    assert "not held" not in html and "not held" not in (page / "status.json").read_text()
    for artefact in status["artefacts"]:
        assert artefact["verdict"] in VERDICTS


def test_named_claims_get_their_known_verdicts(reproduced: tuple[str, Path]) -> None:
    paper, out = reproduced
    page = out / "report" / paper / "quick"
    expected = yaml.safe_load((TINY / paper / "expected.yaml").read_text())
    assert len(expected["claims"]) >= 3
    status = {c["id"]: c for c in json.loads((page / "status.json").read_text())["claims"]}
    got = {cid: status[cid]["verdict"] for cid in expected["claims"]}
    assert got == expected["claims"]
    html = (page / "index.html").read_text()
    for fragment in expected.get("html", []):
        assert fragment in html, fragment


def test_figures_and_tables_name_the_suites_they_draw(reproduced: tuple[str, Path]) -> None:
    paper, out = reproduced
    check_provenance(out / "report" / paper / "quick", run_suites(out))


def test_the_index_matrix_shows_verdicts(reproduced: tuple[str, Path]) -> None:
    paper, out = reproduced
    index = (out / "report" / "index.html").read_text()
    assert f'href="{paper}/quick/index.html"' in index and "not held" not in index
    assert "Verdicts per paper" in index


def test_the_page_sets_the_papers_setting_beside_ours(reproduced: tuple[str, Path]) -> None:
    """Each paper declares the quantities its claims' regimes are about (Paper.regime), and
    its page shows the paper's value beside ours, after the findings."""
    paper, out = reproduced
    page = out / "report" / paper / "quick"
    declared = get_paper(paper).regime
    assert declared, f"{paper} declares no regime rows"
    setting = json.loads((page / "status.json").read_text())["setting"]
    assert [row["quantity"] for row in setting] == [r.quantity for r in declared]
    assert all(row["paper"] and row["ours"] for row in setting)
    html = (page / "index.html").read_text()
    assert html.index('id="findings"') < html.index('id="setting-table"') \
        < html.index('id="regime"')


def test_a_page_renders_the_same_again_from_its_stored_runs(reproduced: tuple[str, Path],
                                                             tmp_path: Path) -> None:
    """A page is a function of its stored runs: rendered again into a copy of the site, its
    status.json, tables, LaTeX and HTML are the same (timestamps aside), so that a change
    that should leave the pages alone is checked by rendering before and after from the
    same runs and comparing (``python -m reports.diff OLD NEW``, issue 42)."""
    paper, out = reproduced
    site = tmp_path / "site"
    shutil.copytree(out / "report", site)
    page = site / paper / "quick"
    shutil.rmtree(page)
    page.mkdir()
    (page / "status.json").write_text("{}")  # the site's navigation reads it, as before
    build_paper_page(paper, "quick", out, page)
    assert differences(out / "report" / paper, site / paper) == []
