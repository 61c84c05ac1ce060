import torch


def reference(a, x, batch, seqlen, channels):
    """The recurrence h_t = a_t * h_{t-1} + x_t along dim 1, computed step by step in the
    dtype it is given (the harness passes float64 for this fp32 task)."""
    assert a.shape == (batch, seqlen, channels) and x.shape == a.shape
    h = torch.empty_like(x)
    state = torch.zeros_like(x[:, 0])
    for t in range(seqlen):
        state = a[:, t] * state + x[:, t]
        h[:, t] = state
    return h
