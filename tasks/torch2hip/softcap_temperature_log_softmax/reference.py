import torch


def reference(logits, temperature, batch, vocab, softcap):
    """Gemma 2's final-logit soft-capping, then per-request temperature and log_softmax, as an
    LLM server computes the log-probabilities it samples from and returns:
        y = log_softmax(tanh(logits / softcap) * softcap / temperature[:, None]).
    Computed in the dtype it is given (the declared fp32 for the eager baseline, the fp64
    upcast for the expected output). Returns [batch, vocab]."""
    capped = torch.tanh(logits / softcap) * softcap
    return torch.log_softmax(capped / temperature[:, None], dim=-1)
