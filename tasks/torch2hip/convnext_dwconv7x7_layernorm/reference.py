import torch
import torch.nn.functional as F


def reference(x, dw_weight, dw_bias, ln_weight, ln_bias, batch, channels, height, width, eps):
    """The first half of a ConvNeXt block (torchvision / timm CNBlock):

        t = depthwise_conv2d(x, dw_weight, dw_bias, 7x7, padding 3)    NCHW
        y = layer_norm(t.permute(0, 2, 3, 1), [channels]) * ln_weight + ln_bias   NHWC

    Called with the declared fp16 tensors this is the eager baseline (cuDNN depthwise
    convolution, a permute that LayerNorm has to make contiguous, LayerNorm); with fp32
    upcasts it is the expected output."""
    t = F.conv2d(x, dw_weight, dw_bias, stride=1, padding=3, groups=channels)
    return F.layer_norm(t.permute(0, 2, 3, 1), (channels,), ln_weight, ln_bias, eps)
