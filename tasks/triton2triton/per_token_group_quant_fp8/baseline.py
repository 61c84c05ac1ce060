"""Starting kernel for per-token-group fp8 quantisation, written the way serving code writes
it: an autotuned kernel (over num_warps, keyed on the group size), a heuristic that picks the
block from the group size, @triton.jit helpers, libdevice for the power-of-two scale, and
do_not_specialize on the group count (it changes with every batch).

One program per quantisation group: it loads the group's group_size values, reduces their
absmax, stores the group's scale and its group_size e4m3 values. Correct for every shape;
each program moves only a few hundred bytes, so the launch is many tiny programs.

The e4m3 rounding is written out in fp32 (round to nearest even onto e4m3's 3-bit mantissa,
exact for every normal e4m3 value), so the fp8 store only converts values that are already
on the e4m3 grid.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

FP8_MAX = 448.0


@triton.jit
def _absmax(x, eps):
    return tl.maximum(tl.max(tl.abs(x), axis=0), eps)


@triton.jit
def _pow2_ceil(s):
    return libdevice.exp2(libdevice.ceil(libdevice.log2(s)))


@triton.jit
def _round_to_e4m3(v):
    # keep 3 mantissa bits, round half to even (the carry into the exponent is the right result)
    bits = v.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFFF + ((bits >> 20) & 1)) & -1048576
    return bits.to(tl.float32, bitcast=True)


@triton.autotune(
    configs=[
        triton.Config({}, num_warps=1),
        triton.Config({}, num_warps=2),
        triton.Config({}, num_warps=4),
    ],
    key=["group_size"],
)
@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["group_size"])})
@triton.jit(do_not_specialize=["num_groups"])
def _group_quant_fp8(x_ptr, q_ptr, s_ptr, num_groups, group_size, eps, fp8_max,
                     UE8M0: tl.constexpr, BLOCK: tl.constexpr):
    gid = tl.program_id(0).to(tl.int64)
    if gid < num_groups:
        cols = tl.arange(0, BLOCK)
        mask = cols < group_size
        offs = gid * group_size + cols
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        s = _absmax(x, eps) / fp8_max
        if UE8M0:
            s = _pow2_ceil(s)
        q = _round_to_e4m3(tl.minimum(tl.maximum(x / s, -fp8_max), fp8_max))
        tl.store(q_ptr + offs, q.to(q_ptr.dtype.element_ty), mask=mask)
        tl.store(s_ptr + gid, s)


def per_token_group_quant_fp8(x, q, scales, tokens, hidden, group_size, scale_ue8m0, eps):
    num_groups = tokens * (hidden // group_size)
    _group_quant_fp8[(num_groups,)](x, q, scales, num_groups, group_size, eps, FP8_MAX,
                                    UE8M0=bool(scale_ue8m0))
    return None
