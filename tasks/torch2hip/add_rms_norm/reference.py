import torch


def reference(x, residual, weight, rows, hidden, eps):
    """Residual add then RMSNorm; returns (y, residual_out) in x's dtype.

    Called with the declared fp16 tensors this is the eager baseline (the usual Hugging Face
    formulation: fp16 add, then the norm in fp32). Called with fp32 upcasts (the expected
    output) the sum is rounded to fp16 all the same, because residual_out is stored in fp16
    and the norm is defined on that stored value; every other step is then exact fp32.
    """
    h = (x + residual).to(torch.float16)      # residual_out as stored (a no-op for fp16 inputs)
    hf = h.float()
    inv_rms = torch.rsqrt(hf.pow(2).mean(dim=-1, keepdim=True) + eps)
    y = hf * inv_rms * weight.float()
    return y.to(x.dtype), h.to(x.dtype)
