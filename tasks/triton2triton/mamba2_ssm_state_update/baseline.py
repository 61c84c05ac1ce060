"""Starting kernel for the Mamba-2 decode state update: correct for every shape, deliberately
simple.

One program (a single warp) per (sequence, head, channel): it reads its step size and input,
then walks the channel's dstate-long row of the state in chunks of 32, updating each chunk in
place and accumulating its product with C, and writes one output element. A, dt, dt_bias and
D are read through their strides (broadcast views: the same value for a whole head); B and C
are read again by every channel of a group. Little memory traffic is in flight per program.
"""

import triton
import triton.language as tl


@triton.jit
def _state_update_row(state_ptr, x_ptr, dt_ptr, dt_bias_ptr, A_ptr, B_ptr, C_ptr, D_ptr, z_ptr, idx_ptr,
                      out_ptr, nheads, headdim, dstate, ngroups, heads_per_group,
                      dt_sb, dt_sh, dt_sp, db_sh, db_sp, A_sh, A_sp, A_sn, D_sh, D_sp,
                      HAS_DT_BIAS: tl.constexpr, HAS_Z: tl.constexpr, HAS_IDX: tl.constexpr,
                      DT_SOFTPLUS: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    p = pid % headdim
    h = (pid // headdim) % nheads
    b = pid // (headdim * nheads)
    if HAS_IDX:
        s = tl.load(idx_ptr + b).to(tl.int64)
    else:
        s = b
    g = h // heads_per_group

    xi = (b * nheads + h) * headdim + p
    x = tl.load(x_ptr + xi).to(tl.float32)
    dt = tl.load(dt_ptr + b * dt_sb + h * dt_sh + p * dt_sp).to(tl.float32)
    if HAS_DT_BIAS:
        dt += tl.load(dt_bias_ptr + h * db_sh + p * db_sp)
    if DT_SOFTPLUS:
        dt = tl.where(dt <= 20.0, tl.log(1.0 + tl.exp(dt)), dt)

    row = ((s * nheads + h) * headdim + p) * dstate
    bc = (b * ngroups + g) * dstate
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for n0 in range(0, dstate, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        m = n < dstate
        st = tl.load(state_ptr + row + n, mask=m, other=0.0)
        a = tl.load(A_ptr + h * A_sh + p * A_sp + n * A_sn, mask=m, other=0.0)
        bv = tl.load(B_ptr + bc + n, mask=m, other=0.0).to(tl.float32)
        cv = tl.load(C_ptr + bc + n, mask=m, other=0.0).to(tl.float32)
        st = st * tl.exp(a * dt) + bv * (dt * x)
        tl.store(state_ptr + row + n, st, mask=m)
        acc += tl.where(m, st * cv, 0.0)

    y = tl.sum(acc, axis=0) + tl.load(D_ptr + h * D_sh + p * D_sp) * x
    if HAS_Z:
        z = tl.load(z_ptr + xi).to(tl.float32)
        y = y * z * tl.sigmoid(z)
    tl.store(out_ptr + xi, y.to(tl.float16))


def mamba2_ssm_state_update(state, x, dt, dt_bias, A, B, C, D, z, state_batch_indices, out,
                            batch, slots, nheads, headdim, dstate, ngroups, dt_softplus):
    db_s = dt_bias.stride() if dt_bias is not None else (0, 0)
    grid = (batch * nheads * headdim,)
    _state_update_row[grid](
        state, x, dt, x if dt_bias is None else dt_bias, A, B, C, D, x if z is None else z,
        x if state_batch_indices is None else state_batch_indices, out,
        nheads, headdim, dstate, ngroups, nheads // ngroups,
        dt.stride(0), dt.stride(1), dt.stride(2), db_s[0], db_s[1],
        A.stride(0), A.stride(1), A.stride(2), D.stride(0), D.stride(1),
        HAS_DT_BIAS=dt_bias is not None, HAS_Z=z is not None, HAS_IDX=state_batch_indices is not None,
        DT_SOFTPLUS=dt_softplus, BLOCK_N=32, num_warps=1)
