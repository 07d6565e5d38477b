"""TNP runtime. So far: the job's sample order (order.py), running one rank's part of a fixed plan
with ``torch.distributed.pipelining`` (pipeline.py) and its torchrun worker (worker.py). The
elastic launcher, checkpoints with resharding and membership changes are not written yet."""
