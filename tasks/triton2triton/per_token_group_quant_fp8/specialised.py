"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's tiled kernel with one assumption baked in: every group is 128 wide (true for
every seen shape, DeepSeek-V3's block size). The group count, the tile and the scale index
are all computed for 128, so with 64-wide groups each scale covers two groups: the values
are quantised with the wrong scale and half of the scales are never written. Every access
stays inside the buffers; the failure is a wrong value, never a fault.
"""

import triton
import triton.language as tl

FP8_MAX = 448.0
GROUP = 128
ROWS = 32


@triton.jit
def _round_to_e4m3(v):
    bits = v.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFFF + ((bits >> 20) & 1)) & -1048576
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _pow2_ceil_bits(s):
    bits = s.to(tl.int32, bitcast=True)
    up = (bits & 0x7FFFFF) != 0
    bits = (bits & 0x7F800000) + tl.where(up, 0x800000, 0)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _group128_quant_tile(x_ptr, q_ptr, s_ptr, num_groups, eps, fp8_max,
                         ROWS: tl.constexpr, UE8M0: tl.constexpr):
    g = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    g_ok = g < num_groups
    offs = g[:, None] * 128 + tl.arange(0, 128)[None, :]
    x = tl.load(x_ptr + offs, mask=g_ok[:, None], other=0.0).to(tl.float32)
    s = tl.maximum(tl.max(tl.abs(x), axis=1), eps) / fp8_max
    if UE8M0:
        s = _pow2_ceil_bits(s)
    q = _round_to_e4m3(tl.minimum(tl.maximum(x * (1.0 / s)[:, None], -fp8_max), fp8_max))
    tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=g_ok[:, None])
    tl.store(s_ptr + g, s, mask=g_ok)


def per_token_group_quant_fp8(x, q, scales, tokens, hidden, group_size, scale_ue8m0, eps):
    num_groups = tokens * hidden // GROUP
    _group128_quant_tile[(triton.cdiv(num_groups, ROWS),)](x, q, scales, num_groups, eps, FP8_MAX, ROWS=ROWS,
                                                         UE8M0=bool(scale_ue8m0), num_warps=8)
    return None
