import torch


def reference(hidden, attention_mask, batch, seq, hidden_size):
    """Masked mean over the sequence axis, in the dtype it is given (the harness passes
    float32 for the fp16 hidden states)."""
    assert hidden.shape == (batch, seq, hidden_size) and attention_mask.shape == (batch, seq)
    m = attention_mask.to(hidden.dtype)
    out = torch.empty(batch, hidden_size, dtype=hidden.dtype, device=hidden.device)
    for b0 in range(0, batch, 64):  # chunks bound the temporary memory
        b1 = min(batch, b0 + 64)
        s = (hidden[b0:b1] * m[b0:b1, :, None]).sum(dim=1)
        out[b0:b1] = s / m[b0:b1].sum(dim=1, keepdim=True).clamp(min=1e-9)
    return out


def make_inputs(config, generator, device):
    """hidden = bias[h] + N(0, 1); right-padded masks whose lengths are the evenly spaced
    quantiles of the uniform distribution on [seq / 4, seq] (fixed by the config; the seed
    draws which sequence gets which)."""
    batch, seq, hidden_size = int(config["batch"]), int(config["seq"]), int(config["hidden_size"])
    bias = torch.randn(1, 1, hidden_size, generator=generator, device=device)
    hidden = (bias + torch.randn(batch, seq, hidden_size, generator=generator, device=device)).to(torch.float16)
    lo = max(1, seq // 4)
    fixed = torch.tensor([lo + (2 * i + 1) * (seq - lo + 1) // (2 * batch) for i in range(batch)], device=device)
    lengths = fixed[torch.randperm(batch, generator=generator, device=device)][:, None]
    mask = torch.arange(seq, device=device)[None, :] < lengths
    return {"hidden": hidden, "attention_mask": mask}
