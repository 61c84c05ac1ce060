"""The package's modules import each other in one direction: no circle, counting the imports
inside functions too (a lazy import is still a dependency), and no package named like the
folders tools read as build output or tests."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "arena"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for stmt in ast.walk(tree) if isinstance(stmt, ast.If) and
                       ast.unparse(stmt.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for body in stmt.body for n in ast.walk(body)}
        for node in ast.walk(tree):
            if id(node) in typing_only:       # annotations only: nothing is imported when the code runs
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] +
                                    ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                if t in modules and t != name:
                    graph[name].add(t)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if n == m.rsplit(".", 1)[0] or m == n.rsplit(".", 1)[0]:
                continue                     # a package and its own modules
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_circles():
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle)


def test_a_circle_is_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_package_named_like_build_output_or_tests():
    names = {p.name for p in ROOT.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    assert not names & {"build", "dist", "spec", "specs", "test", "tests"}, names
