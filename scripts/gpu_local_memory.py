"""How much device memory a process holds for its kernels' local memory (register spills), on CUDA:
    python3 scripts/gpu_local_memory.py [OUT.md]
One Triton kernel that keeps a BLOCK_M x BLOCK_N fp32 tile live across a loop, compiled at tiles from none spilled
to most spilled, launched in turn in one process. For each: Triton's spill count, the function's local memory per
thread (``cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)``), the device memory in use after its launch
(``cudaMemGetInfo``, with torch's allocator's reserved bytes taken out: the process's memory outside the allocator)
and what a reservation of local memory for every thread the GPU can hold would be (local bytes x SMs x threads an SM
holds). Then a kernel with no local memory again: whether the reservation stays; and whether setting the context's
stack size limit gives it back. The table answers whether a process
whose kernels spill holds memory past its allocator's (the device-memory allowance of arena.evaluation.memory counts
the process's whole memory)."""

from __future__ import annotations

import ctypes
import datetime
import platform
import sys

import torch
import triton
import triton.language as tl

CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_LIMIT_STACK_SIZE = 0


@triton.jit
def tile(x, out, steps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for i in range(steps):
        a = tl.load(x + (rm + i) % 1024)
        b = tl.load(x + (rn * 3 + i) % 1024)
        acc = acc * 0.5 + a[:, None] * b[None, :]
    tl.store(out + rm[:, None] * BLOCK_N + rn[None, :], acc)


def local_bytes(kernel) -> int:
    cuda = ctypes.CDLL("libcuda.so.1")
    value = ctypes.c_int(0)
    rc = cuda.cuFuncGetAttribute(ctypes.byref(value), CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                 ctypes.c_void_p(kernel.function))
    return int(value.value) if rc == 0 else -1


def outside_allocator() -> int:
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return (total - free) - torch.cuda.memory_reserved()


def main() -> None:
    dev = torch.cuda.get_device_properties(0)
    threads = dev.multi_processor_count * dev.max_threads_per_multi_processor
    x = torch.randn(2048, device="cuda")
    rows = []
    base = outside_allocator()
    cuda = ctypes.CDLL("libcuda.so.1")
    initial = ctypes.c_size_t(0)
    cuda.cuCtxGetLimit(ctypes.byref(initial), CU_LIMIT_STACK_SIZE)
    for bm, bn, warps in ((16, 16, 4), (64, 64, 4), (64, 128, 2), (128, 128, 1), (128, 256, 1), (256, 256, 1)):
        out = torch.empty(bm * bn, device="cuda")
        k = tile[(1,)](x, out, 8, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps)
        held = outside_allocator()
        lb = local_bytes(k)
        rows.append((f"{bm} x {bn}, {warps} warps", getattr(k, "n_spills", "?"), lb, (held - base) / 2**30,
                     lb * threads / 2**30))
        del out
    small = torch.empty(16 * 16, device="cuda")
    tile[(1,)](x, small, 8, BLOCK_M=16, BLOCK_N=16, num_warps=4)
    after = outside_allocator()
    # whether setting the context's stack size limit (CU_LIMIT_STACK_SIZE) gives the reservation back: to the value it
    # has, to twice it, back, and to the value it had before the first kernel
    stack = ctypes.c_size_t(0)
    cuda.cuCtxGetLimit(ctypes.byref(stack), CU_LIMIT_STACK_SIZE)
    resets = []
    for value in (stack.value, 2 * stack.value, stack.value, initial.value):
        rc = cuda.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, ctypes.c_size_t(value))
        resets.append((value, rc, (outside_allocator() - base) / 2**30))
    tile[(1,)](x, small, 8, BLOCK_M=16, BLOCK_N=16, num_warps=4)
    again = (outside_allocator() - base) / 2**30
    mid = torch.empty(128 * 128, device="cuda")
    tile[(1,)](x, mid, 8, BLOCK_M=128, BLOCK_N=128, num_warps=1)
    regrown = (outside_allocator() - base) / 2**30
    del mid
    lines = [
        f"# Local memory a process holds for its kernels' spills ({datetime.date.today()})",
        "",
        f"- machine: {dev.name} ({dev.multi_processor_count} SMs, {dev.max_threads_per_multi_processor} threads an SM:"
        f" {threads:,} threads), python {platform.python_version()}, torch {torch.__version__}, triton "
        f"{triton.__version__}",
        f"- the process's memory outside torch's allocator before the first kernel: {base / 2**30:.3f} GiB",
        "",
        "| tile | Triton's spills | local bytes a thread | held past the first kernel's (GiB) | local bytes x threads "
        "(GiB) |",
        "|---|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d:.3f} | {e:.3f} |" for a, b, c, d, e in rows],
        "",
        f"After the 16 x 16 tile again (no local memory): {(after - base) / 2**30:.3f} GiB held past the first "
        "kernel's.",
        "",
        "| cuCtxSetLimit(CU_LIMIT_STACK_SIZE, bytes) | result | held past the first kernel's (GiB) |",
        "|---|---|---|",
        *[f"| {v} | {rc} | {h:.3f} |" for v, rc, h in resets],
        "",
        f"The 16 x 16 tile once more after them: {again:.3f} GiB held; then the 128 x 128 tile: {regrown:.3f} GiB "
        f"(the limit before the first kernel: {initial.value} bytes).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
