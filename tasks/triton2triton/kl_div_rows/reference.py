import torch


def reference(logits_p, logits_q, rows, vocab):
    """KL(softmax(logits_p) || softmax(logits_q)) for every row, computed in the dtype it is
    given (the harness passes float64 for this fp32 task). Returns [rows]."""
    assert logits_p.shape == (rows, vocab) and logits_q.shape == (rows, vocab)
    log_p = torch.log_softmax(logits_p, dim=-1)
    log_q = torch.log_softmax(logits_q, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1)


def make_inputs(config, generator, device):
    """Teacher logits 2 * N(0, 1); student = teacher + s_r * N(0, 1) with a per-row spread
    s_r = 0.7 * exp(0.5 * N(0, 1)), so the per-row KL varies over two orders of magnitude."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    logits_p = 2.0 * torch.randn(rows, vocab, generator=generator, device=device)
    spread = 0.7 * torch.exp(0.5 * torch.randn(rows, 1, generator=generator, device=device))
    logits_q = logits_p + spread * torch.randn(rows, vocab, generator=generator, device=device)
    return {"logits_p": logits_p, "logits_q": logits_q}
