"""The package's layering (docs/decisions.md), read from the sources' imports, lazy ones included:
each package imports only packages below it, the two modes never import each other, and no
module takes part in an import cycle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import happy_launcher

PACKAGE = Path(happy_launcher.__file__).parent
# Lower first; units on one level never import each other.
LEVELS: list[set[str]] = [
    {"errors", "version"},
    {"protocol"},
    {"claude"},
    {"terminal", "home"},
    {"store"},
    {"session"},
    {"control"},
    {"local", "remote"},
    {"spawn"},  # sessions started without a terminal: a process, not the run itself
    {"runner"},  # `happy attach` hands a session back to a detached run
    {"api", "web", "bridge"},
    {"cli"},
    {"__init__", "__main__"},
]
LEVEL = {unit: n for n, units in enumerate(LEVELS) for unit in units}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[str]:
    """Every module of ours that `path` imports, at any depth of its code."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "happy_launcher")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "happy_launcher":
                yield from (f"happy_launcher.{a.name}" for a in node.names)
            elif node.module.startswith("happy_launcher."):
                yield node.module


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def graph() -> dict[str, set[str]]:
    return {module_name(p): set(imports(p)) for p in PACKAGE.rglob("*.py")}


def test_every_unit_has_a_level() -> None:
    assert {unit(m) for m in graph()} <= set(LEVEL)


def test_no_package_imports_upward_or_sideways() -> None:
    wrong = sorted(
        (module, target)
        for module, targets in graph().items()
        for target in targets
        if unit(module) != unit(target) and LEVEL[unit(target)] >= LEVEL[unit(module)]
    )
    assert wrong == []


def test_no_relative_imports() -> None:
    relative = [
        str(p)
        for p in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == []


def test_no_import_cycle() -> None:
    edges = graph()
    # A package's __init__ is imported by every module below it: not an edge of the cycle check.
    edges = {m: {t for t in ts if t in edges and not m.startswith(t + ".")} for m, ts in edges.items()}
    cycles = [scc for scc in strongly_connected(edges) if len(scc) > 1]
    assert cycles == []


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of `edges`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found
