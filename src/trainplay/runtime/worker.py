"""One rank of an elastic training job: ``python -m trainplay.runtime.worker`` under torchrun.

``trainplay train`` starts it through its elastic agent; on a cluster plain torchrun does too::

    torchrun --nnodes 2:4 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29400 \\
        -m trainplay.runtime.worker resnet50 --data imagefolder:/data/train --global-batch 256 \\
        --steps 1000 --checkpoint-dir /shared/ckpt --journal /shared/run.jsonl --cluster lab.yaml

Every start and restart of the worker group runs :func:`main` from the top:

1. each rank announces its node and device; all build the cluster of devices present;
2. every rank derives the same plan (:mod:`trainplay.runtime.replan`) and checks that they agree;
3. the ranks the plan uses build their stage (:mod:`trainplay.runtime.stage`: only its own
   modules get memory, for a model that is a chain of its blocks) and run it
   (:class:`~trainplay.runtime.pipeline.PlanRunner`), restore their part of the latest checkpoint
   and resume at its step; ranks the plan leaves idle wait for the end;
4. steps run in the job's sample order; every ``--checkpoint-every`` steps, and at the end, the
   active ranks write a checkpoint; the lead rank journals and shows progress, with every rank's
   step timers (:mod:`trainplay.runtime.measured`); ``--profile-steps`` traces some steps
   (:mod:`trainplay.runtime.profiling`); every few steps the measured speeds recalibrate the
   devices and may call for a re-plan (:mod:`trainplay.runtime.calibration`);
5. at the end each active rank's peak memory goes into the journal beside the plan's figure
   (:mod:`trainplay.runtime.memory`).

A lost peer surfaces as an error in a collective: the rank says so in one line and exits, and
torchrun's agent restarts the group on the nodes that remain. A signal from the agent (a restart
for a join, Ctrl-C) is a planned stop: the step in flight ends, the training ranks agree and
checkpoint it (:mod:`trainplay.runtime.stopping`). An error of the user's or the data's exits
with ``EXIT_USAGE``, which the agent does not retry.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.api import CheckpointException

from trainplay.errors import UsageError
from trainplay.hardware.cpulimit import cpu_limit
from trainplay.hardware.intraop import share_cpus
from trainplay.hardware.local import local_cluster, resolve_cluster
from trainplay.hardware.spec import ClusterSpec
from trainplay.launch import die_with_agent
from trainplay.plan.costs import CostModel, Device, devices_of
from trainplay.plan.memory import stage_bytes
from trainplay.plan.plan import Plan
from trainplay.plan.search import SearchOptions
from trainplay.report.units import format_duration, plural
from trainplay.runtime import calibration, checkpoint
from trainplay.runtime.fetch import measure_fetch
from trainplay.runtime.job import TrainJob, add_job_arguments
from trainplay.runtime.journal import Journal, read_journal
from trainplay.runtime.launcher import (
    CHANGE,
    CHANGE_AT,
    EXIT_REPLAN,
    EXIT_USAGE,
    LAUNCHED_AT,
    ROUND_AT,
)
from trainplay.runtime.measured import gather_times, predicted_ranks, summary
from trainplay.runtime.memory import MemoryReport, PeakMeter, over_capacity
from trainplay.runtime.nodes import ENV, NodeDevices, node_name, present_cluster, this_node
from trainplay.runtime.order import SampleOrder
from trainplay.runtime.pipeline import (
    PlanRunner,
    default_ranks,
    make_groups,
    placement,
    runnable_schedule,
)
from trainplay.runtime.precision import Precision
from trainplay.runtime.profiling import StepProfiler
from trainplay.runtime.progress import StepProgress
from trainplay.runtime.replan import RunState, choose_plan, load_plan_file
from trainplay.runtime.saving import Saved, Saver
from trainplay.runtime.stage import chain_stage, cross_stage_ties, traced_stage
from trainplay.runtime.stopping import EXIT_STOPPED, StopRequest
from trainplay.runtime.task import open_task, summed_loss
from trainplay.runtime.timers import FIELDS

__all__ = ["main"]

DONE_KEY = "trainplay/done"
EXIT_LOST_PEER = 1


def _say(text: str) -> None:
    sys.stderr.write(f"trainplay: {text}\n")
    sys.stderr.flush()


def _node(job: TrainJob, local_world: int) -> NodeDevices:
    """The node's devices: from the launcher, or (plain torchrun) from ``--cluster``."""
    if ENV in os.environ:
        return NodeDevices.from_env(os.environ[ENV])
    cluster = (
        local_cluster(local_world, measure_if_missing=False)
        if job.cluster == "local"
        else resolve_cluster(job.cluster, show_progress=False)
    )
    return this_node(cluster, name=node_name(None), nproc=local_world)


def _restarted() -> bool:
    """Whether this worker group follows another of this launch (a failure or a membership
    change restarted it), as opposed to a launch's first."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0 or CHANGE in os.environ


def _previous_plan(state: RunState | None, restoring: bool, names: tuple[str, ...]) -> Plan | None:
    """The plan the last worker group ran (``run.json``), when it is this job's: there is a
    checkpoint to resume, or this group restarts one of this launch (a node lost before the
    first checkpoint). Another model's plan is never taken."""
    if state is None or not (restoring or _restarted()):
        return None
    plan = Plan.from_dict(state.plan)
    return plan if tuple(plan.block_names or names) == tuple(names) else None


def _priced_devices(cluster: ClusterSpec, dtype: str) -> tuple[list[Device], str]:
    """The devices present with their peaks at ``dtype``; at fp32 when some device lists no peak
    for ``dtype`` (this machine's measured CPU has only fp32), and which of the two it was."""
    try:
        return devices_of(cluster, dtype), dtype
    except UsageError:
        if dtype == "fp32":
            raise
        return devices_of(cluster, "fp32"), "fp32"


def _scan(directory: Path | None) -> checkpoint.Scan:
    """Rank 0 verifies the checkpoints (one read of them, not one per rank) and tells the others;
    every rank raises the same error when none is intact."""
    found: list = [None]
    if dist.get_rank() == 0:
        try:
            found[0] = (
                checkpoint.scan(directory) if directory is not None else checkpoint.Scan(None)
            )
        except UsageError as exc:
            found[0] = exc
    dist.broadcast_object_list(found, src=0)
    if isinstance(found[0], UsageError):
        raise UsageError(str(found[0]))
    return found[0]


class Worker:
    """Everything one rank holds for one worker group."""

    def __init__(self, job: TrainJob, device: torch.device):
        self.job = job
        self.device = device
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.task = open_task(job)
        self.data = self.task.data
        self.order = SampleOrder(
            dataset_size=self.data.size, global_batch=job.global_batch, seed=job.seed
        )
        self.total = job.steps or self.order.steps(job.epochs or 1)
        self.timed: list[list[list[float]]] = []
        """The lead rank's record of every step's timers (step, rank, field)."""
        self.since: list[list[list[float]]] = []
        """The lead rank's steps since the scales last changed: priced as ``described`` says."""
        self.checkpoint_s = 0.0
        """The longest checkpoint write of this worker group (seconds)."""
        self.recovery_s: float | None = None
        """The last measured failure-to-first-step time of this job."""
        self.startup_s: float | None = None
        """Launch-to-first-step time of this worker group, when it is the launch's first."""
        self.startup_speeds: dict[str, float] | None = None
        """The devices' speeds at the group's first look (:func:`calibration.speeds`): what the
        group's start ran at."""
        self.floors: dict[str, float] = {}
        """Device id -> the least scale its CPU limit allows (:func:`_floors`)."""

    def plan(self) -> None:
        job = self.job
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        mine = (_node(job, local_world), int(os.environ.get("LOCAL_RANK", "0")))
        gathered: list = [None] * self.world
        floor = _scale_floor(self.device)
        fetch = measure_fetch(self.data, self.order)  # every rank its own: a slow CPU reads slower
        dist.all_gather_object(gathered, (mine[0].name, mine[1], mine[0].to_json(), floor, fetch))
        entries = [(n, lr, NodeDevices.from_json(text)) for n, lr, text, _, _ in gathered]
        cluster, ids = present_cluster(entries)
        self.ids = ids
        self.floors = {ids[r]: g[3] for r, g in enumerate(gathered) if g[3] > 1.0}
        self.fetch = {ids[r]: tuple(g[4]) for r, g in enumerate(gathered)}
        costs = self.task.block_costs(job.dtype)
        self.cm = CostModel(costs, cluster, job.optimizer, data_fetch=self.fetch)
        present, self.priced_dtype = _priced_devices(cluster, job.dtype)
        self.capacity_bytes = next(d.mem_bytes for d in present if d.id == ids[self.rank])
        self.state = RunState.read(job.checkpoint_dir)
        self.scan = _scan(job.checkpoint_dir)
        self.latest = self.scan.found
        resuming = self.latest is not None or _restarted()
        self.base = present
        learned = self.state and resuming and job.calibration
        self.scales = dict(self.state.scales) if learned else {}
        if job.calibration and self.floors:
            spelled = calibration.scales_for(present, self.scales)
            self.scales = calibration.floored(spelled, self.floors)
        present = calibration.calibrated_all(present, self.scales)
        self.present = present
        if self.latest is not None:
            checkpoint.check_matches(
                self.latest[1], model=job.model, block_names=costs.names,
                global_batch=job.global_batch, seed=job.seed, optimizer=job.optimizer,
                directory=job.checkpoint_dir,
            )  # fmt: skip
        self.start_step = self.latest[1].step if self.latest else 0
        previous = _previous_plan(self.state, self.latest is not None, costs.names)
        if previous is not None and self.scales:  # weighed on the devices as measured
            ranks = {d: i for i, d in enumerate(previous.devices)}
            repriced = predicted_ranks(self.cm, previous, present, ranks)[1]
            if repriced:
                previous = replace(previous, predicted_iteration_s=repriced)
        fixed = (
            load_plan_file(job.plan, global_batch=job.global_batch, block_names=costs.names)
            if job.plan
            else None
        )
        started = (
            self.state.started_at_s
            if self.state and resuming
            else float(os.environ.get(LAUNCHED_AT, time.time()))
        )
        self.choice = choose_plan(
            self.cm, present, global_batch=job.global_batch, previous=previous, fixed=fixed,
            now_s=time.time() - started, remaining_steps=self.total - self.start_step,
            recovery_s=self.state.recovery_s if self.state else None,
            options=SearchOptions(microbatches=job.microbatches),
            previous_present=self.state.present if self.state and previous else None,
        )  # fmt: skip
        plan = self.choice.plan
        ids_present = set(ids)
        self.ranks = (
            {d: ids.index(d) for d in plan.devices}
            if set(plan.devices) <= ids_present
            else default_ranks(plan)
        )
        if max(self.ranks.values()) >= self.world:
            raise UsageError(
                f"the plan needs {len(plan.devices)} workers, {self.world} are running; "
                "start more (--nnodes, --nproc-per-node) or plan for these"
            )
        agreed: list = [None] * self.world
        dist.all_gather_object(agreed, plan.plan_id)
        if len(set(agreed)) != 1:
            raise RuntimeError(f"ranks derived different plans {sorted(set(agreed))}")
        self.started_at_s = started
        self.place = placement(plan, self.rank, self.ranks)
        # priced on the devices of the ranks that run it: a plan of other device names (a --plan
        # file made for a cluster description) is renamed onto them, any other is unchanged
        priced = plan.renamed({d: ids[r] for d, r in self.ranks.items()})
        ranks = {ids[r]: r for r in self.ranks.values()}
        self.described, predicted = predicted_ranks(self.cm, priced, present, ranks)
        self.recovery_s = self.state.recovery_s if self.state else None
        # a --plan file was priced where it was made (without this job's data set, perhaps on
        # other devices): the step is priced here, on the devices present, as every rank prices it
        fixed = self.choice.reason == "fixed" and predicted is not None
        self.predicted_step_s = predicted if fixed else plan.predicted_iteration_s or predicted
        self.meta = self.task.meta_model()
        self.shape = self.task.structure(self.meta)
        if self.shape.chain and tuple(b.name for b in self.shape.blocks) != costs.names:
            raise RuntimeError(f"blocks {self.shape.blocks} are not the planner's {costs.names}")
        self.ties = cross_stage_ties(self.meta, self.shape.blocks, plan) if self.shape.chain else {}
        self.groups = make_groups(plan, self.ranks, tuple(self.ties.values()))
        active = sorted(self.ranks.values())
        self.active = active
        # asynchronous checkpoints write over a gloo group of their own (every rank makes it)
        writes = dist.new_group(active, backend="gloo") if job.checkpoint_async else None
        self.saver = (
            Saver(job.checkpoint_dir, self.groups.active, asynchronous=job.checkpoint_async,
                  write_group=writes if self.rank in active else None)
            if job.checkpoint_dir is not None
            else None
        )  # fmt: skip
        self.leader = 0 if 0 in active else active[0]
        last = len(plan.stages) - 1
        self.loss_rank = self.ranks[plan.stages[last].devices[0]]

    def build(self) -> None:
        job, plan, place = self.job, self.choice.plan, self.place
        assert place is not None
        self.meter = PeakMeter(self.device)
        self.meter.start()
        if self.shape.chain:
            stage = chain_stage(
                self.meta, self.shape.blocks, plan, place.stage, seed=job.seed, device=self.device
            )
        else:  # built whole on the CPU and traced (see runtime/stage.py)
            torch.manual_seed(job.seed)
            model = self.task.source.build(self.task.sample_shape, "cpu", "fp32")
            micro = plan.stages[0].batch_shares[place.replica] // plan.microbatches
            example = self.task.example(micro, "cpu")
            stage = traced_stage(model, plan, place.stage, example=example, device=self.device)
        self.stage = stage

        def optimizer(params: list[nn.Parameter]) -> torch.optim.Optimizer:
            # steps that need no scratch memory (plan/memory.py counts none): fused Adam (the
            # default foreach one holds a square root of every moment at once, the single-tensor
            # one two of the largest), single-tensor SGD (in place)
            if job.optimizer == "adam":
                return torch.optim.Adam(params, lr=job.lr, fused=True)
            return torch.optim.SGD(params, lr=job.lr, momentum=job.momentum, foreach=False)

        self.runner = PlanRunner(
            stage, plan, place=place, groups=self.groups, loss_fn=summed_loss,
            positions=self.task.positions, optimizer=optimizer,
            precision=Precision(job.dtype, self.device), device=self.device,
        )  # fmt: skip

    def _state(self) -> dict[str, torch.Tensor]:
        named = self.stage.named_parameters()
        state = checkpoint.model_state(self.stage.state())  # parameters and buffers
        state.update(checkpoint.optimizer_state(self.runner.optimizer, named, self.job.optimizer))
        state.update(self.runner.precision.state())
        return state

    def restore(self) -> None:
        assert self.latest is not None
        named = self.stage.named_parameters()
        state = checkpoint.model_state(self.stage.state())  # parameters and buffers
        template = checkpoint.optimizer_template(self.job.optimizer, named, self.job.momentum)
        state.update(self.runner.precision.state())
        checkpoint.load(self.latest[0], {**state, **template}, process_group=self.groups.active)
        checkpoint.apply_optimizer_state(self.runner.optimizer, named, template, self.job.optimizer)

    def memory(self) -> MemoryReport:
        assert self.place is not None
        plan = self.choice.plan
        planned = stage_bytes(
            self.cm, plan, self.place.stage, self.place.replica, runnable_schedule(plan)
        )
        return MemoryReport(
            rank=self.rank, device=self.ids[self.rank], peak_bytes=self.meter.peak_bytes(),
            plan_bytes=round(planned.total_bytes), capacity_bytes=self.capacity_bytes,
        )  # fmt: skip

    def run_state(self, plan: Plan, recovery_s: float | None) -> RunState:
        """What the next worker group learns from this one: ``plan``, chosen with the devices
        present now, the scales measured so far and the last recovery time."""
        return RunState(
            started_at_s=self.started_at_s, plan=plan.to_dict(), recovery_s=recovery_s,
            scales=self.scales, present=[d.id for d in self.present],
        )  # fmt: skip

    def save(self, step: int) -> list[Saved]:
        """Checkpoint ``step``: the checkpoints this completes (:class:`Saver`)."""
        job, plan = self.job, self.choice.plan
        info = checkpoint.CheckpointInfo(
            model=job.model, block_names=plan.block_names or self.cm.blocks.names, step=step,
            samples_seen=step * job.global_batch, global_batch=job.global_batch, seed=job.seed,
            optimizer=job.optimizer, plan_id=plan.plan_id, devices=plan.devices,
            world_size=self.world, written_at_s=time.time(),
        )  # fmt: skip
        assert self.saver is not None
        return self.saver.save(self._state(), info)


class Stopped(Exception):
    """A planned stop (a signal) after the checkpoint was written; ``signum`` is the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _run(job: TrainJob, device: torch.device, stop: StopRequest) -> None:
    w = Worker(job, device)
    w.plan()
    plan, choice = w.choice.plan, w.choice
    lead = w.rank == w.leader
    journal = Journal(job.journal if lead else None)
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if lead:
        journal.write(
            "start", world_size=w.world, plan_id=plan.plan_id, devices=list(plan.devices),
            step=w.start_step, steps=w.total, restart=restart,
            stages=len(plan.stages), replicas=plan.replicas, schedule=plan.schedule,
            microbatches=plan.microbatches, predicted_iteration_s=plan.predicted_iteration_s,
            predicted_step_s=w.predicted_step_s, ranks=w.described, timer_fields=list(FIELDS),
            data_fetch_s={d: list(f) for d, f in sorted(w.fetch.items())},
            **({"scale_floors": w.floors} if w.floors and job.calibration else {}),
            **({"cpu_floors": w.floors} if w.floors else {}),
        )  # fmt: skip
        for device, floor in sorted(w.floors.items()) if job.calibration else ():
            _say(
                f"note: {device} may use fewer CPUs than it runs threads (a CPU limit): priced "
                f"at least {floor:.3g}x slower than measured"
            )
        idle = w.world - len(plan.devices)
        _say(
            f"{plural(w.world, 'worker')}; plan {plan.plan_id}: {plural(len(plan.stages), 'stage')}"
            f" x {plural(plan.replicas, 'replica')}, {plan.schedule}, "
            f"{plural(plan.microbatches, 'micro-batch', 'micro-batches')}, predicted "
            f"{format_duration(w.predicted_step_s or plan.predicted_iteration_s)}/step"
            + (f"; {plural(idle, 'worker')} idle (the plan is faster without them)" if idle else "")
            + f"; step {w.start_step} of {w.total}"
        )
        if runnable_schedule(plan) != plan.schedule:
            _say(
                f"note: {plan.microbatches} micro-batch(es) for {len(plan.stages)} stages is too "
                "few for torch's Schedule1F1B; running the plan as GPipe"
            )
        if w.priced_dtype != job.dtype:
            _say(f"note: a device lists no {job.dtype} peak; the plan prices its GEMMs at fp32")
        if choice.previous is not None and choice.reason in ("join", "leave"):
            switched = choice.plan.plan_id != choice.previous.plan_id
            journal.write(
                "replan", reason=choice.reason, from_plan_id=choice.previous.plan_id,
                to_plan_id=plan.plan_id, switch=switched, decision=choice.decision,
            )  # fmt: skip
            why = (choice.decision or {}).get("reason", "")
            _say(f"{choice.reason}: {'re-planned' if switched else 'kept the plan'}; {why}")
        if choice.reason == "same":
            _say(f"the same devices as before: kept plan {plan.plan_id}")
        if job.checkpoint_dir is not None:
            w.run_state(plan, w.state.recovery_s if w.state else None).write(job.checkpoint_dir)
    if w.place is None:
        _idle(stop)
        return
    w.build()
    if w.latest is not None:
        if lead:
            for damaged in w.scan.damaged:
                _say(f"{damaged.line()}; restoring the newest intact one, {w.latest[0]}")
        w.restore()
        if lead:
            _say(f"restored step {w.start_step} from {w.latest[0]}")
    _train(w, journal, lead, stop)


def _journal_saves(journal: Journal, lead: bool, saves: list[Saved]) -> None:
    for saved in saves if lead else ():
        journal.write(
            "checkpoint", step=saved.step, path=str(saved.path), seconds=round(saved.seconds, 6),
            stall_s=round(saved.stall_s, 6),
        )  # fmt: skip


def _idle(stop: StopRequest) -> None:
    """A rank the plan does not use: wait for the end (its agent restarts it on any change)."""
    store = dist.distributed_c10d._get_default_store()
    while True:
        if store.check([DONE_KEY]):
            return
        if stop.signum is not None:
            raise Stopped(stop.signum)
        time.sleep(0.1)


def _stop(w: Worker, journal: Journal, lead: bool, done: int, saved: bool, signum: int) -> None:
    """Every training rank agreed to stop after ``done`` steps: checkpoint them (unless this
    step's checkpoint is written already), say where the job stopped, and raise :class:`Stopped`."""
    name = signal.Signals(signum).name
    path = None
    if w.saver is not None:
        path = checkpoint.step_path(w.saver.directory, done)
        _journal_saves(journal, lead, (w.save(done) if not saved else []) + w.saver.wait())
    if lead:
        _journal_timing(w, journal)
        journal.write(
            "stop", step=done, signal=name, checkpoint=None if path is None else str(path)
        )
        what = "interrupted" if signum == signal.SIGINT else f"stopped ({name} from the agent)"
        where = f"checkpoint {path.name}" if path else "no --checkpoint-dir, so nothing was saved"
        _say(f"{what} after step {done}; {where}")
    journal.close()
    raise Stopped(signum)


def _train(w: Worker, journal: Journal, lead: bool, stop: StopRequest) -> None:
    job, plan, runner = w.job, w.choice.plan, w.runner
    shares = plan.stages[0].batch_shares
    change_at = float(os.environ.get(CHANGE_AT, "nan"))
    cause = os.environ.get(CHANGE, "")
    began = time.perf_counter()
    explain = lead and (w.latest is not None or _restarted())  # why this group starts where it does
    if explain and w.start_step >= w.total:
        _restored(w, journal, change_at, cause)
    progress = StepProgress(w.total, w.start_step, show=lead and job.progress)
    order = [e["rank"] for e in w.described]
    profiler = _profiler(w)
    lap = time.perf_counter()  # a step's time runs from the previous step's end to its own
    with progress:
        for step in range(w.start_step, w.total):
            profiler.before(step)
            runner.timers.begin()
            inputs = targets = None
            if runner.takes_samples:
                picked = w.order.replica_indices(step, shares, w.place.replica)
                with runner.timers.phase("data_s"):
                    taken = w.data.batch(picked)
                inputs = taken[0].to(w.device) if runner.first else None
                targets = taken[1].to(w.device) if runner.last else None
            loss = runner.step(inputs, targets)
            loss, rows = gather_times(
                runner.timers.end(), loss, group=w.groups.active, leader=w.leader, ranks=order
            )
            # the whole loop between two steps' ends: this step's work and what ran after the
            # last one (its journal line, progress, checkpoint poll, calibration, stop agreement)
            ended = time.perf_counter()
            step_s, lap = ended - lap, ended
            profiler.after(step)
            if lead:
                start, end = w.order.positions(step)
                w.timed.append(rows)
                if step - w.start_step >= calibration.WARMUP:
                    w.since.append(rows)
                journal.write(
                    "step", step=step, world_size=w.world, plan_id=plan.plan_id,
                    samples=[start, end], loss=loss, step_s=round(step_s, 6), timers_s=rows,
                )  # fmt: skip
                if step == w.start_step and explain:
                    _restored(w, journal, change_at, cause)
                if step == w.start_step and w.recovery_s is None:
                    w.startup_s = _startup_s()
                progress.update(step + 1, loss)
            done = step + 1
            saved = job.checkpoint_dir is not None and (
                done % job.checkpoint_every == 0 or done == w.total
            )
            if w.saver is not None:
                finished = w.save(done) if saved else w.saver.poll()
                finished += w.saver.wait() if done == w.total else []
                _journal_saves(journal, lead, finished)
                w.checkpoint_s = max([w.checkpoint_s, *(f.seconds for f in finished)])
                if finished and lead and w.scales:  # what was learned goes with the checkpoint
                    w.run_state(plan, w.recovery_s).write(w.saver.directory)
            if (done - w.start_step) % calibration.CHECK_EVERY == 0 and done < w.total:
                _calibrate(w, journal, lead, done, saved)
            signum = stop.agreed(w.groups.active) if done < w.total else 0
            if signum:
                profiler.close()
                _stop(w, journal, lead, done, saved, signum)
    _journal_memory(w, journal, lead)
    if lead:
        _journal_timing(w, journal)
        journal.write(
            "done", steps=w.total, seconds=round(time.time() - w.started_at_s, 6),
            group_seconds=round(time.perf_counter() - began, 6),
            steps_redone=_steps_redone(job.journal, w.started_at_s),
        )  # fmt: skip
        _say(f"done: {w.total} steps")
        dist.distributed_c10d._get_default_store().set(DONE_KEY, "1")
    journal.close()
    dist.barrier(group=w.groups.active)


def _startup_s() -> float | None:
    """What this worker group's start cost, from its rendezvous round's close to the end of its
    first step (processes, imports, plan, build, restore): a restart's price until one is
    measured. It leaves out the old group's stop and the new round, which a restart adds, and
    leaves out the wait for the other nodes before the job's first round, which it does not."""
    began = os.environ.get(ROUND_AT) or os.environ.get(LAUNCHED_AT)
    return None if began is None else time.time() - float(began)


class Replan(Exception):
    """The ranks agreed on a new plan for the measured speeds and checkpointed for it."""


def _calibrate(w: Worker, journal: Journal, lead: bool, done: int, saved: bool) -> None:
    """Every :data:`~trainplay.runtime.calibration.CHECK_EVERY` steps: the lead rank updates the
    devices' scales from the last steps' timers and decides whether a plan for them pays; every
    training rank learns the answer; a switch checkpoints and raises :class:`Replan`."""
    plan = w.choice.plan
    if w.choice.reason == "fixed" or w.saver is None or not w.job.calibration:
        return
    w.floors = _floors(w)
    answer: list = [None]
    if lead:
        measured = calibration.scales_of(w.described, w.since[-calibration.WINDOW :], FIELDS)
        recent = calibration.scales_of(w.described, w.since[-calibration.CHECK_EVERY :], FIELDS)
        if len(w.since) < calibration.MIN_STEPS:
            measured = {}  # too few steps at the current prices to judge them
        elif w.startup_speeds is None:
            w.startup_speeds = calibration.speeds(w.scales, measured)

        def price(candidate: Plan, devices: list[Device]) -> float | None:
            ranks = {d: i for i, d in enumerate(candidate.devices)}
            return predicted_ranks(w.cm, candidate, devices, ranks)[1]

        found = calibration.check(
            w.cm, w.base, plan, w.scales, measured, recent=recent, remaining_steps=w.total - done,
            reconfiguration_s=w.recovery_s or w.startup_s, checkpoint_s=w.checkpoint_s,
            options=SearchOptions(microbatches=w.job.microbatches), price=price,
            measured_at=None if w.recovery_s else w.startup_speeds, floors=w.floors,
        )  # fmt: skip
        answer[0] = (found.scales, found.changed, found.plan and found.plan.to_dict())
        if found.changed:
            journal.write(
                "calibration", step=done, measured={k: round(v, 4) for k, v in measured.items()},
                scales={k: round(v, 4) for k, v in found.scales.items()},
                decision=found.decision, **({"scale_floors": w.floors} if w.floors else {}),
            )  # fmt: skip
    dist.broadcast_object_list(answer, src=w.leader, group=w.groups.active)
    scales, changed, new = answer[0]
    if not changed:
        return
    w.scales = scales
    w.present = calibration.calibrated_all(w.base, scales)
    if lead:
        w.described = predicted_ranks(w.cm, plan, w.present, w.ranks)[0]
        w.since = []
    if new is None:
        return
    new_plan = Plan.from_dict(new)
    _journal_saves(journal, lead, (w.save(done) if not saved else []) + w.saver.wait())
    if lead:
        _journal_timing(w, journal)
        journal.write(
            "replan", reason="calibration", from_plan_id=plan.plan_id,
            to_plan_id=new_plan.plan_id, switch=True, step=done,
        )  # fmt: skip
        w.run_state(new_plan, w.recovery_s).write(w.saver.directory)
        _say(
            f"re-planning after step {done} on the measured speeds: plan {new_plan.plan_id}, "
            f"predicted {format_duration(new_plan.predicted_iteration_s)}/step"
        )
    journal.close()
    dist.barrier(group=w.groups.active)
    raise Replan()


def _scale_floor(device: torch.device) -> float:
    """The least scale of this rank's device: its threads over the CPUs it may use, on a CPU
    (:func:`calibration.scale_floor`); 1 on a GPU, which its host's CPUs do not pace."""
    if device.type != "cpu":
        return 1.0
    return calibration.scale_floor(cpu_limit(), torch.get_num_threads())


def _floors(w: Worker) -> dict[str, float]:
    """Every training rank's floor, read again (a limit can change while a job runs)."""
    floors: list = [None] * len(w.active)
    dist.all_gather_object(floors, _scale_floor(w.device), group=w.groups.active)
    return {w.ids[r]: f for r, f in zip(w.active, floors, strict=True) if f > 1.0}


def _profiler(w: Worker) -> StepProfiler:
    """The ``--profile-steps`` profiler of this rank (idle without the flag)."""
    assert w.place is not None
    first, last = w.choice.plan.stages[w.place.stage].blocks
    names = w.choice.plan.block_names or w.cm.blocks.names
    mine = next(e for e in w.described if e["rank"] == w.rank)
    mine = {**mine, "cpu_floor": _scale_floor(w.device)}
    return StepProfiler(
        w.job.profile_steps, w.job.traces_dir, rank=w.rank, module=w.runner.module,
        block_names=tuple(names[first : last + 1]), device=w.device, metadata=mine,
    )  # fmt: skip


def _steps_redone(path: Path | None, since_s: float) -> int:
    """Steps journaled more than once since the job began (trained again after a restore)."""
    if path is None:
        return 0
    seen: set[int] = set()
    redone = 0
    for event in read_journal(path):
        if event.get("event") == "step" and event.get("time_s", 0) >= since_s:
            redone += event["step"] in seen
            seen.add(event["step"])
    return redone


def _journal_memory(w: Worker, journal: Journal, lead: bool) -> None:
    """Every active rank's peak beside the plan's figure, journaled by the lead rank."""
    report = w.memory()
    line = over_capacity(report)
    if line:
        _say(line)
    reports: list = [None] * dist.get_world_size(w.groups.active)
    dist.all_gather_object(reports, report.to_dict(), group=w.groups.active)
    if lead:
        for entry in reports:
            journal.write("memory", **entry)


def _restored(w: Worker, journal: Journal, change_at: float, cause: str) -> None:
    """Journal the restore (from nothing when the group restarts before any checkpoint)."""
    recovery = time.time() - change_at if change_at == change_at else None
    journal.write(
        "restore", step=w.start_step, checkpoint=str(w.latest[0]) if w.latest else None,
        cause=cause or "restart",
        skipped=[{"checkpoint": str(d.path), "why": d.why} for d in w.scan.damaged],
        recovery_s=None if recovery is None else round(recovery, 6),
    )  # fmt: skip
    if recovery is not None and w.job.checkpoint_dir is not None:
        w.run_state(w.choice.plan, recovery).write(w.job.checkpoint_dir)
        w.recovery_s = recovery
        _say(f"recovered in {recovery:.1f} s ({cause or 'restart'})")


def _journal_timing(w: Worker, journal: Journal) -> None:
    """The worker group's timing summary: per rank the median of each timer over its steps."""
    if w.timed:
        ranks = [e["rank"] for e in w.described]
        journal.write("timing", plan_id=w.choice.plan.plan_id, ranks=summary(ranks, w.timed))


def main(argv: list[str] | None = None) -> None:
    die_with_agent(EXIT_LOST_PEER)
    stop = StopRequest()
    stop.install()
    parser = argparse.ArgumentParser(prog="python -m trainplay.runtime.worker")
    add_job_arguments(parser)
    args = parser.parse_args(argv)
    try:
        job = TrainJob.from_args(args)
    except UsageError as exc:
        _say(f"error: {exc}")
        sys.exit(EXIT_USAGE)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        share_cpus(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    try:
        dist.init_process_group(
            "nccl" if cuda else "gloo", timeout=timedelta(seconds=job.collective_timeout_s)
        )
        _run(job, device, stop)
    except Stopped:
        stop.wait_own()  # a peer's signal: this rank's agent is about to send its own
        os._exit(EXIT_STOPPED)
    except Replan:
        os._exit(EXIT_REPLAN)
    except UsageError as exc:
        _say(f"error: {exc}")
        os._exit(EXIT_USAGE)
    except (RuntimeError, dist.DistError, CheckpointException) as exc:  # a peer went away
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        rank = os.environ.get("RANK", "?")
        _say(f"rank {rank} lost contact with a peer: {first[:200]}")
        os._exit(EXIT_LOST_PEER)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
