import torch


def reference(x, rows, vocab):
    """logsumexp over the last dimension. The harness passes float32 for this fp16 task; the
    sum is taken in float64 here, so the expected value is as exact as the inputs allow.
    Returns [rows] in x's dtype."""
    assert x.shape == (rows, vocab)
    return torch.logsumexp(x.double(), dim=-1).to(x.dtype)


def make_inputs(config, generator, device):
    """x: per row, shift + scale * N(0, 1), shift ~ N(0, 1), scale = 2 * exp(N(0, 0.3))."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    shift = torch.randn(rows, 1, generator=generator, device=device)
    scale = 2.0 * torch.exp(0.3 * torch.randn(rows, 1, generator=generator, device=device))
    z = torch.randn(rows, vocab, generator=generator, device=device)
    return {"x": (shift + scale * z).to(torch.float16)}
