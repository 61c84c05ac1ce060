import torch


def reference(x, batch, channels, height, width):
    """Parameter-free squeeze-and-excitation gate on an NCHW map.

        s = mean over (h, w) of x          ([batch, channels, 1, 1])
        y = x * sigmoid(s)

    Called with the declared fp16 tensor this is the eager baseline (three kernels: the
    mean, fp32-accumulated and rounded to fp16, the sigmoid, the broadcast multiply);
    called with the fp32 upcast it gives the expected output, every step in fp32."""
    s = x.mean(dim=(2, 3), keepdim=True)
    return x * torch.sigmoid(s)


def make_inputs(config, generator, device):
    """Depthwise-conv activations: unit normal noise plus a per-(batch, channel) offset with
    std 1.5, so that the channel means (and the gates) vary across planes; fp16."""
    b, c = int(config["batch"]), int(config["channels"])
    h, w = int(config["height"]), int(config["width"])
    x = torch.randn(b, c, h, w, generator=generator, device=device)
    x += 1.5 * torch.randn(b, c, 1, 1, generator=generator, device=device)
    return {"x": x.to(torch.float16)}
