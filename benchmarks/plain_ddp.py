"""A plain DDP training loop for plain torchrun: the baseline of train_recovery.py.

Every step, rank 0 appends ``{"t": unix time, "restart": torchrun's restart count, "world": W}``
to the log file; nothing is checkpointed (the baseline measures how long torchrun takes to resume).
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("steps", type=int)
parser.add_argument("log", help="JSON lines, one per step")  # positional: torchrun's parser
# would take an option such as --log for an abbreviation of its own --log-dir
args = parser.parse_args()
torch.set_num_threads(1)
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 4))
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
for _ in range(args.steps):
    x, y = torch.randn(8, 12), torch.randint(0, 4, (8,))
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
    time.sleep(0.05)
    if dist.get_rank() == 0:
        with open(args.log, "a") as f:
            f.write(
                json.dumps({"t": time.time(), "restart": restart, "world": dist.get_world_size()})
                + "\n"
            )
dist.destroy_process_group()
