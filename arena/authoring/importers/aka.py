"""AgentKernelArena-style task folders (a YAML, a kernel source, a test script): ``import_aka``."""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import dataclasses
import json
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Iterable

import torch
import yaml

from arena.authoring.importers.common import (
    DTYPE_METHODS,
    DTYPE_NAMES,
    MAX_CONFIG_BYTES,
    MIN_VARIED,
    PASS_METHODS,
    PROBE_CUT,
    ROUNDING_SECONDS,
    TENSOR_MAKERS,
    WINDOW_BYTES,
    WINDOW_FLOPS,
    WINDOW_MARGIN,
    CallCost,
    Draft,
    Fitter,
    ImportResult,
    ImportStop,
    ProbeTimeout,
    RangeModel,
    Substitute,
    bound_by_imports,
    call_name,
    config_params,
    count_bytes,
    count_elements,
    counted_calls,
    dotted_name,
    draft_configs,
    drop_degenerate_configs,
    few_values_at_sizes,
    finish_draft,
    flop_counter,
    free_names,
    grown_cases,
    grown_from,
    import_lines,
    in_window,
    init_from_expr,
    join_statements,
    larger_smoke,
    literal,
    median_nonzero,
    module_defs,
    number_of,
    on_one_thread,
    once_per_config,
    parse_source,
    peak_bytes_mode,
    probe_limits,
    product_formula,
    range_at_sizes,
    read_bytes_mode,
    resolve_task_id,
    roofline_draft,
    rounding_tolerance,
    scaled_test_tolerance,
    schema_supports,
    self_chain,
    shape_space_draft,
    shapes_only,
    spread_of,
    test_tolerance,
    topped_up,
    whole_numbers_as_uniform,
    without_unused_imports,
    write_configs,
    write_draft,
)
from arena.authoring.importers.kernelbench import (
    ModuleProblem,
    build_module_task,
)
from arena.authoring.importers.observe import ObservationTimeout, Observer, OnDevice, module_namespace
from arena.errors import ArenaError
from arena.taskdef import formula
from arena.taskdef.loader import CATEGORIES, INTEGER_DTYPES
from arena.taskdef.shapes import DTYPE_BYTES
from arena.toolchain.abi import split_params

# ------------------------------------------------------------------------------------------
# AgentKernelArena-style task folders


SOURCE_SUFFIXES = (".py", ".hip", ".cu", ".cpp", ".cc", ".cuh", ".h", ".hpp")
HARNESS_NAMES = re.compile(r"(task_runner|harness|test_|_test\.py|check|correctness|eval|bench|perf)", re.I)
COMPARE_FUNCS = {
    "allclose",
    "assert_close",
    "assert_allclose",
    "isclose",
    "equal",
    "assert_equal",
    "assert_array_almost_equal",
    "assert_array_equal",
}
ELEMENTWISE_METHODS = {"abs", "abs_", "exp", "exp_", "sigmoid", "tanh", "relu", "neg", "sqrt", "sign", "clamp",
                       "clamp_", "clamp_min", "clamp_max", "round", "floor", "ceil", "mul", "mul_", "add", "add_",
                       "sub", "div", "pow", "uniform_", "normal_", "fill_", "softmax", "log_softmax", "square"}
CONSTANT_MAKERS = {"ones", "zeros", "full", "arange"}  # a tensor the reference may make itself: no draw
WRAPPERS = PASS_METHODS | set(DTYPE_METHODS) | {"cpu", "numpy", "flatten", "view", "reshape", "squeeze"}


def _strings(obj: Any, keys: tuple = ()) -> list[tuple[tuple, str]]:
    """Every string in a YAML document with the keys that lead to it."""
    out: list[tuple[tuple, str]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _strings(v, (*keys, str(k)))
    elif isinstance(obj, list):
        for v in obj:
            out += _strings(v, keys)
    elif isinstance(obj, str):
        out.append((keys, obj))
    return out


@dataclass
class AkaFolder:
    """What an AgentKernelArena-style folder says about itself: its YAML, the kernel source(s),
    the test scripts, PyTorch module files and workload files."""

    folder: Path
    config_path: Path
    config: dict
    category: str
    sources: list[Path]
    kernels: list[str]
    harnesses: list[Path]
    modules: list[Path]
    workloads: list[Path]
    instructions: str

    @classmethod
    def read(cls, path: Path) -> "AkaFolder":
        path = Path(path)
        if path.is_file() and path.suffix not in (".yaml", ".yml"):
            raise ImportStop(
                "`arena tasks import aka` takes an AgentKernelArena task folder (or its YAML file), "
                "not a single source file",
                path=path,
            )
        if path.is_file():
            folder, candidates = path.parent, [path]
        elif path.is_dir():
            folder = path
            candidates = [path / n for n in ("config.yaml", "config.yml", "task.yaml", "task.yml")]
            candidates += sorted(p for p in path.glob("*.y*ml") if p not in candidates)
        else:
            raise ImportStop("not found", path=path)
        config_path, config = None, None
        for c in candidates:
            if not c.is_file():
                continue
            try:
                data = yaml.safe_load(c.read_text())
            except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ImportStop(f"not valid YAML: {first}", path=c) from None
            if isinstance(data, dict):
                config_path, config = c, data
                break
        if config is None:
            raise ImportStop(
                "no task YAML (config.yaml) here: an AgentKernelArena task folder has one naming its kernel source",
                path=folder,
            )
        strings = _strings(config)
        sources: list[Path] = []
        for keys, value in strings:
            joined = ".".join(keys).lower()
            if not re.search(r"source|target|kernel|editable|entrypoint", joined):
                continue
            for token in value.split():
                p = folder / token
                if p.suffix in SOURCE_SUFFIXES and p.is_file() and p not in sources:
                    sources.append(p)
        if not sources:
            found = sorted(
                p
                for p in folder.rglob("*")
                if p.is_file()
                and (
                    p.suffix in (".hip", ".cu")
                    or (
                        p.suffix == ".py"
                        and not HARNESS_NAMES.search(p.name)
                        and "@triton.jit" in p.read_text(errors="replace")
                    )
                )
            )
            sources = found[:1]
        if not sources:
            raise ImportStop(
                "the task YAML names no kernel source that exists here (source_file_path, "
                "target_file_path or candidate.editable), and the folder holds no .hip, .cu or Triton "
                "file",
                path=config_path,
            )
        kernels = [
            v
            for keys, v in strings
            if re.search(r"target_kernel|symbol|entrypoint", ".".join(keys).lower())
            and re.fullmatch(r"[A-Za-z_]\w*", v)
        ]
        task_type = str(config.get("task_type") or (config.get("prompt") or {}).get("task_type") or "")
        language = str((config.get("candidate") or {}).get("language") or "")
        category = (
            task_type
            if task_type in CATEGORIES
            else {"triton": "triton2triton", "hip": "hip2hip"}.get(
                language.lower(), "triton2triton" if sources[0].suffix == ".py" else "hip2hip"
            )
        )
        if category == "torch2hip":
            raise ImportStop(
                "a torch2hip task: import its PyTorch problem file with `arena tasks import kernelbench FILE` instead",
                path=config_path,
            )
        commands = [v for keys, v in strings if re.search(r"command|runner", ".".join(keys).lower())]
        harnesses: list[Path] = []
        modules: list[Path] = []
        named = [folder / t for c in commands for t in c.split() if t.endswith(".py")]
        for p in [*named, *sorted(folder.rglob("*.py"))]:
            if not p.is_file() or p in harnesses or p in modules:
                continue
            text = p.read_text(errors="replace")
            if p in sources:
                if re.search(r"^def test_", text, re.M):
                    harnesses.append(p)  # the kernel and its pytest test in one file
                continue
            if "def get_inputs" in text and "def forward" in text:
                modules.append(p)  # a PyTorch module problem (KernelBench-like)
            elif p in named or HARNESS_NAMES.search(p.name):
                harnesses.append(p)  # a test script: the commands' first
        modules.sort(key=lambda p: (p not in named, "func" in p.name, str(p)))
        workloads = sorted(p for p in folder.rglob("*.json") if re.search(r"workload|test_case|cases", p.name))
        instructions = str((config.get("prompt") or {}).get("instructions") or config.get("description") or "")
        return cls(
            folder, config_path, config, category, sources, kernels, harnesses, modules, workloads, instructions.strip()
        )


# -- reading a test script -------------------------------------------------------------------


@dataclass
class HTensor:
    name: str
    dtype: str
    shape: list | None
    init: dict
    note: str | None
    maker: str
    fill: float | None = None


@dataclass
class Harness:
    """What a test script does in its correctness check, as far as it can be read: the cases
    it loops over, the tensors it makes, the call into the kernel's file and the comparison."""

    path: Path
    text: str
    tree: ast.Module
    fields: list[str]
    cases: list[dict]
    tensors: dict[str, HTensor]
    call: ast.Call
    call_stmt: ast.stmt
    launcher: str
    results: list[str]
    compared: list[tuple[str, ast.expr, ast.stmt]]
    stmts: list[ast.stmt]
    consts: dict[str, Any]
    kinds: dict[str, str]  # name -> "dtype:<name>" | "device" | "int:<formula>"
    notes: list[str]
    function: str
    loop_target: ast.expr | None = None         # what the loop around the call binds ...
    item_of: Callable[[dict], Any] | None = None  # ... to a case (its fields set), as the case list holds it
    index_name: str | None = None               # enumerate's counter, 0 when observed
    bind: list[ast.stmt] = dataclasses.field(default_factory=list)  # the case's fields bound from the item
    kernel_names: set[str] = dataclasses.field(default_factory=set)  # what the test imports of the kernel's file
    kernel_source: tuple[str, ast.Module] | None = None  # that file (text, tree), for the helpers the reference uses
    kernel_launching: set[str] = dataclasses.field(default_factory=set)  # its kernels and what launches them
    kernel_path_name: str = "the kernel's file"
    bound: dict[str, Any] = dataclasses.field(default_factory=dict)  # the test's other parameters, bound when observed
    tolerance: dict[str, float] = dataclasses.field(default_factory=dict)  # the comparison's own atol / rtol


def _flatten(stmts: Iterable[ast.stmt], loop: ast.For | None, call: ast.Call | None = None) -> list[ast.stmt]:
    """Statements in order, try/with bodies opened; the chosen loop's body inlined in its place, and the branch of an
    ``if`` that holds the kernel call (``call``): the path the test takes to it (rocmbench's ``gemm.py`` calls its
    kernel, and computes what it compares with, in both branches of ``if dtype_is_8_bit(...)``)."""
    out: list[ast.stmt] = []

    def holds(body: list[ast.stmt]) -> bool:
        return call is not None and any(n is call for b in body for n in ast.walk(b))

    for s in stmts:
        if s is loop:
            out += _flatten(s.body, loop, call)
        elif isinstance(s, (ast.Try,)):
            out += _flatten(s.body, loop, call)
        elif isinstance(s, (ast.With,)):
            out += _flatten(s.body, loop, call)
        elif isinstance(s, ast.For) and loop is not None and any(n is loop for n in ast.walk(s)):
            out += _flatten(s.body, loop, call)
        elif isinstance(s, ast.If) and (holds(s.body) or holds(s.orelse)):
            out += _flatten(s.body if holds(s.body) else s.orelse, loop, call)
        else:
            out.append(s)
    return out


def _module_values(tree: ast.Module) -> dict[str, Any]:
    out = {}
    for s in tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            try:
                out[s.targets[0].id] = ast.literal_eval(s.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return out


def _fields_from_comment(text: str, line: int) -> list[str] | None:
    lines = text.splitlines()
    for ln in reversed(lines[max(0, line - 4) : line]):
        m = re.search(r"\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\)", ln)
        if ln.strip().startswith("#") and m:
            return [x.strip() for x in m.group(1).split(",")]
    return None


def _flags_resolved(stmts: list[ast.stmt], flags: dict[str, Any]) -> list[ast.stmt]:
    """``stmts`` with each ``A if flag else B`` whose flag is a case's value the task fixes (``has_bias``, the first
    case's True: ``b = torch.randn(N) if has_bias else None``) read as the branch it takes, so that what it makes is
    seen as the test makes it for that case (an input drawn, or none). A flag the statements bind is left alone."""
    bound = {t.id for st in stmts for n in ast.walk(st) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) for t in ast.walk(t)
             if isinstance(t, ast.Name)}
    fixed = {n: v for n, v in flags.items() if n not in bound and isinstance(v, (bool, type(None)))}
    if not fixed:
        return stmts

    class _Taken(ast.NodeTransformer):
        def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.test, ast.Name) and node.test.id in fixed:
                return node.body if fixed[node.test.id] else node.orelse
            return node

    return [ast.fix_missing_locations(_Taken().visit(st)) for st in stmts]


def _list_name(e: ast.expr) -> str | None:
    """The name of the list a loop is over (``CASES``, ``enumerate(CASES)``), or None."""
    if isinstance(e, ast.Call) and call_name(e) == "enumerate" and e.args:
        e = e.args[0]
    return e.id if isinstance(e, ast.Name) else None


def _fields_unpacked(tree: ast.Module, text: str, iterable: ast.expr, n: int) -> list[str] | None:
    """The names of a case list's fields where a loop over it uses each case whole: as the module unpacks a case
    of the same list elsewhere (``M, N, has_bias = TEST_CASES[case_idx]`` in the helper that makes the inputs, ``for
    M, N, has_bias in TEST_CASES`` in the benchmark), else as a comment on the list's first line names them
    (``# (M, N, has_bias)``); None where nothing names ``n`` fields."""
    listed = _list_name(iterable)
    if listed is None or n <= 0:
        return None

    def of_list(e: ast.expr) -> bool:
        return _list_name(e) == listed

    def names_of(t: ast.expr) -> list[str] | None:
        if isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(t.elts[1], ast.Tuple):
            t = t.elts[1]       # for i, (a, b) in enumerate(CASES)
        if isinstance(t, ast.Tuple) and len(t.elts) == n and all(isinstance(e, ast.Name) for e in t.elts):
            return [e.id for e in t.elts if isinstance(e, ast.Name)]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Subscript) \
                and isinstance(node.value.value, ast.Name) and node.value.value.id == listed:
            got = names_of(node.targets[0])
        elif isinstance(node, (ast.For, ast.comprehension)) and of_list(node.iter):
            got = names_of(node.target)
        else:
            continue
        if got:
            return got
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == listed for t in node.targets):
            got = _fields_from_comment(text, node.lineno + 2)
            return got if got and len(got) == n else None
    return None


def _tuple_or_whole(node: ast.AST, names: set[str]) -> bool:
    """``r[0] if isinstance(r, tuple) else r`` (or list) with ``r`` one of ``names``: the first value of what a
    launcher returns where it returns several, else the whole."""
    if not (isinstance(node, ast.IfExp) and isinstance(node.orelse, ast.Name) and node.orelse.id in names):
        return False
    r, test, body = node.orelse.id, node.test, node.body
    return (isinstance(test, ast.Call) and call_name(test) == "isinstance" and len(test.args) == 2 and
            isinstance(test.args[0], ast.Name) and test.args[0].id == r and
            all(isinstance(t, ast.Name) and t.id in ("tuple", "list") for t in
                (test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]])) and
            isinstance(body, ast.Subscript) and isinstance(body.value, ast.Name) and body.value.id == r and
            number_of(body.slice) is not None)


def _result_views(after: list[ast.stmt], results: set[str]) -> dict[str, ast.expr]:
    """The names the test binds after the kernel call to what the call returned, read through
    (``res_cpu = res.cpu()``, ``r = results[0]``, ``out = r[0] if isinstance(r, tuple) else r``): each
    name -> the expression of the call's results it stands for (wrappers dropped)."""
    views: dict[str, ast.expr] = {}
    for st in after:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
            continue
        node = _unwrapped(st.value)
        if isinstance(node, ast.Name) and node.id in views:
            views[st.targets[0].id] = views[node.id]
        elif isinstance(node, ast.Name) and node.id in results:
            views[st.targets[0].id] = node
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                number_of(node.slice) is not None and (node.value.id in results or node.value.id in views
                                                       and isinstance(views[node.value.id], ast.Name)):
            base = node.value if node.value.id in results else views[node.value.id]
            views[st.targets[0].id] = ast.Subscript(base, node.slice, ast.Load())
        elif _tuple_or_whole(node, results):
            views[st.targets[0].id] = node   # type: ignore[assignment]
    return views


def _aliases(st: ast.Assign, names: set[str]) -> list[str]:
    """The name ``st`` binds to one of ``names`` passed through wrappers (``res_cpu = res.cpu()``)."""
    node = _unwrapped(st.value)
    if len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and isinstance(node, ast.Name) and node.id in names:
        return [st.targets[0].id]
    return []


class _CaseLists:
    """Where a test's loop takes its cases from: a list written in the test, a name of its module
    (a literal, else the value its top level computes: a comprehension, a list imported from the
    kernel's file), a parameter of the function the loop is in (what the module's call of that
    function passes), or a list indexed by the loop's counter (``for idx in indices: cfg = CONFIGS[idx]``)."""

    def __init__(self, path: Path, tree: ast.Module, values: dict[str, Any]):
        self.path, self.tree, self.values = path, tree, values
        self._ns: dict[str, Any] | None = None

    def _namespace(self) -> dict[str, Any]:
        if self._ns is None:
            try:
                self._ns = module_namespace(self.path, self.tree)
            except BaseException:  # noqa: BLE001 - the top level does not run here: only literals are read
                self._ns = {}
        return self._ns

    def value(self, expr: ast.expr | None, owner: ast.FunctionDef | None) -> Any:
        if isinstance(expr, (ast.List, ast.Tuple)):
            try:
                return ast.literal_eval(expr)
            except (ValueError, SyntaxError, TypeError):
                return None
        if not isinstance(expr, ast.Name):
            return None
        if owner is not None and expr.id in [a.arg for a in owner.args.args + owner.args.kwonlyargs]:
            got = self.value(self._argument(owner, expr.id), None)
            if got is None:  # ``if shapes is None: shapes = HARNESS_SHAPES``
                got = next((v for st in ast.walk(owner) if isinstance(st, ast.Assign) and len(st.targets) == 1
                            and isinstance(st.targets[0], ast.Name) and st.targets[0].id == expr.id
                            for v in [self.value(st.value, None)] if v is not None), None)
            return got
        if expr.id in self.values:
            return self.values[expr.id]
        v = self._namespace().get(expr.id)
        return v if isinstance(v, (list, tuple)) else None

    def _argument(self, fn: ast.FunctionDef, name: str) -> ast.expr | None:
        """What the module's first call of ``fn`` that says passes as its parameter ``name``, else its default."""
        params = [a.arg for a in fn.args.args]
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name:
                got = next((k.value for k in n.keywords if k.arg == name), None)
                i = params.index(name) if name in params else -1
                if got is None and 0 <= i < len(n.args) and not isinstance(n.args[i], ast.Starred):
                    got = n.args[i]
                if got is not None and not (isinstance(got, ast.Constant) and got.value is None):
                    return got
        if name in params:
            i = params.index(name) - (len(params) - len(fn.args.defaults))
            if i >= 0:
                return fn.args.defaults[i]
        return None

    def of_loop(self, loop: ast.For, owner: ast.FunctionDef) -> tuple:
        """(what each case binds, the cases, the counter's name, the statement that indexes the list, the loop)."""
        target, it, index = loop.target, loop.iter, None
        if isinstance(it, ast.Call) and call_name(it) == "enumerate" and it.args:
            it = it.args[0]
            if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                if isinstance(target.elts[0], ast.Name):
                    index = target.elts[0].id
                target = target.elts[1]
        if isinstance(target, ast.Name):
            for st in ast.walk(loop):
                if (
                    isinstance(st, ast.Assign)
                    and len(st.targets) == 1
                    and isinstance(st.value, ast.Subscript)
                    and isinstance(st.value.slice, ast.Name)
                    and st.value.slice.id == target.id
                    and isinstance(st.value.value, ast.Name)
                ):
                    raw = self.value(st.value.value, owner)
                    if isinstance(raw, (list, tuple)) and raw:
                        return st.targets[0], raw, target.id, st, loop
        return target, self.value(it, owner), index, None, loop

    def of_caller(self, fn: ast.FunctionDef, funcs: list[ast.FunctionDef]) -> tuple | None:
        """The cases of a loop in another function that calls ``fn`` with what each case binds,
        bound to ``fn``'s parameters (``for idx in indices: cfg = CONFIGS[idx]; check(cfg)``)."""
        params = [a.arg for a in fn.args.args]
        for g in funcs:
            if g is fn:
                continue
            for loop in (n for n in ast.walk(g) if isinstance(n, ast.For)):
                c = next((n for n in ast.walk(loop) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                          and n.func.id == fn.name), None)
                if c is None:
                    continue
                target, raw, _, _, _ = self.of_loop(loop, g)
                names = ([target.id] if isinstance(target, ast.Name) else
                         [e.id for e in target.elts if isinstance(e, ast.Name)] if isinstance(target, ast.Tuple)
                         else [])
                passed = [a.id if isinstance(a, ast.Name) else "" for a in c.args]
                if not names or passed != names or len(params) < len(names):
                    continue
                bound: ast.expr = (ast.Name(params[0], ast.Store()) if isinstance(target, ast.Name) else
                                   ast.Tuple([ast.Name(p, ast.Store()) for p in params[: len(names)]], ast.Store()))
                return bound, raw, None, None, loop
        return None


class _ByName(ast.NodeTransformer):
    """``cfg["M"]`` read as the name ``M`` (the case's field)."""

    def __init__(self, var: str, skip: ast.AST | None):
        self.var, self.skip, self.keys = var, skip, []  # type: ignore[var-annotated]

    def visit(self, node: ast.AST) -> Any:
        return node if node is self.skip else super().visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        self.generic_visit(node)
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == self.var
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and node.slice.value.isidentifier()
            and isinstance(node.ctx, ast.Load)
        ):
            if node.slice.value not in self.keys:
                self.keys.append(node.slice.value)
            return ast.copy_location(ast.Name(node.slice.value, ast.Load()), node)
        return node


def _by_name(fn: ast.FunctionDef, var: str, skip: ast.AST | None) -> list[str]:
    """Rewrites ``var["key"]`` in ``fn`` (in place) as ``key``; the keys so read."""
    t = _ByName(var, skip)
    for st in fn.body:
        t.visit(st)
    return list(t.keys)


def _used_whole(fn: ast.FunctionDef, var: str, skip: ast.AST | None) -> bool:
    """Whether ``fn`` reads ``var`` other than by ``var["key"]`` (passes it on, ``**var``)."""
    skipped = {id(n) for n in ast.walk(skip)} if skip is not None else set()
    return any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load) and id(n) not in skipped
               for n in ast.walk(fn))


# a launch setting, not a size (``BT``, ``BK``: a chunk or block size, as FLA's kernels name them)
KNOB = re.compile(r"(?i)block|warps|stages|num_ctas|group_?(size_)?m$|^seed$|^B[A-Z]$")


def _parametrized(fn: ast.FunctionDef, path: Path, tree: ast.Module) -> tuple[list[dict] | None, str]:
    """The cases of a test's ``@pytest.mark.parametrize`` decorators, or (None, why not): each
    decorator's names and values (a literal, else the expression evaluated in the test module's
    namespace: a comprehension, a helper's list, torch dtypes); stacked decorators multiply."""
    marks = [d for d in fn.decorator_list if isinstance(d, ast.Call) and len(d.args) >= 2
             and ast.unparse(d.func).endswith("mark.parametrize")]
    if not marks:
        return None, ""
    ns: dict[str, Any] | None = None
    cases: list[dict] = [{}]
    for d in marks:
        try:
            names = ast.literal_eval(d.args[0])
        except (ValueError, SyntaxError):
            return None, f"the names of the parametrisation at line {d.lineno} are not written out"
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        try:
            values = list(ast.literal_eval(d.args[1]))
        except (ValueError, SyntaxError, TypeError):
            try:
                ns = ns if ns is not None else module_namespace(path, tree)
                with contextlib.redirect_stdout(None):
                    values = list(eval(compile(ast.Expression(d.args[1]), str(path), "eval"), ns))  # noqa: S307
            except Exception as exc:  # noqa: BLE001 - the test module does not run here
                return None, f"the parametrisation at line {d.lineno} could not be evaluated ({type(exc).__name__})"
        rows = []
        for v in values:
            v = getattr(v, "values", v) if type(v).__name__ == "ParameterSet" else v
            row = [v] if len(names) == 1 else list(v)
            if len(row) != len(names):
                return None, f"a case of the parametrisation at line {d.lineno} has {len(row)} values for {names}"
            rows.append(dict(zip(names, row)))
        cases = [{**c, **r} for c in cases for r in rows]
    return cases, ""


def _lifted_sizes(
    stmts: list[ast.stmt], call: ast.Call, notes: list[str], where: str
) -> tuple[list[str], list[dict], list[ast.stmt]]:
    """A test with no case to vary: the sizes it writes as numbers before the kernel call (``m, n, k =
    32, 64, 128``) become fields, with the test's values as the one case; their assignments leave the
    test's statements (the fields are bound instead). A module constant is not one: the kernel's file
    may read it too."""
    case: dict[str, int] = {}
    kept: list[ast.stmt] = []
    before = True
    for s in stmts:
        before = before and not any(c is call for c in ast.walk(s))
        if before and isinstance(s, ast.Assign) and len(s.targets) == 1:
            tg, val = s.targets[0], s.value
            names = [tg] if isinstance(tg, ast.Name) else list(tg.elts) if isinstance(tg, ast.Tuple) else []
            vals = [val] if isinstance(tg, ast.Name) else list(val.elts) if isinstance(val, ast.Tuple) else []
            # a block size among them (``B, T, H, BT = 2, 64, 4, 32``) stays as written
            sizes = [(n.id, v.value) for n, v in zip(names, vals)  # type: ignore[attr-defined]
                     if isinstance(n, ast.Name) and not KNOB.search(n.id)
                     and isinstance(v, ast.Constant) and type(v.value) is int]
            if names and len(names) == len(vals) and all(isinstance(n, ast.Name) for n in names) and \
                    all(isinstance(v, ast.Constant) for v in vals) and any(v >= MIN_VARIED for _, v in sizes):
                case.update(dict(sizes))
                rest = [(n, v) for n, v in zip(names, vals) if n.id not in dict(sizes)]  # type: ignore[attr-defined]
                if rest:
                    kept.append(ast.fix_missing_locations(ast.copy_location(ast.Assign(
                        [ast.Tuple([n for n, _ in rest], ast.Store()) if len(rest) > 1 else rest[0][0]],
                        ast.Tuple([v for _, v in rest], ast.Load()) if len(rest) > 1 else rest[0][1]), s)))
                continue
        kept.append(s)
    if not case:
        return [], [], stmts
    notes.append(f"{where} sets its sizes as numbers ({', '.join(f'{k} = {v}' for k, v in case.items())}): "
                 "each is a parameter, the test's values its one case; rename them if the names say little")
    return list(case), [case], kept


def _copied_arguments(stmts: list[ast.stmt], call: ast.Call) -> list[ast.stmt]:
    """``kernel(x.clone(), conv_state.clone(), w)``: an argument that copies a name (``n.clone()``,
    ``n.detach().clone()``, ``torch.clone(n)``) becomes a name of its own bound just before the call
    (``conv_state_copy = conv_state.clone()``), as a test that writes ``logits_gpu = logits.clone()`` has it: the
    copy is the input the kernel is handed (and may change in place), the reference reads the tensor it copies
    (``_copy_source``). ``call`` is changed in place."""
    taken = {n.id for st in stmts for n in ast.walk(st) if isinstance(n, ast.Name)}
    hoisted: list[ast.stmt] = []

    def named(arg: ast.expr) -> ast.expr:
        src = _cloned(arg)
        if src is None:
            return arg
        name, k = f"{src.id}_copy", 1
        while name in taken:
            k += 1
            name = f"{src.id}_copy{k}"
        taken.add(name)
        hoisted.append(ast.fix_missing_locations(ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], arg),
                                                                   arg)))
        return ast.copy_location(ast.Name(name, ast.Load()), arg)

    call.args = [named(a) for a in call.args]
    for kw in call.keywords:
        if kw.arg is not None:
            kw.value = named(kw.value)
    if not hoisted:
        return stmts
    at = next(i for i, st in enumerate(stmts) if any(c is call for c in ast.walk(st)))
    return stmts[:at] + hoisted + stmts[at:]


def _inlined_inputs(stmts: list[ast.stmt], call: ast.Call, tree: ast.Module, notes: list[str],
                    where: str) -> list[ast.stmt]:
    """``args, kwargs = gen_inputs(seed, device)`` before ``kernel(*args, **kwargs)``, where the module's
    ``gen_inputs`` ends in ``return (x, w), {"eps": eps}``: its statements take the call's place, bound to
    its arguments, and the kernel call names what it is handed (``kernel(x, w, eps=eps)``), so that the
    tensors, their shapes and the sizes the helper writes are read as if the test wrote them. ``call`` is
    changed in place; ``args`` and ``kwargs`` are still bound for the statements that read them."""
    star = next((a.value.id for a in call.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)),
                None)
    dstar = next((k.value.id for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)), None)
    if star is None:
        return stmts
    helpers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for i, st in enumerate(stmts):
        if any(c is call for c in ast.walk(st)):
            break
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Call)
                and isinstance(st.value.func, ast.Name) and st.value.func.id in helpers):
            continue
        tg = st.targets[0]
        got = [e.id if isinstance(e, ast.Name) else "" for e in tg.elts] if isinstance(tg, ast.Tuple) else \
            [tg.id] if isinstance(tg, ast.Name) else []
        if star not in got or (dstar and dstar not in got) or len(got) != (2 if dstar else 1):
            continue
        fn = helpers[st.value.func.id]
        ret = fn.body[-1] if fn.body else None
        if not isinstance(ret, ast.Return) or ret.value is None or any(isinstance(n, ast.Return)
                                                                      for b in fn.body[:-1] for n in ast.walk(b)):
            return stmts
        parts = list(ret.value.elts) if isinstance(ret.value, ast.Tuple) and dstar else [ret.value]
        if len(parts) != len(got) or not isinstance(parts[0], (ast.Tuple, ast.List)) or any(
                isinstance(e, ast.Starred) for e in parts[0].elts):
            return stmts
        kw = parts[1] if dstar else ast.Dict([], [])
        if isinstance(kw, ast.Name):       # ``kwargs = {"z": z, ...}`` in the helper, then ``return (x, w), kwargs``
            made_kw = [b for b in fn.body[:-1] if isinstance(b, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == kw.id for t in b.targets)]
            kw = made_kw[0].value if len(made_kw) == 1 and len(made_kw[0].targets) == 1 else kw
        if not isinstance(kw, ast.Dict) or not all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                   for k in kw.keys):
            return stmts
        # the helper's parameters bound to what the call hands it (its defaults where it hands nothing)
        params = [a.arg for a in fn.args.args]
        given = {params[j]: a for j, a in enumerate(st.value.args[: len(params)])}
        given.update({k.arg: k.value for k in st.value.keywords if k.arg in params})
        defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults))
        bind = [ast.Assign([ast.Name(n, ast.Store())], given.get(n, defaults.get(n)))  # type: ignore[arg-type]
                for n in params if not (isinstance(given.get(n), ast.Name) and given[n].id == n)]  # type: ignore[union-attr]
        if any(b.value is None for b in bind):
            return stmts
        body = [copy.deepcopy(b) for b in fn.body[:-1]]
        keep = [ast.Assign([ast.Name(star, ast.Store())], ast.Tuple(copy.deepcopy(parts[0].elts), ast.Load()))]
        if dstar:
            keep.append(ast.Assign([ast.Name(dstar, ast.Store())], copy.deepcopy(kw)))
        new_args = [a for a in call.args if not (isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)
                                                 and a.value.id == star)]
        at = next(j for j, a in enumerate(call.args) if isinstance(a, ast.Starred))
        call.args[:] = new_args[:at] + [copy.deepcopy(e) for e in parts[0].elts] + new_args[at:]
        call.keywords[:] = [k for k in call.keywords if not (k.arg is None and isinstance(k.value, ast.Name)
                                                             and k.value.id == dstar)] + \
            [ast.keyword(k.value, copy.deepcopy(v)) for k, v in zip(kw.keys, kw.values)]  # type: ignore[union-attr]
        made = [ast.fix_missing_locations(ast.copy_location(n, st)) for n in bind + body + keep]
        notes.append(f"{where} makes the kernel's inputs in {fn.name}(): its statements were read in place of the "
                     "call")
        return stmts[:i] + made + stmts[i + 1:]
    return stmts


def _names_bound(target: ast.expr) -> list[str] | None:
    """The names an assignment's target binds, where it is a name or a tuple of names."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]  # type: ignore[attr-defined]
    return None


def _names_a_device(node: ast.AST) -> bool:
    """``"cpu"``, ``"cuda:0"``, ``device``, ``x.device``, ``torch.device(...)``: an argument that says where."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] in ("cpu", "cuda", "hip")
    if isinstance(node, ast.Name):
        return "device" in node.id or node.id == "dev"
    if isinstance(node, ast.Attribute):
        return node.attr == "device"
    return isinstance(node, ast.Call) and dotted_name(node.func) == "torch.device"


def _made_again(stmts: list[ast.stmt], call: ast.Call, tree: ast.Module, notes: list[str],
                where: str) -> list[ast.stmt]:
    """``inputs = make_inputs(n, device)`` makes what the kernel is handed, and ``cpu_inputs = make_inputs(n, "cpu")``
    the same again on the CPU for the reference (vllm's runners): the second is the first's values, so it is read as
    ``cpu_inputs = inputs`` (the reference is handed the task's inputs; before, it made its own and read none of
    them). Only where the helper seeds itself and the two calls differ in arguments that say a device alone."""
    # a helper that seeds itself: two calls make the same values (one that does not, or that makes the buffers the
    # kernel writes, is two sets of tensors)
    helpers = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)
               and any(isinstance(c, ast.Call) and dotted_name(c.func) in SEEDERS for c in ast.walk(f))}
    handed = {n.id for a in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(a)
              if isinstance(n, ast.Name)}

    def made(s: ast.stmt) -> tuple[list[str], ast.Call] | None:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.value, ast.Call) and \
                isinstance(s.value.func, ast.Name) and s.value.func.id in helpers:
            names = _names_bound(s.targets[0])
            if names is not None:
                return names, s.value
        return None

    at = next(i for i, s in enumerate(stmts) if any(c is call for c in ast.walk(s)))
    first = next(((i, m) for i, s in enumerate(stmts[:at]) if (m := made(s)) is not None and set(m[0]) & handed),
                 None)
    if first is None:
        return stmts
    i0, (names0, call0) = first

    def same_but_device(other: ast.Call) -> bool:
        if dotted_name(other.func) != dotted_name(call0.func) or len(other.args) != len(call0.args) or \
                sorted(k.arg or "" for k in other.keywords) != sorted(k.arg or "" for k in call0.keywords):
            return False
        kw0 = {k.arg: k.value for k in call0.keywords}
        pairs = list(zip(call0.args, other.args)) + [(kw0[k.arg], k.value) for k in other.keywords]
        apart = [(a, b) for a, b in pairs if ast.dump(a) != ast.dump(b)]
        return bool(apart) and all(_names_a_device(a) and _names_a_device(b) for a, b in apart)

    out = list(stmts)
    for i, s in enumerate(stmts):
        m = made(s) if i != i0 else None
        if m is None or not same_but_device(m[1]) or (len(m[0]) != len(names0) and len(m[0]) > 1):
            continue
        value = ast.Name(names0[0], ast.Load()) if len(names0) == 1 else \
            ast.Tuple([ast.Name(n, ast.Load()) for n in names0], ast.Load())
        out[i] = ast.fix_missing_locations(ast.copy_location(ast.Assign([copy.deepcopy(s.targets[0])], value), s))
        notes.append(f"{where} makes the kernel's inputs again on another device ({ast.unparse(s)}): the same "
                     f"values, read as {ast.unparse(out[i])}")
    return out


def _unpacked(fn: ast.FunctionDef, cases: list[dict]) -> tuple[list[dict], list[ast.stmt]]:
    """A parameter that is a list of sizes the test unpacks (``m, n, k = shape``): its names take its
    place in the cases, and the unpacking statements are returned (they leave the test's statements)."""
    stmts: list[ast.stmt] = []
    for s in fn.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple) and \
                isinstance(s.value, ast.Name) and all(isinstance(e, ast.Name) for e in s.targets[0].elts):
            p, names = s.value.id, [e.id for e in s.targets[0].elts]  # type: ignore[attr-defined]
            if all(isinstance(c.get(p), (list, tuple)) and len(c[p]) == len(names) for c in cases):
                cases = [{**{k: v for k, v in c.items() if k != p}, **dict(zip(names, c[p]))} for c in cases]
                stmts.append(s)
    return cases, stmts


def _case_fields(cases: list[dict], names: list[str], values: dict[str, Any], notes: list[str], where: str,
                 knobs: bool) -> tuple[list[str], list[dict]]:
    """The integer fields of the cases (varied by the task), the others bound as constants in ``values``
    (a value that differs across cases: the first, with a note), and the cases with those constants."""
    fields: list[str] = []
    for n in names:
        vals = [c.get(n) for c in cases]
        if all(type(v) is int for v in vals) and not (knobs and KNOB.search(n)):
            fields.append(n)
        elif len({repr(v) for v in vals}) == 1:
            values[n] = vals[0]
        else:
            values[n] = vals[0]
            distinct = list({repr(v): v for v in vals}.values())
            notes.append(
                f"{n} takes the values {vals if not knobs else distinct} across the cases of "
                f"{where}, not {'sizes' if knobs else 'integers'}: the importer used the first ({vals[0]!r}); "
                "decide how the task covers the others"
            )
    # a parametrisation's cases are a product: keep those of the constants chosen (a loop's list is kept whole)
    kept = [c for c in cases if not knobs or all(repr(c.get(n)) == repr(values[n]) for n in names if n not in fields)]
    out: list[dict] = []
    for c in kept:
        case = {k: c[k] for k in fields}
        if case not in out:
            out.append(case)
    return fields, out


def _over_module_list(loop: ast.For, values: dict[str, Any]) -> bool:
    """Is ``loop`` over a list or tuple the module binds (``for i, (M, N) in enumerate(TEST_SHAPES)``)?"""
    listed = _list_name(loop.iter)
    return listed is not None and isinstance(values.get(listed), (list, tuple))


def _unwrapped(node: ast.AST) -> ast.AST:
    """``x.cpu().float()`` -> ``x``: the wrappers a comparison puts around a tensor."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRAPPERS:
        node = node.func.value
    return node


def _same_transform(a: ast.expr, b: ast.expr, kernel: set[str], after: list[ast.stmt],
                    at: ast.stmt, own: frozenset[str] | set[str] = frozenset()) -> tuple[str, ast.expr] | None:
    """Where a comparison's two sides are one expression of two tensors (the names the test binds after the call
    read through, wrappers dropped): the kernel's tensor (one of ``kernel``, once) and the reference's side. A
    name bound to a call of the test's own functions (``own``: its reference) is the reference's, not read."""
    bound: dict[str, ast.expr | None] = {}
    for st in after:
        if st is at:
            break
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            name = st.targets[0].id
            theirs = isinstance(st.value, ast.Call) and call_name(st.value) in own
            bound[name] = st.value if name not in bound and name not in kernel and not theirs else None

    class _Read(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            value = bound.get(node.id)
            return copy.deepcopy(value) if value is not None else node

    def read(node: ast.expr) -> ast.AST:
        for _ in range(4):
            node = _Read().visit(copy.deepcopy(node))
        return node

    def uses_kernel(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id in kernel for n in ast.walk(node))

    pairs: list[tuple[str, ast.expr]] = []

    def match(x: Any, y: Any) -> bool:
        if isinstance(x, ast.AST):
            x = _unwrapped(x)
        if isinstance(y, ast.AST):
            y = _unwrapped(y)
        if isinstance(x, ast.Name) and x.id in kernel and isinstance(y, ast.expr) and not uses_kernel(y):
            pairs.append((x.id, y))
            return True
        if isinstance(x, list):
            return isinstance(y, list) and len(x) == len(y) and all(match(p, q) for p, q in zip(x, y))
        if not isinstance(x, ast.AST):
            return x == y
        if type(x) is not type(y):
            return False
        return all(match(getattr(x, f, None), getattr(y, f, None)) for f in x._fields if f != "ctx")

    for kside, rside in ((a, b), (b, a)):
        pairs.clear()
        if match(read(kside), read(rside)) and len({k for k, _ in pairs}) == 1 and not uses_kernel(rside):
            k, ref = pairs[0]
            return k, ref
    return None


ZIP_UNROLL_MOST = 8   # the most outputs a loop over zip(kernel's results, reference's) is unrolled into
POSITIONS_MOST = 64   # the most values of a tuple read by position that are bound as names


def _tuple_length(tree: ast.Module, fn_name: str, most: int = ZIP_UNROLL_MOST) -> int | None:
    """How many values the module's function ``fn_name`` returns, where each of its returns is a tuple
    literal of one length (``return (A, Aqk)``), at most ``most``; else None."""
    fn = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == fn_name), None)
    lengths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) and
               not any(isinstance(e, ast.Starred) for e in r.value.elts) else -1
               for r in ast.walk(fn) if isinstance(r, ast.Return)} if fn is not None else set()
    return lengths.pop() if len(lengths) == 1 and 0 < min(lengths) <= most else None


def _positions_named(fn: ast.FunctionDef, tree: ast.Module, notes: list[str], where: str) -> None:
    """``inputs = make_inputs(...)`` read only by position (``inputs[2]``), where ``make_inputs`` is the test's own
    function and returns a tuple literal of n values: bound as n names instead, each ``inputs[i]`` read as the i-th
    (the name ``make_inputs`` returns there, where it is a plain name the function uses nowhere else; else
    ``inputs_i``), so that what the kernel is handed, what it changes and what the test compares are named as if
    the test had unpacked the tuple. ``fn`` is changed in place; a tuple read whole, sliced, or bound twice is
    left as written."""
    stores: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(fn)
                                                                     if isinstance(a, ast.arg)}
    parents = {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    for st in [s for s in ast.walk(fn) if isinstance(s, ast.Assign)]:
        if not (len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call)
                and isinstance(st.value.func, ast.Name)):
            continue
        var, count = st.targets[0].id, _tuple_length(tree, st.value.func.id, most=POSITIONS_MOST)
        reads = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load)]
        at = [parents.get(id(n)) for n in reads]
        if count is None or stores.get(var) != 1 or not reads or not all(
                isinstance(p, ast.Subscript) and p.value is n and isinstance(p.slice, ast.Constant)
                and type(p.slice.value) is int and 0 <= p.slice.value < count for n, p in zip(reads, at)):
            continue
        maker = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == st.value.func.id)
        returned = [r.value.elts for r in ast.walk(maker) if isinstance(r, ast.Return)][0]   # type: ignore[union-attr]
        names = []
        for i, e in enumerate(returned):
            own = e.id if isinstance(e, ast.Name) else None
            name = own if own and own not in used and own not in names else f"{var}_{i}"
            names.append(name)
        used |= set(names)
        st.targets = [ast.copy_location(ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store()),
                                        st.targets[0])]
        for p in at:
            holder = parents[id(p)]
            new = ast.copy_location(ast.Name(names[p.slice.value], ast.Load()), p)   # type: ignore[union-attr]
            for field, value in ast.iter_fields(holder):
                if value is p:
                    setattr(holder, field, new)
                elif isinstance(value, list):
                    setattr(holder, field, [new if v is p else v for v in value])
        ast.fix_missing_locations(st)
        notes.append(f"{where} reads the {count} values {st.value.func.id}() returns by position ({var}[i]): "
                     f"read as {', '.join(names)}")


# the calls a value a test's function returns may make and still be arithmetic on the function's arguments
SCALAR_CALLS = frozenset({"int", "float", "min", "max", "abs", "round", "math.sqrt", "math.ceil", "math.floor",
                          "math.log", "math.log2", "math.exp", "triton.cdiv", "triton.next_power_of_2"})
SCALAR_NODES = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Constant, ast.Name, ast.Call,
                ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)


def _arithmetic_of_parameters(maker: ast.FunctionDef, e: ast.expr) -> ast.expr | None:
    """``e``, an expression of the function ``maker``, as arithmetic on its parameters and constants alone (its
    locals bound once by a plain assignment inlined, ``1.0 / (head_dim ** 0.5)``), where it is that; else None
    (a tensor's shape, a call of anything but ``SCALAR_CALLS``, a parameter ``maker`` binds again)."""
    stores: dict[str, int] = {}
    for n in ast.walk(maker):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    params = {a.arg for a in maker.args.posonlyargs + maker.args.args + maker.args.kwonlyargs}
    once = {s.targets[0].id: s.value for s in maker.body if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and stores.get(s.targets[0].id) == 1}

    def inline(node: ast.expr, depth: int) -> ast.expr | None:
        if depth > 16:
            return None
        for sub in ast.walk(node):
            if not isinstance(sub, SCALAR_NODES) or isinstance(sub, ast.Constant) and not isinstance(
                    sub.value, (int, float, bool)):
                if not (isinstance(sub, ast.Attribute) and dotted_name(sub) in SCALAR_CALLS):
                    return None
            if isinstance(sub, ast.Call) and (dotted_name(sub.func) not in SCALAR_CALLS or sub.keywords):
                return None
        called = {id(x) for c in ast.walk(node) if isinstance(c, ast.Call) for x in ast.walk(c.func)}
        values: dict[str, str] = {}
        for name in {s.id for s in ast.walk(node) if isinstance(s, ast.Name) and id(s) not in called}:
            if name in params and not stores.get(name):
                continue
            got = inline(once[name], depth + 1) if name in once and name not in params else None
            if got is None:
                return None
            values[name] = ast.unparse(got)
        return Substitute(values).visit(copy.deepcopy(node))

    return inline(e, 0)


def _scalars_returned(fn: ast.FunctionDef, tree: ast.Module, notes: list[str], where: str) -> None:
    """``q, k, sm_scale = make_inputs(bs, hd, ...)``, where ``make_inputs`` is the test's own function, returns one
    tuple literal and computes ``sm_scale`` from its arguments alone (``1.0 / (head_dim ** 0.5)``): the value is
    bound by a statement of its own after the call, that arithmetic on the call's arguments (``sm_scale = 1.0 / hd
    ** 0.5``), and the tuple's place for it left unnamed. So the entry and the reference compute it from the
    task's scalars instead of calling the function that makes the inputs again. ``fn`` is changed in place; a
    value the function reads from a tensor, or whose arguments are not plain names and constants, is left."""
    makers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for parent in [n for n in ast.walk(fn) if isinstance(getattr(n, "body", None), list)]:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list):
                continue
            for st in [s for s in block if isinstance(s, ast.Assign)]:
                call = st.value
                if not (len(st.targets) == 1 and isinstance(st.targets[0], ast.Tuple) and isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Name) and call.func.id in makers
                        and _tuple_length(tree, call.func.id, most=POSITIONS_MOST) == len(st.targets[0].elts)):
                    continue
                maker = makers[call.func.id]
                a = maker.args
                if a.vararg or a.kwarg or any(isinstance(x, ast.Starred) for x in call.args) or any(
                        k.arg is None for k in call.keywords) or len(call.args) > len(a.posonlyargs + a.args):
                    continue
                targets = {t.id for t in ast.walk(st.targets[0]) if isinstance(t, ast.Name)}
                positional = a.posonlyargs + a.args
                given: dict[str, ast.expr] = dict(zip((p.arg for p in positional), call.args))
                given |= {k.arg: k.value for k in call.keywords if k.arg}
                given |= {p.arg: d for p, d in zip(positional[len(positional) - len(a.defaults):], a.defaults)
                          if p.arg not in given}
                given |= {p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None and p.arg not in given}
                returned = next(r.value.elts for r in ast.walk(maker) if isinstance(r, ast.Return))  # type: ignore
                added: list[ast.stmt] = []
                for i, (t, e) in enumerate(zip(st.targets[0].elts, returned)):
                    if not isinstance(t, ast.Name):
                        continue
                    value = _arithmetic_of_parameters(maker, e)
                    if value is None:
                        continue
                    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} & {
                        p.arg for p in positional + a.kwonlyargs}
                    if not all(p in given and isinstance(given[p], (ast.Name, ast.Constant)) and not (
                            isinstance(given[p], ast.Name) and given[p].id in targets) for p in read):
                        continue

                    value = Substitute({p: ast.unparse(given[p]) for p in read}).visit(value)
                    added.append(ast.fix_missing_locations(ast.copy_location(
                        ast.Assign([ast.Name(t.id, ast.Store())], value), st)))
                    st.targets[0].elts[i] = ast.copy_location(ast.Name("_", ast.Store()), t)
                if added:
                    at = block.index(st) + 1
                    block[at:at] = added
                    notes.append(f"{where} takes {', '.join(ast.unparse(s) for s in added)} from what "
                                 f"{call.func.id}() returns: computed from the arguments of its call, as "
                                 f"{call.func.id}() computes it")


def _unrolled_zips(fn: ast.FunctionDef, tree: ast.Module, notes: list[str], where: str) -> None:
    """``for idx, (r, ref) in enumerate(zip(results, refs)): ...`` where ``refs`` is bound to a call of the
    test's own function that returns a tuple of n values: the loop becomes its body n times, the i-th with
    ``r = results[i]`` and ``ref = refs[i]`` (and ``idx = i``), every name the body binds renamed for that
    copy, so that each compared output is read as if the test compared it alone. A guard that skips an
    element (``if ref is None: continue``) is dropped: the reference's own run shows what it returns. ``fn``
    is changed in place; a loop with any other ``break`` or ``continue`` is left as written."""
    lengths: dict[str, int] = {}
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name):
            n = _tuple_length(tree, st.value.func.id)
            if n is not None:
                lengths[st.targets[0].id] = n
    for parent in [n for n in ast.walk(fn) if isinstance(getattr(n, "body", None), list)]:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list):
                continue
            for loop in [s for s in block if isinstance(s, ast.For) and not s.orelse]:
                it, index = loop.iter, None
                target = loop.target
                if isinstance(it, ast.Call) and call_name(it) == "enumerate" and len(it.args) == 1 and \
                        isinstance(target, ast.Tuple) and len(target.elts) == 2 and \
                        isinstance(target.elts[0], ast.Name):
                    it, index, target = it.args[0], target.elts[0].id, target.elts[1]
                if not (isinstance(it, ast.Call) and call_name(it) == "zip" and not it.keywords and
                        all(isinstance(a, ast.Name) for a in it.args) and isinstance(target, ast.Tuple) and
                        len(target.elts) == len(it.args) and all(isinstance(e, ast.Name) for e in target.elts)):
                    continue
                sources = [a.id for a in it.args]   # type: ignore[attr-defined]
                count = next((lengths[s] for s in sources if s in lengths), None)
                body = [s for s in loop.body if not (isinstance(s, ast.If) and not s.orelse and
                                                     len(s.body) == 1 and isinstance(s.body[0], ast.Continue))]
                if count is None or any(isinstance(n, (ast.Break, ast.Continue)) for s in body for n in ast.walk(s)):
                    continue
                bound = {e.id for e in target.elts} | ({index} if index else set())  # type: ignore[attr-defined]
                bound |= {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)
                          and isinstance(n.ctx, ast.Store)}
                unrolled: list[ast.stmt] = []
                for i in range(count):
                    names = {b: f"{b}__{i}" for b in bound}

                    class _Rename(ast.NodeTransformer):
                        def visit_Name(self, node: ast.Name, names: dict = names) -> ast.AST:
                            return ast.Name(names.get(node.id, node.id), node.ctx)

                    head = [ast.Assign([ast.Name(names[e.id], ast.Store())],  # type: ignore[attr-defined]
                                       ast.Subscript(ast.Name(s, ast.Load()), ast.Constant(i), ast.Load()))
                            for e, s in zip(target.elts, sources)]
                    head += [ast.Assign([ast.Name(names[index], ast.Store())], ast.Constant(i))] if index else []
                    copies = [_Rename().visit(copy.deepcopy(s)) for s in body]
                    unrolled += [ast.fix_missing_locations(ast.copy_location(s, loop)) for s in head + copies]
                at = block.index(loop)
                block[at:at + 1] = unrolled
                notes.append(f"{where} compares the {count} values of {' and '.join(sources)} in a loop over "
                             "zip(): read as one comparison each")


def _equality(n: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """The two sides of an elementwise ``a == b`` (an assert's ``(a == b).all()``, ``torch.all(a == b)``)."""
    if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq) and \
            not isinstance(n.left, ast.Constant) and not isinstance(n.comparators[0], ast.Constant):
        return n.left, n.comparators[0]
    return None


def read_harness(
    path: Path, launchers: set[str], launching: frozenset[str] | set[str] = frozenset()
) -> tuple[Harness | None, str]:
    """The harness's correctness check, or (None, why not); ``launching``: the launchers that start a kernel."""
    try:
        text, tree = parse_source(path)
    except ImportStop as exc:
        return None, str(exc)
    values = _module_values(tree)
    # a module-level function defined again further down is the later one when the test runs: the earlier is dead
    live = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    shadowed = {id(s) for s in tree.body if isinstance(s, ast.FunctionDef) and live[s.name] is not s}
    funcs = [s for s in ast.walk(tree) if isinstance(s, ast.FunctionDef) and id(s) not in shadowed]
    # ``from kernel import topk as triton_topk``: the launcher under the test's name for it
    renamed = {a.asname: a.name for s in ast.walk(tree) if isinstance(s, ast.ImportFrom) for a in s.names
               if a.asname and a.name in launchers}
    launchers = set(launchers) | set(renamed)
    launching = set(launching) | {n for n, o in renamed.items() if o in launching}

    # the names the module binds to libraries: ``torch.softmax`` is not the kernel file's ``softmax``
    libraries = {n for i in import_lines(tree) if re.match(r"(import|from) (torch|numpy|math|triton|scipy)\b", i)
                 for n in bound_by_imports([i])}

    def calls_launcher(fn: ast.AST) -> ast.Call | None:
        """The call into the kernel's file whose result (or an argument) the function compares;
        else its first call into that file (a helper that makes the inputs may come first)."""
        calls = [
            n for n in ast.walk(fn)
            if isinstance(n, ast.Call)
            and (call_name(n) in launchers and not isinstance(n.func, ast.Name)
                 and _callee(n).split(".")[0] not in libraries
                 or isinstance(n.func, ast.Name) and n.func.id in launchers)
        ]
        compared = {
            m.id for c in ast.walk(fn) if isinstance(c, ast.Call) and call_name(c) in COMPARE_FUNCS
            for a in c.args[:2] for m in ast.walk(a) if isinstance(m, ast.Name)
        }
        # and what those names are made of (``got_v = logits[mask]``; ``allclose(got_v, ...)``)
        for st in [n for n in ast.walk(fn) if isinstance(n, ast.Assign)] * 2:
            if any(isinstance(t, ast.Name) and t.id in compared for t in st.targets):
                compared |= {m.id for m in ast.walk(st.value) if isinstance(m, ast.Name)}
        # the reference's side may call into the kernel's file too (reference_topk): the kernel's side first
        # and of the kernel's calls the last whose result is compared (after the one that makes the inputs)
        order = {id(c): i for i, c in enumerate(n for n in ast.walk(fn) if isinstance(n, ast.Call))}
        pos = {id(c): (c.lineno, c.col_offset) for c in calls}
        # a call in the loop over the test's cases (a list of the module's) before one outside it (an extra check)
        in_cases = {id(n) for loop in ast.walk(fn) if isinstance(loop, ast.For) and _over_module_list(loop, values)
                    for n in ast.walk(loop)}
        ranked = sorted(calls, key=lambda c: (call_name(c) not in launching,
                                              bool(re.search(r"ref|torch|naive|golden", call_name(c), re.I)),
                                              bool(in_cases) and id(c) not in in_cases,
                                              tuple(-x for x in pos[id(c)]), order[id(c)]))
        assigns = [s for s in ast.walk(fn) if isinstance(s, ast.Assign)]
        # the first of the kernel's calls whose result is compared comes first (a later call may bind the
        # same name, its output arguments compared: the test's backward pass after its forward one); then
        # of all the calls the last whose result or argument is
        first = sorted((c for c in calls if call_name(c) in launching), key=lambda c: pos[id(c)])
        for with_args, among in ((False, first), (True, ranked)):
            for c in among:
                st = next((s for s in assigns if s.value is c), None)
                named = {m.id for t in (st.targets if st else []) for m in ast.walk(t) if isinstance(m, ast.Name)}
                named |= {a.id for a in c.args if isinstance(a, ast.Name)} if with_args else set()
                named |= {a for s in assigns for a in _aliases(s, named)}
                if named & compared:
                    return c
        return ranked[0] if ranked and call_name(ranked[0]) in launching else calls[0] if calls else None

    def compares(fn: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and call_name(n) in COMPARE_FUNCS for n in ast.walk(fn)) or any(
            _equality(n) for a in ast.walk(fn) if isinstance(a, ast.Assert) for n in ast.walk(a))

    ranked = sorted(
        (f for f in funcs if calls_launcher(f) and compares(f)),
        key=lambda f: (not re.search("correct|test|check|verif", f.name), f.lineno),
    )
    if not ranked:
        return (
            None,
            f"{path.name}: no function both calls {' or '.join(sorted(launchers)) or 'the kernel'} and "
            "compares its result (allclose / assert_close)",
        )
    fn = copy.deepcopy(ranked[0])  # the case's fields read by name are rewritten in this copy
    notes: list[str] = []
    _positions_named(fn, tree, notes, path.name)
    _scalars_returned(fn, tree, notes, path.name)
    _unrolled_zips(fn, tree, notes, path.name)
    call = calls_launcher(fn)
    assert call is not None
    loop = next((n for n in ast.walk(fn) if isinstance(n, ast.For) and any(c is call for c in ast.walk(n))), None)
    fields: list[str] = []
    cases: list[dict] = []
    rebinds: dict[str, str] = {}
    loop_target: ast.expr | None = None
    item_of: Callable[[dict], Any] | None = None
    index_name: str | None = None
    bind: list[ast.stmt] = []
    cases_of = _CaseLists(path, tree, values)
    dropped: ast.stmt | None = None
    found: tuple | None = None
    seed_loop = False
    bound: dict[str, Any] = {}
    unpacked = []
    if loop is not None:
        found = cases_of.of_loop(loop, fn)
    else:
        found = cases_of.of_caller(fn, funcs)
    if found is not None:
        target, raw, index_name, dropped, where = found
        loop_target = target
        if not isinstance(raw, (list, tuple)) or not raw:
            return (
                None,
                f"{path.name}: the loop around the kernel call (line {where.lineno}) is over "
                f"{dotted_name(getattr(where, 'iter', where))}, not a list of shapes the importer can read",
            )
        names: list[str] | None = None
        first_item = raw[0]

        def item_of(params: dict, first_item: Any = first_item) -> Any:
            """The first case of the list with the fields of ``params`` set (as the loop target reads them)."""
            if isinstance(first_item, dict):
                keys = {n: rebinds.get(n, n) for n in params}
                return {**first_item, **{keys[n]: v for n, v in params.items()}}
            item = list(first_item)
            for n, v in params.items():
                pos = rebinds[n] if n in rebinds else (names or []).index(n)
                item[int(pos)] = v
            return type(first_item)(item) if isinstance(first_item, tuple) else item

        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            names = [e.id for e in target.elts]
            cases = [dict(zip(names, item)) for item in raw]
        elif isinstance(target, ast.Name):
            var = target.id
            if all(isinstance(item, dict) for item in raw):
                keys = _by_name(fn, var, dropped)
                rebinds.update({k: k for k in keys})
                bind += [ast.parse(f"{k} = {var}[{k!r}]").body[0] for k in keys]
                if _used_whole(fn, var, dropped):
                    rebinds.update({k: k for k in raw[0] if isinstance(k, str) and k.isidentifier()})
            for s in ast.walk(loop if loop is not None else fn):
                if (
                    isinstance(s, ast.Assign)
                    and isinstance(s.value, ast.Name)
                    and s.value.id == var
                    and isinstance(s.targets[0], ast.Tuple)
                ):
                    names = [e.id for e in s.targets[0].elts if isinstance(e, ast.Name)]
                elif (
                    isinstance(s, ast.Assign)
                    and isinstance(s.value, ast.Subscript)
                    and isinstance(s.value.value, ast.Name)
                    and s.value.value.id == var
                    and isinstance(s.targets[0], ast.Name)
                ):
                    key = (
                        number_of(s.value.slice)
                        if not isinstance(s.value.slice, ast.Constant) or not isinstance(s.value.slice.value, str)
                        else s.value.slice.value
                    )
                    rebinds[s.targets[0].id] = key
            if rebinds and all(isinstance(item, dict) for item in raw):
                cases = [{n: item.get(k) for n, k in rebinds.items()} for item in raw]
                names = list(rebinds)
            elif rebinds and all(isinstance(item, (list, tuple)) for item in raw):
                cases = [{n: item[int(k)] for n, k in rebinds.items()} for item in raw]
                names = list(rebinds)
            elif names is not None:
                cases = [dict(zip(names, item)) for item in raw]
            elif all(isinstance(item, dict) for item in raw):
                names = list(raw[0])
                cases = [dict(item) for item in raw]
                notes.append(f"the cases of {path.name} are used through {var}[...]: read the keys as parameters")
            elif all(type(item) is int for item in raw) and KNOB.search(var):
                # a loop over seeds (``for i, seed in enumerate(SEEDS)``): one seed is enough, the harness draws
                # its own; the sizes are where the test writes them (in a helper it calls, often)
                seed_loop = True
                names, cases = [], [{}]
                item_of = lambda params, first=raw[0]: first  # noqa: E731 - bound as the loop target is
                notes.append(f"{path.name} loops over the seeds {list(raw)} with its sizes fixed: the harness draws "
                             "inputs of its own for each config, the sizes the test writes are the parameters")
            elif all(type(item) is int for item in raw):
                # a list of one size each (``for n in [1024, 4096]``): the loop variable is the parameter
                names, cases = [var], [{var: item} for item in raw]
                item_of = lambda params, first=raw[0]: params.get(var, first)  # noqa: E731 - as above
            else:
                names = _fields_from_comment(text, where.lineno) if isinstance(where, ast.For) else None
                if (names is None or any(len(names) != len(item) for item in raw)) and isinstance(where, ast.For):
                    names = _fields_unpacked(tree, text, where.iter, len(raw[0]) if isinstance(raw[0], (list, tuple))
                                             else -1)
                if names is None or any(len(names) != len(item) for item in raw):
                    return (
                        None,
                        f"{path.name}: the loop variable {var} is used whole; the importer cannot name "
                        "the values of each case",
                    )
                cases = [dict(zip(names, item)) for item in raw]
        else:
            return None, f"{path.name}: the loop target at line {where.lineno} is not a tuple of names"
        # int values are parameters; a value that is the same in every case is a constant
        fields, cases = _case_fields(cases, names or [], values, notes, path.name, False)
    else:
        cases_p, why = _parametrized(fn, path, tree)
        if cases_p is None and why:
            return None, f"{path.name}: {why}"
        unpacked: list[ast.stmt] = []
        if cases_p:
            cases_p, unpacked = _unpacked(fn, cases_p)
            fields, cases = _case_fields(cases_p, list(cases_p[0]), values, notes, path.name, True)
        given = {**(cases_p[0] if cases_p else {})}
        args = fn.args.args
        for a, dflt in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults):
            try:
                bound[a.arg] = ast.literal_eval(dflt)
            except ValueError:
                continue
        for a in args:
            if a.arg == "device" and a.arg not in bound:
                bound[a.arg] = "cuda"   # the fixture of Triton's tests
            if a.arg in given and a.arg not in fields:
                bound[a.arg] = values[a.arg]
            if a.arg in bound and a.arg not in given:
                values.setdefault(a.arg, bound[a.arg])
    stmts = [st for st in _flatten(fn.body, loop, call) if st is not dropped]
    if loop_target is not None:
        # the function's other parameters, as its defaults say (``dtype=torch.bfloat16``, ``verbose=True``)
        in_target = {n.id for n in ast.walk(loop_target) if isinstance(n, ast.Name)}
        args = fn.args.args
        stmts = [ast.fix_missing_locations(ast.copy_location(ast.Assign([ast.Name(a.arg, ast.Store())], d), d))
                 for a, d in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults)
                 if a.arg not in in_target] + stmts
    if found is None:
        stmts = [s for s in stmts if s not in unpacked]
        # a parameter the parametrisation does not set, whose default is a torch dtype (``dtype=torch.float16``)
        args = fn.args.args
        stmts = [ast.fix_missing_locations(ast.copy_location(ast.Assign([ast.Name(a.arg, ast.Store())], d), d))
                 for a, d in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults)
                 if a.arg not in fields and a.arg not in bound and isinstance(d, ast.Attribute)
                 and dotted_name(d).startswith("torch.")] + stmts
    stmts = _inlined_inputs(_made_again(stmts, call, tree, notes, path.name), call, tree, notes, path.name)
    if found is not None and isinstance(found[4], ast.For) and names:
        # a helper that makes the inputs reads the case again from its list by the loop's counter (``M, N, has_bias
        # = TEST_CASES[case_idx]``, read in place above): the fields are the config's already
        listed = _list_name(found[4].iter)
        stmts = [st for st in stmts if not (
            isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Tuple)
            and [e.id if isinstance(e, ast.Name) else "" for e in st.targets[0].elts] == names
            and isinstance(st.value, ast.Subscript) and _list_name(st.value.value) == listed is not None)]
    stmts = _flags_resolved(stmts, {n: v for n, v in values.items() if n not in fields})
    stmts = _copied_arguments(stmts, call)
    if (found is None or seed_loop) and not fields:
        fields, cases, stmts = _lifted_sizes(stmts, call, notes, path.name)
    kinds: dict[str, str] = {}
    for n, v in values.items():
        if type(v) is int:
            kinds[n] = f"int:{v}"
    for f in fields:
        kinds[f] = f"int:{f}"
    for n, v in bound.items():
        if isinstance(v, str) and v.split(":")[0] in ("cuda", "cpu", "hip", "xpu"):
            kinds[n] = "device"
            values.pop(n, None)
    tensors: dict[str, HTensor] = {}
    call_stmt = next(s for s in stmts if any(c is call for c in ast.walk(s)))

    def int_text(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return str(node.value)
        if isinstance(node, ast.Name) and kinds.get(node.id, "").startswith("int:"):
            return kinds[node.id][4:]
        if isinstance(node, ast.BinOp):
            a, b = int_text(node.left), int_text(node.right)
            ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
            if a is not None and b is not None and type(node.op) in ops:
                def wrap(t: str) -> str:
                    return t if re.fullmatch(r"\w+", t) else f"({t})"

                return f"{wrap(a)} {ops[type(node.op)]} {wrap(b)}"
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in tensors
        ):
            t, i = tensors[node.value.value.id], number_of(node.slice)
            if t.shape is not None and i is not None:
                return str(t.shape[int(i)])
        if (
            isinstance(node, ast.Call)
            and call_name(node) == "size"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in tensors
            and node.args
        ):
            t, i = tensors[node.func.value.id], number_of(node.args[0])
            if t.shape is not None and i is not None:
                return str(t.shape[int(i)])
        return None

    def dtype_of(node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            return (
                {"float": "float32", "half": "float16", "long": "int64", "int": "int32"}.get(node.attr, node.attr)
                if node.attr in DTYPE_BYTES or node.attr in ("float", "half", "long", "int")
                else None
            )
        if isinstance(node, ast.Name) and kinds.get(node.id, "").startswith("dtype:"):
            return kinds[node.id][6:]
        return None

    def tensor_of(name: str, expr: ast.expr) -> HTensor | None:
        node, dtype = expr, None
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in (PASS_METHODS | set(DTYPE_METHODS))
        ):
            if node.func.attr in DTYPE_METHODS and dtype is None:
                dtype = DTYPE_METHODS[node.func.attr]
            elif node.func.attr == "to" and dtype is None:
                dtype = dtype_of(
                    node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dtype"), None)
                )
            node = node.func.value
        while True:
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Div)):
                node = node.left if number_of(node.right) is not None else node.right
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ELEMENTWISE_METHODS | PASS_METHODS | set(DTYPE_METHODS):
                node = node.func.value     # the shape of what it is called on (the init is then not read)
            else:
                break
        if not (isinstance(node, ast.Call) and call_name(node) in TENSOR_MAKERS):
            return None
        maker = call_name(node)
        kw = {k.arg: k.value for k in node.keywords}
        dtype = dtype or dtype_of(kw.get("dtype"))
        shape: list | None
        if maker.endswith("_like"):
            src = tensors.get(node.args[0].id) if node.args and isinstance(node.args[0], ast.Name) else None
            if src is None:
                return None
            shape, dtype = src.shape, dtype or src.dtype
        else:
            args = list(node.args)
            if maker == "randint":
                args = args[2:] if len(args) >= 3 else args[1:]
            elif maker == "full":
                args = args[:1]
            size = kw.get("size")
            if size is not None:
                args = [size]
            if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
                args = list(args[0].elts)
            dims = [int_text(a) for a in args]
            shape = None if any(d is None for d in dims) else [int(d) if re.fullmatch(r"-?\d+", d) else d for d in dims]
            dtype = dtype or ("int64" if maker in ("randint", "arange", "randperm") else "float32")
        init, note = init_from_expr(expr, set(fields))
        if maker == "randint" and "high" in init and isinstance(init["high"], str):
            init["high"] = int_text(ast.parse(init["high"], mode="eval").body) or init["high"]
        fill = {"zeros": 0.0, "zeros_like": 0.0, "ones": 1.0, "ones_like": 1.0}.get(maker)
        if maker in ("full", "full_like") and len(node.args) > 1:
            fill = number_of(node.args[1])
        return HTensor(name, dtype or "float32", shape, init, note, maker, fill)

    for s in stmts:
        if s is call_stmt:
            break
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            name, value = s.targets[0].id, s.value
            if dtype_of(value):
                kinds[name] = f"dtype:{dtype_of(value)}"
            elif (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and value.value.split(":")[0] in ("cuda", "cpu", "hip", "xpu")
            ):
                kinds[name] = "device"
            elif isinstance(value, ast.Call) and dotted_name(value.func) == "torch.device":
                kinds[name] = "device"
            elif int_text(value) is not None:
                kinds[name] = f"int:{int_text(value)}"
            else:
                t = tensor_of(name, value)
                if t is not None:
                    tensors[name] = t
    results: list[str] = []
    if isinstance(call_stmt, ast.Assign):
        target = call_stmt.targets[0]
        results = (
            [target.id]
            if isinstance(target, ast.Name)
            else [e.id for e in target.elts if isinstance(e, ast.Name)]
            if isinstance(target, ast.Tuple)
            else []
        )
    passed = {a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)}
    after = stmts[stmts.index(call_stmt) + 1 :]
    compared: list[tuple[str, ast.expr, ast.stmt]] = []

    views = _result_views(after, set(results))

    def kernel_side(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and node.id in views:  # res_cpu = res.cpu(); r = results[0]
            node = views[node.id]
        node = _unwrapped(node)
        if isinstance(node, ast.Name) and (node.id in results or node.id in passed):
            return node.id
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in results
            and len(results) == 1
            and number_of(node.slice) is not None
        ):
            return f"{node.value.id}[{int(number_of(node.slice))}]"
        if isinstance(node, ast.IfExp) and len(results) == 1:   # ``r[0] if isinstance(r, tuple) else r``
            return ast.unparse(node)
        return None

    tolerance: dict[str, float] = {}
    for s in after:
        for n in ast.walk(s):
            pair = (n.args[0], n.args[1]) if isinstance(n, ast.Call) and call_name(n) in COMPARE_FUNCS and \
                len(n.args) >= 2 else _equality(n) if isinstance(s, ast.Assert) else None
            if pair is not None:
                a, b = pair
                ka, kb = kernel_side(a), kernel_side(b)
                if not ka and not kb:
                    # the same transform of both sides (``logits[mask]`` with ``ref[mask]``, ``isfinite(out)``
                    # with ``isfinite(ref)``): the kernel's tensor and the reference's are compared whole
                    same = _same_transform(a, b, set(results) | passed, after, s, {f.name for f in funcs})
                    if same is not None:
                        ka, b = same
                if ka and not kb:
                    compared.append((ka, b, s))
                elif kb and not ka:
                    compared.append((kb, a, s))
                if (ka or kb) and isinstance(n, ast.Call):   # the test's own tolerance: its loosest comparison
                    for k in n.keywords:
                        v = number_of(k.value) if k.arg in ("atol", "rtol") else None
                        if v is not None and v >= 0:
                            tolerance[k.arg] = max(float(v), tolerance.get(k.arg, 0.0))  # type: ignore[index]
    seen_keys: set[str] = set()
    compared = [c for c in compared if not (c[0] in seen_keys or seen_keys.add(c[0]))]
    if not compared:
        return None, f"{path.name}: the comparison after the kernel call does not name its result"
    return Harness(
        path,
        text,
        tree,
        fields,
        cases,
        tensors,
        call,
        call_stmt,
        renamed.get(call_name(call), call_name(call)),
        results,
        compared,
        stmts,
        values,
        kinds,
        notes,
        fn.name,
        loop_target,
        item_of if found is not None else None,
        index_name,
        bind,
        launchers,
        bound=bound,
        tolerance=tolerance,
    ), ""


def _bound_names(s: ast.stmt) -> set[str]:
    """The names a statement binds: an assignment's targets, a function's or class's name."""
    if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
        return {s.name}
    targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, (ast.AnnAssign, ast.AugAssign)) \
        else []
    return {t.id for tg in targets for t in ast.walk(tg) if isinstance(t, ast.Name)}


def _kernel_part(text: str, tree: ast.Module, path: Path, needed: set[str]) -> str:
    """A kernel file that holds its own pytest tests, without them: the top-level functions, classes and
    names that ``needed`` (the kernels, the entry's names) reach, as written and in file order, after the
    imports they use (not the folder's helper modules). The tests, pytest's hooks and fixtures and the
    test's own helpers go: a candidate may not load what they import (NumPy's generators, pytest)."""
    defs = module_defs(tree, needed, set())
    used = free_names(defs) | needed
    imports = [st for st in tree.body if isinstance(st, (ast.Import, ast.ImportFrom))
               and not _imports_beside(ast.unparse(st), path)
               and {(a.asname or a.name).split(".")[0] for a in st.names} & used]
    return join_statements(text, imports) + "\n\n\n" + join_statements(text, defs) + "\n"


def _module_names(h: Harness) -> set[str]:
    """The test module's functions, classes and names bound once at its top level (``module_defs`` copies them)."""
    return {n for s in h.tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef)) or (
        isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name))
        for n in _bound_names(s)}


def _callee(call: ast.Call) -> str:
    """The function a call names, a kernel launch's grid left off: ``k[grid](...)`` -> ``k``."""
    return ast.unparse(call.func.value if isinstance(call.func, ast.Subscript) else call.func)


def _launches(node: ast.AST, h: Harness) -> bool:
    """Whether ``node`` calls what the test calls to run the kernel, as the test names it or by the
    launcher's name in the kernel's file (``torch.softmax`` or ``torch.topk`` is not the file's)."""
    for c in ast.walk(node):
        if not isinstance(c, ast.Call):
            continue
        if _callee(c) in (_callee(h.call), h.launcher):
            return True
        if call_name(c) in (h.launcher, call_name(h.call)) and isinstance(c.func, ast.Name):
            return True
    return False


LIST_CHANGES = ("append", "extend", "insert")   # the methods that change a list in place
SEEDERS = ("torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "random.seed",
           "np.random.seed", "numpy.random.seed")


def _writers(h: Harness, n: str, last: int, skip: set[str] | frozenset[str] = frozenset()) -> list[ast.stmt]:
    """The statements of ``h`` before position ``last`` that make or write into ``n``: those that bind
    it (or an element of it: ``ref[b] = ...``) and read no name of ``skip``, and the loops that write
    into it (``for b in ...: ref[b, t] = ...``), which belong to the tensor."""
    out = [
        s for s in h.stmts[:last]
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))
        and n in {t.id for tg in (s.targets if isinstance(s, ast.Assign) else [s.target])
                  for t in ast.walk(tg) if isinstance(t, ast.Name)}
        and not (free_names([s]) & skip)
    ]
    out += [
        s for s in h.stmts[:last]
        if isinstance(s, (ast.For, ast.While)) and s not in out
        and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == n
                for sub in ast.walk(s) if isinstance(sub, (ast.Assign, ast.AugAssign))
                for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target]))
    ]
    # a call that changes it in place, alone or in a loop: x.masked_fill_(...), x[:, 0].uniform_(), rows.append(...),
    # or a function of the test or of the kernel's file that writes into the argument it is passed as
    out += [
        s for s in h.stmts[:last]
        if isinstance(s, (ast.Expr, ast.For, ast.While)) and s not in out
        and any(isinstance(c, ast.Call) and (_changes(c, n) or _writes_argument(h, c, n)) for c in ast.walk(s))
    ]
    return sorted(out, key=h.stmts.index)


def _writes_argument(h: Harness, call: ast.Call, n: str) -> bool:
    """Is ``call`` a Python function of the test or of the kernel's file (not a kernel, nor what launches one) that
    writes into the parameter ``n`` is passed as (``identity_pytorch(data, out_ref)``: ``output[...] = input``)?"""
    name = call_name(call)
    if not isinstance(call.func, ast.Name) or name in h.kernel_launching:
        return False
    trees = [h.tree] + ([h.kernel_source[1]] if h.kernel_source is not None else [])
    fn = next((st for t in trees for st in t.body if isinstance(st, ast.FunctionDef) and st.name == name), None)
    if fn is None:
        return False
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    passed = [params[i] for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == n and i < len(params)]
    passed += [k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == n and k.arg]
    for p in passed:
        for sub in ast.walk(fn):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] \
                if isinstance(sub, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, ast.Subscript) and _root_name(t) == p for t in targets):
                return True
            if isinstance(sub, ast.Call) and _changes(sub, p):
                return True
    return False


def _changes(call: ast.Call, n: str) -> bool:
    """Is ``call`` an in-place method of ``n`` (or of a part of it)?"""
    f = call.func
    return (isinstance(f, ast.Attribute) and _root_name(f.value) == n
            and (f.attr.endswith("_") and not f.attr.startswith("_") or f.attr in LIST_CHANGES))


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _written_into(h: Harness, n: str, last: int) -> bool:
    """Does the test change ``n`` after making it, before position ``last`` (``x[mask] = nan``, a loop
    writing into it, ``x.fill_(...)``, ``x = x * mask``, ``x *= 2``)? Its values are then not a plain init's."""
    return any(not isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign))
               or any(isinstance(t, ast.Subscript) for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
               or _derived_from_itself(s, n)
               for s in _writers(h, n, last))


def _derived_from_itself(s: ast.stmt, n: str) -> bool:
    """Is ``s`` a binding of ``n`` computed from ``n`` as it was (``A = A * mask``, ``A = A.tril(-1)``, ``A += 1``)?
    The statement that drew it is the only one its init is read from: a value computed from it after is not that
    init's. Moving or converting it (``A = A.contiguous()``, ``A = A.to(device)``, ``A = A.half()``) changes no
    value."""
    if isinstance(s, ast.AugAssign):
        return isinstance(s.target, ast.Name) and s.target.id == n
    if not isinstance(s, (ast.Assign, ast.AnnAssign)) or s.value is None:
        return False
    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
    if not any(isinstance(t, ast.Name) and t.id == n for t in targets):
        return False
    node = s.value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in PASS_METHODS | set(DTYPE_METHODS):
        node = node.func.value
    if isinstance(node, ast.Name):
        return False
    return any(isinstance(x, ast.Name) and x.id == n for x in ast.walk(node))


def _module_loaders(tree: ast.Module) -> set[str]:
    """The test's functions that load a file as a module by its path (``spec_from_file_location``): its way
    to the kernel's file (``mod = load_module()``; ``mod.launcher(...)``)."""
    return {f.name for f in tree.body if isinstance(f, ast.FunctionDef)
            and any(isinstance(n, ast.Call) and call_name(n) in ("spec_from_file_location", "import_module")
                    for n in ast.walk(f))}


class _KernelModuleAttributes(ast.NodeTransformer):
    """``mod.helper`` -> ``helper`` for the names ``mod`` bound to the kernel's module; the names seen."""

    def __init__(self, modules: set[str]):
        self.modules = modules
        self.attributes: set[str] = set()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in self.modules:
            self.attributes.add(node.attr)
            return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
        return self.generic_visit(node)


def _copy_source(h: Harness, m: str) -> str | None:
    """The tensor the test made ``m`` as a copy of before the kernel call (``m = n.clone()``, ``n.detach().clone()``,
    ``torch.clone(n)``: the kernel is handed the copy, which it changes in place), or None."""
    call_at = h.stmts.index(h.call_stmt) if h.call_stmt in h.stmts else len(h.stmts)
    for st in h.stmts[:call_at]:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id == m and isinstance(st.value, ast.Call)):
            continue
        src = _cloned(st.value)
        return src.id if src is not None and src.id in h.tensors else None
    return None


def _drawn_state(t: HTensor | None) -> bool:
    """Whether a tensor the test makes filled, and the kernel updates, is drawn at random instead: a float one made
    by a maker whose arguments a random draw takes as they are."""
    return t is not None and t.maker in FILLED_DRAWN and t.dtype not in (*INTEGER_DTYPES, "bool")


def _read_by_reference(h: Harness, n: str) -> bool:
    """Whether the reference's side of the test's comparisons reads ``n`` as the test made it: the statements after
    the kernel call that compute what the comparisons read (the reference's call) are handed ``n``, or a name bound
    to it before the call (``cpu_inputs_2`` of ``cpu_inputs_0, ... = (draft_tokens, ..., input_ids, ...)``). Then
    ``n``, handed to the kernel and compared after, is state the kernel updates (vllm's eagle inputs), not an output
    it writes whole."""
    at = h.stmts.index(h.call_stmt)
    names = {n}
    for st in h.stmts[:at]:
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            tg, v = st.targets[0], st.value
            if isinstance(v, ast.Name) and v.id in names and isinstance(tg, ast.Name):
                names.add(tg.id)
            elif isinstance(v, ast.Tuple) and isinstance(tg, ast.Tuple) and len(v.elts) == len(tg.elts):
                names |= {t.id for t, e in zip(tg.elts, v.elts)
                          if isinstance(t, ast.Name) and isinstance(e, ast.Name) and e.id in names}
    compared = {id(s) for _, _, s in h.compared}
    need = free_names([e for _, e, _ in h.compared])
    for st in reversed(h.stmts[at + 1:]):
        if id(st) in compared or not (_bound_names(st) & need):
            continue
        need |= free_names([st.value] if isinstance(st, (ast.Assign, ast.AugAssign)) else [st])
    return bool(names & need)


def _copied_before_call(h: Harness, n: str) -> bool:
    """Whether the test copies ``n`` before the kernel call into a tensor it does not hand the kernel
    (``key_cache_ref = key_cache.clone()``, which its reference then updates): what ``n`` holds before
    the call is then part of what the comparison checks, so ``n`` is state the kernel updates (a cache
    it scatters into), not an output it writes whole."""
    passed = {a.id for a in [*h.call.args, *(k.value for k in h.call.keywords)] if isinstance(a, ast.Name)}
    bound = {t.id for st in h.stmts if isinstance(st, ast.Assign) for t in st.targets if isinstance(t, ast.Name)}
    return any(_copy_source(h, m) == n for m in bound - passed)


def _cloned(expr: ast.expr) -> ast.Name | None:
    """The name ``expr`` copies (``n.clone()``, ``n.detach().clone()``, ``torch.clone(n)``), or None."""
    if not isinstance(expr, ast.Call):
        return None
    f, src = expr.func, None
    if isinstance(f, ast.Attribute) and f.attr == "clone" and not expr.args:
        src = f.value
        if isinstance(src, ast.Call) and isinstance(src.func, ast.Attribute) and src.func.attr == "detach":
            src = src.func.value
    elif dotted_name(f) == "torch.clone" and len(expr.args) == 1:
        src = expr.args[0]
    return src if isinstance(src, ast.Name) else None


TENSOR_FROM_ARRAY = ("torch.tensor", "torch.from_numpy", "torch.as_tensor", "torch.asarray")


def _array_sources(h: Harness, inputs: list[str]) -> dict[str, str]:
    """The arrays the test makes its inputs of before the kernel call (``A_t = torch.tensor(A, device=device)``,
    ``torch.from_numpy(a).cuda()``): array name -> the input. A reference that reads the array reads the
    input's values instead (drawn by the harness, as the kernel is handed them)."""
    call_at = h.stmts.index(h.call_stmt) if h.call_stmt in h.stmts else len(h.stmts)
    out: dict[str, str] = {}
    for st in h.stmts[:call_at]:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id in inputs):
            continue
        v = _unwrapped(st.value)
        if isinstance(v, ast.Call) and dotted_name(v.func) in TENSOR_FROM_ARRAY and v.args and \
                isinstance(v.args[0], ast.Name):
            out.setdefault(v.args[0].id, st.targets[0].id)
    return out


def _reference_from_harness(
    h: Harness, inputs: list[str], first_float: dict[str, str], returns: list[str] | None = None
) -> tuple[str | None, str]:
    """reference() from the statements the comparison's other side needs, or (None, why not).
    ``returns``: the compared keys the reference returns, in the signature's order of outputs
    (all of them, in the comparison's order, when None); a compared key that is an input is an
    inout input, which the reference updates in place (``copy_``) instead of returning."""
    order = {id(s): i for i, s in enumerate(h.stmts)}
    exprs = [e for _, e, _ in h.compared]
    by_key = {k: e for k, e, _ in h.compared}
    returned = list(by_key) if returns is None else [k for k in returns if k in by_key]
    updated = [k for k in by_key if k in inputs and k not in returned]
    need = free_names(exprs)
    chosen: list[ast.stmt] = []
    stop = set(inputs) | set(h.fields)
    prelude: list[str] = []
    module_names = _module_names(h)
    # imports of the files beside the test (the kernel's file): the task's reference cannot import them
    local = [i for i in import_lines(h.tree)
             if _imports_beside(i, h.path) or bound_by_imports([i]) <= h.kernel_names | {h.launcher}]
    bound = bound_by_imports([i for i in import_lines(h.tree) if i not in local])
    from_kernel = _kernel_helpers_named(h, local)   # name in the test -> its function in the kernel's file
    last = max(order[id(s)] for _, _, s in h.compared)
    loaders = _module_loaders(h.tree)
    kernel_module: set[str] = set()
    done: set[str] = set()
    todo = list(need)
    arrays = _array_sources(h, inputs)
    while todo:
        n = todo.pop()
        if n in done or n in stop:
            continue
        done.add(n)
        kind = h.kinds.get(n, "")
        if n in arrays:   # the array the input was made of: the input's values, not the test's draw again
            prelude.append(f"{n} = {arrays[n]}.detach().cpu().numpy()")
            continue
        if kind.startswith("dtype:"):
            src = first_float.get(kind[6:])
            prelude.append(f"{n} = {src}.dtype" if src else f"{n} = torch.{kind[6:]}")
            continue
        if kind == "device":
            prelude.append(f"{n} = {inputs[0]}.device" if inputs else f"{n} = 'cpu'")
            continue
        if n in h.tensors and n not in inputs and h.tensors[n].maker not in CONSTANT_MAKERS:
            copy_of = next((m for m in inputs if _copy_source(h, m) == n), None)
            if copy_of is None:
                return None, f"the reference in {h.path.name} uses {n}, a tensor the kernel is not given"
            # the kernel is given a copy (``logits_gpu = logits.clone()``), which it changes in place: the reference
            # is handed that input as it was made, the values of the tensor it reads
            prelude.append(f"{n} = {copy_of}")
            continue
        assigns = [s for s in _writers(h, n, last) if s is not h.call_stmt]
        if assigns and all(isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and
                           call_name(s.value) in loaders for s in assigns):
            kernel_module.add(n)   # ``mod = load_module()``: the kernel's file, loaded by its path
            continue
        anew = sorted(set().union(*(_bound_names(s) for s in assigns)) & set(inputs))
        if anew:   # ``q, k, sm_scale = make_inputs(...)``: copied, it would make the inputs again, a draw of its own
            return None, (f"the reference in {h.path.name} uses {n}, which the statement that makes "
                          f"{', '.join(anew)} binds: copied into the reference, it would make them anew instead of "
                          "reading the inputs it is handed")
        if assigns:
            for s in assigns:
                if s not in chosen:
                    chosen.append(s)
                    todo += list(free_names([s.value] if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                                            else [s]))
            continue
        if n in h.consts and literal(h.consts[n]) is not None:
            prelude.append(f"{n} = {literal(h.consts[n])}")
            continue
        if n in module_names or n in bound or hasattr(builtins, n) or n in ("torch", "F", "math"):
            continue
        if n in from_kernel:
            continue
        if n in bound_by_imports(local):
            return None, f"the reference in {h.path.name} uses {n}, imported from a file beside it: copy it in"
        return None, f"the reference in {h.path.name} uses {n}, which the importer cannot trace to the inputs"
    chosen.sort(key=lambda s: order[id(s)])
    if kernel_module:
        # ``mod.helper(...)`` of the kernel's module loaded by path: the helper, copied from the kernel's file
        flat = _KernelModuleAttributes(kernel_module)
        chosen = [flat.visit(copy.deepcopy(s)) for s in chosen]
        by_key = {k: flat.visit(copy.deepcopy(e)) for k, e in by_key.items()}
        exprs = list(by_key.values())
        defined = {st.name for st in h.kernel_source[1].body if isinstance(st, ast.FunctionDef)} \
            if h.kernel_source is not None else set()
        for a in sorted(flat.attributes):
            if a not in defined:
                return None, (f"the reference in {h.path.name} uses {a} of the kernel's module, which is not one of "
                              f"its functions")
            from_kernel[a] = a
    for s in chosen:
        if _launches(s, h):
            return None, f"the other side of the comparison in {h.path.name} calls the kernel's file too"
    if inputs:   # ``torch.ones(..., device="cuda")``: the device the reference is handed its inputs on
        chosen = [_OnInputsDevice(inputs[0]).visit(copy.deepcopy(s)) for s in chosen]
        by_key = {k: _OnInputsDevice(inputs[0]).visit(copy.deepcopy(e)) for k, e in by_key.items()}
        exprs = list(by_key.values())
    helpers = module_defs(h.tree, free_names(chosen + exprs), {h.function, *h.consts})
    for s in helpers:
        if _launches(s, h):
            return None, f"{getattr(s, 'name', 'a helper')} in {h.path.name} calls the kernel's file"
    used = free_names(chosen + exprs + helpers)
    kernel_lines: list[str] = []
    if h.kernel_source is not None and used & set(from_kernel):
        ktext, ktree = h.kernel_source
        kdefs = module_defs(ktree, {from_kernel[n] for n in used & set(from_kernel)}, set())
        for st in kdefs:
            for sub in ast.walk(st):
                if isinstance(sub, ast.Call) and (
                    isinstance(sub.func, ast.Subscript) or call_name(sub) in h.kernel_launching
                ):
                    return None, f"{getattr(st, 'name', 'a helper')} in {h.kernel_path_name} launches a kernel"
        kfree = free_names(kdefs)
        kernel_lines = [i for i in import_lines(ktree) if bound_by_imports([i]) & kfree]
        kernel_lines += [join_statements(ktext, kdefs)]
        kernel_lines += [f"{n} = {o}" for n, o in sorted(from_kernel.items()) if n in used and n != o]
        kernel_lines.append("")
    # a helper of the test named as what reference.py defines (vllm's runners call theirs ``reference``)
    clash = {getattr(st, "name", "") for st in helpers} & {"reference", "make_inputs"}

    def own(text: str) -> str:
        for n in clash:
            text = re.sub(rf"\b{n}\b(?=\s*\()", f"{n}_of_test", text)
        return text

    ret = own(", ".join(ast.unparse(by_key[k]) for k in returned))
    if arrays and inputs and returned:
        # computed with NumPy from the inputs' arrays: handed back as tensors where the inputs are
        ret = ", ".join(f"torch.as_tensor({own(ast.unparse(by_key[k]))}, device={inputs[0]}.device)"
                        for k in returned)
    in_function = [ast.unparse(s) for s in h.stmts if isinstance(s, (ast.Import, ast.ImportFrom))]
    imports = [
        i
        for i in dict.fromkeys([*import_lines(h.tree), *in_function])
        if i not in local
        and not (i == "import pytest" and "pytest" not in free_names(chosen + exprs + helpers))
        and not re.match(
            r"(import|from) (sys|os|json|argparse|importlib|time|"
            r"subprocess|pathlib)\b",
            i,
        )
    ]
    if "torch" not in bound_by_imports(imports):
        imports.insert(0, "import torch")
    lines = [*dict.fromkeys(imports + [i for i in kernel_lines if i.startswith(("import ", "from "))]), ""]
    if kernel_lines:
        lines += ["", f"# from {h.kernel_path_name}, which the test imports", *[
            i for i in kernel_lines if not i.startswith(("import ", "from "))]]
    if helpers:
        lines += ["", own(join_statements(h.text, helpers)), ""]
    lines += [
        "",
        "def reference(" + ", ".join([*inputs, *h.fields]) + "):",
        f'    """What {h.path.name} ({h.function}) compares the kernel\'s result with (written by `arena tasks '
        'import`; read it)."""',
    ]
    lines += [f"    {p}" for p in sorted(set(prelude))]
    lines += [f"    {ln}" for s in chosen for ln in own(ast.unparse(s)).splitlines()]
    # every expected value first, then the updates: an expression may read an inout input's old value
    lines += [f"    _{k} = {own(ast.unparse(by_key[k]))}" for k in updated]
    lines += [f"    {k}.copy_(_{k})" for k in updated]
    if returned:
        lines.append(f"    return {ret}")
    return without_unused_imports("\n".join(lines) + "\n"), ""


class _OnInputsDevice(ast.NodeTransformer):
    """A test's reference statements with the GPU named (``device="cuda"``, ``.cuda()``, ``.to("cuda")``): on the
    device of the input ``first`` instead, where the harness hands the reference its inputs (the GPU there, the
    CPU for the importer's checks and the CPU backend)."""

    def __init__(self, first: str) -> None:
        self.device = ast.Attribute(ast.Name(first, ast.Load()), "device", ast.Load())

    @staticmethod
    def _gpu(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            node.value.split(":")[0] in ("cuda", "hip")

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        for k in node.keywords:
            if k.arg == "device" and self._gpu(k.value):
                k.value = copy.deepcopy(self.device)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" and not node.args and not node.keywords:
            return ast.Call(ast.Attribute(node.func.value, "to", ast.Load()), [copy.deepcopy(self.device)], [])
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args and self._gpu(node.args[0]):
            node.args[0] = copy.deepcopy(self.device)
        return node


def _kernel_helpers_named(h: Harness, local: list[str]) -> dict[str, str]:
    """The names the test imports of the kernel's file that are functions there: name -> function."""
    if h.kernel_source is None:
        return {}
    defined = {s.name for s in h.kernel_source[1].body if isinstance(s, ast.FunctionDef)}
    out: dict[str, str] = {}
    for line in local:
        for node in ast.parse(line).body:
            if isinstance(node, ast.ImportFrom):
                out.update({a.asname or a.name: a.name for a in node.names if a.name in defined})
    return out


def _imports_beside(line: str, path: Path) -> bool:
    """Whether an import line imports a module that is a file beside ``path``."""
    for node in ast.parse(line).body:
        mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any((Path(path).parent / f"{m.split('.')[0]}.py").is_file() for m in mods if m):
            return True
    return False


def _reference_stub(inputs: list[str], scalars: list[str], why: str) -> str:
    return (
        "import torch\n\n\n"
        f"def reference({', '.join([*inputs, *scalars])}):\n"
        f'    """TODO(import): write the reference. {why}."""\n'
        '    raise NotImplementedError("reference.py of an imported task: not written yet")\n'
    )


# -- HIP sources --------------------------------------------------------------------------------


TORCH_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](torch|ATen|c10|pybind11|THC)/[^\n]*$", re.M)
TORCH_WORDS = re.compile(r"\b(torch::|at::|c10::|py::|TORCH_CHECK|AT_DISPATCH|PYBIND11_MODULE|TORCH_LIBRARY)")


def _cpp_blocks(text: str) -> list[tuple[int, int, int]]:
    """Top-level ``{ ... }`` blocks as (start of the declaration, '{', end after '}'),
    comments and strings skipped; the declaration starts after the previous block, ';' or
    preprocessor line."""
    out: list[tuple[int, int, int]] = []
    i, n, depth, decl, open_at = 0, len(text), 0, 0, 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "#" and depth == 0 and (i == 0 or text[text.rfind("\n", 0, i) + 1 : i].strip() == ""):
            j = i
            while True:
                j = text.find("\n", j)
                if j < 0 or text[j - 1] != "\\":
                    break
                j += 1
            i = n if j < 0 else j
            decl = i
            continue
        if c == "{":
            if depth == 0:
                open_at = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                end = i + 1
                if text[end : end + 1] == ";":
                    end += 1
                out.append((decl, open_at, end))
                decl = end
        elif c == ";" and depth == 0:
            decl = i + 1
        i += 1
    return out


def split_torch_extension(text: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    """(the source with its PyTorch host code cut out, the cut pieces, the Python names the
    extension exports as (python name, C++ function))."""
    exports = re.findall(r"\.def\(\s*\"(\w+)\"\s*,\s*&?\s*([\w:]+)", text)
    cut: list[tuple[int, int]] = []
    for decl, brace, end in _cpp_blocks(text):
        header = text[decl:brace]
        head = re.sub(r"//[^\n]*|/\*.*?\*/", "", header, flags=re.S)
        if re.search(r"\b(namespace|struct|class|union|enum)\b", head) and not TORCH_WORDS.search(head):
            continue
        if (
            TORCH_WORDS.search(head)
            or re.search(r"PYBIND11_MODULE|TORCH_LIBRARY", head)
            or ("__global__" not in head and "__device__" not in head and TORCH_WORDS.search(text[brace:end]))
        ):
            cut.append((decl, end))
    pieces = [text[a:b].strip("\n") for a, b in cut]
    kept, pos = [], 0
    for a, b in cut:
        kept.append(text[pos:a])
        pos = b
    kept.append(text[pos:])
    body = "".join(kept)
    body = TORCH_INCLUDE.sub(lambda m: f"// (import) left out: {m.group(0).strip()}", body)
    return re.sub(r"\n{3,}", "\n\n", body).rstrip() + "\n", pieces, exports


def _cpp_params(header: str, fn: str) -> list[tuple[str, str]] | None:
    m = re.search(rf"\b{re.escape(fn.split('::')[-1])}\s*\((.*)\)\s*$", header.strip(), re.S)
    if not m:
        return None
    params, depth, cur = [], 0, ""
    for ch in m.group(1):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur)
    out = []
    for p in params:
        p = re.sub(r"=.*$", "", p).strip()
        m2 = re.match(r"(.*?)([A-Za-z_]\w*)$", p, re.S)
        if m2:
            out.append((" ".join(m2.group(1).split()), m2.group(2)))
    return out


def _hip_entry(
    entry: str,
    inputs: list[dict],
    outputs: list[dict],
    scalars: list[dict],
    body: list[str],
    params: list[str] | None = None,
    indent: str = "    ",
) -> str:
    """The task's ``extern "C"`` entry: the signature's parameters (or ``params``), ``body``."""
    from arena.taskdef.skeleton import HIP_TYPES, SCALAR_TYPES

    if params is None:
        params = [f"const {HIP_TYPES[i['dtype']]}* {i['name']}" for i in inputs]
        params += [f"{HIP_TYPES[o['dtype']]}* {o['name']}" for o in outputs]
        params += [f"{SCALAR_TYPES[s['type']]} {s['name']}" for s in scalars] + ["hipStream_t stream"]
    joined = ",\n    ".join(params)
    return f'extern "C" int {entry}(\n    {joined}) {{\n' + "".join(f"{indent}{b}\n" for b in body) + "}\n"


CPP_DTYPES = {
    "float": "float32",
    "__half": "float16",
    "half": "float16",
    "__hip_bfloat16": "bfloat16",
    "hip_bfloat16": "bfloat16",
    "int8_t": "int8",
    "uint8_t": "uint8",
    "int16_t": "int16",
    "int32_t": "int32",
    "int": "int32",
    "int64_t": "int64",
    "long": "int64",
    "bool": "bool",
}
CPP_INTS = (
    "int",
    "int32_t",
    "int64_t",
    "long",
    "long long",
    "size_t",
    "unsigned",
    "unsigned int",
    "uint32_t",
    "uint64_t",
)


def host_launchers(text: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Host functions of a HIP source that take device pointers: (return type, name, params)."""
    out = []
    for decl, brace, _ in _cpp_blocks(text):
        head = re.sub(r"//[^\n]*|/\*.*?\*/", "", text[decl:brace], flags=re.S).strip()
        if re.search(r"__global__|__device__|\b(namespace|struct|class|union|enum|template)\b", head):
            continue
        m = re.search(r"([\w:<>\s\*&]*?)\b([A-Za-z_]\w*)\s*\((.*)\)\s*$", head, re.S)
        if not m:
            continue
        params = _cpp_params(head, m.group(2)) or []
        if any("*" in t for t, _ in params):
            ret = " ".join(m.group(1).replace('extern "C"', "").split())
            out.append((ret, m.group(2), params))
    return out


def _base_type(t: str) -> str:
    return " ".join(t.replace("const", " ").replace("*", " ").replace("&", " ").replace("__restrict__", " ").split())


def launcher_signature(params: list[tuple[str, str]]) -> tuple[list[dict], list[dict], list[dict]]:
    """A signature read off a launcher's parameters: const pointers are inputs, other pointers
    outputs, integers config parameters, floats scalars; shapes unknown (TODO)."""
    inputs, outputs, scalars = [], [], []
    for t, n in params:
        base = _base_type(t)
        if "*" in t:
            spec = {"name": n, "dtype": CPP_DTYPES.get(base, "float32"), "shape": [f"TODO_{n}_shape"]}
            (inputs if re.search(r"\bconst\b", t) else outputs).append(spec)
        elif base in CPP_INTS:
            scalars.append({"name": n, "type": "int64"})
        elif base in ("float", "double"):
            scalars.append({"name": n, "type": "float32", "value": "TODO"})
    return inputs, outputs, scalars


def thin_hip_entry(
    launcher: tuple[str, str, list[tuple[str, str]]], inputs: list[dict], outputs: list[dict], scalars: list[dict]
) -> tuple[list[str] | None, str]:
    """The body of an entry that calls a plain HIP launcher: pointers matched to the
    signature's tensors by constness and order, numbers by name, then by order; (None, why)
    when the counts do not agree."""
    ret, name, params = launcher
    ins = [i["name"] for i in inputs]
    outs = [o["name"] for o in outputs]
    nums = [s for s in scalars]
    args, stream = [], False
    for t, n in params:
        base = _base_type(t)
        if base == "hipStream_t":
            args.append("stream")
            stream = True
        elif "*" in t:
            pool = ins if re.search(r"\bconst\b", t) else outs
            if not pool:
                return None, f"{name}'s pointer {n} has no tensor of the signature left to take"
            args.append(f"({t.replace('__restrict__', '').strip()}){pool.pop(0)}")
        else:
            match = next((s for s in nums if s["name"] == n), None) or (nums[0] if nums else None)
            if match is None:
                return None, f"{name}'s parameter {n} has no scalar of the signature to take"
            nums.remove(match)
            args.append(f"({t.strip()}){match['name']}")
    if ins or outs:
        return None, f"{name} takes fewer pointers than the signature has tensors ({', '.join(ins + outs)} left)"
    call = f"{name}({', '.join(args)})"
    body = (
        [f"hipError_t err = (hipError_t){call};", "if (err != hipSuccess) return (int)err;"]
        if ret in ("int", "hipError_t")
        else [f"{call};"]
    )
    body.append("return (int)hipGetLastError();")
    note = (
        ""
        if stream
        else f"{name} takes no stream: its launches go to the default stream, not the harness's "
        "`stream`; add a stream parameter to it"
    )
    return body, note


# -- PyTorch host code -> the task's entry ----------------------------------------------------

_CPP_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Mod: "%"}


def shape_cpp(expr: Any, names: dict[str, str]) -> str | None:
    """A shape formula of the signature as a C++ int64_t expression over the entry's scalars
    (``names``: scalar -> its parameter), or None where it uses more than + - * // % and
    integers (sizes are not negative, so C's division is the formula's)."""

    def walk(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return f"(int64_t){node.value}"
        if isinstance(node, ast.Name) and node.id in names:
            return f"(int64_t){names[node.id]}"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = walk(node.operand)
            return None if inner is None else f"(-{inner})"
        if isinstance(node, ast.BinOp) and type(node.op) in _CPP_OPS:
            a, b = walk(node.left), walk(node.right)
            return None if a is None or b is None else f"({a} {_CPP_OPS[type(node.op)]} {b})"
        return None

    try:
        tree = ast.parse(str(expr), mode="eval")
    except SyntaxError:
        return None
    return walk(tree.body)


def _past_literal(text: str, at: int) -> int:
    """The index just after the C++ string or character literal that opens at ``at``."""
    j = at + 1
    while j < len(text) and text[j] != text[at]:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _balanced(text: str, open_at: int) -> int:
    """The index just after the bracket that closes the one at ``open_at``; -1 if none."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack, i = [], open_at
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _past_literal(text, i)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")}]":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i + 1
        i += 1
    return -1


def _unwrap_checks(text: str) -> str:
    """``text`` with the statements ``SOME_CHECK(call);`` of a file's own error macro (which
    prints and exits: the object check refuses both) reduced to ``(void)(call);``, and dropped
    where the call synchronises (the harness synchronises) or reads the last error (which the
    entry returns at its end: read here, it would be cleared), or where it checks values and
    calls nothing (``CHECK_INPUT(x)``: the harness checks its inputs)."""

    def unwrap(inner: str) -> str:
        drop = re.match(r"(?:hip|cuda)(?:(?:Device|Stream)Synchronize|GetLastError|PeekAtLastError)\b", inner)
        # dropped, a statement still: one an `if` governs keeps its place
        return f"(void)({inner});" if not drop and re.search(r"\w\s*\(", inner) else "(void)0;"

    return _rewrite_calls(text, r"(?=[A-Z])(?!TORCH_|AT_|C10_)[A-Z0-9_]*CHECK[A-Z0-9_]*", unwrap)


def _drop_dead_vectors(text: str) -> str:
    """``text`` without the ``std::vector`` locals that nothing reads once the translation has
    dropped what used them (a returned view's shape): their declarations and the statements that
    only build them go. A vector something still reads is kept, and refused later."""
    for name in re.findall(r"\bstd::vector\s*<[^;{}]*>\s+(\w+)", text):
        n = re.escape(name)
        builds = (rf"(?m)^[ \t]*(?:(?:const\s+)?std::vector\s*<[^;{{}}]*>\s+{n}\b[^;{{}}]*|"
                  rf"{n}\s*(?:\.\s*\w+\s*\([^;{{}}]*\)|\[[^;{{}}]*\])?(?:\s*=[^;{{}}]*)?)\s*;[ \t]*\n?")
        rest = re.sub(builds, "", text)
        if not re.search(rf"\b{n}\b", rest):
            text = rest
    return text


def _rewrite_calls(text: str, pattern: str, replace: Callable[[str], str], statement: bool = True) -> str:
    """``text`` with each statement ``NAME(...);`` whose NAME matches ``pattern`` replaced by
    ``replace(its arguments)`` (``statement=False``: each call ``NAME(...)`` wherever it is)."""
    out, pos = [], 0
    for m in re.finditer(rf"(?<![\w.:])(?:{pattern})\s*\(" if statement else rf"(?<![\w.])(?:{pattern})\s*\(", text):
        if m.start() < pos:
            continue
        end = _balanced(text, m.end() - 1)
        if end < 0:
            continue
        semi = re.match(r"\s*;" if statement else "", text[end:])
        if not semi:
            continue
        out.append(text[pos : m.start()] + replace(text[m.end() : end - 1].strip()))
        pos = end + semi.end()
    return "".join(out) + text[pos:]


def without_environment(text: str) -> tuple[str, list[str]]:
    """``text`` with every ``getenv(NAME)`` (``std::``, ``secure_``) read as an unset variable (a null
    pointer: the original's default, as it ran where no such knob was set), and the names so read."""
    names: list[str] = []

    def unset(arg: str) -> str:
        names.append(arg)
        return f"((const char*)nullptr /* getenv({arg}): unset */)"

    text = _rewrite_calls(text, r"(?:std::|::)?(?:secure_)?getenv", unset, statement=False)
    return text, list(dict.fromkeys(names))


def _drop_calls(text: str, pattern: str) -> str:
    """``text`` without the statements ``NAME(...);`` whose NAME matches ``pattern``."""
    return _rewrite_calls(text, pattern, lambda _: "")


_TORCH_DTYPES = {"Float": "float32", "Float32": "float32", "Double": "float64", "Float64": "float64",
                 "Float16": "float16", "Int32": "int32", "Int64": "int64",
                 "Half": "float16", "BFloat16": "bfloat16",
                 "Int": "int32", "Long": "int64", "Bool": "bool", "Char": "int8", "Byte": "uint8"}
_HOST_LEFT = re.compile(
    r"\b(torch::|at::|c10::|py::|std::vector|std::string|TORCH_|AT_|C10_)|\.item\s*[<(]|\.(view|reshape|permute|"
    r"transpose|to|cpu|cuda|sizes|strides|options|scalar_type|copy_|fill_|zero_|index|narrow|select|slice|expand|"
    r"matmul|mm|bmm|sum|mean|max|min|clone|detach)\s*\("
)


_CPP_NUMBER_TYPES = (r"(?:(?:const|constexpr|static)\s+)*(?:int|int64_t|int32_t|uint32_t|uint64_t|long(?:\s+long)?|"
                     r"unsigned(?:\s+int)?|size_t|bool|auto)")


def cpp_value(expr: str, known: dict[str, Any]) -> Any:
    """The value of a C++ host expression of whole numbers, bools and strings over the host locals in ``known``
    (``axis == ndim - 1 && true``, ``mode == std::string("forward")``), by the tasks' own formula evaluator; None
    where it is not such an expression or names something else. Sizes are not negative: C++'s integer division is a
    floor division on them."""
    e = re.sub(r"\bstd::string\s*\(\s*(\"(?:[^\"\\]|\\.)*\")\s*\)", r"\1", expr.strip())
    e = re.sub(r"\bstatic_cast\s*<\s*(?:const\s+)?[\w:]+\s*>", "", e)
    e = re.sub(r"\(\s*(?:int|int64_t|int32_t|long|size_t|unsigned|bool)\s*\)", "", e)
    e = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", e))
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    # a string local compared with a literal: its truth, before the numbers go to the evaluator
    strings = {k: v for k, v in known.items() if isinstance(v, str)}
    e = re.sub(r"\b(\w+)\s*(==|!=)\s*\"((?:[^\"\\]|\\.)*)\"",
               lambda m: str((strings[m.group(1)] == m.group(3)) == (m.group(2) == "==")) if m.group(1) in strings
               else m.group(0), e)
    if '"' in e or "'" in e:
        return None
    e = re.sub(r"(?<!/)/(?!/)", "//", " ".join(e.split()))
    try:
        value = formula.evaluate(e, {k: v for k, v in known.items() if not isinstance(v, str)})
    except (formula.FormulaError, ArithmeticError, TypeError, ValueError):
        return None
    return value if isinstance(value, int) else None


def host_constants(text: str, known: dict[str, Any]) -> dict[str, Any]:
    """``known`` with the host locals of ``text`` that are set once, in their declaration, to an expression
    ``cpp_value`` reads (``const int64_t ndim = 3;``, ``bool fast_path = (axis == ndim - 1) && true;``)."""
    found = dict(known)
    decls = list(re.finditer(rf"(?<![\w.:]){_CPP_NUMBER_TYPES}\s+(\w+)\s*=\s*([^;{{}}]+);", text))
    while True:
        more = False
        for m in decls:
            name = m.group(1)
            if name in found:
                continue
            writes = re.findall(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                                rf"(?:\+\+|--)\s*{re.escape(name)}\b|\b{re.escape(name)}\s*(?:\+\+|--)", text)
            if len(writes) != 1:
                continue
            v = cpp_value(m.group(2), found)
            if v is not None:
                found[name] = v
                more = True
        if not more:
            return found


def _statement_end(text: str, at: int) -> int:
    """The index just after the C++ statement that starts at or after ``at``: a braced block, an ``if`` with its
    ``else``s, or a simple statement up to its ``;``; -1 where it is not read."""
    m = re.compile(r"\s*").match(text, at)
    i = m.end() if m else at
    if text.startswith("{", i):
        return _balanced(text, i)
    cond = re.compile(r"if\s*\(").match(text, i)
    if cond:
        close = _balanced(text, cond.end() - 1)
        end = _statement_end(text, close) if close > 0 else -1
        if end < 0:
            return -1
        other = re.compile(r"\s*else\b").match(text, end)
        return _statement_end(text, other.end()) if other else end
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _past_literal(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return -1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return -1


def fold_host_branches(text: str, known: dict[str, Any]) -> str:
    """``text`` with each ``if``/``else`` whose condition ``cpp_value`` reads over the host constants
    (``host_constants``) reduced to the branch taken, and each ``c ? a : b`` whose ``c`` is such a constant to
    ``a`` or ``b``: the host code as it runs for the task's one dtype, device and constant arguments (a fallback
    for a CPU tensor or another dtype, a fast path for the last axis)."""
    consts = host_constants(text, known)
    pos = 0
    while True:
        m = re.compile(r"(?<![\w.])if\s*\(").search(text, pos)
        if m is None:
            break
        close = _balanced(text, m.end() - 1)
        value = cpp_value(text[m.end() : close - 1], consts) if close > 0 else None
        then_end = _statement_end(text, close) if close > 0 else -1
        if value is None or then_end < 0:
            pos = m.end()
            continue
        other = re.compile(r"\s*else\b").match(text, then_end)
        end = _statement_end(text, other.end()) if other else then_end
        if end < 0:
            pos = m.end()
            continue
        # the branch taken, its braces kept (its declarations stay its own)
        kept = text[close:then_end] if value else (text[other.end() : end] if other else ";")
        text = text[: m.start()] + kept.strip() + text[end:]
        pos = m.start()
        consts = host_constants(text, known)
    operand = r"[\w.:]+(?:\s*\([^()]*\))?"
    truth = {**{k: v for k, v in consts.items() if isinstance(v, bool)}, "true": True, "false": False}
    text = re.sub(rf"(?<![\w.])({'|'.join(map(re.escape, truth))})\s*\?\s*({operand})\s*:\s*({operand})",
                  lambda m: m.group(2) if truth[m.group(1)] else m.group(3), text)
    return re.sub(r"(?<=[=(,\s])\(\s*(\w+)\s*\)(?=\s*\.)", r"\1", text)


def inlined_size_helpers(text: str, pieces: list[str]) -> str:
    """``text`` with each ``auto [B, M, N] = helper(x, y);`` whose helper is a host function of the extension that
    returns what it reads off its tensors in one ``return {B, M, N};`` (or ``std::make_tuple``) replaced by the
    helper's body, its parameters named as the call names them and the values it returns bound to the call's names."""
    helpers: dict[str, tuple[str, str]] = {}
    for piece in pieces:
        for decl, brace, end in _cpp_blocks(piece):
            head = re.sub(r"//[^\n]*|/\*.*?\*/", "", piece[decl:brace], flags=re.S).strip()
            name = re.search(r"(\w+)\s*\([^()]*\)\s*(?:const\s*)?$", head)
            if name is not None and "PYBIND11_MODULE" not in head:
                helpers[name.group(1)] = (head, piece[brace + 1 : end - 1])
    if not helpers:
        return text

    def inline(m: re.Match) -> str:
        names = [n.strip() for n in m.group(1).split(",")]
        head, body = helpers[m.group(2)]
        args = [a.strip() for a in split_params(m.group(3))]
        params = _cpp_params(head, m.group(2)) or []
        body = re.sub(r"//[^\n]*|/\*.*?\*/", "", body, flags=re.S)
        ret = re.search(r"\breturn\s*(?:std::make_tuple\s*\(|\{)([^;{}]*)[)}]\s*;\s*$", body)
        if (ret is None or len(re.findall(r"\breturn\b", body)) != 1 or len(params) != len(args)
                or not all(re.fullmatch(r"\w+", a) for a in args)):
            return m.group(0)
        values = [v.strip() for v in split_params(ret.group(1))]
        if len(values) != len(names):
            return m.group(0)
        inner = body[: ret.start()]
        for (_, p), a in zip(params, args):
            inner = re.sub(rf"(?<![\w.:]){re.escape(p)}\b", a, inner)
        return inner + "".join(f"\n    auto {n} = {v};" for n, v in zip(names, values) if n != v)

    return re.sub(rf"\bauto\s*&?\s*\[\s*([\w\s,]+)\]\s*=\s*({'|'.join(map(re.escape, helpers))})\s*\(([^;]*)\)\s*;",
                  inline, text)


def _resolve_dtypes(text: str, dtype_of: dict[str, str]) -> str:
    """``text`` with each ``t.scalar_type() == at::kFloat`` (``!=``, ``dtype()``) of a tensor whose dtype the task
    fixes (``dtype_of``) resolved to ``true`` or ``false``, and so each comparison of a local that holds one
    (``auto st = t.scalar_type();``, the local dropped)."""
    names = "|".join(map(re.escape, dtype_of))
    if not names:
        return text

    def same(tensor: str, op: str, torch_name: str) -> str:
        equal = _TORCH_DTYPES.get(torch_name) == dtype_of[tensor]
        return "true" if equal == (op == "==") else "false"

    compared = r"\s*(==|!=)\s*(?:at|torch|c10)::(?:k|ScalarType::)(\w+)"
    text = re.sub(rf"\b({names})\s*\.\s*(?:scalar_type|dtype)\s*\(\s*\)" + compared,
                  lambda m: same(m.group(1), m.group(2), m.group(3)), text)
    held: dict[str, str] = {}

    def hold(m: re.Match) -> str:
        held[m.group(1)] = m.group(2)
        return ""

    text = re.sub(rf"(?:const\s+)?(?:auto|(?:at|c10|torch)::ScalarType)\s+(\w+)\s*=\s*({names})\s*\.\s*"
                  r"scalar_type\s*\(\s*\)\s*;", hold, text)
    if held:
        text = re.sub(rf"\b({'|'.join(held)})" + compared, lambda m: same(held[m.group(1)], m.group(2), m.group(3)),
                      text)
    return text


# what host code asks of a tensor that the task fixes: always so (the GPU, contiguous, given), and its rank
_ALWAYS_TRUE = ("is_contiguous", "is_cuda", "is_hip", "defined")
_RANK = ("dim", "ndimension")


def _answered_queries(text: str, spec_of: dict[str, dict]) -> str:
    """``text`` with what its host code asks of the tensors in ``spec_of`` that the task fixes answered: their
    device (the GPU), layout (contiguous), presence (defined), rank and dtype."""
    names = "|".join(map(re.escape, spec_of))
    if not names:
        return text
    text = re.sub(rf"\b({names})\s*\.\s*device\s*\(\s*\)\s*\.\s*is_(?:hip|cuda)\s*\(\s*\)", "true", text)
    text = re.sub(rf"\b({names})\s*\.\s*(?:{'|'.join(_ALWAYS_TRUE)})\s*\(\s*\)", "true", text)
    text = re.sub(rf"\b({names})\s*\.\s*(?:{'|'.join(_RANK)})\s*\(\s*\)",
                  lambda m: str(len(spec_of[m.group(1)]["shape"])), text)
    return _resolve_dtypes(text, {t: spec["dtype"] for t, spec in spec_of.items()})


def host_call_args(module: Path) -> tuple[list[tuple[str, Any]], dict[str, tuple[str, Any]]] | None:
    """What a module's forward hands its ``fn`` (AKA's harness passes the extension's function
    as ``fn``), by position and by keyword: ('tensor', the signature's input name) for a forward
    parameter or a tensor of the module (``self.scale``, ``self.proj.weight``: ``proj_weight``, as the
    module's importer names it), ('value', its value) for a number, bool or string of the module or a
    literal; None where the forward does not ``return fn(...)`` or the model does not run on the meta
    device."""
    try:
        mp = ModuleProblem(module, any_module=True)
    except ImportStop:
        return None
    a = mp.forward.args
    with_default = [x.arg for x in a.args[len(a.args) - len(a.defaults) :]]
    call = next(
        (
            r.value
            for r in ast.walk(mp.forward)
            if isinstance(r, ast.Return) and isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Name)
            and r.value.func.id in with_default
        ),
        None,
    )
    if call is None or any(k.arg is None for k in call.keywords):
        return None
    try:
        model = mp._model(dict(mp.constants), "meta")[0]    # made, not run: its attributes are what is read
    except Exception:  # noqa: BLE001 - the model's own code: no mapping then
        return None

    def given(arg: ast.expr) -> tuple[str, Any] | None:
        if isinstance(arg, ast.Name) and arg.id in mp.params:
            return ("tensor", arg.id)
        chain = self_chain(arg)
        if chain is not None:
            value: Any = model
            for attr in chain:
                value = getattr(value, attr, None)
            if isinstance(value, torch.Tensor):
                return ("tensor", "_".join(chain))
            if isinstance(value, (int, float, str)):        # bool is an int
                return ("value", value)
            return None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, (int, float, str)):
            return ("value", arg.value)
        return None

    out = [given(arg) for arg in call.args]
    named = {k.arg: given(k.value) for k in call.keywords if k.arg is not None}
    if any(g is None for g in out) or any(g is None for g in named.values()):
        return None
    return [g for g in out if g is not None], {k: g for k, g in named.items() if g is not None}


def translate_torch_host(
    pieces: list[str],
    exports: list[tuple[str, str]],
    inputs: list[dict],
    outputs: list[dict],
    scalars: list[dict],
    call_args: tuple[list[tuple[str, Any]], dict[str, tuple[str, Any]]] | None = None,
) -> tuple[list[str] | None, list[str], list[str], str]:
    """The body of the task's entry translated from an extension's PyTorch host function, for
    the common pattern (tensors and scalars in, sizes read off the tensors, one output
    allocated, kernels launched): ``data_ptr``s become the entry's pointers, ``size``/
    ``numel``/``stride``/``dim`` the signature's shape formulas over its scalars, the output's
    allocation the given output pointer, PyTorch's current stream the entry's ``stream``.
    ``call_args`` (``host_call_args``): what the module passes the host function, which names
    its tensors and gives its other parameters their values.
    Returns (the entry's parameters, its body's lines, decisions, '') or (None, [], [], why not)."""
    from arena.taskdef.skeleton import HIP_TYPES, SCALAR_TYPES

    cpp = dict(exports).get("forward") or (exports[0][1] if len(exports) == 1 else None)
    if cpp is None:
        return None, [], [], "the extension exports no `forward`"
    cpp = cpp.split("::")[-1]
    found = None
    for piece in pieces:
        for decl, brace, end in _cpp_blocks(piece):
            head = re.sub(r"//[^\n]*|/\*.*?\*/", "", piece[decl:brace], flags=re.S)
            if re.search(rf"\b{re.escape(cpp)}\s*\(", head) and "PYBIND11_MODULE" not in head:
                found = (head, piece[brace + 1 : end - 1])
    if found is None:
        return None, [], [], f"the host function {cpp} was not found"
    head, body = found
    params = _cpp_params(head, cpp) or []
    if len(outputs) != 1:
        return None, [], [], f"the task has {len(outputs)} outputs (the translation handles one)"
    out_spec = outputs[0]
    tensors = [n for t, n in params if re.search(r"\bTensor\b", t)]
    others = [(t, n) for t, n in params if not re.search(r"\bTensor\b", t)]
    in_names = [i["name"] for i in inputs]
    if len(tensors) != len(inputs):
        return None, [], [], f"{cpp} takes {len(tensors)} tensors, the task {len(inputs)} inputs"
    scalar_names = {s["name"] for s in scalars}
    given: dict[str, tuple[str, Any]] = {}
    if call_args is not None:
        by_position, by_name = call_args
        names_in_order = [n for _, n in params]
        if len(by_position) <= len(names_in_order) and set(by_name) <= set(names_in_order[len(by_position):]):
            given = {**dict(zip(names_in_order, by_position)), **by_name}
    defaults: list[str] = []
    for t, n in others:
        if n in scalar_names:
            continue
        if given.get(n, ("",))[0] == "value":
            v = given[n][1]
            value = str(v).lower() if isinstance(v, bool) else json.dumps(v) if isinstance(v, str) else repr(v)
            defaults.append(f"    const {t.replace('const', '').replace('&', '').strip()} {n} = {value};")
            continue
        d = re.search(rf"\b{re.escape(n)}\s*=\s*([-+\w.]+)\s*[,)]", head)
        if d is None:
            return None, [], [], f"{cpp}'s parameter `{t} {n}` is not a scalar of the task and has no default"
        defaults.append(f"    const {t.replace('const', '').replace('&', '').strip()} {n} = {d.group(1)};")
    named = [given[t][1] if given.get(t, ("",))[0] == "tensor" else t for t in tensors]
    by_name = set(named) == set(in_names)
    spec_of: dict[str, dict] = {t: (next(i for i in inputs if i["name"] == named[k]) if by_name else inputs[k])
                                for k, t in enumerate(tensors)}
    dtype = HIP_TYPES.get(inputs[0]["dtype"] if inputs else out_spec["dtype"])
    ptr_of: dict[str, str] = {t: f"@{spec_of[t]['name']}@" for t in tensors}
    text = re.sub(r"/\*.*?\*/", " ", body, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = inlined_size_helpers(text, pieces)
    # the last error read into a local nothing reads (what a check of it read, the check dropped): the entry reads it
    # at its end, and read here it would be cleared
    for err in re.finditer(r"(?:hipError_t|cudaError_t|auto)\s+(\w+)\s*=\s*(?:hip|cuda)(?:GetLastError|PeekAtLastError)"
                           r"\s*\(\s*\)\s*;", text):
        if len(re.findall(rf"\b{re.escape(err.group(1))}\b", _drop_calls(text, r"TORCH_CHECK\w*"))) == 1:
            text = text.replace(err.group(0), "", 1)
    # checks, guards and synchronisation go; the harness checks and synchronises
    text = _drop_calls(text, r"TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|AT_ASSERT\w*|C10_\w*CHECK\w*|"
                             r"hipDeviceSynchronize|hipStreamSynchronize")
    text = _unwrap_checks(text)
    cut_void = [m.group(1) for p in pieces for m in re.finditer(r"\bvoid\s+(\w+)\s*\([^;{]*\)\s*\{", p)]
    if cut_void:
        text = _drop_calls(text, "|".join(map(re.escape, cut_void)))
    text = re.sub(r"(?:const\s+)?(?:at|c10)::[\w:]*(?:Guard|guard)\w*\s+\w+\s*[({][^;]*[)}]\s*;", "", text)
    # the current stream is the entry's
    cur = r"(?:at|c10)::(?:hip|cuda)::getCurrent(?:HIP|CUDA)Stream\s*\([^()]*\)(?:\s*\.\s*stream\s*\(\s*\))?"
    text = re.sub(rf"(?:const\s+)?(?:hipStream_t|cudaStream_t|auto)\s+stream\s*=\s*{cur}\s*;", "", text)
    text = re.sub(cur, "stream", text)
    # dtype dispatch: the task's dtype
    while True:
        m = re.search(r"\bAT_DISPATCH_\w+\s*\(", text)
        if not m:
            break
        end = _balanced(text, m.end() - 1)
        lam = re.search(r"\[\s*&\s*\]\s*(\(\s*\))?\s*\{", text[m.end() : end]) if end > 0 else None
        if lam is None or dtype is None:
            return None, [], [], "an AT_DISPATCH without a `[&] { ... }` lambda"
        open_at = m.end() + lam.end() - 1
        close = _balanced(text, open_at)
        semi = re.match(r"\s*;", text[end:])
        text = (text[: m.start()] + "[&]() { using scalar_t = " + dtype + ";" + text[open_at + 1 : close - 1]
                + "}();" + text[end + (semi.end() if semi else 0):])
    # what the host code asks of its tensors that the task fixes, answered, and the branches that then go one way
    # taken (a fallback for a CPU tensor or another dtype, a fast path for the last axis)
    text = _answered_queries(text, {t: spec_of[t] for t in tensors})
    known = {n: given[n][1] for _, n in others if given.get(n, ("",))[0] == "value"}
    text = fold_host_branches(text, known)
    task_dtype = (inputs[0] if inputs else out_spec)["dtype"]
    # allocations, and aliases (a tensor another names, `.contiguous()` of it, a view of it: the same memory);
    # the returned one (or a view of it) is the output, the others are scratch the entry allocates and frees
    tensor_decl = r"(?:const\s+)?(?:auto|(?:torch|at)::Tensor)\s*&?\s*"
    view = (r"(?:\s*\.\s*contiguous\s*\(\s*\))?(?:\s*\.\s*(?:view|reshape)\s*\(\s*(\{[^{};]*\}|\w+"
            r"(?:\s*\.\s*sizes\s*\(\s*\))?)\s*\))?(?:\s*\.\s*contiguous\s*\(\s*\))?")
    # a tensor declared empty and set once (`at::Tensor out; ... out = y.view(...);`, what is left of its branches)
    # is declared where it is set
    at = 0
    while (decl := re.compile(r"(?:at|torch)::Tensor\s+(\w+)\s*;").search(text, at)) is not None:
        sets = list(re.finditer(rf"(?<![\w.:]){re.escape(decl.group(1))}\s*=(?!=)", text))
        at = decl.end()
        if len(sets) == 1 and sets[0].start() > decl.end():
            text = (text[: decl.start()] + text[decl.end() : sets[0].start()] + "auto " + text[sets[0].start() :])
            at = decl.start()
    # `x.is_contiguous() ? x : x.contiguous()` is x (the harness's tensors are contiguous)
    text = re.sub(r"\b(\w+)\s*\.\s*is_contiguous\s*\(\s*\)\s*\?\s*\1\s*:\s*\1\s*\.\s*contiguous\s*\(\s*\)",
                  r"\1", text)
    alloc = rf"{tensor_decl}(\w+)\s*=\s*(?:torch|at)::(empty|empty_like|zeros|zeros_like)\s*\("
    alloc_names = [m.group(1) for m in re.finditer(alloc, text)]
    root_of: dict[str, str] = {}
    dims_of: dict[str, list[str]] = {}      # a host local's shape as C++ expressions (scratch, views)
    viewed_in_place: set[str] = set()
    while True:
        names = "|".join(map(re.escape, [*ptr_of, *alloc_names, *root_of]))
        m = re.search(rf"(?<![\w.])((?:{tensor_decl})?)(\w+)\s*=\s*({names}){view}\s*;", text)
        if not m or (not m.group(1) and m.group(2) != m.group(3)):
            break
        a, b, shape = m.group(2), m.group(3), m.group(4)
        if a == b and shape and shape.startswith("{"):
            # `x = x.view({...});`: from here on x is the view, a name of its own with the view's shape
            a = f"{b}__view{sum(k.startswith(b + '__view') for k in root_of) + 1}"
            text = text[: m.end()] + re.sub(rf"(?<![\w.>:]){re.escape(b)}\b", a, text[m.end() :])
        root_of[a] = root_of.get(b, b)
        sized = re.fullmatch(r"(\w+)\s*\.\s*sizes\s*\(\s*\)", shape or "")
        if sized and (sized.group(1) in dims_of or sized.group(1) in spec_of):
            src = sized.group(1)        # `y.view(x.sizes())`: x's shape
            dims_of[a] = dims_of.get(src) or [f"@size:{src}:{k}@" for k in range(len(spec_of[src]["shape"]))]
        elif shape and not shape.startswith("{"):
            viewed_in_place.add(a)      # its shape unknown here (one computed, a vector): no size of it is read
            dims_of.pop(a, None)
        elif shape:
            dims_of[a] = split_params(shape[1:-1])
        elif b in dims_of:
            dims_of[a] = dims_of[b]
        if root_of[a] in ptr_of:
            ptr_of[a], spec_of[a] = ptr_of[root_of[a]], spec_of[root_of[a]]
        text = text[: m.start()] + text[m.end() :]
    returned = {root_of.get(r.group(1), r.group(1)) for r in re.finditer(rf"\breturn\s+(\w+){view}\s*;", text)}
    # (only where it allocates nothing: one that allocates a tensor and returns an input is not read as in place)
    in_place = next(iter(returned)) if len(returned) == 1 and next(iter(returned)) in tensors and not alloc_names \
        else None
    if in_place is not None:
        # the host function changes an input in place and returns it: the entry copies that input into the
        # output first, and the kernels change the output (the input, const in the task's ABI, stays as given)
        src = spec_of[in_place]
        if list(src["shape"]) != list(out_spec["shape"]) or src["dtype"] != out_spec["dtype"]:
            return None, [], [], (f"{cpp} changes its input `{in_place}` in place and returns it, and the task's "
                                  f"output is not of that input's shape and dtype")
        ptr_of[in_place], spec_of[in_place] = f"@{out_spec['name']}@", out_spec
        text = (f"    (void)hipMemcpyAsync(@{out_spec['name']}@, @{src['name']}@, (size_t)(@numel:{in_place}@) * "
                f"sizeof(*@{out_spec['name']}@), hipMemcpyDeviceToDevice, stream);\n" + text)
    elif len(returned) != 1 or next(iter(returned)) not in alloc_names:
        return None, [], [], f"{cpp} returns something other than its output"
    out_name = next(iter(returned))
    options = {m.group(1): m.group(2)
               for m in re.finditer(r"(?:const\s+)?auto\s+(\w+)\s*=\s*(\w+)\s*\.\s*options\s*\(\s*\)\s*;", text)}
    scratch: list[tuple[str, str]] = []
    for m in reversed(list(re.finditer(alloc, text))):     # the last first: the earlier ones' places stay
        name, kind = m.group(1), m.group(2)
        end = _balanced(text, m.end() - 1)
        semi = re.match(r"\s*;", text[end:]) if end > 0 else None
        if semi is None:
            return None, [], [], f"the allocation of `{name}` was not read"
        zeros = kind.startswith("zeros")
        if name == out_name:
            ptr_of[name], spec_of[name] = f"@{out_spec['name']}@", out_spec
            ptr = f"@{out_spec['name']}@"
            stmt = (f"(void)hipMemsetAsync({ptr}, 0, (size_t)(@numel:{name}@) * sizeof(*{ptr}), stream);"
                    if zeros else "")
        else:
            args = split_params(text[m.end() : end - 1])
            like = args[0].strip() if kind.endswith("_like") and args else ""
            if kind.endswith("_like"):
                if like not in ptr_of and like not in dims_of:
                    return None, [], [], f"`{name}` is allocated like `{like}`, whose shape was not read"
                dtype_of = spec_of.get(like, {}).get("dtype", task_dtype)
                if like in dims_of:
                    dims_of[name] = dims_of[like]
                else:
                    dims_of[name] = [f"@size:{like}:{k}@" for k in range(len(spec_of[like]["shape"]))]
            else:
                if not args or not re.fullmatch(r"\{[^{}]*\}", args[0].strip()):
                    return None, [], [], f"`{name}` is allocated with a shape that is not a braced list"
                dims_of[name] = split_params(args[0].strip()[1:-1])
                opt = args[1].strip() if len(args) > 1 else ""
                src = re.fullmatch(r"(\w+)\s*\.\s*options\s*\(\s*\)", opt)
                src_name = src.group(1) if src else options.get(opt)
                named = re.search(r"\bk(\w+)\b", opt)
                if src_name is not None and src_name in spec_of:
                    dtype_of = spec_of[src_name]["dtype"]
                elif named and named.group(1) in _TORCH_DTYPES:
                    dtype_of = _TORCH_DTYPES[named.group(1)]
                elif src_name is not None or not opt:
                    dtype_of = task_dtype
                else:
                    return None, [], [], f"the element type of `{name}` was not read (`{opt[:60]}`)"
            ctype = HIP_TYPES.get(dtype_of)
            if ctype is None:
                return None, [], [], f"`{name}` is of {dtype_of}, which the entry cannot allocate"
            var = f"arena_tmp_{name}"
            ptr_of[name], spec_of[name] = f"@{var}@", {"dtype": dtype_of, "shape": []}
            scratch.insert(0, (ctype, var))
            nbytes = f"(size_t)({' * '.join(f'({d})' for d in dims_of[name]) or '1'}) * sizeof({ctype})"
            stmt = f"(void)hipMallocAsync((void**)&{var}, {nbytes}, stream);"
            if zeros:
                stmt += f" (void)hipMemsetAsync({var}, 0, {nbytes}, stream);"
        text = text[: m.start()] + stmt + text[end + semi.end() :]
    frees = "".join(f"if ({var}) (void)hipFreeAsync({var}, stream); " for _, var in scratch)
    # the tensor options the allocations were given go with them (one used otherwise leaves PyTorch behind)
    text = re.sub(r"(?:const\s+)?auto\s+(\w+)\s*=\s*\w+\s*\.\s*options\s*\(\s*\)\s*;",
                  lambda m: m.group(0) if re.search(rf"\b{m.group(1)}\b", text[: m.start()] + text[m.end() :]) else "",
                  text)
    for a, r in root_of.items():        # aliases of what was allocated: its memory, its shape unless a view's
        if r in ptr_of and a != r:
            ptr_of[a], spec_of[a] = ptr_of[r], spec_of[r]
            if a not in dims_of and r in dims_of:
                dims_of[a] = dims_of[r]
    done = "{ " + frees + "return (int)hipGetLastError(); }" if frees else "return (int)hipGetLastError();"
    text = re.sub(rf"\breturn\s+(\w+){view}\s*;",
                  lambda r: done if root_of.get(r.group(1), r.group(1)) == out_name else r.group(0), text)
    if re.search(r"\breturn\s+(?!\(int\)hipGetLastError\(\);)", text):
        return None, [], [], f"{cpp} returns something other than its output"
    for name in viewed_in_place:
        if re.search(rf"\b{re.escape(name)}\s*\.\s*(?:size|stride|sizes|strides|dim|numel)\s*\(", text):
            return None, [], [], f"the sizes of `{name}`, a view of a shape not read here, are read"
    text = _drop_dead_vectors(text)
    # tensor methods -> pointers and shape formulas
    names = "|".join(map(re.escape, ptr_of))
    text = re.sub(rf"\b({names})\s*=\s*\1\s*\.\s*contiguous\s*\(\s*\)\s*;", "", text)
    text = re.sub(rf"\b({names})\s*\.\s*contiguous\s*\(\s*\)", r"\1", text)
    text = re.sub(r"\b(?:at|c10)::(?:Half)\b", "__half", text)
    text = re.sub(r"\b(?:at|c10)::(?:BFloat16)\b", "__hip_bfloat16", text)

    def product(ds: list[str]) -> str:
        return "(" + " * ".join(f"(int64_t)({d})" for d in ds) + ")" if ds else "(int64_t)1"

    def size_of(t: str, meth: str, k: int) -> str:
        """A size or stride of ``t``: the signature's (a token resolved below) or, for scratch and
        views, the host's own expressions."""
        if t in dims_of:
            return f"(int64_t)({dims_of[t][k]})" if meth == "size" else product(dims_of[t][k + 1 :])
        return f"@{meth}:{t}:{k}@"

    def method(m: re.Match) -> str:
        t, meth, targ, arg = m.group(1), m.group(2), m.group(3), (m.group(4) or "").strip()
        shape = dims_of.get(t) or list(spec_of[t]["shape"])
        if meth in ("data_ptr", "mutable_data_ptr", "const_data_ptr"):
            return f"(({targ.strip() if targ else 'void'}*){ptr_of[t]})"
        if meth in _ALWAYS_TRUE:
            return "true"
        if meth in _RANK:
            return str(len(shape))
        if meth in ("element_size", "itemsize"):
            return f"sizeof(*{ptr_of[t]})"
        if meth == "numel":
            return product(dims_of[t]) if t in dims_of else f"@numel:{t}@"
        if meth in ("size", "stride"):
            k = int(arg) if re.fullmatch(r"-?\d+", arg) else cpp_value(arg, consts) if arg else None
            if isinstance(k, bool) or not isinstance(k, int):
                if not arg or not shape:
                    return m.group(0)
                # an index the host computes as it runs (a loop over the dimensions): one of them, picked then
                every = ", ".join(size_of(t, meth, j) for j in range(len(shape)))
                return (f"[&](int64_t arena__k) {{ const int64_t arena__d[] = {{{every}}}; "
                        f"return arena__d[arena__k]; }}({arg})")
            if not -len(shape) <= k < len(shape):
                return m.group(0)
            return size_of(t, meth, k % len(shape))
        return m.group(0)

    consts = host_constants(text, known)

    # `torch::elementSize(x.scalar_type())`: the size of x's elements
    text = re.sub(rf"\b(?:torch|at|c10)::elementSize\s*\(\s*({names})\s*\.\s*scalar_type\s*\(\s*\)\s*\)",
                  lambda m: f"{m.group(1)}.element_size()", text)
    text = re.sub(rf"\b({names})\s*\.\s*(\w+)\s*(?:<\s*([\w: ]+)\s*>)?\s*\(([^()]*)\)", method, text)

    text = _resolve_dtypes(text, {t: spec_of[t]["dtype"] for t in ptr_of})
    text = re.sub(rf"\b({names})\s*\.\s*(?:sizes|size)\s*\(\s*\)\s*\[\s*(-?\d+)\s*\]",
                  lambda m: size_of(m.group(1), "size",
                                    int(m.group(2)) % len(dims_of.get(m.group(1)) or spec_of[m.group(1)]["shape"])),
                  text)
    # launches on the entry's stream
    out, pos = [], 0
    for m in re.finditer(r"\bhipLaunchKernelGGL\s*\(", text):
        end = _balanced(text, m.end() - 1)
        if end < 0 or m.start() < pos:
            continue
        a = split_params(text[m.end() : end - 1])
        if len(a) < 5:
            return None, [], [], "a hipLaunchKernelGGL with fewer than 5 arguments"
        if a[4] in ("0", "nullptr", "NULL", "0u"):
            a[4] = "stream"
        out.append(text[pos : m.start()] + "hipLaunchKernelGGL(" + ", ".join(a) + ")")
        pos = end
    text = "".join(out) + text[pos:]

    def chevrons(m: re.Match) -> str:
        a = split_params(m.group(1))
        a = (a + ["0", "stream"])[:4] if len(a) < 4 else a
        if a[3] in ("0", "nullptr", "NULL"):
            a[3] = "stream"
        return "<<<" + ", ".join(a) + ">>>"

    text = re.sub(r"<<<(.*?)>>>", chevrons, text, flags=re.S)
    # what is left of PyTorch is not the pattern
    left = _HOST_LEFT.search(text) or re.search(rf"\b({names})\b(?!@)", re.sub(r"@[^@\s]*@", "", text))
    if left:
        line = text[text.rfind("\n", 0, left.start()) + 1 : text.find("\n", left.end())].strip()
        return None, [], [], f"{cpp} uses PyTorch beyond sizes, pointers and one output (`{line[:80]}`)"
    # the entry's parameters; one a host local shadows is renamed
    params_all = [*(i["name"] for i in inputs), out_spec["name"], *(s["name"] for s in scalars)]
    words = set(re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r"@[^@\s]*@", " ", text)))
    host_scalars = {n for _, n in others}
    rename = {p: (f"arena_{p}" if p in words and p not in host_scalars else p) for p in params_all}
    sc_names = {s["name"]: rename[s["name"]] for s in scalars if s["type"] != "float32"}

    def dims(t: str) -> list[str] | None:
        got = [shape_cpp(d, sc_names) for d in spec_of[t]["shape"]]
        return None if any(g is None for g in got) else [g for g in got if g is not None]

    bad: list[str] = []

    def resolve(m: re.Match) -> str:
        parts = m.group(1).split(":")
        if len(parts) == 1:
            return rename.get(parts[0], parts[0])
        d = dims(parts[1])
        if d is None:
            bad.append(parts[1])
            return "0"
        if parts[0] == "numel":
            return "(" + " * ".join(d or ["(int64_t)1"]) + ")"
        k = int(parts[2])
        if parts[0] == "size":
            return d[k]
        return "(" + " * ".join(d[k + 1 :] or ["(int64_t)1"]) + ")"

    text = re.sub(r"@([^@\s]*)@", resolve, text)
    if bad:
        return None, [], [], f"the shape of {bad[0]} is not a formula of +, -, *, // over the scalars"
    if not re.search(r"return \(int\)hipGetLastError\(\);(?: \})?\s*$", text):
        text = text.rstrip() + "\n    " + done
    sig = [f"const {HIP_TYPES[i['dtype']]}* {rename[i['name']]}" for i in inputs]
    sig.append(f"{HIP_TYPES[out_spec['dtype']]}* {rename[out_spec['name']]}")
    sig += [f"{SCALAR_TYPES[s['type']]} {rename[s['name']]}" for s in scalars]
    sig.append("hipStream_t stream")
    lines = [*defaults, *(f"    {c}* {v} = nullptr;" for c, v in scratch),
             *(ln.rstrip() for ln in text.strip("\n").splitlines())]
    lines = [ln for k, ln in enumerate(lines) if ln.strip() or (k and lines[k - 1].strip())]
    renamed = [k for k, v in rename.items() if k != v]
    decisions = [
        f"the entry is {cpp} translated from it: tensors matched to the signature's inputs "
        f"{'by name' if by_name else 'by position'}, sizes read off the signature's shapes, "
        + (f"the input `{out_name}` it changes in place copied into the output first, and the output changed in "
           "its place" if in_place else f"the output allocation `{out_name}` made the output pointer")
        + (f", the other allocations ({', '.join(v[len('arena_tmp_'):] for _, v in scratch)}) scratch the entry "
           "allocates and frees on `stream`" if scratch else "")
        + ", launches on `stream`, checks dropped"
        + (f", entry parameters renamed where a host local shadows them ({', '.join(renamed)})" if renamed else "")
        + (f", {', '.join(d.split('=')[0].split()[-1] for d in defaults)} set to the values the module passes "
           "(or the host's defaults) as constants" if defaults else "")
        + f"; its dtype branches are resolved for {task_dtype}: it compiles, but only a GPU run shows it is right"
    ]
    return sig, lines, decisions, ""

# -- the importer -----------------------------------------------------------------------------


@on_one_thread
def import_aka(path: Path | str, root: Path | str | None = None, task_id: str | None = None,
               device: str = "cpu") -> ImportResult:
    """An AgentKernelArena-style task folder -> a triton2triton or hip2hip task folder under
    ``root`` (default: the repository's tasks/), the kernel kept as written. ``device`` ("cuda" or "rocm"): a GPU
    the finished task is then checked on, the drafts its starting kernel fails there taken out (``finish_draft``);
    "cpu": none."""
    gpu = None
    if device != "cpu":
        from arena.devices import detect

        gpu = detect(device)     # a GPU this machine does not have: one line that says so, before the import
    aka = AkaFolder.read(Path(path))
    category, name = resolve_task_id(task_id, aka.folder.name, ("triton2triton", "hip2hip"))
    if category is not None and category != aka.category:
        raise ArenaError(f"the folder is a {aka.category} task; --id names {category}", key="--id")
    source = aka.sources[0]
    decisions: list[str] = []
    if len(aka.sources) > 1:
        decisions.append(
            "the task YAML names several source files ("
            + ", ".join(str(s.relative_to(aka.folder)) for s in aka.sources)
            + f"): only {source.relative_to(aka.folder)} was kept; a HIP task may ship headers beside its "
            "kernel (copy them), a Triton task is one file"
        )
    from arena.authoring.importers import kernel_probe

    # the starting kernel's probes on the drafts (Triton's interpreter) take this long at most, all together
    with kernel_probe.probes_within(kernel_probe.IMPORT_PROBES_SECONDS):
        if aka.category == "triton2triton":
            start = list(decisions)
            d, check, grew = _aka_triton(aka, source, name, decisions)
            bounded: list[str] = []
            kept: list[str] = []
            block = _grown_block_sizes(d, grew, bounded)
            # drafted again, those sizes kept as the cases have them; the sizes that grow then are probed in turn (a
            # product whose one program holds the whole of each matrix: its first growth doubled the rows alone,
            # and the columns and K, grown after, took its blocks past what Triton compiles)
            while block:
                kept += block
                decisions = list(start)
                d, check, grew = _aka_triton(aka, source, name, decisions, keep=kept)
                d.decisions += bounded
                block = [k for k in _grown_block_sizes(d, [g for g in grew if g not in kept], bounded)
                         if k not in kept]
        else:
            d, check = _aka_hip(aka, source, name, decisions)
        d.origin = f"the AgentKernelArena-style folder {aka.folder.name} ({aka.config_path.name})"
        for w in aka.workloads:
            d.decisions.append(
                f"{w.relative_to(aka.folder)} describes workloads the importer does not read: compare "
                "its shapes with the configs"
            )
        return finish_draft(d, Path(root) if root else None, aka.folder, check, device=gpu)


def _grown_block_sizes(d: Draft, grew: list[str], notes: list[str]) -> list[str]:
    """Of the sizes grown into the timing window (``grew``; where no case grew, those the growth tried), those the
    starting kernel's compile-time block sizes follow (``kernel_probe.block_fields``, from the smoke config, on a copy
    of the draft written aside); none where each grown seen config is compiled as one of the source's cases is
    (``kernel_probe.compiled_as_cases``: a block of ``min(next_power_of_2(n), 1024)`` that the largest case
    reached the bound of already, which growing the cases leaves as it is), nor those whose blocks no longer follow
    them at the largest grown config (``kernel_probe.bounded_fields``: said in ``notes`` too, for a draft made again
    with the others kept)."""
    if not grew or not d.smoke:
        return []
    from arena.authoring.importers import kernel_probe

    with tempfile.TemporaryDirectory(prefix="arena-import-") as tmp:
        try:
            folder = write_draft(d, Path(tmp))
        except (ArenaError, OSError):
            return []
        smoke = config_params(d.smoke[0])
        fields = kernel_probe.block_fields(folder, smoke, grew)
        grown = [c["name"] for c in d.seen if c["name"] in d.grown]
        if fields and grown and d.cases and kernel_probe.compiled_as_cases(
                folder, grown, [{**smoke, **c} for c in d.cases]):
            d.decisions.append(
                f"{', '.join(fields)} set{'s' if len(fields) == 1 else ''} the starting kernel's compile-time block "
                "sizes up to a bound: each grown seen config is compiled as one of the cases of the source is, so "
                "the cases grew by every size"
            )
            return []
        top = max((c for c in d.seen if c["name"] in d.grown), key=lambda c: math.prod(
            v for v in config_params(c).values() if isinstance(v, int) and v > 0), default=None)
        bounded = kernel_probe.bounded_fields(folder, config_params(top), fields) if fields and top else []
        if bounded:
            note = (f"{', '.join(bounded)} set{'s' if len(bounded) == 1 else ''} the starting kernel's compile-time "
                    f"block sizes at the smoke config, and no longer at {top['name']}, grown (doubled there, each "
                    "launch is compiled as before: a block its launcher bounds), so the cases grew by "
                    f"{'it' if len(bounded) == 1 else 'them'}")
            d.decisions.append(note)
            notes.append(note)
        return [f for f in fields if f not in bounded]


def _launchers_py(tree: ast.Module) -> tuple[list[str], list[str]]:
    """(jit kernels, launcher functions) defined at the top of a Triton file."""
    jit, plain = [], []
    for s in tree.body:
        if isinstance(s, ast.FunctionDef):
            decorated = any(
                word in dotted_name(d) for d in s.decorator_list for word in ("jit", "autotune", "heuristics")
            )
            (jit if decorated else plain).append(s.name)
        elif (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
              and isinstance(s.value, ast.Name) and s.value.id in plain):
            plain.append(s.targets[0].id)  # gemm_a16w16 = gemm
    return jit, plain


def _launching(tree: ast.Module, jit: list[str]) -> set[str]:
    """The names of a Triton file that launch one of its kernels (``kernel[grid](...)``), or call one that
    does: its functions, an autograd Function's class whose methods do, a module-level name bound to one
    (``gemm_a16w16 = gemm``, ``rmsnorm = RMSNorm.apply``); not its tests."""
    defs = {n: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.Assign))
            for n in _bound_names(s) if n not in jit and not n.startswith("test")}
    out: set[str] = set()

    def launches(c: ast.AST, known: set[str]) -> bool:   # ``k[grid](...)``, ``f(...)``, ``Cls.apply(...)``
        if not isinstance(c, ast.Call):
            return False
        f = c.func.value if isinstance(c.func, ast.Subscript) else c.func
        while isinstance(f, ast.Attribute) and not isinstance(c.func, ast.Subscript):
            f = f.value
        return call_name(c) in jit if isinstance(c.func, ast.Subscript) else isinstance(f, ast.Name) and f.id in known

    while True:
        known = out | set(jit)
        more = {n for n, s in defs.items() if n not in out and (
            any(launches(c, known) for c in ast.walk(s))
            or isinstance(s, ast.Assign) and free_names([s.value]) & known)}
        if not more:
            return out
        out |= more


def _harness_signature(h: Harness, decisions: list[str], scratch: Iterable[str] = ()
                       ) -> tuple[list[dict], list[dict], list[dict], dict]:
    """Inputs, outputs and scalars from what the harness passes to the kernel and compares (less ``scratch``, the
    buffers the entry makes itself); ``roles`` maps each output to how the entry fills it."""
    passed = [a.id for a in [*h.call.args, *(k.value for k in h.call.keywords)] if isinstance(a, ast.Name)]
    compared_names = [k for k, _, _ in h.compared]
    inputs, outputs = [], []
    roles: dict[str, Any] = {}
    inout_ok = schema_supports("inout")
    scratch = set(scratch)
    for n in passed:
        if n in scratch:
            # made by the entry: a buffer as the test makes it, or a copy of a tensor the test made, whose original
            # is the input (the kernel changes the copy, the comparison reads the original)
            src = _copy_source(h, n)
            if src is None or src in passed or src in [i["name"] for i in inputs]:
                continue
            n = src
        # a copy of a tensor the test made (``logits_gpu = logits.clone()``): made as that tensor is
        t = h.tensors.get(n) or h.tensors.get(_copy_source(h, n) or "")
        if t is None:
            if n in compared_names and n not in h.results and inout_ok and _read_by_reference(h, n) and \
                    n not in [i["name"] for i in inputs]:
                # handed to the kernel and to the reference, compared after: state the kernel updates, its shape
                # and dtype as the test's run shows them
                inputs.append({"name": n, "dtype": "float32", "shape": [f"TODO_{n}_shape"], "inout": True})
                decisions.append(f"{n} is given to the kernel and to the reference, and compared after the call: "
                                 "the kernel updates it in place; it is an inout input, and the reference must "
                                 "update its copy in place")
            elif n in compared_names and n not in h.results and n not in [o["name"] for o in outputs]:
                # handed to the kernel and compared after, made by code the importer does not read: an output
                # argument, its shape and dtype as the test's run shows them
                outputs.append({"name": n, "dtype": "float32", "shape": None, "_key": n})
                roles[n] = ("arg", None)
            continue
        spec: dict[str, Any] = {
            "name": n,
            "dtype": t.dtype,
            "shape": t.shape if t.shape is not None else [f"TODO_{n}_shape"],
        }
        if t.shape is None:
            decisions.append(
                f"the shape of {n} could not be read from {h.path.name}: write it in task.yaml (TODO_{n}_shape)"
            )
        if n in compared_names and t.maker in (
            "empty",
            "empty_like",
            "zeros",
            "zeros_like",
            "ones",
            "ones_like",
            "full",
            "full_like",
        ) and not (inout_ok and _copied_before_call(h, n)):
            outputs.append(spec)
            roles[n] = ("arg", t.fill)
            continue
        if t.init != {"kind": "normal"}:
            spec["init"] = t.init
        if t.init.get("kind") == "randint" and t.dtype not in INTEGER_DTYPES:
            spec["init"] = whole_numbers_as_uniform(t.init)
            decisions.append(f"input {n}: {h.path.name} draws whole numbers (randint) in {t.dtype}; the task draws "
                             "uniform between the least and the greatest of them: keep that only if the kernel does "
                             "not need whole numbers")
        if n in compared_names and t.maker in SCRATCH_MAKERS:
            decisions.append(
                f"input {n}: made by `{t.maker}` and copied before the kernel call into what {h.path.name}'s reference "
                "updates: what it holds before the call is compared too (a cache the kernel writes in part); "
                + ("drawn at random, so that a kernel that writes where it should not fails" if _drawn_state(t)
                   else "made as the test makes it"))
        elif t.note:
            decisions.append(f"input {n}: {t.note}")
        if n in compared_names:
            if inout_ok:
                spec["inout"] = True
            decisions.append(
                f"{n} is given to the kernel and compared after the call: the kernel updates it in "
                "place"
                + (
                    "; it is an inout input, and the reference must update its copy in place"
                    if inout_ok
                    else "; the signature cannot say so here: decide how"
                )
            )
        inputs.append(spec)
    taken = {s["name"] for s in inputs + outputs} | set(h.fields)
    for i, key in enumerate(k for k in compared_names if k not in roles and k not in {s["name"] for s in inputs}):
        oname = key if re.fullmatch(r"[A-Za-z_]\w*", key) and key not in taken else f"out{i}"
        while oname in taken:
            oname += "_"
        taken.add(oname)
        outputs.append({"name": oname, "dtype": "float32", "shape": None, "_key": key})
        roles[oname] = ("result", key)
    scalars = [{"name": f, "type": "int64"} for f in h.fields]
    return inputs, outputs, scalars, roles


def _of_returned(key: str, results: list[str]) -> str:
    """A compared key (``out``, ``out[1]``, ``r[0] if isinstance(r, tuple) else r``) as an expression of
    ``_returned``, what the entry's call of the launcher returned (bound to ``results`` by the test)."""
    class _Returned(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id not in results:
                return node
            whole = ast.Name("_returned", ast.Load())
            return whole if len(results) == 1 else ast.Subscript(whole, ast.Constant(results.index(node.id)),
                                                                 ast.Load())

    return ast.unparse(_Returned().visit(ast.parse(key, mode="eval")).body)


def _made_before_call(h: Harness, n: str) -> list[ast.stmt]:
    """The test's statements before its call of the kernel that bind ``n``."""
    end = h.stmts.index(h.call_stmt)
    return [s for s in h.stmts[:end] if n in _bound_names(s)]


def _entry_can_make(h: Harness, defining: list[ast.stmt], sig: set[str]) -> bool:
    """Whether the entry can run the test's statements ``defining`` as they are: they read no tensor of the
    test's besides the task's own (``sig``)."""
    return not any(m in h.tensors and m not in sig for m in free_names(defining))


def _only_made_by(h: Harness, n: str, made: ast.stmt, end: int) -> bool:
    """Whether no statement of the test before position ``end`` but ``made`` binds ``n``, writes into it or changes
    it in place, at any depth (a loop's body, an ``if``'s)."""
    for st in h.stmts[:end]:
        if st is made:
            continue
        for sub in ast.walk(st):
            if isinstance(sub, ast.Name) and sub.id == n and isinstance(sub.ctx, ast.Store):
                return False
            if isinstance(sub, (ast.Subscript, ast.Attribute)) and isinstance(sub.ctx, ast.Store) \
                    and isinstance(sub.value, ast.Name) and sub.value.id == n:
                return False
            if isinstance(sub, ast.Call) and (_changes(sub, n) or _writes_argument(h, sub, n)):
                return False
    return True


SCRATCH_MAKERS = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like"}
# the makers of a filled tensor whose arguments a random draw takes as they are (sizes, dtype, device)
FILLED_DRAWN = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like"}
FILLED_DRAWN_CALLS = {f"torch.{m}" for m in FILLED_DRAWN}


def _scratch_buffers(h: Harness) -> set[str]:
    """The tensors the test hands the kernel that it makes empty or filled with a constant, that the other side of
    its comparison never reads and that it does not compare: an output buffer the launcher writes and returns
    (``y = torch.zeros_like(x)``, ``rmsnorm(x, g, y, ...)`` returning ``y``), a workspace. Their values mean
    nothing to the task: the entry makes them as the test does, and they are not the task's inputs (as inputs they
    would be drawn at random, and the buffer the kernel writes would be an input it changes)."""
    inputs, _, _, _ = _harness_signature(h, [])
    names = [i["name"] for i in inputs]
    reference, _ = _reference_from_harness(h, names, {}, None)
    if reference is None:
        return set()
    fn = next((s for s in ast.parse(reference).body if isinstance(s, ast.FunctionDef) and s.name == "reference"),
              None)
    read = free_names(fn.body) if fn is not None else set(names)
    unread = {i["name"] for i in inputs if i["name"] not in read and not i.get("inout")
              and h.tensors.get(i["name"]) is not None and h.tensors[i["name"]].maker in SCRATCH_MAKERS}
    sig = (set(names) - unread) | set(h.fields)
    call_at = h.stmts.index(h.call_stmt)
    # made by one statement the entry can run, and not written after it (``offsets[b, j] = j`` in a loop, ``x =
    # x.to(device)`` under an ``if``)
    buffers = {n for n in unread if len(made := _made_before_call(h, n)) == 1 and _entry_can_make(h, made, sig)
               and _only_made_by(h, n, made[0], call_at)}
    # a copy of a tensor of the test's (``num_sampled_copy = num_sampled.clone()``) that the kernel is handed and the
    # comparison does not read: the kernel may change it, the original is the input, and the entry copies it as the
    # test does (as an input, it would be one the kernel changes)
    compared = {k for k, _, _ in h.compared}
    # (the reference reads the original as the copy handed to it: ``num_sampled = num_sampled_copy``)
    aliases = [st for st in (fn.body if fn is not None else []) if isinstance(st, ast.Assign)
               and isinstance(st.value, ast.Name) and [ast.unparse(t) for t in st.targets] == [
                   _copy_source(h, st.value.id)]]
    # (and the device or dtype the reference reads off its first input, ``device = x_copy.device``: off another once
    # the copy is the entry's)
    found = [st for st in (fn.body if fn is not None else []) if isinstance(st, ast.Assign)
             and isinstance(st.value, ast.Attribute) and st.value.attr in ("device", "dtype")
             and isinstance(st.value.value, ast.Name) and st.value.value.id in names]
    read_itself = free_names([st for st in fn.body if st not in aliases and st not in found]) if fn is not None \
        else set(names)
    copies = {n for n in names if n not in h.tensors and n not in compared and n not in read_itself
              and _copy_source(h, n) is not None and len(made := _made_before_call(h, n)) == 1
              and _only_made_by(h, n, made[0], call_at)}
    return buffers | copies


def _entry_call(
    h: Harness,
    roles: dict,
    entry: str,
    inputs: list[dict],
    outputs: list[dict],
    scalars: list[dict],
    decisions: list[str],
    kernel_files: tuple[Path, ...] = (),
) -> tuple[list[str], bool]:
    """The entry's body: the launcher called as the harness calls it (with the test's statements
    that make what the call needs besides the task's tensors and scalars: a grid, launch settings),
    its result copied into the outputs (or written by it into output arguments); (lines, complete).
    Where the test is in the kernel's file (``kernel_files``), the file's own names are the entry's too."""
    sig = {s["name"] for s in inputs + outputs + scalars}
    prelude, unknown = [], []
    first = inputs[0]["name"] if inputs else outputs[0]["name"] if outputs else None
    order = {id(s): i for i, s in enumerate(h.stmts)}
    local: list[ast.stmt] = []   # the test's own statements the call needs (its grid, its launch settings)
    in_file = (
        {n for s in h.tree.body for n in _bound_names(s)} | bound_by_imports(import_lines(h.tree))
        if h.path in kernel_files else set()
    )
    todo, done = sorted(free_names([h.call])), set()
    while todo:
        n = todo.pop(0)
        if n in done or n in sig or n in (h.launcher, call_name(h.call)):
            continue
        done.add(n)
        kind = h.kinds.get(n, "")
        defining = _made_before_call(h, n)
        if kind.startswith("dtype:"):
            src = next((i["name"] for i in inputs if i["dtype"] == kind[6:]), None)
            prelude.append(f"{n} = {src}.dtype" if src else f"{n} = torch.{kind[6:]}")
        elif kind == "device" and first:
            prelude.append(f"{n} = {first}.device")
        elif kind.startswith("int:"):
            prelude.append(f"{n} = {kind[4:]}")
        elif n in h.consts and literal(h.consts[n]) is not None:
            prelude.append(f"{n} = {literal(h.consts[n])}")
        elif n in ("torch", "math"):
            continue
        elif (
            isinstance(h.call.func, ast.Attribute)
            and isinstance(h.call.func.value, ast.Name)
            and n == h.call.func.value.id
        ):
            continue
        elif defining and _entry_can_make(h, defining, sig):
            local += [s for s in defining if s not in local]
            todo += sorted(free_names(defining))
        elif n in in_file or hasattr(builtins, n):
            continue
        else:
            unknown.append(n)
    local.sort(key=lambda s: order[id(s)])
    if first:   # ``torch.zeros_like(x, device="cuda")``: on the device the harness hands the entry its tensors on
        local = [_OnInputsDevice(first).visit(copy.deepcopy(s)) for s in local]
    prelude += [ln for s in local for ln in ast.unparse(s).splitlines()]
    call = copy.deepcopy(h.call)
    if isinstance(call.func, ast.Subscript):    # a kernel launched by the test: the file's kernel, its grid
        call.func.value = ast.Name(h.launcher, ast.Load())
    else:
        call.func = ast.Name(h.launcher, ast.Load())
    lines = list(prelude)
    for o in outputs:
        role = roles.get(o["name"])
        if role and role[0] == "arg" and role[1] is not None:
            lines.append(f"{o['name']}.zero_()" if role[1] == 0 else f"{o['name']}.fill_({role[1]!r})")
            decisions.append(
                f"{h.path.name} hands the kernel {o['name']} filled with {role[1]!r}; the harness hands "
                "outputs poisoned, so the entry fills it first: keep that only if the kernel needs it"
            )
    results = [(o["name"], roles[o["name"]][1]) for o in outputs if roles.get(o["name"], ("",))[0] == "result"]
    text = ast.unparse(call)
    if results:
        # not ``result``: an output is often named so (the test's own name for what the launcher returns)
        lines.append(f"_returned = {text}")
        for oname, key in results:
            lines.append(f"{oname}.copy_({_of_returned(key, h.results)})")
        decisions.append(
            f"the kernel's launcher {h.launcher} returns a tensor it allocates; the entry copies it "
            f"into the harness's output ({', '.join(o for o, _ in results)}): a candidate may write "
            "into the output directly; decide whether the starting kernel should too"
        )
    else:
        lines.append(text)
    if unknown:
        decisions.append(
            f"the kernel call in {h.path.name} uses {', '.join(unknown)}, which the importer cannot "
            "trace: the entry raises until you write its call"
        )
        return [
            f"# TODO(import): the call in {h.path.name} was: {ast.unparse(h.call)}",
            "raise NotImplementedError('entry of an imported task: not written yet')",
        ], False
    return lines, True


CPU_PROBE_SECONDS = 15.0   # how long a reference that does not run on the meta device may run on the CPU, in all
#                            (CPU seconds of the importer's process)
# a draft is kept only where the reference, run on the meta device, takes at most this many CPU seconds: with the
# tensors' data gone, what is left is its work a call at a time, which a loop in Python over a size makes grow with
# it (a recurrence over T): each call is a launch on a GPU, and the harness runs the reference for every config
REFERENCE_PROBE_SECONDS = 2.0
# and where the meta device was cut short, or refused a value read on the host (``.item()`` in a loop over a size),
# and the reference is judged by its run on the CPU instead (its operations a chunk or a value at a time, each a
# launch on a GPU, each read a wait for it), at most this many seconds of a GPU's run, estimated from its calls of
# torch counted (``counted_calls``): FLA's chunked references need 2-5 s at the 100-300 MB of the timing window (a
# cumsum, 16x16 triangular solves and merges over 131,072-4,194,304 steps), and were refused at 2 s, below it; an
# H200 took 0.6-8.8 s a config of theirs
CPU_REFERENCE_SECONDS = 8.0
GROWN_BUDGET = 4           # times the probes' CPU seconds for the drafts around cases grown into the timing window
# a case is grown only as far as the reference, judged on the CPU, takes at most CPU_REFERENCE_SECONDS / this: the
# held-out drafts around the grown case go to twice its sizes, and a GPU's run took 0.57-3.6 times the estimate
GROWTH_HEADROOM = 3
# and one run of the reference, on the meta device or the CPU, at most (the budgets above are counted between runs:
# a reference that loops in Python over every element, at a size a probe tries, runs for hours)
ONE_PROBE_SECONDS = CPU_PROBE_SECONDS * GROWN_BUDGET
# the reference's runs on the meta device, all together: a reference that loops in Python over a size (a recurrence
# over chunks) takes seconds a run there, and the formulas' and the drafts' probes are dozens of runs
META_PROBE_SECONDS = 60.0
# the seen configs' top-up, after the drafts (a case grown into the window beside drafts around it), has budgets of
# its own, this much on the CPU: with a reference that loops over rows on the host, the held-out drafts' checks spend
# theirs, and a top-up refused for the budget alone fell back to the test's cases as written, below the window
TOP_UP_SECONDS = CPU_PROBE_SECONDS


def _flops_formula(fitter: Fitter, smallest: dict, probe_fn: Callable,
                   decisions: list[str]) -> tuple[str | int, bool]:
    """The reference's FLOPs as a formula of the sizes (``Fitter.number_formula``), fitted around ``fitter``'s base
    (the largest case), or, where no formula fits there, around the ``smallest``, kept if it gives the count at the
    base. Around the largest, the probes with a size doubled may run out of CPU time (an attention's sequence, its
    count growing as its square): that size then reads as one the count does not follow, and no product fits the
    others (vLLM's ``flash_prefill_attention``: its count at the largest case, 8.6 GFLOP, stood for every config,
    and configs of 10 us were taken for ones inside the timing window)."""
    def count(r: dict) -> int:
        return int(r["flops"])

    flops, ok = fitter.number_formula(count)
    if ok or smallest == fitter.base or not isinstance(flops, int):
        return flops, ok
    probe_fn.cpu_left[0] = CPU_PROBE_SECONDS  # type: ignore[attr-defined]   # its own budget, as the shapes' refit
    small = Fitter(smallest, probe_fn)
    if small.run() is None:
        return flops, False
    again, ok = small.number_formula(count)
    try:
        holds = ok and isinstance(again, str) and int(formula.evaluate(again, fitter.base)) == flops
    except (formula.FormulaError, ValueError, TypeError, ZeroDivisionError):
        holds = False
    if not holds:
        return flops, False
    fitter.used.update(formula.names_in(again))
    decisions.append(f"roofline.flops fitted around the smallest case ({again}; around the largest, its probes with "
                     "a size doubled were refused or ran out of time): it gives the largest case's count")
    return again, True


def _too_slow() -> str:
    """What a reference took where a draft or a growth is refused for its time."""
    return (f"more than {REFERENCE_PROBE_SECONDS:g} CPU seconds on the meta device, or an estimated "
            f"{CPU_REFERENCE_SECONDS:g} s of a GPU's run (its calls of torch counted at a fixed pace)")


def _budgets_anew(probe_fn: Callable, obs: Observer | None, cpu_seconds: float) -> float:
    """Give the probes of ``probe_fn`` (``_formula_probe``) and the test's observations (``obs``) budgets anew, the
    CPU runs of the reference ``cpu_seconds``; returns that."""
    probe_fn.cpu_left[0] = cpu_seconds  # type: ignore[attr-defined]
    probe_fn.meta_left[0] = META_PROBE_SECONDS  # type: ignore[attr-defined]
    if obs is not None:
        obs.renew()
    return cpu_seconds


# an input the reference reads this small a share of, or less, at the config the fit is around, is counted by the
# formula the fit gives its reads where no other tensor's elements give it
PART_READ = 1 / 4


def _read_formulas(fitter: Fitter, inputs: list[dict], outputs: list[dict]) -> dict[str, str]:
    """The bytes the reference reads of each input it reads a part of (vLLM's block tables, of which a token reads
    an entry; a token's row of a table of token ids; a KV cache written at a token's slots), as formulas over the
    sizes, each held to the input's own bytes (``min``): its element's bytes times the elements of another tensor
    (or of two: a cache written from keys and values), the least of those that are the reads or more at every
    probe of the fit that ran, grow along each size at least as the reads do, and leave out a size the input's
    own shape names (a table that the test's sizes read whole, and more than once, is read a part of at a
    grown config; an entry read a token where its index is valid: at most one a token); else, where it reads
    ``PART_READ`` of it or less at the config the fit is around and every probe ran, the fit's formula (a size
    whose doubling the original refuses, tokens past a cache's slots, reads as one the reads do not follow). Only
    where no probe was timed alone (its run counts no reads: ``read_bytes_mode``). An input it does not read at
    all stays whole: what that says of the kernel's reads is nothing."""
    run, env = fitter.run(), fitter.base
    if not isinstance(run, dict) or not run.get("reads"):
        return {}
    probes = [(env, run)] + [({**env, c: env[c] * 2}, fitter.run({c: env[c] * 2})) for c in fitter.ints]
    if any(isinstance(r, dict) and not r.get("reads") for _, r in probes):
        return {}
    ran = [(cfg, r) for cfg, r in probes if isinstance(r, dict)]

    def value(text: str, cfg: dict) -> int | None:
        try:
            return int(formula.evaluate(text, cfg))
        except (formula.FormulaError, ValueError, TypeError, ZeroDivisionError):
            return None

    out: dict[str, str] = {}
    for t in inputs:
        name, got = t["name"], run["reads"].get(t["name"])
        size, own = DTYPE_BYTES.get(t["dtype"], 4), product_formula(t["shape"])
        whole = value(f"{size} * {own}", env)
        if not got or not whole:
            continue
        others = [product_formula(u["shape"]) for u in [*inputs, *outputs] if u is not t]
        # another tensor's elements, or two others' (a cache of keys and values written from both)
        candidates = [f"{size} * {o}" for o in others] + [
            f"{size} * ({a} + {b})" for i, a in enumerate(others) for b in others[i + 1:]]

        def bounds(f: str, name: str = name, got: int = got, own: str = own) -> bool:
            """``f`` is the reads or more at every probe that ran, and grows along each size at least as they do
            (a token's entry read where its index is valid: at most one a token), and the input's own shape names
            a size that ``f`` does not (a table's rows: past some count of them, ``f`` is less than its bytes)."""
            base = value(f, env)
            if not base or not set(formula.names_in(own)) - set(formula.names_in(f)):
                return False
            for cfg, r in ran:
                v, read = value(f, cfg), r["reads"].get(name, 0)
                if v is None or v < read or read * base > v * got:
                    return False
            return True

        fits = [f for f in candidates if bounds(f)]
        text = min(fits, key=lambda f: value(f, env) or 0) if fits else None
        if text is None and got <= PART_READ * whole and len(ran) == len(probes):
            fitted, ok = fitter.number_formula(lambda r, n=name: int(r["reads"][n]))
            text = str(fitted) if ok else None
        if text is not None:
            out[name] = f"min({size} * {own}, {text})"
    return out


def _output_shapes(fitter: Fitter, unknown: list[dict], inputs: list[dict],
                   returns: list[str]) -> dict[str, tuple[str, list]]:
    """The dtype and shape formulas of each output in ``unknown`` the reference returns, fitted by ``fitter``'s
    probes (an input's shape where every dimension's formula is the same as its)."""
    run = fitter.run()
    shapes: dict[str, tuple[str, list]] = {}
    for o in unknown:
        idx = returns.index(o["_key"])
        if run is None or idx >= len(run["outputs"]):
            continue
        t = run["outputs"][idx]
        same = next((i["shape"] for i in inputs if i["shape"] and len(i["shape"]) == t.dim() and all(
            str(fitter.int_formula(lambda r, d=d, idx=idx: r["outputs"][idx].shape[d])) == str(x)
            for d, x in enumerate(i["shape"]))), None)
        shapes[o["name"]] = (DTYPE_NAMES.get(t.dtype, "float32"), same or [
            fitter.int_formula(lambda r, d=d, idx=idx: r["outputs"][idx].shape[d],
                               f"dimension {d} of output {o['name']}")
            for d in range(t.dim())])
    return shapes


def _shapes_missed(shapes: dict[str, tuple[str, list]], cases: list[dict], base: dict, probe: Callable[[dict], Any],
                   returns: list[str], unknown: list[dict], fitted_at: dict | None = None) -> tuple[str, int]:
    """The first of the test's ``cases`` (smallest first) where the reference's outputs do not have the shapes the
    formulas give, named (``case 1: out is (128,), the formulas say (2048,)``), "" where they hold at every case
    the reference ran at; and at how many cases they were seen to hold (``fitted_at``, where they were fitted, is
    not run again nor counted)."""
    held = 0
    for n, case in sorted(enumerate(cases), key=lambda nc: math.prod(nc[1].values())):
        params = {**base, **case}
        if params == fitted_at:
            continue
        try:
            got = probe(params)
        except (Exception, ProbeTimeout):  # noqa: BLE001 - a case the probe could not run: nothing to hold it to
            continue
        for o in unknown:
            idx = returns.index(o["_key"])
            if o["name"] not in shapes or idx >= len(got["outputs"]):
                continue
            try:
                want = tuple(int(formula.evaluate(x, params)) for x in shapes[o["name"]][1])
            except (formula.FormulaError, ValueError, TypeError):
                continue
            have = tuple(got["outputs"][idx].shape)
            if have != want:
                return f"case {n}: {o['name']} is {have}, the formulas say {want}", held
        held += 1
    return "", held


def _formula_probe(inputs: list[dict], fields: list[str], ref_fn: Callable | None, observer: Observer | None = None):
    """A probe for the Fitter: the reference run on meta tensors shaped by the formulas; where
    the test itself runs here (``observer``), the case must be one it makes inputs for, and a
    reference that does not run on the meta device runs on the CPU on the tensors the test makes."""
    import time

    dtypes = {v: k for k, v in DTYPE_NAMES.items()}
    cpu_left = [CPU_PROBE_SECONDS]      # the CPU runs of the reference, all together, stop past this
    meta_left = [META_PROBE_SECONDS]    # and its runs on the meta device
    meta_cut = [False]                  # a run there was cut for time: the CPU judges the reference from then on
    judged = [False]                    # the probes are growth's and the drafts' (not the formulas' of the cases)

    def probe(params: dict) -> Any:
        env = dict(params)
        ins = []
        for spec in inputs:
            shape = [int(formula.evaluate(x, env)) for x in spec["shape"]]
            if any(x < 0 for x in shape):
                raise ValueError("negative dimension")
            ins.append(torch.empty(shape, dtype=dtypes[spec["dtype"]], device="meta"))
        if observer is not None:
            seen = observer.observe(params)
            if seen.device == "meta":
                got = {t: v for t, v in seen.args} | dict(seen.kwargs)
                for spec, t in zip(inputs, ins):
                    v = got.get(spec["name"])
                    if isinstance(v, torch.Tensor) and tuple(v.shape) != tuple(t.shape):
                        raise ValueError(f"{spec['name']}: the formulas say {tuple(t.shape)}, the test makes "
                                         f"{tuple(v.shape)}")
        if ref_fn is None:
            return {"outputs": [], "flops": 0}
        t0 = time.process_time()
        meta_seconds: float | None = None     # the reference's run on the meta device, where it ran there
        cpu_seconds: float | None = None      # its run on the CPU, where the meta device was cut short for time
        peak: int | None = None               # the bytes the reference had alive at once (its temporaries counted)
        reads: Any = None                     # the bytes it read of each input, where its run was watched
        host_reads = False                    # timed alone on the CPU where the meta device refused its host reads
        # where the test runs here, a meta run is cut at REFERENCE_PROBE_SECONDS and the reference judged by a run on
        # the CPU instead: an operation on the meta device costs tens of times what it does on the CPU or as a launch
        # on a GPU (its shapes worked out in Python), and a loop over chunks the CPU ran in 0.08 s took 3.4 s there
        on_cpu_after = observer is not None and cpu_left[0] > 0
        try:
            if on_cpu_after and meta_cut[0]:   # cut once: the larger configs after it would be too
                raise ProbeTimeout("the meta device was cut short for time at a config before")
            try:
                with probe_limits(min(ONE_PROBE_SECONDS, meta_left[0],
                                        REFERENCE_PROBE_SECONDS if on_cpu_after else ONE_PROBE_SECONDS)), \
                        OnDevice("meta", factories=True), flop_counter() as counter, peak_bytes_mode() as live, \
                        read_bytes_mode({spec["name"]: t for spec, t in zip(inputs, ins)}) as reads:
                    out = ref_fn(*ins, *[params[f] for f in fields])
            finally:
                meta_left[0] -= time.process_time() - t0
            meta_seconds = time.process_time() - t0
            peak = live.peak
            if on_cpu_after and meta_seconds > REFERENCE_PROBE_SECONDS:
                # a run that ended past the limit before the timer stopped it (its tick is coarse) is one cut there
                raise ProbeTimeout(f"more than {REFERENCE_PROBE_SECONDS:g} CPU seconds on the meta device")
        except (Exception, ProbeTimeout) as exc:  # noqa: BLE001 - on the CPU, on the test's own tensors
            meta_seconds, reads = None, None
            if observer is None or cpu_left[0] <= 0 or (isinstance(exc, ProbeTimeout) and not on_cpu_after):
                raise
            cut = isinstance(exc, ProbeTimeout)
            meta_cut[0] = meta_cut[0] or cut
            t0 = time.process_time()   # this process's CPU time: the budget does not depend on the machine's load
            estimated: float | None = None
            seen = observer.observe(params, "cpu")
            got = {t: v for t, v in seen.args} | dict(seen.kwargs)

            def copies() -> list[torch.Tensor]:   # made in the run's limits: they count in its host memory
                return [got[spec["name"]].clone() if isinstance(got.get(spec["name"]), torch.Tensor) else
                        torch.zeros(tuple(t.shape), dtype=t.dtype) for spec, t in zip(inputs, ins)]
            try:
                if cut or judged[0]:
                    # judged by its calls of torch counted (``counted_calls``: the estimate of a GPU's run, the same
                    # on every machine and every run, where the run's CPU seconds move by a third), with no mode
                    # watching each operation's dispatch (those cost it tens of microseconds each): its FLOPs and
                    # temporaries not counted (its operations a chunk or a value at a time), its host memory held by
                    # ``probe_limits`` instead. A case's run, for the formulas, goes to its end (its outputs give them
                    # their shapes); a growth's or a draft's is stopped at the call that passes the limit that judges
                    # it. A reference that reads values on the host (``.item()`` in a loop over a size), which the
                    # meta device refuses, is judged so too for growth and the drafts (watched by the dispatch modes,
                    # vLLM's bincount over 131,072 tokens took 33 CPU seconds, 28 times its 1.2 alone, and the probes'
                    # 15 were spent before one held-out draft was tried). The run's time is bounded too, far past its
                    # limit: a loop in Python that calls nothing of torch is not counted
                    limit = CPU_REFERENCE_SECONDS if judged[0] else None
                    cost = CallCost()
                    with probe_limits(ONE_PROBE_SECONDS):
                        cpu = copies()
                        t1 = time.process_time()
                        try:
                            with counted_calls(limit, cost=cost):
                                out = ref_fn(*cpu, *[params[f] for f in fields])
                        finally:
                            # the budget is charged what the run was judged to cost, not the time it took (counted,
                            # it runs up to twice as long): the drafts one import tries are the drafts another tries
                            estimated = cost.seconds + (t1 - t0)
                    cpu_seconds, counter, host_reads = cost.seconds, None, not cut
                else:
                    with probe_limits(ONE_PROBE_SECONDS):
                        cpu = copies()
                        with flop_counter() as counter, peak_bytes_mode() as live, \
                                read_bytes_mode({spec["name"]: t for spec, t in zip(inputs, cpu)}) as reads:
                            out = ref_fn(*cpu, *[params[f] for f in fields])
                    peak = live.peak
            finally:
                cpu_left[0] -= time.process_time() - t0 if estimated is None else estimated
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        # a run on the CPU: each floating output's spread and median nonzero |value| there (``RangeModel.measured``)
        spread = [spread_of(o) if isinstance(o, torch.Tensor) and o.is_floating_point() and o.device.type != "meta"
                  and o.numel() > 1 else None for o in outs]
        return {"outputs": shapes_only(outs), "flops": None if counter is None else counter.get_total_flops(),
                "spread": spread,
                "meta_seconds": meta_seconds,
                "cpu_seconds": cpu_seconds,
                "host_reads": host_reads,
                "reads": None if reads is None else reads.read,
                "temporaries": None if peak is None else max(0, peak - sum(
                    o.nbytes for o in outs if isinstance(o, torch.Tensor)))}

    probe.cpu_left = cpu_left  # type: ignore[attr-defined]  # the caller gives the drafts' checks a budget anew
    probe.judged = judged  # type: ignore[attr-defined]  # set by the caller once the formulas are read
    probe.meta_left = meta_left  # type: ignore[attr-defined]
    return probe


def _output_magnitudes(observer: Observer | None, inputs: list[dict], outputs: list[dict], fields: list[str],
                       ref_fn: Callable | None) -> Callable[[dict], dict[str, tuple[float, float, int]] | None]:
    """Each floating-point output's largest |value|, RMS, count of values, standard deviation and median nonzero
    |value| at a config (``RangeModel``'s reads):
    the reference run on the CPU, within ``REFERENCE_PROBE_SECONDS``, on upcast copies of the tensors the test makes
    there (as the harness hands it its inputs); None where the test or the reference does not run there."""
    from arena.check.inputs import upcast

    def magnitudes(cfg: dict) -> dict[str, tuple[float, float, int]] | None:
        if observer is None or ref_fn is None:
            return None
        try:
            seen = observer.observe(cfg, "cpu")
            got = {t: v for t, v in seen.args} | dict(seen.kwargs)
            if not all(isinstance(got.get(spec["name"]), torch.Tensor) for spec in inputs):
                return None
            with probe_limits(REFERENCE_PROBE_SECONDS):
                ins = [upcast(got[spec["name"]].clone()) for spec in inputs]
                out = ref_fn(*ins, *[cfg[f] for f in fields])
        except (Exception, ProbeTimeout):  # noqa: BLE001 - a config the test or the reference refuses: no reading
            return None
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        read = {}
        for spec, t in zip(outputs, outs):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel():
                d = t.detach().double()
                read[spec["name"]] = (float(d.abs().max()), float(d.pow(2).mean().sqrt()), d.numel(),
                                      *(spread_of(d) if d.numel() > 1 else (0.0, median_nonzero(d))))
        return read

    return magnitudes


def _needs_given_dtypes(ref_fn: Callable, inputs: list[dict], fields: list[str], case: dict) -> str | None:
    """Why the reference must compute in the dtypes the test gives, not the upcast ones the harness calls it with
    (CONTRIBUTING.md: fp32 -> fp64, half -> fp32), or None. Run on the CPU at ``case`` (the smallest; the meta device
    does not check the dtypes of a matrix product), on the same draw both ways (integers zero: indices stay valid):
    it fails for a dtype mismatch on the upcast dtypes yet runs on the given ones, or its results differ beyond
    rounding (normwise by more than ``GIVEN_DTYPES_APART``): what the test wrote works only in its dtypes (vllm's
    MRoPE reference reads ``x1 = q_out[...].float()``, a copy of half values but the tensor itself in fp32, and
    writes ``q_out`` before reading ``x1`` again)."""
    from arena.check.compare import compare_output
    from arena.check.inputs import upcast

    dtypes = {v: k for k, v in DTYPE_NAMES.items()}
    if not any(dtypes.get(i["dtype"]) in (torch.float32, torch.float16, torch.bfloat16) for i in inputs):
        return None
    try:
        gen = torch.Generator().manual_seed(0)
        drawn = []
        for spec in inputs:
            shape, dt = [int(formula.evaluate(x, case)) for x in spec["shape"]], dtypes[spec["dtype"]]
            drawn.append(torch.randn(shape, generator=gen).to(dt) if dt.is_floating_point else
                         torch.zeros(shape, dtype=dt))
    except Exception:  # noqa: BLE001 - a shape the case does not give: nothing to run
        return None

    def call(up: bool) -> BaseException | list:
        ins = [upcast(t.clone()) if up else t.clone() for t in drawn]
        try:
            with torch.random.fork_rng(devices=[]):    # a reference that draws (a sampler's) draws alike both ways
                torch.manual_seed(0)
                got = ref_fn(*ins, *[case[f] for f in fields])
        except Exception as exc:  # noqa: BLE001 - what the reference does
            return exc
        got = list(got) if isinstance(got, (tuple, list)) else [] if got is None else [got]
        return got + [t for t, spec in zip(ins, inputs) if spec.get("inout")]

    up, given = call(True), call(False)
    if isinstance(up, RuntimeError) and re.search(r"dtype|Double|Float|Half|scalar type", str(up)) is not None \
            and not isinstance(given, BaseException):
        return ("mixes dtypes when called with upcast copies of the inputs (it computes in the dtypes the test "
                "gives)")
    if isinstance(up, BaseException) or isinstance(given, BaseException) or len(up) != len(given):
        return None
    # the harness's own comparison, normwise only: the upcast run's results against the given dtypes' run
    tol = {"atol": math.inf, "rtol": 0.0, "norm": GIVEN_DTYPES_APART}
    worst = 0.0
    for a, b in zip(up, given):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and \
                a.is_floating_point() and b.is_floating_point():
            got = compare_output("", a.detach().to(b.dtype), b.detach(), tol, poisoned=False)
            worst = max(worst, math.inf if got.norm_err is None else got.norm_err)
    if worst > GIVEN_DTYPES_APART:
        return (f"computes another result when called with upcast copies of the inputs (normwise {worst:.3g} from "
                "its result in the dtypes the test gives, far past their rounding: what it writes works only in "
                "those)")
    return None


# how far apart (normwise) the reference's results on upcast copies and on the test's own dtypes may be before the
# reference is taken to work only in the latter: bfloat16's rounding is about 4e-3, ten times its tolerance's 1e-2
GIVEN_DTYPES_APART = 0.1


def _in_given_dtypes(reference: str, inputs: list[dict], fields: list[str]) -> str:
    """reference() as a wrapper of the test's: it calls it on its inputs cast back to the dtypes the
    test gives and copies what that call updated in place back into the inout inputs."""
    floats = ("float32", "float16", "bfloat16")
    names = [i["name"] for i in inputs]
    given = [f"{i['name']}.to(torch.{i['dtype']})" if i["dtype"] in floats else i["name"] for i in inputs]
    lines = [
        "",
        "",
        f"def reference({', '.join([*names, *fields])}):",
        '    """The reference the test has (_reference_in_given_dtypes), on the inputs cast back to the dtypes the '
        'test gives:\n    it computes in those only (written by `arena tasks import`)."""',
        f"    given = [{', '.join(given)}]",
        f"    out = _reference_in_given_dtypes(*given{''.join(', ' + f for f in fields)})",
    ]
    lines += [f"    {i['name']}.copy_(given[{k}])" for k, i in enumerate(inputs) if i.get("inout")]
    lines.append("    return out")
    return reference.replace("\ndef reference(", "\ndef _reference_in_given_dtypes(", 1).rstrip("\n") + "\n".join(
        lines) + "\n"


def _load_reference_text(text: str, name: str) -> Callable | None:
    ns: dict[str, Any] = {"__name__": f"arena_import_reference_{name}"}
    try:
        exec(compile(text, f"<reference of {name}>", "exec"), ns)
    except Exception:  # noqa: BLE001 - the reference is checked after writing
        return None
    return ns.get("reference")


def _observed_inputs(
    h: Harness, inputs: list[dict], outputs: list[dict], base_case: dict, decisions: list[str],
    scratch: Iterable[str] = (),
) -> tuple[Observer | None, str | None]:
    """The shapes and dtypes of what the test hands the kernel, as observed by running its own
    statements up to the call (``observe``) for the base case and for each field doubled and
    tripled: a shape the test's text did not say is written as the formula those runs show; a
    tensor the importer could not read is added as an input. Where an input's values cannot be
    drawn from a plain init (made by code the importer does not read, or a shape only the run
    shows), every input is made by ``make_inputs``: the test's own statements, copied
    (returned as its text). (None, None) where the test does not run that far on this machine."""
    obs = Observer(h)
    try:
        base = obs.observe(base_case)
    except ObservationTimeout as exc:
        decisions.append(f"{exc} for the case {', '.join(f'{k} = {v}' for k, v in base_case.items())}: the shapes "
                         f"are read from the text of {h.path.name} only; what it runs before the call is as slow "
                         "where the harness makes the inputs (a loop in Python over a size): vectorise it")
        return None, None
    except Exception:  # noqa: BLE001 - the test does not run here: the static reading stands
        return None, None
    fitter = Fitter(base_case, lambda params: obs.observe(params, base.device))
    fitter._cache[()] = base
    by_text = {text: v for text, v in base.args}
    by_text.update({k: v for k, v in base.kwargs.items()})
    kw_names = {k.arg: ast.unparse(k.value) for k in h.call.keywords if k.arg}
    out_names = {o["name"] for o in outputs}
    known = {i["name"] for i in inputs}
    custom = False

    def getter(text: str, d: int) -> Callable[[Any], int]:
        def get(o: Any) -> int:
            vals = {t: v for t, v in o.args}
            vals.update({kw_names.get(k, k): v for k, v in o.kwargs.items()})
            return vals[text].shape[d]
        return get

    texts = [t for t, _ in base.args] + [kw_names.get(k, k) for k in base.kwargs]
    values = [v for _, v in base.args] + list(base.kwargs.values())
    for text, value in zip(texts, values):
        if not isinstance(value, torch.Tensor) or not re.fullmatch(r"[A-Za-z_]\w*", text) or text in scratch:
            continue
        if value.dtype not in DTYPE_NAMES:
            continue
        spec = next((s for s in inputs + outputs if s["name"] == text), None)
        shape = [fitter.int_formula(getter(text, d), f"dimension {d} of {text}") for d in range(value.dim())]
        if spec is None:
            spec = {"name": text, "dtype": DTYPE_NAMES[value.dtype], "shape": shape}
            inputs.append(spec)
            known.add(text)
            custom = True
            continue
        static = spec.get("shape")
        ok = static is not None and not any(str(x).startswith("TODO_") for x in static)
        if ok:
            try:
                ok = [int(formula.evaluate(x, base_case)) for x in static] == list(value.shape)
            except (formula.FormulaError, ValueError, TypeError):
                ok = False
        if not ok:
            spec["shape"] = shape
            if spec["name"] not in out_names:
                custom = True
        spec["dtype"] = DTYPE_NAMES[value.dtype]
    decisions[:] = [d for d in decisions if not re.match(r"the shape of \w+ could not be read", d)]
    decisions += fitter.inexact
    if any(t.note and t.name in known for t in h.tensors.values()):
        custom = True
    call_at = h.stmts.index(h.call_stmt)
    if any(_written_into(h, n, call_at) for n in known - out_names):
        custom = True
    if not custom:
        return obs, None
    # state the kernel updates in part that the test makes filled (a zeroed cache): drawn at random, so that a kernel
    # that writes where it should not fails
    drawn = {i["name"] for i in inputs if i.get("inout") and _drawn_state(h.tensors.get(i["name"]))}
    text, why = _make_inputs_text(h, [i["name"] for i in inputs], drawn)
    if text is None:
        decisions.append(f"the inputs' values are drawn from plain inits: {why}; write make_inputs if they must "
                         "be drawn as the test draws them")
        return obs, None
    for i in inputs:
        i["init"] = "custom"
    decisions[:] = [d for d in decisions if not (d.startswith("input ") and "the importer does not read" in d)]
    decisions.append(
        f"the inputs are made by make_inputs in reference.py: the statements of {h.path.name} that make them, copied "
        "(seeded from the harness's generator): read it"
    )
    return obs, text


def _make_inputs_text(h: Harness, names: list[str], drawn: Collection[str] = ()) -> tuple[str | None, str]:
    """make_inputs(config, generator, device): the test's statements that make ``names``, in order; those of
    ``drawn`` that the test makes filled (``torch.zeros(...)``) drawn instead (``torch.randn(...)``)."""
    order = {id(s): i for i, s in enumerate(h.stmts)}
    last = order[id(h.call_stmt)]
    # the loop's whole item (``for shape in SHAPES: M, N = shape``): its fields come from the config instead
    loop_names = {h.loop_target.id} - set(h.fields) if isinstance(h.loop_target, ast.Name) else set()
    stop = set(h.fields)
    chosen: list[ast.stmt] = []
    prelude: list[str] = []
    module_names = _module_names(h)
    bound = bound_by_imports(import_lines(h.tree))
    done: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n in done or n in stop:
            continue
        done.add(n)
        kind = h.kinds.get(n, "")
        if kind == "device":
            prelude.append(f"{n} = device")
            continue
        if kind.startswith("dtype:"):
            prelude.append(f"{n} = torch.{kind[6:]}")
            continue
        assigns = _writers(h, n, last, loop_names)
        if assigns:
            for s in assigns:
                if s not in chosen:
                    if _launches(s, h):
                        return None, f"{n} is made by a call into the kernel's file"
                    chosen.append(s)
                    todo += list(free_names([s]))
            continue
        if n in h.consts and literal(h.consts[n]) is not None:
            prelude.append(f"{n} = {literal(h.consts[n])}")
            continue
        if n in module_names or n in bound or hasattr(builtins, n) or n in ("torch", "F", "math"):
            continue
        return None, f"{n} (used where the test makes its inputs) cannot be traced"
    chosen.sort(key=lambda s: order[id(s)])

    class _Device(ast.NodeTransformer):
        name = "device"

        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if isinstance(node.value, str) and node.value.split(":")[0] in ("cuda", "hip"):
                return ast.copy_location(ast.Name(self.name, ast.Load()), node)
            return node

    class _HelperDevice(_Device):
        name = "_DEVICE"  # the helpers are module functions: make_inputs sets where they make tensors

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
            # a default of "cuda" is read when the function is called, not when it is defined
            args = node.args.args[len(node.args.args) - len(node.args.defaults):]
            for i, (a, d) in enumerate(zip(args, list(node.args.defaults))):
                if isinstance(d, ast.Constant) and str(d.value).split(":")[0] in ("cuda", "hip"):
                    node.args.defaults[i] = ast.Constant(None)
                    node.body.insert(0, ast.parse(f"if {a.arg} is None:\n    {a.arg} = _DEVICE").body[0])
            self.generic_visit(node)
            return ast.fix_missing_locations(node)

    class _Defined(ast.NodeTransformer):
        """torch.empty(...) -> torch.zeros(...): an input the test leaves uninitialised is the same for a
        seed; a helper's own ``torch.manual_seed(42)`` is dropped: the seed make_inputs sets stands."""
        changed = False

        def visit_Expr(self, node: ast.Expr) -> ast.AST:
            if isinstance(node.value, ast.Call) and dotted_name(node.value.func) in SEEDERS:
                _Defined.changed = True
                return ast.copy_location(ast.Pass(), node)
            return self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if dotted_name(node.func) in ("torch.empty", "torch.empty_like"):
                node.func = ast.Attribute(ast.Name("torch", ast.Load()), dotted_name(node.func)[6:].replace(
                    "empty", "zeros"), ast.Load())
                _Defined.changed = True
            return node

    class _Reseeded(ast.NodeTransformer):
        """``RandomState(17)``, ``np.random.default_rng(0)``: a generator of the test's own fixed seed draws the
        same inputs for every seed; seeded from the harness's instead (``seed``, drawn below)."""

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if call_name(node) in ("RandomState", "default_rng") and \
                    re.match(r"(np\.|numpy\.)?(random\.)?\w+$", dotted_name(node.func) or ""):
                node.args, node.keywords = [ast.Name("seed", ast.Load())], []
                _Defined.changed = True
            return node

    class _Drawn(ast.NodeTransformer):
        """``key_cache = torch.zeros(...)`` -> ``torch.randn(...)``, for the names of ``drawn``."""

        def visit_Assign(self, node: ast.Assign) -> ast.AST:
            f = node.value.func if isinstance(node.value, ast.Call) else None
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in drawn \
                    and f is not None and dotted_name(f) in FILLED_DRAWN_CALLS:
                like = dotted_name(f).endswith("_like")
                node.value.func = ast.Attribute(ast.Name("torch", ast.Load()), "randn_like" if like else "randn",
                                                ast.Load())
            return node

    body = [_Drawn().visit(_Reseeded().visit(_Defined().visit(_Device().visit(copy.deepcopy(s))))) for s in chosen]
    zeroed = _Defined.changed
    helpers = []
    for s in module_defs(h.tree, free_names(body), {h.function, *h.consts}):
        _Defined.changed = False
        d = _Defined().visit(copy.deepcopy(s))
        if _Defined.changed:
            d.end_lineno = None    # written as the importer rewrote it, not as the test's text has it
            zeroed = True
        helpers.append(d if _Defined.changed else s)
    for s in helpers:
        if _launches(s, h):
            return None, f"{getattr(s, 'name', 'a helper')} calls the kernel's file"
    # a helper of the test named as what reference.py defines (vllm's runners make their inputs in ``make_inputs``):
    # renamed, as the reference's own copy of the test's helpers is
    clash = {st.name for st in helpers if isinstance(st, ast.FunctionDef)} & {"reference", "make_inputs"}
    if clash:
        class _Own(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.Name:
                node.id = f"{node.id}_of_test" if node.id in clash else node.id
                return node

            def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
                self.generic_visit(node)
                node.name = f"{node.name}_of_test" if node.name in clash else node.name
                return node

        body = [_Own().visit(st) for st in body]
        helpers = [_Own().visit(copy.deepcopy(st)) for st in helpers]
        for st in helpers:
            st.end_lineno = None    # written as renamed, not as the test's text has it
    lines = ["", "", "def make_inputs(config, generator, device):",
             f'    """The inputs as {h.path.name} ({h.function}) makes them, its statements copied (written by '
             '`arena tasks import`; read it);\n    the seed is drawn from the harness\'s generator.'
             + ("\n    What the test makes with torch.empty is made with torch.zeros, its helpers' own seeds are "
                "dropped and its NumPy generators seeded with the seed: the inputs are the same for a seed, and "
                "differ between seeds." if zeroed else "") + '"""']
    moved = [_HelperDevice().visit(copy.deepcopy(s)) for s in helpers]
    on_device = [ast.dump(a) for a in moved] != [ast.dump(b) for b in helpers]
    if on_device:
        lines += ["    global _DEVICE", "    _DEVICE = device"]
    lines += [f"    {f} = config[{f!r}]" for f in h.fields]
    lines += [f"    {p}" for p in sorted(set(prelude))]
    lines += ["    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator, device=generator.device))",
              "    devices = [torch.device(device).index or 0] if torch.device(device).type == 'cuda' else []",
              "    with torch.random.fork_rng(devices=devices):",
              "        torch.manual_seed(seed)"]
    stmts_text = [ln for s in body for ln in ast.unparse(s).splitlines()]
    if re.search(r"\b(np|numpy)\.random\b|RandomState", "\n".join(stmts_text + [ast.unparse(s) for s in helpers])):
        # the test draws with NumPy's global generator too: seeded the same way, its state given back after
        lines += ["        import numpy", "        numpy_state = numpy.random.get_state()",
                  "        numpy.random.seed(seed)", "        try:"]
        lines += [f"            {ln}" for ln in stmts_text]
        lines += ["        finally:", "            numpy.random.set_state(numpy_state)"]
    else:
        lines += [f"        {ln}" for ln in stmts_text]
    lines.append("    return {" + ", ".join(f"{n!r}: {n}.to(device).contiguous()" for n in names) + "}")
    text = "\n".join(lines) + "\n"
    if on_device:
        text = ('\n\n_DEVICE = "cuda"  # the helpers below make tensors here (set by make_inputs)\n'
                + "".join("\n\n" + ast.unparse(s) + "\n" for s in moved) + text)
    elif helpers:
        text = "\n\n" + join_statements(h.text, helpers) + "\n" + text
    return text, ""


def _harness_task(aka: AkaFolder, h: Harness, name: str, decisions: list[str], stub_reason: str = "",
                  keep: Iterable[str] = (), scratch: bool = False):
    """Signature, reference, configs and roofline from a read harness (both categories); the last of
    what it returns: the sizes the growth into the timing window changed (``keep``: sizes it leaves as
    the cases have them), and the spare held-out drafts (``draft_configs``). ``scratch``: the buffers the test
    hands the kernel and never reads are the entry's to make (a Python entry), not inputs."""
    made = sorted(_scratch_buffers(h)) if scratch else []
    inputs, outputs, scalars, roles = _harness_signature(h, decisions, made)
    buffers = [n for n in made if _copy_source(h, n) is None]
    copies = [f"{n} (of {_copy_source(h, n)})" for n in made if n not in buffers]
    if buffers:
        decisions.append(
            f"{', '.join(buffers)}: made by {h.path.name} empty or filled with a constant and handed to the kernel, "
            "but not read by the other side of its comparison: the result does not depend on "
            f"{'their values' if len(buffers) > 1 else 'its value'} as the test makes "
            f"{'them' if len(buffers) > 1 else 'it'} (a buffer the launcher writes, a workspace, a setting the test "
            f"fixes). The entry makes {'them' if len(buffers) > 1 else 'it'} as the test does; not inputs of the task"
        )
    if copies:
        decisions.append(
            f"{', '.join(copies)}: a copy {h.path.name} hands the kernel, which may change it, and does not compare: "
            "the original is the task's input, and the entry makes the copy as the test does"
        )
    base_case = max(h.cases, key=lambda c: math.prod(c.values())) if h.cases else {}
    obs, maker = _observed_inputs(h, inputs, outputs, base_case, decisions, made)
    first_float: dict[str, str] = {}
    for i in inputs:
        first_float.setdefault(i["dtype"], i["name"])
    returns = [o.get("_key", o["name"]) for o in outputs]   # the compared keys in the signature's order
    reference, why = _reference_from_harness(h, [i["name"] for i in inputs], first_float, returns)
    if reference is None:
        decisions.append(f"reference.py is a stub: {why}; write the reference")
        reference = _reference_stub([i["name"] for i in inputs], h.fields, why)
    else:
        decisions.append(
            f"reference.py is what {h.path.name} ({h.function}) compares with, copied out of it: read "
            "it (it is called with upcast copies of the inputs: compute in the dtype given)"
        )
    ref_fn = _load_reference_text(reference, name) if "NotImplementedError" not in reference else None
    smallest = min(h.cases, key=lambda c: math.prod(c.values())) if h.cases else base_case
    given_why = _needs_given_dtypes(ref_fn, inputs, h.fields, smallest) if ref_fn is not None else None
    if given_why is not None:
        reference = _in_given_dtypes(reference, inputs, h.fields)
        ref_fn = _load_reference_text(reference, name)
        decisions.append(f"the reference copied from the test {given_why}: reference() casts its inputs back to "
                         "those first")
    if maker is not None:
        # the test's imports make_inputs reads that the reference's own statements do not (``RandomState``)
        have = bound_by_imports([ln for ln in reference.splitlines() if ln.startswith(("import ", "from "))])
        used = free_names(ast.parse(maker).body)
        extra = [i for i in dict.fromkeys(import_lines(h.tree)) if not _imports_beside(i, h.path)
                 and (bound_by_imports([i]) & used) - have]
        future = re.match(r"(from __future__ import [^\n]*\n)*", reference).end()   # those stay first
        reference = reference[:future] + "".join(f"{i}\n" for i in extra) + reference[future:].rstrip("\n") + \
            "\n" + maker
        ref_fn = _load_reference_text(reference, name) if ref_fn is not None else None
    probe_fn = _formula_probe(inputs, h.fields, ref_fn, obs)
    fitter = Fitter(base_case, probe_fn)
    run = fitter.run()
    unknown = [o for o in outputs if o["shape"] is None]
    shapes = _output_shapes(fitter, unknown, inputs, returns) if ref_fn is not None and run is not None else None
    smallest_base = {**base_case, **smallest}
    if shapes and smallest_base != base_case:
        # fitted around the largest case, a size whose doubled probe fails there (out of time: a reference that reads
        # values on the host, a value at a time) reads as one the outputs do not follow: vLLM's slot mappings came
        # out as ``512 * num_reqs`` (the largest case's query length) for ``num_reqs * query_len``. The formulas are
        # checked at the test's cases, and fitted again around the smallest where one does not hold there. The
        # reference's CPU runs get a budget of their own for it (the fitting's may be spent; growth's is set anew)
        probe_fn.cpu_left[0] = CPU_PROBE_SECONDS  # type: ignore[attr-defined]
        wrong, _ = _shapes_missed(shapes, h.cases, base_case, probe_fn, returns, unknown, fitted_at=base_case)
        if wrong:
            small = Fitter(smallest_base, probe_fn)
            again = _output_shapes(small, unknown, inputs, returns) if small.run() is not None else None
            probe_fn.cpu_left[0] = CPU_PROBE_SECONDS  # type: ignore[attr-defined]
            missed, held = (_shapes_missed(again, h.cases, base_case, probe_fn, returns, unknown,
                                           fitted_at=smallest_base) if again is not None else ("", 0))
            if again is not None and not missed and held:     # seen to hold at a case other than its own
                shapes, fitter = again, small
                decisions.append(f"the outputs' shapes fitted around the largest case missed the test's {wrong} "
                                 "(its probes with a size doubled there were refused or ran out of time): fitted "
                                 "around the smallest")
            else:
                decisions.append(f"the outputs' shapes fitted around the largest case miss the test's {wrong}: "
                                 "write them in task.yaml")
    for o in unknown:
        if shapes is not None and o["name"] in shapes:
            o["dtype"], o["shape"] = shapes[o["name"]]
        else:
            o["shape"] = [f"TODO_{o['name']}_shape"]
            decisions.append(
                f"the shape of output {o['name']} is not known (no reference to run): write it in task.yaml"
            )
    for o in outputs:
        o.pop("_key", None)
    decisions += fitter.inexact
    flops: str | int | None = None
    counted = True     # whether ``flops`` is a count for every config (not the largest case's alone)
    if ref_fn is not None and run is not None and run.get("flops") is None:
        decisions.append("roofline.flops was not counted: the reference's run on the meta device was cut for time, "
                         "and its run on the CPU is not watched (a loop over chunks): write the count")
    elif ref_fn is not None and run is not None:
        flops, ok = _flops_formula(fitter, {**base_case, **smallest}, probe_fn, decisions)
        if not ok:
            decisions.append(f"roofline.flops is the count of the largest case ({flops}): write it as a formula "
                             "(the configs were grown by their bytes alone: a count of one config is none of "
                             "another's)")
            counted = False

    # an input the reference reads a part of is counted by what it reads, in the roofline and in the bytes that grow a
    # case into the timing window (the bytes bound counts what a run holds: every tensor whole, ``whole_bytes``)
    reads = _read_formulas(fitter, inputs, outputs) if ref_fn is not None and run is not None else {}
    if reads:
        decisions.append(f"roofline.bytes counts {', '.join(reads)} by what the reference reads of "
                         f"{'them' if len(reads) > 1 else 'it'} ({'; '.join(reads.values())}), not whole: a part of "
                         f"{'each' if len(reads) > 1 else 'it'} at some sizes (a kernel reads no more than it must)")

    slow: list[dict] = []    # drafts the reference runs too slowly for (a loop in Python over a size)
    slow_made: list[dict] = []   # drafts the test's statements before its kernel call run too slowly for

    probed = once_per_config(fitter.probe)     # each config's probe, or what it raised: valid() and temporaries()
    # the outputs a range holds (half precision), as their values follow the sizes from the largest case
    dtypes = {v: k for k, v in DTYPE_NAMES.items()}
    limits = {o["name"]: float(torch.finfo(dtypes[o["dtype"]]).max) for o in outputs
              if o.get("dtype") in dtypes and dtypes[o["dtype"]].is_floating_point
              and torch.finfo(dtypes[o["dtype"]]).max < 1e6}
    # and held above what their tolerance asks, at the atol the task compares them with (the test's, or the dtype's
    # default): the same half-precision outputs, whose reads the range takes already. An fp32 output's atol is scaled
    # to its outputs where the CPU reads them (``rounding_tolerance``: the softmax family passed on GPUs so)
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    floors = {o["name"]: float(h.tolerance.get("atol", DEFAULT_TOLERANCE[o["dtype"]]["atol"])) for o in outputs
              if o["name"] in limits and o["dtype"] in DEFAULT_TOLERANCE}
    in_range = RangeModel(_output_magnitudes(obs, inputs, outputs, h.fields, ref_fn), base_case,
                          [f for f in h.fields if base_case.get(f, 0) >= MIN_VARIED], limits,
                          lambda cfg: {o["name"]: count_elements([o], {**base_case, **cfg}) for o in outputs
                                       if o["name"] in limits}, floors, [{**base_case, **c} for c in h.cases])

    def probe_at(cfg: dict) -> Any:
        return probed({**base_case, **cfg})

    def valid(cfg: dict) -> bool:
        got = probe_at(cfg)
        if isinstance(got, ObservationTimeout):
            slow_made.append(cfg)
            return False
        if isinstance(got, ProbeTimeout):
            slow.append(cfg)
            return False
        if isinstance(got, BaseException):
            return False
        if got is not None and ((got.get("meta_seconds") or 0) > REFERENCE_PROBE_SECONDS
                                or (got.get("cpu_seconds") or 0) > CPU_REFERENCE_SECONDS):
            slow.append(cfg)
            return False
        return got is not None and in_range(cfg) and measured_past(cfg, got) is None

    def measured_past(cfg: dict, got: dict) -> str | None:
        """Why the outputs of a probe that ran on the CPU at ``cfg`` are too small for their tolerance, or None."""
        spread = got.get("spread") or []
        return in_range.measured({**base_case, **cfg}, {o["name"]: v for o, v in zip(outputs, spread)
                                                        if v is not None})

    tensors = inputs + [{**o, "_output": True} for o in outputs]

    def size(cfg: dict) -> int:
        try:
            return count_elements(tensors, cfg)
        except (formula.FormulaError, ValueError, TypeError):
            return 10**18

    def whole_bytes(cfg: dict) -> int:
        """The bytes of every input and output at ``cfg``, whole: what its run holds (the bytes bound)."""
        try:
            return count_bytes(tensors, cfg)
        except (formula.FormulaError, ValueError, TypeError):
            return 10**18

    def nbytes(cfg: dict) -> int:
        """The bytes a run at ``cfg`` moves: an input the reference reads a part of counted by what it reads (the
        timing window's, and the roofline's)."""
        try:
            return (count_bytes([t for t in tensors if t["name"] not in reads or t.get("_output")], cfg)
                    + sum(int(formula.evaluate(f, cfg)) for f in reads.values()))
        except (formula.FormulaError, ValueError, TypeError):
            return 10**18

    def work(cfg: dict) -> float:
        try:
            return float(formula.evaluate(flops, cfg)) if flops is not None and counted else 0.0
        except (formula.FormulaError, ValueError, TypeError):
            return 0.0

    def temporaries(cfg: dict) -> int:
        """The bytes the reference has alive at once past its outputs' (an attention's scores), where its probe ran
        (0 where it did not: valid() refuses that config)."""
        got = probe_at(cfg)
        return 0 if got is None or isinstance(got, BaseException) else got.get("temporaries") or 0

    enough = in_window(nbytes, work)
    floor = in_window(nbytes, work, 1 / WINDOW_MARGIN)    # the check's own 100 MB

    # a case past the bytes bound, the reference's temporaries counted (an attention's scores at the test's longest
    # sequence), is no seen config: the others are, or, where every case is past it, the largest scaled down. Only
    # where the reference runs on the meta device: on the CPU, each case's probe would run at its full size
    over: list[dict] = []
    if run is not None and run.get("meta_seconds") is not None:
        over = [c for c in h.cases if whole_bytes({**base_case, **c}) + temporaries(c) > MAX_CONFIG_BYTES]
        if over and len(over) < len(h.cases):
            h = dataclasses.replace(h, cases=[c for c in h.cases if c not in over])
            base_case = {**base_case, **max(h.cases, key=lambda c: math.prod(c.values()))}

    vary = [f for f in h.fields if base_case[f] >= MIN_VARIED]
    budget = probe_fn.cpu_left[0] = CPU_PROBE_SECONDS
    probe_fn.judged[0] = True
    # the test's cases check correctness: they are often far below the timing window. The seen configs are the cases
    # below it grown into it (where the reference accepts the sizes), those inside it as they are, the held-out ones
    # drafts around the largest of them
    growth: list[tuple[int, dict, dict]] = []      # (case number, the case, the case grown into the window)
    kept = [f for f in vary if f in set(keep)]       # sizes a block follows: not grown
    growing = [f for f in vary if f not in kept]
    below = [i for i, c in enumerate(h.cases) if not enough({**base_case, **c})]
    stopped: list[tuple[dict, str]] = []       # where growth was refused, and why (said where no case grew)

    def refusal(cfg: dict) -> str:
        """Why growth stops at ``cfg`` (asked as it stops: the CPU budget of the probes is the growth's then)."""
        got = probe_at(cfg)
        if isinstance(got, ObservationTimeout):
            return f"{got} there (a loop in Python over a size is as slow where the harness makes the inputs)"
        if isinstance(got, ProbeTimeout) or cfg in slow:
            return (f"the reference took {_too_slow()} there (a loop in Python over a size is as slow on a GPU, "
                    "where each operation is a launch): vectorise it")
        if isinstance(got, BaseException):
            what = f"{type(got).__name__}: {(str(got).splitlines() or [''])[0][:160]}"
            if obs is not None and probe_fn.cpu_left[0] <= 0:
                return (f"the reference does not run on the meta device ({what}), and its runs on the CPU had taken "
                        f"the {CPU_PROBE_SECONDS:g} CPU seconds the probes may take (a reference that reads values "
                        "on the host, in a loop over a size, is as slow in the harness): vectorise it")
            return f"the reference raised {what} there"
        if got is None:
            return "the reference did not run there"
        out_of_range = in_range.past(cfg) or measured_past(cfg, got)
        if out_of_range:
            return out_of_range
        if costly(cfg) is not None:
            how = ("it reads values on the host, a value at a time" if isinstance(got, dict) and got.get("host_reads")
                   else "its operations a chunk at a time")
            return (f"the reference would take an estimated {costly(cfg):.2g} s there on a GPU (its calls of torch "
                    f"counted at a fixed pace: {how}): the held-out drafts around a grown config, up to twice its "
                    f"sizes, are held to {CPU_REFERENCE_SECONDS:g} (a loop in Python over a size is as slow in the "
                    "harness): vectorise it")
        return (f"it is past the {MAX_CONFIG_BYTES / 1e9:g} GB a config may move, the reference's temporaries "
                "counted")

    def costly(cfg: dict) -> float | None:
        """The estimated seconds of a GPU's run of the reference at ``cfg`` where they leave the drafts around it no
        room (judged on the CPU: the meta device was cut short, or refused its reads on the host), else None."""
        got = probe_at(cfg)
        cpu = got.get("cpu_seconds") if isinstance(got, dict) else None
        return cpu if cpu is not None and cpu > CPU_REFERENCE_SECONDS / GROWTH_HEADROOM else None

    def grows(cfg: dict) -> bool:
        ok = valid(cfg) and whole_bytes(cfg) + temporaries(cfg) <= MAX_CONFIG_BYTES and costly(cfg) is None
        if not ok:
            stopped.append((cfg, refusal(cfg)))
        return ok

    if h.cases and growing and below:
        growth = [(i, h.cases[i], g) for i, _, g in
                  grown_cases([{**base_case, **c} for c in h.cases], growing, grows, nbytes, enough, floor,
                              work, in_range.follows)]
        if growth:
            # the largest grown case, of those with no size of 1 where there is one: drafts around a softmax over
            # one column are as degenerate as it
            base_case = max((g for _, _, g in growth), key=lambda g: (all(g[f] > 1 for f in vary), nbytes(g)))
        # the drafts' checks get a budget of their own, for configs the size of the grown ones (and the test's
        # statements, and the reference on the meta device, theirs anew)
        budget = _budgets_anew(probe_fn, obs, CPU_PROBE_SECONDS * (GROWN_BUDGET if growth else 1))
    # a case with a size of 1 (softmax over one column) often gives an output the degeneracy checks refuse
    smoke_case = min([c for c in h.cases if all(v > 1 for v in c.values())] or h.cases,
                     key=lambda c: size({**base_case, **c})) if h.cases else None
    # a size every case of the test has alike (a head size of 64): the smoke config keeps it (the kernel may assert it)
    alike = [f for f in vary if len(h.cases) > 1 and len({c.get(f) for c in h.cases}) == 1]
    unwritten = [t["name"] for t in tensors if any(str(x).startswith("TODO_") for x in t["shape"])]
    if unwritten:   # a config's size is not known: nothing to draft around, scale or shrink
        seen_drafts, held, spare = [{"name": "largest", **base_case}], [], []
        smoke = [{"name": "smoke", **base_case, **(smoke_case or {})}]
        notes = [f"no config was drafted: the shape of {', '.join(unwritten)} is not known (TODO_*); write it in "
                 "task.yaml, then the held-out configs"]
    else:
        seen_drafts, held, smoke, notes, spare = draft_configs(base_case, vary, valid, size, "largest", whole_bytes,
                                                               temporaries=temporaries,
                                                               smoke_from=smoke_case, smoke_keeps=alike)
    if vary and len(held) < 4 and probe_fn.cpu_left[0] <= 0:
        decisions.insert(0, f"{len(held)} held-out configs could be drafted: the reference does not run on the meta "
                            f"device, and its runs on the CPU took the {budget:.0f} CPU seconds the drafts' "
                            "checks may take (a reference that loops in Python is as slow in the harness): make it "
                            "vectorised, or write the held-out configs")
    elif vary and len(held) < 4 and (slow or slow_made):
        why = ("the test's statements before its kernel call ran past the CPU seconds an observation may take "
               "(a loop in Python over a size is as slow where the harness makes the inputs)" if slow_made else
               f"the reference took {_too_slow()}, an operation at a time (a loop in Python over a size is as slow "
               "on a GPU, where each is a launch)")
        decisions.insert(0, f"{len(held)} held-out configs could be drafted: at the sizes tried, {why}: make it "
                            "vectorised, or write the held-out configs")
    seen = [{"name": f"case{i}", **c} for i, c in enumerate(h.cases)] or [{"name": "case0"}]
    if over:
        what = (f"the reference has {(whole_bytes({**base_case, **over[0]}) + temporaries(over[0])) / 2**30:.1f} GiB "
                f"alive at once at {', '.join(f'{k} = {v}' for k, v in over[0].items())}")
        if len(over) == len(h.cases):
            seen = seen_drafts
            notes.insert(0, f"every case of {h.path.name} is past the {MAX_CONFIG_BYTES / 1e9:g} GB a config may "
                            f"move, the reference's temporaries counted ({what}): the seen configs are drafts around "
                            "the largest scaled down")
        else:
            notes.insert(0, f"{len(over)} of the cases of {h.path.name} are past the {MAX_CONFIG_BYTES / 1e9:g} GB "
                            f"a config may move, the reference's temporaries counted ({what}): not seen configs")
    if growth:
        seen = [{"name": f"case{i}", **{k: g[k] for k in c}, **grown_from(c, g)} for i, c, g in growth]
        # cases that grow into the same config (sizes in one proportion) leave room for drafts around the largest
        short = [g for _, _, g in growth if not enough(g)]
        _budgets_anew(probe_fn, obs, TOP_UP_SECONDS)
        seen = topped_up(seen, seen_drafts[1:], growing, valid, nbytes,
                         (lambda c: enough(c) or floor(c)) if short else enough,
                         fallback=[{"name": f"case{i}", **c} for i, c in enumerate(h.cases)])
        small = [{**base_case, **h.cases[i]} for i in below]
        notes.insert(0, f"the cases of {h.path.name}"
                        + (f" {', '.join(f'case{i}' for i in below)}" if len(below) < len(h.cases) else "")
                        + f" move at most {max(nbytes(c) for c in small) / 1e6:.1f} MB "
                        f"({max(work(c) for c in small) / 1e9:.2g} GFLOP), below the timing window (>= 20 us on an "
                        f"H100): seen.yaml holds {len(growth)} of them grown into it (their sizes doubled in turn "
                        f"until a case moves {WINDOW_BYTES / 1e6:.0f} MB or needs {WINDOW_FLOPS / 1e9:.0f} GFLOP, each "
                        "size accepted by the reference), heldout.yaml drafts around the largest; the smallest "
                        "case is the smoke config"
                        + (f"; {len(short)} stopped short of that at {max(nbytes(g) for g in short) / 1e6:.0f} MB "
                           f"or less, inside the check's {WINDOW_BYTES / WINDOW_MARGIN / 1e6:.0f} MB still ("
                           + (stopped[-1][1] if stopped else "the reference refused a larger size") + ")"
                           if short else "")
                        + (f" ({', '.join(kept)} kept as the cases have them: the starting kernel's "
                           "compile-time block sizes follow them)" if kept else ""))
    while len(seen) < 3 and h.cases:
        seen.append(
            {
                "name": f"draft-{len(seen)}",
                **{k: seen[-1][k] * 2 for k in h.cases[-1]},
                "#": "DRAFT: the config before it doubled",
            }
        )
    if smoke_case is not None and config_params(smoke[0]) == {**base_case, **smoke_case}:
        smoke[0]["#"] = f"the smallest case of {h.path.name}"
    for refused, why in (
            (slow, f"the reference took {_too_slow()} there, an operation at a time (a loop in Python over a size "
                   "is as slow on a GPU, where each operation is a launch): vectorise it"),
            (slow_made, "{} there (a loop in Python over a size is as slow where the harness makes the inputs): "
                        "vectorise the test's statements that make them")):
        if refused:
            smallest = min(refused, key=size)
            notes.append(f"drafts at {', '.join(f'{k} = {v}' for k, v in smallest.items() if k in vary)} and larger "
                         f"were not kept: {why.format(probe_at(smallest))} to draft larger configs")
    decisions += notes
    decisions += h.notes
    if h.cases and not growth:
        refused = _largest_refused(stopped, growing, nbytes)
        decisions.insert(
            0,
            f"configs/seen.yaml holds the {len(h.cases)} cases of {h.path.name} (test shapes, often "
            "far below the timing window of >= 20 us on an H100): replace them with production shapes; "
            "heldout.yaml holds drafts"
            + (f" (they were not grown: {', '.join(kept)} set the starting kernel's "
               "compile-time block sizes, and the other sizes alone did not reach the window"
               + (f": {refused}" if refused else "") + ")"
               if kept else "")
            + (f" (they were not grown: {refused})" if refused and growing and below and not kept else ""),
        )
    roofline, rnotes = roofline_draft(tensors, flops, base_case, reads)
    decisions += rnotes
    space = shape_space_draft(base_case, vary)
    decisions.insert(
        1,
        "shape_space is a draft ([value / 8, 4 * value] around the largest case): add the constraints the kernel needs",
    )
    # the sizes the growth doubled; where no case grew, those it tried (a refusal along a size the starting kernel's
    # blocks follow, FLA's fused recurrence's K, tried first, had left its T and V, which grow with K kept, ungrown)
    grew = sorted({k for _, c, g in growth for k in c if c[k] != g[k]}) or (
        sorted({k for cfg, _ in stopped for k in growing if any(cfg.get(k, 0) > c.get(k, 0) for c in h.cases)})
        if below and not kept else [])
    cases = {f"case{i}": c for i, c, g in growth if c != {k: g[k] for k in c}}

    def top_up(kept: list[dict], want: int = 3) -> list[dict]:
        """The grown seen configs a check left (the degeneracy rules, the starting kernel's probe), topped up to
        ``want`` as the growth's were (``topped_up``; ``short``: the growths that stopped short of the window, where
        there was growth), its budgets anew."""
        if not growth:
            return kept
        _budgets_anew(probe_fn, obs, TOP_UP_SECONDS)
        return topped_up(kept, seen_drafts[1:], growing, valid, nbytes,
                         (lambda c: enough(c) or floor(c)) if short else enough, want=want)

    return inputs, outputs, scalars, roles, reference, seen, held, smoke, roofline, space, (grew, spare, cases,
                                                                                           list(h.cases), top_up)


def _largest_refused(stopped: list[tuple[dict, str]], keys: list[str], nbytes: Callable[[dict], int]) -> str:
    """Why a test's cases below the timing window were not grown into it: the largest growth refused (its sizes
    among ``keys``, the bytes it would move) and why; "" where none was refused."""
    if not stopped:
        return ""
    cfg, why = max(stopped, key=lambda s: nbytes(s[0]))
    return ("the largest growth refused is " + ", ".join(f"{k} = {cfg[k]}" for k in keys)
            + f" ({nbytes(cfg) / 1e6:.1f} MB): {why}")


def _aka_triton(aka: AkaFolder, source: Path, name: str, decisions: list[str], keep: Iterable[str] = ()):
    text, tree = parse_source(source)
    jit, plain = _launchers_py(tree)
    if not jit:
        decisions.append(f"{source.name} defines no @triton.jit function the importer could see")
    h, why = None, "the folder has no test script"
    # what a test may call: the file's launchers (functions that launch a kernel, directly or through
    # another), else a kernel itself (``add_kernel[grid](...)``)
    launching = set(jit) | _launching(tree, jit)
    whys = []
    for hp in aka.harnesses:
        if hp == source:  # the kernel's file holds its test: what it calls is one of its kernels or launchers
            h, why = read_harness(hp, launching, launching)
        else:
            h, why = read_harness(hp, set(plain), launching)
        if h is None and hp != source and jit:
            h, _ = read_harness(hp, set(jit), set(jit))
        if h is not None:
            h.kernel_source, h.kernel_path_name = (text, tree), source.name
            h.kernel_launching = launching
            break
        whys.append(why)
    why = "; ".join(whys) or why
    # a name the kernel's file binds (a function, a class, ``layernorm = LayerNorm.apply``) is not the entry's:
    # the entry would replace what it calls
    bound_here = {n for st in tree.body for n in _bound_names(st)} | bound_by_imports(import_lines(tree))
    entry = name if name not in bound_here else f"{name}_entry"
    if h is None:
        decisions.insert(
            0,
            f"the test script could not be read ({why}): the signature, the reference, the configs "
            "and the entry are stubs to write",
        )
        inputs = [{"name": "x", "dtype": "float32", "shape": ["TODO_x_shape"]}]
        outputs = [{"name": "out", "dtype": "float32", "shape": ["TODO_out_shape"]}]
        scalars: list[dict] = []
        reference = _reference_stub(["x"], [], why)
        body = [
            "# TODO(import): call the kernel's launcher with the task's tensors",
            "raise NotImplementedError('entry of an imported task: not written yet')",
        ]
        seen, held, smoke = [{"name": "TODO"}], [], [{"name": "TODO"}]
        roofline = {"bound": "memory", "flops": "0", "bytes": "0"}
        space: dict = {}
        launcher = "?"
        grew: list[str] = []
        spare: list[dict] = []
        cases: dict[str, dict] = {}
        written: list[dict] = []
        top_up = None
    else:
        (inputs, outputs, scalars, roles, reference, seen, held, smoke, roofline, space,
         (grew, spare, cases, written, top_up)) = _harness_task(aka, h, name, decisions, keep=keep, scratch=True)
        body, complete = _entry_call(h, roles, entry, inputs, outputs, scalars, decisions, (source,))
        launcher = h.launcher
        # the test's modules the entry's statements read (``1.0 / math.sqrt(dim)``) where the kernel's file has not
        # imported them
        have = bound_by_imports(import_lines(tree))
        used = free_names(ast.parse("\n".join(body)).body)
        body = [f"import {m}" for m in ("math", "torch") if m in used and m not in have] + body
    params = ", ".join(s["name"] for s in inputs + outputs + scalars)
    entry_text = "\n".join(
        [
            "",
            "",
            f"# ---- entry added by `arena tasks import aka`: the task's ABI around {launcher}, called as the folder's "
            "test calls it ----",
            f"def {entry}({params}):",
            '    """Inputs, outputs, scalars in signature order; writes the outputs."""',
            *[f"    {ln}" for ln in body],
            "",
        ]
    )
    kept = text
    if source in aka.harnesses:
        needed = set(jit) | set(aka.kernels) | free_names(ast.parse("\n".join(body)).body)
        kept = _kernel_part(text, tree, source, needed)
    baseline = kept.rstrip("\n") + "\n" + entry_text
    decisions.append(
        f"baseline.py is {source.name} as written"
        + (" without its tests (what its kernels and the entry use, with the imports they need)"
           if source in aka.harnesses else "")
        + f", with the entry {entry} added at its end: check "
        "that the starting kernel is correct on every config and leaves headroom"
    )
    d = _aka_draft(aka, source, name, category="triton2triton", entry=entry, inputs=inputs, outputs=outputs,
                   scalars=scalars, roofline=roofline, shape_space=space, reference=reference, seen=seen,
                   heldout=held, smoke=smoke, files={"baseline.py": baseline}, decisions=decisions)
    d.spare_heldout = spare
    d.top_up_seen = top_up
    d.grown = {c["name"]: cases[c["name"]] for c in seen if c["name"] in cases}
    d.cases = written
    if h is not None:
        d.tolerance = test_tolerance(h.tolerance, outputs, h.path.name, decisions)
    return d, lambda folder: _aka_self_check(folder, d), grew


_AKA_NOTES = {
    "title": "say what the task is",
    "description": "what the kernel computes, precisely",
    "tags": "families of the coverage table",
    "difficulty": "1 single op, 2 fused, 3 model block",
    "roofline": "bytes: every tensor once (a buffer the reference reads a part of: what it reads); flops: PyTorch's "
                "counter on the reference",
    "shape_space": "ranges around the test's shapes; add constraints",
}


def _aka_draft(aka: AkaFolder, source: Path, name: str, **fields: Any) -> Draft:
    """The draft of an AKA folder's task: what every such task shares (title and description from
    the folder, tags, difficulty, notes) around the fields its category decided."""
    return Draft(name=name, title=_aka_title(aka, name), description=_aka_description(aka, source),
                 tags=["imported", "agentkernelarena"], difficulty=1, notes=_AKA_NOTES, **fields)


def _aka_title(aka: AkaFolder, name: str) -> str:
    first = aka.instructions.splitlines()[0].strip().rstrip(".") if aka.instructions else ""
    return first[:100] if len(first) >= 3 else f"{name} (imported)"


def _aka_description(aka: AkaFolder, source: Path) -> str:
    return (
        (aka.instructions + "\n\n" if aka.instructions else "")
        + f"Imported from {aka.folder.name}: the kernel of {source.name} as written, with an entry for this ABI.\n"
        "TODO: say what the kernel computes, in what precision, and where the work is.\n"
    )


def _aka_self_check(folder: Path, draft: Draft | None = None) -> tuple[list[str], list[str]]:
    """The reference on the smoke config: it runs and is not degenerate. A Triton starting kernel: it passes
    the smoke config, and ``draft``'s configs are fitted to what it runs on (``kernel_probe.fit_drafts``)."""
    from arena.check.degeneracy import load_reference, reference_problems
    from arena.taskdef.loader import load_task

    try:
        task = load_task(folder)
        if "NotImplementedError" in task.reference_path.read_text():
            return [], []
        config = task.configs("smoke")[0]
        degenerate: list[str] = []
        # the range rule on the task's own sizes too (values a case grown into the timing window reaches): read on
        # the runs that read the outputs' scale where the test gives a tolerance
        out_of_range = None
        if draft is not None and draft.tolerance:
            out_of_range = scaled_test_tolerance(draft, folder, draft.decisions)
            task = load_task(folder)
        elif draft is not None:
            # no tolerance in the test: the fp32 one the reference needs at the task's sizes, as KernelBench's
            said, degenerate = rounding_tolerance(folder, draft)
            draft.decisions += said
            task = load_task(folder)
        bad = reference_problems(task, config, "cpu", load_reference(task))
        if bad and draft is not None:
            # shrunk that far, a chunk's rows can hold a few values beside the zeros of its upper triangle
            tensors = [*draft.inputs, *draft.outputs]

            def smoke_problems() -> list[str]:
                again = load_task(folder)
                return reference_problems(again, again.configs("smoke")[0], "cpu", load_reference(again))

            def size(c: dict) -> int:
                try:
                    return count_elements(tensors, c)
                except (formula.FormulaError, ValueError, TypeError):
                    return 10**18

            grown = larger_smoke(draft, folder, _smoke_sizes(draft)[1], size, smoke_problems, lambda again: not again,
                                 bad[0])
            if grown is not None:
                draft.decisions.append(grown[0])
                bad = grown[1]
                task = load_task(folder)
        if draft is not None and not bad:
            if out_of_range is None:
                try:
                    with probe_limits(ROUNDING_SECONDS):
                        out_of_range = range_at_sizes(folder)
                except PROBE_CUT:   # one run past its limits: a GPU's check shows
                    out_of_range = []
            degenerate += out_of_range
            degenerate += _degenerate_as_written(task, draft)
            degenerate += few_values_at_sizes(folder)
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the folder is written
        return [], [
            f"the reference does not run on the smoke config ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}): correct reference.py"
        ]
    passed = ["the reference runs on the smoke config on the CPU"]
    if draft is not None and degenerate and not bad:
        degenerate, said = drop_degenerate_configs(draft, folder, degenerate)
        if said:
            task = load_task(folder)
            passed.append(said)
    if draft is not None:
        # read at a test's own sizes, not the config's: a GPU's check tells whether the grown config still is
        as_written = [p for p in degenerate if p.endswith("before it grew)")]
        draft.decisions += [f"{p}: `arena tasks check --device cuda` tells whether the grown config still is "
                            "degenerate (the rules of CONTRIBUTING.md)" for p in as_written]
        degenerate = [p for p in degenerate if p not in as_written]
    found = [f"on the smoke config: {b} (the degeneracy rules of CONTRIBUTING.md)" for b in bad]
    found += [f"{p} (the degeneracy rules of CONTRIBUTING.md)" for p in degenerate]
    baseline = task.kernel_file("baseline")
    if not found and baseline is not None and baseline.suffix == ".py":
        # the starting kernel through its entry, as the harness evaluates it (Triton's interpreter): what a GPU
        # found in the imports that stopped here (torch operators in a Triton launcher, an input the kernel
        # writes, an entry that does not call the launcher as it needs) shows on the CPU already
        from arena.devices import detect
        from arena.evaluation.parent import Candidate, evaluate
        from arena.records import Status

        wrong: set[str] = set()
        try:
            # with the smoke config, each size one more, in the same process: a size the kernel is wrong at
            # (``_multiples_needed``)
            trials = _one_more(draft) if draft is not None else {}
            got = evaluate(task, Candidate(task, None, "baseline"), {"smoke": task.configs("smoke"), **trials},
                           detect("cpu"), timing=False)
            v = next(x for x in got if x.split == "smoke")
            wrong = {x.split for x in got if x.split in trials and _wrong_at_size(x)}
        except Exception as exc:  # noqa: BLE001 - reported, not raised: the folder is written
            v = None
            found.append(f"the starting kernel could not be evaluated on the CPU ({type(exc).__name__}: {exc})"[:400])
        if v is not None and draft is not None and (
                v.status is Status.PASSED
                or _wrong_at_size(v) and not _cpu_cannot_tell(v, task, baseline.read_text(errors="replace"))):
            # a kernel that covers only whole blocks (a grid of ``M // BLOCK``) is right where each size is a multiple
            # of its block: the task is then offered only those, and its drafts (odd, prime) rounded to them
            needs = _multiples_needed(task, draft, v.status is Status.PASSED, wrong)
            if needs:
                said = _round_to_multiples(draft, needs)
                write_configs(draft, folder)
                task = load_task(folder)
                (v,) = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], detect("cpu"), timing=False)
                if v.status is Status.PASSED:
                    passed.append(said)
        if v is not None and v.status is Status.PASSED:
            passed.append("the starting kernel passes the smoke config on the CPU (Triton's interpreter)")
            if draft is not None:
                from arena.authoring.importers.kernel_probe import fit_drafts

                fitted, refused = fit_drafts(folder, draft)
                passed += fitted
                found += refused
        elif v is not None and (why := _cpu_cannot_tell(v, task, baseline.read_text(errors="replace"))):
            # the CPU cannot tell whether it is correct, a GPU can
            if draft is not None:
                # its drafts probed still: an entry's own refusal (a launcher's assertion on a head size, a
                # tl.arange of a size not a power of two) comes before any launch the interpreter could die under
                from arena.authoring.importers.kernel_probe import fit_drafts

                fitted, refused = fit_drafts(folder, draft, left_to_gpu=True)
                passed += fitted
                found += refused
                said = v.message.splitlines()[0][:160] if v.message else ""
                draft.decisions.append(f"the starting kernel does not run on the CPU ({why}: {said}): "
                                       f"only a GPU shows it correct on the configs: `arena tasks check "
                                       f"{task.id} --device cuda`")
        elif v is not None:
            found.append(f"the starting kernel on the smoke config, on the CPU (Triton's interpreter): "
                         f"{v.status.value} {v.message[:300]}: correct baseline.py or the signature")
    return passed, found


def _degenerate_as_written(task: Any, d: Draft) -> list[str]:
    """What the degeneracy rules find in the seen configs grown from a test's cases, read at the case's own sizes
    (the CPU reads them only up to its size bound, where a grown case is past it): a softmax over one column is
    ones, over a thousand its spread is below an atol, however many rows it grows to. Said as "on seen config NAME:
    ..." for ``drop_degenerate``; nothing where the reference runs past ``ROUNDING_SECONDS`` there."""
    from arena.check.degeneracy import load_reference, reference_problems
    from arena.taskdef.loader import Config

    found: list[str] = []
    ref = load_reference(task)
    try:
        with probe_limits(ROUNDING_SECONDS):
            for c in task.configs("seen"):
                case = getattr(d, "grown", {}).get(c.name)
                if not case:
                    continue
                at = Config("seen", c.index, c.name, {**c.params, **case})
                try:
                    problems = reference_problems(task, at, "cpu", ref)
                except Exception:  # noqa: BLE001 - a case the reference refuses as written is the GPU's to tell
                    continue
                sizes = ", ".join(f"{k} = {v}" for k, v in case.items())
                found += [f"on seen config {c.name}: {p} (at the test's own sizes, {sizes}, before it grew)"
                          for p in problems]
    except PROBE_CUT:
        pass
    return found


GRANULES = (2, 4, 8, 16, 32, 64, 128, 256)   # the multiples a starting kernel may need a size to be


def _smoke_sizes(d: Any) -> tuple[dict, list[str]]:
    """The smoke config's parameters, and which of them are sizes the shape space ranges over."""
    smoke = {k: v for k, v in d.smoke[0].items() if k not in ("name", "#")}
    return smoke, [k for k, v in d.shape_space.items() if isinstance(v, dict) and "min" in v
                   and isinstance(smoke.get(k), int) and not isinstance(smoke.get(k), bool)]


def _one_more(d: Any) -> dict[str, list]:
    """Splits of one config each: the smoke config with one size one more (``off-SIZE``), evaluated with the smoke
    split (one process) for ``_multiples_needed``."""
    from arena.taskdef.loader import Config

    smoke, sizes = _smoke_sizes(d)
    return {f"off-{k}": [Config("smoke", 0, f"off-{k}", {**smoke, k: smoke[k] + 1})] for k in sizes}


def _multiples_needed(task: Any, d: Draft, smoke_right: bool,
                      wrong: set[str] | frozenset[str] = frozenset()) -> dict[str, int]:
    """The multiple each size must be for the starting kernel to compute right values (a grid of ``M // BLOCK_M``,
    a loop of ``K // BLOCK_K`` covers whole blocks only; the held-out drafts, odd and prime, must be right), found on
    the CPU. Where it is right on the smoke config (``smoke_right``): a size it is wrong at one more of (``wrong``:
    the ``_one_more`` splits it was wrong at) is constrained; else the smoke config with every size rounded up to a
    multiple of g, for g in ``GRANULES``, makes the first right one the base. Each constrained size is then moved
    from the base to an odd multiple of each smaller power of two: the smallest it is right at is its multiple. {}
    where none is needed or none is found."""
    from arena.devices import detect
    from arena.evaluation.parent import Candidate, evaluate
    from arena.records import Status
    from arena.taskdef.loader import Config

    smoke, sizes = _smoke_sizes(d)
    if not sizes:
        return {}

    def right(trials: dict[str, dict]) -> set[str]:
        """The trials the kernel passes."""
        splits = {n: [Config("smoke", 0, n, p)] for n, p in trials.items()}
        try:
            got = evaluate(task, Candidate(task, None, "baseline"), splits, detect("cpu"), timing=False)
        except Exception:  # noqa: BLE001 - no answer: no finding
            return set()
        return {v.split for v in got if v.status is Status.PASSED}

    if smoke_right:
        # wrong values at one more (an error, a size the kernel needs a power of two for, is the probe's to find)
        base, whole = smoke, max(GRANULES)
        sizes = [k for k in sizes if f"off-{k}" in wrong]
    else:
        ok = right({f"all-{g}": {**smoke, **{k: _round_up(smoke[k], g) for k in sizes}} for g in GRANULES})
        found = next((g for g in GRANULES if f"all-{g}" in ok), None)
        if found is None:
            return {}
        whole = found
        base = {**smoke, **{k: _round_up(smoke[k], whole) for k in sizes}}
    if not sizes:
        return {}
    finer = (1, *(g for g in GRANULES if g < whole))
    ok = right({f"{k}-{g}": {**base, k: _odd_multiple(int(base[k]), g)} for k in sizes for g in finer})
    needs = {k: next((g for g in finer if f"{k}-{g}" in ok), whole if not smoke_right else 0) for k in sizes}
    return {k: g for k, g in needs.items() if g > 1}    # 0: right at no multiple tried, so no multiple's matter


def _wrong_at_size(v: Any) -> bool:
    """A verdict that says a size is not one the kernel covers: wrong values (whole blocks only), or a
    ``tl.multiple_of`` hint false at it (``arena.toolchain.interpreter_hints``; a GPU faults or computes wrong
    elements there). An error of another kind (a size the kernel needs a power of two for) is the probe's to find."""
    from arena.records import Status

    return v.status.kind == "incorrect" or v.status is Status.RUNTIME_ERROR and "HintBroken" in v.message


def _round_up(v: int, g: int) -> int:
    """The least multiple of ``g`` that is at least ``v``."""
    return -(-v // g) * g


def _odd_multiple(v: int, g: int) -> int:
    """The odd multiple of ``g`` nearest ``v``: a multiple of ``g`` and, where ``g`` is a power of two, of no larger
    one (no power of two itself but ``g``)."""
    m = max(round(v / g), 1)
    if m % 2 == 0:
        m += 1 if v / g > m else -1
    return max(m, 1) * g


def _round_to_multiples(d: Draft, needs: dict[str, int]) -> str:
    """``d``'s shape space offers each size of ``needs`` only as a multiple of it, and its configs are rounded to
    one (a size not a multiple already: to the nearest odd multiple, which is still no power of two); a config that
    becomes another's is dropped. Returns what it says of it."""
    for k, g in needs.items():
        spec = d.shape_space[k]
        spec["min"] = _round_up(int(spec["min"]), g)
        spec["max"] = max(int(spec["max"]) // g * g, spec["min"])
        spec["multiple_of"] = g
    taken: list[dict] = []
    rounded = 0
    for items in (d.smoke, d.seen, d.heldout, d.spare_heldout):
        for c in list(items):
            p = {k: v for k, v in c.items() if k not in ("name", "#")}
            q = {k: _odd_multiple(int(v), needs[k]) if k in needs and int(v) % needs[k] else v for k, v in p.items()}
            for step in (2, -2, 4, -4) if items is not d.smoke and q != p and q in taken else ():
                # another odd multiple near it: a draft of its own kind, not one of the configs already there
                other = {k: max(int(v) + step * needs[k], needs[k]) if k in needs and v != p[k] else v
                         for k, v in q.items()}
                if other not in taken:
                    q = other
                    break
            if q != p:
                rounded += 1
                c.update(q)
                moved = ", ".join(k for k in needs if q[k] != p[k])
                c["#"] = f"{c.get('#', 'DRAFT')}; {moved} rounded to a multiple the starting kernel needs"
            if items is not d.smoke and q in taken:
                items.remove(c)
            elif items is not d.smoke:
                taken.append(q)
    which = ", ".join(f"{k} of {g}" for k, g in needs.items())
    return (f"the starting kernel is right only where its sizes are multiples ({which}; found on the CPU): the shape "
            f"space offers only those, and {rounded} config{'s' if rounded != 1 else ''} rounded to them")


# what a CPU build of torch raises where a launcher asks torch.cuda for what a GPU's build answers (a stream; the
# GPU's properties are a nominal GPU's on the cpu backend: ``arena.toolchain.interpreter_cuda``); and the calls that ask
_NO_CUDA = re.compile(r"not compiled with CUDA|compiled without CUDA|no NVIDIA driver")
_TORCH_CUDA_CALLS = re.compile(r"\btorch\.cuda\.(set_device|device_count|current_stream|stream|Stream|synchronize|"
                               r"Event|mem_get_info|memory_allocated)\b")


def _cpu_cannot_tell(v: Any, task: Any, source: str) -> str:
    """Why the starting kernel's verdict on the CPU says nothing of whether it is correct ('' where it does): the
    interpreter died under it, it calls what Triton's interpreter has no implementation of, its launcher asks
    torch.cuda for what only a GPU's build of torch has (a stream; a CPU build raises), or it computes in bf16, which
    the interpreter gets wrong (FACTS.md)."""
    from arena.records import Status

    if v.status is Status.CRASHED:
        return "Triton's interpreter died under it"
    if v.status is Status.NOT_RUNNABLE:
        return "Triton's interpreter cannot run it"
    if v.status is Status.RUNTIME_ERROR and _NO_CUDA.search(v.message):
        calls = sorted(set(_TORCH_CUDA_CALLS.findall(source)))
        return ("its launcher asks torch.cuda for what a CPU build of torch has not"
                + (f" (torch.cuda.{', torch.cuda.'.join(calls)})" if calls else ""))
    if v.status.kind == "incorrect" and any(t.dtype == "bfloat16" for t in [*task.inputs, *task.outputs]):
        return "its values are bfloat16, which Triton's interpreter computes wrongly"
    return ""


def _aka_hip(aka: AkaFolder, source: Path, name: str, decisions: list[str]):
    text = source.read_text(errors="replace")
    torch_ext = bool(TORCH_INCLUDE.search(text) or TORCH_WORDS.search(text))
    exports: list[tuple[str, str]] = []
    pieces: list[str] = []
    kept = text
    if torch_ext:
        kept, pieces, exports = split_torch_extension(text)
    launchers = {p for p, _ in exports} | set(aka.kernels)
    check = None
    module_task = None
    module_path: Path | None = None
    # the folder's harness runs the module as gpumode's does, in eval mode (`kernel_modu.eval()`): its dropouts are off
    eval_mode = any(re.search(r"\.eval\(\)", h.read_text(errors="replace")) for h in aka.harnesses)
    for mp in aka.modules:
        try:
            module_task = build_module_task(ModuleProblem(mp, any_module=True, eval_mode=eval_mode), name, "hip2hip")
            module_path = mp
            decisions.append(
                f"the signature, reference and configs come from the PyTorch module "
                f"{mp.relative_to(aka.folder)}; the reference is its forward"
            )
            break
        except ImportStop as exc:
            decisions.append(f"{mp.relative_to(aka.folder)} could not be read as a module problem ({exc.detail})")
    entry = name
    if module_task is not None:
        d = module_task.draft
        check = module_task.self_check
        inputs, outputs, scalars = d.inputs, d.outputs, d.scalars
        decisions += d.decisions
        reference, seen, held, smoke, roofline, space = (
            d.reference,
            d.seen,
            d.heldout,
            d.smoke,
            d.roofline,
            d.shape_space,
        )
    else:
        h, why = None, "the folder has no test script"
        for hp in aka.harnesses:
            h, why = read_harness(hp, launchers)
            if h is not None:
                break
        if h is not None:
            (inputs, outputs, scalars, roles, reference, seen, held, smoke, roofline, space, _) = _harness_task(
                aka, h, name, decisions
            )
            check = _aka_self_check
        else:
            found = host_launchers(kept) if not torch_ext else []
            if found:
                inputs, outputs, scalars = launcher_signature(found[0][2])
                decisions.insert(
                    0,
                    f"neither a PyTorch module file nor a readable test script ({why}): the "
                    f"signature is read off {found[0][1]}'s parameters (const pointers inputs, other "
                    "pointers outputs); write the shapes (TODO_*), the float scalars' values, the "
                    "reference and the configs",
                )
            else:
                decisions.insert(
                    0,
                    f"neither a PyTorch module file nor a readable test script ({why}): the "
                    "signature, the reference and the configs are stubs to write",
                )
                inputs = [{"name": "x", "dtype": "float32", "shape": ["TODO_x_shape"]}]
                outputs = [{"name": "out", "dtype": "float32", "shape": ["TODO_out_shape"]}]
                scalars = []
            reference = _reference_stub(
                [i["name"] for i in inputs], [s["name"] for s in scalars if s["type"] != "float32"], why
            )
            seen, held, smoke = [{"name": "TODO"}], [], [{"name": "TODO"}]
            roofline, space = {"bound": "memory", "flops": "0", "bytes": "0"}, {}
    if re.search(rf"\b{re.escape(entry)}\s*\(", kept):
        entry = f"{name}_entry"
    launch_note = ""
    entry_params: list[str] | None = None
    indent = "    "
    kept, knobs = without_environment(kept)
    for i, piece in enumerate(pieces):      # the host code translated into the entry
        pieces[i], more = without_environment(piece)
        knobs += [k for k in more if k not in knobs]
    if knobs:
        decisions.append(
            "the host code read the environment (" + ", ".join(f"getenv({k})" for k in knobs) + "), which a "
            "candidate's build may not (the build's object check refuses getenv): each read is an unset "
            "variable, the original's default path"
        )
    if torch_ext:
        cut_names = [m.group(1) for p in pieces for m in [re.search(r"(\w+)\s*\([^()]*\)\s*\{", p)] if m]
        launch_note = (
            f"the original launched its kernels from PyTorch host code ({', '.join(cut_names) or 'cut'}), "
            "kept as comments at the end of this file: launch them here on `stream`"
        )
        call_args = next((c for mp in aka.modules if module_path is not None for c in [host_call_args(mp)] if c), None)
        params, lines, said, why_not = translate_torch_host(pieces, exports, inputs, outputs, scalars, call_args)
        if params is not None:
            entry_params, body, indent = params, lines, ""
            decisions.insert(
                0,
                f"baseline.hip keeps the device code of {source.name} as written; its PyTorch host code "
                f"({', '.join(cut_names)}) is kept as comments and {said[0]}",
            )
        else:
            body = [f"// TODO(import): {launch_note} ({why_not}).", "return (int)hipErrorNotSupported;"]
            decisions.insert(
                0,
                f"baseline.hip keeps the device code of {source.name} as written; its PyTorch host code "
                f"({', '.join(cut_names)}) cannot be built here and is kept as comments; it was not "
                f"translated ({why_not}): write the entry {entry}'s launches (it returns "
                "hipErrorNotSupported until then)",
            )
        leftovers = sorted(set(TORCH_WORDS.findall(kept)))
        if leftovers:
            decisions.append(
                f"the kept device code still names PyTorch ({', '.join(leftovers)}): replace those types or macros"
            )
    else:
        found = host_launchers(kept)
        body, why_not = (
            (None, "it has no host function taking device pointers")
            if not found
            else thin_hip_entry(found[0], inputs, outputs, scalars)
        )
        if body is not None:
            decisions.insert(
                0,
                f"baseline.hip is {source.name} as written with an entry {entry} added that calls "
                f"{found[0][1]} (pointers matched by constness and order, numbers by name): check "
                "the matching",
            )
            if why_not:
                decisions.append(why_not)
        else:
            body = [
                f"// TODO(import): launch the kernels above on `stream` ({why_not}).",
                "return (int)hipErrorNotSupported;",
            ]
            decisions.insert(
                0,
                f"baseline.hip is {source.name} as written with an entry {entry} added: write its "
                f"launches ({why_not}; it returns hipErrorNotSupported until then)",
            )
    if exports:
        decisions.append(
            "the extension exported " + ", ".join(f"{p} ({c})" for p, c in exports) + f"; the task's entry is {entry}"
        )
    entry_text = _hip_entry(entry, [i for i in inputs], outputs, scalars, body, entry_params, indent)
    comments = "".join("\n// " + "\n// ".join(p.splitlines()) + "\n" for p in pieces)
    baseline = (
        kept.rstrip("\n")
        + "\n\n// ---- entry added by `arena tasks import aka`: the task's ABI ----\n"
        + entry_text
        + (("\n// ---- the original PyTorch host code, for reference (not built) ----" + comments) if pieces else "")
    )
    d = _aka_draft(aka, source, name, category="hip2hip", entry=entry, inputs=inputs, outputs=outputs,
                   scalars=scalars, roofline=roofline, shape_space=space, reference=reference, seen=seen,
                   heldout=held, smoke=smoke, files={"baseline.hip": baseline}, decisions=decisions)
    return d, (_built_too(check) if check is not None else None)


def _built_too(check: Callable[[Path], tuple[list[str], list[str]]]) -> Callable[[Path], tuple[list[str], list[str]]]:
    """``check``, then, where it found nothing, the HIP starting kernel built as the harness builds it on the CPU
    (compile-only, for each vendor whose compiler is here): an entry translated from host code that does not
    compile (a branch taken that redeclares a local) shows here, not on a GPU."""

    def run(folder: Path) -> tuple[list[str], list[str]]:
        passed, found = check(folder)
        if found:
            return passed, found
        from arena.devices import detect
        from arena.evaluation.parent import Candidate, evaluate
        from arena.records import Status
        from arena.taskdef.loader import load_task

        try:
            task = load_task(folder)
            (v,) = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], detect("cpu"), timing=False)
        except Exception as exc:  # noqa: BLE001 - reported, not raised: the folder is written
            return passed, [f"the starting kernel could not be built on the CPU ({type(exc).__name__}: {exc})"[:400]]
        if v.status is Status.COMPILE_ERROR:
            errors = [ln.strip() for ln in v.message.splitlines() if "error" in ln][:2]
            return passed, [f"the starting kernel does not build ({'; '.join(errors) or v.message[:200]}): "
                            "correct baseline.hip"]
        built = [f"{b['target']} {b['arch']}" for b in (v.build or {}).get("builds", []) if b.get("ok")]
        if built:
            passed.append(f"the starting kernel builds for {' and '.join(built)} (compile-only on the CPU)")
        return passed, found

    return run
