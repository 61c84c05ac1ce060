"""Running a test script's own statements up to its kernel call, on the meta device or the CPU,
to see what it hands the kernel: the tensors' shapes and dtypes for a case, and the other values.

The test's correctness function is cut where it calls the kernel: the statements before the
call (the loop around it opened, bound to one case; an assignment nothing after it reads left
out) run in the test module's namespace with
every ``cuda`` device taken for the meta device (else the CPU), and the call itself records its
arguments and stops. Nothing of the kernel runs."""

from __future__ import annotations

import ast
import contextlib
import copy
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from arena.authoring.importers.common import ProbeTimeout, probe_limits
from arena.errors import Interruption

# what the test's statements up to its kernel call may take, in this process's CPU seconds: for one case, and for
# every case an import observes together. Where a test makes its inputs a value at a time in Python (a paged cache
# filled in loops over its blocks, heads and elements), an observation at the sizes a probe tries runs for hours;
# the harness's make_inputs, its copy, would too
ONE_OBSERVATION_SECONDS = 10.0
OBSERVATION_SECONDS = 60.0


class ObservationTimeout(ProbeTimeout):
    """The test's statements up to its kernel call went past the CPU seconds an observation may take (or the
    observations of the import had taken theirs)."""


class _Stop(Interruption):  # the test's own `except Exception` does not catch it
    def __init__(self, args: tuple, kwargs: dict):
        super().__init__("the kernel call was reached")
        self.call_args = args
        self.call_kwargs = kwargs


def _is_gpu(d: Any) -> bool:
    if isinstance(d, torch.device):
        return d.type == "cuda"
    return isinstance(d, str) and d.split(":")[0] in ("cuda", "hip")


_RANDOM_MAKERS = {torch.randn, torch.rand, torch.randn_like, torch.rand_like, torch.empty}
# what a reference makes with no device (its accumulator, ``torch.zeros(B, T, H, V)`` beside its inputs' CPU copies)
# (or on the CPU by name, ``torch.zeros_like(A, device='cpu')``)
_FACTORIES = {torch.zeros, torch.ones, torch.full, torch.arange, torch.eye, torch.empty, torch.zeros_like,
              torch.ones_like, torch.full_like, torch.empty_like}


class OnDevice(TorchFunctionMode):
    """Every tensor the test makes for ``cuda`` is made on ``device`` instead (a generator it
    makes for ``cuda``, on the CPU). ``factories``: on the meta device, where a reference runs on the inputs'
    shapes alone, what it makes with no device is made there too (its CPU copies of its inputs are)."""

    def __init__(self, device: str, factories: bool = False):
        super().__init__()
        self.device = device
        self.factories = factories and device == "meta"
        self._generator: Any = None

    def __enter__(self) -> Any:
        self._generator = torch.Generator
        made = self._generator

        class Generator(made):  # type: ignore[misc,valid-type]
            """A class still (``torch.Generator | None`` in an annotation a module imported here evaluates)."""

            def __new__(cls, device: Any = "cpu") -> Any:
                return made(device="cpu" if _is_gpu(device) else device)

        torch.Generator = Generator  # type: ignore[misc]
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        torch.Generator = self._generator  # type: ignore[misc]
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if _is_gpu(kwargs.get("device")):
            kwargs["device"] = self.device
        elif self.device == "meta" and func in _RANDOM_MAKERS and kwargs.get("device") is None:
            kwargs["device"] = "meta"  # a random CPU tensor the test moves to the GPU: its values are not needed
        elif self.factories and func in _FACTORIES and str(kwargs.get("device")).split(":")[0] in ("None", "cpu"):
            kwargs["device"] = "meta"
        if func in (torch.Tensor.cuda,):
            return args[0].to(self.device) if self.device == "meta" else args[0]
        if func is torch.Tensor.cpu and self.device == "meta" and args[0].is_meta:
            return args[0]  # the test's CPU copy of what it made for the GPU: no data to copy
        if func is torch.Tensor.to:
            args = tuple(self.device if _is_gpu(a) else a for a in args)
            if self.device == "meta" and args[0].is_meta and len(args) > 1 and str(args[1]) == "cpu":
                args = (args[0], "meta", *args[2:])
        return func(*args, **kwargs)


_NAMESPACES: dict[tuple[str, str], dict[str, Any]] = {}


def module_namespace(path: Path, tree: ast.Module) -> dict[str, Any]:
    """The test module's top level run as its own script would (its folder first on the path and
    the working directory), ``main`` not called, its functions' pytest marks taken off; its names, kept
    for the process. An import that fails here leaves its names unbound (the test's statements up to its
    kernel call seldom need them); any other statement raises what it raises. It runs where the cpu backend runs a
    starting kernel: a file that asks Triton's driver or torch.cuda for its GPU at load (``is_cdna4()`` choosing its
    fp8 types) gets the nominal GPU's answers (``arena.toolchain.interpreter_cuda``), not "0 active drivers"."""
    from arena.toolchain import interpreter_cuda

    interpreter_cuda.install()
    key = (str(Path(path).resolve()), ast.dump(tree))
    if key not in _NAMESPACES:
        ns: dict[str, Any] = {"__name__": "arena_observed_test", "__file__": str(Path(path).resolve())}
        cwd, sys_path = os.getcwd(), list(sys.path)
        folder = Path(path).resolve().parent
        # the files beside the test (kernel.py) are its own, not those another folder imported under that name
        beside = {p.stem: sys.modules.pop(p.stem) for p in folder.glob("*.py") if p.stem in sys.modules}
        try:
            sys.path.insert(0, str(folder))
            os.chdir(folder)
            with contextlib.redirect_stdout(None):
                for stmt in _unmarked(tree).body:
                    try:
                        exec(compile(ast.Module([stmt], []), str(path), "exec"), ns)
                    except Exception:  # noqa: BLE001 - a helper module of the test's own harness that does not
                        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):  # import here (its timing tools)
                            raise
        finally:
            os.chdir(cwd)
            sys.path[:] = sys_path
            for stem in [p.stem for p in folder.glob("*.py")]:
                sys.modules.pop(stem, None)
            sys.modules.update(beside)
        _NAMESPACES[key] = ns
    return _NAMESPACES[key]


@dataclass
class Observed:
    """One case's call: each argument as the test's expression wrote it, with its value."""

    args: list[tuple[str, Any]]          # (source text of the argument, value)
    kwargs: dict[str, Any]
    device: str


def _prints(s: ast.stmt) -> bool:
    """Whether the statement only prints (``print(...)``, ``if verbose: print(...)``)."""
    if isinstance(s, ast.Expr):
        return isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) and s.value.func.id == "print"
    return isinstance(s, ast.If) and all(_prints(b) for b in s.body + s.orelse)


def _bound_only(s: ast.stmt) -> set[str] | None:
    """The names an assignment binds, where it binds names only (``ref = reference(x)``, ``a, b = f()``); None for
    any other statement (one that writes into a tensor, ``x[i] = v``, or does anything else)."""
    if isinstance(s, ast.Assign):
        targets = list(s.targets)
    elif isinstance(s, ast.AnnAssign) and s.value is not None:
        targets = [s.target]
    else:
        return None
    names: set[str] = set()
    while targets:
        t = targets.pop()
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            targets += t.elts
        elif isinstance(t, ast.Starred):
            targets.append(t.value)
        else:
            return None
    return names


def _feeding_the_call(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The statements up to the kernel call (the last) less the assignments whose names nothing after them reads:
    what the test computes before the call for its own comparison (``ref = reference(logits, ...)``, which may loop
    in Python over every element) does not change what the call is handed. Every other statement stays: it may
    write into a tensor the call reads (``mask[b, 0] = 1`` in a loop) or end the case (an assertion)."""
    kept: list[ast.stmt] = []
    read: set[str] = set()
    for s in reversed(stmts):
        names = _bound_only(s) if kept else None
        if names is not None and not names & read:
            continue
        kept.append(s)
        read |= {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return kept[::-1]


def _unmarked(tree: ast.Module) -> ast.Module:
    """The module with its functions' pytest marks and Triton decorators taken off: they run when the
    module does (a ``skipif`` that asks the GPU for its capability, an autotuner's configs that ask the
    driver for its target) and say when pytest runs a test or how a kernel compiles, not what the test
    hands the kernel (its call is recorded, never run)."""
    tree = copy.deepcopy(tree)
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            n.decorator_list = [d for d in n.decorator_list if not ast.unparse(d).startswith(("pytest.", "triton."))]
    return tree


class Observer:
    """The test's statements up to the kernel call, compiled once; ``observe(case)`` runs them."""

    def __init__(self, harness: Any):
        self.h = harness
        self.ns: dict[str, Any] | None = None
        self.device = "meta"
        self.error = ""
        self._code: Any = None
        self.cpu_left = OBSERVATION_SECONDS   # what the observations still may take, all together

    def renew(self) -> None:
        """The observations' budget anew (for the drafts' checks, after the growth's)."""
        self.cpu_left = OBSERVATION_SECONDS

    def _module(self) -> dict[str, Any]:
        if self.ns is None:
            self.ns = module_namespace(Path(self.h.path), self.h.tree)
        return self.ns

    def _compiled(self) -> Any:
        if self._code is None:
            h = self.h
            cut = h.stmts[: h.stmts.index(h.call_stmt) + 1]
            # what the test prints says nothing of the call (and may read what the case leaves unbound)
            body = [copy.deepcopy(s) for s in _feeding_the_call([s for s in cut if not _prints(s)])]
            call_copy = next(n for n in ast.walk(body[-1]) if isinstance(n, ast.Call) and
                             ast.dump(n) == ast.dump(h.call))
            call_copy.func = ast.Name("__arena_record__", ast.Load())
            fn = ast.FunctionDef(
                name="__arena_probe__",
                args=ast.arguments(posonlyargs=[], args=[ast.arg("__arena_item__")], kwonlyargs=[], kw_defaults=[],
                                   defaults=[]),
                body=([ast.Assign([copy.deepcopy(h.loop_target)], ast.Name("__arena_item__", ast.Load()))]
                      if h.loop_target is not None else [])
                + copy.deepcopy(list(getattr(h, "bind", [])))
                + ([ast.Assign([ast.Name(h.index_name, ast.Store())], ast.Constant(0))] if h.index_name else [])
                + body,
                decorator_list=[], returns=None)
            mod = ast.fix_missing_locations(ast.Module([fn], []))
            self._code = compile(mod, f"<the test {Path(h.path).name}, cut at its kernel call>", "exec")
        return self._code

    def observe(self, params: dict[str, Any], device: str | None = None) -> Observed:
        """The call the test makes for the case ``params`` (its fields); raises what the test raises, and
        ``ObservationTimeout`` past ``ONE_OBSERVATION_SECONDS`` of CPU time (or once the observations have taken
        ``OBSERVATION_SECONDS``)."""
        self._module()     # the module's top level (its imports) runs once, outside the limit
        limit = min(ONE_OBSERVATION_SECONDS, self.cpu_left)
        t0 = time.process_time()
        try:
            with probe_limits(limit):
                return self._observe(params, device)
        except ObservationTimeout:
            raise
        except ProbeTimeout as exc:
            what = (f"more than {limit:.3g} CPU seconds" if limit >= ONE_OBSERVATION_SECONDS else
                    f"past the {OBSERVATION_SECONDS:g} CPU seconds the observations of an import may take")
            raise ObservationTimeout(f"the test's statements up to its kernel call ran {what}") from exc
        finally:
            self.cpu_left -= time.process_time() - t0

    def _observe(self, params: dict[str, Any], device: str | None) -> Observed:
        h = self.h
        ns = dict(self._module())

        def record(*args: Any, **kwargs: Any) -> None:
            raise _Stop(args, kwargs)

        ns["__arena_record__"] = record
        exec(self._compiled(), ns)
        item = h.item_of(params) if h.item_of is not None else None
        for dev in ([device] if device else ["meta", "cpu"]):
            cwd = os.getcwd()
            try:
                os.chdir(Path(h.path).resolve().parent)
                with OnDevice(dev), torch.no_grad(), contextlib.redirect_stdout(None):
                    torch.manual_seed(0)
                    if h.loop_target is None:
                        ns.update(h.bound)
                    # the case's fields; where a loop's item binds them they are its locals, which come first (a
                    # loop over seeds binds none: the sizes lifted out of the statements are these)
                    ns.update(params)
                    ns["__arena_probe__"](item)
            except _Stop as stop:
                texts = [ast.unparse(a) for a in h.call.args]
                return Observed(list(zip(texts, stop.call_args)), dict(stop.call_kwargs), dev)
            except Exception as exc:  # noqa: BLE001 - tried on the next device, else raised
                self.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                if dev == "cpu" or device:
                    raise
            finally:
                os.chdir(cwd)
        raise RuntimeError("the kernel call was not reached")
