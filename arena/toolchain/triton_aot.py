"""Triton kernels compiled ahead, without a GPU: for authors (does the file build for both
vendors?) and for runs (warm caches before any GPU work).

A Triton file is only compiled when it launches, with the specialisation of that launch
(argument dtypes, which integers are 1 or divisible by 16, which pointers are aligned, the
constexprs). ``compile_launches`` calls the file's entry on a task config and lets
Triton's own JIT compile every launch for a given target, through a driver that names the
target and launches nothing (``_CompileOnlyDriver``): the kernels it writes into
``$TRITON_CACHE_DIR`` carry the keys the JIT computes on the GPU, so an evaluation finds
them there. The entry gets tensors on torch's meta device (shapes without storage, so no
input is made); a wrapper that raises on them is called again with CPU tensors, custom
inputs made by the reference and the others allocated, not filled.

Runs: ``warm_dir`` is a file's folder of compiled kernels (by its content, Triton's
version and the target), filled by ``warm_file`` in the run's prebuild
(``arena.toolchain.prebuild``); ``seed_cache`` copies them into an evaluation's own Triton
cache before its worker starts. Copies, not links: a candidate may write to its cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from arena.taskdef.loader import Config, Task

# the authors' check: the datacenter GPUs of both vendors (backend, arch, warp size)
TARGETS = {"sm_90": ("cuda", 90, 32), "gfx942": ("hip", "gfx942", 64)}
MANIFEST = "warmed.json"


def device_target(device: Any) -> tuple[str, Any, int] | None:
    """The Triton target of a GPU device (``arena.devices.Device``), as Triton's driver
    would name it; None for the cpu backend."""
    if not device.runs_kernels:
        return None
    if device.kind == "cuda":
        return ("cuda", int(device.arch.removeprefix("sm_")), device.warp_size or 32)
    return ("hip", device.arch, device.warp_size or 64)


def _gpu_target(target: str | tuple):
    from triton.backends.compiler import GPUTarget

    backend, arch, warp = TARGETS[target] if isinstance(target, str) else target
    return GPUTarget(backend, arch, warp)


class _CompileOnlyDriver:
    """Triton's driver for a target this process does not run on: it names the target, and
    anything that would touch a GPU (benchmarking, loading a binary) raises."""

    def __init__(self, target: Any):
        self.target = target

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"compiling ahead for {self.target}: {name} needs a GPU")


@contextlib.contextmanager
def _compile_only(target: Any) -> Iterator[dict[str, str]]:
    """Inside: every Triton launch compiles for ``target`` (through the JIT's own path) and
    runs nothing; yields {kernel hash: kernel name} of what was compiled."""
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    compiled: dict[str, str] = {}
    real = JITFunction.run
    before = getattr(driver, "_active", None)

    def run(self, *args, grid, warmup, **kwargs):
        kernel = real(self, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None:
            compiled[kernel.hash] = kernel.name
        return kernel

    from arena.toolchain.autotune import every_config

    driver.set_active(_CompileOnlyDriver(target))
    JITFunction.run = run
    try:
        with every_config():       # an autotuned kernel: every config compiled, none benchmarked
            yield compiled
    finally:
        JITFunction.run = real
        driver._active = before


def _import_compiled(path: Path, name: str):
    """Import the file with Triton's JIT (not the interpreter), whatever this process uses."""
    from triton import knobs

    # setting the knob also writes $TRITON_INTERPRET: both are put back as they were (the variable unset
    # included, or the processes this one starts later inherit it; the knob to read the variable again)
    before, knob = os.environ.get("TRITON_INTERPRET"), knobs.runtime.interpret
    overridden = "interpret" in vars(knobs.runtime)
    knobs.runtime.interpret = False
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    finally:
        try:
            if not overridden:
                del knobs.runtime.interpret
        except AttributeError:          # a Triton whose knobs cannot be unset
            overridden = True
        if overridden:
            knobs.runtime.interpret = knob
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before
        sys.modules.pop(name, None)


def _call_args(task: Task, config: Config, reference: Any, device: str) -> list:
    """The entry's arguments for one config. On "meta" every tensor is a shape without
    storage (nothing spent on values; Triton sees an aligned pointer); on "cpu" custom
    inputs are made by the reference and the other tensors are allocated, not filled."""
    import torch

    from arena.check.inputs import DTYPES, empty_input, generator

    env = task.env(config)
    made = {}
    if device == "cpu" and any(s.init["kind"] == "custom" for s in task.inputs):
        made = reference.make_inputs(dict(env), generator(1234, "cpu"), "cpu")

    def empty(s: Any) -> Any:
        return torch.empty(task.shape(s, env), dtype=DTYPES[s.dtype], device=device)

    # as the harness lays them out: None for an absent optional input, a strided one as its view
    ins = [made[s.name] if s.name in made and task.present(s, env) else empty_input(task, s, env, device)
           for s in task.inputs]
    return [*ins, *(empty(s) for s in task.outputs), *(task.scalar_value(s, env) for s in task.scalars)]


@dataclass
class Compiled:
    kernels: dict[str, str] = field(default_factory=dict)   # Triton's kernel hash -> kernel name
    done: list[str] = field(default_factory=list)           # the configs whose launches all compiled
    errors: dict[str, str] = field(default_factory=dict)    # config -> why not


def compile_launches(task: Task, path: Path, configs: Sequence[Config], target: str | tuple) -> Compiled:
    """Compile every launch the file's entry makes on each config, for ``target`` (a key of
    TARGETS or a (backend, arch, warp size) tuple), into ``$TRITON_CACHE_DIR``. A config
    whose call raises is reported in ``errors``; the others go on."""
    tag = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    mod = _import_compiled(Path(path), f"_arena_aot_{tag}")
    entry = getattr(mod, task.entry)
    ref = None
    if any(s.init["kind"] == "custom" for s in task.inputs):
        from arena.evaluation.sides import import_file

        ref = import_file(task.reference_path, f"_arena_aot_ref_{tag}")
    out = Compiled()
    with _compile_only(_gpu_target(target)) as compiled:
        for config in configs:
            try:
                try:
                    entry(*_call_args(task, config, ref, "meta"))
                except Exception:  # noqa: BLE001 - a wrapper that reads values: again with some
                    entry(*_call_args(task, config, ref, "cpu"))
            except Exception as exc:  # noqa: BLE001 - the author's (or the wrapper's) error, reported
                out.errors[config.name] = f"{type(exc).__name__}: {str(exc)[:300]}"
            else:
                out.done.append(config.name)
    out.kernels = dict(compiled)
    return out


# ------------------------------------------------------------------------------------------
# Warm caches for runs


@functools.lru_cache(maxsize=1)
def _triton_version() -> str:
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _target_name(target: tuple) -> str:
    return "-".join(str(x) for x in target)


def warm_dir(path: Path, target: tuple, root: Path) -> Path:
    """The folder of one file's kernels compiled ahead for ``target``, under ``root``."""
    digest = hashlib.sha256(Path(path).read_bytes() + b"\0" + _triton_version().encode()).hexdigest()[:24]
    return root / f"{digest}-{_target_name(target)}"


def config_key(config: Config) -> str:
    return json.dumps([config.split, config.name, dict(config.params)], sort_keys=True, default=str)


def warmed_configs(directory: Path) -> set[str]:
    try:
        return set(json.loads((directory / MANIFEST).read_text())["configs"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def warm_file(task_dir: str, path: str, configs: list[dict[str, Any]], target: tuple, directory: str
              ) -> dict[str, Any]:
    """One file's launches on the given configs compiled into ``directory``, whose manifest
    then lists the configs done. Runs in a process of its own (``arena.toolchain.prebuild``):
    Triton's cache folder is read from the environment."""
    from arena.taskdef.loader import load_task

    t0 = time.perf_counter()
    os.environ["TRITON_CACHE_DIR"] = directory
    task = load_task(task_dir)
    cfgs = [Config(c["split"], c["index"], c["name"], c["params"]) for c in configs]
    res = compile_launches(task, Path(path), cfgs, target)
    done = {config_key(c) for c in cfgs if c.name in res.done}
    d = Path(directory)
    tmp = d / f".{MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps({"configs": sorted(warmed_configs(d) | done)}))
    os.replace(tmp, d / MANIFEST)
    return {"kernels": len(res.kernels), "done": len(res.done), "errors": res.errors,
            "seconds": round(time.perf_counter() - t0, 3)}


def _repoint_groups(entry: Path, dest: Path) -> None:
    """Triton's group files (``__grp__*.json``) list their kernel's files by absolute path:
    a copy's must name the copies (the warm folder is out of an evaluation's reach)."""
    for grp in entry.glob("__grp__*.json"):
        data = json.loads(grp.read_text())
        if isinstance(data.get("child_paths"), dict):
            data["child_paths"] = {name: str(dest / Path(p).name) for name, p in data["child_paths"].items()}
            grp.write_text(json.dumps(data))


def seed_cache(cache: Path, paths: Sequence[Path], target: tuple | None, root: Path) -> int:
    """Copy the kernels compiled ahead for these Triton files into an evaluation's Triton
    cache (what it holds already is kept); returns the number of kernels copied."""
    if target is None:
        return 0
    n = 0
    for path in paths:
        try:
            src = warm_dir(path, target, root)
            entries = [e for e in src.iterdir() if e.is_dir()]
        except OSError:
            continue
        for entry in entries:
            dest = cache / entry.name
            if dest.exists():
                continue
            tmp = cache / f".{entry.name}.{os.getpid()}.{time.monotonic_ns()}"
            try:
                shutil.copytree(entry, tmp)
                _repoint_groups(tmp, dest)
                os.rename(tmp, dest)
                n += 1
            except (OSError, ValueError):  # another evaluation of the pair was first, or a broken entry
                shutil.rmtree(tmp, ignore_errors=True)
    return n


__all__ = ["TARGETS", "Compiled", "compile_launches", "config_key", "device_target", "seed_cache",
           "warm_dir", "warm_file", "warmed_configs"]
