import torch


def reference(x, tokens, cols, beta, threshold):
    """Softplus with beta and threshold (torch semantics), in the dtype of x (the harness
    passes float32 for this fp16 task)."""
    assert x.shape == (tokens, cols)
    return torch.nn.functional.softplus(x, beta=beta, threshold=threshold)
