import torch


def reference(scores, mask, batch, heads, q_len, k_len, scale):
    """Attention probabilities: softmax over the keys of scores * scale + mask.

    scores: [batch, heads, q_len, k_len]; mask: [batch, 1, q_len, k_len], an additive mask
    shared by the heads (0 where a key is visible, the lowest finite float32 where it is not).
    The scores are upcast to the mask's dtype first, as Hugging Face models do before the
    softmax. Called with the declared dtypes (fp16 scores, fp32 mask) this is the eager
    baseline: a cast, an fp32 product, the add, an fp32 softmax and a cast back to fp16.
    Called with the upcasts (fp32 scores, fp64 mask) it gives the expected output."""
    logits = scores.to(mask.dtype) * scale + mask
    return torch.softmax(logits, dim=-1).to(scores.dtype)


def make_inputs(config, generator, device):
    """The additive mask of a chunked prefill over left-padded sequences, expanded to 4D as
    Hugging Face builds it: query i sits at absolute position k_len - q_len + i and sees keys
    j <= k_len - q_len + i (causal), except the pad_b leading padding keys of its sequence
    (pad_b in [0, min(k_len // 16, k_len - q_len)], so no row is fully masked: the pads are
    spread evenly over that range, the quantiles of a uniform draw fixed by the config, and
    the seed deals them out to the sequences). Visible keys get 0, hidden keys
    torch.finfo(torch.float32).min."""
    b, q, k = int(config["batch"]), int(config["q_len"]), int(config["k_len"])
    pad = (torch.arange(b, device=device) * 2 + 1) * (min(k // 16, k - q) + 1) // (2 * b)
    pad = pad[torch.randperm(b, generator=generator, device=device)]
    i = torch.arange(q, device=device).view(1, q, 1)
    j = torch.arange(k, device=device).view(1, 1, k)
    visible = (j <= i + (k - q)) & (j >= pad.view(b, 1, 1))
    mask = torch.zeros(b, 1, q, k, dtype=torch.float32, device=device)
    mask.masked_fill_(~visible.view(b, 1, q, k), torch.finfo(torch.float32).min)
    return {"mask": mask}
