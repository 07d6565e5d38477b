"""APB: all-reduce bus bandwidth and point-to-point bandwidth over a message-size sweep.

Runs inside an initialised ``torch.distributed`` process group (gloo on CPU, NCCL on GPU).

- **All-reduce**: for each message size every rank times a run of back-to-back all-reduces; the
  slowest rank's time counts (a collective ends when its last rank does). Bus bandwidth follows
  NCCL-tests: ``busbw = size / t · 2(n-1)/n``, the bytes each rank must move in a ring all-reduce.
  The alpha-beta fit is ``t = alpha + bus_bytes / beta`` (Hockney's model) by least squares.
- **Point-to-point**: ranks pair up (0-1, 2-3, ...) and ping-pong; one way is half a round trip;
  fit ``t = alpha + bytes / beta``.

The whole sweep is repeated until the fitted beta is stable (coefficient of variation < 5%) or the
time budget is spent; medians per size over the sweeps feed the final fit.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from trainplay.hardware.measure.kernels import SAMPLE_S
from trainplay.hardware.measure.stats import CV_TARGET, Fit, cv_of, fit_alpha_beta
from trainplay.hardware.profile import Curve

__all__ = ["CommResult", "job_step_s", "measure_comm", "message_sizes", "slowest_s"]


def message_sizes(quick: bool) -> list[int]:
    """4 KiB to 64 MiB (16 MiB when quick), a factor of 4 apart."""
    top = 24 if quick else 26
    return [2**k for k in range(12, top + 1, 2)]


@dataclass(frozen=True)
class CommResult:
    busbw_bps: float
    """Best all-reduce bus bandwidth over the sweep (medians per size)."""
    allreduce: Fit
    p2p_bps: float | None
    """Best one-way point-to-point bandwidth; ``None`` for a rank without a partner."""
    p2p: Fit | None
    cv: float
    """Coefficient of variation of the fitted all-reduce beta over the sweeps."""
    sweeps: int
    times_s: dict[int, float]
    """Median all-reduce time per message size."""
    p2p_times_s: dict[int, float] | None = None
    """One-way point-to-point time per message size (``None`` without a partner)."""

    def curves(self, world: int) -> tuple[Curve, Curve | None]:
        """The all-reduce bus-bandwidth curve and the point-to-point one, each net of its fitted
        latency (:class:`~trainplay.hardware.profile.Curve`); a point's net time is never taken
        below a tenth of what was measured."""
        factor = 2 * (world - 1) / world
        allreduce = _net_curve(self.times_s, self.allreduce.alpha_s, factor)
        p2p = None
        if self.p2p_times_s is not None and self.p2p is not None:
            p2p = _net_curve(self.p2p_times_s, self.p2p.alpha_s, 1.0)
        return allreduce, p2p


def _net_curve(times: dict[int, float], alpha_s: float, factor: float) -> Curve:
    sizes = sorted(times)
    rates = [factor * s / max(times[s] - alpha_s, 0.1 * times[s]) for s in sizes]
    return Curve(sizes=tuple(float(s) for s in sizes), rates=tuple(rates))


def slowest_s(seconds: float, device: torch.device, group: object = None) -> float:
    """The largest of every rank's ``seconds`` (a collective: every rank of ``group``, default
    all, calls it)."""
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return float(t.item())


def job_step_s(step: Callable[[], None], group: object = None) -> float:
    """One CPU step as the ranks of ``group`` (default all) meet it: from a barrier of them to
    the slowest one's end."""
    dist.barrier(group=group)
    start = time.perf_counter()
    step()
    return slowest_s(time.perf_counter() - start, torch.device("cpu"), group)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _allreduce_time(size: int, device: torch.device) -> float:
    buf = torch.ones(size // 4, dtype=torch.float32, device=device)
    dist.all_reduce(buf)  # warm-up
    _sync(device)
    start = time.perf_counter()
    dist.all_reduce(buf)
    _sync(device)
    once = slowest_s(time.perf_counter() - start, device)
    calls = max(1, min(200, round(SAMPLE_S / 2 / max(once, 1e-6))))
    calls = int(slowest_s(float(calls), device))  # every rank must run the same number
    dist.barrier()
    start = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(buf)
    _sync(device)
    return slowest_s((time.perf_counter() - start) / calls, device)


def _p2p_time(size: int, partner: int, device: torch.device, leader: bool) -> float:
    buf = torch.ones(size // 4, dtype=torch.float32, device=device)

    def round_trip() -> None:
        if leader:
            dist.send(buf, partner)
            dist.recv(buf, partner)
        else:
            dist.recv(buf, partner)
            dist.send(buf, partner)

    round_trip()
    _sync(device)
    calls = 4 if size >= 2**24 else 20
    start = time.perf_counter()
    for _ in range(calls):
        round_trip()
    _sync(device)
    return (time.perf_counter() - start) / calls / 2


def measure_comm(
    device: torch.device,
    sizes: list[int],
    budget_s: float,
    progress: Callable[[float], None] = lambda _: None,
    max_sweeps: int = 8,
) -> CommResult:
    """All-reduce and point-to-point sweeps on the default process group (two or more ranks)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    factor = 2 * (world - 1) / world
    start = time.perf_counter()
    sweeps: list[dict[int, float]] = []
    betas: list[float] = []
    while True:
        times = {size: _allreduce_time(size, device) for size in sizes}
        sweeps.append(times)
        betas.append(
            fit_alpha_beta([s * factor for s in sizes], [times[s] for s in sizes]).beta_bps
        )
        recent = betas[-5:]
        stable = len(recent) >= 3 and cv_of(recent) < CV_TARGET
        spent = slowest_s(time.perf_counter() - start, device)
        progress(min(0.8, 0.8 * spent / budget_s))
        # every rank decides alike: stability is computed from all-reduced times
        if len(sweeps) >= max_sweeps or (len(sweeps) >= 2 and (stable or spent >= 0.7 * budget_s)):
            break
    medians = {s: statistics.median(sw[s] for sw in sweeps) for s in sizes}
    fit = fit_alpha_beta([s * factor for s in sizes], [medians[s] for s in sizes])
    busbw = max(s * factor / medians[s] for s in sizes)
    cv = cv_of(betas[-5:])

    partner = rank ^ 1
    p2p_fit, p2p_bps, one_way = None, None, None
    dist.barrier()
    if partner < world:
        one_way = {s: _p2p_time(s, partner, device, leader=rank < partner) for s in sizes}
        p2p_fit = fit_alpha_beta(list(one_way), list(one_way.values()))
        p2p_bps = max(s / t for s, t in one_way.items())
    dist.barrier()
    progress(1.0)
    return CommResult(
        busbw_bps=busbw,
        allreduce=fit,
        p2p_bps=p2p_bps,
        p2p=p2p_fit,
        cv=cv,
        sweeps=len(sweeps),
        times_s=medians,
        p2p_times_s=one_way,
    )
