import torch
import torch.nn.functional as F


def reference(u, delta, a, b, c, d, batch, dim, seqlen, dstate):
    """Selective scan of Mamba (S6), real-valued, as in mamba_ssm's selective_scan_ref
    (a, b, c, d are Mamba's A, B, C, D):

        dt[i, j, t]   = softplus(delta[i, j, t])
        x[i, j, :]    = exp(dt * a[j, :]) * x[i, j, :] + dt * b[i, :, t] * u[i, j, t]   (x = 0 at t = -1)
        y[i, j, t]    = sum_n c[i, n, t] * x[i, j, n] + d[j] * u[i, j, t]

    The discretised factors are built for every step at once ([batch, dim, seqlen, dstate]),
    then a Python loop walks the sequence: four small kernels per step, which is what makes
    eager PyTorch slow. Computed in the dtype it is given (fp64 for the expected output, fp32
    for the eager baseline)."""
    dt = F.softplus(delta)
    dA = torch.exp(dt.unsqueeze(-1) * a[:, None, :])                          # [batch, dim, L, n]
    dBu = (dt * u).unsqueeze(-1) * b.transpose(1, 2).unsqueeze(1)              # [batch, dim, L, n]
    x = u.new_zeros(batch, dim, dstate)
    ys = []
    for t in range(seqlen):
        x = dA[:, :, t] * x + dBu[:, :, t]
        ys.append((x * c[:, :, t].unsqueeze(1)).sum(-1))
    y = torch.stack(ys, dim=-1)                                                # [batch, dim, L]
    return y + u * d[:, None]
