"""fp8 conversions on Triton's interpreter (arena.toolchain.interpreter_fp8): what a kernel
gets from ``.to(tl.float8e4nv)`` and back on the cpu backend is what a GPU gives: round to
nearest even, subnormals kept, saturation at the largest magnitude, NaN kept, in both
directions, from fp32, fp16 and bf16."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECK = r'''
import torch, triton, triton.language as tl
from arena.toolchain import interpreter_fp8
interpreter_fp8.install()
interpreter_fp8.install()            # twice: no second wrapper

@triton.jit
def cast(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m).to(y_ptr.dtype.element_ty), mask=m)

def same(a, b):
    a, b = a.float(), b.float()
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(a[~a.isnan()], b[~b.isnan()])

bad = []
# ties (1.0625 -> 1.0 in e4m3), subnormals, past the largest value, infinities, NaN
x = torch.tensor([1.0, 1.0625, 1.1875, 0.0019, 0.003, -0.0007, 300., 448., 500., -1e9, 6e4, 2.9, 0.2,
                  float("nan"), float("inf"), -float("inf")])
for src in (torch.float32, torch.float16, torch.bfloat16):
    for dst in (torch.float8_e4m3fn, torch.float8_e5m2):
        xs = x.to(src)
        y = torch.empty(x.numel(), dtype=dst)
        cast[(1,)](xs, y, x.numel(), BLOCK=16)
        top = torch.finfo(dst).max
        if not same(y, xs.float().clamp(-top, top).to(dst)):
            bad.append((str(src), str(dst), y.float().tolist()))
bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)
for f8 in (torch.float8_e4m3fn, torch.float8_e5m2):
    for wide in (torch.float32, torch.float16, torch.bfloat16):
        x8 = bits.view(f8)
        y = torch.empty(256, dtype=wide)
        cast[(1,)](x8, y, 256, BLOCK=256)
        if not same(y, x8.to(wide)):
            bad.append((str(f8), str(wide)))
# the rest stays the interpreter's
y = torch.empty(3, dtype=torch.float16)
cast[(1,)](torch.tensor([1.0, 2.5, -3.0]), y, 3, BLOCK=4)
if y.tolist() != [1.0, 2.5, -3.0]:
    bad.append(("fp32 -> fp16", y.tolist()))
print("BAD", bad)
'''


def test_fp8_conversions_on_the_interpreter_are_a_gpu_s():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "BAD []"


def test_a_candidate_that_rounds_to_fp8_passes_on_the_cpu_backend(tmp_path, cpu, axpy):
    """End to end: a kernel whose result holds only if 1.0625 rounds to 1.0 in e4m3 (a tie, to
    even) and 500 saturates to 448 passes in the cpu backend's candidate process; the
    interpreter's own conversion (1.125, 256) would make it INCORRECT_NUMERICAL."""
    from arena.evaluation.parent import Candidate, evaluate

    src = (axpy.path / "baseline.py").read_text()
    src = src.replace("    tl.store(out_ptr + offs, alpha * x + y, mask=mask)",
                      "    tie = tl.full([BLOCK], 1.0625, tl.float32).to(tl.float8e4nv).to(tl.float32)\n"
                      "    big = tl.full([BLOCK], 500.0, tl.float32).to(tl.float8e4nv).to(tl.float32)\n"
                      "    tl.store(out_ptr + offs, alpha * x + y + (tie - 1.0) + (big - 448.0), mask=mask)")
    assert "float8e4nv" in src
    path = tmp_path / "rounds.py"
    path.write_text(src)
    (v,) = evaluate(axpy, Candidate(axpy, path), ["smoke"], cpu, timing=False)
    assert v.status.value == "PASSED", v.message
