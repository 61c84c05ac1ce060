"""Starting kernel for clipping by the global norm: correct for every shape, simple.

Three kernels:
1. one program per block of 1024 elements writes the block's sum of squares;
2. a single program adds the partial sums (1024 at a time, in order), takes the square
   root and writes the clip coefficient min(1, max_norm / (norm + 1e-6));
3. one program per block of 1024 elements writes g * coef.
The buffers of partials and of the coefficient come from PyTorch's caching allocator.
Default launch settings.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _block_sumsq(g_ptr, part_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs, mask=offs < n, other=0.0)
    tl.store(part_ptr + pid, tl.sum(g * g, axis=0))


@triton.jit
def _clip_coef(part_ptr, coef_ptr, n_part, max_norm, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_part, BLOCK):
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + i, mask=i < n_part, other=0.0)
    norm = tl.sqrt(tl.sum(acc, axis=0))
    tl.store(coef_ptr, tl.minimum(max_norm / (norm + 1e-6), 1.0))


@triton.jit
def _scale(g_ptr, coef_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    coef = tl.load(coef_ptr)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, g * coef, mask=mask)


def grad_clip_global_norm(g, out, n, max_norm):
    n_part = triton.cdiv(n, BLOCK)
    part = torch.empty((n_part,), dtype=torch.float32, device=g.device)
    coef = torch.empty((1,), dtype=torch.float32, device=g.device)
    _block_sumsq[(n_part,)](g, part, n, BLOCK=BLOCK)
    _clip_coef[(1,)](part, coef, n_part, max_norm, BLOCK=BLOCK)
    _scale[(n_part,)](g, coef, out, n, BLOCK=BLOCK)
    return None
