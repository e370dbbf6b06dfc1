"""No import cycles in the product code: the modules of service/, connectors/, dashboard/, cache/ and
the small shared packages (paramcheck/, envfields/, city_counties/, flatcolumns/) import each other
as a directed acyclic graph, counting the imports inside functions (a cycle hidden in a function is
still one: the two modules cannot be understood, or moved, one without the other).

An edge goes to the module an import names (`from a.b import c`: `a.b.c` when that is a module, else
`a.b`), not to the packages above it. Imports under `if TYPE_CHECKING:` count too: they never run,
but a module that names another's types for its own signatures still cannot be understood without
it (issue 44: engine/clickhouse/cells.py and packing.py were such a pair; the cell keys both use
now live in keys.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from tests.support.processes import ROOT

PACKAGES = ("service", "connectors", "dashboard", "cache", "paramcheck", "envfields", "city_counties",
            "flatcolumns")


def module_sources() -> dict[str, str]:
    """Module name -> source, for every module of the product packages."""
    sources = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            sources[name] = path.read_text()
    return sources


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under `node`: at module level, in functions, under `if TYPE_CHECKING:`."""
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child


def _target(name: str, modules: Mapping[str, str]) -> str | None:
    """The known module `name` is, or the longest known package it lies in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module -> the modules (of `sources`) it imports."""
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        is_package = any(other.startswith(module + ".") for other in sources)
        edges = graph[module] = set()
        for node in _imports(ast.parse(source)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = module.split(".")
                    anchor = anchor if is_package else anchor[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in sources else base
                         for alias in node.names]
            for name in names:
                target = _target(name, sources)
                if target is not None and target != module:
                    edges.add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> ... -> a) through each strongly connected set of modules, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(_cycle_in(component, graph) for component in components)


def _cycle_in(component: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """The shortest cycle from the component's first module back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    return paths[node] + [start]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle in {sorted(component)}")


def test_the_product_modules_import_each_other_without_cycles() -> None:
    found = cycles(import_graph(module_sources()))
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_the_check_finds_a_cycle_through_a_function_level_import() -> None:
    sources = {
        "pkg": "",
        "pkg.store": "from pkg.sub import engine\n",
        "pkg.sub": "",
        "pkg.sub.engine": "def counts():\n    from ..store import snapshot\n",
        "pkg.other": "import pkg.sub.engine\n",
    }
    graph = import_graph(sources)
    assert graph["pkg.sub.engine"] == {"pkg.store"}  # the relative import resolved
    assert cycles(graph) == [["pkg.store", "pkg.sub.engine", "pkg.store"]]


def test_the_check_finds_a_cycle_through_a_type_checking_import() -> None:
    sources = {
        "pkg": "",
        "pkg.cells": "from pkg import packing\n",
        "pkg.packing": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.cells import Key\n",
    }
    assert cycles(import_graph(sources)) == [["pkg.cells", "pkg.packing", "pkg.cells"]]
