"""The code a run used, as a fingerprint that decides whether a stored result is reused.

A run's fingerprint hashes the modules that define its algorithm and its problem, the
runner's own modules, and every module of the same packages that these import (followed
through ``from package import name`` to the module that defines ``name``), each with its
docstrings dropped and its comments gone (the hash is of the parsed syntax tree), plus the
versions of the outside distributions that provide any of them (plugins). Editing one
algorithm therefore reruns only its runs; editing a docstring reruns nothing; bumping a
plugin's version reruns the plugin's runs. :func:`modules` keeps each module's own hash, so
``saddlebench run --explain-cache`` can say which file changed.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib.util
from functools import cache, lru_cache
from importlib.metadata import packages_distributions, version
from pathlib import Path

from algorithms.base import get_algorithm
from bench.spec import RunSpec
from problems.base import get_problem

RUNNER = ("bench.runner", "bench.metrics", "bench.spec")  # shared by every run


@cache
def _source(module: str) -> tuple[Path, bool] | None:
    """The file of ``module`` and whether it is a package (None: not Python source), found
    on disk from its top-level package's folder, without importing anything below it."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return (Path(spec.origin), False) if spec and spec.origin and not rest \
            and spec.origin.endswith(".py") else None
    for folder in spec.submodule_search_locations:
        path = Path(folder, *rest)
        if (path / "__init__.py").is_file():
            return path / "__init__.py", True
        if rest and path.with_suffix(".py").is_file():
            return path.with_suffix(".py"), False
    return None


@cache
def _tree(module: str) -> ast.Module | None:
    found = _source(module)
    return ast.parse(found[0].read_text()) if found else None


def _strip_docstrings(tree: ast.Module) -> ast.Module:
    """The tree without the docstrings of the module, its classes and functions."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


@cache
def module_hash(module: str) -> str:
    """The hash of ``module``'s code, docstrings and comments aside."""
    tree = _tree(module)
    if tree is None:
        return "missing"
    bare = _strip_docstrings(copy.deepcopy(tree))  # the cached tree is shared
    return hashlib.sha256(ast.dump(bare, include_attributes=False).encode()).hexdigest()[:16]


def _absolute(module: str, node: ast.ImportFrom, package: bool) -> str:
    """The module an ``ImportFrom`` in ``module`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if package else parts[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(module: str, packages: set[str]) -> set[str]:
    """The modules of ``packages`` that ``module`` imports, with ``from package import
    name`` resolved to the submodule ``name`` or, through the package's own imports, to the
    module defining it."""
    tree, found = _tree(module), _source(module)
    if tree is None or found is None:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] in packages}
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, found[1])
            if source.split(".")[0] in packages:
                out |= {_defining(source, alias.name) for alias in node.names}
    return out


def _defining(source: str, name: str) -> str:
    """Where ``from source import name`` gets ``name``: a submodule, the module a package
    re-exports it from, or ``source`` itself."""
    if _source(f"{source}.{name}"):
        return f"{source}.{name}"
    found, tree = _source(source), _tree(source)
    if found and found[1] and tree is not None:
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and any(
                    (alias.asname or alias.name) == name for alias in node.names):
                return _absolute(source, node, True)
    return source


@cache
def modules(roots: tuple[str, ...]) -> dict[str, str]:
    """``roots`` and every module of their top-level packages (and saddlebench's) that they
    import, transitively: module → its hash."""
    packages = {"algorithms", "problems", "bench"} | {r.split(".")[0] for r in roots}
    seen: dict[str, str] = {}
    todo = [r for r in roots if r.split(".")[0] in packages]
    while todo:
        module = todo.pop()
        if module in seen or not _source(module):
            continue
        seen[module] = module_hash(module)
        todo += sorted(_imports(module, packages))
    return dict(sorted(seen.items()))


def roots(spec: RunSpec) -> tuple[str, ...]:
    """The modules that define ``spec``'s algorithm and problem, and the runner's."""
    return (*RUNNER, get_algorithm(spec.algorithm.name).__module__,
            get_problem(spec.problem.name).__module__)


@lru_cache(maxsize=1)
def _owners() -> dict[str, list[str]]:
    return dict(packages_distributions())


def _outside_versions(found: dict[str, str]) -> dict[str, str]:
    """Versions of the distributions outside saddlebench that provide modules of ``found``."""
    tops = sorted({m.split(".")[0] for m in found} - {"algorithms", "problems", "bench"})
    return {dist: version(dist) for top in tops for dist in _owners().get(top, [])}


@cache
def _parts(found_roots: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    found = modules(found_roots)
    parts = {**found, **{f"dist:{k}": v for k, v in _outside_versions(found).items()}}
    return hashlib.sha256(repr(sorted(parts.items())).encode()).hexdigest()[:16], parts


def fingerprint(spec: RunSpec) -> tuple[str, dict[str, str]]:
    """The run's code fingerprint and its parts (module → hash, distribution → version)."""
    return _parts(roots(spec))


def clear() -> None:
    """Forget cached sources and hashes (the files changed)."""
    for cached in (_source, _tree, module_hash, modules, _owners, _parts):
        cached.cache_clear()
