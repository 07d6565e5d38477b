"""What crosses a pipeline cut: every tensor produced before the cut and read after it."""

import torch
from torch import nn

from trainplay.workload import profile_model


class SkipAcross(nn.Module):
    """a = l1(x); b = l2(a); out = l3(b) + a: the skip from l1 crosses the cut after l2."""

    def __init__(self, width: int):
        super().__init__()
        self.l1, self.l2, self.l3 = (
            nn.Linear(width, width),
            nn.Linear(width, width),
            nn.Linear(width, width),
        )

    def forward(self, x):
        a = self.l1(x)
        return self.l3(self.l2(a)) + a


class UsesInputLate(nn.Module):
    """The model input is read again by the last block, so every cut carries it too."""

    def __init__(self, width: int):
        super().__init__()
        self.l1, self.l2 = nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x):
        return self.l2(self.l1(x)) * x


def _layers(model, batch, width):
    x = torch.empty(batch, width, device="meta")
    return profile_model(
        model.to("meta"), (x,), name="t", batch_size=batch, input_shape=(width,), dtype="fp32"
    ).layers


def test_skip_connection_crosses_the_cut():
    batch, width = 4, 16
    one = batch * width * 4
    l1, l2, l3 = _layers(SkipAcross(width), batch, width)
    assert [layer.name for layer in (l1, l2, l3)] == ["l1", "l2", "l3"]
    assert l1.activation_bytes == one  # a
    assert l2.activation_bytes == 2 * one  # b and the skip a
    assert l3.activation_bytes == one  # the output


def test_input_read_late_crosses_every_cut():
    batch, width = 2, 8
    one = batch * width * 4
    l1, l2 = _layers(UsesInputLate(width), batch, width)
    assert l1.activation_bytes == 2 * one  # l1's output and the input x
    assert l2.activation_bytes == one


def test_saved_tensors_belong_to_the_block_that_saves_them_first():
    """An in-place ReLU ending a block saves its output there, just before the next block's
    Linear saves the same tensor as its input: the tensor is counted once, in the first block."""
    batch, width = 4, 8
    one = batch * width * 4
    model = nn.Sequential(
        nn.Linear(width, width),
        nn.ReLU(inplace=True),
        nn.Linear(width, width),
        nn.ReLU(inplace=True),
        nn.Linear(width, width),
    )
    first, second, third = _layers(model, batch, width)
    assert [layer.name for layer in (first, second, third)] == ["0", "2", "4"]
    assert first.saved_bytes == 2 * one  # the input x (for dW) and its ReLU's output
    assert second.saved_bytes == one  # its ReLU's output; its input is block 0's
    assert third.saved_bytes == 0  # its input is block 1's; a Linear keeps nothing else
