"""Reference solution for the Mamba-2 decode state update: correct for every shape.

One program per (sequence, head, block of BLOCK_P channels) holds a [BLOCK_P, dstate] tile of
the state (the whole state row of each channel, dstate padded to a power of two and masked):
the tile is loaded once with wide coalesced loads (the rows of a head are contiguous in the
pool), updated in registers and stored once, and the output comes from a row-wise reduction
of the same tile. The group's B and C rows, and the head's step size, dt_bias, D and A, are
loaded once per program instead of once per channel; A, dt, dt_bias and D are still read
through their strides, so any view the signature allows works. Each program keeps several
16-byte loads in flight per thread (BLOCK_P * dstate ~ 2048 elements over 4 warps), which is
what a memory-bound update needs; the starting kernel has one 128-byte load a warp.
"""

import triton
import triton.language as tl


@triton.jit
def _state_update_tile(state_ptr, x_ptr, dt_ptr, dt_bias_ptr, A_ptr, B_ptr, C_ptr, D_ptr, z_ptr, idx_ptr,
                       out_ptr, nheads, headdim, dstate, ngroups, heads_per_group,
                       dt_sb, dt_sh, dt_sp, db_sh, db_sp, A_sh, A_sp, A_sn, D_sh, D_sp,
                       HAS_DT_BIAS: tl.constexpr, HAS_Z: tl.constexpr, HAS_IDX: tl.constexpr,
                       DT_SOFTPLUS: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_p = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    h = bh % nheads
    b = bh // nheads
    if HAS_IDX:
        s = tl.load(idx_ptr + b).to(tl.int64)
    else:
        s = b
    g = h // heads_per_group

    p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    n = tl.arange(0, BLOCK_N)
    pm = p < headdim
    nm = n < dstate
    m2 = pm[:, None] & nm[None, :]

    xi = (b * nheads + h) * headdim + p
    x = tl.load(x_ptr + xi, mask=pm, other=0.0).to(tl.float32)
    dt = tl.load(dt_ptr + b * dt_sb + h * dt_sh + p * dt_sp, mask=pm, other=0.0).to(tl.float32)
    if HAS_DT_BIAS:
        dt += tl.load(dt_bias_ptr + h * db_sh + p * db_sp, mask=pm, other=0.0)
    if DT_SOFTPLUS:
        dt = tl.where(dt <= 20.0, tl.log(1.0 + tl.exp(dt)), dt)

    bc = (b * ngroups + g) * dstate
    bv = tl.load(B_ptr + bc + n, mask=nm, other=0.0).to(tl.float32)
    cv = tl.load(C_ptr + bc + n, mask=nm, other=0.0).to(tl.float32)
    a = tl.load(A_ptr + h * A_sh + p[:, None] * A_sp + n[None, :] * A_sn, mask=m2, other=0.0)

    offs = ((s * nheads + h) * headdim + p[:, None]) * dstate + n[None, :]
    st = tl.load(state_ptr + offs, mask=m2, other=0.0)
    st = st * tl.exp(a * dt[:, None]) + bv[None, :] * (dt * x)[:, None]
    tl.store(state_ptr + offs, st, mask=m2)

    y = tl.sum(tl.where(m2, st * cv[None, :], 0.0), axis=1)
    y += tl.load(D_ptr + h * D_sh + p * D_sp, mask=pm, other=0.0) * x
    if HAS_Z:
        z = tl.load(z_ptr + xi, mask=pm, other=0.0).to(tl.float32)
        y = y * z * tl.sigmoid(z)
    tl.store(out_ptr + xi, y.to(tl.float16), mask=pm)


def mamba2_ssm_state_update(state, x, dt, dt_bias, A, B, C, D, z, state_batch_indices, out,
                            batch, slots, nheads, headdim, dstate, ngroups, dt_softplus):
    block_n = triton.next_power_of_2(dstate)
    block_p = max(1, min(triton.next_power_of_2(headdim), 2048 // block_n))
    db_s = dt_bias.stride() if dt_bias is not None else (0, 0)
    grid = (triton.cdiv(headdim, block_p), batch * nheads)
    _state_update_tile[grid](
        state, x, dt, x if dt_bias is None else dt_bias, A, B, C, D, x if z is None else z,
        x if state_batch_indices is None else state_batch_indices, out,
        nheads, headdim, dstate, ngroups, nheads // ngroups,
        dt.stride(0), dt.stride(1), dt.stride(2), db_s[0], db_s[1],
        A.stride(0), A.stride(1), A.stride(2), D.stride(0), D.stride(1),
        HAS_DT_BIAS=dt_bias is not None, HAS_Z=z is not None, HAS_IDX=state_batch_indices is not None,
        DT_SOFTPLUS=dt_softplus, BLOCK_P=block_p, BLOCK_N=block_n, num_warps=4)
