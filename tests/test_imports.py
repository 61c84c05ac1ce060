"""The package's modules import each other in one direction: no circle, counting the imports
inside functions and under ``TYPE_CHECKING`` too (a lazy import, or one for annotations only,
is still a dependency, as import graph tools count it) and a package's ``__init__`` as a
module of its own (a module that takes names from its package's ``__init__``, which imports
that module, is a circle as import graph tools see it), and no package named like the folders
tools read as build output or tests."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "arena"


def _module(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = {_module(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] +
                                    ([base] if base else []))
                # ``from package import module`` depends on that module; any other name is the package's own
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
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


def _reach(graph: dict[str, set[str]], starts: list[str]) -> set[str]:
    """Every module the modules ``starts`` import, directly or not."""
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        for n in graph.get(todo.pop(), ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def test_no_import_circles():
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle)


def test_a_circle_is_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_annotation_imports_and_package_names_are_dependencies(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("def make():\n    from pkg.a import A\n    return A()\n")
    (pkg / "a.py").write_text("from pkg import make\nfrom pkg.sub import b\nclass A: ...\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n")
    graph = _graph(pkg)
    assert graph["pkg.a"] == {"pkg", "pkg.sub.b"}        # a name from the package; a module of a package
    assert graph["pkg.sub.b"] == {"pkg.a"}                 # for annotations only
    assert _cycle(graph) == ["pkg", "pkg.a", "pkg"]          # the package's lazy import of the module it serves
    graph["pkg.a"] = {"pkg.sub.b"}
    assert _cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]  # through an import for annotations
    graph["pkg.sub.b"] = set()
    assert _cycle(graph) is None


def test_no_package_named_like_build_output_or_tests():
    names = {p.name for p in ROOT.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    assert not names & {"build", "dist", "spec", "specs", "test", "tests"}, names


def test_each_process_imports_only_what_may_run_in_it():
    """The trusted process imports nothing that runs candidate code or replays it; the replay
    process nothing of the candidate's process (its guard, its audit hook). The recorders are
    neither's alone: the candidate's process records the candidate's calls with them, the
    replay process the baseline's."""
    graph = _graph()
    trusted = {m for m in graph if m.startswith("arena.evaluation.trusted")}
    for m in sorted(trusted):
        bad = sorted(n for n in graph[m] if n.startswith(("arena.evaluation.candidate", "arena.evaluation.replay",
                                                          "arena.evaluation.server")))
        assert not bad, f"{m} imports {bad}"
    replay = _reach(graph, ["arena.evaluation.replay.process"])
    assert not sorted(n for n in replay if n.startswith("arena.evaluation.candidate")), replay
    assert "arena.evaluation.server" in replay and "arena.evaluation.replay.player" in replay
    assert "arena.evaluation.recorder" in replay and "arena.evaluation.native_recorder" in replay


def test_no_private_name_is_imported_from_another_module():
    """A module's ``_name`` is its own: no other module of the package imports it (a helper two
    modules need is public where it is defined)."""
    found = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("arena") and not node.level:
                found += [f"{path.relative_to(ROOT.parent)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, found


def test_every_exception_the_package_defines_is_of_one_family():
    """Every exception class under ``arena`` descends from ``arena.errors.ArenaException``, or from
    ``arena.errors.Interruption`` (the one ``BaseException``: control flow that must pass the
    ``except Exception`` of the code it interrupts)."""
    builtin = {"Exception", "BaseException", "ValueError", "RuntimeError", "TypeError", "KeyError", "OSError"}
    bases: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                         for b in node.bases]
                bases[node.name] = names
                where[node.name] = str(path.relative_to(ROOT.parent))

    def family(name: str, seen: frozenset = frozenset()) -> bool | None:
        """True: of the family; False: an exception outside it; None: not an exception."""
        if name in ("ArenaException", "Interruption"):
            return True
        if name in builtin:
            return False
        if name not in bases or name in seen:
            return None
        found = [family(b, seen | {name}) for b in bases[name]]
        return True if True in found else False if False in found else None

    outside = sorted(f"{where[c]}: {c}" for c in bases if c not in ("ArenaException", "Interruption")
                     and family(c) is False)
    assert not outside, outside
    assert bases["Interruption"] == ["BaseException"] and where["Interruption"] == "arena/errors.py"


def test_the_evaluation_loads_no_authoring_tool():
    """The importers and ``tasks check`` are tools for authors (``arena.authoring``): nothing an
    evaluation imports reaches them."""
    graph = _graph()
    seen = _reach(graph, [m for m in graph if m.startswith("arena.evaluation")])
    assert not sorted(m for m in seen if m.startswith("arena.authoring")), seen
