"""The import graph of the `scheduler` package, read from the source with `ast` (nothing is imported).

Every `import` and `from ... import` counts, at module level or inside a function, except those under
`if TYPE_CHECKING:` (annotations only: they never run). Relative imports are resolved.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# `make lint LINT_ROOT=...` checks another tree (tests/structure/test_lint.py lints throwaway copies)
ROOT = Path(os.environ.get("VC_SCHEDULER_LINT_ROOT") or Path(__file__).resolve().parents[2]).resolve()
PACKAGE = "scheduler"


@dataclass(frozen=True, slots=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module (or module.name for `from m import name`), dotted
    line: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.orelse:
                yield from _walk(sub)
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _walk(child)


def imports_of(path: Path, root: Path = ROOT) -> list[Import]:
    source = module_name(path, root)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: list[Import] = []
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            out.extend(Import(source, alias.name, node.lineno) for alias in node.names)
            continue
        if node.level:
            base = source.split(".")
            base = base[: len(base) - node.level + (1 if is_pkg else 0)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        out.extend(Import(source, f"{mod}.{alias.name}", node.lineno) for alias in node.names)
    return out


def all_imports(root: Path = ROOT) -> list[Import]:
    files = sorted((root / PACKAGE).rglob("*.py"))
    return [imp for f in files for imp in imports_of(f, root)]


def known_modules(root: Path = ROOT) -> set[str]:
    return {module_name(f, root) for f in (root / PACKAGE).rglob("*.py")}


def resolve(target: str, modules: set[str]) -> str | None:
    """The project module an import refers to (`from pkg import name` may name a module or a symbol)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def edges(root: Path = ROOT) -> dict[str, set[str]]:
    modules = known_modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in all_imports(root):
        target = resolve(imp.target, modules)
        # `from scheduler.x import y` also runs scheduler/x/__init__; a package importing its own
        # submodule is not an edge back up
        if target and target != imp.source and not imp.source.startswith(target + "."):
            graph[imp.source].add(target)
    return graph


def cycles_within_packages(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file, among the files of one package."""
    out: list[list[str]] = []
    packages = {m.rpartition(".")[0] for m in graph}
    for pkg in sorted(packages):
        members = {m for m in graph if m.rpartition(".")[0] == pkg and not m.endswith("__init__")}
        sub = {m: {t for t in graph[m] if t in members} for m in members}
        out.extend(c for c in _sccs(sub) if len(c) > 1)
    return out


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            result.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result
