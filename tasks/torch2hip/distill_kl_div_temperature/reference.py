import torch
import torch.nn.functional as F


def reference(student, teacher, rows, vocab, temperature):
    """Per-token knowledge-distillation loss (Hinton et al.; DistilBERT / DistilGPT-2 style):
    KL(softmax(teacher / T) || softmax(student / T)) * T^2 for each row, unreduced.

    Computed in the dtype it is given (the declared fp32 for the eager baseline, the fp64
    upcast for the expected output). Returns [rows]."""
    log_s = F.log_softmax(student / temperature, dim=-1)
    log_t = F.log_softmax(teacher / temperature, dim=-1)
    kl = F.kl_div(log_s, log_t, reduction="none", log_target=True)
    return kl.sum(dim=-1) * temperature ** 2


def make_inputs(config, generator, device):
    """Teacher logits with a per-token offset and scale (std uniform in [1.5, 3]); the student
    tracks the teacher imperfectly: 0.8 x the teacher plus independent noise of 0.6 x the
    token's scale, and its own offset. Per-token KL then spreads over ~0.2-1.5. fp32."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    std = 1.5 + 1.5 * torch.rand(rows, 1, generator=generator, device=device)
    teacher = torch.randn(rows, vocab, generator=generator, device=device) * std \
        + torch.randn(rows, 1, generator=generator, device=device)
    noise = torch.randn(rows, vocab, generator=generator, device=device) * (0.6 * std)
    student = 0.8 * teacher + noise + torch.randn(rows, 1, generator=generator, device=device)
    return {"student": student, "teacher": teacher}
