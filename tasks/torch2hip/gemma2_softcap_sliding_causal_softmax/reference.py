import torch


def reference(scores, batch, heads, q_len, k_len, window, softcap):
    """Gemma 2 attention probabilities from scaled scores: logit soft-capping, the causal
    (optionally sliding-window) mask, softmax over the keys.

        c[b, h, i, j] = softcap * tanh(scores[b, h, i, j] / softcap)
        query i sits at absolute position p = k_len - q_len + i (a chunk at the end of the
        KV cache); key j is visible iff p - window < j <= p
        probs = softmax_j(c masked with the dtype's lowest value)          (fp16 output)

    Computed in fp32 from the first step (scores.float()), as Hugging Face's eager path does
    when it upcasts for the softmax; called with the declared fp16 tensor this is the eager
    baseline (a cast, the division, tanh, the product, the mask built per call, masked_fill,
    the softmax and the cast back, on fp32 [.., q_len, k_len] intermediates), called with the
    fp32 upcast it gives the expected output: the same computation."""
    logits = scores.float()
    logits = torch.tanh(logits / softcap) * softcap
    pos = torch.arange(k_len - q_len, k_len, device=scores.device).unsqueeze(1)
    key = torch.arange(k_len, device=scores.device).unsqueeze(0)
    hidden = (key > pos) | (key <= pos - window)
    logits = logits.masked_fill(hidden, torch.finfo(logits.dtype).min)
    return torch.softmax(logits, dim=-1).to(scores.dtype)


def make_inputs(config, generator, device):
    """Scaled attention scores (q . k / sqrt(d)) shaped like a trained Gemma head's: a bulk
    N(0, 2.5^2), a peak on the query's own position (the diagonal key p, + U(8, 14)) and an
    attention sink on key 0 (+ U(4, 10)). Rows are peaked (the probabilities' std > 1e-2 for
    rows up to 2048 keys) but most visible keys keep probabilities fp16 can represent; the
    largest logits (up to ~25) are bent measurably by the cap of 50. fp16."""
    b, h = int(config["batch"]), int(config["heads"])
    q, k = int(config["q_len"]), int(config["k_len"])
    s = torch.randn(b, h, q, k, generator=generator, device=device) * 2.5
    rows = torch.arange(q, device=device)
    diag = k - q + rows
    s[:, :, rows, diag] += 8.0 + 6.0 * torch.rand(b, h, q, generator=generator, device=device)
    s[:, :, :, 0] += 4.0 + 6.0 * torch.rand(b, h, q, generator=generator, device=device)
    return {"scores": s.to(torch.float16)}
