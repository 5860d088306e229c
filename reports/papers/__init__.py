"""Per-paper report pages: one package per paper key, ``reports/papers/<key>/``, laid out as a
plugin paper is: ``paper.py`` declares ``PAPER`` (a :class:`reports.claims.Paper`: claims,
premises, regime, sections) and ``paper.yaml`` holds its prose; the paper's own measures and
its tables and figures may stand beside them (``measures.py``, ``sections.py``). Plus the
papers of installed plugins (entry points in the group ``saddlebench.papers``, each pointing
to a ``Paper``).

:func:`paper_info` reads what ``saddlebench list`` shows of a built-in paper (title,
source, url, roles) from its module's source, the literal arguments of ``PAPER = Paper(...)``
or the texts of its prose sidecar they name (``TEXT["paper.title"]``), without importing the
module (which imports pandas, matplotlib and the algorithms): the module and its sidecar
stay the one place these are written.
"""

from __future__ import annotations

import ast
import importlib
from functools import lru_cache
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from problems.registry import load_entry_points

if TYPE_CHECKING:
    from reports.claims import Paper

FOLDER = Path(__file__).resolve().parent
GROUP = "saddlebench.papers"


@lru_cache(maxsize=1)
def plugin_papers() -> dict[str, Paper]:
    """The papers that installed distributions declare (group ``saddlebench.papers``)."""
    return {paper.key: paper for paper in load_entry_points(GROUP)}


def builtin_keys() -> list[str]:
    return sorted(p.parent.name for p in FOLDER.glob("*/paper.py"))


def declaration(key: str) -> str:
    """The module that declares built-in paper ``key``."""
    return f"reports.papers.{key}.paper"


def plugin_sources() -> dict[str, Path]:
    """The plugins' paper modules by key (their entry points' names): found, not imported
    (their packages are); one whose module is not found is left out."""
    found = {}
    for point in entry_points(group=GROUP):
        try:
            spec = find_spec(point.module)
        except ImportError:
            continue
        if spec is not None and spec.origin:
            found[point.name] = Path(spec.origin)
    return found


def paper_keys(loaded: bool = True) -> list[str]:
    """The keys of every paper: those with a page module here, and the plugins' (those that
    load; with ``loaded`` False, their entry points' names, nothing imported: ``list``)."""
    return sorted({*builtin_keys(), *(plugin_papers() if loaded else plugin_sources())})


def get_paper(key: str) -> Paper:
    """The declared :class:`~reports.claims.Paper` of ``key``."""
    if key in plugin_papers() and key not in builtin_keys():
        return plugin_papers()[key]
    if key not in builtin_keys():
        raise KeyError(f"no paper page module for {key!r} (known: {', '.join(paper_keys())})")
    paper: Paper = importlib.import_module(declaration(key)).PAPER
    if paper.key != key:
        raise ValueError(f"reports/papers/{key}/paper.py declares Paper key {paper.key!r}")
    return paper


class PaperInfo(NamedTuple):
    """What lists a paper: its key, title, source, url and the roles of its files."""

    key: str
    title: str
    source: str
    url: str
    roles: tuple[str, ...]


INFO_FIELDS = ("title", "source", "url")


def paper_info(key: str) -> PaperInfo:
    """A paper's :class:`PaperInfo`, read from its module's source (its ``PAPER = Paper(...)``
    arguments, literals or module constants), a built-in's or a plugin's; else from its
    ``Paper``."""
    module = FOLDER / key / "paper.py" if key in builtin_keys() else plugin_sources().get(key)
    if module is not None:
        try:
            return declared_info(module, key)
        except ValueError:  # not written as literals: the module says it
            pass
    paper = get_paper(key)
    return PaperInfo(paper.key, paper.title, paper.source, paper.url, tuple(paper.roles))


def declared_info(module: Path, key: str = "") -> PaperInfo:
    """The :class:`PaperInfo` a page module declares, read from its source without importing
    it (its key is ``key``, else its name, as :func:`get_paper` checks); ValueError where an
    argument is not a literal (or module constant)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    names = module_constants(tree)
    sidecar = module.with_suffix(".yaml")
    texts = yaml.safe_load(sidecar.read_text(encoding="utf-8")) if sidecar.exists() else {}
    paper = names.get("PAPER")
    if not isinstance(paper, ast.Call):
        raise ValueError(f"{module.name}: no PAPER = Paper(...)")
    given = {k.arg: k.value for k in paper.keywords if k.arg}
    values = {f: literal(given[f], names, texts=texts) if f in given else ""
              for f in INFO_FIELDS}
    roles = declared_roles(given["roles"], names, texts) if "roles" in given else ()
    return PaperInfo(key or module.parent.name, **values, roles=tuple(roles))


def declared_roles(node: ast.expr, names: dict[str, ast.expr], texts: Any) -> list[str]:
    """The roles a ``roles=`` argument declares: a dict's keys, or the keys of the sidecar
    section it is built from (``TEXT.section("roles")``)."""
    try:
        return list(literal(node, names, keys_only=True))
    except ValueError:
        keys = [n.args[0].value
                for n in ast.walk(names.get(node.id, node) if isinstance(node, ast.Name)
                                  else node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "section" and n.args
                and isinstance(n.args[0], ast.Constant)]
        if len(keys) != 1 or not isinstance(texts, dict):
            raise
        section = texts.get(str(keys[0]))
        if not isinstance(section, dict):
            raise
        return list(section)


def module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The module-level names of ``tree`` and the expressions bound to them (``A = x``,
    ``A: T = x``, ``A, B = x, y``)."""
    names: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name):
                names[target.id] = value
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                names.update((t.id, v) for t, v in zip(target.elts, value.elts, strict=True)
                             if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            names[node.target.id] = node.value
    return names


def literal(node: ast.expr, names: dict[str, ast.expr], keys_only: bool = False,
            texts: Any = None) -> Any:
    """The value of a constant, or of a module constant named; of a dict, its keys
    (``keys_only``); of ``TEXT["a.b"]``, the sidecar's text at that key (``texts``, with
    no fields to fill); ValueError for anything else."""
    if isinstance(node, ast.Name) and node.id in names:
        return literal(names[node.id], names, keys_only, texts)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str) and texts:
        text: Any = texts
        for part in node.slice.value.split("."):
            text = text.get(part) if isinstance(text, dict) else None
        if isinstance(text, str) and "{" not in text:
            return text
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if keys_only and isinstance(node, ast.Dict):
        return [literal(k, names) for k in node.keys if k is not None]
    raise ValueError(f"not a literal: {ast.unparse(node)}")
