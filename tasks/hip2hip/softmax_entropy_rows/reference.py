import torch


def reference(x, rows, vocab, temperature):
    """Entropy of softmax(x / temperature) per row, in the dtype it is given (the harness
    passes float32 for the fp16 logits). Rows are processed in chunks to bound the
    reference's temporary memory."""
    assert x.shape == (rows, vocab)
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    for r0 in range(0, rows, 256):
        r1 = min(rows, r0 + 256)
        logp = torch.log_softmax(x[r0:r1] / temperature, dim=-1)
        out[r0:r1] = -(logp.exp() * logp).sum(dim=-1)
    return out


def make_inputs(config, generator, device):
    """Logits per row: shift + scale * N(0, 1), shift ~ N(0, 3), scale ~ U(0.5, 3)."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    z = torch.randn(rows, vocab, generator=generator, device=device)
    shift = 3.0 * torch.randn(rows, 1, generator=generator, device=device)
    scale = 0.5 + 2.5 * torch.rand(rows, 1, generator=generator, device=device)
    return {"x": (shift + scale * z).to(torch.float16)}
