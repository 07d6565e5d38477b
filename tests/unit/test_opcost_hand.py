"""Hand-derived FLOPs and bytes of a Conv2d and a Linear, forward and backward.

Each expected number is written from the layer's shapes, following the rules in
``trainplay.workload.opcost`` (GEMM: 2 FLOPs per multiply-add, bias adds not counted; bytes: every
tensor input read once + every output written once, fp32 = 4 bytes).
"""

import torch
from torch import nn

from trainplay.workload import profile_model

F32 = 4


def _profile(model: nn.Module, x: torch.Tensor):
    return profile_model(
        model.to("meta"),
        (x.to("meta"),),
        name="hand",
        batch_size=x.shape[0],
        input_shape=tuple(x.shape[1:]),
        dtype="fp32",
    )


def test_linear_first_and_second_layer():
    n, d_in, d_hidden, d_out = 8, 64, 48, 32
    model = nn.Sequential(nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_out))
    first, second = _profile(model, torch.empty(n, d_in)).layers

    # forward: addmm(bias, x, W^T): 2*n*d_in*d_hidden FLOPs; reads bias, x, W; writes y.
    assert first.fwd_flops == first.fwd_gemm_flops == 2 * n * d_in * d_hidden
    assert first.fwd_bytes == F32 * (d_hidden + n * d_in + d_in * d_hidden + n * d_hidden)
    # backward of the first layer: its input needs no gradient, so only dW = g^T x (a GEMM) and
    # db = sum(g) (a reduction over n*d_hidden elements) run.
    assert first.bwd_gemm_flops == 2 * n * d_in * d_hidden
    assert first.bwd_flops == 2 * n * d_in * d_hidden + n * d_hidden
    assert first.bwd_bytes == F32 * (
        (n * d_hidden + n * d_in + d_hidden * d_in)  # mm: reads g, x; writes dW
        + (n * d_hidden + d_hidden)  # sum: reads g; writes db
    )
    # the second layer also computes dx = g W: twice the backward GEMM FLOPs of its forward.
    assert second.bwd_gemm_flops == 2 * second.fwd_gemm_flops == 4 * n * d_hidden * d_out
    assert second.bwd_bytes == F32 * (
        (n * d_out + d_out * d_hidden + n * d_hidden)  # dx = g W
        + (n * d_out + n * d_hidden + d_out * d_hidden)  # dW = g^T x
        + (n * d_out + d_out)  # db
    )
    assert first.params == d_in * d_hidden + d_hidden
    assert first.param_bytes == F32 * first.params
    assert (
        first.saved_bytes == F32 * n * d_in
    )  # the input, kept for dW; weights are not activations
    assert first.activation_bytes == F32 * n * d_hidden  # what a cut after it would send
    assert second.activation_bytes == F32 * n * d_out  # the output


def test_conv2d_first_layer():
    n, c_in, c_out, k, h, w = 2, 3, 16, 3, 8, 8
    conv = nn.Conv2d(c_in, c_out, kernel_size=k, padding=1)
    (layer,) = _profile(conv, torch.empty(n, c_in, h, w)).layers

    assert layer.name == "(model)" and layer.kind == "Conv2d"  # a model without children: one block
    macs = n * c_out * h * w * c_in * k * k
    x, weight, bias, y = n * c_in * h * w, c_out * c_in * k * k, c_out, n * c_out * h * w
    assert layer.fwd_flops == layer.fwd_gemm_flops == 2 * macs
    assert layer.fwd_bytes == F32 * (x + weight + bias + y)
    # convolution_backward with output_mask (False, True, True): grad_weight only (plus grad_bias,
    # which FlopCounterMode's formula, like the published counts, leaves out).
    assert layer.bwd_flops == layer.bwd_gemm_flops == 2 * macs
    assert layer.bwd_bytes == F32 * ((y + x + weight) + (weight + bias))
    assert layer.saved_bytes == F32 * x
    assert layer.params == weight + bias


def test_conv2d_with_input_gradient_doubles_backward():
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1))
    first, second = _profile(conv, torch.empty(2, 3, 8, 8)).layers
    assert first.bwd_gemm_flops == first.fwd_gemm_flops
    assert second.bwd_gemm_flops == 2 * second.fwd_gemm_flops


def test_depthwise_conv_backward_costs_its_forward_per_gradient():
    c, n, hw = 32, 2, 16
    model = nn.Sequential(nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False))
    _, depthwise = _profile(model, torch.empty(n, c, hw, hw)).layers
    macs = n * c * hw * hw * 3 * 3  # one input channel per output channel
    assert depthwise.fwd_gemm_flops == 2 * macs
    assert depthwise.bwd_gemm_flops == 2 * (2 * macs)  # grad input + grad weight
