import torch


def reference(dy, logp, rows, vocab):
    """Log-softmax backward in the dtype it is given (the harness passes float32 for the
    fp16 inputs). Rows are processed in chunks to bound the temporary memory."""
    assert dy.shape == (rows, vocab) and logp.shape == (rows, vocab)
    out = torch.empty_like(dy)
    for r0 in range(0, rows, 256):
        r1 = min(rows, r0 + 256)
        g = dy[r0:r1]
        out[r0:r1] = g - torch.exp(logp[r0:r1]) * g.sum(dim=-1, keepdim=True)
    return out


def make_inputs(config, generator, device):
    """logp: fp16 log-softmax of per-row logits shift + scale * N(0, 1), shift ~ N(0, 3), scale ~ U(0.5, 3)."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    z = torch.randn(rows, vocab, generator=generator, device=device)
    shift = 3.0 * torch.randn(rows, 1, generator=generator, device=device)
    scale = 0.5 + 2.5 * torch.rand(rows, 1, generator=generator, device=device)
    return {"logp": torch.log_softmax(shift + scale * z, dim=-1).to(torch.float16)}
