import torch


def reference(x, w_gate, tokens, hidden, experts, top_k):
    """MoE router: fp32 gate logits, softmax over the experts, top-k, renormalised weights.

        logits = x @ w_gate^T           in fp32 (x and w_gate upcast from fp16)
        probs  = softmax(logits, -1)
        the top_k experts by probability, in descending order; equal probabilities in
        ascending expert index (a stable sort), then weights = their probs / their sum.

    Returns (weights fp32 [tokens, top_k], ids int32 [tokens, top_k]). With the inputs of
    make_inputs every fp32 logit is exact whatever the summation order, so the eager
    baseline, the expected output and any fp32-accumulating kernel select the same experts."""
    logits = x.float() @ w_gate.float().t()
    probs = torch.softmax(logits, dim=-1)
    vals, ids = torch.sort(probs, dim=-1, descending=True, stable=True)
    vals, ids = vals[:, :top_k], ids[:, :top_k]
    weights = vals / vals.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)


def make_inputs(config, generator, device):
    """Hidden states and router weights on fixed-point grids, so that fp32 accumulation of
    x @ w_gate^T is exact in any order (the selected experts must be compared exactly):

      x      ~ N(0, 1) rounded to multiples of 1/64 and clipped to [-4, 4]   (fp16-exact)
      w_gate ~ N(0, (2 / sqrt(hidden))^2) rounded to multiples of 2^-12      (fp16 keeps
             the grid: values below 1/4 are exact, larger ones round to multiples of 2^-11)

    Every product is a multiple of 2^-18, so every partial sum below 64 in magnitude is an
    exact fp32 number; the logits have std ~2 (partial sums reach 64 with probability
    ~1e-200). Exact ties between two experts' logits remain possible (about 1e-5 per token);
    the tie rule above decides them."""
    t, h, e = int(config["tokens"]), int(config["hidden"]), int(config["experts"])
    x = torch.randn(t, h, generator=generator, device=device)
    x = torch.clamp(torch.round(x * 64.0), -256, 256) / 64.0
    w = torch.randn(e, h, generator=generator, device=device) * (2.0 / h ** 0.5)
    w = torch.round(w * 4096.0) / 4096.0
    return {"x": x.to(torch.float16), "w_gate": w.to(torch.float16)}
