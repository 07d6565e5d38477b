"""TNP runtime: ``trainplay train`` trains a plan on torchrun's elastic agent and keeps training
while nodes join and leave.

launcher.py (one node's agent), worker.py (one rank, every start and restart), nodes.py (the
devices present), replan.py (which plan), pipeline.py (one rank's stage), data.py and order.py
(which samples), checkpoint.py (DCP, resharded by parameter name), journal.py (the run's events),
job.py (the flags both share)."""
