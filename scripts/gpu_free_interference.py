"""Does giving device memory back in another process change the time of timed kernels?

The trusted process of every evaluation gives the blocks torch's allocator caches back to the
device after each config (``arena.evaluation.trusted.process.Evaluation.release_memory``: ``empty_cache``, a
``cudaFree`` per block, no kernel), inside a shared section of the GPU lock, which keeps a
waiting timed round out for as long as it lasts. This measures what it would do to a timed
round running beside it, were it done outside the lock: the harness's own timer
(``DeviceTimer``: flush, start event, call, synchronize, end event, marker; the span read
from the profiler) times three kernels here,
in blocks that alternate between a quiet GPU and one where another process allocates and
frees device memory as fast as it can (``torch.empty`` then ``empty_cache``, sizes 2 MiB to
2 GiB; no kernel of its own).

Run on a GPU machine from the repository root:
    python scripts/gpu_free_interference.py [BLOCKS] [SAMPLES]
Prints one row per kernel: the median and the 10th / 90th percentiles of its span on the
quiet GPU and beside the frees, and their ratio; and how many frees the other process made.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import time


def churn(go, stop, count) -> None:
    import torch

    torch.cuda.init()
    sizes = [2 << 20, 64 << 20, 512 << 20, 2 << 30]
    n = 0
    while not stop.is_set():
        if not go.wait(0.01):
            continue
        for size in sizes:
            torch.empty(size, dtype=torch.uint8, device="cuda")     # allocated, then freed at once
            torch.cuda.empty_cache()
            n += 1
        with count.get_lock():
            count.value = n


def main() -> int:
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    import torch

    sys.path.insert(0, ".")
    from arena.timing.stats import quantile
    from arena.timing.timer import DeviceTimer, preload

    ctx = mp.get_context("spawn")
    go, stop, count = ctx.Event(), ctx.Event(), ctx.Value("l", 0)
    proc = ctx.Process(target=churn, args=(go, stop, count), daemon=True)
    proc.start()
    preload()
    props = torch.cuda.get_device_properties(0)
    timer = DeviceTimer(int(getattr(props, "L2_cache_size", 50 << 20)))
    x = torch.randn(64 << 20, device="cuda")            # 256 MiB
    y = torch.empty_like(x)
    s = torch.randn(1 << 18, device="cuda")             # 1 MiB
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    kernels = {"copy 256 MiB": lambda: y.copy_(x), "add 1 MiB": lambda: s.add_(1.0),
               "matmul 4096 fp16": lambda: torch.mm(a, b)}
    for f in kernels.values():
        for _ in range(5):
            f()
    torch.cuda.synchronize()
    nothing = lambda: None  # noqa: E731
    spans: dict[tuple[str, str], list[float]] = {}
    frees = {"quiet": 0, "frees": 0}
    for block in range(2 * blocks):
        mode = "frees" if block % 2 else "quiet"
        if mode == "frees":
            go.set()
            time.sleep(0.2)                              # the other process under way
        n0 = count.value
        steps = [(name, nothing, f, nothing) for _ in range(samples) for name, f in kernels.items()]
        out, _ = timer.sample_round(steps)
        frees[mode] += count.value - n0
        go.clear()
        time.sleep(0.2)
        for name, span, _ev, _act in out:
            spans.setdefault((name, mode), []).append(span)
    stop.set()
    proc.join(10)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; {blocks} blocks of each, {samples} samples "
          f"of each kernel a block; the other process's allocate-and-free cycles: {frees['frees']} beside timed "
          f"blocks, {frees['quiet']} in quiet ones")
    print("| kernel | quiet: median (p10-p90) us | beside frees: median (p10-p90) us | ratio of medians |")
    print("|---|---|---|---|")
    for name in kernels:
        q, f = spans[(name, "quiet")], spans[(name, "frees")]
        print(f"| {name} | {statistics.median(q):.2f} ({quantile(q, .1):.2f}-{quantile(q, .9):.2f}) | "
              f"{statistics.median(f):.2f} ({quantile(f, .1):.2f}-{quantile(f, .9):.2f}) | "
              f"{statistics.median(f) / statistics.median(q):.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
