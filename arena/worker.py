"""The only code that runs candidate code: one subprocess per candidate evaluation.

The parent (``arena.evaluate``) starts ``python -m arena.worker IN_FD OUT_FD``, writes the
job on IN_FD and reads length-prefixed JSON frames from OUT_FD (never stdout, which
candidate code can write to). The worker loads the task and both sides (candidate and
baseline), runs the correctness gate on every config x seed, then, if asked and if every
config passed, the paired timing. It sends raw facts (statuses of comparisons, error
statistics, timing samples); the parent turns them into the Verdict.

Defences against candidate code (README, "How results are protected"): the filesystem is
restricted before the candidate loads (``arena.sandbox``); result frames are signed
(``arena.channel``); seeds are drawn here, per config, only when needed; no expected output
exists while candidate code runs -- the reference runs after the call, on inputs made again
from the seed, which also proves the call left its inputs alone; baseline outputs are
poisoned right after each timed baseline call; after every candidate call the seal of the
harness's functions and hooks, the threads, the output tensors and (for Python candidates)
the torch operators called are checked (``arena.guard``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import inspect
import os
import random
import signal
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from arena.channel import read_frame, signed_writer
from arena.check.inputs import import_file, upcast

# ------------------------------------------------------------------------------------------


HOST_BOUND_RATIO = 0.5   # a trusted side whose host time is this share of its span is also timed unprofiled
# the most pairs of that unprofiled timing: a host-bound call's own jitter (Python, launches) keeps
# its median from the 1% target; its interval says how well it is known
UNPROFILED_MAX_PAIRS = 100
OOM_RETRIES = 2      # a config that failed for want of device memory is tried this many times more


class GateFailure(Exception):
    """A failure with a status, raised inside the worker and sent to the parent."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Side:
    """One callable side of the comparison: a HIP library, a Python/Triton module, or the
    task's reference run eagerly at the declared dtypes."""

    writes_outputs = True

    def __init__(self, task, job_side: dict[str, Any], reference: ModuleType, torch_device: str):
        self.task = task
        self.language = job_side["language"]
        self.source = job_side.get("path")
        self.own_kernels: set[str] = set()
        self.torch_device = torch_device
        self.reference = reference
        if self.language == "hip":
            self._load_hip(job_side["library"])
        elif self.language in ("triton", "python"):
            self._load_python(Path(job_side["path"]))
        elif self.language == "reference":
            self.fn = reference.reference
        else:
            raise GateFailure("HARNESS_ERROR", f"unknown language {self.language!r}")

    def _load_hip(self, library: str) -> None:
        from arena.toolchain.abi import ctypes_argtypes, hip_kernel_names

        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise GateFailure("LOAD_ERROR", f"cannot load the built library: {exc}") from None
        try:
            fn = getattr(lib, self.task.entry)
        except AttributeError:
            raise GateFailure("SIGNATURE_MISMATCH", f"the library exports no symbol {self.task.entry!r}") from None
        fn.argtypes = ctypes_argtypes(self.task)
        fn.restype = ctypes.c_int
        self.lib = lib
        self.fn = fn
        try:
            source = Path(self.source).read_text(errors="replace") if self.source else ""
        except OSError:
            source = ""
        self.own_kernels = hip_kernel_names(source)

    def _load_python(self, path: Path) -> None:
        name = f"arena_candidate_{abs(hash(str(path)))}_{random.getrandbits(32)}"
        try:
            module = import_file(path, name)
        except SyntaxError as exc:
            raise GateFailure("COMPILE_ERROR", f"{path.name}: {exc}") from None
        except BaseException as exc:  # noqa: BLE001 - any import failure of candidate code
            raise GateFailure("LOAD_ERROR", f"importing {path.name} failed: {type(exc).__name__}: {exc}") from None
        fn = getattr(module, self.task.entry, None)
        if fn is None or not callable(fn):
            raise GateFailure("SIGNATURE_MISMATCH", f"{path.name} defines no function {self.task.entry!r}")
        try:
            from triton.runtime.jit import JITFunction

            self.own_kernels = {v.fn.__name__ for v in vars(module).values() if isinstance(v, JITFunction)}
        except ImportError:
            pass
        n = len(self.task.inputs) + len(self.task.outputs) + len(self.task.scalars)
        try:
            inspect.signature(fn).bind(*range(n))
        except TypeError as exc:
            raise GateFailure("SIGNATURE_MISMATCH",
                              f"{self.task.entry} cannot take the {n} arguments of the signature: {exc}") from None
        except ValueError:
            pass  # builtins without a signature: try the call
        self.fn = fn

    def __call__(self, ins: list, outs: list, scalars: list, *, copy_out: bool = True) -> None:
        import torch

        if self.language == "hip":
            from arena.toolchain.abi import ctypes_scalar

            stream = torch.cuda.current_stream().cuda_stream
            args = [ctypes.c_void_p(t.data_ptr()) for t in (*ins, *outs)]
            args += [ctypes_scalar(s.type, v) for s, v in zip(self.task.scalars, scalars)]
            args.append(ctypes.c_void_p(stream))
            rc = self.fn(*args)
            if rc != 0:
                raise GateFailure("RUNTIME_ERROR", f"{self.task.entry} returned error code {rc}")
        elif self.language == "reference":
            result = self.fn(*ins, *scalars)
            if copy_out:
                results = result if isinstance(result, (tuple, list)) else (result,)
                for o, r in zip(outs, results):
                    o.copy_(r)
        else:
            self.fn(*ins, *outs, *scalars)


class Evaluation:
    def __init__(self, job: dict[str, Any], send: Callable[[dict[str, Any]], None]):
        import torch

        from arena.taskdef.loader import load_task

        self.job = job
        self._send = send
        self.torch = torch
        self.task = load_task(job["task_dir"], validate=False)
        self.device = job["device"]
        self.torch_device = "cuda" if self.device["kind"] in ("cuda", "rocm") else "cpu"
        self.gpu = self.torch_device == "cuda"
        self.seal = None
        self._current: _ConfigTiming | None = None    # the config whose timing work runs now
        self.rng = random.SystemRandom()     # seeds no one can predict from the job
        from arena.gpulock import GpuLock

        # correctness shares the GPU with other evaluations; the timed rounds have it alone
        self.gpu_lock = GpuLock(*(job.get("gpu_lock") or (None, None)))
        if self.gpu and self.gpu_lock.active:
            _compile_off_gpu(self.gpu_lock)
        self.marks: dict[str, float] = {}
        self._mark = time.perf_counter()

    def mark(self, part: str) -> None:
        """How long a part of loading took (seconds since the last mark), for the record."""
        now = time.perf_counter()
        self.marks[part] = round(self.marks.get(part, 0.0) + now - self._mark, 3)
        self._mark = now

    def send(self, **obj: Any) -> None:
        self._send(obj)

    def sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize()

    # -- reference ---------------------------------------------------------------------------
    def load_reference(self) -> ModuleType:
        try:
            return import_file(self.task.reference_path, f"arena_reference_{random.getrandbits(32)}")
        except BaseException as exc:  # noqa: BLE001
            raise GateFailure("TASK_ERROR", f"reference.py failed to import: {type(exc).__name__}: {exc}") from None

    def expected(self, ins: dict[str, Any], scalars: list) -> list:
        """The reference on upcast clones of the inputs, one tensor per output."""
        from arena.check.compare import compare_dtype
        from arena.check.inputs import DTYPES

        clones = [upcast(t.clone()) for t in ins.values()]
        try:
            result = self.reference.reference(*clones, *scalars)
        except BaseException as exc:  # noqa: BLE001
            raise GateFailure("TASK_ERROR", f"the reference raised {type(exc).__name__}: {exc}") from None
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) != len(self.task.outputs):
            raise GateFailure("TASK_ERROR", f"the reference returned {len(results)} outputs, the signature has "
                                            f"{len(self.task.outputs)}")
        out = []
        env = self._env
        for r, spec in zip(results, self.task.outputs):
            shape = self.task.shape(spec, env)
            if tuple(r.shape) != shape:
                raise GateFailure("TASK_ERROR", f"the reference's {spec.name!r} has shape {tuple(r.shape)}, "
                                                f"the signature says {shape}")
            dt = DTYPES[spec.dtype]
            out.append(r.to(compare_dtype(dt)) if dt.is_floating_point else r.to(dt))
        return out

    def allocate_outputs(self) -> list:
        from arena.check.compare import poison_
        from arena.check.inputs import DTYPES

        return [poison_(self.torch.empty(self.task.shape(s, self._env), dtype=DTYPES[s.dtype],
                                         device=self.torch_device)) for s in self.task.outputs]

    # -- gates ---------------------------------------------------------------------------------
    def run(self) -> None:
        from arena.guard import OpTrace, Seal, ThreadWatch

        self.send(type="stage", stage="load")
        self._mark = time.perf_counter()
        waited = self.gpu_lock.waited_s
        self.reference = self.load_reference()
        self.mark("reference")
        # the task's own code first (trusted), then the harness's objects, then the seal, then the candidate
        self.baseline = None
        if self.job.get("timing") and self.job.get("baseline"):
            try:
                self.baseline = Side(self.task, self.job["baseline"], self.reference, self.torch_device)
            except GateFailure as exc:
                raise GateFailure("TASK_ERROR", f"the task's baseline failed to load: {exc.message}") from None
        self.mark("baseline")
        # torch2hip: torch.compile of the reference as a second denominator (recorded, never the primary one)
        self.compiled = None
        if self.gpu and self.job.get("timing") and self.task.category == "torch2hip" and \
                self.job.get("timing_params", {}).get("torch_compile"):
            import torch

            import torch._inductor.config as inductor_config

            # inductor compiles here, in this process: its pool of compile processes, started after the
            # sandbox, failed to compile (on an H200: every config after the first, which inductor
            # compiles in-process while the pool warms up), and the pool's threads start at times of
            # their own, inside a candidate's call too (a false INTEGRITY_VIOLATION). The backend
            # compiles with the GPU's lock let go: no timed round waits for it. Each config is compiled
            # for its own shapes (time_configs), as a user of torch.compile at that shape would get it
            inductor_config.compile_threads = 1
            self.compiled = Side(self.task, {"language": "reference"}, self.reference, self.torch_device)
            self.compiled.fn = torch.compile(self.reference.reference, backend=off_gpu_backend(self.gpu_lock),
                                             dynamic=False)
        if self.gpu and self.job.get("timing"):
            from arena.timing.timer import DeviceTimer

            with self.gpu_lock.shared():
                self.timer = DeviceTimer(self.device.get("llc_bytes") or 64 * 2**20)
            self.mark("timer")
            self.timer.sample_round([])          # the profiler starts (host work: no kernel of ours runs)
            self.mark("profiler")
            self.timer.sample_round([("warm", lambda: None, lambda: None, lambda: None)],   # our kernels
                                    alone=self.gpu_lock.shared)
            self.mark("timer")
        import arena.check.compare  # noqa: F401 - every harness module is loaded before the seal
        import arena.check.inputs  # noqa: F401

        with self.gpu_lock.shared(), OpTrace():   # imports and first-use patches of torch happen now, before the seal
            self.torch.ones(4, device=self.torch_device).add_(1)
            self.sync()
        warm = self.torch.ones(256, 256)    # torch's CPU thread pools start now, not inside a candidate's call
        float((warm @ warm).sum() + self.torch.ones(1 << 21).mul_(2).sum())
        self.mark("warm")
        self.threads = ThreadWatch()
        sandbox = self.job.get("sandbox")
        if sandbox:
            from arena.sandbox import restrict

            why = restrict(sandbox["hide"], sandbox["read"], sandbox["write"])
            self.send(type="sandbox", applied=why is None, reason=why or "")
        self.seal = Seal()
        self.threads.before()
        self.candidate_trusted = self.job["candidate"]["language"] == "reference"
        self.mark("sandbox")
        self.candidate = Side(self.task, self.job["candidate"], self.reference, self.torch_device)
        self.guard_check("loading the candidate")
        self.mark("candidate")
        self.send(type="loaded", parts=self.marks, lock_wait_s=round(self.gpu_lock.waited_s - waited, 3))
        for split in self.job["splits"]:
            self.run_split(split)

    def lock_stats(self, since: dict[str, float] | None = None) -> dict[str, float]:
        """The GPU lock's counters (seconds), or their growth since an earlier reading."""
        lk = self.gpu_lock
        now = {"lock_wait_s": lk.waited_s, "shared_s": lk.shared_s, "off_gpu_s": lk.off_gpu_s,
               "exclusive_n": lk.exclusive_n, "failed_tries": lk.failed_tries, "writer_wait_s": lk.writer_waited_s,
               "alone_s": lk.alone_s}
        if since is None:
            lk.longest_shared_s = 0.0
            return now
        out = {k: round(v - since.get(k, 0.0), 3) for k, v in now.items()}
        out["longest_shared_s"] = round(lk.longest_shared_s, 3)
        return out

    def guard_check(self, when: str) -> None:
        """After candidate code ran: the harness's functions and hooks are as sealed and no
        thread it started is still running. (The task's own reference, evaluated as the
        torch2hip starting point, is trusted code and not checked.)"""
        if self.candidate_trusted:
            return
        broken = self.seal.broken() if self.seal is not None else []
        if broken:
            raise GateFailure("INTEGRITY_VIOLATION", f"{when} changed what the harness relies on: "
                                                     f"{', '.join(broken[:8])}")
        threads = self.threads.after()
        if threads:
            raise GateFailure("INTEGRITY_VIOLATION", f"{when} left threads running: {', '.join(threads[:8])}")

    def run_split(self, split: dict[str, Any]) -> None:
        from arena.taskdef.loader import Config

        name = split["split"]
        all_passed = True
        lost = None
        for cfg in split["configs"]:
            config = Config(**cfg)
            if lost is not None:  # a sticky device error: nothing more can run in this process
                self.send(type="config", split=name, phase="correctness", config=config.name,
                          result={"status": "RUNTIME_ERROR", "message": f"not run: the device context was lost "
                                                                        f"at config {lost}"})
                continue
            self.send(type="stage", stage="correctness", split=name, config=config.name)
            lock0 = self.lock_stats()
            result = self.check_config(config)
            for retry in range(OOM_RETRIES):     # other evaluations on this GPU held the memory: again
                if not self._out_of_memory(result, retry):
                    break
                result = self.check_config(config)
            self._release_memory()
            result.update(self.lock_stats(lock0))
            self.send(type="config", split=name, phase="correctness", config=config.name, result=result)
            if result["status"] == "INTEGRITY_VIOLATION":
                raise GateFailure(result["status"], result["message"])
            all_passed &= result["status"] == "PASSED"
            if result["status"] == "RUNTIME_ERROR" and self.gpu and not self._context_alive():
                lost = config.name
        if not (all_passed and self.job.get("timing") and self.gpu and self.baseline is not None):
            self.send(type="split_done", split=name)
            return
        self.time_split(name, [Config(**cfg) for cfg in split["configs"]])
        self.send(type="split_done", split=name)

    def _out_of_memory(self, result: dict[str, Any], retry: int = 0) -> bool:
        """The config failed for want of device memory. Several evaluations share a GPU
        (``--workers-per-gpu``); one may have held memory the moment this one needed it. The
        memory this process caches is given back and, after a pause (longer for a later retry:
        the others give theirs back after each config), the config is tried again."""
        if not self.gpu or result.get("status") == "PASSED" or "out of memory" not in \
                str(result.get("message", "")).lower():
            return False
        gc.collect()
        self._release_memory()
        time.sleep(0.5 * 6 ** retry)
        return True

    def _release_memory(self) -> None:
        """Give the blocks torch's allocator caches back to the device, so evaluations sharing
        it can use them (after each config)."""
        if self.gpu:
            try:
                with self.gpu_lock.shared():
                    self.torch.cuda.empty_cache()
            except Exception:  # noqa: BLE001 - a context the candidate broke (a sticky device error) has nothing to
                pass           # give back; the config's own result says what happened

    def _context_alive(self) -> bool:
        try:
            self.torch.cuda.synchronize()
            return True
        except Exception:  # noqa: BLE001
            return False

    def _set_config(self, config) -> None:
        self._env = self.task.env(config)
        self._scalars = [self.task.scalar_value(s, self._env) for s in self.task.scalars]

    def make_inputs(self, seed: int) -> dict[str, Any]:
        from arena.check.inputs import make_inputs

        try:
            return make_inputs(self.task, self._env, seed, self.torch_device, self.reference)
        except Exception as exc:  # noqa: BLE001
            raise GateFailure("TASK_ERROR", f"making inputs failed: {type(exc).__name__}: {exc}") from None

    def call_side(self, side: Side, ins: list, outs: list, **kw: Any) -> None:
        try:
            side(ins, outs, self._scalars, **kw)
        except GateFailure:
            raise
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise anything
            status = "RUNTIME_ERROR"
            if type(exc).__name__ in ("CompilationError", "CompileTimeAssertionFailure", "InterpreterError"):
                status = "COMPILE_ERROR"
            raise GateFailure(status, f"{type(exc).__name__}: {exc}"[:2000]) from None

    def call_candidate(self, ins: list, outs: list) -> None:
        """One guarded candidate call of the correctness gate."""
        from arena.guard import OpTrace

        trace = OpTrace() if self.candidate.language in ("triton", "python") else None
        self.threads.before()
        try:
            if trace is not None:
                with trace:
                    self.call_side(self.candidate, ins, outs)
            else:
                self.call_side(self.candidate, ins, outs)
            try:
                self.sync()
            except Exception as exc:  # noqa: BLE001 - asynchronous device errors surface here
                raise GateFailure("RUNTIME_ERROR", f"{type(exc).__name__}: {exc}"[:2000]) from None
        finally:
            gc.collect()   # finalizers of the candidate's garbage run now, before the checks below
        self.guard_check("the candidate's call")
        if trace is not None:
            compute = trace.compute_ops()
            forbidden = trace.forbidden_calls(self.task.forbidden)
            if forbidden:
                raise GateFailure("FORBIDDEN_CALL", f"the candidate called {', '.join(forbidden)}, which the task "
                                                    f"forbids")
            if compute:
                raise GateFailure("FORBIDDEN_CALL", "a Triton candidate computes in Triton kernels; it called the "
                                                    f"torch operators {', '.join(compute[:8])}")

    def _outputs_intact(self, outs: list, meta: list) -> dict[str, Any] | None:
        for o, m, spec in zip(outs, meta, self.task.outputs):
            if type(o) is not self.torch.Tensor:
                return {"status": "INTEGRITY_VIOLATION",
                        "message": f"output {spec.name!r} is no longer a plain tensor (now {type(o).__name__})"}
            if (o.shape, o.dtype, o.stride(), o.data_ptr()) != m:
                return {"status": "INCORRECT_SHAPE",
                        "message": f"output {spec.name!r} was replaced or reshaped "
                                   f"(now {tuple(o.shape)} {o.dtype}, allocated {tuple(m[0])} {m[1]})"}
        return None

    def mutated_input(self, ins: list, seed: int) -> tuple[int, dict[str, Any]]:
        """Make the inputs again from the seed (nothing the candidate saw); return the index of
        the first given input that differs from them (-1 if none) and the fresh inputs."""
        from arena.check.compare import same_bytes

        fresh = self.make_inputs(seed)
        for k, (t, f) in enumerate(zip(ins, fresh.values())):
            if type(t) is not self.torch.Tensor or not same_bytes(t, f):
                return k, fresh
        return -1, fresh

    def check_config(self, config) -> dict[str, Any]:
        from arena.check.compare import compare_output

        self._set_config(config)
        seeds = list(self.job["seeds"]) if self.job.get("seeds") else \
            [self.rng.getrandbits(32) for _ in range(int(self.job.get("n_seeds", 3)))]
        worst: dict[str, Any] = {"status": "PASSED", "seeds": seeds}
        try:
            shared = self.gpu_lock.shared
            for seed in seeds:
                # three shared sections per seed (arena.gpulock), each ending with the device idle: a
                # timed round elsewhere waits for the piece in flight, not for a whole check (a
                # Triton compile lets the lock go)
                with shared():
                    ins = self.make_inputs(seed)
                    outs = self.allocate_outputs()
                    views = [o.view(o.shape) for o in outs]
                    meta = [(o.shape, o.dtype, o.stride(), o.data_ptr()) for o in outs]
                    self.sync()
                    self.call_candidate(list(ins.values()), outs)
                    bad = self._outputs_intact(outs, meta)
                    if bad:
                        return {**worst, **bad}
                with shared():
                    # the reference runs now, on inputs made again from the seed: nothing the candidate saw
                    bad_input, fresh = self.mutated_input(list(ins.values()), seed)
                    if bad_input >= 0:
                        return {**worst, "status": "INPUT_MUTATED",
                                "message": f"input {list(ins)[bad_input]!r} was written to"}
                    del ins
                    expected = self.expected(fresh, self._scalars)
                    self.sync()
                with shared():
                    for spec, out, ref in zip(self.task.outputs, views, expected):
                        res = compare_output(spec.name, out, ref, self.task.tolerance_for(spec.dtype))
                        stats = {k: v for k, v in asdict(res).items() if k != "status"}
                        if res.status.value != "PASSED":
                            return {**worst, **stats, "status": res.status.value, "seed": seed}
                        worst = _merge_worst(worst, stats)
                    del expected, fresh
                    self.sync()
        except GateFailure as exc:
            return {**worst, "status": exc.status, "message": exc.message}
        except self.torch.cuda.OutOfMemoryError as exc:     # the harness's own allocations: tried again
            return {**worst, "status": "HARNESS_ERROR", "message": f"out of memory while checking: {exc}"[:1000]}
        return worst

    # -- performance ---------------------------------------------------------------------------
    def time_split(self, split: str, configs: list) -> None:
        """Time every config of a split (each passed the correctness gate) and send the results
        in config order, up to the first config that failed, then the GPU lock's counters of
        the split's timing."""
        lock0 = self.lock_stats()
        results = self.time_configs(split, configs)
        self._release_memory()
        self.send(type="lock", split=split, phase="performance", stats=self.lock_stats(lock0))
        for config, result in results:
            self.send(type="config", split=split, phase="performance", config=config.name, result=result)
            if result.get("status") == "INTEGRITY_VIOLATION":
                raise GateFailure(result["status"], result["message"])

    def time_configs(self, split: str, configs: list) -> list[tuple[Any, dict[str, Any]]]:
        """Each config's inputs, JIT compiles, warm-up and checks run in short shared sections
        beside other evaluations' work (arena.gpulock); then the timed rounds of all of them run
        in as few exclusive sections as their stopping rules and memory allow
        (``arena.timing.timer.time_many``): every exclusive section waits for the GPU work of the
        other evaluations to drain, so a split takes a few, not a few per config. A config that
        failed for want of memory is tried again (``OOM_RETRIES`` times at most) with a quarter of
        its input sets."""
        from arena.timing.timer import time_many

        torch = self.torch
        tp = self.job.get("timing_params", {})
        free, total = torch.cuda.mem_get_info()
        # the input sets of a round (and half as much for the sets kept for the checks): 8 GiB at most, a quarter
        # of what is free now, and a share of the device when several evaluations use it (--workers-per-gpu)
        budget = min(float(tp.get("max_set_bytes", 8 * 2**30)), 0.25 * free,
                     0.75 * total / max(1, int(tp.get("gpu_share", 1))))
        if self.compiled is not None:
            # each config compiled afresh and static, for its own shapes (dynamic-shape lowering fails on some
            # references), as a user of torch.compile at that shape gets it; all of them are kept until the
            # split's timed rounds are done, so the recompile limit (dynamo then runs the eager function) is raised
            torch._dynamo.reset()
            for knob in ("recompile_limit", "cache_size_limit"):
                if hasattr(torch._dynamo.config, knob):
                    setattr(torch._dynamo.config, knob, max(getattr(torch._dynamo.config, knob), len(configs) + 8))
        out: list[tuple[Any, dict[str, Any]]] = []
        timings: list[_ConfigTiming] = []
        self._current = None
        for config in configs:
            self.send(type="stage", stage="performance", split=split, config=config.name)
            max_sets = None
            for attempt in range(OOM_RETRIES + 1):
                try:
                    timings.append(self._ready(config, budget, tp, max_sets))
                    break
                except (GateFailure, torch.cuda.OutOfMemoryError) as exc:
                    result = self._failure(exc)
                    if attempt < OOM_RETRIES and self._out_of_memory(result, attempt):   # again, a quarter of the sets
                        max_sets = max(1, self._n_sets(config, budget, tp) // 4)
                        continue
                    return out + [(config, result)]

        def room(ct: _ConfigTiming) -> None:
            """Before a round inside an exclusive section: the sets kept for the checks may take half
            as much memory as a round's sets; if this round's would pass that, the kept ones are
            checked now, inside the section (ending it instead would cost a drain of the other
            evaluations' work, far more than the checks)."""
            if sum(c.kept_bytes() for c in timings) + ct.kept_per_round() > budget / 2:
                for c in timings:
                    c.verify_kept()

        for ct in timings:
            ct.room = room
        def between() -> None:        # after each exclusive section: the candidate's timed calls checked
            torch.cuda.synchronize()
            self.guard_check("the candidate's timed calls")
            for ct in timings:
                ct.verify_kept()

        retries: dict[int, int] = {}
        while True:
            try:
                time_many(self.timer, [t for ct in timings for t in ct.items()], alone=self.gpu_lock.exclusive,
                          between=between)
                break
            except (GateFailure, torch.cuda.OutOfMemoryError) as exc:
                ct = self._current
                if not any(ct is c for c in timings):    # before any config's own work: the first one not done
                    ct = next((c for c in timings if not c.done()), timings[0])
                result = self._failure(exc)
                for other in timings:
                    other.drop()
                retry = retries.get(id(ct), 0)
                if retry < OOM_RETRIES and self._out_of_memory(result, retry):
                    retries[id(ct)] = retry + 1
                    if retry == 0:
                        ct.shrink()
                    continue
                done = [(c.config, c.result()) for c in timings if c.done() and c is not ct]
                return out + done + [(ct.config, result)]
        results = [(ct.config, ct.result()) for ct in timings]
        for config, result in results:
            out.append((config, result))
            if result["status"] != "PASSED":
                break
        return out

    def _failure(self, exc: BaseException) -> dict[str, Any]:
        if isinstance(exc, GateFailure):
            return {"status": exc.status, "message": exc.message}
        return {"status": "HARNESS_ERROR", "message": f"out of memory while timing: {exc}"[:1000]}

    def _per_set_bytes(self, config) -> int:
        """Device memory an input set takes while timed, from the signature's shapes: its
        inputs twice (made again for the check) and its outputs four times (every side's)."""
        from arena.taskdef.shapes import tensor_bytes

        env = self.task.env(config)
        return 2 * tensor_bytes(self.task, env, self.task.inputs) + 4 * tensor_bytes(self.task, env, self.task.outputs)

    def _n_sets(self, config, budget: float, tp: dict[str, Any]) -> int:
        """Input sets a round: 16 (the 10 pairs the stopping rule wants at least fit in one
        round), fewer if they would not fit in the memory budget."""
        return int(max(1, min(int(tp.get("max_sets", 16)), budget // max(self._per_set_bytes(config), 1))))

    def _ready(self, config, budget: float, tp: dict[str, Any], max_sets: int | None) -> "_ConfigTiming":
        """One config made ready for its timed rounds: its sides warmed up (JIT, autotune,
        torch.compile's compile) in shared sections, the warm-up's outputs checked."""
        torch = self.torch
        self._set_config(config)
        n_sets = max_sets or self._n_sets(config, budget, tp)
        side_list = [("baseline", self.baseline), ("candidate", self.candidate)]
        if self.compiled is not None:
            side_list.append(("compiled", self.compiled))
        ct = _ConfigTiming(self, config, n_sets, side_list, int(tp.get("check_sets", 4)))
        ct.per_set = self._per_set_bytes(config)
        shared = self.gpu_lock.shared
        t_warm = time.perf_counter()
        with shared():
            ct.allocate(1)
        # the trusted sides first: threads their first calls leave (a compiler's) are then in the
        # snapshot the candidate's warm-up calls are checked against
        budget_s = float(tp.get("torch_compile_budget_s", 120.0))
        for name in sorted(ct.sides, key=lambda n: n == "candidate"):
            side = ct.sides[name]
            try:
                # as in a timed sample: the harness's own work is done before the call starts; torch.compile
                # compiles on its first call of a shape, within a time budget
                with _time_limit(budget_s if name == "compiled" else None):
                    self.timer.warm_up(lambda side=side: (side["prepare"](0), torch.cuda.synchronize(),
                                                          side["call"](0), side["after"](0)), around=shared)
            except GateFailure as exc:
                if name != "compiled":
                    raise
                if _OverBudget.__name__ in exc.message:
                    # dynamo unrolls Python loops: a long one compiles for minutes. No torch.compile
                    # figure for this config nor the ones after it (their compiles would cost as much)
                    ct.warnings.append(f"torch_compile_timeout: torch.compile did not compile the reference "
                                       f"within {budget_s:g} s; no torch.compile figure for this config or the "
                                       f"later ones")
                    self.compiled = None
                else:
                    ct.warnings.append(f"torch_compile_failed: {exc.message[:200]}")
                del ct.sides[name]
        self.guard_check("the candidate's warm-up")
        ct.retire(-1)
        ct.verify_kept()            # the warm-up's outputs, checked like a timed round's
        ct.warm_s = time.perf_counter() - t_warm
        for v in ct.host_us.values():
            v.clear()
        ct.spent["prepare_s"] = ct.spent["verify_s"] = 0.0
        ct.make_timed(tp)
        return ct


class _ConfigTiming:
    """One config's part of a split's timing: its sides, its input sets, the sets kept for the
    checks of the timed outputs and the outcome of those checks.

    A set's seed is drawn and its inputs made only right before its first call: when the
    candidate runs, no later input exists anywhere (nothing to batch ahead or precompute).
    After each round a share of its sets (``check_sets`` of 16) is drawn and kept, the rest let
    go; after the exclusive section the kept ones are checked against the reference on inputs
    made again from each set's seed (which also shows the inputs were left alone), in shared
    sections: no call could know whether its output would be checked (METHODOLOGY.md). Only
    when the kept sets would take more memory than allowed are they checked inside the
    section."""

    def __init__(self, ev: Evaluation, config, n_sets: int, side_list: list, check_sets: int):
        from arena.check.compare import poison_

        self.ev, self.config, self.n_sets, self.check_sets = ev, config, n_sets, check_sets
        self.sets: list[dict[str, Any]] = []
        self.kept: list[dict[str, Any]] = []
        self.oks: list = []
        self.host_us: dict[str, list[float]] = {name: [] for name, _ in side_list}   # host-side duration of calls
        self.spent = {"verify_s": 0.0, "prepare_s": 0.0}
        self.warnings: list[str] = []
        self.warm_s = 0.0
        self.timed = None
        self.plain = None          # the trusted host-bound sides' item, timed without the profiler
        self.per_set = 0
        self.room: Callable[[_ConfigTiming], None] | None = None   # makes room for a round's kept sets
        self.tolerances = [ev.task.tolerance_for(s.dtype) for s in ev.task.outputs]
        copy_out = {name: side.language != "reference" for name, side in side_list}
        self.sides: dict[str, dict[str, Callable[[int], None]]] = {}
        for name, side in side_list:
            def prepare(i: int, name=name) -> None:
                t0 = time.perf_counter()
                st = self.sets[i]
                if st["ins"] is None:
                    st["seed"] = ev.rng.getrandbits(62)
                    st["ins"] = list(ev.make_inputs(st["seed"]).values())
                for o in st["outs"][name]:
                    poison_(o)
                if name == "candidate":
                    ev.threads.before()
                self.spent["prepare_s"] += time.perf_counter() - t0

            def call(i: int, side=side, name=name) -> None:
                t0 = time.perf_counter()
                ev.call_side(side, self.sets[i]["ins"], self.sets[i]["outs"][name], copy_out=copy_out[name])
                self.host_us[name].append((time.perf_counter() - t0) * 1e6)

            def after(i: int, name=name) -> None:
                if name == "candidate":
                    # its outputs stay for the checks; a trusted candidate (the reference) starts no threads
                    if not ev.candidate_trusted:
                        threads = ev.threads.after()
                        if threads:
                            raise GateFailure("INTEGRITY_VIOLATION",
                                              f"a timed call left threads running: {', '.join(threads[:8])}")
                else:  # no correct answer of another side stays in memory while the candidate runs
                    for o in self.sets[i]["outs"][name]:
                        poison_(o)

            self.sides[name] = {"prepare": prepare, "call": call, "after": after}

    def make_timed(self, tp: dict[str, Any]) -> None:
        from arena.timing.timer import Timed

        self.rule = {"min_pairs": int(tp.get("min_pairs", 10)), "max_pairs": int(tp.get("max_pairs", 400)),
                     "target_rse": float(tp.get("target_rse", 0.01)), "cap_s": float(tp.get("cap_s", 4.0))}
        self.timed = Timed(dict(self.sides), self.n_sets, **self.rule, fill=self.fill, retire=self.retire,
                           split=self.split_host_bound)
        self.plain = None

    def items(self) -> list:
        """What time_many times for this config: the profiled item, and the one split off it."""
        return [self.timed] + ([self.plain] if self.plain is not None else [])

    def done(self) -> bool:
        return all(t.done for t in self.items())

    def host_bound(self, name: str) -> bool:
        """A side whose calls' host time (launches from Python) is at least HOST_BOUND_RATIO
        of its span: the profiler's per-launch work stretches its span."""
        from arena.timing import stats

        host, spans = self.host_us.get(name), self.timed.result.spans_us.get(name)
        return bool(host and spans) and stats.median(host) >= HOST_BOUND_RATIO * stats.median(spans)

    def split_host_bound(self, timed) -> Any:
        """After the first batch: the trusted sides (the baseline, torch.compile's, the reference
        as candidate) that are host-bound go on without the profiler, in an item of their own
        (arena.timing.timer); the candidate's own code is always profiled."""
        from arena.timing.timer import Timed

        moved = [n for n in list(timed.sides) if (n != "candidate" or self.ev.candidate_trusted) and self.host_bound(n)]
        if not moved:
            return None
        for n in moved:
            del timed.sides[n]
        retire = self.retire if "candidate" in moved else self.let_go
        rule = {**self.rule, "max_pairs": min(self.rule["max_pairs"], UNPROFILED_MAX_PAIRS)}
        self.plain = Timed({n: self.sides[n] for n in moved}, self.n_sets, **rule, fill=self.fill,
                           retire=retire, profiled=False, settled=self.span_is_lower)
        return self.plain

    def medians(self, name: str) -> tuple[float, float] | None:
        """A side's median under the profiler and without it, where it has both."""
        from arena.timing import stats

        by_span = self.timed.result.spans_us.get(name)
        by_events = self.plain.result.spans_us.get(name) if self.plain is not None else None
        if not by_span or not by_events:
            return None
        return stats.median(by_span), stats.median(by_events)

    def span_is_lower(self, plain) -> bool:
        """The unprofiled item has nothing more to give once every side of it reads slower than
        under the profiler (their figure is then the profiled one)."""
        return all(m is not None and m[1] >= m[0] for m in map(self.medians, plain.sides))

    def let_go(self, round_no: int) -> None:
        """After a round of trusted sides alone: nothing to check."""
        self.sets = []

    def use(self) -> None:
        """This config's shapes and scalars for the calls that follow; failures are its own."""
        self.ev._set_config(self.config)
        self.ev._current = self

    def allocate(self, n: int) -> None:
        self.use()
        self.sets = [{"seed": None, "ins": None, "outs": {name: self.ev.allocate_outputs() for name in self.sides}}
                     for _ in range(n)]

    def fill(self, round_no: int) -> None:
        """New sets for a round (inside the exclusive section, before its first flush)."""
        if self.room is not None:
            self.room(self)
        self.allocate(self.n_sets)
        self.ev.torch.cuda.synchronize()

    def checked_per_round(self) -> int:
        """``check_sets`` of 16 sets a round (every set if 0); of fewer sets, as large a share,
        one at least."""
        if self.check_sets <= 0:
            return self.n_sets
        return min(self.n_sets, max(1, -(-self.check_sets * self.n_sets // 16)))

    def retire(self, round_no: int) -> None:
        """After a round: keep ``checked_per_round()`` of the sets it used, drawn now; let the
        rest go."""
        used = [st for st in self.sets if st["ins"] is not None]
        if self.checked_per_round() < len(used):
            used = self.ev.rng.sample(used, self.checked_per_round())
        self.kept += [{"seed": st["seed"], "ins": st["ins"], "outs": st["outs"]["candidate"]} for st in used]
        self.sets = []

    def verify_kept(self, slice_s: float = 0.1) -> None:
        """The kept sets checked, then let go: in shared sections of about ``slice_s`` each (a
        waiting timed round gets in between them; one section a set would wait behind every
        writer once a set)."""
        from arena.check.compare import all_ok, check_tensors

        ev = self.ev
        t0 = time.perf_counter()
        kept, self.kept = self.kept, []
        if kept:
            self.use()
        i = 0
        while i < len(kept):
            with ev.gpu_lock.shared():
                t_section = time.perf_counter()
                while i < len(kept) and (time.perf_counter() - t_section < slice_s):
                    st = kept[i]
                    i += 1
                    bad_input, fresh = ev.mutated_input(st["ins"], st["seed"])
                    if bad_input >= 0:
                        raise GateFailure("INPUT_MUTATED", "an input was written to during the timed calls")
                    if not ev.candidate_trusted:   # the reference itself (torch2hip's starting point): no copy-out
                        exp = ev.expected(fresh, ev._scalars)
                        for o, e, tol in zip(st["outs"], exp, self.tolerances):
                            self.oks.append(bool(all_ok(check_tensors(o, e, tol))))   # waits for the device
                        del exp
                    del fresh
                ev.torch.cuda.synchronize()
        self.spent["verify_s"] += time.perf_counter() - t0

    def drop(self) -> None:
        """Let the sets go (after a section that failed: its samples are not used)."""
        self.sets, self.kept = [], []

    def shrink(self) -> None:
        """A quarter of the input sets a round (after running out of memory)."""
        self.n_sets = max(1, self.n_sets // 4)
        for t in self.items():
            t.n_sets = self.n_sets

    def _set_bytes(self, st: dict[str, Any]) -> int:
        return sum(t.numel() * t.element_size() for t in st["ins"] if hasattr(t, "numel")) + \
            sum(o.numel() * o.element_size() for o in st["outs"])

    def kept_bytes(self) -> int:
        return sum(self._set_bytes(st) for st in self.kept)

    def kept_per_round(self) -> int:
        """Device memory the sets kept from one round take (their inputs and the candidate's
        outputs: at most half of ``per_set``)."""
        return self.checked_per_round() * self.per_set // 2

    def result(self) -> dict[str, Any]:
        from arena.guard import foreign_kernels

        ev, samples = self.ev, self.timed.result
        spans, events = dict(samples.spans_us), dict(samples.events_us)
        timers = {n: "span" for n in spans}
        other: dict[str, float] = {}       # a side's median by the timer not used, where it had two
        plain = self.plain.result if self.plain is not None else None
        if plain is not None:
            for n in self.plain.sides:
                m = self.medians(n)
                if m is None:
                    continue
                by_span, by_events = m
                if by_events < by_span:       # the lower of two complete measures of trusted code
                    spans[n], events[n], timers[n] = plain.spans_us[n], plain.events_us[n], "events"
                other[n] = round(by_span if timers[n] == "events" else by_events, 3)
        parts = [samples] + ([plain] if plain is not None else [])
        n_bad = sum(0 if ok else 1 for ok in self.oks)
        # the eager reference (a trusted candidate) is torch's kernels by definition
        library = [] if ev.candidate_trusted else \
            foreign_kernels(samples.kernels.get("candidate", ()), ev.candidate.own_kernels)
        result: dict[str, Any] = {"status": "PASSED", "spans_us": spans, "events_us": events, "timers": timers,
                                  "other_timer_median_us": other, "rounds": sum(p.rounds for p in parts),
                                  "n_sets": self.n_sets, "wall_s": round(sum(p.wall_s for p in parts), 3),
                                  "profiler_s": round(samples.profiler_s, 3),
                                  "refresh_s": round(sum(p.refresh_s for p in parts), 3),
                                  "warm_s": round(self.warm_s, 3), "verify_s": round(self.spent["verify_s"], 3),
                                  "prepare_s": round(self.spent["prepare_s"], 3),
                                  "warnings": samples.warnings + self.warnings, "timed_checks": len(self.oks),
                                  "timed_bad": n_bad, "host_us": self.host_us,
                                  "kernels": sorted(samples.kernels.get("candidate", ()))[:50]}
        if n_bad:
            result["status"] = "INCORRECT_NUMERICAL"
            result["message"] = f"{n_bad} of {len(self.oks)} outputs of timed calls were wrong"
        elif library:
            result["status"] = "FORBIDDEN_CALL"
            result["message"] = "the candidate's timed calls ran kernels it does not define (library or torch " \
                                "compute kernels): " + ", ".join(library[:5])
        return result


class _OverBudget(BaseException):
    """Raised in the main thread when a time limit of ``_time_limit`` runs out."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise _OverBudget in the main thread if the block is still running after ``seconds``
    (SIGALRM; nothing if None). For trusted host-side work only (torch.compile compiling the
    reference): a candidate's time is bounded by the parent's stage timeouts."""
    if seconds is None:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _OverBudget(f"over the time limit of {seconds:g} s")

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _compile_off_gpu(lock) -> None:
    """Triton's JIT compiler is host-only work: a kernel compiled on its first call inside a
    shared section lets the GPU's lock go meanwhile (``GpuLock.off_gpu``), so no timed round of
    another evaluation waits for it. Installed before any kernel binds the compiler."""
    try:
        import triton.compiler as tc
    except ImportError:
        return
    real = tc.compile
    if getattr(real, "_arena_off_gpu", False):
        return

    def compile(*args: Any, **kwargs: Any) -> Any:
        with lock.off_gpu():
            return real(*args, **kwargs)

    compile._arena_off_gpu = True  # type: ignore[attr-defined]
    tc.compile = compile
    try:
        import triton.compiler.compiler as tcc

        tcc.compile = compile
    except ImportError:
        pass


def off_gpu_backend(lock, inner: Callable | None = None) -> Callable:
    """A torch.compile backend: ``inner`` (inductor's compile_fx by default) with the GPU's lock
    let go while it compiles (``GpuLock.off_gpu``); the compiled graph runs under the caller's
    section as before."""
    def backend(gm: Any, example_inputs: list) -> Any:
        compile_fx = inner
        if compile_fx is None:
            from torch._inductor.compile_fx import compile_fx
        with lock.off_gpu():
            return compile_fx(gm, example_inputs)

    return backend


def _merge_worst(worst: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    out = dict(worst)
    for key in ("max_abs_err", "max_rel_err", "norm_err", "mismatch_fraction"):
        v = stats.get(key)
        if v is not None and (out.get(key) is None or v > out[key]):
            out[key] = v
            if key == "max_abs_err":
                out["where"] = stats.get("where")
    return out


def _preload(mode: str) -> None:
    """What every job needs, done while the worker waits for one (``arena.evaluate`` starts
    workers ahead): torch, the harness's modules and, on a GPU, Triton, the timer and the
    device's context. Nothing here reads the job."""
    import torch

    import arena.check.compare  # noqa: F401
    import arena.check.inputs  # noqa: F401
    import arena.guard  # noqa: F401
    import arena.taskdef.loader  # noqa: F401
    if mode == "gpu":
        from arena.timing.timer import preload

        torch.cuda.init()
        preload()


def main(argv: list[str]) -> int:
    in_fd, out_fd = int(argv[0]), int(argv[1])
    try:
        _preload(argv[2] if len(argv) > 2 else "cpu")
    except BaseException:  # noqa: BLE001 - the job then fails where the import is needed, with its message
        pass
    job = read_frame(in_fd)
    os.close(in_fd)
    if job is None:
        return 2
    os.environ.update(job.pop("env", None) or {})     # this job's caches (read when first used)
    # keep the result channel away from the low descriptors candidate code might guess
    hidden = os.dup(out_fd)
    hidden = os.dup2(hidden, 900 + random.randrange(90)) if hidden < 900 else hidden
    os.close(out_fd)
    send = signed_writer(hidden, bytes.fromhex(job.pop("key")))
    try:
        ev = Evaluation(job, send)
        ev.run()
        send({"type": "done"})
    except GateFailure as exc:
        send({"type": "failure", "status": exc.status, "message": exc.message})
    except BaseException as exc:  # noqa: BLE001
        send({"type": "failure", "status": "HARNESS_ERROR",
              "message": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}"})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: candidate atexit hooks and threads do not get a say


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
