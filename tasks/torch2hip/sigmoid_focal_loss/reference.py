import torch
import torch.nn.functional as F


def reference(logits, labels, anchors, classes, alpha, gamma):
    """Sigmoid focal loss (RetinaNet; torchvision.ops.sigmoid_focal_loss written out, one-hot
    targets made from the anchors' labels, label == classes meaning background), summed over
    the classes of each anchor. Computed in the dtype it is given (fp64 upcast for the
    expected output, the declared fp32 for the eager baseline). Returns [anchors]."""
    targets = F.one_hot(labels, classes + 1)[:, :classes].to(logits.dtype)
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (alpha_t * loss).sum(dim=-1)


def make_inputs(config, generator, device):
    """Anchor labels as a detector's matcher leaves them: one anchor in five is foreground
    with a uniformly drawn class in [0, classes), the rest background (label == classes)."""
    anchors, classes = int(config["anchors"]), int(config["classes"])
    fg = torch.rand(anchors, generator=generator, device=device) < 0.2
    cls = torch.randint(0, classes, (anchors,), generator=generator, device=device)
    labels = torch.where(fg, cls, torch.full_like(cls, classes))
    return {"labels": labels}
