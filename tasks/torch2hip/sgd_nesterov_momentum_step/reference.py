def reference(param, grad, momentum_buffer, n, lr, momentum, weight_decay):
    """One step of SGD with momentum, Nesterov and (coupled) weight decay: torch.optim.SGD's
    single-tensor code path (foreach=False, dampening=0, maximize=False) with its in-place
    updates written out of place, so the inputs are left as they are. Returns
    (param_out, momentum_buffer_out) in the dtype it is given (fp32 for the eager baseline,
    fp64 for the expected output)."""
    d_p = grad.add(param, alpha=weight_decay)            # coupled weight decay
    buf = momentum_buffer.mul(momentum).add(d_p)         # momentum buffer (dampening 0)
    d_p = d_p.add(buf, alpha=momentum)                   # Nesterov look-ahead
    p = param.add(d_p, alpha=-lr)
    return p, buf
