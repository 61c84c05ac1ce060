import torch


def reference(logits, target, tokens, vocab, eps, ignore_index):
    """Per-token label-smoothed cross-entropy with ignore_index, computed in the dtype it is
    given (the harness upcasts the fp16 logits to fp32), a group of rows at a time to bound
    the memory of the intermediate log-probabilities."""
    assert logits.shape == (tokens, vocab) and target.shape == (tokens,)
    loss = torch.empty((tokens,), dtype=logits.dtype, device=logits.device)
    step = max(1, 2**25 // vocab)
    for r0 in range(0, tokens, step):
        loss[r0:r0 + step] = torch.nn.functional.cross_entropy(
            logits[r0:r0 + step], target[r0:r0 + step], ignore_index=ignore_index,
            label_smoothing=eps, reduction="none")
    return loss


def make_inputs(config, generator, device):
    """Targets uniform over the vocabulary; 10% of them (rounded; which ones drawn) -100
    (ignored)."""
    tokens, vocab = int(config["tokens"]), int(config["vocab"])
    t = torch.randint(0, vocab, (tokens,), generator=generator, device=device, dtype=torch.int64)
    drop = torch.zeros((tokens,), dtype=torch.bool, device=device)
    drop[torch.randperm(tokens, generator=generator, device=device)[:int(0.1 * tokens + 0.5)]] = True
    return {"target": torch.where(drop, torch.full_like(t, -100), t)}
