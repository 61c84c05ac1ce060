import torch
import torch.nn.functional as F


def reference(a, b, rows, dim, eps):
    """Cosine similarity of each row of a with the same row of b.

    Called with the declared fp16 tensors this is the eager baseline (norms, clamps, fp16
    divisions, product, sum); called with the fp32 upcasts it gives the expected output."""
    return F.cosine_similarity(a, b, dim=-1, eps=eps)


def make_inputs(config, generator, device):
    """Row pairs with similarities spread over [-1, 1]: b = c * a + sqrt(1 - c^2) * n, with
    a and n standard normal rows, c uniform in [-1, 1] per row; a is then rescaled per row by
    a factor in [0.5, 2] (embeddings of unequal norms)."""
    rows, dim = int(config["rows"]), int(config["dim"])
    a = torch.randn(rows, dim, generator=generator, device=device)
    n = torch.randn(rows, dim, generator=generator, device=device)
    c = torch.rand(rows, 1, generator=generator, device=device) * 2.0 - 1.0
    scale = torch.rand(rows, 1, generator=generator, device=device) * 1.5 + 0.5
    n.mul_(torch.sqrt(1.0 - c * c)).add_(a * c)
    a.mul_(scale)
    return {"a": a.to(torch.float16), "b": n.to(torch.float16)}
