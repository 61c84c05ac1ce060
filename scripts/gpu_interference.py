"""Which host-side activity of another process slows a kernel being timed (GPU only).

The GPU lock keeps other evaluations' kernels away from a timed round. Some GPU activity of
other processes runs outside any section of it: starting a process (its context), allocating
and freeing device memory, copies from the host, mapping another process's buffers (IPC),
loading a compiled module. This script times two long kernels of its own (a compute-bound
fp16 matmul and a memory-bound add, each a few milliseconds) with events, one launch at a
time, while a second process does one such activity in a loop, and prints how much each
activity moved the kernels' times against an idle second process. A tiny kernel launched
every millisecond is the positive control (contexts take turns on the GPU).

    python scripts/gpu_interference.py [SECONDS_PER_PHASE] > table.md
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

PHASES = ["idle", "sync", "context", "context_4g", "malloc_1g", "h2d", "d2h", "ipc", "module_load",
          "tiny_kernel", "starts_x6", "starts_x6_host_only"]
STARTS = 6     # processes started side by side in the starts_* phases (a run of 12 workers starts about 3 a second)


def load(phase: str) -> None:
    """The second process: set up, say ready, then do ``phase`` until killed."""
    import torch

    torch.cuda.init()
    dev = torch.device("cuda")
    small = torch.zeros(4, device=dev)
    torch.cuda.synchronize()
    child_code = {
        "context": "import torch; torch.cuda.init(); torch.empty(1, device='cuda'); torch.cuda.synchronize()",
        "context_4g": "import torch; torch.cuda.init(); x = torch.empty(2**32, dtype=torch.uint8, device='cuda');"
                      " torch.cuda.synchronize()",
        # a process of an evaluation: torch, a context, a flush buffer of twice the L2, then gone
        "starts_x6": "import torch; torch.cuda.init(); x = torch.empty(126 * 2**20, dtype=torch.uint8, device='cuda');"
                     " torch.cuda.synchronize()",
        "starts_x6_host_only": "import torch",
    }
    queue = None
    if phase == "ipc":
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        queue = ctx.Queue(4)
        done = ctx.Queue()
        child = ctx.Process(target=_ipc_child, args=(queue, done), daemon=True)
        child.start()
    kernel = None
    if phase == "module_load":
        import triton
        import triton.language as tl

        @triton.jit
        def bump(x, K: tl.constexpr):
            tl.store(x, tl.load(x) + K)

        kernel = bump
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        if phase in ("idle",):
            time.sleep(0.05)
        elif phase == "sync":
            torch.cuda.synchronize()
        elif phase.startswith("starts_"):
            children = [subprocess.Popen([sys.executable, "-c", child_code[phase]]) for _ in range(STARTS)]
            for c in children:
                c.wait()
        elif phase in child_code:
            subprocess.run([sys.executable, "-c", child_code[phase]], check=False)
        elif phase == "malloc_1g":
            x = torch.empty(2**30, dtype=torch.uint8, device=dev)
            del x
            torch.cuda.empty_cache()
        elif phase == "h2d":
            torch.tensor([i, 1, 2, 3], device=dev)
        elif phase == "d2h":
            small.tolist()
        elif phase == "ipc":
            t = torch.empty(64 * 2**20, dtype=torch.uint8, device=dev)    # a fresh block each time
            queue.put(t)
            done.get()
            del t
            torch.cuda.empty_cache()
        elif phase == "module_load":
            k = kernel.warmup(small, K=i, grid=(1,))      # compiled, not launched
            k._init_handles()                            # the module loaded onto the device
        elif phase == "tiny_kernel":
            small.add_(1)
            torch.cuda.synchronize()
            time.sleep(0.001)


def _ipc_child(queue, done) -> None:
    import torch

    torch.cuda.init()
    while True:
        t = queue.get()      # maps the sender's block (cudaIpcOpenMemHandle)
        del t
        torch.cuda.ipc_collect()
        done.put(1)


def main() -> None:
    import torch

    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    dev = torch.device("cuda")
    a = torch.randn(8192, 8192, device=dev, dtype=torch.float16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.float16)
    big = [torch.ones(2**29, device=dev) for _ in range(2)]          # 2 GiB each
    kernels = {"matmul": lambda: torch.mm(a, b), "add": lambda: big[0].add_(big[1])}
    for f in kernels.values():
        for _ in range(5):
            f()
    torch.cuda.synchronize()
    times: dict[tuple[str, str], list[float]] = {}
    for phase in PHASES:
        proc = subprocess.Popen([sys.executable, __file__, "--load", phase], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready", phase
        time.sleep(0.3)
        end = time.monotonic() + secs
        while time.monotonic() < end:
            for name, f in kernels.items():
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                f()
                e.record()
                e.synchronize()
                times.setdefault((phase, name), []).append(s.elapsed_time(e) * 1000)
        proc.kill()
        proc.wait()
    gpu = torch.cuda.get_device_name()
    print(f"# Another process's activity against a timed kernel ({gpu}, torch {torch.__version__}, "
          f"{secs:.0f} s a phase)\n")
    print("| activity of the other process | kernel | n | median (us) | p90 (us) | max (us) | median / idle | "
          "p90 / idle |")
    print("|---|---|---|---|---|---|---|---|")
    for phase in PHASES:
        for name in kernels:
            xs = sorted(times[(phase, name)])
            idle = sorted(times[("idle", name)])
            med, p90 = statistics.median(xs), xs[int(0.9 * (len(xs) - 1))]
            imed, ip90 = statistics.median(idle), idle[int(0.9 * (len(idle) - 1))]
            print(f"| {phase} | {name} | {len(xs)} | {med:,.1f} | {p90:,.1f} | {xs[-1]:,.1f} | {med / imed:.3f} | "
                  f"{p90 / ip90:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--load":
        load(sys.argv[2])
    else:
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        main()
