"""A hand-written torch.distributed.pipelining training script: the baseline of train_overhead.py.

Run under torchrun with 2 processes: the same model, split, schedule, micro-batches, optimizer,
samples and sample order as ``trainplay train --plan`` in the benchmark, written the way the
PyTorch pipelining tutorial does it. Rank 0 writes the wall time of each step (after a barrier
that ends it) to ``--out``.
"""

import argparse
import json
import time

import torch
import torch.distributed as dist
from benchmarks.train_models import Data, mlp
from torch import nn
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe, SplitPoint, pipeline

from trainplay.runtime.order import SampleOrder

parser = argparse.ArgumentParser()
parser.add_argument("--split", required=True, help="module name where stage 1 begins")
parser.add_argument("--global-batch", type=int, required=True)
parser.add_argument("--microbatches", type=int, required=True)
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--out", required=True)
args = parser.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(args.seed)
model = mlp()
data = Data()
order = SampleOrder(dataset_size=len(data), global_batch=args.global_batch, seed=args.seed)
micro = args.global_batch // args.microbatches
example = torch.zeros(micro, data.inputs.shape[1])
pipe = pipeline(model, mb_args=(example,), split_spec={args.split: SplitPoint.BEGINNING})
module = pipe.get_stage_module(rank)
stage = PipelineStage(module, rank, world, torch.device("cpu"))


def loss_fn(output, target):
    return nn.functional.cross_entropy(output, target, reduction="sum") / args.global_batch


schedule = ScheduleGPipe(stage, args.microbatches, loss_fn=loss_fn, scale_grads=False)
optimizer = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
ends = []
for step in range(args.steps):
    picked = order.indices(step)
    items = [data[int(i)] for i in picked]
    inputs = torch.stack([x for x, _ in items])
    targets = torch.tensor([y for _, y in items])
    if rank == 0:
        schedule.step(inputs)
    else:
        schedule.step(target=targets)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    dist.barrier()
    ends.append(time.time())
if rank == 0:
    with open(args.out, "w") as f:
        json.dump(ends, f)
dist.destroy_process_group()
