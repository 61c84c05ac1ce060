import math

import torch


def reference(param, grad, exp_avg, exp_avg_sq, n, lr, beta1, beta2, eps, weight_decay, step):
    """One AdamW step, torch.optim.AdamW's single-tensor code path (foreach=False,
    fused=False, amsgrad=False, maximize=False) with its in-place updates written out of
    place, so the inputs are left as they are. Returns (param_out, exp_avg_out, exp_avg_sq_out)
    in the dtype it is given (fp32 for the eager baseline, fp64 for the expected output)."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = math.sqrt(bias_correction2)

    p = param.mul(1 - lr * weight_decay)                       # decoupled weight decay
    m = exp_avg.lerp(grad, 1 - beta1)                          # first moment
    v = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=1 - beta2)  # second moment
    denom = (v.sqrt() / bias_correction2_sqrt).add(eps)
    p = p.addcdiv(m, denom, value=-step_size)
    return p, m, v
