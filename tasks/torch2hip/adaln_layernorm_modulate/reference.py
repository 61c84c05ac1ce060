import torch.nn.functional as F


def reference(x, shift, scale, batch, tokens, hidden, eps):
    """DiT's `modulate(norm(x), shift, scale)`: a LayerNorm without affine parameters over the
    last dimension, then a per-sample scale and shift broadcast over the tokens.

    Called with the declared fp16 tensors this is the eager baseline (PyTorch's LayerNorm
    kernel with fp32 statistics and an fp16 output, then fp16 broadcast products and sums);
    called with fp32 upcasts it gives the expected output, rounded once by the comparison."""
    h = F.layer_norm(x, (hidden,), eps=eps)
    return h * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)
