"""Where a worker's start-up goes, stage by stage, in wall and CPU seconds, on one GPU.

    python3 scripts/gpu_startup_probe.py [N]

Runs the stages a process of an evaluation goes through before its job (import torch, the
harness's modules, the device's context, the profiler's first start, the compiles of the
timer's own kernels), once alone and then N processes at a time (default 12), with a fresh
Triton cache and with one already filled. Then the same with one import and forks: the
parent imports, forks its children before any device context, and each child opens its own.
Prints one table per setting: the median and largest of each stage over the processes.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _stage(out: dict, name: str, fn) -> None:
    w0, c0 = time.perf_counter(), _cpu()
    fn()
    out[name] = (time.perf_counter() - w0, _cpu() - c0)


def imports(out: dict) -> None:
    _stage(out, "import torch", lambda: __import__("torch"))

    def harness() -> None:
        import arena.check.compare  # noqa: F401
        import arena.check.inputs  # noqa: F401
        import arena.evaluation.buffers  # noqa: F401
        import arena.evaluation.candidate.guard  # noqa: F401
        import arena.taskdef.loader  # noqa: F401
        import arena.timing.timer  # noqa: F401

    _stage(out, "import triton+harness", harness)

    def compiler() -> None:
        import torch._dynamo  # noqa: F401
        import torch._inductor  # noqa: F401

    if os.environ.get("PROBE_COMPILER_FIRST"):      # what the profiler's first start imports, ahead
        _stage(out, "import compiler stack", compiler)


def device(out: dict) -> None:
    import torch

    _stage(out, "cuda init", torch.cuda.init)
    _stage(out, "first tensor", lambda: torch.zeros(1, device="cuda").sum().item())

    def prof() -> None:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]):
            pass

    _stage(out, "profiler first start", prof)
    _stage(out, "profiler second start", prof)

    def warm() -> None:
        from arena.timing.timer import _FLUSH_BLOCK, _arena_end_marker_kernel, _arena_flush_kernel

        _arena_flush_kernel.warmup(torch.float32, 2**24, 1.0, BLOCK=_FLUSH_BLOCK, grid=(1,))
        _arena_end_marker_kernel.warmup(torch.int32, grid=(1,))

    _stage(out, "timer kernels", warm)
    out["threads"] = int([ln for ln in open("/proc/self/status") if ln.startswith("Threads:")][0].split()[1])


def child() -> None:
    out: dict = {}
    t0 = time.perf_counter()
    imports(out)
    device(out)
    out["total"] = (time.perf_counter() - t0, _cpu())
    print(json.dumps(out))


def forked(n: int) -> list[dict]:
    """One parent imports, forks n-1 children (and keeps one part itself), each opens its own
    context: what a worker of three processes would do with one import."""
    out: dict = {}
    t0 = time.perf_counter()
    imports(out)
    import threading

    out["py threads before fork"] = threading.active_count()
    pipes = []
    for _ in range(n - 1):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            mine: dict = {}
            c0 = _cpu()
            t1 = time.perf_counter()
            device(mine)
            mine["total"] = (time.perf_counter() - t1, _cpu() - c0)
            os.write(w, json.dumps(mine).encode())
            os._exit(0)
        os.close(w)
        pipes.append((pid, r))
    device(out)
    out["total"] = (time.perf_counter() - t0, _cpu())
    res = [out]
    for pid, r in pipes:
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.waitpid(pid, 0)
        res.append(json.loads(data))
    return res


def spawn(k: int, args: list[str], cache) -> list[dict]:
    """k processes at once; ``cache``: one Triton cache for all, or a function of the index."""
    procs = [subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TRITON_CACHE_DIR": cache if isinstance(cache, str) else cache(i)})
             for i in range(k)]
    rows: list[dict] = []
    for p in procs:
        got = json.loads(p.communicate()[0].strip().splitlines()[-1])
        rows += got if isinstance(got, list) else [got]
    return rows


def table(title: str, rows: list[dict], wall_s: float) -> None:
    print(f"\n## {title}: {len(rows)} processes, {wall_s:.1f} s wall in all")
    names = [k for k in rows[0] if isinstance(rows[0][k], list)]
    names += [k for r in rows for k in r if isinstance(r[k], list) and k not in names]
    names = list(dict.fromkeys(names))
    print("| stage | wall median | wall max | cpu median | cpu sum |")
    print("|---|---|---|---|---|")
    for k in names:
        vals = [r[k] for r in rows if k in r]
        w = [v[0] for v in vals]
        c = [v[1] for v in vals]
        print(f"| {k} | {statistics.median(w):.2f} | {max(w):.2f} | {statistics.median(c):.2f} | {sum(c):.1f} |")


def main() -> None:
    warnings.filterwarnings("ignore")
    if sys.argv[1:2] == ["--child"]:
        child()
        return
    if sys.argv[1:2] == ["--forked"]:
        print(json.dumps(forked(int(sys.argv[2]))))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    with tempfile.TemporaryDirectory() as d:
        for title, k, args, cache in [
                ("alone, fresh Triton cache", 1, ["--child"], f"{d}/a"),
                ("alone, the same cache again", 1, ["--child"], f"{d}/a"),
                (f"{3 * n} processes at once (three a worker, {n} workers), fresh caches", 3 * n, ["--child"],
                 lambda i: f"{d}/s{i}"),
                (f"{n} workers of one import and two forks each, fresh caches", n, ["--forked", "3"],
                 lambda i: f"{d}/f{i}"),
                (f"{n} workers of one import and two forks each, one filled cache", n, ["--forked", "3"], f"{d}/a"),
                (f"{n} workers of one import (the compiler stack too) and two forks each, fresh caches", n,
                 ["--forked", "3"], lambda i: f"{d}/g{i}")]:
            os.environ["PROBE_COMPILER_FIRST"] = "1" if "compiler stack" in title else ""
            t0 = time.perf_counter()
            rows = spawn(k, args, cache)
            table(title, rows, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
