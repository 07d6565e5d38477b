"""A hand-written torch.distributed.pipelining script for GPT-2: the baseline of train_decoder.py.

Run under torchrun with 2 processes: the same model (trainplay's ``Decoder`` of gpt2-small), split
before ``layers.<--split>``, schedule, micro-batches, optimizer, token windows and sample order as
``trainplay train --plan`` in the benchmark, written the way one would by hand: every rank builds
the whole model from the seed, keeps its stage's modules, wraps them in ``PipelineStage`` and
steps ``ScheduleGPipe``; the tied token embedding (rank 0) and output projection (rank 1) have
their gradients summed between the two ranks before Adam's step. Rank 0 writes the wall time of
each step (after a barrier that ends it) to ``--out``.
"""

import argparse
import json
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

from trainplay.runtime.order import SampleOrder
from trainplay.runtime.tokens import open_tokens
from trainplay.workload.decoder import PRESETS, Decoder

parser = argparse.ArgumentParser()
parser.add_argument("--split", type=int, required=True, help="first layer of stage 1")
parser.add_argument("--data", required=True, help="text:PATH")
parser.add_argument("--seq-len", type=int, required=True)
parser.add_argument("--global-batch", type=int, required=True)
parser.add_argument("--microbatches", type=int, required=True)
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--out", required=True)
args = parser.parse_args()


class Part(nn.Module):
    def __init__(self, modules: list[nn.Module]):
        super().__init__()
        self.parts = nn.ModuleList(modules)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for module in self.parts:
            x = module(x)
        return x


torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(args.seed)
model = Decoder(PRESETS["gpt2-small"])
if rank == 0:
    part = Part([model.embed, *model.layers[: args.split]])
    tied = model.embed.tokens.weight
else:
    part = Part([*model.layers[args.split :], model.head])
    tied = model.head.proj.weight
del model
stage = PipelineStage(part, rank, world, torch.device("cpu"))
data = open_tokens(args.data, seq_len=args.seq_len, vocab_size=PRESETS["gpt2-small"].vocab_size)
order = SampleOrder(dataset_size=data.size, global_batch=args.global_batch, seed=args.seed)
tokens = args.global_batch * args.seq_len


def loss_fn(logits, targets):
    return (
        nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="sum"
        )
        / tokens
    )


schedule = ScheduleGPipe(stage, args.microbatches, loss_fn=loss_fn, scale_grads=False)
optimizer = torch.optim.Adam(part.parameters(), lr=args.lr, fused=True)
ends = []
for step in range(args.steps):
    inputs, targets = data.batch(order.indices(step))
    if rank == 0:
        schedule.step(inputs, return_outputs=False)
    else:
        schedule.step(target=targets, return_outputs=False)
    dist.all_reduce(tied.grad)  # the two copies of the tied embedding take the same step
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    dist.barrier()
    ends.append(time.time())
if rank == 0:
    with open(args.out, "w") as f:
        json.dump(ends, f)
dist.destroy_process_group()
