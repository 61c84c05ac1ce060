import torch


def reference(dy, x, tokens, cols):
    """Gradient of silu at x times dy, in the dtype of the inputs (the harness passes
    float32 for this fp16 task)."""
    assert dy.shape == (tokens, cols) and x.shape == (tokens, cols)
    s = torch.sigmoid(x)
    return dy * s * (1.0 + x * (1.0 - s))
