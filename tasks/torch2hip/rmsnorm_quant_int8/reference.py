import torch


def reference(x, weight, rows, hidden, eps):
    """RMSNorm, then symmetric per-row (per-token) int8 quantisation of its output.

        y[r, :]  = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight       (fp32)
        scale[r] = max|y[r, :]| / 127
        q[r, :]  = round(y[r, :] / scale[r])                               (int8)

    The row's RMS factor cancels in y / scale, so q is computed exactly as
        z = x * weight                   (fp32; exact: a product of two fp16 values)
        q = round((z * 127) / max|z|)    (one fp32 multiply, one IEEE fp32 division,
                                          round half to even; |q| <= 127)
    which does not depend on the order of the sum of squares: every implementation that
    performs these two fp32 operations gets the same integers. scale is
    max|z| * rsqrt(mean(x^2) + eps) / 127 in fp32, compared with the fp32 tolerance.

    Computed in fp32 from the fp16 inputs both for the eager baseline and for the expected
    output (the upcast fp32 inputs hold the same values), so the two agree bit for bit."""
    xf = x.float()
    wf = weight.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    z = xf * wf
    amax = z.abs().amax(dim=-1, keepdim=True)
    scale = amax * inv_rms / 127
    q = torch.round(z * 127 / amax).to(torch.int8)
    return q, scale.squeeze(-1)


def make_inputs(config, generator, device):
    """LLM activations with outlier features (LLM.int8(), SmoothQuant): standard normal values
    plus a few fixed channels (one in 512, at least 2) whose magnitude varies per token by a
    factor drawn uniformly in [1, 40]. Rows without a strong outlier get scales near
    4 / 127 * rsqrt(...) ~ 0.03, rows with one up to ~0.3; fp16."""
    rows, hidden = int(config["rows"]), int(config["hidden"])
    x = torch.randn(rows, hidden, generator=generator, device=device)
    n_out = max(2, hidden // 512)
    channels = torch.randperm(hidden, generator=generator, device=device)[:n_out]
    amp = 1.0 + 39.0 * torch.rand(rows, 1, generator=generator, device=device)
    x[:, channels] *= amp
    return {"x": x.to(torch.float16)}
