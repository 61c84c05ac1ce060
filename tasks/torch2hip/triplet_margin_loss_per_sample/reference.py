import torch
import torch.nn.functional as F


def reference(anchor, positive, negative, batch, dim, margin, eps):
    """Per-triplet margin loss (reduction='none'). Called with the declared fp16 tensors this
    is the eager baseline; called with the fp32 upcast it gives the expected output."""
    return F.triplet_margin_loss(anchor, positive, negative, margin=margin, p=2, eps=eps,
                                 swap=False, reduction="none")


def make_inputs(config, generator, device):
    """L2-normalised embeddings: anchor = normalize(g_a); positive = normalize(g_a + s_p * g_p)
    and negative = normalize(g_a + s_n * g_n), with g_* standard normal rows and per-row noise
    levels s_p, s_n uniform in [0.3, 1.2] (so d(a, p) and d(a, n) range over ~0.3-0.85 and
    the loss is positive for ~80% of the triplets at margin 0.2)."""
    batch, dim = int(config["batch"]), int(config["dim"])

    def normal():
        return torch.randn(batch, dim, generator=generator, device=device)

    def level():
        return torch.rand(batch, 1, generator=generator, device=device).mul_(0.9).add_(0.3)

    def normalize(x):
        return x.div_(x.norm(dim=-1, keepdim=True).clamp_min_(1e-12))

    g_a = normal()
    positive = normalize(normal().mul_(level()).add_(g_a)).half()
    negative = normalize(normal().mul_(level()).add_(g_a)).half()
    anchor = normalize(g_a).half()
    return {"anchor": anchor, "positive": positive, "negative": negative}
