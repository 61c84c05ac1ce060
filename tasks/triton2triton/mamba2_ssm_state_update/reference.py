import torch


def reference(state, x, dt, dt_bias, A, B, C, D, z, state_batch_indices,
              batch, slots, nheads, headdim, dstate, ngroups, dt_softplus):
    """One Mamba-2 decode step. Updates `state` (the harness's copy of the pool) in place at
    the rows of this step's sequences and returns out [batch, nheads, headdim]. dt_bias, z and
    state_batch_indices may be None."""
    if state_batch_indices is None:
        rows = torch.arange(batch, device=state.device)
    else:
        rows = state_batch_indices.to(torch.int64)
    heads_per_group = nheads // ngroups
    # the group's B and C for each head: [batch, nheads, dstate]
    Bh = B.repeat_interleave(heads_per_group, dim=1).to(state.dtype)
    Ch = C.repeat_interleave(heads_per_group, dim=1).to(state.dtype)
    step = dt.to(state.dtype)
    if dt_bias is not None:
        step = step + dt_bias.to(state.dtype)
    if dt_softplus:
        step = torch.nn.functional.softplus(step)
    xs = x.to(state.dtype)
    old = state[rows]                                            # [batch, nheads, headdim, dstate]
    decay = torch.exp(A.to(state.dtype)[None] * step[..., None])
    new = old * decay + Bh[:, :, None, :] * (step * xs)[..., None]
    state[rows] = new
    out = (new * Ch[:, :, None, :]).sum(dim=-1) + D.to(state.dtype) * xs
    if z is not None:
        zs = z.to(state.dtype)
        out = out * zs * torch.sigmoid(zs)
    return out


def make_inputs(config, generator, device):
    """The pool slots of the step's sequences: `batch` distinct slots of `slots`, in no order."""
    batch, slots = int(config["batch"]), int(config["slots"])
    perm = torch.randperm(slots, generator=generator, device=device)[:batch]
    return {"state_batch_indices": perm.to(torch.int32)}
