"""KernelBench problems (``class Model(nn.Module)`` with ``get_inputs``): ``import_kernelbench``."""

from __future__ import annotations

import ast
import copy
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from arena.authoring.check import MIN_BYTES_MEMORY_BOUND
from arena.authoring.importers.common import (
    DTYPE_NAMES,
    HIP_STARTING_KERNEL,
    MAX_CONFIG_BYTES,
    MAX_CONFIG_FLOPS,
    MIN_VARIED,
    PROBE_CUT,
    RANDOM_FUNCS,
    RECURRENT_STEP_S,
    TENSOR_MAKERS,
    WINDOW_BYTES,
    WINDOW_FLOPS,
    Draft,
    Fitter,
    ImportResult,
    ImportStop,
    Substitute,
    Untranslatable,
    bound_by_imports,
    call_name,
    count_bytes,
    count_elements,
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
    impure_reason,
    in_window,
    init_from_expr,
    join_statements,
    larger_smoke,
    leading_size,
    literal_constants,
    module_defs,
    on_one_thread,
    once_per_config,
    parse_source,
    peak_bytes_mode,
    probe_limits,
    product_formula,
    recurrent_steps,
    resolve_task_id,
    roofline_draft,
    rounding_tolerance,
    self_chain,
    shape_space_draft,
    shapes_only,
    space_constraint,
    split_chained_constants,
    split_list_constants,
    split_unpacked_constants,
    topped_up,
    with_constants,
    work_factor,
)
from arena.errors import ArenaError
from arena.taskdef import formula

# KernelBench: Model.forward as a function

# the most work the importer's own check runs on the CPU (the reference and the module on the smoke config,
# the degeneracy checks): about 10 s of one core; a larger smoke config is left to a GPU
SELF_CHECK_FLOPS = 10**10
SELF_CHECK_ELEMENTS = 2**27     # and the module it builds there at most 0.5 GB of fp32 parameters (drawn one by one)


@dataclass
class _Run:
    model: torch.nn.Module
    init_args: list
    init_kwargs: dict
    inputs: list
    output: Any
    flops: int
    peak: int = 0     # the forward pass's temporaries and outputs alive at once, at most (bytes)
    steps: int = 0    # the recurrent steps it ran one after another (``recurrent_steps``)


def _init_args(value: Any) -> tuple[list, dict]:
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(value) == 2 and isinstance(value[0], (list, tuple)) and isinstance(value[1], dict):
        return list(value[0]), dict(value[1])
    return value, {}


def _first_case(value: Any) -> tuple[list, int]:
    """get_inputs() as a list; a generator (several cases) gives its first and their count."""
    if isinstance(value, (list, tuple)):
        return list(value), 1
    cases = list(value)
    if not cases:
        raise ValueError("get_inputs() yielded nothing")
    first = cases[0]
    return (list(first) if isinstance(first, (list, tuple)) else [first]), len(cases)


# a problem whose forward takes longer than this on the meta device is probed on the CPU instead, where its one run
# needs at most this memory and this share of the meta run's CPU time (its probes then cost less than they would on
# the meta device)
META_SLOW_S = 3.0
CPU_PROBE_SHARE = 1.0
CPU_PROBE_BYTES = 2 * 10**9
RECURRENT = ("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell")
LIFTED_PREFIX = "dim"     # the names of the sizes lifted from get_inputs / get_init_inputs: dim0, dim1, ...
SIZE_ARGS_ONLY = {"randint": 2, "full": 0, "randint_like": 1}    # makers whose sizes are the one argument at this place


def lift_literal_sizes(tree: ast.Module, funcs: list[ast.FunctionDef]) -> tuple[ast.Module, dict[str, int]]:
    """``tree`` with each integer of at least ``MIN_VARIED`` written as a size where ``funcs``
    make the inputs (``torch.randn(16, 16384)``, ``torch.randint(0, 10, (64, 512))``, the list
    get_init_inputs returns) replaced by a module constant (``dim0 = 16``); the same number is
    the same constant (a matmul's shared dimension stays shared). Returns the tree and the
    constants made, by name."""
    tree = copy.deepcopy(tree)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    made: dict[int, str] = {}
    wanted = {f.name for f in funcs}

    def name_for(value: int) -> str:
        if value not in made:
            k = len(made)
            while f"{LIFTED_PREFIX}{k}" in names:
                k += 1
            made[value] = f"{LIFTED_PREFIX}{k}"
            names.add(made[value])
        return made[value]

    def lift(node: ast.AST) -> ast.AST:
        """A size (an int literal, or a tuple or list of them) with its numbers lifted."""
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= MIN_VARIED:
            return ast.copy_location(ast.Name(name_for(node.value), ast.Load()), node)
        if isinstance(node, (ast.Tuple, ast.List)):
            node.elts = [lift(e) for e in node.elts]
        return node

    for fn in (s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name in wanted):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and call_name(node).split(".")[-1] in TENSOR_MAKERS:
                maker = call_name(node).split(".")[-1]
                if maker in SIZE_ARGS_ONLY:
                    at = SIZE_ARGS_ONLY[maker]
                    if len(node.args) > at:
                        node.args[at] = lift(node.args[at])
                elif maker not in ("tensor", "arange") and not maker.endswith("_like"):
                    node.args = [lift(a) for a in node.args]
                for kw in node.keywords:
                    if kw.arg == "size":
                        kw.value = lift(kw.value)
            if fn.name == "get_init_inputs" and isinstance(node, ast.Return) and isinstance(node.value, (ast.List,
                                                                                                         ast.Tuple)):
                node.value.elts = [lift(e) if isinstance(e, ast.Constant) else e for e in node.value.elts]
    if not made:
        return tree, {}
    first = next((i for i, s in enumerate(tree.body) if isinstance(s, (ast.FunctionDef, ast.ClassDef))), 0)
    tree.body[first:first] = [ast.Assign([ast.Name(n, ast.Store())], ast.Constant(v)) for v, n in made.items()]
    return ast.fix_missing_locations(tree), {n: v for v, n in made.items()}


LIFTED_CASES = "_arena_import_cases"


def lift_case_list(tree: ast.Module, fn_name: str = "get_inputs") -> tuple[ast.Module, list[dict[str, int]], str]:
    """A get_inputs that loops over a list of cases written in it (``configs = [(4, 512, 16, 16), ...]``,
    ``for B, C, H, W in configs: ... yield [...]``): the list becomes one case whose sizes are module
    constants (the loop's names where it unpacks a flat tuple, else ``case0``, ``case1``, ...: one
    number of the first case, one constant), set to the largest case; returns the tree, every case
    as values of those constants (a case that does not fit the first's pattern left out), and a
    note. The tree is unchanged (and no case returned) where get_inputs has no such list."""
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == fn_name), None)
    if fn is None:
        return tree, [], ""
    lists: dict[str, ast.Assign] = {}
    for st in fn.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                isinstance(st.value, (ast.List, ast.Tuple)):
            lists[st.targets[0].id] = st
    loop = next((st for st in fn.body if isinstance(st, ast.For) and isinstance(st.iter, ast.Name)
                 and st.iter.id in lists and any(isinstance(n, (ast.Yield, ast.Return)) for n in ast.walk(st))), None)
    if loop is None:
        return tree, [], ""
    assign = lists[loop.iter.id]
    try:
        raw = ast.literal_eval(assign.value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return tree, [], ""
    if not isinstance(raw, (list, tuple)) or not raw:
        return tree, [], ""

    def leaves(v: Any) -> list | None:
        """The ints of a case in order (None where it holds anything but ints, lists and tuples)."""
        if type(v) is int:
            return [v]
        if isinstance(v, (list, tuple)):
            out: list = []
            for x in v:
                sub = leaves(x)
                if sub is None:
                    return None
                out += sub
            return out
        return None

    flat_all = [leaves(c) for c in raw]
    if any(f is None for f in flat_all):
        return tree, [], ""
    # cases of several ranks (1-D, 2-D, 4-D inputs): a signature has one; the most common pattern is kept
    sizes = [len(f) for f in flat_all]
    keep = max(sorted(set(sizes), reverse=True), key=sizes.count)
    total = len(raw)
    raw = [c for c, n in zip(raw, sizes) if n == keep]
    flat = [f for f in flat_all if len(f) == keep]
    if not flat[0]:
        return tree, [], ""
    first = flat[0]
    # which positions are sizes (>= MIN_VARIED somewhere, or different across the cases)
    varied = [i for i in range(len(first)) if any(f[i] >= MIN_VARIED for f in flat) or len({f[i] for f in flat}) > 1]
    if not varied:
        return tree, [], ""
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    unpacked = isinstance(loop.target, ast.Tuple) and all(isinstance(e, ast.Name) for e in loop.target.elts) and \
        all(isinstance(c, (list, tuple)) and len(c) == len(loop.target.elts) and all(type(x) is int for x in c)
            for c in raw)
    name_of: dict[int, str] = {}
    if unpacked:
        for i in varied:
            name_of[i] = loop.target.elts[i].id
    else:
        by_value: dict[int, str] = {}
        k = 0
        for i in varied:
            if first[i] not in by_value:
                while f"case{k}" in taken:
                    k += 1
                by_value[first[i]] = f"case{k}"
                k += 1
            name_of[i] = by_value[first[i]]
    cases = []
    for f in flat:
        case: dict[str, int] = {}
        if all(case.setdefault(name_of[i], f[i]) == f[i] for i in varied) and \
                all(f[i] == first[i] for i in range(len(f)) if i not in varied):
            cases.append(case)
    if not cases:
        return tree, [], ""
    base = max(cases, key=lambda c: math.prod(c.values()))
    counter = iter(range(len(first)))

    def template(v: Any) -> ast.expr:
        if type(v) is int:
            i = next(counter)
            return ast.Name(name_of[i], ast.Load()) if i in name_of else ast.Constant(v)
        elts = [template(x) for x in v]
        return ast.Tuple(elts, ast.Load()) if isinstance(v, tuple) else ast.List(elts, ast.Load())

    tree = copy.deepcopy(tree)
    fn = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == fn_name)
    target = next(st for st in fn.body if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
                  and st.targets[0].id == loop.iter.id)
    # the one case is a module-level list (inside get_inputs the loop's names are its locals)
    target.value = ast.Name(LIFTED_CASES, ast.Load())
    first_def = next((i for i, st in enumerate(tree.body) if isinstance(st, (ast.FunctionDef, ast.ClassDef))), 0)
    made = [ast.Assign([ast.Name(n, ast.Store())], ast.Constant(v)) for n, v in base.items()]
    made.append(ast.Assign([ast.Name(LIFTED_CASES, ast.Store())], ast.List([template(raw[0])], ast.Load())))
    tree.body[first_def:first_def] = made
    note = (f"get_inputs() loops over {total} cases written in it ({loop.iter.id}): their sizes are the "
            f"parameters {', '.join(base)}" + ("" if unpacked else " (one number of the first case, one parameter: "
                                                 "rename them)")
            + f"; seen.yaml holds the {len(cases)} cases" + (f" ({total - len(cases)} of another rank or that do not "
                                                             "fit the first's pattern left out)"
                                                             if len(cases) < total else ""))
    return ast.fix_missing_locations(tree), cases, note


def returned_elements(fn: ast.FunctionDef) -> list[ast.expr] | None:
    """The elements of the list or tuple a function returns or yields first, a local name it assigned once read
    as its value (``x = torch.randn(...); return [x]``), or None where that is not a list or tuple written out."""
    ret = next((n for n in ast.walk(fn) if isinstance(n, (ast.Return, ast.Yield))), None)
    value = getattr(ret, "value", None)
    local: dict[str, ast.expr] = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            local[stmt.targets[0].id] = stmt.value
    if isinstance(value, ast.Name) and value.id in local:
        value = local[value.id]
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    return [local[e.id] if isinstance(e, ast.Name) and e.id in local else e for e in value.elts]


def is_static(fn: ast.FunctionDef) -> bool:
    """A method decorated ``@staticmethod`` (no self)."""
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def forward_params(forward: ast.FunctionDef) -> tuple[list[str], dict[str, ast.expr]]:
    """A forward's named parameters (less self) and the defaults of those that have one."""
    a = forward.args
    params = [x.arg for x in (*a.posonlyargs, *a.args)][0 if is_static(forward) else 1:]
    return params, dict(zip(params[len(params) - len(a.defaults):], a.defaults))


def _none_test(test: ast.expr) -> tuple[str, bool] | None:
    """``P is None``: (P, True); ``P is not None``: (P, False); else None."""
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1 and \
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None and \
            isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        return test.left.id, isinstance(test.ops[0], ast.Is)
    return None


def _self_attr(node: ast.AST, attr: str | None = None) -> bool:
    """``self.<attr>`` (any attribute where ``attr`` is None), not ``self.a.b``."""
    chain = self_chain(node)
    return chain is not None and len(chain) == 1 and attr in (None, chain[0])


def _mentions(node: ast.AST, attr: str) -> bool:
    return any(_self_attr(n, attr) for n in ast.walk(node))


DRAWN_FN = "_arena_drawn_arguments"
BUILT = "_built"     # the imported reference's cache of the model it calls through functional_call


@dataclass
class GivenArguments:
    """What ``given_arguments`` made of a problem: its tree, the function that draws the forward's lifted
    arguments as the forward would (None where none is lifted), their expressions, and the notes for the import."""
    tree: ast.Module
    drawn_fn: ast.Module | None = None
    drawn_exprs: list[ast.expr] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def given_arguments(tree: ast.Module, cls: ast.ClassDef, forward: ast.FunctionDef,
                    get_inputs: ast.FunctionDef) -> GivenArguments:
    """The forward as the problem's inputs run it, where that makes it a pure function of them:

    - an optional argument get_inputs() does not give, which the forward draws at random where it is not given
      (``if h0 is None: h0 = torch.randn(...)``), is lifted into the inputs: drawn as the forward draws it, by
      the forward's own lines up to that draw (``drawn_fn``), and the forward is given it;
    - a test of an argument get_inputs() gives (or that is lifted) against None takes its branch
      (``if initial_hidden is not None: self.hidden.copy_(initial_hidden)`` runs unconditionally);
    - module state that the forward overwrites before it reads it in every call (``self.hidden.copy_(x)`` or
      ``self.hidden = f(x)`` first) is a local of the forward: no value passes from one call to the next.

    Only the forward's top-level statements are read; the tree is returned unchanged where nothing applies."""
    out = GivenArguments(tree)
    given_elts = returned_elements(get_inputs)
    if given_elts is None or any(isinstance(e, ast.Starred) for e in given_elts):
        return out
    params, defaults = forward_params(forward)
    n_given = len(given_elts)
    body = forward.body
    lifted: list[tuple[str, int, ast.expr]] = []
    for p in params[n_given:]:
        if not (isinstance(defaults.get(p), ast.Constant) and defaults[p].value is None):
            break
        at = next((k for k, st in enumerate(body) if isinstance(st, ast.If) and _none_test(st.test) == (p, True)
                   and not st.orelse and len(st.body) == 1 and isinstance(st.body[0], ast.Assign)
                   and [dotted_name(t) for t in st.body[0].targets] == [p]
                   and any(isinstance(n, ast.Call) and call_name(n) in RANDOM_FUNCS
                           for n in ast.walk(st.body[0].value))), None)
        if at is None:
            break
        lifted.append((p, at, body[at].body[0].value))
    given = {p for p, e in zip(params, given_elts) if not (isinstance(e, ast.Constant) and e.value is None)}
    given |= {p for p, _, _ in lifted}
    lifted_at = {at for _, at, _ in lifted}
    new_body: list[ast.stmt] = []
    taken_branch = False
    for k, st in enumerate(body):
        if k in lifted_at:
            continue
        test = _none_test(st.test) if isinstance(st, ast.If) else None
        if test is not None and test[0] in given:
            new_body += st.orelse if test[1] else st.body
            taken_branch = True
        else:
            new_body.append(st)
    if not lifted and not taken_branch:
        return out
    # module state overwritten before it is read: a local
    names = {n.id for n in ast.walk(forward) if isinstance(n, ast.Name)}
    others = [m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name not in ("__init__", "forward")]
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    written = {t.attr for st in new_body for n in ast.walk(st) if isinstance(n, ast.Assign)
               for t in n.targets if _self_attr(t)}
    written |= {n.func.value.attr for st in new_body for n in ast.walk(st) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute) and n.func.attr == "copy_" and _self_attr(n.func.value)}
    local_of: dict[str, str] = {}
    for attr in sorted(written):
        first = next((st for st in new_body if _mentions(st, attr)), None)
        copied = isinstance(first, ast.Expr) and isinstance(first.value, ast.Call) and \
            isinstance(first.value.func, ast.Attribute) and first.value.func.attr == "copy_" and \
            _self_attr(first.value.func.value, attr) and len(first.value.args) == 1 and not first.value.keywords and \
            not _mentions(first.value.args[0], attr)
        assigned = isinstance(first, ast.Assign) and len(first.targets) == 1 and \
            _self_attr(first.targets[0], attr) and not _mentions(first.value, attr)
        made_in_init = init is not None and all(
            isinstance(n.value, ast.Call) and call_name(n.value) in TENSOR_MAKERS
            for n in ast.walk(init) if isinstance(n, ast.Assign) and any(_self_attr(t, attr) for t in n.targets))
        registered = any(isinstance(n, ast.Constant) and n.value == attr for n in ast.walk(cls))
        if (copied or assigned) and made_in_init and not registered and not any(_mentions(m, attr) for m in others):
            local = attr
            while local in names or local in params or local in local_of.values():
                local += "_state"
            local_of[attr] = local

    if not lifted and not local_of:
        return out      # a branch taken alone changes nothing the import needs: the problem's text is kept

    class _Local(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if _self_attr(node) and node.attr in local_of:
                return ast.copy_location(ast.Name(local_of[node.attr], node.ctx), node)
            return self.generic_visit(node)

    for attr, local in local_of.items():
        k = next(k for k, st in enumerate(new_body) if _mentions(st, attr))
        st = new_body[k]
        if isinstance(st, ast.Expr):     # self.A.copy_(E): A = E.clone()
            value = ast.Call(ast.Attribute(st.value.args[0], "clone", ast.Load()), [], [])
            new_body[k] = ast.copy_location(ast.Assign([ast.Name(local, ast.Store())], value), st)
    new_body = [_Local().visit(st) for st in new_body]

    tree = copy.deepcopy(tree)
    cls_new = next(s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == cls.name)
    fwd_new = next(s for s in cls_new.body if isinstance(s, ast.FunctionDef) and s.name == "forward")
    fwd_new.body = new_body or [ast.Pass()]
    out.tree = ast.fix_missing_locations(tree)
    if lifted:
        last = max(lifted_at)
        ret = ast.Return(ast.Tuple([ast.Name(p, ast.Load()) for p, _, _ in lifted], ast.Load()))
        drawn = ast.FunctionDef(name=DRAWN_FN, args=copy.deepcopy(forward.args),
                                body=[*copy.deepcopy(body[: last + 1]), ret], decorator_list=[])
        out.drawn_fn = ast.fix_missing_locations(ast.Module([drawn], []))
        out.drawn_exprs = [e for _, _, e in lifted]
        lines = ", ".join(str(body[at].lineno) for _, at, _ in lifted)
        out.notes.append(
            f"get_inputs() does not give forward's {', '.join(p for p, _, _ in lifted)}, which forward draws at random "
            f"where it is not given (line{'s' if len(lifted) > 1 else ''} {lines}): "
            f"{'they are inputs' if len(lifted) > 1 else 'it is an input'} drawn as forward draws "
            f"{'them' if len(lifted) > 1 else 'it'}, and the reference is forward given "
            f"{'them' if len(lifted) > 1 else 'it'} (a kernel that drew its own could not be compared)")
    if local_of:
        out.notes.append(
            "forward overwrites the module state " + ", ".join(f"self.{a}" for a in local_of) + " from its inputs "
            "before it reads it: no value passes from one call to the next, and the reference keeps it as a local")
    return out


class ModuleProblem:
    """A Python file with an ``nn.Module`` (``Model``, or the only module class when
    ``any_module``), ``get_inputs()`` and ``get_init_inputs()``, read and run."""

    def __init__(self, path: Path, *, any_module: bool = False, split_chains: bool = True, eval_mode: bool = False):
        self.path = Path(path)
        self.eval_mode = eval_mode    # the source's harness runs the module in eval mode: its dropouts are off
        self.text, self.tree = parse_source(self.path)
        self.tree = split_unpacked_constants(self.tree)
        self.chained: list[str] = []
        if split_chains:
            self.tree, self.chained = split_chained_constants(self.tree)
        self.tree, self.listed = split_list_constants(self.tree)
        classes = {s.name: s for s in self.tree.body if isinstance(s, ast.ClassDef)}
        funcs = {s.name: s for s in self.tree.body if isinstance(s, ast.FunctionDef)}
        cls = classes.get("Model")
        if cls is None and any_module:
            modules = [c for c in classes.values() if any(isinstance(s, ast.FunctionDef) and s.name == "forward"
                                                          for s in c.body)]
            cls = modules[-1] if len(modules) >= 1 else None
        if cls is None:
            raise ImportStop("no `class Model(nn.Module)`: a KernelBench problem defines its model as class Model "
                             "with __init__ and forward", path=self.path)
        self.cls = cls
        self.forward = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
        if self.forward is None:
            raise ImportStop(f"class {cls.name} has no forward method", path=self.path)
        if "get_inputs" not in funcs:
            raise ImportStop("no get_inputs(): a KernelBench problem returns the forward's tensors from "
                             "get_inputs()", path=self.path)
        self.get_inputs = funcs["get_inputs"]
        given = given_arguments(self.tree, cls, self.forward, self.get_inputs)
        self.drawn_fn, self.given_notes = given.drawn_fn, given.notes
        self.drawn_exprs = given.drawn_exprs
        if given.tree is not self.tree:
            # the forward rewritten: the text is the tree's, so that what is read by line stays the same code
            self.text = ast.unparse(given.tree)
            self.tree = ast.parse(self.text, str(self.path))
            funcs = {s.name: s for s in self.tree.body if isinstance(s, ast.FunctionDef)}
            cls = self.cls = next(s for s in self.tree.body if isinstance(s, ast.ClassDef) and s.name == cls.name)
            self.forward = next(s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "forward")
            self.get_inputs = funcs["get_inputs"]
        self.has_init_inputs = "get_init_inputs" in funcs
        a = self.forward.args
        # `*args` or `**kwargs` the forward never reads take what get_inputs() gives past the named parameters
        # (refused where it gives more: `problem_to_task`), and the task passes the named ones: nothing
        rest = [f"{star}{v.arg}" for star, v in (("*", a.vararg), ("**", a.kwarg)) if v is not None]
        read = {n.id for n in ast.walk(self.forward) if isinstance(n, ast.Name)}
        used = [r for r in rest if r.lstrip("*") in read]
        if used:
            raise ImportStop(f"{cls.name}.forward reads {used[0]} (line {self.forward.lineno}): the importer needs "
                             "named arguments", path=self.path)
        self.params, self.defaults = forward_params(self.forward)
        # sizes written as numbers where the inputs are made become constants of their own, so
        # that they can be varied like the problem's named ones
        self.tree, self.case_list, self.case_note = lift_case_list(self.tree)
        self.tree, self.lifted = lift_literal_sizes(self.tree, [funcs[f] for f in ("get_inputs", "get_init_inputs")
                                                                 if f in funcs])
        self.constants = literal_constants(self.tree)
        self.cases = 1

    # -- running ------------------------------------------------------------------------
    def _model(self, params: dict[str, Any], device: str) -> tuple[Any, list, dict, dict[str, Any]]:
        """The model made at ``params`` on ``device`` (in eval mode where the source's harness runs it so), its init
        arguments, and the namespace of the problem's file, run."""
        code = compile(with_constants(self.tree, params), str(self.path), "exec")
        ns: dict[str, Any] = {"__name__": "arena_imported_problem", "__file__": str(self.path)}
        with torch.device(device), torch.no_grad():
            exec(code, ns)
            if self.drawn_fn is not None:
                exec(compile(self.drawn_fn, str(self.path), "exec"), ns)
            init = ns["get_init_inputs"]() if self.has_init_inputs else []
            args, kwargs = _init_args(init)
            model = ns[self.cls.name](*args, **kwargs)
            if self.eval_mode:
                model.eval()
        return model, args, kwargs, ns

    def run(self, params: dict[str, Any], device: str = "meta") -> _Run:
        model, args, kwargs, ns = self._model(params, device)
        with torch.device(device), torch.no_grad():
            inputs, self.cases = _first_case(ns["get_inputs"]())
            if self.drawn_fn is not None:
                # the arguments the forward draws where they are not given, drawn as it draws them
                inputs = [*inputs, *ns[DRAWN_FN](*([] if is_static(self.forward) else [model]), *inputs)]
            steps = recurrent_steps(model)
            with flop_counter() as counter, peak_bytes_mode() as peak:
                out = model(*inputs)
        return _Run(model, args, kwargs, inputs, out, counter.get_total_flops(), peak.peak, steps())

    def probe(self, params: dict[str, Any], device: str = "meta") -> _Run:
        """``run`` as a probe keeps it: for its shapes, its tensors on the meta device (``shapes_only``)."""
        r = self.run(params, device)
        if device == "meta":
            return r
        return _Run(shapes_only(r.model), shapes_only(r.init_args), shapes_only(r.init_kwargs), shapes_only(r.inputs),
                    shapes_only(r.output), r.flops, r.peak, r.steps)

    def output_tensors(self, out: Any) -> list[torch.Tensor]:
        lines = [n.lineno for n in ast.walk(self.forward) if isinstance(n, ast.Return)]
        where = f"{self.cls.name}.forward (line {lines[-1] if lines else self.forward.lineno})"
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise ImportStop(f"{where} returns a {type(o).__name__}, not a tensor: a task's outputs are tensors",
                                 path=self.path)
            if o.dtype not in DTYPE_NAMES or o.dtype == torch.bool:
                raise ImportStop(f"{where} returns a {o.dtype} tensor: outputs are float or integer tensors of the "
                                 "schema's dtypes", path=self.path)
        return outs

    def purity(self) -> None:
        """What the forward pass runs must be pure: Model.forward, the forward of every other
        module class of the file, and the file's functions they name (initialisation code,
        which draws the parameters, is not looked at)."""
        funcs = [(f"{self.cls.name}.forward", self.forward)]
        for s in self.tree.body:
            if isinstance(s, ast.ClassDef) and s is not self.cls:
                funcs += [(f"{s.name}.forward", m) for m in s.body if isinstance(m, ast.FunctionDef)
                          and m.name == "forward"]
        named = free_names([f for _, f in funcs])
        funcs += [(f"{s.name}()", s) for s in self.tree.body if isinstance(s, ast.FunctionDef) and s.name in named
                  and s.name not in ("get_inputs", "get_init_inputs")]
        try:
            # a dropout module of probability 0 is the identity (KernelBench's ViT and GoogleNet: nn.Dropout(0.0))
            model = self._model(self.constants, "meta")[0]
            identity = {n for n, m in model.named_modules()
                        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p == 0}
        except Exception:  # noqa: BLE001 - a model that cannot be made says so where it is run
            identity = set()
        problem = impure_reason(funcs, self.params, self.eval_mode, identity)
        if problem:
            raise ImportStop(f"{problem}: a reference must be a pure function of its inputs; change the problem "
                             "(make the random tensor or the state an input) and import again", path=self.path)

    def input_inits(self, int_names: set[str]) -> list[tuple[dict, str | None] | None]:
        """Per element of get_inputs()'s list: its init, read from the expression that makes it; then those of
        the arguments the forward draws (``given_arguments``)."""
        elts = returned_elements(self.get_inputs)
        if elts is None:
            return []
        return [init_from_expr(e, int_names) for e in [*elts, *self.drawn_exprs]]


def _param_name(path: tuple[str, ...], taken: set[str]) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", "_".join(path))
    if not re.match(r"[A-Za-z_]", name):
        name = "p_" + name
    while name in taken:
        name += "_"
    return name


def _tensor_at(model: torch.nn.Module, path: tuple[str, ...]) -> torch.Tensor:
    obj: Any = model
    for p in path:
        obj = getattr(obj, p)
    return obj


NORMS = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
         "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm")
FAN_IN = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Bilinear",
          "LazyLinear")
ACTIVATIONS = {  # class -> (function, attributes passed after the input)
    "ReLU": ("F.relu", ()), "ReLU6": ("F.relu6", ()), "SiLU": ("F.silu", ()), "Mish": ("F.mish", ()),
    "Sigmoid": ("torch.sigmoid", ()), "Tanh": ("torch.tanh", ()), "Hardsigmoid": ("F.hardsigmoid", ()),
    "Hardswish": ("F.hardswish", ()), "SELU": ("F.selu", ()), "Softsign": ("F.softsign", ()),
    "Tanhshrink": ("F.tanhshrink", ()), "LogSigmoid": ("F.logsigmoid", ()),
    "GELU": ("F.gelu", ("approximate=approximate",)), "LeakyReLU": ("F.leaky_relu", ("negative_slope",)),
    "ELU": ("F.elu", ("alpha",)), "CELU": ("F.celu", ("alpha",)), "Softplus": ("F.softplus", ("beta", "threshold")),
    "Softshrink": ("F.softshrink", ("lambd",)), "Hardshrink": ("F.hardshrink", ("lambd",)),
    "Hardtanh": ("F.hardtanh", ("min_val", "max_val")), "Threshold": ("F.threshold", ("threshold", "value")),
    "Softmax": ("F.softmax", ("dim",)), "LogSoftmax": ("F.log_softmax", ("dim",)), "Softmin": ("F.softmin", ("dim",)),
    "GLU": ("F.glu", ("dim",)), "PixelShuffle": ("F.pixel_shuffle", ("upscale_factor",)),
    "PixelUnshuffle": ("F.pixel_unshuffle", ("downscale_factor",)),
    "AdaptiveAvgPool1d": ("F.adaptive_avg_pool1d", ("output_size",)),
    "AdaptiveAvgPool2d": ("F.adaptive_avg_pool2d", ("output_size",)),
    "AdaptiveAvgPool3d": ("F.adaptive_avg_pool3d", ("output_size",)),
    "AdaptiveMaxPool1d": ("F.adaptive_max_pool1d", ("output_size", "return_indices")),
    "AdaptiveMaxPool2d": ("F.adaptive_max_pool2d", ("output_size", "return_indices")),
    "AdaptiveMaxPool3d": ("F.adaptive_max_pool3d", ("output_size", "return_indices")),
    "Flatten": ("torch.flatten", ("start_dim", "end_dim")),
    "Upsample": ("F.interpolate", ("size", "scale_factor", "mode", "align_corners",
                                   "recompute_scale_factor=recompute_scale_factor")),
    "CosineSimilarity": ("F.cosine_similarity", ("dim", "eps")),
    "PairwiseDistance": ("F.pairwise_distance", ("norm", "eps", "keepdim")),
    "MSELoss": ("F.mse_loss", ("reduction=reduction",)), "L1Loss": ("F.l1_loss", ("reduction=reduction",)),
    "SmoothL1Loss": ("F.smooth_l1_loss", ("reduction=reduction", "beta=beta")),
    "HuberLoss": ("F.huber_loss", ("reduction=reduction", "delta=delta")),
    "KLDivLoss": ("F.kl_div", ("reduction=reduction", "log_target=log_target")),
    "ZeroPad1d": ("F.pad", ("padding",)), "ZeroPad2d": ("F.pad", ("padding",)), "ZeroPad3d": ("F.pad", ("padding",)),
    "ConstantPad1d": ("F.pad", ("padding", "'constant'", "value")),
    "ConstantPad2d": ("F.pad", ("padding", "'constant'", "value")),
    "ConstantPad3d": ("F.pad", ("padding", "'constant'", "value")),
    "ReflectionPad1d": ("F.pad", ("padding", "'reflect'")), "ReflectionPad2d": ("F.pad", ("padding", "'reflect'")),
    "ReplicationPad1d": ("F.pad", ("padding", "'replicate'")),
    "ReplicationPad2d": ("F.pad", ("padding", "'replicate'")),
    "ReplicationPad3d": ("F.pad", ("padding", "'replicate'")),
}
IDENTITY = ("Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")


_THROUGH_TENSOR = object()


class _Translator(ast.NodeTransformer):
    """Model.forward's body with ``self`` gone: submodule calls as functional calls, parameters
    and buffers as names, plain attributes as formulas over the constants."""

    def __init__(self, model: torch.nn.Module, fitter: Fitter, names: dict[tuple[str, ...], str], problem_path: Path):
        self.model = model
        self.fitter = fitter
        self.names = names               # tensor path -> signature name
        self.used: list[tuple[str, ...]] = []
        self.notes: list[str] = []
        self.calls: list[str] = []
        self.path = problem_path

    # -- helpers --------------------------------------------------------------------------
    def tensor(self, path: tuple[str, ...]) -> str:
        if path not in self.used:
            self.used.append(path)
        return self.names[path]

    def attr(self, path: tuple[str, ...], what: str) -> str:
        return self.fitter.render(lambda r: _tensor_at(r.model, path), what)

    def _expr(self, text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body

    # -- visiting -------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> ast.AST:
        chain = self_chain(node.func)
        if chain is not None:
            obj = self._resolve(chain)
            if obj is _THROUGH_TENSOR:
                return self.generic_visit(node)
            if isinstance(obj, torch.nn.Module):
                if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
                    raise Untranslatable(f"self.{'.'.join(chain)} is called with * or ** arguments")
                args = [ast.unparse(self.visit(a)) for a in node.args]
                kwargs = {kw.arg: ast.unparse(self.visit(kw.value)) for kw in node.keywords}
                return ast.copy_location(self._expr(self.module_call(tuple(chain), obj, args, kwargs)), node)
            if callable(obj) and not isinstance(obj, torch.Tensor):
                raise Untranslatable(f"forward calls the method self.{'.'.join(chain)}")
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        chain = self_chain(node)
        if chain is None:
            return self.generic_visit(node)
        obj: Any = self.model
        for i, name in enumerate(chain):
            if not isinstance(obj, torch.nn.Module):
                break
            path = tuple(chain[: i + 1])
            if name in obj._parameters or name in obj._buffers:
                if getattr(obj, name) is None:
                    replacement: ast.expr = ast.Constant(None)
                else:
                    replacement = ast.Name(self.tensor(path), ast.Load())
                return ast.copy_location(self._rest(replacement, chain[i + 1:]), node)
            if name in obj._modules:
                obj = obj._modules[name]
                continue
            value = getattr(obj, name, None)
            if callable(value):
                raise Untranslatable(f"forward uses the method self.{'.'.join(path)}")
            text = self.attr(path, f"self.{'.'.join(path)}")
            return ast.copy_location(self._rest(self._expr(text), chain[i + 1:]), node)
        raise Untranslatable(f"forward uses the submodule self.{'.'.join(chain)} other than by calling it")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "self":
            raise Untranslatable(f"forward uses self itself (line {node.lineno})")
        return node

    def _rest(self, base: ast.expr, names: list[str]) -> ast.expr:
        for n in names:
            base = ast.Attribute(base, n, ast.Load())
        return base

    def _resolve(self, chain: list[str]) -> Any:
        """What ``self.<chain>`` is, walking modules only (``_THROUGH_TENSOR`` once the chain
        passes a tensor or a plain value: ``self.linear.weight.t``)."""
        obj: Any = self.model
        for n in chain:
            if not isinstance(obj, torch.nn.Module):
                return _THROUGH_TENSOR
            obj = getattr(obj, n, None)
        return obj

    # -- submodules ------------------------------------------------------------------------
    def module_call(self, path: tuple[str, ...], m: torch.nn.Module, args: list[str], kwargs: dict[str, str]) -> str:
        kind = type(m).__name__
        where = f"self.{'.'.join(path)} ({kind})"
        if type(m).__module__.split(".")[0] != "torch":
            raise Untranslatable(f"{where} is a module of the problem's own")

        def a(attr: str) -> str:
            return self.attr((*path, attr), f"{where}.{attr}")

        def p(name: str) -> str:
            return "None" if getattr(m, name, None) is None else self.tensor((*path, name))

        self.calls.append(kind)
        if kind == "Sequential":
            if len(args) != 1 or kwargs:
                raise Untranslatable(f"{where} is called with {len(args)} arguments")
            x = args[0]
            for child_name, child in m._modules.items():
                x = self.module_call((*path, child_name), child, [x], {})
            return x
        if kwargs and kind not in ("MultiheadAttention",):
            raise Untranslatable(f"{where} is called with keyword arguments")
        if kind not in ("Bilinear", "CosineSimilarity", "PairwiseDistance", "MSELoss", "L1Loss", "SmoothL1Loss",
                        "HuberLoss", "KLDivLoss", "CrossEntropyLoss", "BCEWithLogitsLoss") and len(args) != 1:
            raise Untranslatable(f"{where} is called with {len(args)} arguments")
        x = args[0] if args else ""
        training = self.model.training and m.training
        if kind in IDENTITY:
            if kind != "Identity" and training and m.p > 0:
                raise ImportStop(f"the model's forward calls {where} with p={m.p} in training mode: random numbers; "
                                 "a reference must be a pure function of its inputs (set p=0 or drop it)",
                                 path=self.path)
            return x
        if kind == "RReLU":
            if training:
                raise ImportStop(f"the model's forward calls {where} in training mode: random slopes", path=self.path)
            return f"F.rrelu({x}, {a('lower')}, {a('upper')}, False)"
        if kind == "Linear":
            return f"F.linear({x}, {p('weight')}, {p('bias')})"
        if kind == "Bilinear":
            return f"F.bilinear({args[0]}, {args[1]}, {p('weight')}, {p('bias')})"
        m_conv = re.fullmatch(r"Conv([123])d", kind)
        if m_conv:
            if m.padding_mode != "zeros":
                raise Untranslatable(f"{where} pads with {m.padding_mode!r}")
            return (f"F.conv{m_conv.group(1)}d({x}, {p('weight')}, {p('bias')}, stride={a('stride')}, "
                    f"padding={a('padding')}, dilation={a('dilation')}, groups={a('groups')})")
        m_conv = re.fullmatch(r"ConvTranspose([123])d", kind)
        if m_conv:
            return (f"F.conv_transpose{m_conv.group(1)}d({x}, {p('weight')}, {p('bias')}, stride={a('stride')}, "
                    f"padding={a('padding')}, output_padding={a('output_padding')}, groups={a('groups')}, "
                    f"dilation={a('dilation')})")
        if kind in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"):
            if training or m.running_mean is None:
                if m.running_mean is not None:
                    self.notes.append(
                        f"{where} is in training mode: the reference normalises with the batch's "
                        "statistics, as the model's forward does, and leaves out its update of the running "
                        "statistics (state, not an output); decide whether the task should be inference-"
                        "mode BatchNorm (running statistics as inputs) instead"
                    )
                return f"F.batch_norm({x}, None, None, {p('weight')}, {p('bias')}, True, 0.0, {a('eps')})"
            return (
                f"F.batch_norm({x}, {p('running_mean')}, {p('running_var')}, {p('weight')}, {p('bias')}, False, "
                f"0.0, {a('eps')})"
            )
        if kind in ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
            if training or not m.track_running_stats:
                return f"F.instance_norm({x}, None, None, {p('weight')}, {p('bias')}, True, 0.0, {a('eps')})"
            return (
                f"F.instance_norm({x}, {p('running_mean')}, {p('running_var')}, {p('weight')}, {p('bias')}, "
                f"False, 0.0, {a('eps')})"
            )
        if kind == "LayerNorm":
            return f"F.layer_norm({x}, {a('normalized_shape')}, {p('weight')}, {p('bias')}, {a('eps')})"
        if kind == "GroupNorm":
            return f"F.group_norm({x}, {a('num_groups')}, {p('weight')}, {p('bias')}, {a('eps')})"
        if kind == "RMSNorm":
            return f"F.rms_norm({x}, {a('normalized_shape')}, {p('weight')}, {a('eps')})"
        if kind == "LocalResponseNorm":
            return f"F.local_response_norm({x}, {a('size')}, {a('alpha')}, {a('beta')}, {a('k')})"
        if kind == "Embedding":
            if m.max_norm is not None:
                raise Untranslatable(f"{where} has max_norm: it renormalises its weight in place")
            return f"F.embedding({x}, {p('weight')}, {a('padding_idx')})"
        if kind == "PReLU":
            return f"F.prelu({x}, {p('weight')})"
        m_pool = re.fullmatch(r"(Max|Avg)Pool([123])d", kind)
        if m_pool:
            n = m_pool.group(2)
            if m_pool.group(1) == "Max":
                return (
                    f"F.max_pool{n}d({x}, {a('kernel_size')}, {a('stride')}, {a('padding')}, {a('dilation')}, "
                    f"ceil_mode={a('ceil_mode')}, return_indices={a('return_indices')})"
                )
            extra = f", divisor_override={a('divisor_override')}" if n != "1" else ""
            return (
                f"F.avg_pool{n}d({x}, {a('kernel_size')}, {a('stride')}, {a('padding')}, "
                f"ceil_mode={a('ceil_mode')}, count_include_pad={a('count_include_pad')}{extra})"
            )
        if kind == "CrossEntropyLoss":
            return (
                f"F.cross_entropy({args[0]}, {args[1]}, {p('weight')}, ignore_index={a('ignore_index')}, "
                f"reduction={a('reduction')}, label_smoothing={a('label_smoothing')})"
            )
        if kind == "BCEWithLogitsLoss":
            return (
                f"F.binary_cross_entropy_with_logits({args[0]}, {args[1]}, {p('weight')}, "
                f"reduction={a('reduction')}, pos_weight={p('pos_weight')})"
            )
        if kind in ACTIVATIONS:
            fn, attrs = ACTIVATIONS[kind]
            parts = list(args)
            for spec in attrs:
                if spec.startswith("'"):
                    parts.append(spec)
                elif "=" in spec:
                    key, attr = spec.split("=")
                    parts.append(f"{key}={a(attr)}")
                else:
                    parts.append(a(spec))
            return f"{fn}({', '.join(parts)})"
        raise Untranslatable(f"{where} is not one of the modules the importer writes as functional calls")


def _live_statements(body: list[ast.stmt]) -> tuple[list[ast.stmt], list[int]]:
    """A forward's statements without the assignments to names nothing after them reads (KernelBench's LSTMHn
    decodes its last step through ``self.fc`` and returns the hidden state: the decoder's weights would be inputs
    the outputs do not depend on), and the lines left out. The forward is pure (``ModuleProblem.purity``); only a
    body of plain statements is pruned (a branch or a loop leaves it as it is), and an assignment to anything but
    names, or a bare expression, is kept."""
    plain = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass)
    if not all(isinstance(s, plain) for s in body):
        return body, []

    def names(node: ast.AST | None) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()

    def bound(targets: list[ast.expr]) -> set[str] | None:
        out: set[str] = set()
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, (ast.Attribute, ast.Subscript, ast.Starred)):
                    return None
                if isinstance(n, ast.Name):
                    out.add(n.id)
        return out

    live: set[str] = set()
    kept: list[ast.stmt] = []
    dead: list[int] = []
    for stmt in reversed(body):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else None
        to = bound(targets) if targets is not None else None
        if to is not None and not (to & live):
            dead.append(stmt.lineno)
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and to is not None:
            live = (live - to) | names(stmt.value)
        else:   # an augmented assignment reads its target; anything else reads what it names
            live |= names(stmt)
        kept.append(stmt)
    return kept[::-1], sorted(dead)


def _blank_statements(text: str, stmts: list[ast.stmt]) -> str | None:
    """``text`` with the lines of ``stmts`` blank (every other line where it was, so that the positions the
    problem's tree holds still read it); None where a statement shares a line with other code."""
    lines = text.splitlines()
    for st in stmts:
        first, last = lines[st.lineno - 1], lines[st.end_lineno - 1]
        rest = last.encode()[st.end_col_offset :].decode().strip()
        if first.encode()[: st.col_offset].decode().strip() or (rest and not rest.startswith("#")):
            return None
        for i in range(st.lineno - 1, st.end_lineno):
            lines[i] = ""
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _tensors_read(base: _Run, fwd: ast.FunctionDef, original: ast.FunctionDef) -> set[tuple[str, ...]] | None:
    """The paths of the model's parameters and buffers whose values ``fwd`` (the problem's forward, or its live
    lines) reads, found by running it once on ``base``'s model and inputs and recording every tensor a torch
    function is given (a recurrent layer's flat weights too); None where it cannot be run so."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_leaves

    class Reads(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.ids: set[int] = set()

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's protocol
            kwargs = kwargs or {}
            self.ids.update(id(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor))
            return func(*args, **kwargs)

    model = base.model
    fn_def = copy.deepcopy(fwd)
    static = is_static(original)
    fn_def.decorator_list = []
    try:
        scope = dict(type(model).forward.__globals__)
        exec(compile(ast.fix_missing_locations(ast.Module(body=[fn_def], type_ignores=[])), "<forward>", "exec"),
             scope)
        fn = scope[fn_def.name]
        device = next((t.device for t in model.parameters()), torch.device("meta"))
        reads = Reads()
        with torch.device(device), torch.no_grad(), reads:
            fn(*base.inputs) if static else fn(model, *base.inputs)
    except Exception:  # noqa: BLE001 - not run so: every tensor stays an input
        return None
    tensors = [*model.named_parameters(), *model.named_buffers()]
    return {tuple(n.split(".")) for n, t in tensors if id(t) in reads.ids}


def _init_fn(problem: ModuleProblem, cls: ast.ClassDef | None = None) -> ast.FunctionDef | None:
    """``cls.__init__`` (Model's by default), as written, or None."""
    cls = cls or problem.cls
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)


def _init_expr(problem: ModuleProblem, leaf: str, cls: ast.ClassDef | None = None) -> ast.expr | None:
    """The expression ``cls.__init__`` (Model's by default) makes its tensor ``self.<leaf>`` from
    (``self.w = nn.Parameter(EXPR)``, ``self.register_buffer("mask", EXPR)``), or None."""
    init_fn = _init_fn(problem, cls)
    for node in ast.walk(init_fn) if init_fn else []:
        expr = None
        if isinstance(node, ast.Assign) and any(self_chain(t) == [leaf] for t in node.targets):
            expr = node.value
            if isinstance(expr, ast.Call) and call_name(expr) in ("Parameter", "Buffer") and expr.args:
                expr = expr.args[0]
        elif (
            isinstance(node, ast.Call)
            and call_name(node) in ("register_buffer", "register_parameter")
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == leaf
        ):
            expr = node.args[1]
            if isinstance(expr, ast.Call) and call_name(expr) == "Parameter" and expr.args:
                expr = expr.args[0]
        if expr is not None:
            return expr
    return None


def _init_params(init_fn: ast.FunctionDef) -> list[str] | None:
    """An ``__init__``'s positional parameters past ``self``; None where it takes ``*args`` or ``**kwargs``."""
    if init_fn.args.vararg or init_fn.args.kwarg:
        return None
    return [a.arg for a in (*init_fn.args.posonlyargs, *init_fn.args.args)][1:]


def _bound_arguments(init_fn: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    """What a call of a class gives each parameter of its ``__init__`` (the call's arguments, else the defaults);
    None where the call cannot be bound so (``*args``, ``**kwargs``, a parameter given nothing)."""
    pos = _init_params(init_fn)
    if (pos is None or len(call.args) > len(pos) or any(isinstance(a, ast.Starred) for a in call.args)
            or any(k.arg is None for k in call.keywords)):
        return None
    a = init_fn.args
    bound: dict[str, ast.expr] = dict(zip(pos[len(pos) - len(a.defaults):], a.defaults))
    bound |= {k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    bound |= dict(zip(pos, call.args)) | {k.arg: k.value for k in call.keywords if k.arg}
    every = [*pos, *(k.arg for k in a.kwonlyargs)]
    return bound if all(p in bound for p in every) and set(bound) <= set(every) else None


def _submodule_scope(problem: ModuleProblem, path: tuple[str, ...]) -> tuple[ast.ClassDef, dict[str, str]] | None:
    """The class of the problem's file that owns the tensor at ``path`` (Model for a tensor of its own; for
    ``attn.bias``, the class ``Model.__init__`` makes ``self.attn`` with, ``self.attn = CausalSelfAttention(n_embd,
    max_seqlen)``), and that class's ``__init__`` parameters, each as an expression (text) over Model.__init__'s
    own; None where a link of the chain is not such a call, or an argument is not an expression of parameters
    (``self.``, a local of ``__init__``)."""
    classes = {s.name: s for s in problem.tree.body if isinstance(s, ast.ClassDef)}
    cls = problem.cls
    init_fn = _init_fn(problem, cls)
    params = _init_params(init_fn) if init_fn else None
    if params is None:
        return None
    scope = {p: p for p in params}
    for attr in path[:-1]:
        call = None
        for node in ast.walk(init_fn) if init_fn else []:
            if (isinstance(node, ast.Assign) and any(self_chain(t) == [attr] for t in node.targets)
                    and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                    and node.value.func.id in classes):
                call = node.value
        if call is None:
            return None
        cls = classes[call.func.id]   # type: ignore[union-attr] - a Name, checked above
        sub_init = _init_fn(problem, cls)
        given = _bound_arguments(sub_init, call) if sub_init else None
        if given is None:
            return None
        local = {n.id for n in ast.walk(init_fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        next_scope = {}
        for p, arg in given.items():
            names = free_names([ast.Expr(arg)])
            if "self" in names or names & (local - set(scope)):
                return None
            next_scope[p] = ast.unparse(Substitute({n: scope[n] for n in names if n in scope})
                                        .visit(copy.deepcopy(arg)))
        scope, init_fn = next_scope, sub_init
    return cls, scope


def _made_buffers(problem: ModuleProblem, model: torch.nn.Module, fitter: Fitter) -> dict[tuple[str, ...], str]:
    """The model's buffers (its own, or a submodule's whose class the problem's file defines and ``__init__`` makes
    from its arguments) that their ``__init__`` makes from its arguments alone, with no random number (a causal
    mask, ``torch.tril(torch.ones(max_seqlen, max_seqlen))``: structure, not data a kernel is given), as their
    expression over the problem's constants (each of Model.__init__'s arguments as ``get_init_inputs()`` gives it):
    the reference makes them, and they are not inputs (drawn at random, a mask's ``== 0`` never holds)."""
    init_fn = _init_fn(problem)
    params = _init_params(init_fn) if init_fn else None
    if params is None:
        return {}
    made: dict[tuple[str, ...], str] = {}
    for dotted, _ in model.named_buffers():
        path = tuple(dotted.split("."))
        owner = _submodule_scope(problem, path)
        if owner is None:
            continue
        cls, scope = owner
        expr = _init_expr(problem, path[-1], cls)
        if expr is None or any(isinstance(n, ast.Call) and call_name(n) in RANDOM_FUNCS for n in ast.walk(expr)):
            continue
        own_init = _init_fn(problem, cls)
        local = {n.id for n in ast.walk(own_init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} \
            if own_init else set()
        names = free_names([ast.Expr(expr)])
        if "self" in names or names & local - set(scope):
            continue
        expr = Substitute({n: scope[n] for n in names if n in scope}).visit(copy.deepcopy(expr))
        outer = free_names([ast.Expr(expr)]) & set(params)
        try:
            values = {}
            for p in outer:
                i = params.index(p)
                values[p] = fitter.render(lambda r, i=i: r.init_args[i], f"get_init_inputs()[{i}]")
        except Exception:  # noqa: BLE001 - an argument the fitter cannot write over the constants: an input as before
            continue
        made[path] = ast.unparse(Substitute(values).visit(expr))
    return made


def _init_for_param(
    model: torch.nn.Module,
    path: tuple[str, ...],
    shape_of: Callable[[tuple[str, ...]], list],
    problem: ModuleProblem,
    int_names: set[str],
) -> tuple[dict, str | None]:
    """How PyTorch initialises one of the model's tensors, as a signature init: a Linear's or a
    convolution's weight and bias uniform in +-1/sqrt(fan_in), a norm's weight near 1; a
    tensor the model makes itself, as its expression in __init__ says."""
    owner = model.get_submodule(".".join(path[:-1])) if len(path) > 1 else model
    kind, leaf = type(owner).__name__, path[-1]
    if owner is model:
        expr = _init_expr(problem, leaf)
        if expr is not None:
            return init_from_expr(expr, int_names)
        return {"kind": "normal"}, "its initialisation could not be read: drawn normal(0, 1)"
    if kind in FAN_IN and leaf in ("weight", "bias"):
        wshape = shape_of((*path[:-1], "weight"))
        fan = wshape[1:2] if kind == "Bilinear" else wshape[1:]
        bound = f"1 / sqrt({product_formula(fan)})"
        return {"kind": "uniform", "low": f"-{bound}", "high": bound}, None
    if kind in NORMS:
        if leaf == "weight":
            return {"kind": "ones_plus_noise"}, None
        if leaf == "bias":
            return {
                "kind": "normal",
                "std": 0.1,
            }, "initialised to zeros by PyTorch: drawn normal(0, 0.1) so that a kernel that ignores it fails"
        if leaf == "running_mean":
            return {"kind": "normal", "std": 0.1}, "a running mean (zeros at initialisation): drawn normal(0, 0.1)"
        if leaf == "running_var":
            return {
                "kind": "uniform",
                "low": 0.5,
                "high": 1.5,
            }, "a running variance (ones at initialisation): drawn uniform(0.5, 1.5)"
    if kind in RECURRENT and re.fullmatch(r"(weight|bias)_(ih|hh)(_l\d+(_reverse)?)?", leaf):
        # every weight and bias uniform in +-1/sqrt(hidden_size); weight_hh's columns are hidden_size
        hh = "weight_hh" if kind.endswith("Cell") else "weight_hh_l0"
        bound = f"1 / sqrt({product_formula(shape_of((*path[:-1], hh))[1:2])})"
        return {"kind": "uniform", "low": f"-{bound}", "high": bound}, None
    if kind == "Embedding":
        return {"kind": "normal"}, None
    if kind == "PReLU":
        return {
            "kind": "uniform",
            "low": 0.1,
            "high": 0.4,
        }, "PReLU's slope (0.25 at initialisation): drawn uniform(0.1, 0.4)"
    return {"kind": "normal"}, f"a {kind}.{leaf}: its initialisation is not known to the importer; drawn normal(0, 1)"


@on_one_thread
def import_kernelbench(path: Path | str, root: Path | str | None = None, task_id: str | None = None,
                       device: str = "cpu") -> ImportResult:
    """A KernelBench-style problem file -> a torch2hip task folder under ``root`` (default:
    the repository's tasks/). ``device``: where the importer's own check runs (``_module_self_check``; its probes
    and its measure of the rounding stay on the CPU)."""
    path = Path(path)
    if not path.is_file():
        raise ImportStop("file not found", path=path)
    _, name = resolve_task_id(task_id, path.stem, ("torch2hip",))
    problem = ModuleProblem(path)
    built = build_module_task(problem, name, check_device=device)
    unwritten = [(what, names) for what, names in built.unwritten if set(names) & set(problem.chained)]
    if unwritten:
        # sizes apart that a shape follows in a way no formula writes (a convolution's output pooled): one constant
        what, names = unwritten[0]
        built = build_module_task(ModuleProblem(path, split_chains=False), name, check_device=device)
        built.draft.decisions.append(f"{' = '.join(problem.chained)} stay as the problem chains them, one constant: "
                                     f"apart, {what} changes with {', '.join(names)} in a way the importer cannot "
                                     "write")
    d = built.draft
    d.category = "torch2hip"
    d.origin = f"the KernelBench-style problem {path.name}"
    return finish_draft(d, Path(root) if root else None, path, built.self_check)


@dataclass
class ModuleTask:
    draft: Draft
    self_check: Callable[[Path], list[str]]
    unwritten: list[tuple[str, list[str]]] = field(default_factory=list)   # Fitter.unwritten: no formula found


def build_module_task(problem: ModuleProblem, name: str, category: str = "torch2hip",
                      check_device: str = "cpu") -> ModuleTask:
    """The signature, reference, configs and roofline of a task made from a module problem
    (shared by the kernelbench importer and the aka importer's PyTorch module files); its self-check runs on
    ``check_device``."""
    path = problem.path
    problem.purity()
    consts = problem.constants
    device = "meta"
    slow_on_meta = None
    try:
        # this process's CPU time, not the clock's: a group norm's first run (2.7 CPU s, its one-time costs
        # counted) read 14.6 s by the clock beside 4 busy processes on 2 cores, and every probe then ran on the CPU
        # (where the shape_space's constraint is not looked for: a test failed under a full suite's load)
        start = time.process_time()
        base = problem.run(consts, "meta")
        problem.output_tensors(base.output)
        seconds = time.process_time() - start
        if seconds > META_SLOW_S:
            # and a first run's CPU time counts one-time costs too (the operators' first dispatch, the FLOP counter's
            # first use): VGG16's first meta run took 1.5 CPU s on one machine and 4 on another, past the bound, where
            # its second took 0.02; its probes then ran on the CPU, and its outputs' scale went unmeasured. Timed again
            start = time.process_time()
            base = problem.run(consts, "meta")
            seconds = time.process_time() - start
        if seconds > META_SLOW_S and base.peak <= CPU_PROBE_BYTES:
            # a recurrence runs step by step through Python on the meta device (a 6-layer GRU over 512 steps: 40 s a
            # probe, of some 20); on the CPU the same run takes a second. Its work does not say how long the CPU
            # takes (a bidirectional 6-layer LSTM's 89 GFLOP: 1 s), so the CPU is tried for the meta run's time.
            try:
                with probe_limits(seconds * CPU_PROBE_SHARE):
                    on_cpu = problem.run(consts, "cpu")
            except PROBE_CUT:
                pass
            else:
                slow_on_meta, device, base = seconds, "cpu", on_cpu
    except ImportStop:
        raise
    except Exception as first:  # noqa: BLE001 - retried on the CPU, then reported in one line
        try:
            device = "cpu"
            base = problem.run(consts, "cpu")
        except Exception as exc:  # noqa: BLE001
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            raise ImportStop(
                f"running the problem failed ({type(exc).__name__}: {first_line}; on the meta device: "
                f"{type(first).__name__})",
                path=path,
            ) from None
    outs = problem.output_tensors(base.output)
    problem_steps = base.steps      # a recurrence's: its drafts are held to what its steps take one after another
    fitter = Fitter(consts, lambda params: problem.probe(params, device))
    fitter._cache[()] = base
    decisions: list[str] = []
    if problem.lifted:
        decisions.append(
            "the sizes get_inputs / get_init_inputs wrote as numbers are config parameters of their own ("
            + ", ".join(f"{k} = {v}" for k, v in problem.lifted.items())
            + "; one number, one parameter): rename them after what they are, and split one that stands for "
            "two sizes that only happen to be equal"
        )
    if slow_on_meta is not None:
        decisions.append(f"the forward took {slow_on_meta:.0f} s on the meta device, so every probe ran on the CPU at "
                         "full size")
    elif device == "cpu":
        decisions.append("the forward does not run on the meta device, so every probe ran on the CPU at full size")
    decisions += problem.given_notes
    if problem.case_note:
        decisions.append(problem.case_note)
    elif problem.cases > 1:
        decisions.append(
            f"get_inputs() yields {problem.cases} cases: the first is the seen config; add the others "
            "(their shapes are in the problem) as configs if they matter"
        )

    int_names = {k for k, v in consts.items() if type(v) is int}
    taken = set(problem.params) | set(consts)
    inputs: list[dict] = []
    getters: list[tuple[dict, Callable[[_Run], Any]]] = []
    prelude: list[str] = []
    inits = problem.input_inits(int_names)
    n_given = len(base.inputs)
    if n_given > len(problem.params):
        raise ImportStop(
            f"get_inputs() gives {n_given} values but {problem.cls.name}.forward takes {len(problem.params)}", path=path
        )
    missing = [p for p in problem.params[n_given:] if p not in problem.defaults]
    if missing:
        raise ImportStop(f"get_inputs() gives no value for forward's {', '.join(missing)}", path=path)

    def dims_of(get: Callable[[_Run], torch.Tensor], what: str, ndim: int) -> list:
        return [fitter.int_formula(lambda r, i=i: get(r).shape[i], f"dimension {i} of {what}") for i in range(ndim)]

    for i, (pname, value) in enumerate(zip(problem.params, base.inputs)):
        if isinstance(value, torch.Tensor):
            if value.dtype not in DTYPE_NAMES:
                raise ImportStop(
                    f"get_inputs() element {i} ({pname}) is {value.dtype}: the schema's dtypes are "
                    f"{', '.join(DTYPE_NAMES.values())}",
                    path=path,
                )
            def getter(r: Any, i: int = i) -> Any:
                return r.inputs[i]

            spec = {"name": pname, "dtype": DTYPE_NAMES[value.dtype], "shape": dims_of(getter, pname, value.dim())}
            init, note = (
                inits[i]
                if i < len(inits) and inits[i]
                else ({"kind": "normal"}, "its expression in get_inputs() could not be read")
            )
            if value.dtype == torch.bool:
                init, note = {"kind": "bernoulli"}, None
            elif (
                value.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
                and init["kind"] != "randint"
            ):
                init, note = (
                    {"kind": "randint", "low": 0, "high": 16},
                    "an integer input not made by randint: drawn in [0, 16)",
                )
            if init != {"kind": "normal"}:
                spec["init"] = init
            if note:
                decisions.append(f"input {pname}: {note}")
            inputs.append(spec)
            getters.append((spec, getter))
        else:
            prelude.append(f"{pname} = {fitter.render(lambda r, i=i: r.inputs[i], f'forward argument {pname}')}")
    for pname in problem.params[n_given:]:
        prelude.append(f"{pname} = {ast.unparse(problem.defaults[pname])}")

    # parameters and buffers: signature names for every tensor of the model
    names: dict[tuple[str, ...], str] = {}
    tensors = [(tuple(n.split(".")), t, "parameter") for n, t in base.model.named_parameters()]
    tensors += [(tuple(n.split(".")), t, "buffer") for n, t in base.model.named_buffers()]
    for pth, _t, _ in tensors:
        names[pth] = _param_name(pth, taken)
        taken.add(names[pth])

    translator = _Translator(base.model, fitter, names, path)
    fallback_reason = None
    made = _made_buffers(problem, base.model, fitter) if inputs else {}
    made_read: list[tuple[str, ...]] = []

    def made_by_reference(paths: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
        """``paths`` (the model's tensors the reference reads) less those it makes as __init__ does, each made
        in its prelude instead of given."""
        for pth in paths:
            if pth in made and pth not in made_read:
                made_read.append(pth)
                # one line: the prelude's lines are indented one by one
                prelude.append(f"with torch.device({inputs[0]['name']}.device): {names[pth]} = {made[pth]}")
                decisions.append(f"the model's buffer self.{'.'.join(pth)} is made by its __init__ from its sizes "
                                 f"alone (`{made[pth]}`): the reference makes it as __init__ does, and it is not an "
                                 "input")
        return [p for p in paths if p not in made]
    fwd = copy.deepcopy(problem.forward)
    fwd.body, dead = _live_statements(fwd.body)
    dead_note = (f"{problem.cls.name}.forward computes what it does not return (line"
                 f"{'s' if len(dead) > 1 else ''} {', '.join(map(str, dead))}): left out of the reference, "
                 "and the model's tensors only those lines use out of the signature")
    problem_text = problem.text
    try:
        body = [translator.visit(s) for s in fwd.body]
        body = [ast.fix_missing_locations(s) for s in body]
        if dead:
            decisions.append(dead_note)
        used_paths = made_by_reference(translator.used)
    except Untranslatable as exc:
        fallback_reason = str(exc)
        body = []
        # the problem's classes go into the reference as written: its forward's dead lines blanked there (where
        # they are lines of their own), and the model's tensors its live lines read are the inputs
        blanked = _blank_statements(problem.text, [st for st in problem.forward.body if st.lineno in dead])
        if blanked is not None and dead:
            problem_text = blanked
            decisions.append(dead_note)
        read = _tensors_read(base, fwd if blanked is not None else problem.forward, problem.forward)
        used_paths = [
            p
            for p, t, kind in tensors
            if not (
                p[-1] == "num_batches_tracked" or (p[-1] in ("running_mean", "running_var") and base.model.training)
            )
            and (read is None or p in read)
        ]
        used_paths = made_by_reference(used_paths)
    decisions += translator.notes if not fallback_reason else []

    params_specs: list[dict] = []
    shapes: dict[tuple[str, ...], list] = {}

    def shape_of(pth: tuple[str, ...]) -> list:
        if pth not in shapes:
            shapes[pth] = dims_of(
                lambda r: _tensor_at(r.model, pth), f"self.{'.'.join(pth)}", _tensor_at(base.model, pth).dim()
            )
        return shapes[pth]

    for pth in used_paths:
        t = _tensor_at(base.model, pth)
        if t.dtype not in DTYPE_NAMES:
            raise ImportStop(f"self.{'.'.join(pth)} is {t.dtype}: not a dtype of the schema", path=path)
        def getter(r: Any, pth: Any = pth) -> Any:
            return _tensor_at(r.model, pth)

        shape = shape_of(pth)
        init, note = _init_for_param(base.model, pth, shape_of, problem, int_names)
        if note:
            decisions.append(f"input {names[pth]} (self.{'.'.join(pth)}): {note}")
        spec = {"name": names[pth], "dtype": DTYPE_NAMES[t.dtype], "shape": shape}
        if init != {"kind": "normal"}:
            spec["init"] = init
        params_specs.append(spec)
        getters.append((spec, getter))
    unused = [".".join(p) for p, t, kind in tensors if p not in used_paths and kind == "parameter"]
    if unused:
        decisions.append(
            f"the model's parameter{'s' if len(unused) > 1 else ''} {', '.join(unused)} "
            f"{'are' if len(unused) > 1 else 'is'} not used by forward: left out of the signature"
        )

    out_names = ["out"] if len(outs) == 1 else [f"out{i}" for i in range(len(outs))]
    out_names = [n if n not in taken else n + "_" for n in out_names]
    outputs = []
    for i, (oname, o) in enumerate(zip(out_names, outs)):
        n_outs = len(outs)
        getter = lambda r, i=i, n=n_outs: (  # noqa: E731 - a formula's getter, as the fitter reads it
            r.output if n == 1 and not isinstance(r.output, (tuple, list)) else r.output[i]
        )
        spec = {"name": oname, "dtype": DTYPE_NAMES[o.dtype], "shape": dims_of(getter, f"output {oname}", o.dim())}
        outputs.append(spec)
        getters.append((spec, getter))

    # per element of a tensor where the count is no product of the constants (outputs first)
    per = [(spec["shape"], lambda r, g=g: g(r).numel()) for spec, g in reversed(getters)]
    flops, flops_ok = fitter.number_formula(lambda r: r.flops, per)
    if not flops_ok:
        decisions.append(
            f"roofline.flops is the count of the seen config ({flops}): the counter's total does not "
            "follow the constants as a product; write it as a formula"
        )

    # the reference's text
    all_inputs = inputs + params_specs
    reference_args = [s["name"] for s in all_inputs]
    ref_lines = []
    if fallback_reason is None:
        body_text = "\n".join(ast.unparse(s) for s in body)
        free = free_names(body) | free_names([ast.parse(p) for p in prelude])
    else:
        init_args = [
            fitter.render(lambda r, i=i: r.init_args[i], f"get_init_inputs()[{i}]") for i in range(len(base.init_args))
        ]
        init_args += [
            f"{k}={fitter.render(lambda r, k=k: r.init_kwargs[k], f'get_init_inputs() {k}')}" for k in base.init_kwargs
        ]
        first_float = next(
            (s["name"] for s in all_inputs if s["dtype"].startswith(("float", "bfloat"))),
            all_inputs[0]["name"] if all_inputs else None,
        )
        mapping = ", ".join(f"{'.'.join(p)!r}: {names[p]}" for p in [*used_paths, *made_read])
        fwd_args = ", ".join(problem.params)
        build = f"{problem.cls.name}({', '.join(init_args)})"
        lines = ["with torch.device('meta'):", f"    model = {build}"]
        if first_float:
            # built on the meta device (no memory, no initialisation), unless its __init__ reads values there
            # (.item()): then where the inputs are
            lines = [
                "try:",
                *(f"    {ln}" for ln in lines),
                f"    model = model.to_empty(device={first_float}.device)",
                "except RuntimeError:  # its __init__ reads values: built where the inputs are",
                f"    with torch.device({first_float}.device):",
                f"        model = {build}",
                f"model = model.to({first_float}.dtype)",
            ]
        # built once for its sizes (and the inputs' device and dtype), not on every call: a network's __init__
        # (SwinV2's: its weights drawn on the GPU, 29-58 ms a call on an H200) is no part of its forward, and timed
        # with it the eager starting point was past the timing window at every batch
        key = [a.split("=", 1)[1] if re.match(r"\w+=", a) else a for a in init_args]
        key += [f"{first_float}.device", f"{first_float}.dtype"] if first_float else []
        lines = [
            f"key = repr(({', '.join(key)}{',' if len(key) == 1 else ''}))     # a list among the sizes is no dict key",
            f"model = {BUILT}.get(key)",
            "if model is None:",
            f"    {BUILT}.clear()     # the last one built let go first",
            *(f"    {ln}" for ln in lines),
            f"    {BUILT}[key] = model",
        ]
        body_text = "\n".join(
            [
                *lines,
                f"return torch.func.functional_call(model, {{{mapping}}}, "
                f"({fwd_args}{',' if len(problem.params) == 1 else ''}))",
            ]
        )
        free = (
            free_names([ast.parse(body_text.replace("return ", "_ = "))])
            | free_names([ast.parse(p) for p in prelude])
            | {problem.cls.name}
        ) - {BUILT}
        decisions.append(
            f"the reference calls the problem's {problem.cls.name} through torch.func.functional_call "
            f"because {fallback_reason}: it builds the model once for each config's sizes and keeps the last one "
            "(its own parameters unused); write forward as plain torch calls if you can"
        )
    decisions += fitter.inexact
    floats_used = sorted(n for n in free if n in consts and type(consts[n]) is float)
    ints_in_body = {n for n in free if n in int_names}
    used_ints = [k for k in consts if k in (fitter.used | ints_in_body) and k in int_names]
    used_floats = [k for k in consts if k in (set(fitter.used) | set(floats_used)) and type(consts[k]) is float]
    scalars = [{"name": k, "type": "int64"} for k in used_ints] + [
        {"name": k, "type": "float32", "value": consts[k]} for k in used_floats
    ]
    imports = import_lines(problem.tree)
    skip = {"get_inputs", "get_init_inputs", *consts}
    if fallback_reason is None:
        skip.add(problem.cls.name)
        helpers = module_defs(problem.tree, free, skip)
    else:
        # the problem as written, less get_inputs and get_init_inputs (its constants stay: module code may read
        # them; inside reference() the scalars of the same names shadow them)
        helpers = [
            s
            for s in problem.tree.body
            if not isinstance(s, (ast.Import, ast.ImportFrom))
            and not (isinstance(s, ast.FunctionDef) and s.name in ("get_inputs", "get_init_inputs"))
        ]
    bound = bound_by_imports(imports)
    header = [i for i in imports]
    if "torch" not in bound:
        header.append("import torch")
    if "F" not in bound:
        header.append("import torch.nn.functional as F")
    helper_text = join_statements(problem_text, helpers)
    signature = ", ".join(reference_args + [s["name"] for s in scalars])
    doc = (
        f'    """{problem.cls.name}.forward of {path.name} as a function: its tensors, the model\'s parameters and '
        f'buffers, then the problem\'s\n    constants (written by `arena tasks import`; read it)."""'
    )
    ref_lines = [
        f'"""Reference of {category}/{name}: {problem.cls.name}.forward of {path.name} '
        '(imported; check it against the original)."""',
        *header,
        "",
    ]
    if helper_text:
        ref_lines += ["", helper_text, ""]
    if fallback_reason is not None:
        ref_lines += ["", f"{BUILT}: dict = {{}}     # the model reference() last built, by sizes, device and dtype"]
    ref_lines += ["", f"def reference({signature}):", doc]
    ref_lines += [f"    {ln}" for ln in prelude]
    ref_lines += [f"    {ln}" if ln else "" for ln in body_text.splitlines() if ln is not None]
    reference = "\n".join(ref_lines).rstrip() + "\n"

    # configs
    params = {k: consts[k] for k in used_ints}
    env_floats = {k: consts[k] for k in used_floats}
    tensors_specs = inputs + params_specs + [{**o, "_output": True} for o in outputs]

    # the original run on a config (once per config), or the exception it raised
    run_at = once_per_config(lambda cfg: problem.probe({**consts, **cfg}, device))

    def temporaries(cfg: dict) -> int:
        """The bytes the forward pass has alive at once past its outputs', where it runs on the meta device (on the
        CPU a run at a size past the bounds is what they are there to prevent)."""
        r = run_at(cfg) if device == "meta" else None
        if not isinstance(r, _Run):
            return 0
        outs = r.output if isinstance(r.output, (tuple, list)) else [r.output]
        return max(0, r.peak - sum(o.nbytes for o in outs if isinstance(o, torch.Tensor)))

    def valid(cfg: dict) -> bool:
        try:
            r = run_at(cfg)
            if isinstance(r, Exception):
                return False
            env = {**cfg, **env_floats}
            for spec, get in getters:
                want = tuple(int(formula.evaluate(x, env)) for x in spec["shape"])
                if tuple(get(r).shape) != want:
                    return False
            return True
        except Exception:  # noqa: BLE001 - the original does not accept this config
            return False

    def size(cfg: dict) -> int:
        try:
            return count_elements(tensors_specs, {**cfg, **env_floats})
        except formula.FormulaError:
            return 10**18

    def nbytes(cfg: dict) -> int:
        try:
            return count_bytes(tensors_specs, {**cfg, **env_floats})
        except formula.FormulaError:
            return 10**18

    reinit = [
        f"{dotted_name(n.func)} (line {n.lineno})"
        for n in ast.walk(problem.tree)
        if isinstance(n, ast.Call) and dotted_name(n.func).startswith(("nn.init.", "torch.nn.init.", "init."))
    ]
    if reinit:
        decisions.append(
            f"the problem re-initialises tensors ({', '.join(reinit[:3])}): the inits in task.yaml follow "
            "PyTorch's defaults for each module type; make them draw as the problem does"
        )

    def count(r: _Run) -> int:
        return len(list(r.model.named_parameters())) + len(list(r.model.named_buffers()))

    structural = [
        k
        for k in used_ints
        if fitter.run({k: consts[k] * 2}) is not None and count(fitter.run({k: consts[k] * 2})) != count(base)
    ]
    if structural:
        decisions.append(
            f"the number of the model's tensors changes with {', '.join(structural)}: the signature has "
            f"the tensors of the seen value, so {', '.join(structural)} must stay fixed (shape_space "
            "choices)"
        )
    vary = [k for k in used_ints if params[k] >= MIN_VARIED and k not in structural]
    # a batch below MIN_VARIED (EfficientNetB2's 2) is varied as the larger sizes are: the leading size of every
    # input and output and of no parameter's shape, it changes what a kernel is given, not the model
    batch = leading_size(inputs, outputs, params_specs)
    if batch in used_ints and batch not in vary and batch not in structural and params[batch] >= 1:
        vary.insert(0, batch)
    # a size a tensor's dimension follows in a way the signature cannot write (kept as the number): no config
    # that changes it matches the signature
    unwritable = [k for k in vary if k in fitter.unwritable]
    if unwritable:
        vary = [k for k in vary if k not in unwritable]
        decisions.append(f"{', '.join(unwritable)} changes tensors' shapes in a way no formula here writes: kept as "
                         "the problem has it in every config (shape_space choices)")
    # a size no tensor of the signature follows, only a buffer the reference makes (a causal mask's largest
    # length, of which the forward reads a corner): varied, it changes nothing a kernel is given or writes
    shaped = {n for spec in tensors_specs for x in spec["shape"] for n in re.findall(r"[A-Za-z_]\w*", str(x))}
    made_only = [k for k in vary if k not in shaped and any(re.search(rf"\b{k}\b", made[p]) for p in made_read)]
    if made_only:
        vary = [k for k in vary if k not in made_only]
        decisions.append(f"{', '.join(made_only)} sizes only the buffers the reference makes, not a tensor of the "
                         "signature: kept as the problem has it in every config (shape_space choices)")
    def work(cfg: dict) -> float:
        try:
            return float(formula.evaluate(flops, {**cfg, **env_floats}))
        except formula.FormulaError:
            return 0.0

    # the work bounds the drafts only where it is a formula of the sizes (not the seen config's count)
    calls = [type(m).__name__ for m in base.model.modules()] + re.findall(r"\b(?:F|torch)\.[\w.]+", path.read_text())
    if category == "hip2hip":     # its starting kernel is the source's HIP, not PyTorch's
        calls.append(HIP_STARTING_KERNEL)
    factor = work_factor(calls)[0]
    # a problem that lists cases (test shapes, as gpumode's get_inputs loops over) below the timing window: each
    # grown into it, as the AKA importer grows a test's cases, the drafts made around the largest (a problem's one
    # set of sizes is its author's production shape, kept)
    counted = work if flops_ok else (lambda c: 0.0)
    enough = in_window(nbytes, counted)
    listed = [{k: c.get(k, params[k]) for k in params} for c in problem.case_list or []]
    listed = [c for i, c in enumerate(listed) if c not in listed[:i] and nbytes(c) <= MAX_CONFIG_BYTES and valid(c)]
    # (where some are inside it already, only where the model runs on the meta device: on the CPU each probe of a
    # case grown runs at its full size, beside cases as large)
    below = [c for c in listed if not enough(c)]
    # a case grown no further than the drafts may go, the reference's temporaries counted (attention's scores)
    growth = grown_cases(listed, vary, lambda c: valid(c) and nbytes(c) + temporaries(c) <= MAX_CONFIG_BYTES,
                         nbytes, enough, work=counted) if len(listed) >= 2 and below and (
        device == "meta" or len(below) == len(listed)) else []
    base = max((g for _, _, g in growth), key=nbytes) if growth else params
    def serial(cfg: dict) -> float:
        """The seconds a config's recurrent steps take one after another (``RECURRENT_STEP_S`` each)."""
        r = run_at(cfg)
        return r.steps * RECURRENT_STEP_S if isinstance(r, _Run) else 0.0

    # a memory-bound problem whose one set of sizes, and every draft around it, moves less than the rules ask
    # (EfficientNetB2 at a batch of 2: 44 MB, its weights): a seen config grown from it, its batch first (a network's
    # work grows with it, the network unchanged); not a loss's one value (over 100 MB of inputs, drawing them again
    # moves it within float32's tolerance: the degeneracy rules refuse what this rule asks)
    roofline, rnotes = roofline_draft(tensors_specs, flops, {**params, **env_floats})
    grow_bytes = (MIN_BYTES_MEMORY_BOUND if roofline["bound"] == "memory" and device == "meta" and not growth
                  and len(listed) < 2 and any(o["shape"] for o in outputs) else 0.0)
    seen, held, smoke, notes, _ = draft_configs(base, vary, valid, size, "problem", nbytes,
                                                work if flops_ok else None, calls=calls, temporaries=temporaries,
                                                smoke_from=params if growth else None,
                                                serial=serial if problem_steps else None,
                                                min_bytes=grow_bytes, grow_first=[batch] if batch else [])
    scaled = {k: seen[0][k] for k in params}      # the problem's sizes, or what they were scaled down to (or grown)
    if growth:
        grew = [{"name": f"case{i}", **g, **grown_from(c, g)} for i, c, g in growth]
        seen = topped_up(grew, seen[1:], vary, valid, nbytes, enough,
                         fallback=[{"name": f"case{i}", **c} for i, c in enumerate(listed)],
                         fits=lambda c: counted(c) * factor <= MAX_CONFIG_FLOPS)
        notes.insert(0, "the problem's cases"
                        + (f" {', '.join(f'case{i}' for i, c in enumerate(listed) if c in below)}"
                           if len(below) < len(listed) else "")
                        + f" move at most {max(nbytes(c) for c in below) / 1e6:.1f} MB"
                        + (f" ({max(work(c) for c in below) / 1e9:.2g} GFLOP)" if flops_ok else "")
                        + f", below the timing window (>= 20 us on an H100): seen.yaml holds {len(growth)} of them "
                        f"grown into it (their sizes doubled in turn until one moves {WINDOW_BYTES / 1e6:.0f} MB or "
                        f"needs {WINDOW_FLOPS / 1e9:.0f} GFLOP, each size accepted by the original), heldout.yaml "
                        "drafts around the largest; the smoke config is shrunk from the problem's own")
    elif len(listed) >= 2:
        seen = [{"name": f"case{i}", **c} for i, c in enumerate(listed)]
    decisions += notes
    if len(held) < 4:
        decisions.append(f"only {len(held)} held-out drafts were accepted by the original: write at least 4")
    decisions += rnotes
    space = shape_space_draft(scaled, vary)
    if batch in vary and scaled[batch] < MIN_VARIED:
        # a batch that small is the problem's choice (a training-mode BatchNorm of 1x1 maps refuses a batch of 1):
        # drawn no smaller
        space[batch]["min"] = scaled[batch]
    if device == "meta":   # on the CPU each probe runs at full size: the self-check reports what is refused
        constraint, note = space_constraint(scaled, vary, space, valid, source=path.read_text())
        if constraint:
            space["constraint"] = constraint
        if note:
            decisions.append(note)
    fixed = [k for k in params if k not in vary]
    how_seen = " (its cases grown)" if growth else " (scaled down)" if scaled != params else ""
    decisions.insert(
        0,
        f"configs/seen.yaml has the problem's own shapes"
        f"{how_seen} first; "
        "the rest of seen.yaml and all of "
        "heldout.yaml are drafts (each checked against the original model): make the seen configs "
        "production shapes inside the timing window (>= 20 us on an H100) and the held-out ones "
        "differ in kind",
    )
    decisions.insert(
        1,
        "shape_space is a draft ([value / 8, 4 * value] for sizes"
        + (f"; {', '.join(fixed)} fixed" if fixed else "")
        + "): add the constraints the model needs (divisibility, sizes that must agree), which the "
        "importer cannot know",
    )
    decisions.insert(
        2,
        "title, description, tags, difficulty, roofline (bound and formulas) and forbidden are "
        "drafts: say what the kernel computes, in what precision, and which library calls a candidate "
        "may not make",
    )
    title = _title_from(problem)
    description = _description_from(problem, path)
    kinds = sorted(set(translator.calls))
    ops = sorted(
        {
            m.group(0)
            for m in re.finditer(r"\b(?:F|torch)\.[a-z_0-9.]+", body_text)
            if m.group(0) not in ("torch.device", "torch.func.functional_call")
        }
    )
    forbidden = sorted({o.replace("F.", "torch.nn.functional.") for o in ops})
    d = Draft(
        category=category,
        name=name,
        title=title,
        description=description,
        entry=name,
        inputs=inputs + params_specs,
        outputs=outputs,
        scalars=scalars,
        roofline=roofline,
        shape_space=space,
        reference=reference,
        tags=["imported", "kernelbench"],
        difficulty=1 if len(kinds) + len(ops) <= 1 else 2,
        forbidden=forbidden,
        seen=seen,
        heldout=held,
        smoke=smoke,
        decisions=decisions,
        notes={
            "title": "say what the task is",
            "description": "what the kernel computes, precisely",
            "tags": "families of the coverage table",
            "difficulty": "1 single op, 2 fused, 3 model block",
            "roofline": "bytes: every tensor once; flops: PyTorch's counter",
            "shape_space": "ranges around the problem's values; add constraints",
            "forbidden": "the calls the reference makes; keep those a candidate may not make",
        },
    )

    if not flops_ok:
        def counted(cfg: dict) -> float | None:
            r = run_at(cfg)
            return float(r.flops) if isinstance(r, _Run) else None

        d.work = counted

    def smoke_degenerate(found: list[str]) -> bool:
        return any(f.startswith("on the smoke config: ") for f in found)

    def self_check(folder: Path) -> tuple[list[str], list[str]]:
        decisions, degenerate = rounding_tolerance(folder, d)    # what the tolerance is, or why it was not measured
        d.decisions += decisions
        degenerate += few_values_at_sizes(folder)
        degenerate, said = drop_degenerate_configs(d, folder, degenerate)
        passed, found = _module_self_check(folder, problem, names, used_paths, check_device)
        if smoke_degenerate(found):
            # shrunk that far, a size the forward reduces over can reach 1 (a softmax over a width pooled four
            # times: every value 1, the weights before it read by nothing)
            grown = larger_smoke(d, folder, vary, size,
                                 lambda: _module_self_check(folder, problem, names, used_paths, check_device),
                                 lambda again: not again[1], found[0], valid)
            if grown is not None:
                d.decisions.append(grown[0])
                passed, found = grown[1]
        passed += [said] if said else []
        found += [f"{p} (the degeneracy rules of CONTRIBUTING.md; change the init or the problem)"
                  for p in degenerate]
        return passed, found + _space_check(folder, valid)

    return ModuleTask(d, self_check, list(fitter.unwritten))


def _space_check(folder: Path, valid: Callable[[dict], bool], n: int = 12) -> list[str]:
    """Configs drawn from the drafted shape_space (as the random split draws them) that the
    original problem rejects: the constraint the author must add."""
    from arena.taskdef.loader import load_task
    from arena.taskdef.shapes import DrawLimits, draw_configs

    try:
        task = load_task(folder)
        drawn = draw_configs(task, n, 0, DrawLimits(max_tensor_bytes=1e15, max_roofline_bytes=1e18, max_flops=1e21))
    except ArenaError:
        return []
    bad = [dict(c.params) for c in drawn if not valid(dict(c.params))]
    if not bad:
        return []
    return [
        f"{len(bad)} of {len(drawn)} configs drawn from the draft shape_space are rejected by the original "
        f"(e.g. {bad[0]}): add a shape_space constraint"
    ]


def _title_from(problem: ModuleProblem) -> str:
    doc = ast.get_docstring(problem.cls) or ast.get_docstring(problem.tree) or ""
    first = doc.strip().splitlines()[0].strip().rstrip(".") if doc.strip() else ""
    return first[:100] if len(first) >= 3 else f"{problem.path.stem} (imported)"


def _description_from(problem: ModuleProblem, path: Path) -> str:
    doc = (ast.get_docstring(problem.cls) or ast.get_docstring(problem.tree) or "").strip()
    return (
        ((doc + "\n\n") if doc else "")
        + f"Imported from {path.name}: {problem.cls.name}.forward, with the model's parameters as inputs.\n"
        "TODO: say what the kernel computes, in what precision, and where the work is.\n"
    )


def _module_self_check(
    folder: Path, problem: ModuleProblem, names: dict[tuple[str, ...], str], used_paths: list[tuple[str, ...]],
    device: str = "cpu",
) -> tuple[list[str], list[str]]:
    """The written reference against the original model on the smoke config, on ``device`` (the CPU, where a
    network past ``SELF_CHECK_FLOPS`` is left to a GPU's check; a GPU, in fp32 as the harness computes it there): the
    same inputs (the harness's input maker), the model's tensors set to the signature's."""
    from arena.check.degeneracy import reference_problems
    from arena.check.inputs import fp32_as_fp32, make_inputs
    from arena.evaluation.sides import import_reference
    from arena.taskdef.loader import load_task

    out: list[str] = []
    passed: list[str] = []
    try:
        task = load_task(folder)
        config = task.configs("smoke")[0]
        # a whole network at a size the importer could not shrink (an image size its classifier fixes) takes
        # minutes on a CPU core: counted on the meta device first, and left to a GPU's check past the bound
        try:
            meta = problem.run({**problem.constants, **dict(config.params)}, "meta")
        except Exception:  # noqa: BLE001 - a model that does not run on the meta device is checked as it was
            meta = None
        weights = sum(t.numel() for t in [*meta.model.parameters(), *meta.model.buffers()]) if meta else 0
        if device == "cpu" and meta is not None and (meta.flops > SELF_CHECK_FLOPS or weights > SELF_CHECK_ELEMENTS):
            what = (f"needs {meta.flops / 1e9:.0f} GFLOP" if meta.flops > SELF_CHECK_FLOPS
                    else f"makes a module of {weights / 1e6:.0f} M parameters")
            bound = f"{SELF_CHECK_FLOPS / 1e9:.0f} GFLOP, {SELF_CHECK_ELEMENTS / 1e6:.0f} M parameters"
            out.append(f"the smoke config {what}, more than the importer checks on the CPU ({bound}): reference.py "
                       f"was not compared with {problem.cls.name}.forward here; `arena tasks check` on a GPU "
                       "compares it with its own outputs; or import on a GPU machine with --device cuda")
            return passed, out
        if device != "cpu":
            fp32_as_fp32()
        env = task.env(config)
        ins = make_inputs(task, env, 0, device)
        ref = import_reference(task.reference_path, f"arena_import_check_{abs(hash(str(folder)))}")
        scalars = [task.scalar_value(s, env) for s in task.scalars]
        got = ref.reference(*[t.clone() for t in ins.values()], *scalars)
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        with torch.random.fork_rng():  # the model's own initialisation draws: the caller's RNG untouched
            run = problem.run({**problem.constants, **dict(config.params)}, device)
        with torch.no_grad():
            for pth in used_paths:
                _tensor_at(run.model, pth).copy_(ins[names[pth]])
            args = [ins[n] if n in ins else v for n, v in zip(problem.params, run.inputs)]
            want = run.model(*args)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        worst = 0.0
        for spec, g, w in zip(task.outputs, got, want):
            if g.shape == w.shape:
                worst = max(worst, (g.float() - w.float()).abs().max().item() if g.numel() else 0.0)
            if g.shape != w.shape or not torch.allclose(g.float(), w.float(), rtol=1e-4, atol=1e-5):
                err = (
                    (g.float() - w.float()).abs().max().item()
                    if g.shape == w.shape
                    else f"shape {tuple(g.shape)} != {tuple(w.shape)}"
                )
                out.append(
                    f"the reference differs from {problem.cls.name}.forward on the smoke config (output "
                    f"{spec.name}: {err}): correct reference.py"
                )
        if not out:
            passed.append(
                f"reference.py computes what {problem.cls.name}.forward computes on the smoke config, on the "
                f"{'CPU' if device == 'cpu' else device} (max abs difference {worst:.1e})"
            )
            bad = reference_problems(task, config, device, ref)
            out += [
                f"on the smoke config: {b} (the degeneracy rules of CONTRIBUTING.md; change the init or the problem)"
                for b in bad
            ]
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the folder is written
        out.append(
            f"the importer could not compare the reference with {problem.cls.name}.forward on the smoke "
            f"config ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}): check it by hand"
        )
    return passed, out
