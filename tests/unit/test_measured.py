"""The runtime's timers and ``trainplay diagnose JOURNAL``: stragglers from measured stage times.

Journals here are written event by event with known timers, so every verdict is known exactly;
``tests/integration/test_train_timers.py`` checks the same on a real ``trainplay train`` run.
"""

import io
import json
import time

import pytest
import torch
from rich.console import Console
from torch import nn

from trainplay.cli import Parser
from trainplay.cli import diagnose as diagnose_cli
from trainplay.errors import UsageError
from trainplay.roofline.measured import MeasuredRun, RankSteps, diagnose_run
from trainplay.runtime.journal import Journal, measured_runs, read_journal
from trainplay.runtime.measured import summary
from trainplay.runtime.timers import FIELDS, StepTimers

PREDICTED = {"fwd_s": 0.004, "bwd_s": 0.008, "allreduce_s": 0.001, "optimizer_s": 0.001}
COMPUTE = {"compute_s": 0.011, "memory_s": 0.001}


def timers(busy_s: float, step_s: float = 0.03, wait_s: float = 0.0) -> list[float]:
    """One rank's timer row: ``busy_s`` split 2:4:1 over forward, backward and optimizer, and
    0.5 ms taking the batch."""
    fwd, bwd, opt = 2 * busy_s / 7, 4 * busy_s / 7, busy_s / 7
    return [fwd, bwd, wait_s, 0.002, opt, step_s, 0.0005]


def journal(path, busy, *, predicted=None, steps=10, shares=None, noise=None, cpu_floors=None):
    """A journal of one worker group: rank ``r`` busy ``busy[r]`` seconds per step (``noise``:
    step -> rank -> factor), predicted ``predicted[r]`` (the default for every rank);
    ``cpu_floors``: device id -> threads over the CPUs it may use, as the runtime journals it."""
    n = len(busy)
    j = Journal(path)
    ranks = [
        {
            "rank": r,
            "device": f"n{r}/cpu:0",
            "node": f"n{r}",
            "stage": 0,
            "replica": r,
            "share": (shares or [8] * n)[r],
            "predicted": (predicted or [PREDICTED | COMPUTE] * n)[r],
        }
        for r in range(n)
    ]
    limits = {"cpu_floors": cpu_floors} if cpu_floors else {}
    j.write("start", plan_id="p1", step=0, predicted_step_s=0.02, ranks=ranks,
            timer_fields=list(FIELDS), **limits)  # fmt: skip
    for s in range(steps):
        factor = (noise or {}).get(s, {})
        rows = [timers(busy[r] * factor.get(r, 1.0)) for r in range(n)]
        j.write("step", step=s, plan_id="p1", loss=1.0, step_s=0.03, timers_s=rows)
    j.close()
    return path


def run_of(path) -> MeasuredRun:
    (run,) = measured_runs(read_journal(path))
    return run


def test_balanced_run_names_nobody(tmp_path):
    result = diagnose_run(run_of(journal(tmp_path / "j", [0.014, 0.0145])))
    assert result.straggler is None and result.notes[0].startswith("no straggler")
    assert result.steps == 9  # the warm-up step is left out
    assert [r.ratio for r in result.ranks] == pytest.approx([0.014 / 0.013, 0.0145 / 0.013])


def test_slow_rank_named_with_dimension_and_slowdown(tmp_path):
    result = diagnose_run(run_of(journal(tmp_path / "j", [0.014, 0.028, 0.014])))
    s = result.straggler
    assert s is not None and s.rank == 1 and s.group == (1,) and s.dimension == "compute"
    assert s.excess_fraction == pytest.approx(1.0)
    assert s.excess_s == pytest.approx(0.014)
    # step 30 ms; the others wait 30 - 14 = 16 ms; rank 1 would save 14 ms: 30 / 16
    assert s.slowdown == pytest.approx(0.03 / 0.016)
    assert s.steps_slower == 9 == s.steps


def test_alike_slow_ranks_are_one_group(tmp_path):
    busy = [0.014, 0.030, 0.014, 0.031, 0.0145]
    s = diagnose_run(run_of(journal(tmp_path / "j", busy))).straggler
    assert s is not None and s.rank == 3 and s.group == (3, 1)
    line = diagnose_cli.verdict(diagnose_run(run_of(tmp_path / "j")))
    assert line.startswith("straggler: ranks 3, 1, compute-bound")


def test_uneven_shares_are_judged_against_their_prediction(tmp_path):
    """Rank 0 takes three times rank 1's share: three times busier, as predicted, is no
    straggler; rank 1 busy as long as rank 0 with a third of the work is one."""
    big = {k: 3 * v for k, v in PREDICTED.items()} | COMPUTE
    small = PREDICTED | COMPUTE
    even = journal(tmp_path / "a", [0.042, 0.014], predicted=[big, small], shares=[12, 4])
    assert diagnose_run(run_of(even)).straggler is None
    slow = journal(tmp_path / "b", [0.042, 0.042], predicted=[big, small], shares=[12, 4])
    s = diagnose_run(run_of(slow)).straggler
    assert s is not None and s.rank == 1


def test_memory_bound_prediction_names_memory(tmp_path):
    memory = PREDICTED | {"compute_s": 0.002, "memory_s": 0.010}
    path = journal(tmp_path / "j", [0.014, 0.028], predicted=[memory, memory])
    s = diagnose_run(run_of(path)).straggler
    assert s is not None and s.rank == 1 and s.dimension == "memory"


def test_a_cpu_limited_rank_is_short_of_compute_whatever_its_work_is_bound_by(tmp_path):
    """A rank under a CPU quota (2.5 threads per CPU it may use) runs its memory-bound work 2.5x
    slower: what it lacks is processor time, compute; the same slowdown without the limit is put
    where its work is bound, memory."""
    memory = PREDICTED | {"compute_s": 0.002, "memory_s": 0.010}
    floors = {"n1/cpu:0": 2.5}
    limited = journal(tmp_path / "a", [0.014, 0.035], predicted=[memory] * 2, cpu_floors=floors)
    (run,) = measured_runs(read_journal(limited))
    assert [r.cpu_floor for r in run.ranks] == [1.0, 2.5]
    result = diagnose_run(run)
    assert result.straggler is not None and result.straggler.dimension == "compute"
    assert "rank 1's CPU limit lets its threads run 40% of the time" in result.notes[0]
    free = journal(tmp_path / "b", [0.014, 0.035], predicted=[memory] * 2)
    assert diagnose_run(run_of(free)).straggler.dimension == "memory"
    # every rank limited alike: the limit does not tell the slow one apart
    both = journal(
        tmp_path / "c", [0.014, 0.035], predicted=[memory] * 2,
        cpu_floors={"n0/cpu:0": 2.5, "n1/cpu:0": 2.5},
    )  # fmt: skip
    assert diagnose_run(run_of(both)).straggler.dimension == "memory"


def test_a_slow_phase_of_a_few_steps_names_nobody(tmp_path):
    noise = {s: {1: 2.0} for s in (3, 4, 5)}  # rank 1 doubled in 3 of 9 steps
    assert (
        diagnose_run(run_of(journal(tmp_path / "j", [0.014, 0.014], noise=noise))).straggler is None
    )


def test_every_rank_equally_off_its_prediction_is_no_straggler(tmp_path):
    path = journal(tmp_path / "j", [0.05, 0.05])  # 3.6x the prediction on both
    result = diagnose_run(run_of(path))
    assert result.straggler is None
    assert result.stages[0].measured_s / result.stages[0].predicted_s == pytest.approx(0.05 / 0.013)


def test_without_predictions_raw_busy_times_are_compared():
    ranks = tuple(
        RankSteps(
            rank=r, device=f"d{r}", steps=tuple({"fwd_s": b, "step_s": 0.05} for _ in range(5))
        )
        for r, b in enumerate([0.01, 0.02])
    )
    result = diagnose_run(MeasuredRun(plan_id="p", first_step=0, step_s=(0.05,) * 5,
                                      predicted_step_s=None, ranks=ranks))  # fmt: skip
    assert result.straggler is not None and result.straggler.rank == 1
    assert "raw busy times" in " ".join(result.notes)


def test_worker_groups_are_read_apart_and_untimed_ones_skipped(tmp_path):
    path = journal(tmp_path / "j", [0.014, 0.014])
    with path.open("a") as f:  # an old journal's group: no timers
        f.write(json.dumps({"event": "start", "plan_id": "old", "step": 10}) + "\n")
        f.write(json.dumps({"event": "step", "step": 10, "step_s": 0.1}) + "\n")
    journal(tmp_path / "j", [0.014, 0.03])  # appended: a second timed group
    runs = measured_runs(read_journal(path))
    assert [len(r.ranks) for r in runs] == [2, 2]
    assert [diagnose_run(r).straggler is not None for r in runs] == [False, True]


def test_summary_takes_medians_per_rank():
    rows = [[timers(0.007 * k), timers(0.014)] for k in (1, 2, 3)]
    first, second = summary([0, 1], rows)
    assert first["rank"] == 0 and first["steps"] == 3
    assert first["fwd_s"] == pytest.approx(round(2 * 0.014 / 7, 6))
    assert second["optimizer_s"] == pytest.approx(round(0.002, 6))


def run_cli(*argv):
    parser = Parser(prog="trainplay")
    diagnose_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["diagnose", *argv])
    out = Console(record=True, width=200, file=io.StringIO())
    status = args.run(args, out, Console(stderr=True, quiet=True))
    return status, out.export_text()


def test_cli_reads_a_journal(tmp_path, capsys):
    path = journal(tmp_path / "run.jsonl", [0.014, 0.028])
    status, text = run_cli(str(path))
    assert status == 0
    assert (
        "Plan p1: per rank, median of 9 steps (ms)" in text and "Predicted against measured" in text
    )
    assert "straggler: rank 1, compute-bound excess of 14.00 ms per step (+100%)" in text
    run_cli(str(path), "--format", "json")
    (data,) = json.loads(capsys.readouterr().out)
    assert data["straggler"]["group"] == [1] and data["stages"][0]["predicted_s"] == pytest.approx(
        0.013
    )


def test_cli_journal_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(UsageError, match="neither a trace folder nor a journal"):
        run_cli(str(tmp_path / "notes.txt"))
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"event": "start", "plan_id": "p", "step": 0}) + "\n")
    with pytest.raises(UsageError, match="no timed steps"):
        run_cli(str(old))


class _SlowBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(0.05)
        return grad


class _Sleepy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        time.sleep(0.01)
        return _SlowBackward.apply(self.linear(x))


def test_step_timers_split_forward_backward_and_the_rest():
    module = _Sleepy()
    t = StepTimers(module, torch.device("cpu"))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    module(torch.randn(3, 4)).sum().backward()  # the process's first backward starts the engine
    t.begin()
    with t.phase("schedule"):
        for _ in range(2):  # two micro-batches
            module(torch.randn(3, 4)).sum().backward()
        time.sleep(0.015)  # a wait outside forward and backward
    with t.phase("optimizer_s"):
        optimizer.step()
    times = t.end()
    assert set(times) == set(FIELDS)
    # sleeps of 2 x 10 ms in forward, 2 x 50 ms in backward, 15 ms outside both; the upper
    # bounds leave room for a loaded machine but not for a phase counted in another's place
    assert 0.02 <= times["fwd_s"] < 0.08
    assert 0.1 <= times["bwd_s"] < 0.15 + 0.015
    assert 0.015 <= times["wait_s"] < 0.08
    assert times["allreduce_s"] == 0.0
    assert times["step_s"] >= times["fwd_s"] + times["bwd_s"] + times["wait_s"]
    t.begin()  # the next step starts from nothing
    assert t.end()["fwd_s"] == 0.0
