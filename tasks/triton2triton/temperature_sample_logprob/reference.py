import torch


def reference(logits, temperature, q, batch, vocab):
    """Exponential-race sampling from softmax(logits / T) and the sampled token's logprob, in
    the dtype given (fp64 for the expected output). Returns (token_ids int32, logprobs)."""
    scaled = logits / temperature[:, None]
    logp = torch.log_softmax(scaled, dim=-1)
    ids = torch.argmax(scaled - torch.log(q), dim=-1)        # argmax of p / q; first index on ties
    return ids.to(torch.int32), logp.gather(1, ids[:, None]).squeeze(1)


def make_inputs(config, generator, device):
    """q: Exp(1) noise, -log(1 - u) with u uniform in [0, 1): strictly positive, fp32."""
    batch, vocab = int(config["batch"]), int(config["vocab"])
    u = torch.rand(batch, vocab, generator=generator, device=device, dtype=torch.float32)
    return {"q": -torch.log1p(-u)}
