"""In-process integrity checks around candidate code, in the candidate process.

Candidate code shares this process's address space, so the process checks, after every call
into it and before it trusts anything it computes next:

- ``Seal``: the identity of every function, class and hook the harness relies on (torch,
  the timer, the comparison, the pipe, the clocks, gc and trace hooks, torch dispatch and
  function modes) is unchanged -- no monkey-patching of the timer or of the checks;
- ``ThreadWatch``: no thread the call started is still alive (work finished in the
  background after the clock stopped);
- ``OpTrace``: the aten operators a Python candidate called through torch, so a Triton
  candidate cannot hand the work to torch, and the task's ``forbidden`` torch functions;

None of this can stop native code that deliberately rewrites this process's memory; the
README says so. It turns Python-level tricks into failures early; what counts is measured
where none of the candidate's code runs (``arena.evaluation.replay``), and which kernels are
its own is decided in the trusted process (``arena.evaluation.trusted.kernels``).
"""

from __future__ import annotations

import gc
import os
import re
import sys
import threading
import time
from types import ModuleType
from typing import Any, Iterable

# ------------------------------------------------------------------------------------------
# The seal


def _sealed_objects() -> list[tuple[str, Any]]:
    import builtins
    import ctypes
    import json
    import random
    import struct
    import time

    import torch

    objs: list[tuple[str, Any]] = [
        ("builtins", builtins), ("gc", gc), ("sys", sys), ("os", os), ("time", time), ("threading", threading),
        ("random", random), ("struct", struct), ("json", json), ("ctypes", ctypes),
        ("torch", torch), ("torch.Tensor", torch.Tensor), ("torch._C.TensorBase", torch._C.TensorBase),
        ("torch.cuda", torch.cuda), ("torch.cuda.Event", torch.cuda.Event), ("torch.cuda.Stream", torch.cuda.Stream),
        ("torch.nn.functional", torch.nn.functional), ("torch.Generator", torch.Generator),
    ]
    for name in ("torch.profiler", "torch.autograd.profiler", "torch.cuda.memory", "triton", "triton.runtime.jit"):
        mod = sys.modules.get(name)
        if mod is not None:
            objs.append((name, mod))
    for name in ("triton.compiler.compiler", "triton.runtime.driver", "triton.knobs", "torch.autograd.profiler_util",
                 "torch.cuda.streams"):
        mod = sys.modules.get(name)
        if mod is not None:
            objs.append((name, mod))
    for name, mod in sorted(sys.modules.items()):
        if (name == "arena" or name.startswith("arena.")) and isinstance(mod, ModuleType):
            objs.append((name, mod))
    # the classes those modules define: their methods are what the harness calls (a method patched
    # on a runtime class is as much a patch as a function replaced in a module)
    classes = []
    for owner, obj in objs:
        if isinstance(obj, ModuleType):
            for attr, value in list(vars(obj).items()):
                if isinstance(value, type) and getattr(value, "__module__", None) == obj.__name__:
                    classes.append((f"{owner}.{attr}", value))
    return objs + classes


def _is_sealable(value: Any) -> bool:
    return callable(value) or isinstance(value, (ModuleType, property, staticmethod, classmethod))


def _hooks() -> dict[str, Any]:
    import torch

    hooks: dict[str, Any] = {
        "sys.gettrace": sys.gettrace(), "sys.getprofile": sys.getprofile(),
        "gc.callbacks": tuple(gc.callbacks),
        "sys.meta_path": tuple(sys.meta_path), "sys.path_hooks": tuple(sys.path_hooks),
        "threading.trace": getattr(threading, "_trace_hook", None),
        "threading.profile": getattr(threading, "_profile_hook", None),
        "sys.excepthook": sys.excepthook, "sys.unraisablehook": sys.unraisablehook,
    }
    try:
        hooks["torch.function_modes"] = torch._C._len_torch_function_stack()
        hooks["torch.dispatch_modes"] = torch._C._len_torch_dispatch_stack()
    except AttributeError:
        pass
    return hooks


def _same(a: Any, b: Any) -> bool:
    """The same object (the same objects, for tuples; the same number, for counts)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b


def _snapshot() -> dict[str, tuple[Any, dict[str, Any]]]:
    """What the harness relies on, by name: each sealed object and its callable attributes,
    the objects themselves (compared by identity: no ``id()`` calls, each of which is an audit
    event once the candidate's hook is armed)."""
    snap: dict[str, tuple[Any, dict[str, Any]]] = {}
    for owner, obj in _sealed_objects():
        try:
            items = vars(obj).items()
        except TypeError:
            snap[owner] = (obj, {})
            continue
        snap[owner] = (obj, {attr: value for attr, value in items if _is_sealable(value)})
    return snap


class Seal:
    """A snapshot of what the harness calls; ``broken()`` lists what changed since."""

    def __init__(self) -> None:
        self._objs = _snapshot()
        self._modules = {name: mod for name, mod in sys.modules.items()
                         if name.split(".")[0] in ("torch", "triton", "arena", "numpy")}
        self._hooks = _hooks()

    def broken(self) -> list[str]:
        now = dict(_sealed_objects())
        missing = object()
        changed = []
        for owner, (obj, attrs) in self._objs.items():
            if now.get(owner, missing) is not obj:
                changed.append(owner)
                continue
            try:
                current = vars(obj)
            except TypeError:
                continue
            changed += [f"{owner}.{attr}" for attr, value in attrs.items() if current.get(attr, missing) is not value]
        changed += [f"sys.modules[{n!r}]" for n, m in self._modules.items() if sys.modules.get(n) is not m]
        hooks = _hooks()
        changed += [k for k, v in self._hooks.items() if not _same(hooks.get(k, missing), v)]
        return changed


# ------------------------------------------------------------------------------------------
# Threads


def native_threads() -> set[int]:
    """Thread ids of this process (Python and native ones alike)."""
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return {t.native_id for t in threading.enumerate() if t.native_id is not None}


def thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


# Threads that runtimes start on first use inside a call (LLVM's pool while Triton compiles).
_RUNTIME_THREADS = re.compile(r"^(llvm-worker-\d+|cuda-EvtHandlr|cuda\d+|hip-\w+|pt_\w+)$")


class ThreadWatch:
    """``before()`` then ``after()`` around a call: the threads the call left running."""

    def __init__(self) -> None:
        self._before: set[int] = set()

    def before(self) -> None:
        self._before = native_threads()

    def after(self, grace_s: float = 0.005) -> list[str]:
        """Names of the threads started since ``before()`` that are still alive. A thread that
        was joined may take a moment to leave /proc: new threads get ``grace_s`` to go."""
        deadline = time.monotonic() + grace_s
        while True:
            new = native_threads() - self._before
            names = [thread_name(t) for t in sorted(new)]
            left = [n for n in names if n != "?" and not _RUNTIME_THREADS.match(n)]
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.01)


# ------------------------------------------------------------------------------------------
# Torch operators called by a Python candidate

# aten operators a Triton candidate may call: allocation, views, metadata, fill and copy
_ALLOWED_ATEN = re.compile(
    r"^(empty|empty_like|empty_strided|new_empty|new_empty_strided|zeros|zeros_like|new_zeros|ones|ones_like|"
    r"new_ones|full|full_like|new_full|fill_|fill|zero_|copy_|_copy_from|_copy_from_and_resize|_to_copy|to|"
    r"clone|contiguous|detach|detach_|alias|view|_unsafe_view|reshape|_reshape_alias|as_strided|as_strided_|t|"
    r"transpose|permute|expand|expand_as|squeeze|unsqueeze|flatten|unflatten|narrow|slice|select|split|"
    r"split_with_sizes|chunk|unbind|view_as|lift_fresh|resize_|set_|is_same_size|_local_scalar_dense|item|"
    r"sym_size|sym_stride|sym_numel|sym_storage_offset|stride|size|numel|dim|is_contiguous|record_stream|"
    r"_has_compatible_shallow_copy_type|result_type|_pin_memory|is_pinned|arange|_unsafe_index_put)$")


def _op_name(func: Any) -> str:
    name = getattr(func, "__name__", str(func))          # e.g. "mm.default"
    return name.split(".")[0]


class OpTrace:
    """A context manager recording the aten operators and torch functions called inside."""

    def __init__(self) -> None:
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        self.aten: set[str] = set()
        self.functions: set[str] = set()
        trace = self

        class _Dispatch(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                # nothing traces through this mode with torch.compile; without this torch wraps
                # __torch_dispatch__ for dynamo, whose import costs seconds per worker
                return False

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                trace.aten.add(_op_name(func))
                return func(*args, **(kwargs or {}))

        class _Function(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                mod = getattr(func, "__module__", None) or ""
                trace.functions.add(f"{mod}.{getattr(func, '__qualname__', getattr(func, '__name__', func))}")
                return func(*args, **(kwargs or {}))

        self._modes = (_Function(), _Dispatch())

    def __enter__(self) -> "OpTrace":
        for m in self._modes:
            m.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        for m in reversed(self._modes):
            m.__exit__(*exc)

    def compute_ops(self) -> list[str]:
        """aten operators beyond allocation / view / fill / copy."""
        return sorted(op for op in self.aten if not _ALLOWED_ATEN.match(op))

    def forbidden_calls(self, forbidden: Iterable[str]) -> list[str]:
        """Forbidden names (``torch.nn.functional.softmax``) matched against the torch
        functions called, by full name or by their last component as an aten operator."""
        hits = []
        called = {f.replace("torch._C._nn.", "torch.nn.functional.").replace("torch._C._VariableFunctions.", "torch.")
                  for f in self.functions}
        short = {f.rsplit(".", 1)[-1] for f in called} | self.aten
        for name in forbidden:
            if name in called or name.rsplit(".", 1)[-1] in short:
                hits.append(name)
        return sorted(hits)


# ------------------------------------------------------------------------------------------
# Device kernels
