"""Starting kernel for AWQ int4 dequantisation: correct for every shape, deliberately simple.

One output element per lane, the way the formula reads: one program per weight row k walks
the row in fixed chunks of 256 columns; for each column n it loads the packed word that holds
it (qweight[k, n // 8], shared by 8 neighbouring lanes), the zero-point word of its group and
its scale, shifts its nibble out (nibble (j // 2) + 4 (j % 2) for j = n % 8, AWQ's order) and
writes (q - z) * scale. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _dequant_rows(qw_ptr, qz_ptr, scales_ptr, out_ptr, N, group_size, BLOCK: tl.constexpr):
    k = tl.program_id(0).to(tl.int64)
    g = k // group_size
    words = N // 8
    for start in range(0, N, BLOCK):
        n = start + tl.arange(0, BLOCK)
        mask = n < N
        j = n % 8
        shift = ((j // 2) + 4 * (j % 2)) * 4
        w = tl.load(qw_ptr + k * words + n // 8, mask=mask, other=0)
        zw = tl.load(qz_ptr + g * words + n // 8, mask=mask, other=0)
        q = (w >> shift) & 0xF
        z = (zw >> shift) & 0xF
        s = tl.load(scales_ptr + g * N + n, mask=mask, other=0.0).to(tl.float32)
        y = (q - z).to(tl.float32) * s
        tl.store(out_ptr + k * N + n, y.to(out_ptr.dtype.element_ty), mask=mask)


def awq_int4_dequant(qweight, qzeros, scales, out, k, n, group_size):
    _dequant_rows[(k,)](qweight, qzeros, scales, out, n, group_size, BLOCK=BLOCK)
    return None
