import math

import torch
import torch.nn.functional as F


def reference(dt, dt_bias, a, batch, seqlen, nheads, chunk):
    """Mamba-2's chunked time-step preparation (mamba_ssm's _chunk_cumsum_fwd with
    dt_softplus=True and no dt limit):
        d = softplus(dt + dt_bias)                       [batch, seqlen, nheads]
        zero-padded along seqlen to whole chunks, laid out [batch, nheads, nchunks, chunk]
        da_cumsum = cumsum(d * a[head], within each chunk)      (a = Mamba-2's A)
    Returns (dt_out, da_cumsum), both [batch, nheads, nchunks, chunk].

    Called with the declared dtypes (fp16 dt, fp32 dt_bias and A) this is the eager baseline
    (the sum promotes to fp32; softplus, pad, the permuted copy, the product and cumsum);
    called with the upcasts (fp32 dt, fp64 parameters) it gives the expected output."""
    nchunks = math.ceil(seqlen / chunk)
    d = F.softplus(dt.to(dt_bias.dtype) + dt_bias)
    d = F.pad(d, (0, 0, 0, nchunks * chunk - seqlen))
    d = d.view(batch, nchunks, chunk, nheads).permute(0, 3, 1, 2).contiguous()
    da = d * a[None, :, None, None]
    return d, torch.cumsum(da, dim=-1)


def make_inputs(config, generator, device):
    """Mamba-2's parameter initialisation: dt_bias = softplus^-1(dt0) with dt0 log-uniform in
    [0.001, 0.1]; A = -exp(A_log) with A in [-16, -1] (A_log = log of uniform [1, 16]). fp32."""
    nheads = int(config["nheads"])
    u = torch.rand(nheads, generator=generator, device=device)
    dt0 = torch.exp(u * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
    dt_bias = dt0 + torch.log(-torch.expm1(-dt0))
    A = -(1.0 + 15.0 * torch.rand(nheads, generator=generator, device=device))
    return {"dt_bias": dt_bias, "a": A}
