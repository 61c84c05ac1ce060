"""Ahead-of-time compilation of a Triton kernel file for GPUs this machine does not have.

A Triton file is only compiled when it launches, with the argument types and constexprs
of that launch. ``capture_launches`` calls the file's entry on a task config with CPU
tensors and records every launch instead of running it (argument dtypes, constexprs,
num_warps / num_stages); ``compile_for`` compiles each recorded launch with
``triton.compile`` for a ``GPUTarget`` — sm_90 (CUDA) and gfx942 (HIP) — using the
compilers bundled with Triton, so the CPU machine can tell that a kernel builds for both
vendors. A wrapper that reads back results between launches sees garbage here (nothing
ran); the launches it makes are still the ones it would make.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from arena.spec.loader import Config, Task

TARGETS = {"sm_90": ("cuda", 90, 32), "gfx942": ("hip", "gfx942", 64)}

_DTYPE = {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16", "float64": "fp64", "int8": "i8",
          "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1",
          "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}


@dataclass
class Launch:
    fn: Any                               # the JITFunction
    signature: dict[str, str]
    constexprs: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple:
        return (self.fn.__name__, tuple(self.signature.items()), tuple(sorted((k, repr(v)) for k, v in
                                                                             self.constexprs.items())),
                tuple(sorted(self.options.items())))


def _type_of(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return "*" + _DTYPE[str(value.dtype).replace("torch.", "")]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"cannot type a launch argument of type {type(value).__name__}")


def _launch(fn: Any, args: tuple, kwargs: dict) -> Launch:
    options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages", "num_ctas") if k in kwargs}
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for i, p in enumerate(fn.params):
        if i < len(args):
            value = args[i]
        elif p.name in kwargs:
            value = kwargs[p.name]
        else:
            value = p.default
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            constexprs[p.name] = value
        elif value is None:
            signature[p.name] = "constexpr"
            constexprs[p.name] = None
        else:
            signature[p.name] = _type_of(value)
    return Launch(fn, signature, constexprs, options)


@contextlib.contextmanager
def _recording() -> Iterator[list[Launch]]:
    from triton.runtime.jit import JITFunction

    launches: list[Launch] = []
    real = JITFunction.run

    def record(self, *args, grid, warmup, **kwargs):
        launches.append(_launch(self, args, dict(kwargs)))

    JITFunction.run = record
    try:
        yield launches
    finally:
        JITFunction.run = real


def _import_compiled(path: Path, name: str):
    """Import the file with Triton's JIT (not the interpreter), whatever this process uses."""
    from triton import knobs

    old = knobs.runtime.interpret
    knobs.runtime.interpret = False
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    finally:
        knobs.runtime.interpret = old
        sys.modules.pop(name, None)


def capture_launches(task: Task, path: Path, config: Config) -> list[Launch]:
    import torch

    from arena.check.inputs import DTYPES, make_inputs

    env = task.env(config)
    mod = _import_compiled(Path(path), f"_arena_aot_{abs(hash(str(path)))}")
    entry = getattr(mod, task.entry)
    ref = None
    if any(s.init["kind"] == "custom" for s in task.inputs):
        from arena.check.inputs import import_file

        ref = import_file(task.reference_path, f"_arena_aot_ref_{abs(hash(str(path)))}")
    ins = list(make_inputs(task, env, 1234, "cpu", ref).values())
    outs = [torch.empty(task.shape(s, env), dtype=DTYPES[s.dtype]) for s in task.outputs]
    scalars = [task.scalar_value(s, env) for s in task.scalars]
    with _recording() as launches:
        entry(*ins, *outs, *scalars)
    unique: dict[tuple, Launch] = {}
    for launch in launches:
        unique.setdefault(launch.key, launch)
    return list(unique.values())


def compile_for(launch: Launch, target: str) -> Any:
    """Compile one launch for ``target`` (a key of TARGETS); raises what Triton raises."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    backend, arch, warp = TARGETS[target]
    src = ASTSource(launch.fn, launch.signature, launch.constexprs)
    return triton.compile(src, target=GPUTarget(backend, arch, warp), options=dict(launch.options))


__all__ = ["TARGETS", "Launch", "capture_launches", "compile_for"]
