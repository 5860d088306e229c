"""A hardened YAML reader for experiment files: size limits, UTF-8 only, no duplicate
keys, and a cap on alias expansion; numbers as YAML 1.2 reads them (``1e-5`` is a float,
not the string PyYAML's YAML 1.1 makes of it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from bench.errors import SpecError, YamlPath, show

MAX_FILE_BYTES = 1_000_000  # of an experiment file
MAX_NODES = 100_000  # YAML nodes of an experiment file, with aliases expanded


def read_yaml(p: Path, marks: dict[YamlPath, tuple[int, int]] | None = None) -> Any:
    """The YAML document in ``p``, refusing what PyYAML would take silently: files over
    1 MB, text that is not UTF-8, duplicate keys, and aliases that expand to more than
    100,000 nodes (a "billion laughs" bomb). ``marks``, if given, receives the line and
    column of each value by its path (``("algorithms", 1, "params", "lr")``)."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SpecError(f"{p}: cannot read it ({exc.strerror}); check its permissions") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"{p}: {len(raw):,} bytes, more than an experiment file may have "
                        f"({MAX_FILE_BYTES:,}); split it into several files")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, set()) > MAX_NODES:
            raise SpecError(f"{p}: its aliases expand to more than {MAX_NODES:,} YAML nodes "
                            "(or refer to themselves); write the values out instead")
        if marks is not None:
            _mark(node, (), marks)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = (" ".join(filter(None, (getattr(exc, "context", None),
                                         getattr(exc, "problem", None))))
                   or str(exc).splitlines()[0])
        raise SpecError(f"{p}:{place}: malformed YAML: {problem}") from None
    except RecursionError:
        raise SpecError(f"{p}: nested too deeply to be an experiment file") from None
    finally:
        loader.dispose()


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys (it would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:  # unhashable: the base class says so
                continue
            if earlier is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {show(key)} (first at line "
                    f"{earlier.start_mark.line + 1}); keep one of them", key_node.start_mark)
        return super().construct_mapping(node, deep)


# YAML 1.2 floats PyYAML's 1.1 resolver leaves as strings: an exponent without a dot
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def yaml_value(text: str) -> Any:
    """A value given on the command line (``--set``, ``--param``), read as in a file."""
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass


def _mark(node: yaml.Node, path: YamlPath, marks: dict[YamlPath, tuple[int, int]]) -> None:
    """Record the line and column (1-based) of ``node`` and of every value under it."""
    marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _mark(child, (*path, i), marks)
    elif isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                _mark(child, (*path, key.value), marks)


def _expanded_size(node: yaml.Node, memo: dict[int, int], active: set[int]) -> int:
    """The number of nodes under ``node`` with every alias expanded (capped past
    :data:`MAX_NODES`); a recursive alias counts as too many."""
    if id(node) in memo:
        return memo[id(node)]
    if id(node) in active:
        return MAX_NODES + 1
    active.add(id(node))
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    total = 1
    for child in children:
        total += _expanded_size(child, memo, active)
        if total > MAX_NODES:
            break
    active.discard(id(node))
    memo[id(node)] = total
    return total
