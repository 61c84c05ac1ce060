import torch
import torch.nn.functional as F


def reference(x, bias, residual, ln_weight, ln_bias, rows, hidden, eps):
    """Bias + residual add, then LayerNorm over the last dimension; returns (y, residual_out).

    Called with the declared fp16 tensors this is the eager baseline: two fp16 adds (x + bias
    broadcast over the rows, then + residual) and PyTorch's LayerNorm kernel (fp32 statistics,
    fp16 output). Called with fp32 upcasts (the expected output) the sum is exact fp32 and is
    then rounded to fp16, because residual_out is stored in fp16 and the norm is defined on
    that stored value; the norm itself is then exact fp32.
    """
    h = (x + bias + residual).to(torch.float16)   # residual_out as stored (a no-op for fp16 inputs)
    y = F.layer_norm(h.to(x.dtype), (hidden,), ln_weight, ln_bias, eps)
    return y.to(x.dtype), h.to(x.dtype)
