import torch


def reference(param, grad, exp_avg, n, lr, beta1, beta2, weight_decay):
    """One Lion step (Chen et al. 2023; lion-pytorch's update_fn) written out of place, so the
    inputs are left as they are. Returns (param_out, exp_avg_out) in the dtype it is given
    (fp32 for the eager baseline, fp64 for the expected output)."""
    p = param.mul(1 - lr * weight_decay)                                 # decoupled weight decay
    update = exp_avg.mul(beta1).add(grad, alpha=1 - beta1).sign()        # interpolate, then sign
    p = p.add(update, alpha=-lr)
    m = exp_avg.lerp(grad, 1 - beta2)                                    # momentum
    return p, m


def make_inputs(config, generator, device):
    """grad and exp_avg, N(0, 0.1) each, fp32, drawn together so that the interpolation
    c = 0.9 * exp_avg + 0.1 * grad whose sign Lion takes is never within 2e-3 of zero:
    where |c| < 1e-3, grad is moved by 0.02 in the direction of c (+ when c == 0). The sign
    is then the same in fp32 and fp64 and for every order of the two products, so the
    task tests the update, not rounding at a discontinuity (an ambiguous sign would change
    param_out by 2 * lr = 2e-4, over the fp32 tolerance)."""
    n = int(config["n"])
    grad = torch.randn(n, generator=generator, device=device) * 0.1
    exp_avg = torch.randn(n, generator=generator, device=device) * 0.1
    c = 0.9 * exp_avg + 0.1 * grad
    direction = torch.where(c >= 0, 1.0, -1.0)
    grad = torch.where(c.abs() < 1e-3, grad + 0.02 * direction, grad)
    return {"grad": grad, "exp_avg": exp_avg}
