import torch
import torch.nn.functional as F


def reference(xbc, z, dt, conv_state, conv_weight, conv_bias, dt_bias, a_log, d_skip, ssm_state,
              batch, nheads, headdim, ngroups, d_state, d_conv):
    """One decode step of a Mamba-2 mixer between its input and output projections
    (mamba_ssm's Mamba2.step with rmsnorm=False, generalised to ngroups groups of heads):

        new_conv_state = conv_state shifted left by one column, xbc appended as the last one
        xbc_c  = silu(sum_k new_conv_state[:, :, k] * conv_weight[:, k] + conv_bias)
        x, B, C = xbc_c split into [d_inner | ngroups * d_state | ngroups * d_state]
        dt     = softplus(dt + dt_bias),   dA = exp(dt * -exp(a_log))           per (batch, head)
        new_ssm_state[b, h, p, n] = ssm_state[b, h, p, n] * dA[b, h] + dt[b, h] * B[b, g, n] * x[b, h, p]
        y[b, h, p] = (sum_n new_ssm_state[b, h, p, n] * C[b, g, n] + d_skip[h] * x[b, h, p]) * silu(z[b, h, p])
    with g = h // (nheads // ngroups) the group of head h and d_inner = nheads * headdim.

    The state math runs in the precision of ssm_state: fp32 for the eager baseline (the fp16
    activations and conv parameters are cast up first), fp64 for the expected output. The new
    conv state is an exact copy (fp16); y is rounded to fp16 once. Returns
    (y, new_conv_state, new_ssm_state); no input is written."""
    f = ssm_state.dtype
    d_inner = nheads * headdim
    hpg = nheads // ngroups
    # conv state: shift and append the new column (the model does this in place)
    new_conv_state = torch.cat([conv_state[:, :, 1:], xbc.unsqueeze(-1)], dim=-1)
    xbc_c = torch.sum(new_conv_state.to(f) * conv_weight.to(f), dim=-1) + conv_bias.to(f)
    xbc_c = F.silu(xbc_c)
    x, b, c = torch.split(xbc_c, [d_inner, ngroups * d_state, ngroups * d_state], dim=-1)
    a = -torch.exp(a_log.to(f))                                   # [nheads]
    dt = F.softplus(dt.to(f) + dt_bias.to(f))                     # [batch, nheads]
    da = torch.exp(dt * a)                                        # [batch, nheads]
    x = x.reshape(batch, ngroups, hpg, headdim)
    b = b.reshape(batch, ngroups, d_state)
    c = c.reshape(batch, ngroups, d_state)
    dt_g = dt.reshape(batch, ngroups, hpg)
    dbx = torch.einsum("bgh,bgn,bghp->bghpn", dt_g, b, x)
    state = ssm_state.reshape(batch, ngroups, hpg, headdim, d_state)
    new_state = state * da.reshape(batch, ngroups, hpg, 1, 1) + dbx
    y = torch.einsum("bghpn,bgn->bghp", new_state, c)
    y = y + d_skip.to(f).reshape(ngroups, hpg, 1) * x
    y = y.reshape(batch, d_inner) * F.silu(z.to(f))
    return y.to(xbc.dtype), new_conv_state, new_state.reshape(batch, nheads, headdim, d_state)
