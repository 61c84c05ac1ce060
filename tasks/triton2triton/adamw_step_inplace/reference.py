import math

import torch


def reference(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, lr, beta1, beta2, eps, weight_decay, step,
              maximize):
    """One AdamW step as torch.optim.AdamW's single-tensor path makes it, in place: updates
    param, exp_avg, exp_avg_sq and (AMSGrad, when given) max_exp_avg_sq; returns nothing (the
    signature has no outputs)."""
    g = -grad if maximize else grad
    param.mul_(1 - lr * weight_decay)
    exp_avg.lerp_(g, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
    if max_exp_avg_sq is not None:
        torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        v = max_exp_avg_sq
    else:
        v = exp_avg_sq
    denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)
