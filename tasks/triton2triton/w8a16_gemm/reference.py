import torch


def reference(x, w, scale, m, n, k):
    """y = x @ (w * scale[None, :]), computed in the dtype it is given (fp16 is upcast to fp32
    first; the int8 weights are converted exactly); the result has x's dtype."""
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    wf = w.to(xf.dtype) * scale.to(xf.dtype)[None, :]
    return (xf @ wf).to(x.dtype)
