"""A quick start (issue 41, item 7): each command imports only what it uses. Counted with
``python -X importtime`` (the modules a fresh interpreter imports), never timed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reports.papers import FOLDER, builtin_keys, declaration, declared_info, get_paper
from saddlebench.cli import main

#: what ``--version`` and ``--help`` need none of (seconds of imports between them)
HEAVY = ("numpy", "scipy", "torch", "jax", "pandas", "pydantic", "matplotlib", "rich",
         "algorithms", "problems", "reports", "bench.audit", "bench.sweep", "bench.store")
#: what ``list`` needs none of: the backends are found, not imported; no audit, no sweep;
#: the papers' titles and roles are read from their modules' source, not imported
NOT_FOR_LIST = ("torch", "jax", "matplotlib", "pandas", "scipy", "bench.audit", "bench.sweep",
                "bench.executors", *(declaration(key) for key in builtin_keys()))


def imported(*args: str) -> set[str]:
    """The modules ``saddlebench ARGS`` imports, read from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "saddlebench.cli", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and not line.endswith("imported package")}


def within(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    """The ``modules`` in the packages (or modules) ``roots``."""
    return sorted(m for m in modules if any(m == r or m.startswith(f"{r}.") for r in roots))


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(option: str) -> None:
    modules = imported(option)
    assert "argparse" in modules  # the count is read
    assert not within(modules, HEAVY)
    assert len(modules) < 250, len(modules)


def test_list_imports_no_backend_and_no_run_machinery() -> None:
    modules = imported("list")
    assert "algorithms" in modules and "problems" in modules
    assert not within(modules, NOT_FOR_LIST)


@pytest.mark.parametrize("key", builtin_keys())
def test_what_list_reads_of_a_paper_is_what_its_module_declares(key: str) -> None:
    info, paper = declared_info(FOLDER / key / "paper.py"), get_paper(key)
    assert info == (paper.key, paper.title, paper.source, paper.url, tuple(paper.roles))


def test_a_paper_not_written_in_literals_is_refused_by_the_reader(tmp_path: Path) -> None:
    module = tmp_path / "made.py"
    module.write_text("KEY, NAME = 'made', 'x'\nPAPER = Paper(key=KEY, title=make_title(), "
                      "roles={NAME: 'y'})\n")
    with pytest.raises(ValueError, match=r"not a literal: make_title\(\)"):
        declared_info(module)


def test_a_command_still_has_its_arguments_and_their_defaults(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["audit", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--runs RUNS" in out and "(default: 10000)" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "check" in out and "--runs" not in out  # the commands, not their options
